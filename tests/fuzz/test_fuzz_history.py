"""The history database as a hostile input: a real history with bytes flipped, pages overwritten, the
file cut short, text that is not UTF-8; every history command either runs or refuses in one line
(fuzzkit's property), never a traceback."""

from __future__ import annotations

import contextlib
import io
import os

import pytest
from fuzzkit import DEFAULT, NIGHTLY, _SETTINGS, refuses_cleanly
from hypothesis import given, settings
from hypothesis import strategies as st

from fabscope.cli import build_parser, main

COMMANDS = [["list"], ["check"], ["show", "--class", "Overall"], ["show", "--cable", "1"], ["show", "--host", "h0001"],
            ["prune", "--keep-last", "1"], ["migrate"]]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A folder with h.db, a history of three nights of fat-tree:k=4,levels=2 (one cable slowed from night 3),
    and the fourth night, not added, in n/night04.json."""
    d = tmp_path_factory.mktemp("hist")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["history", "example", str(d / "n"), "--nights", "4", "--degrade-from", "3"]) == 0
        assert main(["history", "add", "--db", str(d / "h.db"), *sorted(str(p) for p in (d / "n").iterdir())[:3]]) == 0
    return d


#: one damage: (kind, offset fraction, length or byte, seed)
damage = st.tuples(st.sampled_from(["flip", "page", "cut", "splice", "header"]), st.floats(0, 1),
                   st.integers(1, 4096), st.binary(min_size=1, max_size=16))


def damaged(data: bytes, hits: list[tuple]) -> bytes:
    b = bytearray(data)
    for kind, where, n, junk in hits:
        if not b:
            break
        i = min(int(where * len(b)), max(len(b) - 1, 0))
        if kind == "flip":
            b[i] ^= junk[0] or 1
        elif kind == "page":          # a whole 4 KiB page of junk, as a torn write leaves
            start = i - i % 4096
            b[start:start + 4096] = (junk * (4096 // len(junk) + 1))[:min(4096, len(b) - start)]
        elif kind == "cut":
            del b[i:]
        elif kind == "splice":
            b[i:i + len(junk)] = junk
        else:                          # the 100-byte header SQLite reads first
            b[i % min(100, len(b))] = junk[0]
    return bytes(b)


def _run_on(d, hits, command) -> None:
    path = d / "fz.db"
    path.write_bytes(damaged((d / "h.db").read_bytes(), hits))
    args = build_parser("history").parse_args(["history", *command, "--db", str(path)])
    with contextlib.redirect_stdout(io.StringIO()):
        args.func(args)


def _check(history, x) -> None:
    hits, which = x
    os.environ["FABSCOPE_HISTORY_WAIT"] = "0.1"
    try:
        refuses_cleanly(lambda _: _run_on(history, hits, COMMANDS[which]), None)
    finally:
        del os.environ["FABSCOPE_HISTORY_WAIT"]


_inputs = st.tuples(st.lists(damage, min_size=1, max_size=4), st.integers(0, len(COMMANDS) - 1))


@settings(max_examples=DEFAULT, **_SETTINGS)
@given(x=_inputs)
def test_damaged_history_fuzz(history, x):
    _check(history, x)


@pytest.mark.nightly
@settings(max_examples=NIGHTLY, **_SETTINGS)
@given(x=_inputs)
def test_damaged_history_fuzz_nightly(history, x):
    _check(history, x)


def test_add_to_a_damaged_history_is_one_line(history, capsys):
    """``history add`` to a history with a page of junk: one line, the file as it was."""
    d = history
    bad = damaged((d / "h.db").read_bytes(), [("page", x / 10, 1, b"\xde\xad") for x in range(1, 10)])
    path = d / "torn.db"
    path.write_bytes(bad)
    night = d / "n" / "night04.json"
    capsys.readouterr()
    rc = main(["history", "add", "--db", str(path), str(night)])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and str(path) in err, err
    assert path.read_bytes() == bad
