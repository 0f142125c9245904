"""The vectorised generators build exactly what the cable-by-cable reference built.

``reference_generators.py`` holds generators that build cable by cable;
every array of the fabric (links, ports, capacities, coordinates, groups) and
every name must be the same, so that routes and OpenSM comparisons are unchanged.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_generators import dragonfly_reference, torus_reference, xgft_reference

from fabscope.fabric.generators import dragonfly, fat_tree, torus, xgft
from fabscope.fabric.model import Fabric

ARRAYS = ("link_src", "link_dst", "link_capacity", "link_latency", "link_src_port", "link_dst_port",
          "switch_level", "host_cores", "host_sockets", "host_memory_bw", "host_copy_rate", "coords")


def assert_same(a: Fabric, b: Fabric) -> None:
    assert a.name == b.name
    assert a.n_hosts == b.n_hosts
    assert tuple(a.node_names) == tuple(b.node_names)
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.groups.keys() == b.groups.keys()
    for key in a.groups:
        assert np.array_equal(a.groups[key], b.groups[key]), key
    assert [(lv.key, lv.label) for lv in a.levels] == [(lv.key, lv.label) for lv in b.levels]
    assert (a.far_label, a.dims, a.periodic) == (b.far_label, b.dims, b.periodic)
    assert dict(a.params) == dict(b.params)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.data(), st.integers(1, 3))
def test_torus_equals_reference(dims, data, hpr):
    periodic = data.draw(st.one_of(st.booleans(), st.lists(st.booleans(), min_size=len(dims),
                                                           max_size=len(dims))))
    assert_same(torus(dims, periodic=periodic, hosts_per_router=hpr),
                torus_reference(dims, periodic=periodic, hosts_per_router=hpr))


@pytest.mark.parametrize("dims", [(16, 16, 16), (8, 8, 8, 2), (11, 12, 16)])
def test_torus_equals_reference_at_size(dims):
    assert_same(torus(dims), torus_reference(dims))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data(), st.integers(1, 3))
def test_xgft_equals_reference(m, data, links_per_pair):
    w = [data.draw(st.integers(1, 3)) for _ in m]
    assert_same(xgft(m, w, links_per_pair=links_per_pair), xgft_reference(m, w, links_per_pair=links_per_pair))


@pytest.mark.parametrize("k,levels,up,lpp", [(4, 3, None, 1), (8, 3, 4, 2), (16, 3, None, 1), (3, 4, 2, 3)])
def test_fat_tree_equals_reference(k, levels, up, lpp):
    up_ = k if up is None else up
    ref = xgft_reference((k,) * levels, (1,) + (up_,) * (levels - 1), links_per_pair=lpp,
                         name=f"fat-tree(k={k},levels={levels}" + (f",up={up_}" if up_ != k else "") + ")")
    assert_same(fat_tree(k=k, levels=levels, up=up, links_per_pair=lpp),
                ref.with_params(generator="fat-tree", k=k, levels=levels, up=up_))


@pytest.mark.parametrize("a,p,h,g,gcap", [(4, 2, 2, 9, None), (8, 4, 4, 33, None), (4, 2, 2, 5, 1e9),
                                          (3, 1, 2, 4, None), (2, 1, 1, 1, None), (6, 3, 3, 10, 2e9)])
def test_dragonfly_equals_reference(a, p, h, g, gcap):
    """Several cables per group pair (g - 1 < a h) included: ports and routers in the same order."""
    assert_same(dragonfly(a, p, h, g, global_capacity=gcap), dragonfly_reference(a, p, h, g, global_capacity=gcap))
