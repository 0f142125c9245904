"""Host lists as schedulers write them.

* SLURM's compressed syntax (``$SLURM_JOB_NODELIST``): ``node[001-004,010],gpu7``;
  several bracket groups in one name expand as a product (``r[1-2]n[1-2]``).
* Host files: ``$PBS_NODEFILE`` (one line per slot, a host repeated ``ppn``
  times), Open MPI (``host slots=8``), MPICH/Hydra (``host:8``), plain (``host``).

>>> expand_hostlist("node[001-003,010],gpu7")
['node001', 'node002', 'node003', 'node010', 'gpu7']
>>> expand_hostlist("r[1-2]n[1-2]")
['r1n1', 'r1n2', 'r2n1', 'r2n2']
>>> parse_hostfile_lines(["a", "a", "b slots=2", "c:3", "# note", ""])
[('a', 2), ('b', 2), ('c', 3)]
"""

from __future__ import annotations

import os
import re

from fabscope.errors import PlacementError

__all__ = ["expand_hostlist", "parse_hostfile_lines", "read_hostfile", "read_nodes"]

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise PlacementError(f"host list {text!r}: ']' without '['")
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise PlacementError(f"host list {text!r}: '[' without ']'")
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def _expand_one(name: str, whole: str) -> list[str]:
    i = name.find("[")
    if i < 0:
        return [name]
    j = name.find("]", i)
    head, body, tail = name[:i], name[i + 1:j], name[j + 1:]
    values: list[str] = []
    for part in body.split(","):
        m = _RANGE.match(part.strip())
        if not m:
            raise PlacementError(f"host list {whole!r}: {part!r} is not a number or range like 001-004")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        a, b = int(lo), int(hi)
        if b < a:
            raise PlacementError(f"host list {whole!r}: range {part!r} runs backwards")
        width = len(lo) if lo.startswith("0") else 0
        values.extend(str(v).zfill(width) for v in range(a, b + 1))
    return [head + v + rest for v in values for rest in _expand_one(tail, whole)]


def expand_hostlist(text: str) -> list[str]:
    """Expand SLURM's compressed host list (order kept, repeats kept)."""
    return [h for part in _split_top(text.strip()) for h in _expand_one(part, text)]


def parse_hostfile_lines(lines: list[str]) -> list[tuple[str, int]]:
    """``(host, slots)`` in order of first appearance; repeated lines add a slot each."""
    order: list[str] = []
    slots: dict[str, int] = {}
    for ln, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        host, count = words[0], 1
        if ":" in host:
            host, _, c = host.partition(":")
            count = _count(c, ln, raw)
        for w in words[1:]:
            k, _, v = w.partition("=")
            if k in ("slots", "cpu", "cpus", "ppn"):
                count = _count(v, ln, raw)
        if host not in slots:
            order.append(host)
            slots[host] = 0
        slots[host] += count
    return [(h, slots[h]) for h in order]


def _count(text: str, ln: int, raw: str) -> int:
    try:
        c = int(text)
    except ValueError:
        c = 0
    if c < 1:
        raise PlacementError(f"host file line {ln}: {raw.strip()!r} has a slot count that is not a positive number")
    return c


def read_hostfile(path: str) -> list[tuple[str, int]]:
    """``(host, slots)`` of a host file (``$PBS_NODEFILE``, Open MPI, Hydra or plain)."""
    try:
        with open(path) as fh:
            return parse_hostfile_lines(fh.readlines())
    except OSError as err:
        raise PlacementError(f"cannot read host file {path}: {err.strerror}") from err


def read_nodes(arg: str) -> list[tuple[str, int]]:
    """``(host, slots)`` from a host file path, or else a compressed host list.

    Slots are 1 per name for a compressed list (the count of ranks per node
    comes from ``--ppn``); a host file gives its own counts.

    >>> read_nodes("n[1-3]")
    [('n1', 1), ('n2', 1), ('n3', 1)]
    """
    if os.path.isfile(arg):
        return read_hostfile(arg)
    if "/" in arg:
        raise PlacementError(f"host file {arg} does not exist")
    return parse_hostfile_lines(expand_hostlist(arg))
