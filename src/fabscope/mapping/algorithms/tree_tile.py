"""Tiling a process grid onto a tree's nodes and leaves, then partitioning the leaves.

On a fat tree a stencil's best shape is nested blocks: a block of the grid
per node (``prod(b1)`` = ranks per node), a larger block per leaf switch
(``prod(b2)`` = ranks per leaf), chosen among all such tilings for the
fewest hop-bytes (periodic axes a leaf block spans whole cost nothing).  The
leaf blocks then go to leaves by METIS on the graph of blocks, level by level
above the leaf (near sets on Itasca), as :mod:`.hierarchical` does for ranks.

>>> from fabscope.fabric.generators import itasca
>>> from fabscope.mapping.commgraph import stencil
>>> from fabscope.mapping.targets import Target
>>> from fabscope.mapping.metrics import evaluate
>>> g = stencil((8, 8, 16), halo=1)
>>> m = tree_tile(g, Target.whole(itasca(), 1024, ppn=8))
>>> m.info["node_block"], m.info["leaf_block"], round(evaluate(m, g, links=False).hops_per_byte, 3)
([2, 2, 2], [4, 8, 4], 1.333)
"""

from __future__ import annotations

import time
from itertools import product
from math import prod

import numpy as np
from scipy.sparse import csr_matrix

from fabscope.errors import MappingError
from fabscope.mapping.algorithms.hierarchical import _descend
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import host_hops
from fabscope.mapping.targets import Mapping, Target

__all__ = ["tree_tile"]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def tree_tile(graph: CommGraph, target: Target, seed: int = 0, sample: int = 50_000) -> Mapping:
    """Nested grid blocks per node and per leaf, leaves placed by METIS (see the module docstring)."""
    t0 = time.perf_counter()
    f = target.fabric
    if graph.grid is None or not f.levels:
        raise MappingError("tree tiling needs a process grid and a fabric with levels")
    A = tuple(graph.grid)
    p = int(target.slots_per_node[0])
    if np.any(target.slots_per_node != p) or graph.n != target.n_slots:
        raise MappingError("tree tiling needs the same ranks on every node and as many ranks as slots")
    leaf_key = np.asarray(f.groups[f.levels[0].key])[target.nodes]
    leaves, leaf_of_node = np.unique(leaf_key, return_inverse=True)
    per_leaf = np.bincount(leaf_of_node)
    L = int(per_leaf[0])
    if np.any(per_leaf != L):
        raise MappingError("tree tiling needs the same number of the job's nodes on every leaf")
    # hop costs: two nodes of one leaf, two nodes of different leaves (the nearest such)
    n0 = target.nodes[leaf_of_node == 0]
    h_leaf = float(host_hops(f, n0[:1], n0[-1:])[0]) if len(n0) > 1 else 0.0
    others = target.nodes[leaf_of_node != 0]
    h_far = float(host_hops(f, np.full(len(others), n0[0]), others).min()) if len(others) else 0.0
    rng = np.random.default_rng(seed)
    e = np.arange(graph.n_edges) if graph.n_edges <= sample else rng.choice(graph.n_edges, sample, replace=False)
    cs = np.array(np.unravel_index(graph.src[e], A))
    cd = np.array(np.unravel_index(graph.dst[e], A))
    eb = graph.bytes[e]
    best = None
    split: dict[tuple[int, int], np.ndarray] = {}

    def crosses(block: tuple[int, ...]) -> np.ndarray:
        """Edges whose ends fall in different blocks (per-axis answers kept: tilings share them)."""
        out = np.zeros(len(eb), bool)
        for ax, b in enumerate(block):
            if (ax, b) not in split:
                split[ax, b] = cs[ax] // b != cd[ax] // b
            out |= split[ax, b]
        return out

    for b1 in (b for b in product(*[_divisors(a) for a in A]) if prod(b) == p):
        cross_node = crosses(b1)
        for m in (m for m in product(*[_divisors(a // x) for a, x in zip(A, b1)]) if prod(m) == L):
            b2 = tuple(x * y for x, y in zip(b1, m))
            cross_leaf = crosses(b2)
            # not np.dot: OpenBLAS's threads, woken for a dot this long, spin on after it (most of the CPU)
            cost = float(np.sum(eb * np.where(cross_leaf, h_far, np.where(cross_node, h_leaf, 0.0))))
            if best is None or cost < best[0]:
                best = (cost, b1, b2)
    if best is None:
        raise MappingError(f"grid {'x'.join(map(str, A))} does not tile into blocks of {p} ranks per node "
                           f"and {p * L} per leaf")
    _, b1, b2 = best
    c = np.array(np.unravel_index(np.arange(graph.n), A))
    lb_grid = tuple(a // x for a, x in zip(A, b2))
    leaf_block = np.ravel_multi_index(tuple(c // np.array(b2)[:, None]), lb_grid)
    inner = c % np.array(b2)[:, None]
    node_in_leaf = np.ravel_multi_index(tuple(inner // np.array(b1)[:, None]), tuple(x // y for x, y in zip(b2, b1)))
    core = np.ravel_multi_index(tuple(inner % np.array(b1)[:, None]), b1)
    # graph of leaf blocks, placed on the job's leaves level by level above the leaf
    nb = len(leaves)
    W = csr_matrix((graph.bytes, (leaf_block[graph.src], leaf_block[graph.dst])), shape=(nb, nb))
    W = (W + W.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    first_node = np.array([np.flatnonzero(leaf_of_node == i)[0] for i in range(nb)])
    keys = [np.asarray(f.groups[lv.key])[target.nodes[first_node]] for lv in reversed(f.levels[1:])]
    block_leaf = np.full(nb, -1, np.int64)
    _descend(W, np.arange(nb), np.arange(nb), keys, 0, block_leaf, seed)
    # node position within the job: the leaf's nodes in node-list order
    nodes_of_leaf = np.argsort(leaf_of_node, kind="stable").reshape(nb, L)
    node_pos = nodes_of_leaf[block_leaf[leaf_block], node_in_leaf]
    first_slot = np.cumsum(target.slots_per_node) - target.slots_per_node
    slot = first_slot[node_pos] + core
    return Mapping(target, slot, "tile", time.perf_counter() - t0,
                   info={"node_block": list(b1), "leaf_block": list(b2)})
