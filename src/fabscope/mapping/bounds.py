"""Lower bounds that every mapping of a graph onto a job must reach.

They say how far any mapper could still improve on a result: a mapping at
the bound is optimal for that metric, and a goal below the bound is out of
reach.  Both bounds look at one rank at a time, so they are exact for
symmetric graphs on symmetric jobs and loose where the best mapping has to
compromise between ranks.

* **Hop-bytes.**  The partners of a rank sit on distinct slots.  Around any
  node of the job, ``E(d)`` slots other than the rank's own lie within ``d``
  hops (the largest such count over the job's nodes, so the bound holds
  wherever the rank lands).  Giving the heaviest partner the nearest free
  slot, the next the next, and so on, costs the least a rank's outgoing edges
  can cost; hop-bytes are at least the sum of that over ranks.
* **Busiest host link.**  All a node sends to other nodes leaves by its
  host link.  A rank keeps at most its ``p - 1`` heaviest partners on its
  node (``p`` the most slots a node has), so it sends at least the rest
  off-node; the busiest host link carries at least the mean of that over the
  job's nodes, and at least one rank's share.  Same for what nodes receive.
  Only counted where every host has one link (the bound is 0 otherwise).
* **Stencils, a node at a time.**  For a stencil (every rank alike), the
  most halo bytes ``W(q)`` any ``q`` ranks can keep among themselves comes
  from the layer bound below (on grids above 16,384 points, by listing every
  connected set of up to 8 grid points around one point of the periodic
  grid, sets in pieces being the best sum of pieces).  Then the bytes
  between nodes are at least the total less ``W(p)`` per node, each crossing
  at least the shortest hop between two nodes of the job; and a node of
  ``p`` ranks sends at least ``p`` halos less ``W(p)``.  Exact for the
  grid-shaped blocks a fold or tile gives.
* **Trees, level by level.**  On a tree a pair's hops depend only on the
  lowest group (node, leaf, pod or near set) holding both; hop-bytes are then
  the sum over levels of the bytes leaving that level's groups times what
  leaving adds.  The bytes leaving are at least the total less the most any
  group of that size keeps: for FFT pencils (every rank with its row and its
  column: the rook's graph) that most is known exactly (Lindsey, 1964: the
  first ``L`` points in lexicographic order, whole rows first); for stencils
  it is bounded layer by layer (:func:`grid_kept`), for other graphs the
  rank-by-rank share is used.
* **Stencils, layer by layer** (:func:`grid_kept`).  Cut a set of grid points
  into its layers along one axis: it keeps at most what each layer keeps in
  the grid of one dimension less, plus ``min(a, a')`` edges between
  consecutive layers of ``a`` and ``a'`` points (the edges between layers join
  the same position).  A dynamic programme over the layer sizes gives the
  most that bound allows for every set size, one dimension at a time (a
  cycle, with the largest layer first, on a periodic axis); the smallest over
  the axis orders is kept.  It equals the listed optimum up to 8 points on
  every grid the tests try and the slab on 8x8x16 (128 points keep 320
  edges), and it is what lets the level bound see what a leaf or a pod of a
  stencil keeps.

* **The node around one rank** (:func:`node_send_bound`, not part of
  :func:`bounds`: an integer programme, seconds to minutes): the least bytes
  any full node holding a given rank sends, found exactly.

Hops are counted as the metrics count them (:func:`fabscope.mapping.metrics.host_hops`).

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.mapping.commspec import load_comm
>>> from fabscope.mapping.targets import Target
>>> f = fat_tree(k=4, levels=2)
>>> g = load_comm("pencils:4x4")                  # 16 ranks, 3 row and 3 column partners each
>>> b = bounds(g, Target.whole(f, 16, 2))         # 8 nodes of 2 slots
>>> b.busiest_host_link / 2**20                   # 2 ranks x (6 partners - 1 on the node) x 1 MiB
10.0
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import host_hops, weighted_sum
from fabscope.mapping.targets import Target


@dataclass(frozen=True)
class Bounds:
    hop_bytes: float
    busiest_host_link: float


def slot_envelope(target: Target, chunk: int = 512) -> np.ndarray:
    """``E[d]``: the most slots (other than one's own) within ``d`` hops of any node of the job."""
    f, nodes, spn = target.fabric, np.asarray(target.nodes), np.asarray(target.slots_per_node, np.int64)
    n = len(nodes)
    parts = []
    for lo in range(0, n, chunk):
        rows = np.arange(lo, min(lo + chunk, n))
        hops = host_hops(f, np.repeat(nodes[rows], n), np.tile(nodes, len(rows))).astype(np.int64)
        counts = np.zeros((len(rows), int(hops.max()) + 1), np.int64)
        np.add.at(counts, (np.repeat(np.arange(len(rows)), n), hops), np.tile(spn, len(rows)))
        parts.append((np.cumsum(counts, axis=1) - 1).max(axis=0))      # one's own slot is not free
    width = max(len(p) for p in parts)
    return np.max([np.pad(p, (0, width - len(p)), mode="edge") for p in parts], axis=0)


def _edges(graph: CommGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct directed edges between distinct ranks, their bytes summed."""
    s, d = np.asarray(graph.src, np.int64), np.asarray(graph.dst, np.int64)
    keep = s != d
    key, inv = np.unique(s[keep] * graph.n + d[keep], return_inverse=True)
    return key // graph.n, key % graph.n, np.bincount(inv, weights=np.asarray(graph.bytes, float)[keep])


def hop_bytes_bound(graph: CommGraph, target: Target) -> float:
    """Hop-bytes no mapping of ``graph`` onto ``target`` goes below (see the module docstring)."""
    env = slot_envelope(target)
    s, _, b = _edges(graph)
    order = np.lexsort((-b, s))                              # each rank's edges, heaviest first
    src, w = s[order], b[order]
    first = np.searchsorted(src, src)                      # index of the rank's first edge
    k = np.arange(len(src)) - first + 1                     # the partner's rank among the rank's edges
    dist = np.searchsorted(env, k)                          # the nearest distance with k free slots
    return weighted_sum(dist, w)


def host_link_bound(graph: CommGraph, target: Target) -> float:
    """Bytes the busiest host link carries at least (0 where hosts have several links)."""
    f = target.fabric
    indptr, _ = f.host_uplinks
    if np.any(np.diff(indptr)[np.asarray(target.nodes)] != 1):
        return 0.0
    keep = int(np.max(target.slots_per_node)) - 1
    s, d, b = _edges(graph)
    out = 0.0
    for a in (s, d):                                        # sent, then received
        order = np.lexsort((-b, a))
        r, w = a[order], b[order]
        first = np.searchsorted(r, r)
        off = np.where(np.arange(len(r)) - first >= keep, w, 0.0)    # beyond the heaviest p-1 partners
        per_rank = np.bincount(r, weights=off, minlength=graph.n)
        out = max(out, per_rank.sum() / target.n_nodes, per_rank.max(initial=0.0))
    return float(out)


@lru_cache(maxsize=16)
def kept_inside(dims: tuple[int, ...], p: int) -> np.ndarray:
    """``W[q]``, q = 0..p: the most edges (each counted both ways) any q points of the periodic grid
    ``dims`` keep among themselves.

    Every connected set holding point 0 is listed once (extension in label
    order, as ESU does; on a periodic grid every point is alike); a set in
    pieces keeps the sum of its pieces, so ``W`` is the best split.

    >>> kept_inside((8, 8), 4).tolist()             # 2x2 block: 4 edges
    [0, 0, 2, 4, 8]
    """
    dims = tuple(int(k) for k in dims)
    n = int(np.prod(dims))
    coords = np.array(np.unravel_index(np.arange(n), dims)).T
    nbrs = []
    for d, k in enumerate(dims):
        for step in (1, -1):
            c = coords.copy()
            c[:, d] = (c[:, d] + step) % k
            nbrs.append(np.ravel_multi_index(c.T, dims))
    adj = [sorted(set(int(x) for x in col)) for col in np.array(nbrs).T]
    best = [0] * (p + 1)

    def extend(sub: set, order: list, ext: list, inside: int) -> None:
        q = len(order)
        best[q] = max(best[q], inside)
        if q == p:
            return
        ext = list(ext)
        while ext:
            w = ext.pop()
            near = set()
            for v in order:
                near.update(adj[v])
            new = [u for u in adj[w] if u > 0 and u not in sub and u not in near and u not in ext]
            links = sum(1 for u in adj[w] if u in sub)
            sub.add(w)
            order.append(w)
            extend(sub, order, ext + new, inside + 2 * links)
            order.pop()
            sub.discard(w)

    extend({0}, [0], [u for u in adj[0] if u > 0], 0)
    whole = list(best)
    for q in range(2, p + 1):                      # pieces
        for a in range(1, q):
            whole[q] = max(whole[q], whole[a] + whole[q - a])
    return np.array(whole)


_NEG = -1e18


def _chain(kept: np.ndarray, length: int, cyclic: bool, q_max: int) -> np.ndarray:
    """Most edges sets of 0..``q_max`` points keep in ``length`` layers, where a layer of ``a`` points keeps
    at most ``kept[a]`` and consecutive layers share at most ``min(a, a')`` (a cycle of layers if ``cyclic``)."""
    n_layer = len(kept) - 1
    a = np.arange(n_layer + 1)

    def step(v: np.ndarray, cap: int) -> np.ndarray:
        # t[s, a'] = max over the last layer's size l of v[s, l] + min(l, a')
        pre = np.maximum.accumulate(v + a[None, :], axis=1)                # l <= a': v + l
        suf = np.maximum.accumulate(v[:, ::-1], axis=1)[:, ::-1]           # l >= a': v (+ a')
        t = np.maximum(pre, suf + a[None, :])
        w = np.full_like(v, _NEG)
        for x in range(min(cap, n_layer, q_max) + 1):
            w[x:, x] = t[:q_max + 1 - x, x] + kept[x]
        return w

    if not cyclic:
        v = np.full((q_max + 1, n_layer + 1), _NEG)
        for x in range(min(n_layer, q_max) + 1):
            v[x, x] = kept[x]
        for _ in range(length - 1):
            v = step(v, n_layer)
        return v.max(axis=1)
    best = np.full(q_max + 1, _NEG)
    for first in range(min(n_layer, q_max) + 1):          # rotate the cycle: the largest layer first
        v = np.full((q_max + 1, n_layer + 1), _NEG)
        v[first, first] = kept[first]
        for _ in range(length - 1):
            v = step(v, first)
        best = np.maximum(best, (v + a[None, :]).max(axis=1))     # the last layer meets the first: + its size
    return best


@lru_cache(maxsize=32)
def grid_kept(dims: tuple[int, ...], periodic: tuple[bool, ...], q_max: int) -> np.ndarray:
    """An upper bound on the edges (each counted once) any q points of the grid keep among themselves,
    q = 0..``q_max``, layer by layer (see the module docstring).

    >>> grid_kept((8, 8, 16), (True, True, True), 128)[[8, 32, 128]].tolist()   # 2x2x2, 2x4x4, a slab 8x8x2
    [12.0, 64.0, 320.0]
    """
    from itertools import permutations

    q_max = min(int(q_max), int(np.prod(dims)))
    out = None
    for order in sorted(set(permutations(range(len(dims))))):
        kept, size = np.zeros(2), 1               # a point keeps no edge
        for k, ax in enumerate(order):
            size *= dims[ax]
            top = k == len(order) - 1
            # an axis of 2 has one edge per pair of points, periodic or not
            kept = _chain(kept, dims[ax], bool(periodic[ax]) and dims[ax] >= 3, q_max if top else size)
        out = kept if out is None else np.minimum(out, kept)
    return np.floor(out + 1e-9)


def _stencil_kept(graph: CommGraph, q: int, limit: int = 1 << 14) -> float | None:
    """Most edges (each counted both ways) ``q`` ranks of a stencil keep: layer by layer on grids up to
    ``limit`` points, else listed up to 8 points (listing is slow on small periodic grids, where every
    set wraps around)."""
    prm = graph.params or {}
    if prm.get("pattern") != "stencil" or graph.grid is None:
        return None
    dims = tuple(int(k) for k in graph.grid)
    q = min(q, graph.n)
    if graph.n <= limit:
        per = tuple(bool(x) for x in prm.get("periodic", [True] * len(dims)))
        return 2.0 * float(grid_kept(dims, per, q)[q])
    if q <= 8:
        return float(kept_inside(dims, q)[q])                 # the periodic grid keeps at least as much
    return None


def stencil_bounds(graph: CommGraph, target: Target, max_p: int = 64) -> Bounds | None:
    """The node-at-a-time bounds for a uniform stencil (None for other graphs or nodes above ``max_p`` slots)."""
    prm = graph.params or {}
    p = int(np.max(target.slots_per_node))
    if prm.get("pattern") != "stencil" or graph.grid is None or p > max_p:
        return None
    s, d, b = _edges(graph)
    if not np.all(b == b[0]):
        return None
    halo = float(b[0])
    deg = np.bincount(s, minlength=graph.n)
    kept = _stencil_kept(graph, p)
    if kept is None:
        return None
    w = np.zeros(p + 1)
    w[p] = kept * halo
    env = slot_envelope(target)
    hop = int(np.searchsorted(env, env[0] + 1))            # nearest other node
    crossing = max(0.0, b.sum() - target.n_nodes * w[p])
    one_link = np.diff(target.fabric.host_uplinks[0])[np.asarray(target.nodes)].max() == 1
    link = float(np.sort(deg)[:p].sum() * halo - w[p]) if one_link else 0.0
    return Bounds(crossing * hop, max(0.0, link))


def rook_kept(rows: int, cols: int, n: int) -> int:
    """The most edges ``n`` points of the rook's graph (rows x cols, cliques along both) keep among themselves.

    Lindsey's theorem: an initial segment of lexicographic order, whole lines of
    one side first; the better of the two sides.

    >>> rook_kept(32, 32, 128)          # 4 whole rows: 4 x C(32,2) in rows, 32 x C(4,2) in columns
    2176
    """
    best = 0
    for line, lines in ((cols, rows), (rows, cols)):
        a, b = divmod(n, line)
        if a > lines or (a == lines and b):
            continue
        best = max(best, a * line * (line - 1) // 2 + b * (b - 1) // 2 + b * (a + 1) * a // 2
                   + (line - b) * a * (a - 1) // 2)
    return best


def _kept_bytes(graph: CommGraph, n: int, b: np.ndarray) -> float | None:
    """Most bytes ``n`` ranks can keep among themselves, where known (uniform pencils and small stencils)."""
    prm = graph.params or {}
    if not len(b) or not np.all(b == b[0]):
        return None
    if prm.get("pattern") == "pencils":
        return 2.0 * float(b[0]) * rook_kept(int(prm["rows"]), int(prm["cols"]), min(n, graph.n))
    kept = _stencil_kept(graph, n)
    return None if kept is None else float(b[0]) * kept


def tree_levels_bound(graph: CommGraph, target: Target, max_nodes: int = 2048) -> float:
    """Hop-bytes bound level by level on a tree (0 where hops do not follow the levels)."""
    f = target.fabric
    nodes = np.asarray(target.nodes)
    if not f.levels or len(nodes) > max_nodes:
        return 0.0
    spn = np.asarray(target.slots_per_node, np.int64)
    n = len(nodes)
    hops = host_hops(f, np.repeat(nodes, n), np.tile(nodes, n)).reshape(n, n)
    keys = [lv.key for lv in f.levels]
    common = np.full((n, n), len(keys) + 1)                # lowest level holding both: 0 the node itself
    for lvl in range(len(keys), 0, -1):
        g = np.asarray(f.groups[keys[lvl - 1]])[nodes]
        common[g[:, None] == g[None, :]] = lvl
    np.fill_diagonal(common, 0)
    cost = {}
    for lvl in range(1, len(keys) + 2):
        h = np.unique(hops[common == lvl])
        if len(h) > 1:
            return 0.0                                     # hops not set by the levels alone
        if len(h):
            cost[lvl] = float(h[0])
    s, _, b = _edges(graph)
    total = float(b.sum())
    order = np.lexsort((-b, s))
    first = np.searchsorted(s[order], s[order])
    pos = np.arange(len(s)) - first
    out = 0.0
    prev = 0.0
    for lvl in range(0, len(keys) + 1):                    # leaving level lvl's groups (0: nodes)
        above = [c for k, c in cost.items() if k > lvl]
        if not above:
            break
        step = min(above) - prev
        if step < 0:
            return 0.0
        if lvl == 0:
            caps = spn
        else:
            g = np.asarray(f.groups[keys[lvl - 1]])[nodes]
            caps = np.bincount(np.unique(g, return_inverse=True)[1], weights=spn).astype(np.int64)
        per_rank = float(b[order][pos >= int(caps.max()) - 1].sum())       # beyond each rank's heaviest
        sizes, count = np.unique(caps, return_counts=True)
        kept = [_kept_bytes(graph, int(c), b) for c in sizes]
        leaving = per_rank if any(k is None for k in kept) else max(per_rank, total - float(np.dot(kept, count)))
        out += step * max(0.0, leaving)
        prev = min(above)
    return out


def node_send_bound(graph: CommGraph, p: int, rank: int) -> tuple[float, np.ndarray]:
    """The least bytes any ``p`` ranks holding ``rank`` send to ranks outside them, and such a set.

    Whatever the mapping, the node holding ``rank`` holds ``p`` ranks when
    every node is full, so its host link carries at least this much: a lower
    bound on the busiest host link where no rank-by-rank share sees it (a
    cell of a mesh whose heavy neighbours have heavy neighbours).  Exact, by
    an integer programme (SciPy's HiGHS): ``x_v`` says who is in the set,
    ``z_uv >= x_u - x_v`` is a message leaving it; slow (seconds to minutes
    on a 1,024-rank mesh), so it is not part of :func:`bounds`.

    >>> from fabscope.mapping.commgraph import stencil
    >>> value, members = node_send_bound(stencil((8, 8), halo=1), 4, 0)
    >>> value, len(members), 0 in members               # a 2x2 block around rank 0: 8 halos leave it
    (8.0, 4, True)
    """
    from scipy.optimize import Bounds as Box, LinearConstraint, milp
    from scipy.sparse import coo_matrix, vstack

    s, d, b = _edges(graph)
    n = graph.n
    back = {(int(x), int(y)): float(c) for x, y, c in zip(s, d, b)}
    if all(back.get((int(y), int(x))) == float(c) for x, y, c in zip(s, d, b)):
        # the same bytes both ways: one z per pair, z >= |x_u - x_v| (the smaller programme)
        keep = s < d
        s, d, b = s[keep], d[keep], b[keep]
        s, d = np.r_[s, d], np.r_[d, s]
        z = np.r_[np.arange(len(b)), np.arange(len(b))]
    else:
        z = np.arange(len(b))
    m, rows = len(b), np.arange(len(s))
    # z - x_s + x_d >= 0 for every message s -> d; sum x = p; x_rank = 1
    leave = coo_matrix((np.r_[np.ones(len(s)), -np.ones(len(s)), np.ones(len(s))],
                        (np.r_[rows, rows, rows], np.r_[n + z, s, d])), shape=(len(s), n + m))
    size = coo_matrix((np.ones(n), (np.zeros(n, np.int64), np.arange(n))), shape=(1, n + m))
    lo, hi = np.zeros(n + m), np.ones(n + m)
    lo[rank] = 1
    res = milp(np.r_[np.zeros(n), b], integrality=np.r_[np.ones(n), np.zeros(m)], bounds=Box(lo, hi),
               constraints=LinearConstraint(vstack([leave, size]).tocsr(), np.r_[np.zeros(len(s)), p],
                                            np.r_[np.full(len(s), np.inf), p]))
    if res.status != 0:
        raise ValueError(f"the integer programme for rank {rank} did not finish: {res.message}")
    return float(np.rint(res.fun)), np.flatnonzero(res.x[:n] > 0.5)


def bounds(graph: CommGraph, target: Target) -> Bounds:
    """The strongest of the bounds above that apply."""
    hb, link = hop_bytes_bound(graph, target), host_link_bound(graph, target)
    hb = max(hb, tree_levels_bound(graph, target))
    st = stencil_bounds(graph, target)
    if st is not None:
        hb, link = max(hb, st.hop_bytes), max(link, st.busiest_host_link)
    return Bounds(hb, link)
