"""One entry point: ``map_ranks(graph, target, "topo")``, and a side-by-side comparison.

Algorithms by name:

========== ===============================================================
block      rank r in slot r (launchers' default, ``--map-by slot``)
cyclic     round robin over the nodes (``--map-by node``)
random     a seeded random permutation
hier       recursive METIS partitioning along the fabric's levels
fold       tile and fold the process grid onto a torus box (Rubik-like)
tile       nested grid blocks per node and per leaf on trees, leaves by METIS
topo       the best of fold / tile / hier, then swaps for hop-bytes, then
           swaps for the busiest routed link (the default)
scotch     Scotch's static mapping (pyscotch), the peer to compare with
========== ===============================================================

A name may carry refinements: ``hier+swap``, ``hier+swap+links``,
``scotch+links``.

>>> from fabscope.fabric.generators import torus
>>> from fabscope.mapping.commgraph import stencil
>>> from fabscope.mapping.targets import Target
>>> g = stencil((4, 4, 4), halo=1)
>>> map_ranks(g, Target.whole(torus((4, 4, 4), cores=1), 64), "topo").algorithm   # optimal: no refinement
'fold'
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from fabscope.errors import MappingError
from fabscope.mapping.algorithms.baselines import block, cyclic, random
from fabscope.mapping.algorithms.hierarchical import hierarchical
from fabscope.mapping.algorithms.refine import refine_hops, refine_links
from fabscope.mapping.algorithms.torus_fold import torus_fold
from fabscope.mapping.algorithms.tree_tile import tree_tile
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import Metrics, evaluate, host_hops
from fabscope.mapping.targets import Mapping, Target

__all__ = ["ALGORITHMS", "map_ranks", "compare"]

ALGORITHMS = ("block", "cyclic", "random", "hier", "fold", "tile", "topo", "scotch")
REFINEMENTS = ("swap", "links")


def _hop_bytes(m: Mapping, g: CommGraph) -> float:
    h = m.host
    return float(np.dot(host_hops(m.fabric, h[g.src], h[g.dst]), g.bytes))


def _base(name: str, graph: CommGraph, target: Target, seed: int) -> Mapping:
    n = graph.n
    if name == "block":
        return block(n, target)
    if name == "cyclic":
        return cyclic(n, target)
    if name == "random":
        return random(n, target, seed)
    if name == "hier":
        return hierarchical(graph, target, seed)
    if name == "fold":
        return torus_fold(graph, target, seed=seed)
    if name == "tile":
        return tree_tile(graph, target, seed=seed)
    if name == "scotch":
        from fabscope.mapping.algorithms.scotch import scotch

        return scotch(graph, target, seed)
    if name == "topo":
        t0 = time.perf_counter()
        cands = []
        f = target.fabric
        tries = (["fold"] if f.coords is not None and graph.grid else []) + \
                (["tile"] if f.levels and graph.grid else []) + ["hier"]
        for alg in tries:
            try:
                cands.append(_base(alg, graph, target, seed))
            except MappingError:
                continue
            if alg == "fold":
                break                    # a fold that fits beats partitioning on a torus
        best = min(cands, key=lambda m: _hop_bytes(m, graph))
        return Mapping(target, best.slot, best.algorithm, time.perf_counter() - t0, best.info)
    raise MappingError(f"unknown mapping algorithm {name!r}; choose from {', '.join(ALGORITHMS)} "
                       f"(with +{'/+'.join(REFINEMENTS)} refinements)")


def map_ranks(graph: CommGraph, target: Target, algorithm: str = "topo", *, seed: int = 0,
              io_ranks: Sequence[int] = (), time_limit: float = 30.0) -> Mapping:
    """Map the graph's ranks onto the target's slots with ``algorithm`` (see the module docstring).

    ``io_ranks`` each get a node of their own (the last of the job's nodes in
    fabric order); the other ranks are mapped onto the remaining nodes.
    """
    name, *refs = algorithm.strip().lower().split("+")
    for r in refs:
        if r not in REFINEMENTS:
            raise MappingError(f"unknown refinement {r!r} in {algorithm!r}; choose from {', '.join(REFINEMENTS)}")
    if name == "topo" and not refs:
        refs = ["swap", "links"]
    full = target
    io = np.unique(np.asarray(io_ranks, dtype=np.int64))
    if len(io):
        if io.min() < 0 or io.max() >= graph.n:
            raise MappingError(f"I/O rank {int(io.max())} is not a rank of the {graph.n}-rank graph")
        target, io_hosts = target.split_io(len(io))
        graph, _ = graph.without(io)
    target.check_fits(graph.n)
    m = _base(name, graph, target, seed)
    if isinstance(m.info, dict) and m.info.get("optimal") and name == "topo":
        refs = []                        # proven optimal: nothing to refine
    for r in refs:
        if r == "swap":
            m = refine_hops(m, graph, seed=seed, time_limit=time_limit / 2)
        else:
            m = refine_links(m, graph, seed=seed, time_limit=time_limit / 2,
                             tries=2000 if graph.n <= 20000 else 300)
    if len(io):
        m = m.with_io(io, io_hosts, full)
    return m


def compare(graph: CommGraph, target: Target, algorithms: Sequence[str], *, seed: int = 0,
            model: bool = False, io_ranks: Sequence[int] = ()) -> list[tuple[Mapping, Metrics]]:
    """Map with every algorithm and measure each: ``[(mapping, metrics), ...]`` in the order given."""
    out = []
    for a in algorithms:
        m = map_ranks(graph, target, a, seed=seed, io_ranks=io_ranks)
        out.append((m, evaluate(m, graph, model=model)))
    return out


def metrics_rows(results: list[tuple[Mapping, Metrics]]) -> list[dict[str, Any]]:
    """Plain rows for tables and JSON."""
    rows = []
    for m, e in results:
        rows.append({"algorithm": m.algorithm, "seconds": round(m.seconds, 3), **e.as_dict()})
    return rows
