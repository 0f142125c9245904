"""The files each command reads and writes, declared where its options are added, checked together
before the command runs.

Every option that names a file is added through :func:`reads`, :func:`writes` or
:func:`reads_and_writes` (a history's ``--db``), which mark the argparse action; a paths function
gives the files an option stands for where that is not simply its value (``--pattern trace:F``, the
``.json`` beside ``diagnose --plan -o``, a folder's samples, the standard input a host file is read
from).  :func:`check` (run by ``fabscope``'s main before every command) refuses, in one line and
before any work, an output that is also an input (the same file by any name: ``./x``, a symbolic
or a hard link) and two outputs of one file.  tests/test_outputs.py walks every subcommand's options
and fails on one that names a file and is not declared (options that merely mention files are
marked :func:`not_a_file`).

>>> import argparse, os, tempfile
>>> d = tempfile.mkdtemp(); h = os.path.join(d, "h.db"); _ = open(h, "wb").write(b"x")
>>> p = argparse.ArgumentParser()
>>> _ = reads_and_writes(p.add_argument("--db"), paths=database_file)
>>> _ = writes(p.add_argument("-o", "--output"))
>>> check(p, p.parse_args(["--db", h, "-o", os.path.join(d, ".", "h.db")]))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
fabscope.errors.OutputError: -o/--output .../h.db is also an input (--db .../h.db); fabscope does not overwrite what it reads: write elsewhere
>>> check(p, p.parse_args(["--db", h, "-o", os.path.join(d, "page.html")]))
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any, Callable, Iterable, Iterator

from fabscope.atomic import same_file
from fabscope.errors import OutputError

#: the attribute of an argparse action holding its declaration: (role, paths function or None)
ATTR = "fabscope_files"
READ, WRITE, BOTH, NONE = "read", "write", "read+write", "not a file"
Paths = Callable[[Any, argparse.Namespace], Iterable[str]]


def _declare(action: argparse.Action, role: str, paths: Paths | None) -> argparse.Action:
    setattr(action, ATTR, (role, paths))
    return action


def reads(action: argparse.Action, paths: Paths | None = None) -> argparse.Action:
    """``action`` names files the command reads (by default its value, or each of its values)."""
    return _declare(action, READ, paths)


def writes(action: argparse.Action, paths: Paths | None = None) -> argparse.Action:
    """``action`` names files the command writes (``-`` is standard output)."""
    return _declare(action, WRITE, paths)


def reads_and_writes(action: argparse.Action, paths: Paths | None = None) -> argparse.Action:
    """``action`` names a file the command reads and changes (a history database)."""
    return _declare(action, BOTH, paths)


def not_a_file(action: argparse.Action) -> argparse.Action:
    """``action`` takes no file although its help speaks of files (a test name, a testbed, a program)."""
    return _declare(action, NONE, None)


# ---- paths functions ------------------------------------------------------------------
def existing(value: Any, args: argparse.Namespace) -> list[str]:
    """A spec that is a file when one of that name exists (``--fabric``, ``--comm``, ``--model``)."""
    return [value] if isinstance(value, str) and os.path.isfile(value) else []


def program_file(value: Any, args: argparse.Namespace) -> list[str]:
    """A program as a shell finds it: a path, or a name on ``$PATH`` (``--program lmp``).

    >>> program_file("sh", None) == [shutil.which("sh")], program_file("no/such/prog", None)
    (True, [])
    """
    if not isinstance(value, str):
        return []
    found = value if os.sep in value else shutil.which(value)
    return [found] if found and os.path.isfile(found) else []


def database_file(value: Any, args: argparse.Namespace) -> list[str]:
    """A history's file: ``PATH``, ``sqlite:PATH`` or ``duckdb:PATH``; a server (``postgresql://``) is none.

    >>> database_file("duckdb:h.duckdb", None), database_file("postgresql://u@host/db", None)
    (['h.duckdb'], [])
    """
    if not isinstance(value, str) or "://" in value:
        return []
    return [value.split(":", 1)[1] if value.startswith(("duckdb:", "sqlite:")) else value]


def pattern_files(value: Any, args: argparse.Namespace) -> list[str]:
    """The file of ``--pattern trace:FILE`` or ``replay:FILE``.

    >>> pattern_files("trace:run.csv", None), pattern_files("shift:k=4", None)
    (['run.csv'], [])
    """
    if not isinstance(value, str):
        return []
    name, _, arg = value.strip().partition(":")
    return [arg] if name in ("trace", "replay") and arg else []


def nodes_or_stdin(value: Any, args: argparse.Namespace) -> list[str]:
    """``--nodes FILE`` (a compressed host list is no file), else the standard input it is read from."""
    if value is not None:
        return existing(value, args)
    try:
        if sys.stdin is not None and not sys.stdin.isatty() and os.path.isfile(f"/proc/self/fd/{sys.stdin.fileno()}"):
            return [f"/proc/self/fd/{sys.stdin.fileno()}"]
    except (OSError, ValueError, AttributeError):     # a replaced stdin (tests) has no descriptor
        pass
    return []


def named_later(value: Any, args: argparse.Namespace) -> list[str]:
    """A folder whose files are named as they are drawn (``report --images``: .png and .svg pictures, a kind
    no command reads): declared, with no file to compare before the run."""
    return []


def in_folder(*names: str) -> Paths:
    """The files ``names`` in the folder an option names (``--save DIR``, ``--from DIR``)."""
    def paths(value: Any, args: argparse.Namespace) -> list[str]:
        return [os.path.join(value, n) for n in names] if isinstance(value, str) else []
    return paths


# ---- the check --------------------------------------------------------------------------
def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command ``args`` was parsed for: ``history report``'s, not ``fabscope``'s."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        word = getattr(args, subs[0].dest, None) if subs else None
        if word is None or word not in subs[0].choices:
            return parser
        parser = subs[0].choices[word]


def label(action: argparse.Action) -> str:
    """How the one-line error names an option: ``-o/--output``, or a positional's metavar."""
    if action.option_strings:
        return "/".join(action.option_strings)
    return action.metavar if isinstance(action.metavar, str) else action.dest.upper()


def declared(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Iterator[tuple[str, str, str]]:
    """(what names it, role, path) of every file the command of ``args`` names: ``--comm c.csv``, or
    ``--pattern trace:t.csv: t.csv`` where the file is not the value itself."""
    for action in command_parser(parser, args)._actions:
        decl = getattr(action, ATTR, None)
        if decl is None or decl[0] == NONE:
            continue
        role, paths = decl
        value = getattr(args, action.dest, None)
        if paths is not None:
            found = list(paths(value, args))
        elif isinstance(value, (list, tuple)):
            found = [v for v in value if isinstance(v, str)]
        else:
            found = [value] if isinstance(value, str) else []
        for p in found:
            if p and p != "-":
                given = value if isinstance(value, str) and value != p else None
                yield f"{label(action)} {given}: {p}" if given else f"{label(action)} {p}", role, p


def _one(a: str, b: str) -> bool:
    """One file: the same inode (links, ./x), or the same place for files not there yet."""
    if same_file(a, b):
        return True
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse an output that is also an input, or two outputs that are one file (any alias), before any work."""
    files = list(declared(parser, args))
    for i, (opt, role, path) in enumerate(files):
        if role == READ:
            continue
        for j, (other, orole, opath) in enumerate(files):
            if j == i or not _one(path, opath):
                continue
            if orole == READ or (role == BOTH) != (orole == BOTH):
                out, inp = (files[j], files[i]) if role == BOTH and orole == WRITE else (files[i], files[j])
                raise OutputError(f"{out[0]} is also an input ({inp[0]}); fabscope does not overwrite what it "
                                  "reads: write elsewhere")
            if j > i and opt != other:
                raise OutputError(f"{opt.split()[0]} and {other.split()[0]} both write {path}")

