"""Hosts with several ports: routes go from port to port, each rail keeps its own traffic."""

import numpy as np
import pytest

from fabscope.errors import FabricError, RoutingError
from fabscope.fabric.generators import fat_tree, itasca, torus
from fabscope.fabric.placement import Placement
from fabscope.model.simulate import simulate
from fabscope.routing import check_routes, host_terminals, make_routing, terminal_routes
from fabscope.traffic.patterns import shift

RAILED = {"planes": dict(rails=2), "rail-optimised": dict(rails=2, rail_optimised=True)}
ENGINES = ("dmodk", "minhop", "ftree", "updn", "ecmp", "adaptive", "dor")


def _rail_of_switch(f):
    """Rail of every switch that has host ports (-1: none), from the ports hanging off it."""
    rail = np.full(f.n_nodes, -1)
    rail[f.terminal_switch] = f.terminal_port
    return rail


def _same_rail_pairs(f):
    t = np.arange(f.n_terminals)
    s, d = np.meshgrid(t, t)
    s, d = s.ravel(), d.ravel()
    keep = (f.terminal_port[s] == f.terminal_port[d]) & (f.terminal_host[s] != f.terminal_host[d])
    return s[keep], d[keep]


@pytest.mark.parametrize("shape", RAILED)
@pytest.mark.parametrize("engine", ENGINES)
def test_same_rail_routes_stay_on_their_rail(shape, engine):
    f = fat_tree(k=4, levels=2, **RAILED[shape])
    if engine == "updn" and shape == "planes":
        pytest.skip("two planes are two subnets: updn finds no root common to both (as OpenSM)")
    s, d = _same_rail_pairs(f)
    r = terminal_routes(make_routing(f, engine), s, d)
    if engine != "adaptive":
        check_routes(f, s, d, r, terminals=True)
    rail = _rail_of_switch(f)
    visited = f.link_dst[r.link]
    leaf = rail[visited] >= 0
    assert np.all(rail[visited[leaf]] == f.terminal_port[s[r.flow[leaf]]])
    # and each ends on the cable into its destination port
    if engine != "adaptive":                # a walk lists hop by hop: a flow's last entry is its last hop
        at = np.full(len(s), -1)
        np.maximum.at(at, r.flow, np.arange(len(r.flow)))
        assert np.array_equal(r.link[at], f.terminal_downlink[d])


@pytest.mark.parametrize("shape", RAILED)
@pytest.mark.parametrize("engine", ("dmodk", "minhop", "ftree", "ecmp", "adaptive"))
@pytest.mark.parametrize("ppn", (1, 2))
def test_two_rail_shift_gives_every_pair_its_rails_full_rate(shape, engine, ppn):
    """Two rails, shift:k=1: every pair at one link's rate (the route between two ports ended at the
    destination's first port, and half the flows crossed to the other rail by the spine)."""
    f = fat_tree(k=4, levels=2, **RAILED[shape])
    n = f.n_hosts * ppn
    r = simulate(f, Placement.block(f, n, ppn=ppn), shift(n, 1 << 20, k=1), engine)
    inter = r.pairs["src_host"] != r.pairs["dst_host"]
    assert np.allclose(r.pairs["bandwidth"][inter], f.link_capacity[0])


def test_host_route_ends_at_the_port_its_source_port_addresses():
    f = fat_tree(k=2, levels=2, rails=2)
    ts, td = host_terminals(f, [0], [1])                # port 1 (dst mod 2) to port 1
    assert [f.terminal_name(int(t)) for t in (ts[0], td[0])] == ["h0000[2]", "h0001[2]"]
    for engine in ("dmodk", "minhop", "ecmp"):
        path = make_routing(f, engine).routes(np.array([0]), np.array([1])).path(0)
        assert [f.link_name(l) for l in path] == ["h0000[2] -> rail1-s1-0000[1]", "rail1-s1-0000[2] -> h0001[2]"]


def test_cross_rail_pair_on_planes_has_no_route():
    f = fat_tree(k=2, levels=2, rails=2)
    with pytest.raises(RoutingError, match=r"no route to h0001\[1\] \(from h0000\[2\]\)"):
        terminal_routes(make_routing(f, "minhop"), np.array([1]), np.array([2]))


@pytest.mark.parametrize("make, engines", [
    (lambda: fat_tree(k=4, levels=3), ("dmodk", "minhop", "ftree", "updn", "ecmp", "adaptive")),
    (lambda: itasca(leaves=6), ("minhop", "ecmp")),
    (lambda: torus((3, 4)), ("dor", "minimal")),
])
def test_one_port_hosts_route_terminals_as_hosts(make, engines):
    f = make()
    assert f.single_port and f.n_terminals == f.n_hosts
    rng = np.random.default_rng(3)
    s, d = rng.integers(0, f.n_hosts, 200), rng.integers(0, f.n_hosts, 200)
    for e in engines:
        r = make_routing(f, e)
        a, b = r.routes(s, d), terminal_routes(r, s, d)
        for x in ("flow", "link", "weight", "hops"):
            assert np.array_equal(getattr(a, x), getattr(b, x)), (e, x)


def test_dual_port_hosts_on_one_leaf_route_each_port():
    """A dual-port HCA with both ports on its leaf: each port its own destination, as each has its LID."""
    from fabscope.fabric.model import FabricBuilder, Level

    b = FabricBuilder("dual")
    hosts = b.add_hosts(["a", "b"])
    leaf, spine = b.add_switch("L", 1), b.add_switch("S", 2)
    for h in hosts:
        b.cable(h, leaf, 1e9)
        b.cable(h, leaf, 1e9)
    b.cable(leaf, spine, 1e9)
    f = b.build(groups={"leaf": [0, 0]}, levels=[Level("leaf", "Same Leaf")])
    assert f.n_terminals == 4 and f.terminal_name(3) == "b[2]"
    lft = make_routing(f, "minhop").lft
    assert lft.shape == (2, 4)
    assert [f.link_name(int(l)) for l in lft[0]] == ["L[1] -> a[1]", "L[2] -> a[2]", "L[3] -> b[1]", "L[4] -> b[2]"]
    # tables that deliver b[2]'s packets to b[1] reach the host by the wrong port: refused, named
    bad = lft.copy()
    bad[0, 3] = lft[0, 2]
    with pytest.raises(RoutingError, match=r"route a\[1\] -> b\[2\] reaches its host by another port \(L\[3\] -> b\[1\]\)"):
        terminal_routes(make_routing(f, "tables", lft=bad), np.array([0]), np.array([3]))


def test_terminal_api_refuses_ports_a_host_does_not_have():
    f = fat_tree(k=2, levels=2, rails=2)
    assert f.terminal([1, 1], [0, 1]).tolist() == [2, 3]
    assert f.find_terminal(f.terminal_name(5)) == 5
    with pytest.raises(FabricError, match="host 'h0001' has no port 2"):
        f.terminal(1, 2)
    with pytest.raises(FabricError, match=r"host 'h0001' has no port '\[7\]'"):
        f.find_terminal("h0001[7]")


def test_rails_estimators_count_what_is_built():
    from fabscope.fabric.generators import fat_tree_size

    for kw in ({"rails": 3}, {"rails": 3, "rail_optimised": True}, {"rails": 2, "up": 2}):
        f = fat_tree(k=4, levels=3, **kw)
        s = fat_tree_size(4, 3, **kw)
        assert (s.hosts, s.switches, s.links) == (f.n_hosts, f.n_switches, f.n_links)


@pytest.mark.parametrize("shape", RAILED)
def test_dmodk_on_rails_keeps_shifts_free_of_contention(shape):
    """D-mod-K numbers ports rail by rail where hosts have several: on each rail a shift is what it is
    on the one-rail tree, every pair at the link's rate (3-level trees, 1 and 2 ranks per node)."""
    f = fat_tree(k=4, levels=3, **RAILED[shape])
    for ppn in (1, 2):
        n = f.n_hosts * ppn
        pl = Placement.block(f, n, ppn=ppn)
        for k in (1, 3, 4, 5, 16, 17, 33):
            bw = simulate(f, pl, shift(n, 1 << 20, k=k * ppn), "dmodk").pairs["bandwidth"]
            assert np.allclose(bw, f.link_capacity[0]), (ppn, k)
