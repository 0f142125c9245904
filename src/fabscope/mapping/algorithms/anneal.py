"""Simulated annealing of hop-bytes: the ``+anneal`` refinement.

Swap refinement (:func:`~fabscope.mapping.algorithms.refine.refine_hops`)
stops at the first mapping no single swap improves; on an irregular graph
(a mesh from a Matrix Market file) that is still far from the best.
Annealing also takes swaps that cost a little, less often as it cools:

* a step picks a rank ``u``, a *base* node (the node of one of ``u``'s
  peers, three times in four, else ``u``'s own), a node next to the base
  (the base itself, or one on its switch or a switch cabled to it:
  :func:`~fabscope.mapping.algorithms.refine.near_nodes`) and a slot there;
  ``u`` swaps with the rank in that slot, or moves into it when it is free;
* the change of hop-bytes is exact (hops between the job's nodes from one
  table of :func:`~fabscope.mapping.metrics.host_hops`); a rise ``d`` is
  taken with probability ``exp(-d / T)``; ``T`` cools geometrically from 3 to
  0.01 times the mean edge's bytes, over ``steps`` steps (20,000 per rank);
* the best mapping seen is returned.

The loop runs in C (``anneal.c``, built on first use like the dynamic
engine); :func:`anneal_reference` is the same loop in Python, step for step
(same random numbers), and the tests hold the two equal.  Like every
refinement it may not worsen the metric it does not optimise by more than
:data:`~fabscope.mapping.algorithms.refine.TOLERANCE`: when the busiest
routed link rose by more, the input comes back.  Jobs of more than
:data:`MAX_NODES` nodes are not annealed (the table of hops is dense).

>>> from fabscope.fabric.generators import torus
>>> from fabscope.mapping.commgraph import random_sparse
>>> from fabscope.mapping.targets import Target
>>> from fabscope.mapping.algorithms.baselines import random
>>> from fabscope.mapping.metrics import evaluate
>>> g = random_sparse(64, degree=4, seed=1)
>>> m0 = random(64, Target.whole(torus((4, 4, 4), cores=1), 64), seed=0)
>>> m1 = anneal(m0, g, seed=0)
>>> evaluate(m1, g, links=False).hop_bytes < 0.8 * evaluate(m0, g, links=False).hop_bytes
True
"""

from __future__ import annotations

import ctypes
import math
import os
import time
from functools import lru_cache

import numpy as np

from fabscope.cbuild import load_library
from fabscope.mapping.algorithms.refine import MIN_KEEP_GAIN, TOLERANCE, _with_stage, max_link_load, near_nodes
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import host_hops, weighted_sum
from fabscope.mapping.targets import Mapping

__all__ = ["anneal", "anneal_reference", "MAX_NODES", "STEPS_PER_RANK"]

SOURCE = os.path.join(os.path.dirname(__file__), "anneal.c")
#: the most nodes a job may have to be annealed (the hop table is nodes x nodes bytes)
MAX_NODES = 4096
#: steps per rank unless told
STEPS_PER_RANK = 20_000
#: start and end temperatures, in bytes of the mean edge (both ways) per hop
T_START, T_END = 3.0, 0.01
_MASK = (1 << 64) - 1


@lru_cache(maxsize=1)
def _load() -> tuple[ctypes.CDLL | None, str]:
    dll, why = load_library(SOURCE, "anneal")
    if dll is not None:
        dll.fa_anneal.restype = ctypes.c_double
        dll.fa_anneal.argtypes = [ctypes.c_int64] + [ctypes.c_void_p] * 3 + [ctypes.c_int64] + \
            [ctypes.c_void_p] * 8 + [ctypes.c_double, ctypes.c_double, ctypes.c_int64, ctypes.c_uint64,
                                     ctypes.c_void_p]
    return dll, why


class _Problem:
    """The arrays both loops take (the graph as a symmetric CSR of bytes both ways, the job's hops)."""

    def __init__(self, mapping: Mapping, graph: CommGraph) -> None:
        t = mapping.target
        a = graph.adjacency.tocsr()
        a.sort_indices()
        self.indptr = a.indptr.astype(np.int64)
        self.nbr = a.indices.astype(np.int32)
        self.w = a.data.astype(np.float64)
        nodes = np.asarray(t.nodes)
        k = len(nodes)
        h = host_hops(mapping.fabric, np.repeat(nodes, k), np.tile(nodes, k))
        self.hops = np.ascontiguousarray(np.minimum(h, 255), dtype=np.uint8).reshape(k, k)
        spn = np.asarray(t.slots_per_node, np.int64)
        self.first = np.cumsum(spn) - spn
        self.n_slots = spn.astype(np.int32)
        self.node_of_slot = np.asarray(t.node_of_slot, np.int32)
        ptr, idx = near_nodes(t)
        if ptr is None:
            ptr, idx = np.zeros(k + 1, np.int64), np.zeros(0, np.int64)
        self.near_ptr, self.near = ptr.astype(np.int64), idx.astype(np.int32)
        self.unit = float(self.w.mean()) if len(self.w) else 1.0
        self.n, self.n_nodes, self.total_slots = graph.n, k, t.n_slots


def anneal_reference(p: _Problem, slot: np.ndarray, t0: float, t1: float, steps: int, seed: int
                     ) -> tuple[float, np.ndarray]:
    """The loop of ``anneal.c`` in Python: (best hop-bytes, its slots).  Slow; the tests' reference."""
    slot = np.asarray(slot, np.int64).copy()
    occ = np.full(p.total_slots, -1, np.int64)
    occ[slot] = np.arange(p.n)
    rng = (seed * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) & _MASK or 1

    def nxt() -> int:
        nonlocal rng
        x = rng
        x ^= (x << 13) & _MASK
        x ^= x >> 7
        x ^= (x << 17) & _MASK
        rng = x
        return x

    ip, nb, w, hops, nos = p.indptr, p.nbr, p.w, p.hops, p.node_of_slot
    cost = 0.0
    for u in range(p.n):
        for e in range(ip[u], ip[u + 1]):
            cost += w[e] * float(hops[nos[slot[u]], nos[slot[nb[e]]]])
    cost *= 0.5
    best, keep = cost, slot.copy()
    block = 1000
    cool = math.pow(t1 / t0, block / steps) if steps > block else 1.0
    t = t0
    for it in range(steps):
        if it and it % block == 0:
            t *= cool
        u = nxt() % p.n
        deg = int(ip[u + 1] - ip[u])
        r = nxt()
        base = int(nos[slot[u]])
        if deg > 0 and (r & 3):
            base = int(nos[slot[nb[ip[u] + (r >> 8) % deg]]])
        cnt = int(p.near_ptr[base + 1] - p.near_ptr[base])
        pick = (r >> 24) % (cnt + 1)
        node = base if pick == cnt else int(p.near[p.near_ptr[base] + pick])
        s = int(p.first[node] + (r >> 44) % int(p.n_slots[node]))
        su = int(slot[u])
        if s == su:
            continue
        v = int(occ[s])
        a, b = int(nos[su]), node
        delta = 0.0
        if a != b:
            for e in range(ip[u], ip[u + 1]):
                x = nb[e]
                if x == v:
                    continue
                c = nos[slot[x]]
                delta += w[e] * (float(hops[b, c]) - float(hops[a, c]))
            if v >= 0:
                for e in range(ip[v], ip[v + 1]):
                    x = nb[e]
                    if x == u:
                        continue
                    c = nos[slot[x]]
                    delta += w[e] * (float(hops[a, c]) - float(hops[b, c]))
        if delta <= 0.0 or ((nxt() >> 11) * (1.0 / 9007199254740992.0)) < math.exp(-delta / t):
            slot[u] = s
            occ[s] = u
            occ[su] = v
            if v >= 0:
                slot[v] = su
            cost += delta
            if cost < best - 1e-9 * max(best, 1.0):
                best, keep = cost, slot.copy()
    return best, keep


def _compiled(p: _Problem, slot: np.ndarray, t0: float, t1: float, steps: int, seed: int
              ) -> tuple[float, np.ndarray, int]:
    dll, why = _load()
    if dll is None:
        raise RuntimeError(why)
    s = np.ascontiguousarray(slot, dtype=np.int64).copy()
    occ = np.full(p.total_slots, -1, np.int64)
    occ[s] = np.arange(p.n)
    done = np.zeros(1, np.int64)
    hops = np.ascontiguousarray(p.hops.reshape(-1))
    ptr = [a.ctypes.data_as(ctypes.c_void_p) for a in
           (p.indptr, p.nbr, p.w, hops, p.first, p.n_slots, p.node_of_slot, p.near_ptr, p.near, s, occ)]
    best = dll.fa_anneal(p.n, ptr[0], ptr[1], ptr[2], p.n_nodes, *ptr[3:], t0, t1, steps, seed & _MASK,
                         done.ctypes.data_as(ctypes.c_void_p))
    if best < 0:
        raise MemoryError("anneal: out of memory")
    return best, s, int(done[0])


def anneal(mapping: Mapping, graph: CommGraph, *, seed: int = 0, steps: int | None = None,
           link_tolerance: float | None = TOLERANCE, start_link: float | None = None,
           routing=None, engine: str = "auto") -> Mapping:
    """Lower hop-bytes by simulated annealing (see the module docstring).

    ``engine``: ``"c"``, ``"python"`` (the reference) or ``"auto"`` (C when
    a compiler is there).  The work is ``steps`` steps whatever the clock says: the result depends
    only on the inputs and ``seed``.
    """
    t_start = time.perf_counter()
    target = mapping.target
    if target.n_nodes > MAX_NODES or not graph.n_edges:
        why = f"{target.n_nodes} nodes > {MAX_NODES}" if graph.n_edges else "no edges"
        return Mapping(target, mapping.slot, mapping.algorithm, mapping.seconds,
                       _with_stage(mapping.info, step="anneal", kept=False, why=why))
    p = _Problem(mapping, graph)
    steps = int(steps if steps is not None else STEPS_PER_RANK * graph.n)
    t0, t1 = T_START * p.unit, T_END * p.unit
    h0 = target.slot_host[mapping.slot]
    hb0 = weighted_sum(host_hops(mapping.fabric, h0[graph.src], h0[graph.dst]), graph.bytes)
    use_c = engine == "c" or (engine == "auto" and _load()[0] is not None)
    if engine == "auto" and not use_c:          # the reference takes minutes where C takes seconds
        return Mapping(target, mapping.slot, mapping.algorithm, mapping.seconds,
                       _with_stage(mapping.info, step="anneal", kept=False, why=f"not compiled: {_load()[1]}"))
    if use_c:
        _, slot, done = _compiled(p, mapping.slot, t0, t1, steps, seed)
    else:
        _, slot = anneal_reference(p, mapping.slot, t0, t1, steps, seed)
        done = steps
    h = target.slot_host[slot]
    hb = weighted_sum(host_hops(mapping.fabric, h[graph.src], h[graph.dst]), graph.bytes)
    stage = {"step": "anneal", "hop_bytes": hb, "steps": done, "engine": "c" if use_c else "python"}
    secs = mapping.seconds + time.perf_counter() - t_start
    if hb > hb0 * (1 - MIN_KEEP_GAIN):
        stage.update(kept=False, hop_bytes=hb0, why=f"hop-bytes {hb:.6g} not {100 * MIN_KEEP_GAIN:g} % under {hb0:.6g}")
        return Mapping(target, mapping.slot, mapping.algorithm, secs, _with_stage(mapping.info, **stage))
    if link_tolerance is not None:
        start = start_link if start_link is not None else max_link_load(mapping.slot, target, graph, routing)
        peak = max_link_load(slot, target, graph, routing)
        stage.update(max_link_load=peak, start_link=start)
        if peak > start * (1 + link_tolerance) + 1e-9:
            stage.update(kept=False, hop_bytes=hb0, max_link_load=start, found_hop_bytes=hb,
                         why=f"the busiest link rose from {start:.6g} to {peak:.6g}")
            return Mapping(target, mapping.slot, mapping.algorithm, secs, _with_stage(mapping.info, **stage))
    stage["kept"] = True
    name = (mapping.algorithm + "+anneal") if mapping.algorithm else "anneal"
    return Mapping(target, slot, name, secs, _with_stage(mapping.info, **stage))
