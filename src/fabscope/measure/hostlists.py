"""Host lists of a batch job: ``$PBS_NODEFILE``, ``$SLURM_JOB_NODELIST``, host files.

>>> expand_nodelist("node[001-003,010],gpu7")
['node001', 'node002', 'node003', 'node010', 'gpu7']
>>> expand_nodelist("rack[1-2]-n[1-2]")
['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']
>>> parse_hostfile(["# PBS", "n1", "n1", "n2 slots=4", "n3:2"])
[('n1', 2), ('n2', 4), ('n3', 2)]
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Iterable, Mapping

from fabscope.errors import FabscopeWarning, MeasureError
from fabscope.names import check_host_name


#: the most nodes one bracket range may name (a typo such as node[1-99999999] is refused, not expanded)
MAX_NODES = 1_000_000


def _split_top(text: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise MeasureError(f"node list {text!r}: unbalanced ']'")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise MeasureError(f"node list {text!r}: unbalanced '['")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_one(name: str) -> list[str]:
    m = re.search(r"\[([^\[\]]*)\]", name)
    if not m:
        return [name]
    head, tail = name[: m.start()], name[m.end():]
    out = []
    for rng in m.group(1).split(","):
        if "-" in rng:
            a, b = rng.split("-", 1)
            if not (a.isdecimal() and b.isdecimal()) or int(a) > int(b):
                raise MeasureError(f"node list {name!r}: bad range {rng!r}")
            if int(b) - int(a) >= MAX_NODES:
                raise MeasureError(f"node list {name!r}: range {rng!r} names more than {MAX_NODES} nodes")
            width = len(a)
            values = [str(i).zfill(width) for i in range(int(a), int(b) + 1)]
        elif rng.isdecimal():
            values = [rng]
        else:
            raise MeasureError(f"node list {name!r}: bad entry {rng!r}")
        out.extend(head + v + rest for v in values for rest in _expand_one(tail))
    return out


def _count_one(name: str) -> int:
    """How many names ``name`` expands to (the product of its bracket groups), counted, not made."""
    n = 1
    for group in re.findall(r"\[([^\[\]]*)\]", name):
        k = 0
        for rng in group.split(","):
            a, dash, b = rng.partition("-")
            if dash and a.isascii() and a.isdecimal() and b.isascii() and b.isdecimal() and len(a) < 20 and len(b) < 20:
                k += max(int(b) - int(a) + 1, 0)
            else:
                k += 1                         # a single number, or a bad entry that expansion names
        n *= max(k, 1)
    return n


def expand_nodelist(text: str) -> list[str]:
    """Slurm's compressed ``node[001-004,010]`` syntax, expanded in order.

    The names are counted before they are made: more than :data:`MAX_NODES` in all
    (``r[0-999]-n[0-999]-c[0-99]`` names 10^8) is refused.

    >>> expand_nodelist("r[0-999]-n[0-999]-c[0-99]")
    Traceback (most recent call last):
    ...
    fabscope.errors.MeasureError: node list 'r[0-999]-n[0-999]-c[0-99]' names 100,000,000 nodes; at most 1,000,000
    """
    parts = _split_top(text)
    total = sum(_count_one(p) for p in parts)
    if total > MAX_NODES:
        raise MeasureError(f"node list {text[:60]!r} names {total:,} nodes; at most {MAX_NODES:,}")
    return [h for part in parts for h in _expand_one(part)]


def parse_hostfile(lines: Iterable[str], source: str = "host file") -> list[tuple[str, int]]:
    """(host, slots) in order of first appearance; a repeated line adds a slot.

    Accepts PBS node files (a host per slot), ``host slots=N`` (Open MPI)
    and ``host:N`` (MPICH).  A PBS file repeats a host on consecutive lines,
    one per slot; a host listed again elsewhere, or a ``slots=``/``:N`` line
    repeated, is most likely a mistake: its slots are still added up, with a
    :class:`~fabscope.errors.FabscopeWarning` naming the host.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     parse_hostfile(["n1 slots=4", "n2 slots=4", "n1 slots=4"])
    [('n1', 8), ('n2', 4)]
    >>> str(w[0].message)
    "host file line 3: host 'n1' is listed again (first at line 1); its slots are added up: 8"
    """
    slots: dict[str, int] = {}
    first: dict[str, int] = {}
    counted: set[str] = set()              # hosts given with an explicit count
    warned: set[str] = set()
    prev = None
    for n, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"^(\S+?)(?::(\d+))?(?:\s+(?:slots|max_slots)=(\d+).*)?$", line)
        if not m:
            raise MeasureError(f"host file line {raw.strip()!r} is neither 'host', 'host:N' nor 'host slots=N'")
        host, explicit = check_host_name(m.group(1), f"{source} line {n}", MeasureError), bool(m.group(2) or m.group(3))
        n_slots = int(m.group(2) or m.group(3) or 1)
        if host in slots and host not in warned and (host != prev or explicit or host in counted):
            warned.add(host)
            warnings.warn(f"{source} line {n}: host {host!r} is listed again (first at line {first[host]}); "
                          f"its slots are added up: {slots[host] + n_slots}", FabscopeWarning, stacklevel=2)
        first.setdefault(host, n)
        if explicit:
            counted.add(host)
        slots[host] = slots.get(host, 0) + n_slots
        prev = host
    return list(slots.items())


def hostfile_ranks(lines: Iterable[str], source: str = "host file") -> list[str] | None:
    """The host of each rank, in rank order, where the file gives that order: a host per line (a PBS
    node file; ``fabscope map -o`` with a cyclic placement repeats hosts) or ``host:N`` runs (Hydra's
    machine file).  None where it gives slots (``host slots=N``): how many ranks a host takes, not
    their order (:func:`parse_hostfile` reads those).

    >>> hostfile_ranks(["a", "b", "a", "b"]), hostfile_ranks(["a:2", "b:1"]), hostfile_ranks(["a slots=2"])
    (['a', 'b', 'a', 'b'], ['a', 'a', 'b'], None)
    """
    out: list[str] = []
    for n, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"(\S+?)(?::(\d{1,7}))?", line)
        if not m:
            return None
        host = check_host_name(m.group(1), f"{source} line {n}", MeasureError)
        count = int(m.group(2) or 1)
        if not 1 <= count <= MAX_NODES or len(out) + count > MAX_NODES:
            raise MeasureError(f"{source} line {n}: {count} ranks on {host!r}; at most {MAX_NODES:,} in all")
        out += [host] * count
    return out


def read_hostfile(path: str) -> list[tuple[str, int]]:
    """:func:`parse_hostfile` of a file, read with :func:`fabscope.textio.read_lines` (bounded, UTF-8 checked)."""
    from fabscope.textio import read_lines

    return parse_hostfile((line for _, line in read_lines(path, "host file", MeasureError)), f"host file {path}")


def job_hosts(env: Mapping[str, str] | None = None) -> tuple[list[tuple[str, int]], str] | None:
    """The hosts of the batch job this runs in, and where they came from; None outside a job.

    >>> job_hosts({"SLURM_JOB_NODELIST": "c[1-2]", "SLURM_NTASKS_PER_NODE": "4"})
    ([('c1', 4), ('c2', 4)], '$SLURM_JOB_NODELIST')
    """
    env = os.environ if env is None else env
    if env.get("PBS_NODEFILE"):
        return read_hostfile(env["PBS_NODEFILE"]), "$PBS_NODEFILE"
    if env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST"):
        hosts = expand_nodelist(env.get("SLURM_JOB_NODELIST") or env["SLURM_NODELIST"])
        per = env.get("SLURM_NTASKS_PER_NODE") or env.get("SLURM_CPUS_ON_NODE") or "1"
        n = int(re.match(r"\d+", per).group(0)) if re.match(r"\d+", per) else 1
        return [(h, n) for h in hosts], "$SLURM_JOB_NODELIST"
    return None
