"""Checks of command-line values shared by several subcommands, run before any work.

>>> import argparse
>>> require_positive(argparse.Namespace(ppn=0, ranks=None), "ppn", "ranks")
Traceback (most recent call last):
...
fabscope.errors.PlacementError: --ppn must be >= 1, got 0
"""

from __future__ import annotations

import argparse

from fabscope.errors import PlacementError


def require_positive(args: argparse.Namespace, *dests: str) -> None:
    """Refuse zero or a negative count given for any of the options ``dests`` (``None``: not given)."""
    for dest in dests:
        value = getattr(args, dest, None)
        if value is not None and value < 1:
            raise PlacementError(f"--{dest.replace('_', '-')} must be >= 1, got {value}")
