"""DOR's routes computed at once equal the hop-by-hop walk's, entry for entry and in the same order."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabscope.errors import RoutingError
from fabscope.fabric.generators import hypercube, mesh, torus
from fabscope.routing.dor import DimensionOrderRouting
from fabscope.routing.routes import walk


def _same(a, b):
    for name in ("flow", "link", "weight", "hops"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.n_flows == b.n_flows


@settings(max_examples=60, deadline=None)
@given(dims=st.lists(st.integers(1, 7), min_size=1, max_size=4), data=st.data(),
       hpr=st.integers(1, 3), tie=st.sampled_from(["plus", "simgrid"]), seed=st.integers(0, 2**16))
def test_at_once_equals_the_walk(dims, data, hpr, tie, seed):
    periodic = data.draw(st.lists(st.booleans(), min_size=len(dims), max_size=len(dims)))
    f = torus(tuple(dims), periodic=tuple(periodic), hosts_per_router=hpr)
    r = DimensionOrderRouting(f, tie=tie)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    src, dst = rng.integers(0, f.n_hosts, n), rng.integers(0, f.n_hosts, n)
    got = r._routes_at_once(src, dst)
    assert got is not None
    _same(got, walk(f, src, dst, r.next_link, r.name))


@pytest.mark.parametrize("make", [lambda: torus((16, 16, 16)), lambda: mesh((5, 4, 3)), lambda: hypercube(6),
                                  lambda: torus((27, 20, 24), periodic=(False, False, True))])
def test_routes_equal_the_walk_on_whole_permutations(make):
    f = make()
    perm = np.random.default_rng(1).permutation(f.n_hosts)
    r = DimensionOrderRouting(f)
    _same(r.routes(np.arange(f.n_hosts), perm), walk(f, np.arange(f.n_hosts), perm, r.next_link, r.name))


def test_a_missing_link_is_left_to_the_walk_which_names_it():
    f = torus((4, 4))
    src, dst = np.array([0, 1]), np.array([2, 3])       # both go + along the first line of routers
    assert DimensionOrderRouting(f)._routes_at_once(src, dst) is not None
    r = DimensionOrderRouting(f)
    r._t["nbr"] = r._t["nbr"].copy()
    r._t["nbr"][0, 1, 0] = -1                          # router (0,0) loses its + link in dimension 1
    assert r._routes_at_once(src, dst) is None
    with pytest.raises(RoutingError, match=r"switch r\(0,0\) has no route to nid00002"):
        r.routes(src, dst)


def test_a_link_the_coordinates_do_not_describe_is_left_to_the_walk():
    f = torus((4, 4))
    r = DimensionOrderRouting(f)
    r._t["nbr"] = r._t["nbr"].copy()
    r._t["nbr"][0, 1, 0] = r._t["nbr"][0, 0, 0]        # "+ in dimension 1" takes dimension 0's cable
    src, dst = np.array([0]), np.array([2])
    assert r._rings() is None
    with pytest.raises(RoutingError, match="loops"):     # the walk's answer: round and round dimension 0
        r.routes(src, dst)


def test_coordinates_shared_by_two_routers_are_left_to_the_walk():
    from dataclasses import replace

    f = torus((3, 3))
    coords = f.coords.copy()
    coords[1] = coords[0]                              # two routers claim (0,0)
    r = DimensionOrderRouting(replace(f, coords=coords))
    assert r._rings() is None and r._routes_at_once(np.array([0]), np.array([8])) is None
    src, dst = np.array([4, 8, 2]), np.array([1, 0, 6])
    _same(r.routes(src, dst), walk(r.fabric, src, dst, r.next_link, r.name))
