"""The seeds' patterns pair the ranks their definitions say."""

import numpy as np
import pytest

from fabscope.errors import TrafficError
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree, torus
from fabscope.traffic import patterns as pt
from fabscope.traffic.spec import make_traffic


def test_random_pairs_every_rank_once_and_reproducible():
    t = pt.random_pairs(1024, 1e6, seed=7)
    fwd = t.src[: 512]
    assert sorted(np.r_[t.src[:512], t.dst[:512]].tolist()) == list(range(1024))
    assert np.array_equal(t.src[512:], t.dst[:512])      # the reverse direction of each pair
    assert np.array_equal(fwd, pt.random_pairs(1024, 1e6, seed=7).src[:512])
    assert not np.array_equal(fwd, pt.random_pairs(1024, 1e6, seed=8).src[:512])


def test_leaf_offset_pairs_as_seed_000_lists_them(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, f.n_hosts, 1)
    leaf = f.groups["leaf"]
    for off, expect in [(1, [(0, 1), (2, 3), (4, 5)]), (2, [(0, 2), (1, 3), (4, 6), (5, 7)]),
                        (4, [(0, 4), (1, 5), (2, 6), (3, 7), (8, 12)])]:
        t = pt.leaf_offset(f, p, off, 1e6)
        n = t.n_flows // 2
        pairs = sorted({(int(leaf[a]), int(leaf[b])) for a, b in zip(t.src[:n], t.dst[:n])})
        assert all(e in pairs for e in expect)
        # the N-th node of one leaf talks to the N-th node of the other, nodes 0..7 only
        assert np.all(t.src[:n] % 16 == t.dst[:n] % 16) and np.all(t.src[:n] % 16 < 8)


def test_leaf_pairs_cover_every_pair_once(itasca_fabric):
    f = itasca_fabric
    p = Placement.block(f, 16 * 10, 1)
    t = pt.leaf_pairs(f, p, 1e6)
    leaf = f.groups["leaf"]
    n = t.n_flows // 2
    pairs = [(int(leaf[a]), int(leaf[b])) for a, b in zip(t.src[:n:8], t.dst[:n:8])]
    assert sorted(pairs) == [(i, j) for i in range(10) for j in range(i + 1, 10)]
    # within a round no leaf appears twice
    for s in np.unique(t.scenario):
        sel = np.flatnonzero(t.scenario[:n] == s)
        used = np.r_[leaf[t.src[sel]], leaf[t.dst[sel]]]
        assert len(np.unique(used)) * 8 == len(used)


def test_partner_hops_on_a_torus():
    f = torus((8, 8))
    p = Placement.block(f, 64, 1)
    t = pt.partner_hops(f, p, 3, 1e6, seed=1)
    n = t.n_flows // 2
    assert np.all(f.coord_hops(p.host[t.src[:n]], p.host[t.dst[:n]]) == 3)
    assert len(set(t.src[:n].tolist()) | set(t.dst[:n].tolist())) == 2 * n


def test_stencil_and_rings():
    t = pt.stencil((4, 4, 4), 1e3)
    assert t.n_flows == 64 * 6
    assert np.all(np.bincount(t.src, minlength=64) == 6)
    r = pt.ring(10, 1.0, "natural")
    assert sorted(zip(r.src.tolist(), r.dst.tolist()))[:3] == [(0, 1), (0, 9), (1, 0)]
    bb = pt.bucket_brigade(5, 8)
    assert list(zip(bb.src, bb.dst)) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    rm = pt.random_messaging(100, seed=3)
    assert rm.bytes.min() >= 100 and rm.bytes.max() <= 1000 and np.all(rm.src != rm.dst)


def test_pattern_errors():
    f = fat_tree(k=4, levels=2)
    p = Placement.block(f, 16, 1)
    with pytest.raises(TrafficError, match="unknown pattern 'zigzag'"):
        make_traffic("zigzag", f, p, 1e6)
    with pytest.raises(TrafficError, match="has no parameter 'depth'"):
        make_traffic("shift:depth=2", f, p, 1e6)
    with pytest.raises(TrafficError, match="grid 3x3x3 has 27 points; the job has 16"):
        make_traffic("stencil3d:3x3x3", f, p, 1e6)
    with pytest.raises(TrafficError, match="needs a fabric with leaf switches"):
        make_traffic("leaf-offset:2", torus((4, 4)), Placement.block(torus((4, 4)), 16, 1), 1e6)
