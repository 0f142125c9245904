"""Multilevel mapping: coarsen the graph and the job's slots together, place the coarse graph, refine
on the way back (the ``ml`` algorithm, the start of ``topo`` for graphs without a process grid).

* **The slots in an order that keeps blocks together.**  On a torus the nodes go in Morton (Z)
  order of their coordinates, so that 2, 4, 8... consecutive nodes form a box; on trees by their
  groups, coarsest level first, then by node.  A node's slots are consecutive.  At level ``l`` a
  *place* is a block of ``2**l`` consecutive slots (the last, shorter block is the *tail*).
* **The graph coarsened to match.**  Level 0 has one vertex per slot: the ranks, then isolated
  vertices for the free slots.  Each level pairs its vertices by heavy-edge matching (the
  heaviest unmatched neighbour, visiting vertices in a seeded random order); the vertices left
  unmatched pair with each other, and an odd one out joins the tail.  So a coarse vertex holds
  exactly as many fine vertices as a place holds slots, and a placement at every level is a
  permutation of vertices over places.
* **The coarsest graph placed, then every level refined.**  The coarsest level (a few places)
  starts in order; at each level the placement is annealed (the C loop of ``multilevel.c``:
  swaps of two vertices' places, near a peer's place; hops between places are those between
  hosts standing for them, computed from coordinates or a switch-distance table, never a table
  of places x places), then projected: the two halves of a coarse vertex take the two halves of
  its place.  Each level runs ``steps_per_vertex`` steps per vertex: the work is counted, never
  timed, and memory follows the graph's edges.

>>> from fabscope.fabric.generators import torus
>>> from fabscope.mapping.commgraph import geometric
>>> from fabscope.mapping.targets import Target
>>> from fabscope.mapping.algorithms.baselines import block
>>> from fabscope.mapping.metrics import evaluate
>>> g = geometric(512, degree=8, seed=1)
>>> t = Target.whole(torus((8, 8, 8), cores=1), 512)
>>> m = multilevel(g, t, seed=0)
>>> sorted(m.slot.tolist()) == list(range(512)), m.algorithm
(True, 'ml')
>>> evaluate(m, g, links=False).hop_bytes < 0.4 * evaluate(block(512, t), g, links=False).hop_bytes
True
"""

from __future__ import annotations

import ctypes
import os
import time
from functools import lru_cache

import numpy as np

from fabscope.cbuild import load_library
from fabscope.errors import MappingError
from fabscope.mapping.algorithms.refine import near_nodes
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import host_hops
from fabscope.mapping.targets import Mapping, Target

__all__ = ["multilevel", "slot_order", "STEPS_PER_VERTEX", "PATIENCE"]

SOURCE = os.path.join(os.path.dirname(__file__), "multilevel.c")
#: annealing steps per vertex at every level
STEPS_PER_VERTEX = 200
#: the start temperature (in bytes of the level's mean edge per hop), on levels of at most COARSE
#: places and on the others; the end temperature
T_COARSE, T_FINE, T_END = 3.0, 0.3, 0.01
COARSE = 64
#: steps per vertex on levels of at most COARSE places (they are cheap and set the large scale)
STEPS_COARSE = 1000
#: a step looks this far along the order (besides the place's siblings)
REACH = 8
#: a level stops after this share of its sweeps (q steps each) without a new best placement: what it
#: returns is then the best so far, as it would be at the end unless a later sweep beat it
PATIENCE = 0.5
_MASK = (1 << 64) - 1
_P = ctypes.c_void_p


@lru_cache(maxsize=1)
def _load() -> tuple[ctypes.CDLL | None, str]:
    dll, why = load_library(SOURCE, "multilevel")
    if dll is not None:
        dll.fm_match.restype = None
        dll.fm_match.argtypes = [ctypes.c_int64, _P, _P, _P, _P, _P]
        dll.fm_anneal.restype = ctypes.c_double
        dll.fm_anneal.argtypes = [ctypes.c_int64, ctypes.c_int64, _P, _P, _P, _P, ctypes.c_int, ctypes.c_int,
                                  _P, _P, _P, _P, _P, ctypes.c_int64, _P, _P, _P, _P, _P, _P, ctypes.c_int,
                                  _P, _P, ctypes.c_double, ctypes.c_double, ctypes.c_int64, ctypes.c_int64,
                                  ctypes.c_uint64, ctypes.c_int64, _P]
    return dll, why


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_P)


def _morton(c: np.ndarray) -> np.ndarray:
    """Z-order key of integer coordinates (rows).

    >>> _morton(np.array([[0, 0], [1, 0], [0, 1], [1, 1], [2, 0]])).tolist()
    [0, 1, 2, 3, 4]
    """
    c = np.asarray(c, np.int64)
    nd = c.shape[1]
    bits = int(c.max(initial=0)).bit_length()
    key = np.zeros(len(c), np.int64)
    for b in range(bits):
        for k in range(nd):
            key |= ((c[:, k] >> b) & 1) << (b * nd + k)
    return key


def slot_order(target: Target) -> np.ndarray:
    """The job's slots in an order whose aligned blocks of 2, 4, 8... slots sit close (module docstring)."""
    f = target.fabric
    node = target.node_of_slot
    host = np.asarray(target.nodes)
    if f.levels:
        keys = [np.asarray(f.groups[lv.key])[host] for lv in f.levels] + [np.arange(len(host))]
        node_rank = np.empty(len(host), np.int64)
        node_rank[np.lexsort(tuple(keys))] = np.arange(len(host))     # lexsort: last key first
    elif f.coords is not None:
        c = f.coords[host].astype(np.int64)
        node_rank = np.empty(len(host), np.int64)
        node_rank[np.lexsort((np.arange(len(host)), _morton(c - c.min(axis=0))))] = np.arange(len(host))
    else:
        node_rank = np.arange(len(host))
    return np.lexsort((np.arange(len(node)), node_rank[node]))


class _Hops:
    """What ``fm_anneal`` needs to count hops between hosts (coordinates, or switch distances)."""

    def __init__(self, fabric) -> None:
        if fabric.coords is not None:
            self.mode, self.ndim = 0, int(fabric.coords.shape[1])
            self.coords = np.ascontiguousarray(fabric.coords, np.int32)
            self.dims = np.asarray(fabric.dims, np.int32)
            self.periodic = np.asarray(fabric.periodic, np.uint8)
            self.sw, self.swdist, self.n_sw = np.zeros(1, np.int32), np.zeros(1, np.int16), 1
        else:
            from fabscope.routing.distances import switch_distances

            self.mode, self.ndim = 1, 0
            self.coords, self.dims, self.periodic = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.uint8)
            if fabric.n_switches > 32767:       # the C side keeps a switch index in 16 bits
                raise MappingError(f"the multilevel mapper takes at most 32,767 switches; {fabric.name!r} has "
                                   f"{fabric.n_switches:,}")
            d = switch_distances(fabric)
            if (d < 0).any():
                raise MappingError(f"fabric {fabric.name!r} has switches that cannot reach each other")
            self.swdist = np.ascontiguousarray(d, np.int16)
            self.n_sw = int(d.shape[0])
            self.sw = (fabric.host_switch.astype(np.int64) - fabric.n_hosts).astype(np.int32)

    def args(self) -> list:
        return [self.mode, self.ndim, _ptr(self.coords), _ptr(self.dims), _ptr(self.periodic), _ptr(self.sw),
                _ptr(self.swdist), self.n_sw]


class _Level:
    """One level: its graph (CSR, both-ways bytes), ``q`` movable vertices, a tail vertex or not."""

    def __init__(self, indptr: np.ndarray, nbr: np.ndarray, w: np.ndarray, q: int, tail: bool) -> None:
        self.indptr, self.nbr, self.w, self.q, self.tail = indptr, nbr, w, q, tail
        self.nv = q + int(tail)
        self.child0 = self.child1 = self.odd = None      # filled when the next level is built


def _coarsen(dll, lv: _Level, rng: np.random.Generator, occ: np.ndarray | None = None) -> _Level:
    """The next level: pairs by heavy-edge matching, leftovers paired in visiting order (module
    docstring); or, given ``occ`` (the vertex at each place), the vertices of sibling places paired,
    so that the coarse level holds that placement as the identity."""
    q = lv.q
    if occ is not None:
        c0, c1 = occ[0:q - 1:2], occ[1:q:2]
        odd = int(occ[q - 1]) if q % 2 else -1
    else:
        visit = rng.permutation(q).astype(np.int64)
        mate = np.empty(q, np.int64)
        dll.fm_match(q, _ptr(lv.indptr), _ptr(lv.nbr), _ptr(lv.w), _ptr(visit), _ptr(mate))
        pos = np.empty(q, np.int64)
        pos[visit] = np.arange(q)
        matched = mate >= 0
        lead = visit[matched[visit] & (pos[visit] < pos[np.where(matched[visit], mate[visit], 0)])]
        left = visit[~matched[visit]]
        n_pairs = len(left) // 2
        c0 = np.r_[lead, left[:2 * n_pairs:2]]
        c1 = np.r_[mate[lead], left[1:2 * n_pairs:2]]
        odd = int(left[-1]) if len(left) % 2 else -1
    q2 = len(c0)
    tail2 = odd >= 0 or lv.tail
    cmap = np.empty(lv.nv, np.int64)
    cmap[c0] = np.arange(q2)
    cmap[c1] = np.arange(q2)
    if odd >= 0:
        cmap[odd] = q2
    if lv.tail:
        cmap[q] = q2
    lv.child0, lv.child1, lv.odd = c0, c1, odd
    nv2 = q2 + int(tail2)
    rows = np.repeat(cmap, np.diff(lv.indptr))
    cols = cmap[lv.nbr]
    keep = rows != cols
    key = rows[keep] * nv2 + cols[keep]
    uk, inv = np.unique(key, return_inverse=True)
    w2 = np.bincount(inv, weights=lv.w[keep], minlength=len(uk))
    r2 = uk // nv2
    indptr2 = np.r_[0, np.cumsum(np.bincount(r2, minlength=nv2))].astype(np.int64)
    return _Level(indptr2, (uk % nv2).astype(np.int32), w2, q2, tail2)


def _place_slots(order: np.ndarray, level: int, q: int, tail: bool) -> np.ndarray:
    """The slot standing for each place of a level: the middle slot of its block."""
    size = 1 << level
    s = len(order)
    mids = np.arange(q, dtype=np.int64) * size + size // 2
    if tail:
        start = q * size
        mids = np.r_[mids, start + (s - start) // 2]
    return order[np.minimum(mids, s - 1)]


def node_parts(graph: CommGraph, target: Target, seed: int = 0, order: np.ndarray | None = None) -> Mapping:
    """The ranks cut by METIS (recursive bisection) into one part per node, each the size of the
    node's ranks, the parts laid on the nodes in :func:`slot_order` (the ``parts`` start).

    >>> from fabscope.fabric.generators import torus
    >>> from fabscope.mapping.commgraph import stencil
    >>> m = node_parts(stencil((8, 8), halo=1), Target.whole(torus((4, 4), cores=4), 64, 4))
    >>> sorted(m.slot.tolist()) == list(range(64)), m.algorithm
    (True, 'parts')
    """
    from fabscope.mapping.algorithms.hierarchical import _fill, partition_sizes

    t0 = time.perf_counter()
    order = slot_order(target) if order is None else order
    spn = np.asarray(target.slots_per_node, np.int64)
    node_seq = _nodes_in_order(target, order)
    take = _fill(spn[node_seq], graph.n)
    used = np.flatnonzero(take > 0)
    part = partition_sizes(graph.adjacency.tocsr(), take[used], seed, recursive=True)
    first = np.cumsum(spn) - spn
    o = np.argsort(part, kind="stable")
    within = np.arange(graph.n) - np.searchsorted(part[o], part[o])
    slot = np.empty(graph.n, np.int64)
    slot[o] = first[node_seq[used][part[o]]] + within
    return Mapping(target, slot, "parts", time.perf_counter() - t0)


def _nodes_in_order(target: Target, order: np.ndarray) -> np.ndarray:
    """The job's nodes (indices) in the order their slots first appear in ``order``."""
    nos = target.node_of_slot[order]
    _, first = np.unique(nos, return_index=True)
    return nos[np.sort(first)]


def _auto_start(graph: CommGraph, target: Target, seed: int, order: np.ndarray) -> Mapping | None:
    """What the levels start from: METIS along the fabric's levels on trees (``hier``), METIS' parts
    of one node each where nodes hold several ranks (``parts``), else nothing (matching alone)."""
    if target.fabric.levels:
        from fabscope.mapping.algorithms.hierarchical import hierarchical

        return hierarchical(graph, target, seed)
    if int(np.max(target.slots_per_node)) > 1:
        return node_parts(graph, target, seed, order)
    return None


def multilevel(graph: CommGraph, target: Target, seed: int = 0, steps_per_vertex: int = STEPS_PER_VERTEX,
               start: "Mapping | str | None" = "auto", patience: float = PATIENCE) -> Mapping:
    """Map by multilevel annealing (see the module docstring).

    With ``start`` (a mapping of the same graph and target) the levels are not matched but hold
    that mapping: sibling places pair up, and every level refines it on the way back.  ``"auto"``:
    METIS' partition along the fabric's levels (``hier``) on trees, METIS' parts of one node each
    where nodes hold several ranks (``parts``), heavy-edge matching alone elsewhere (one rank per
    node of a torus: there the matching does better than either start).

    A level stops after ``patience`` times its sweeps without a new best (0: never);
    ``info["steps"]`` lists the steps each level ran, coarsest first.
    """
    t0 = time.perf_counter()
    target.check_fits(graph.n)
    dll, why = _load()
    if dll is None:
        raise MappingError(f"the multilevel mapper needs a C compiler: {why}")
    order = slot_order(target)
    place_of_slot = np.empty(target.n_slots, np.int64)
    place_of_slot[order] = np.arange(target.n_slots)
    if isinstance(start, str):
        start = _auto_start(graph, target, seed, order) if start == "auto" else None
    rng = np.random.default_rng(seed)
    s = target.n_slots
    a = graph.adjacency.tocsr()
    a.sort_indices()
    indptr = np.r_[a.indptr, np.full(s - graph.n, a.indptr[-1])].astype(np.int64)
    levels = [_Level(indptr, a.indices.astype(np.int32), a.data.astype(np.float64), s, False)]
    occ = None
    if start is not None:                      # ranks where start put them, the free places in order
        p0 = place_of_slot[start.slot]
        free = np.setdiff1d(np.arange(s), p0)
        occ = np.empty(s, np.int64)
        occ[p0] = np.arange(graph.n)
        occ[free] = np.arange(graph.n, s)
    while levels[-1].q > 2:
        levels.append(_coarsen(dll, levels[-1], rng, occ))
        if occ is not None:
            occ = np.arange(levels[-1].nv)
    hops = _Hops(target.fabric)
    hop_args = hops.args()
    slot_host = target.slot_host
    near_ptr, near = near_nodes(target)
    spn = np.asarray(target.slots_per_node, np.int64)
    first = np.cumsum(spn) - spn
    n_slots = spn.astype(np.int32)
    if near_ptr is not None:                 # kept in these names: C reads them while annealing
        near_ptr, near = near_ptr.astype(np.int64), near.astype(np.int32)
    near_args = [None, None] if near_ptr is None else [_ptr(near_ptr), _ptr(near)]
    top = levels[-1]
    place = np.arange(top.nv, dtype=np.int64)
    ran = np.zeros(1, np.int64)
    steps_run = []
    for depth in range(len(levels) - 1, -1, -1):
        lv = levels[depth]
        if depth < len(levels) - 1:                      # project the coarser level's placement
            up = place
            place = np.empty(lv.nv, np.int64)
            pc = up[: len(lv.child0)]
            place[lv.child0] = 2 * pc
            place[lv.child1] = 2 * pc + 1
            if lv.odd >= 0:
                place[lv.odd] = lv.q - 1
            if lv.tail:
                place[lv.q] = lv.q
        # the level renumbered in the order of the places: neighbours sit close in memory
        occ = np.empty(lv.nv, np.int64)
        occ[place] = np.arange(lv.nv)
        deg = np.diff(lv.indptr)[occ]
        indptr = np.r_[0, np.cumsum(deg)].astype(np.int64)
        pos = np.repeat(lv.indptr[occ] - indptr[:-1], deg) + np.arange(indptr[-1])
        nbr, w = place[lv.nbr[pos]].astype(np.int32), lv.w[pos]
        renum = place
        place = np.arange(lv.nv, dtype=np.int64)
        occ = place.copy()
        rep = _place_slots(order, depth, lv.q, lv.tail)
        host = slot_host[rep].astype(np.int64)
        node_of_place = target.node_of_slot[rep].astype(np.int32)
        # a temperature in bytes of the mean edge times the hops between sibling places (a block's side)
        pair = np.arange(lv.q & ~1)
        side = float(host_hops(target.fabric, host[pair], host[pair ^ 1]).mean()) if len(pair) else 1.0
        unit = (float(lv.w.mean()) if len(lv.w) else 1.0) * max(side, 1.0)
        coarse = lv.q <= COARSE
        sweeps = STEPS_COARSE if coarse else steps_per_vertex
        steps = sweeps * lv.q
        t_start = (T_COARSE if coarse else T_FINE) * unit
        cost = dll.fm_anneal(lv.q, lv.nv, _ptr(indptr), _ptr(nbr), _ptr(w), _ptr(host), *hop_args,
                             _ptr(node_of_place), *near_args, _ptr(first), _ptr(n_slots), _ptr(place_of_slot),
                             depth, _ptr(place), _ptr(occ), t_start, T_END * unit, steps, REACH,
                             (seed * 1000003 + depth) & _MASK, max(1, int(sweeps * patience)) if patience else 0,
                             _ptr(ran))
        steps_run.append(int(ran[0]))
        if cost == -2.0:
            raise MappingError("the multilevel mapper takes tori of at most 6 dimensions")
        if cost < 0:
            raise MemoryError("multilevel: out of memory")
        place = place[renum]                             # back to the level's own numbering
    slot = order[place[: graph.n]]
    name = "ml" if start is None else f"{start.algorithm}+ml"
    return Mapping(target, slot, name, time.perf_counter() - t0,
                   info={"levels": len(levels), "steps_per_vertex": steps_per_vertex, "steps": steps_run})
