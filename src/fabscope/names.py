"""Names from fabric files: one rule for what is accepted, one function per format they are written in.

A node description is set by whoever is root on that node, so a name read
from an ibnetdiscover file, an OpenSM dump, a fabric JSON, a host map or a
host file is untrusted text.  It is checked once, on import, against what
every output format can carry, and again where it is written (a fabric built
in Python skips the importers):

* a **host name** (it goes into host files, rank files, machine files,
  Slurm node lists, shell scripts and command lines) is 1 to 255 of
  ``A-Z a-z 0-9 . _ -``, not starting with ``.`` or ``-``
  (:func:`check_host_name`);
* a **switch name** (the whole node description, as ``ibnetdiscover`` quotes
  it: spaces and ``;:/`` are usual) is 1 to 255 printable characters with no
  ``"``, backslash, line break, control or format character
  (:func:`check_switch_name`).  Where it goes into a stricter format it is
  checked for that format (``topology.conf``: :func:`slurm_name`).

A name that breaks the rule is refused in one line naming it and the
character:

>>> check_host_name("node[1-2]", "ibnetdiscover line 7")
Traceback (most recent call last):
...
fabscope.errors.FabricError: ibnetdiscover line 7: host name 'node[1-2]' has '[' (U+005B), which host files, Slurm node lists and shell commands cannot carry; host names are A-Z a-z 0-9 . _ - (not first: . -)

The writers, one per format:

>>> shell_word("EOF||touch${IFS}/tmp/x")
"'EOF||touch${IFS}/tmp/x'"
>>> slurm_name("L0,L9", "switch")
Traceback (most recent call last):
...
fabscope.errors.OutputError: switch name 'L0,L9' has ',' (U+002C), which Slurm's topology.conf and node lists cannot carry
>>> launcher_host("n1 slots=4")
Traceback (most recent call last):
...
fabscope.errors.OutputError: host name 'n1 slots=4' has ' ' (U+0020), which launcher host, rank and machine files cannot carry
>>> terminal("[/oops] \\x1b[2J")
'\\\\[/oops] \\\\x1b[2J'
>>> csv_cell("=HYPERLINK(1)"), csv_cell("node1"), csv_cell(-1.5)
("'=HYPERLINK(1)", 'node1', -1.5)
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from typing import Any

from fabscope.errors import FabricError, FabscopeError, OutputError

#: the longest name accepted (a node description is at most 64 bytes; a DNS name 253)
MAX_NAME = 255

_HOST_OK = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_HOST_RULE = "host names are A-Z a-z 0-9 . _ - (not first: . -)"
# Slurm splits node lists at commas, expands brackets, reads key=value pairs split at spaces
_SLURM_BAD = frozenset(",[]= #\"'\\")
# Open MPI host/rank files: "host slots=N", "rank 0=host slot=1"; Hydra: "host:N"; comments after '#'
_LAUNCHER_BAD = frozenset(",[]=:# \"'\\")


def _char(c: str) -> str:
    """A character as a message shows it: quoted and with its code point.

    >>> _char("\\n"), _char(",")
    ("'\\\\n' (U+000A)", "',' (U+002C)")
    """
    return f"{c!r} (U+{ord(c):04X})"


def _unprintable(c: str) -> bool:
    # control (Cc), format (Cf: bidi overrides), separators other than the space (Zl, Zp, Zs), unassigned,
    # surrogates: none shows as itself on a terminal or survives a line-based file
    cat = unicodedata.category(c)
    return cat[0] in "CZ" and c != " "


def check_host_name(name: Any, where: str, error: type[FabscopeError] = FabricError) -> str:
    """``name`` if it is a valid host name (see the module's rule), else ``error`` naming it and ``where``."""
    if not isinstance(name, str) or not name:
        raise error(f"{where}: host name {name!r} is empty or not text")
    if len(name) > MAX_NAME:
        raise error(f"{where}: host name {name[:40]!r}... is {len(name)} characters long (at most {MAX_NAME})")
    bad = next((c for c in name if c not in _HOST_OK), None)
    if bad is None and name[0] in ".-":
        bad = name[0]
    if bad is not None:
        raise error(f"{where}: host name {name!r} has {_char(bad)}, which host files, Slurm node lists "
                    f"and shell commands cannot carry; {_HOST_RULE}")
    return name


def check_switch_name(name: Any, where: str, error: type[FabscopeError] = FabricError, what: str = "switch") -> str:
    """``name`` if it is a valid switch name (printable, no ``"`` or backslash), else ``error``.

    >>> check_switch_name("MF0;ib-sw01:MSX6036/U1", "x")
    'MF0;ib-sw01:MSX6036/U1'
    >>> check_switch_name("L0\\nSwitchName=evil", "fabric.json")
    Traceback (most recent call last):
    ...
    fabscope.errors.FabricError: fabric.json: switch name 'L0\\nSwitchName=evil' has '\\n' (U+000A), which no output format can carry
    """
    if not isinstance(name, str) or not name:
        raise error(f"{where}: {what} name {name!r} is empty or not text")
    if len(name) > MAX_NAME:
        raise error(f"{where}: {what} name {name[:40]!r}... is {len(name)} characters long (at most {MAX_NAME})")
    bad = next((c for c in name if _unprintable(c) or c in '"\\'), None)
    if bad is not None:
        raise error(f"{where}: {what} name {name!r} has {_char(bad)}, which no output format can carry")
    return name


def check_names(host_names: Any, switch_names: Any, where: str) -> None:
    """Check every host and switch name of a fabric being imported (:class:`FabricError` on the first bad one)."""
    for n in host_names:
        check_host_name(n, where)
    for n in switch_names:
        check_switch_name(n, where)


def shell_word(text: str) -> str:
    """``text`` as one POSIX shell word (single-quoted where it needs to be)."""
    return shlex.quote(str(text))


def slurm_name(name: str, what: str = "host") -> str:
    """``name`` as Slurm's ``topology.conf`` and node lists take it; :class:`OutputError` if it cannot."""
    bad = next((c for c in name if c in _SLURM_BAD or _unprintable(c)), None) if name else ""
    if bad is not None:
        shown = _char(bad) if bad else "nothing"
        raise OutputError(f"{what} name {name!r} has {shown}, which Slurm's topology.conf and node lists cannot carry")
    return name


def launcher_host(name: str) -> str:
    """``name`` as Open MPI host/rank files and Hydra machine files take it; :class:`OutputError` if it cannot."""
    bad = next((c for c in name if c in _LAUNCHER_BAD or _unprintable(c)), None) if name else ""
    if bad is None and name[0] == "-":
        bad = "-"
    if bad is not None:
        shown = _char(bad) if bad else "nothing"
        raise OutputError(f"host name {name!r} has {shown}, which launcher host, rank and machine files cannot carry")
    return name


def terminal(text: Any) -> str:
    """``text`` safe to print with rich markup on: control characters shown as escapes, markup escaped.

    >>> terminal("bold [b]x[/b]")
    'bold \\\\[b]x\\\\[/b]'
    """
    s = str(text)
    if any(_unprintable(c) for c in s if c != "\t"):
        s = "".join(repr(c)[1:-1] if _unprintable(c) else c for c in s)
    return escape_markup(s)


#: what rich's console markup reads as a tag: ``[`` then a letter, ``#``, ``/`` or ``@``, up to ``]``,
#: with the backslashes before it
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def escape_markup(text: str) -> str:
    """``text`` that rich's console markup prints as written, as ``rich.markup.escape`` makes it
    (tests/report/test_plaintable.py holds the two equal), without importing rich.

    Each tag-like ``[...]`` gets a backslash and the backslashes before it are doubled; a trailing
    single backslash gets another, so that it escapes nothing after it.

    >>> print(escape_markup("[b]x[/b] [1] [@click]"))
    \\[b]x\\[/b] [1] \\[@click]
    """
    out = _MARKUP_TAG.sub(lambda m: m.group(1) * 2 + "\\" + m.group(2), text)
    return out + "\\" if out.endswith("\\") and not out.endswith("\\\\") else out


def plain(text: Any) -> str:
    """``text`` safe to print without markup: control characters shown as escapes.

    >>> plain("a\\x1b[31mred")
    'a\\\\x1b[31mred'
    """
    s = str(text)
    return "".join(repr(c)[1:-1] if _unprintable(c) and c != "\t" else c for c in s)


_CSV_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell for a spreadsheet: text starting with ``= + - @`` tab or CR gets a leading ``'``
    (OWASP's advice against formula injection); numbers are left as they are."""
    if isinstance(value, str) and value.startswith(_CSV_TRIGGERS):
        return "'" + value
    return value
