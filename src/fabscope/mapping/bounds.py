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

import numpy as np

from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import host_hops
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
    return float(np.dot(w, dist))


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


def bounds(graph: CommGraph, target: Target) -> Bounds:
    return Bounds(hop_bytes_bound(graph, target), host_link_bound(graph, target))
