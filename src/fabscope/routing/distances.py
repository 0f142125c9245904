"""Hop distances between switches, the basis of min-hop and multipath engines."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fabscope.fabric.model import Fabric


def switch_links(fabric: Fabric) -> np.ndarray:
    """Ids of links that join two switches."""
    h = fabric.n_hosts
    return np.flatnonzero((fabric.link_src >= h) & (fabric.link_dst >= h))


def switch_distances(fabric: Fabric) -> np.ndarray:
    """Hops between every two switches, shape (S, S), int16 (-1 unreachable).

    Cached per fabric object (fabrics are immutable).
    """
    return _cached(fabric)


@lru_cache(maxsize=8)
def _cached(fabric: Fabric) -> np.ndarray:
    h, s = fabric.n_hosts, fabric.n_switches
    sl = switch_links(fabric)
    out = hop_distances(s, fabric.link_src[sl] - h, fabric.link_dst[sl] - h)
    out.setflags(write=False)
    return out


#: bytes of the packed frontier rows one step gathers at a time (bounds a step's memory)
_CHUNK_BYTES = 1 << 25


def hop_distances(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Hops from every node to every other along directed edges ``src[i] -> dst[i]``, shape (n, n),
    int16 (-1 unreachable): a breadth-first search from all nodes at once.

    What ``scipy.sparse.csgraph.shortest_path(g, unweighted=True, directed=True)`` gives (the
    tests compare the two), without SciPy, whose import is 0.2-0.3 CPU s of a process that uses
    nothing else of it.  Node ``v`` keeps the set of sources that have reached it as bits; each
    step ORs into it its in-neighbours' sets, and a source's bit that is new at step ``k`` means
    distance ``k``.

    >>> hop_distances(4, np.array([0, 1, 2, 1]), np.array([1, 2, 0, 0])).tolist()
    [[0, 1, 2, -1], [1, 0, 1, -1], [1, 2, 0, -1], [-1, -1, -1, 0]]
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    dist = np.full((n, n), -1, dtype=np.int16)            # dist[source, node]
    if n == 0:
        return dist
    np.fill_diagonal(dist, 0)
    order = np.argsort(dst, kind="stable")                # in-edges grouped by their node
    src, dst = src[order], dst[order]
    words = (n + 63) // 64
    seen = np.zeros((n, words), dtype=np.uint64)          # seen[v]: bits of the sources that reached v
    ids = np.arange(n)
    seen[ids, ids // 64] = np.left_shift(np.uint64(1), (ids % 64).astype(np.uint64))
    rows = max(1, _CHUNK_BYTES // (8 * words))             # in-edges gathered at a time, about
    for step in range(1, n):
        reach = np.zeros_like(seen)
        a = 0
        while a < len(src):
            b = min(len(src), a + rows)
            while b < len(src) and dst[b] == dst[b - 1]:  # a node's in-edges all in one chunk
                b += 1
            d = dst[a:b]
            starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
            reach[d[starts]] |= np.bitwise_or.reduceat(seen[src[a:b]], starts, axis=0)
            a = b
        new = reach & ~seen
        if not new.any():
            break
        seen |= new
        v, w = np.nonzero(new)
        bits = np.unpackbits(new[v, w].astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        k, bit = np.nonzero(bits)
        dist[w[k] * 64 + bit, v[k]] = step
    return dist

