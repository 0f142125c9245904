"""Switch-local adaptive routing: each switch takes its least loaded minimal next hop."""

import numpy as np
import pytest

from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree, itasca
from fabscope.model.simulate import simulate
from fabscope.routing import check_routes, make_routing
from fabscope.routing.distances import switch_distances
from fabscope.traffic.patterns import leaf_offset


@pytest.mark.parametrize("fabric", [fat_tree(k=4, levels=3), itasca(leaves=20)], ids=["fat-tree", "itasca20"])
def test_routes_valid_and_minimal(fabric):
    rng = np.random.default_rng(4)
    s, d = rng.integers(0, fabric.n_hosts, 400), rng.integers(0, fabric.n_hosts, 400)
    r = make_routing(fabric, "adaptive-local").routes(s, d)
    check_routes(fabric, s, d, r)
    h = fabric.n_hosts
    dist = switch_distances(fabric)[fabric.host_switch[s] - h, fabric.host_switch[d] - h]
    assert np.array_equal(r.hops, np.where(s == d, 0, dist + 2))


def test_a_leaf_spreads_its_flows_over_its_up_ports_by_load():
    """Three flows up from one leaf of a k=4 tree take three of its up ports, one each, whatever their
    destinations; D-mod-K, by destination, puts the three on one port as their destinations agree
    mod 4."""
    f = fat_tree(k=4, levels=2)
    s = np.arange(3)
    d = np.array([4, 8, 12])                  # the three other leaves, each one's first host
    leaf = f.host_switch[0]
    ups = lambda r: [int(l) for l in r.link if f.link_src[l] == leaf and f.link_dst[l] >= f.n_hosts]
    assert len(set(ups(make_routing(f, "adaptive-local").routes(s, d)))) == 3
    assert len(set(ups(make_routing(f, "dmodk").routes(s, d)))) == 1


def test_seeded_order():
    f = itasca(leaves=20)
    rng = np.random.default_rng(0)
    s, d = rng.integers(0, f.n_hosts, 300), rng.integers(0, f.n_hosts, 300)
    a, b, c = (make_routing(f, "adaptive-local", seed=k).routes(s, d) for k in (3, 3, 4))
    assert np.array_equal(a.link, b.link) and not np.array_equal(a.link, c.link)


def test_parts_split_a_flow_and_keep_it_whole():
    f = fat_tree(k=4, levels=3)
    s, d = np.zeros(8, int), np.arange(8, 16) * 4
    r = make_routing(f, "adaptive-local:parts=4").routes(s, d)
    net = np.zeros((8, f.n_nodes))
    np.add.at(net, (r.flow, f.link_src[r.link]), -r.weight)
    np.add.at(net, (r.flow, f.link_dst[r.link]), r.weight)
    want = np.zeros_like(net)
    want[np.arange(8), s], want[np.arange(8), d] = -1, 1
    assert np.allclose(net, want)
    assert np.any(r.weight < 1)               # some flow does split


def test_local_choice_lies_below_the_ideal_split_on_itascas_leaf_offset():
    """Seen from the leaf, every up port is as good; the collisions lie beyond, on the way down, where
    only the even split (the bound) avoids them.  Parts (towards per-packet choice) close part of the gap."""
    f = itasca()
    pl = Placement.block(f, f.n_hosts, ppn=1)
    tr = leaf_offset(f, pl, 8, 1 << 20)
    avg = {e: simulate(f, pl, tr, e).summary()[0].avg
           for e in ("adaptive", "adaptive-local", "adaptive-local:parts=8")}
    cap = f.link_capacity[0] / 1e6
    assert avg["adaptive"] == pytest.approx(cap)
    assert avg["adaptive-local"] < avg["adaptive-local:parts=8"] < avg["adaptive"]
    assert avg["adaptive-local"] > cap / 2
