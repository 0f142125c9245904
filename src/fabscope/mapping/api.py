"""One entry point: ``map_ranks(graph, target, "topo")``, and a side-by-side comparison.

Algorithms by name:

========== ===============================================================
block      rank r in slot r (launchers' default, ``--map-by slot``)
cyclic     round robin over the nodes (``--map-by node``)
random     a seeded random permutation
hier       recursive METIS partitioning along the fabric's levels
fold       tile and fold the process grid onto a torus box (Rubik-like)
tile       nested grid blocks per node and per leaf on trees, leaves by METIS
ml         multilevel annealing: the graph coarsened alongside blocks of slots, refined level by
           level (from hier's partition on trees, from METIS' node parts on multi-rank nodes)
topo       for graphs with a process grid, the best of fold / tile / hier, then swaps for
           hop-bytes; without one, the better of ml and block (the ranks in order: an application's
           own numbering is often local); then swaps for the busiest routed link; returns the best
           of these stages under the declared objective (the default)
scotch     Scotch's static mapping (pyscotch), best of ``scotch_seeds`` seeds
========== ===============================================================

A name may carry refinements: ``hier+swap``, ``hier+swap+links``,
``scotch+links``, ``scotch+anneal``.  No refinement worsens the metric it
does not optimise by more than
:data:`~fabscope.mapping.algorithms.refine.TOLERANCE` (1 %).

Objectives (``objective=``): ``hop-bytes``, ``busiest-link`` (bytes on the
busiest directed link under the fabric's routing), ``time`` (one exchange of
the graph under the max-min flow model, :func:`fabscope.model.simulate.simulate`
on the fabric's routes).  Ties go to the other metric, then to the earlier stage.

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
from fabscope.mapping.algorithms.anneal import anneal
from fabscope.mapping.algorithms.baselines import block, cyclic, random
from fabscope.mapping.algorithms.hierarchical import hierarchical
from fabscope.mapping.algorithms.refine import TOLERANCE, max_link_load, refine_hops, refine_links
from fabscope.mapping.algorithms.torus_fold import torus_fold
from fabscope.mapping.algorithms.tree_tile import tree_tile
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import Metrics, evaluate, host_hops, weighted_sum
from fabscope.mapping.targets import Mapping, Target

__all__ = ["ALGORITHMS", "OBJECTIVES", "map_ranks", "compare"]

ALGORITHMS = ("block", "cyclic", "random", "hier", "fold", "tile", "ml", "topo", "scotch")
REFINEMENTS = ("swap", "links", "anneal")
OBJECTIVES = ("hop-bytes", "busiest-link", "time")


class _Scores:
    """Metrics of candidate mappings, computed once each (the link load needs routing)."""

    def __init__(self, graph: CommGraph, objective: str) -> None:
        if objective not in OBJECTIVES:
            raise MappingError(f"unknown objective {objective!r}; choose from {', '.join(OBJECTIVES)}")
        self.graph, self.objective = graph, objective
        self._hb: dict[int, float] = {}
        self._link: dict[int, float] = {}
        self._time: dict[int, float] = {}
        self._keep: list[Mapping] = []

    def _stage(self, m: Mapping, key: str) -> float | None:
        st = m.info.get("stages") if isinstance(m.info, dict) else None
        if st and st[-1].get(key) is not None:
            return float(st[-1][key])
        return None

    def hb(self, m: Mapping) -> float:
        if id(m) not in self._hb:
            self._keep.append(m)
            self._hb[id(m)] = _hop_bytes(m, self.graph)
        return self._hb[id(m)]

    def link(self, m: Mapping) -> float:
        if id(m) not in self._link:
            self._keep.append(m)
            v = self._stage(m, "max_link_load")
            self._link[id(m)] = v if v is not None else max_link_load(m.slot, m.target, self.graph)
        return self._link[id(m)]

    def time(self, m: Mapping) -> float:
        if id(m) not in self._time:
            from fabscope.mapping.metrics import model_time

            self._keep.append(m)
            self._time[id(m)] = model_time(m, self.graph)
        return self._time[id(m)]

    def key(self, m: Mapping) -> tuple[float, ...]:
        if self.objective == "hop-bytes":
            return (self.hb(m),)
        if self.objective == "busiest-link":
            return (self.link(m), self.hb(m))
        return (self.time(m), self.link(m), self.hb(m))

    def best(self, cands: list[Mapping]) -> Mapping:
        """The best candidate; within 1e-9 relative, the earlier one."""
        best, kb = cands[0], self.key(cands[0])
        for c in cands[1:]:
            kc = self.key(c)
            for a, b in zip(kc, kb):
                if a < b * (1 - 1e-9) - 1e-12:
                    best, kb = c, kc
                    break
                if a > b * (1 + 1e-9) + 1e-12:
                    break
        return best


def _near_hop_bound(m: Mapping, g: CommGraph) -> bool:
    """Whether ``m``'s hop-bytes are within TOLERANCE of their lower bound: one rank per node on a
    torus, no two of the job's nodes on one router, so every edge costs at least one hop."""
    t = m.target
    if t.fabric.coords is None or np.any(t.slots_per_node != 1) or not g.n_edges or \
            len(np.unique(t.fabric.host_switch[t.nodes])) != t.n_nodes:
        return False
    return _hop_bytes(m, g) <= float(g.bytes.sum()) * (1 + TOLERANCE)


def _hop_bytes(m: Mapping, g: CommGraph) -> float:
    h = m.host
    return weighted_sum(host_hops(m.fabric, h[g.src], h[g.dst]), g.bytes)


def _base(name: str, graph: CommGraph, target: Target, seed: int, scores: "_Scores | None" = None,
          scotch_seeds: int = 5) -> Mapping:
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
    if name == "ml":
        from fabscope.mapping.algorithms.multilevel import multilevel

        return multilevel(graph, target, seed)
    if name == "scotch":
        from fabscope.mapping.algorithms.scotch import scotch

        return scotch(graph, target, seed, n_seeds=scotch_seeds)
    if name == "topo":
        t0 = time.perf_counter()
        cands = []
        f = target.fabric
        if graph.grid:
            tries = (["fold"] if f.coords is not None else []) + (["tile"] if f.levels else []) + ["hier"]
        else:
            tries = ["ml"]                # no grid to fold or tile: multilevel annealing
            in_order = _base("block", graph, target, seed, scores)
            if _near_hop_bound(in_order, graph):
                tries = []                # ranks in order already one hop an edge: nothing for ml to gain
        for alg in tries:
            try:
                cands.append(_base(alg, graph, target, seed, scores, scotch_seeds=1))
            except MappingError:
                continue
            if alg == "fold":
                break                    # a fold that fits beats partitioning on a torus
        if not cands and tries:          # ml without a C compiler: METIS' partition alone
            m = _base("hier", graph, target, seed, scores)
            cands.append(Mapping(target, m.slot, m.algorithm, m.seconds,
                                 {"stages": [{"step": "ml", "kept": False, "why": "not compiled"}]}))
        if not graph.grid and (not cands or _hop_bytes(in_order, graph) <=
                               min(_hop_bytes(c, graph) for c in cands) * (1 + TOLERANCE)):
            # the ranks in order (an application's own numbering is often local), where their
            # hop-bytes are no worse: spread over the fabric, they would lower only the busiest link
            cands.append(in_order)
        best = scores.best(cands) if scores is not None and len(cands) > 1 else \
            min(cands, key=lambda m: _hop_bytes(m, graph))
        return Mapping(target, best.slot, best.algorithm, time.perf_counter() - t0, best.info)
    raise MappingError(f"unknown mapping algorithm {name!r}; choose from {', '.join(ALGORITHMS)} "
                       f"(with +{'/+'.join(REFINEMENTS)} refinements)")


def map_ranks(graph: CommGraph, target: Target, algorithm: str = "topo", *, seed: int = 0,
              io_ranks: Sequence[int] = (), objective: str = "busiest-link",
              scotch_seeds: int = 5) -> Mapping:
    """Map the graph's ranks onto the target's slots with ``algorithm`` (see the module docstring).

    ``io_ranks`` each get a node of their own (the last of the job's nodes in
    fabric order); the other ranks are mapped onto the remaining nodes.
    ``topo`` returns the best of its stages (base, ``+swap``, ``+links``)
    under ``objective``; ``info["stages"]`` says what each refinement did.
    Every step is bounded by counts, never by the clock: the mapping depends
    only on the inputs and ``seed``.
    """
    name, *refs = algorithm.strip().lower().split("+")
    for r in refs:
        if r not in REFINEMENTS:
            raise MappingError(f"unknown refinement {r!r} in {algorithm!r}; choose from {', '.join(REFINEMENTS)}")
    scores = _Scores(graph, objective)          # checks the objective before any work
    if scotch_seeds < 1:
        raise MappingError(f"--scotch-seeds must be at least 1, not {scotch_seeds}")
    topo = name == "topo" and not refs
    if topo:
        # without a process grid (no fold or tile to start from) annealing comes first
        refs = (["swap"] if graph.grid else []) + ["links"]   # the multilevel loop has swapped already
    full = target
    io = np.unique(np.asarray(io_ranks, dtype=np.int64))
    if len(io):
        if io.min() < 0 or io.max() >= graph.n:
            raise MappingError(f"I/O rank {int(io.max())} is not a rank of the {graph.n}-rank graph")
        target, io_hosts = target.split_io(len(io))
        graph, _ = graph.without(io)
        scores = _Scores(graph, objective)
    target.check_fits(graph.n)
    t0 = time.perf_counter()
    m = _base(name, graph, target, seed, scores, scotch_seeds)
    if isinstance(m.info, dict) and m.info.get("optimal") and topo:
        refs = []                        # a fold proven optimal on hop-bytes: refinements skipped
    stages = [m]
    for r in refs:
        if r == "swap":
            known = scores._link.get(id(m))
            m = refine_hops(m, graph, seed=seed, link_tolerance=TOLERANCE,
                            start_link=known)
        elif r == "anneal":
            m = anneal(m, graph, seed=seed, link_tolerance=TOLERANCE,
                       start_link=scores._link.get(id(m)))
        else:
            m = refine_links(m, graph, seed=seed, hop_slack=TOLERANCE,
                             tries=2000 if graph.n <= 20000 else 300)
        if m is not stages[-1] and not np.array_equal(m.slot, stages[-1].slot):
            stages.append(m)
        else:
            stages[-1] = m               # same slots, newer notes in info
    if topo and len(stages) > 1:
        best = scores.best(stages)
        info = dict(best.info) if isinstance(best.info, dict) else {}
        info.update(stages=m.info.get("stages", []) if isinstance(m.info, dict) else [], objective=objective,
                    chosen=best.algorithm)
        m = Mapping(target, best.slot, best.algorithm, time.perf_counter() - t0, info)
    elif topo:
        info = dict(m.info) if isinstance(m.info, dict) else {}
        info["objective"] = objective
        m = Mapping(target, m.slot, m.algorithm, time.perf_counter() - t0, info)
    if len(io):
        m = m.with_io(io, io_hosts, full)
    return m


def compare(graph: CommGraph, target: Target, algorithms: Sequence[str], *, seed: int = 0,
            model: bool = False, io_ranks: Sequence[int] = (), objective: str = "busiest-link",
            scotch_seeds: int = 5) -> list[tuple[Mapping, Metrics]]:
    """Map with every algorithm and measure each: ``[(mapping, metrics), ...]`` in the order given."""
    out = []
    for a in algorithms:
        m = map_ranks(graph, target, a, seed=seed, io_ranks=io_ranks, objective=objective,
                      scotch_seeds=scotch_seeds)
        out.append((m, evaluate(m, graph, model=model)))
    return out


def metrics_rows(results: list[tuple[Mapping, Metrics]]) -> list[dict[str, Any]]:
    """Plain rows for tables and JSON."""
    rows = []
    for m, e in results:
        row = {"algorithm": m.algorithm, "seconds": round(m.seconds, 3), **e.as_dict()}
        info = m.info if isinstance(m.info, dict) else {}
        if "strategy" in info:                    # Scotch: what makes its row reproducible
            row["scotch"] = {k: info[k] for k in ("seed", "seeds", "strategy", "order", "target", "repaired")}
        if "objective" in info:
            row["objective"] = info["objective"]
        rows.append(row)
    return rows
