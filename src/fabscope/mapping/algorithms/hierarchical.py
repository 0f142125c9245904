"""Hierarchy-aware mapping by recursive partitioning with METIS (pymetis).

The job's slots form a tree that follows the fabric's levels, coarsest
first: on Itasca the far level splits into near sets, a near set into
leaves, a leaf into nodes, a node into cores.  At every tree node the ranks
assigned to it are split by METIS into as many parts as it has children,
each part exactly the size of its child's slots, so that heavy edges stay
inside the lowest level they can.  On fabrics with coordinates (tori,
meshes) and no levels the tree is a recursive coordinate bisection of the
job's routers: the longer side of the box is cut in two, and so is the graph.

>>> from fabscope.fabric.generators import itasca
>>> from fabscope.mapping.commgraph import stencil
>>> from fabscope.mapping.targets import Target
>>> g = stencil((4, 4, 8), halo=1)
>>> m = hierarchical(g, Target.whole(itasca(), 128, ppn=8))
>>> sorted(m.slot.tolist()) == list(range(128)), m.algorithm
(True, 'hier')
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse import csr_matrix

from fabscope.csr import gather
from fabscope.errors import MappingError
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.targets import Mapping, Target

__all__ = ["hierarchical", "partition_sizes", "slot_keys"]


def _metis():
    try:
        import pymetis
    except ImportError as err:  # pragma: no cover - pymetis is a dependency of the map extra
        raise MappingError("hierarchical mapping needs pymetis: pip install 'fabscope[map]'") from err
    return pymetis


def partition_sizes(A: csr_matrix, sizes: np.ndarray, seed: int = 0, recursive: bool = True) -> np.ndarray:
    """Part of each vertex of ``A`` such that part ``i`` has exactly ``sizes[i]`` vertices.

    METIS cuts the graph with the sizes as target weights; a greedy pass
    then moves the vertices that lose least from over-full to under-full parts.

    >>> from fabscope.mapping.commgraph import ring
    >>> p = partition_sizes(ring(12, size=1).adjacency, np.array([4, 8]))
    >>> np.bincount(p).tolist()
    [4, 8]
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n, k = A.shape[0], len(sizes)
    if sizes.sum() != n:
        raise MappingError(f"parts of {int(sizes.sum())} vertices for a graph of {n}")
    if k == 1:
        return np.zeros(n, np.int64)
    if A.nnz == 0 or n <= k:
        return np.repeat(np.arange(k), sizes)
    pymetis = _metis()
    w = A.data
    scaled = np.maximum(1, np.rint(w / w.max() * 1000)).astype(np.int64)
    opts = pymetis.Options(seed=seed, ufactor=1, contig=0)
    tp = (sizes / n).tolist()
    tp[-1] = max(0.0, 1.0 - sum(tp[:-1]))
    adj = pymetis.CSRAdjacency(A.indptr, A.indices) if hasattr(pymetis, "CSRAdjacency") else None
    graph = {"adjacency": adj} if adj is not None else {"xadj": A.indptr, "adjncy": A.indices}
    _, parts = pymetis.part_graph(k, **graph, eweights=scaled,
                                  tpwgts=tp, options=opts, recursive=recursive)
    part = np.asarray(parts, dtype=np.int64)
    return _rebalance(A, part, sizes)


def _rebalance(A: csr_matrix, part: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Move vertices out of over-full parts into under-full ones, least cut increase first."""
    part = part.copy()
    k = len(sizes)
    for _ in range(4):
        count = np.bincount(part, minlength=k)
        over = count - sizes
        if not np.any(over):
            return part
        cand = np.flatnonzero(over[part] > 0)
        # weight from each candidate to each part, sparse (candidates x parts dense was 0.6 GB
        # at 8,192 parts): the best part with room is the heaviest entry among them, the first on
        # ties, else the first part with room.  Summed by key, not as scipy's product of A's rows
        # with a part-indicator matrix (the same sums; its constructors were most of the time)
        at = gather(A.indptr, cand)
        key = np.repeat(np.arange(len(cand), dtype=np.int64), A.indptr[cand + 1] - A.indptr[cand]) * k \
            + part[A.indices[at]]
        uniq, inv = np.unique(key, return_inverse=True)
        val = np.bincount(inv, weights=A.data[at], minlength=len(uniq))
        keep = val != 0
        row, col, val = uniq[keep] // k, uniq[keep] % k, val[keep]
        own = np.bincount(row, weights=val * (col == part[cand][row]), minlength=len(cand))
        room = np.flatnonzero(over < 0)
        in_room = over[col] < 0
        r, c, v = row[in_room], col[in_room], val[in_room]
        o = np.lexsort((c, -v, r))
        first = o[np.r_[True, r[o][1:] != r[o][:-1]]] if len(o) else o
        best = np.full(len(cand), room[0])
        to_best = np.zeros(len(cand))
        best[r[first]] = c[first]
        to_best[r[first]] = v[first]
        gain = to_best - own
        for i in np.argsort(-gain, kind="stable"):
            v, p = cand[i], part[cand[i]]
            if over[p] <= 0:
                continue
            q = best[i] if over[best[i]] < 0 else room[np.argmax(over[room] < 0)]
            if over[q] >= 0:
                continue
            part[v] = q
            over[p] -= 1
            over[q] += 1
    if np.any(np.bincount(part, minlength=k) != sizes):  # pragma: no cover - cannot happen
        raise MappingError("could not balance a partition to the slot counts")
    return part


def slot_keys(target: Target) -> list[np.ndarray]:
    """Group id of every slot at each level of the tree, coarsest first, ending with the node."""
    f = target.fabric
    host = target.slot_host
    keys = [np.asarray(f.groups[lv.key])[host] for lv in reversed(f.levels)]
    return keys + [host]


def hierarchical(graph: CommGraph, target: Target, seed: int = 0) -> Mapping:
    """Recursive partitioning along the fabric's hierarchy (see the module docstring)."""
    t0 = time.perf_counter()
    n = graph.n
    target.check_fits(n)
    A = graph.adjacency.tocsr()
    out = np.full(n, -1, np.int64)
    slots = np.arange(target.n_slots)
    f = target.fabric
    if f.coords is not None and not f.levels:
        _bisect(A, np.arange(n), slots, target, out, seed)
    else:
        _descend(A, np.arange(n), slots, slot_keys(target), 0, out, seed)
    return Mapping(target, out, "hier", time.perf_counter() - t0)


def _fill(sizes_cap: np.ndarray, n: int) -> np.ndarray:
    """Ranks per child when there are fewer ranks than slots: fill children in order."""
    take = np.minimum(sizes_cap, np.maximum(0, n - (np.cumsum(sizes_cap) - sizes_cap)))
    return take


def _descend(A: csr_matrix, ranks: np.ndarray, slots: np.ndarray, keys: list[np.ndarray], depth: int,
             out: np.ndarray, seed: int) -> None:
    if len(ranks) == 0:
        return
    if depth == len(keys):
        out[ranks] = slots[: len(ranks)]
        return
    key = keys[depth][slots]
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first)                          # children in slot order
    child_of_slot = np.argsort(order)[inv]
    caps = np.bincount(child_of_slot, minlength=len(uniq))
    if len(uniq) == 1:
        _descend(A, ranks, slots, keys, depth + 1, out, seed)
        return
    take = _fill(caps, len(ranks))
    used = np.flatnonzero(take > 0)
    sub = A[ranks][:, ranks]
    part = partition_sizes(sub, take[used], seed)
    for j, c in enumerate(used):
        _descend(A, ranks[part == j], slots[child_of_slot == c], keys, depth + 1, out, seed)


def _bisect(A: csr_matrix, ranks: np.ndarray, slots: np.ndarray, target: Target, out: np.ndarray,
            seed: int) -> None:
    """Recursive coordinate bisection of the slots' hosts, with a METIS bisection of the ranks."""
    if len(ranks) == 0:
        return
    host = target.slot_host[slots]
    hosts = np.unique(host)
    if len(hosts) == 1:
        out[ranks] = slots[: len(ranks)]
        return
    c = target.fabric.coords[hosts]
    ext = c.max(axis=0) - c.min(axis=0)
    ax = int(np.argmax(ext))
    key = c[:, ax] * (len(hosts) + 1) + np.argsort(np.argsort(hosts))   # by coordinate, then host
    order = hosts[np.argsort(key, kind="stable")]
    left_hosts = order[: len(order) // 2]
    in_left = np.isin(host, left_hosts)
    caps = np.array([in_left.sum(), (~in_left).sum()])
    take = _fill(caps, len(ranks))
    sub = A[ranks][:, ranks]
    if take[1] == 0:
        part = np.zeros(len(ranks), np.int64)
    else:
        part = partition_sizes(sub, take, seed)
    _bisect(A, ranks[part == 0], slots[in_left], target, out, seed)
    _bisect(A, ranks[part == 1], slots[~in_left], target, out, seed)
