"""Lower bounds on hop-bytes and the busiest host link: never above what a mapping reaches, tight where known."""

import numpy as np
import pytest

from fabscope.fabric.generators import fat_tree, torus
from fabscope.mapping.api import Mapping, map_ranks
from fabscope.mapping.bounds import bounds, slot_envelope
from fabscope.mapping.commspec import load_comm
from fabscope.mapping.metrics import evaluate, link_loads
from fabscope.mapping.targets import Target


def _host_link_peak(f, m, g):
    sh = m.target.slot_host
    load = link_loads(f, sh[m.slot[g.src]], sh[m.slot[g.dst]], g.bytes)
    indptr, order = f.host_uplinks
    ups = order[indptr[m.target.nodes]]
    return max(load[ups].max(), load[ups ^ 1].max())


@pytest.mark.parametrize("comm, fabric, ppn", [
    ("stencil2d:4x4", lambda: torus((2, 2, 2)), 2),
    ("pencils:4x4", lambda: fat_tree(k=4, levels=2), 2),
    ("stencil3d:2x2x4", lambda: fat_tree(k=4, levels=2), 4),
    ("random:16,degree=5,seed=3", lambda: torus((4, 4)), 1),
    ("pencils:4x8", lambda: fat_tree(k=4, levels=3), 2),
    ("stencil2d:8x4", lambda: fat_tree(k=4, levels=3), 2),
    ("stencil3d:4x4x8", lambda: fat_tree(k=4, levels=3), 8),     # leaves of 16 ranks, pods of 32
])
def test_no_mapping_goes_below_the_bounds(comm, fabric, ppn):
    f = fabric()
    g = load_comm(comm)
    t = Target.whole(f, g.n, ppn)
    b = bounds(g, t)
    rng = np.random.default_rng(0)
    best_hb, best_link = np.inf, np.inf
    for i in range(400):
        m = Mapping(t, rng.permutation(t.n_slots)[:g.n], "random", 0.0)
        best_hb = min(best_hb, evaluate(m, g, links=False).hop_bytes)
        best_link = min(best_link, _host_link_peak(f, m, g))
    for alg in ("block", "topo"):
        m = map_ranks(g, t, alg)
        best_hb = min(best_hb, evaluate(m, g, links=False).hop_bytes)
        best_link = min(best_link, _host_link_peak(f, m, g))
    assert 0 < b.hop_bytes <= best_hb * (1 + 1e-12)
    assert b.busiest_host_link <= best_link * (1 + 1e-12)


def test_pencils_on_a_tree_reach_the_host_link_bound():
    # 8 ranks of one row per node: each sends to 24 off-node row partners and 31 column partners
    f = fat_tree(k=8, levels=3)
    g = load_comm("pencils:32x32")
    t = Target.whole(f, g.n, 8)
    b = bounds(g, t)
    assert b.busiest_host_link == 8 * 55 * 2**20
    assert _host_link_peak(f, map_ranks(g, t, "block"), g) == pytest.approx(b.busiest_host_link)


def test_envelope_counts_free_slots_by_distance():
    f = torus((4, 4))                  # 16 routers, one host each; hops: router hops
    env = slot_envelope(Target.whole(f, 16, 1))
    assert env.tolist() == [0, 4, 10, 14, 15]


def test_kept_inside_known_blocks():
    from fabscope.mapping.bounds import kept_inside

    # 2-D: 2x2 keeps 4 edges, 2x3 seven, 2x4 or 3x3-less-one ten; 3-D: a 2x2x2 cube keeps 12
    assert kept_inside((16, 16), 8)[[4, 6, 8]].tolist() == [8, 14, 20]
    assert kept_inside((6, 6, 6), 8)[8] == 24


def test_stencil_on_its_own_shape_is_optimal_by_the_bounds():
    # T5 of docs/mapping.md: the fold's 2x4 blocks keep 10 edges per node, every cut edge one hop
    f = torus((4, 4, 8), cores=8)
    g = load_comm("stencil2d:32x32")
    t = Target.whole(f, g.n, 8)
    b = bounds(g, t)
    m = map_ranks(g, t, "fold")
    assert b.hop_bytes == pytest.approx(evaluate(m, g, links=False).hop_bytes)
    assert b.busiest_host_link == pytest.approx(_host_link_peak(f, m, g)) == 12 * 2**20


def test_pencils_on_a_tree_reach_the_level_bound():
    # F2 of docs/mapping.md: rows in rank order fill nodes, leaves (2 rows) and pods (16 rows) as well as any
    f = fat_tree(k=8, levels=3)
    g = load_comm("pencils:32x32")
    t = Target.whole(f, g.n, 8)
    assert bounds(g, t).hop_bytes == pytest.approx(evaluate(map_ranks(g, t, "block"), g, links=False).hop_bytes)


def _most_kept_by_listing(g):
    """The true most edges every q points of a small grid keep: every subset, counted at once."""
    e = {(min(a, b), max(a, b)) for a, b in zip(g.src.tolist(), g.dst.tolist()) if a != b}
    e = np.array(sorted(e))
    masks = np.arange(1 << g.n)
    bits = (masks[:, None] >> np.arange(g.n)) & 1
    kept = (bits[:, e[:, 0]] & bits[:, e[:, 1]]).sum(axis=1)
    best = np.zeros(g.n + 1, np.int64)
    np.maximum.at(best, bits.sum(axis=1), kept)
    return best


@pytest.mark.parametrize("dims, periodic", [
    ((3, 4), (True, True)), ((4, 4), (True, True)), ((2, 2, 4), (True, True, True)),
    ((3, 5), (False, False)), ((3, 3), (True, False)), ((2, 7), (False, True)),
])
def test_layer_bound_equals_the_listed_optimum_on_small_grids(dims, periodic):
    from fabscope.mapping.bounds import grid_kept
    from fabscope.mapping.commgraph import stencil

    g = stencil(dims, halo=1, periodic=periodic)
    assert grid_kept(dims, periodic, g.n).astype(int).tolist() == _most_kept_by_listing(g).tolist()


def test_layer_bound_knows_what_a_leaf_of_a_stencil_keeps(monkeypatch):
    # 128 ranks, 8 per node, leaves of 2 nodes and pods of 4: the tile's nested blocks reach the bound,
    # which the rank-by-rank share above 8 ranks (the bound before the layers) did not see
    import fabscope.mapping.bounds as B

    f = fat_tree(k=4, levels=3)
    g = load_comm("stencil3d:4x4x8")
    t = Target.whole(f, g.n, 8)
    b = bounds(g, t)
    m = map_ranks(g, t, "tile")
    assert b.hop_bytes == pytest.approx(evaluate(m, g, links=False).hop_bytes)
    listed_only = B._stencil_kept
    monkeypatch.setattr(B, "_stencil_kept", lambda graph, q: listed_only(graph, q) if q <= 8 else None)
    assert bounds(g, t).hop_bytes < 0.9 * b.hop_bytes


@pytest.mark.parametrize("seed, both_ways", [(1, False), (2, False), (1, True), (3, True)])
def test_node_send_bound_is_the_least_any_set_sends(seed, both_ways):
    # every set of 4 ranks holding rank 3, listed: the integer programme finds the least they send
    # (the same bytes both ways take the smaller programme, one variable per pair)
    from itertools import combinations

    from fabscope.mapping.bounds import node_send_bound
    from fabscope.mapping.commgraph import CommGraph

    g = load_comm(f"random:12,degree=3,seed={seed}")
    if both_ways:
        w = np.random.default_rng(seed).integers(1, 100, len(g.src)).astype(float)
        g = CommGraph.from_coo("sym", 12, np.r_[g.src, g.dst], np.r_[g.dst, g.src], np.r_[w, w])
    value, members = node_send_bound(g, 4, 3)
    out = {}
    for rest in combinations([r for r in range(12) if r != 3], 3):
        s = np.isin(g.src, (3,) + rest) & ~np.isin(g.dst, (3,) + rest)
        out[(3,) + rest] = float(g.bytes[s].sum())
    assert value == pytest.approx(min(out.values()))
    assert 3 in members and len(members) == 4
    assert out[tuple(sorted(members.tolist(), key=lambda r: (r != 3, r)))] == pytest.approx(value)
