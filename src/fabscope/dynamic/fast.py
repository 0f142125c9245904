"""The compiled engine (placeholder until measured)."""

from __future__ import annotations


def available() -> bool:
    return False


def why_not() -> str:
    return "not built"
