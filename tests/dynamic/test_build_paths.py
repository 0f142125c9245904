"""build_paths groups route entries by path without sorting where the walk's order allows it;
the result must be the stable sort's, entry for entry, for every routing (split routes included)."""

import numpy as np
import pytest

from fabscope.dynamic.resources import _by_path, build_paths
from fabscope.fabric.generators import dragonfly, fat_tree, itasca, torus
from fabscope.routing import make_routing

CASES = [(fat_tree(k=4, levels=3), "dmodk"), (torus((4, 4, 3)), "dor"), (itasca(leaves=6), "minhop"),
         (dragonfly(a=4, p=2, h=2, g=9), "minimal"), (fat_tree(k=3, levels=3), "ecmp"), (torus((4, 4)), "ecmp-random")]


def sorted_reference(routes, hs, hd, n_links):
    intra = np.flatnonzero(hs == hd)
    flw = np.r_[routes.flow.astype(np.int64), intra]
    res = np.r_[routes.link.astype(np.int64), n_links + hs[intra]]
    wts = np.r_[routes.weight.astype(float), np.ones(len(intra))]
    order = np.argsort(flw, kind="stable")
    return flw[order], res[order], wts[order]


@pytest.mark.parametrize("fabric,engine", CASES, ids=[f"{f.name}-{e}" for f, e in CASES])
def test_paths_equal_the_stable_sort(fabric, engine):
    rng = np.random.default_rng(11)
    hs, hd = rng.integers(0, fabric.n_hosts, 500), rng.integers(0, fabric.n_hosts, 500)
    hd[:40] = hs[:40]                                 # on-node copies among them
    router = make_routing(fabric, engine)
    p = build_paths(fabric, router, hs, hd)
    flw, res, wts = sorted_reference(router.routes(hs, hd), hs, hd, fabric.n_links)
    assert np.array_equal(p.res, res) and np.array_equal(p.weight, wts)
    assert np.array_equal(p.indptr, np.r_[0, np.cumsum(np.bincount(flw, minlength=len(hs)))])


def test_entries_in_any_order_come_out_as_the_stable_sort():
    # in order, then path 1's entries around path 0's: run numbers place the first, the sort the second
    f, r, w = _by_path(np.array([0, 1, 1]), np.array([5, 6, 7]), np.ones(3), np.zeros(0, np.int64),
                       np.zeros(0, np.int64), 2)
    assert f.tolist() == [0, 1, 1] and r.tolist() == [5, 6, 7]
    f, r, _w = _by_path(np.array([1, 0, 1]), np.array([5, 6, 7]), np.ones(3), np.zeros(0, np.int64),
                       np.zeros(0, np.int64), 2)
    assert f.tolist() == [0, 1, 1] and r.tolist() == [6, 5, 7]
