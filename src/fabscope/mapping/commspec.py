"""``--comm`` specs: a communication graph named by a generator spec or a file.

Above both :mod:`fabscope.mapping.commgraph` (the graph and its generators)
and :mod:`fabscope.traffic.commfiles` (matrices read from files), so that
neither of those imports the other's caller.

>>> load_comm("ring:8").n_edges
16
"""

from __future__ import annotations

import os

from fabscope.errors import TrafficError
from fabscope.limits import human_bytes, memory_limit
from fabscope.traffic.commfiles import MAX_RANKS, read_comm_file
from fabscope.numbers import number
from fabscope.mapping.commgraph import GENERATORS, CommGraph

__all__ = ["load_comm"]


# Calibration: load_comm("random:1000000,degree=8") (8 M edges) grows the peak RSS by 759 MB (the
# generator's int64 temporaries and CommGraph's sorting; resource.getrusage before and after): 95 B an
# edge; rounded up.
BYTES_PER_EDGE = 120.0


def _edges(name: str, pos: str, kw: dict[str, str]) -> tuple[int, int]:
    """(ranks, an upper bound on the edges) a generator spec makes, from its text alone."""
    from math import prod

    from fabscope.mapping.commgraph import _dims

    dims = _dims(pos)
    n = prod(dims)
    if name in ("pencils", "fft"):
        return n, n * (sum(dims) if len(dims) == 2 else 1)
    if name == "random":
        deg = number(kw.get("degree", "6"), "communication spec: degree", 1, error=TrafficError, integer=True)
        return n, n * deg
    if name.startswith("stencil"):
        return n, 2 * len(dims) * n
    return n, 2 * n                              # ring, tree


def check_edges(spec: str, name: str, pos: str, kw: dict[str, str]) -> None:
    """Refuse a generated graph too large to hold, with the estimate, before it is made."""
    n, edges = _edges(name, pos, kw)
    if n > MAX_RANKS:
        raise TrafficError(f"communication spec {spec!r}: {n:,} ranks; fabscope maps at most {MAX_RANKS:,}")
    lim, source = memory_limit()
    if edges * BYTES_PER_EDGE > lim:
        raise TrafficError(f"communication spec {spec!r}: {n:,} ranks, {edges:,} edges, about "
                           f"{human_bytes(edges * BYTES_PER_EDGE)}; the limit is {human_bytes(lim)} ({source})")


def load_comm(spec: str, n_ranks: int | None = None) -> CommGraph:
    """A graph from a spec or a file; ``n_ranks`` (if given) must match its size.

    Specs: ``stencil3d:16x16x32[,halo=64KiB,periodic=1x1x0]``, ``stencil2d:64x64``,
    ``pencils:32x32[,size=..]`` (also ``fft:``), ``ring:64``, ``tree:64,arity=4``,
    ``random:1024,degree=6,seed=1``; files: ``*.csv`` (dense bytes matrix),
    ``*.mtx`` (Matrix Market, as the PMPI library writes).

    >>> load_comm("stencil3d:4x4x8,halo=1KiB").n
    128
    >>> load_comm("ring:8", n_ranks=9)
    Traceback (most recent call last):
    ...
    fabscope.errors.TrafficError: communication graph 'ring:8' has 8 ranks, the job has 9
    """
    spec = spec.strip()
    name, _, arg = spec.partition(":")
    if name.lower() in GENERATORS:
        pos, *rest = arg.split(",") if arg else [""]
        kw: dict[str, str] = {}
        for item in rest:
            k, eq, v = item.partition("=")
            if not eq:
                raise TrafficError(f"communication spec {spec!r}: {item!r} is not key=value")
            kw[k.strip().lower()] = v.strip()
        check_edges(spec, name.lower(), pos, kw)
        g = GENERATORS[name.lower()](pos, kw)
        if kw:
            raise TrafficError(f"communication spec {spec!r}: unknown option {sorted(kw)[0]!r}")
    elif os.path.exists(spec) or spec.endswith((".csv", ".mtx")):
        g = read_comm_file(spec)
    else:
        raise TrafficError(f"unknown communication graph {spec!r}; give one of "
                           f"{', '.join(sorted(GENERATORS))} (e.g. stencil3d:16x16x32) or a .csv/.mtx file")
    if n_ranks is not None and g.n != n_ranks:
        raise TrafficError(f"communication graph {g.name!r} has {g.n} ranks, the job has {n_ranks}")
    return g
