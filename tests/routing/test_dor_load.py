"""DOR's link loads by difference arrays equal the sums over routed flows."""

import numpy as np
import pytest

from fabscope.fabric.generators import hypercube, mesh, torus
from fabscope.routing.dor import DimensionOrderRouting

SHAPES = [
    lambda: torus((4, 4, 2), hosts_per_router=2),     # even rings: the half-way ties
    lambda: torus((5, 3)),                            # odd rings
    lambda: torus((6, 4), periodic=(True, False)),    # torus x mesh
    lambda: mesh((3, 4, 2)),
    lambda: hypercube(4),
    lambda: torus((2, 8)),
]


@pytest.mark.parametrize("shape", range(len(SHAPES)))
@pytest.mark.parametrize("tie", ["plus", "simgrid"])
def test_link_load_equals_routed_sum(shape, tie):
    f = SHAPES[shape]()
    r = DimensionOrderRouting(f, tie=tie)
    rng = np.random.default_rng(shape)
    n = 3000
    src, dst = rng.integers(0, f.n_hosts, n), rng.integers(0, f.n_hosts, n)
    w = rng.uniform(0.5, 2.0, n)
    routed = r.routes(src, dst)
    expect = np.bincount(routed.link, weights=w[routed.flow] * routed.weight, minlength=f.n_links)
    got = r.link_load(src, dst, w)
    assert np.any(src == dst) and expect.max() > 0
    np.testing.assert_allclose(got, expect, rtol=1e-9, atol=1e-9)


def test_link_load_follows_port_order_rule_through_tables():
    f = torus((4, 4))
    r = DimensionOrderRouting(f, tie="opensm")
    src, dst, w = np.array([0, 5, 9]), np.array([10, 5, 3]), np.array([1.0, 2.0, 4.0])
    routed = r.routes(src, dst)
    expect = np.bincount(routed.link, weights=w[routed.flow], minlength=f.n_links)
    np.testing.assert_allclose(r.link_load(src, dst, w), expect)
