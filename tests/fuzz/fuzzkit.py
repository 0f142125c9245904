"""Shared pieces of the parser fuzz tests: the property, the two run sizes, input strategies.

The property, for every parser: on any input it either returns, or raises a
:class:`fabscope.errors.FabscopeError` whose message is one non-empty line.
Any other exception (a traceback for a user) fails the test, and hypothesis
shrinks the input that caused it.

Each parser gets two tests: a few hundred inputs in the default run
(``FABSCOPE_FUZZ_EXAMPLES`` changes that), 10,000 under the ``nightly`` marker.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabscope.errors import FabscopeError

DEFAULT = int(os.environ.get("FABSCOPE_FUZZ_EXAMPLES", "200"))
NIGHTLY = 10_000
_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


def refuses_cleanly(check: Callable[[Any], Any], x: Any) -> None:
    """Run ``check(x)``; a FabscopeError must carry one non-empty line, anything else propagates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            check(x)
        except FabscopeError as err:
            msg = str(err)
            assert msg.strip(), f"{type(err).__name__} with an empty message"
            assert len(msg.splitlines()) == 1, f"message of more than one line: {msg!r}"


def fuzz_tests(strategy: st.SearchStrategy, check: Callable[[Any], Any], default: int = DEFAULT):
    """(default test, nightly test) of ``check`` on inputs drawn from ``strategy``."""
    @settings(max_examples=default, **_SETTINGS)
    @given(strategy)
    def test(x: Any) -> None:
        refuses_cleanly(check, x)

    @pytest.mark.nightly
    @settings(max_examples=NIGHTLY, **_SETTINGS)
    @given(strategy)
    def test_nightly(x: Any) -> None:
        refuses_cleanly(check, x)

    return test, test_nightly


# ---- inputs -----------------------------------------------------------------------------------------
#: numbers that break parsers: zero, negatives, off-by-one at type limits, huge
EDGE_NUMBERS = ["0", "-1", "1", "255", "256", "49151", "49152", "65535", "65536", "70000", "2147483648",
                "99999999999999999999999", "0x0", "0xffff", "0xc000", "0xffffffffffffffffffff", "1e308", "nan",
                "inf", "-0", "007", "१२", "²", "½", "1e400", "-1e400", "NaN", "Infinity", "-inf", "1e-400",
                "4294967296", "-2147483649", "9" * 40, "1e999999", "0.5", "-1.5", "\"fast\"", "null", "[]", "{}"]
#: hostile names: separators of every output format, markup, escapes, shell, very long
HOSTILE_NAMES = ["EOF", "EOF||touch${IFS}/tmp/x", "a,b", "n[1-3]", "L0,L9 Nodes=x", "[/oops]", "\x1b[31mred",
                 "=cmd|' /C calc'!A0", "@SUM(1)", "a b", "a\tb", "\u2028", "'", '"', "$(id)", "`id`", "x" * 300,
                 "-rf", "../../etc/passwd", "\x00", "名前", "\ufeff"]
_TOKEN = re.compile(r"0x[0-9a-fA-F]+|\d+")

junk_line = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
                    max_size=80)


@st.composite
def mutated(draw: Callable, lines: list[str], max_ops: int = 6) -> str:
    """A sample file with a few lines dropped, doubled, swapped, cut, replaced, or a number changed."""
    out = list(lines)
    for _ in range(draw(st.integers(0, max_ops))):
        if not out:
            break
        i = draw(st.integers(0, len(out) - 1))
        op = draw(st.sampled_from(["drop", "dup", "swap", "cut", "junk", "num", "num", "num", "truncate"]))
        if op == "drop":
            del out[i]
        elif op == "dup":
            out.insert(i, out[i])
        elif op == "swap":
            j = draw(st.integers(0, len(out) - 1))
            out[i], out[j] = out[j], out[i]
        elif op == "cut":
            out[i] = out[i][: draw(st.integers(0, len(out[i])))]
        elif op == "junk":
            out[i] = draw(junk_line)
        elif op == "truncate":
            out = out[:i]
        else:
            spots = list(_TOKEN.finditer(out[i]))
            if spots:
                m = spots[draw(st.integers(0, len(spots) - 1))]
                new = draw(st.sampled_from(EDGE_NUMBERS) | st.integers(-10, 10 ** 6).map(str))
                out[i] = out[i][: m.start()] + new + out[i][m.end():]
    return "\n".join(out) + draw(st.sampled_from(["", "\n", "\r\n"]))


def text_like(lines: list[str]) -> st.SearchStrategy[str]:
    """Mostly mutated samples, sometimes junk, sometimes raw bytes decoded."""
    return st.one_of(
        mutated(lines), mutated(lines), mutated(lines),
        st.lists(junk_line | st.sampled_from(HOSTILE_NAMES), max_size=8).map("\n".join),
        st.binary(max_size=200).map(lambda b: b.decode("utf-8", errors="replace")),
    )


def bytes_like(lines: list[str]) -> st.SearchStrategy[bytes]:
    """File contents: mutated samples as UTF-8, raw bytes, samples with raw bytes spliced in."""
    return st.one_of(
        text_like(lines).map(lambda t: t.encode("utf-8", errors="surrogateescape")),
        st.binary(max_size=300),
        st.tuples(text_like(lines), st.binary(min_size=1, max_size=8), st.integers(0, 400)).map(
            lambda t: (t[0][: t[2]].encode("utf-8", "surrogateescape") + t[1] + t[0][t[2]:].encode("utf-8", "surrogateescape"))),
    )
