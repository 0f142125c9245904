"""Hosts with several ports against the real tools: ibsim + OpenSM route every CA port's LID, and
fabscope imports and routes them port pair for port pair.

Needs Debian's ibsim-utils, opensm and infiniband-diags (CI installs them); skipped only when absent.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabscope.fabric.exporters import write_ibsim
from fabscope.fabric.generators import director, fat_tree, itasca
from fabscope.fabric.ibtools import IbSim, have_ibsim, parse_ibtracert
from fabscope.fabric.importers import build_fabric, parse_ibnetdiscover, parse_lfts, read_lfts
from fabscope.fabric.model import FabricBuilder, Level
from fabscope.routing import make_routing, terminal_routes
from fabscope.routing.agreement import compare_routes

pytestmark = [pytest.mark.ibsim,
              pytest.mark.skipif(not have_ibsim(), reason="needs ibsim-utils, opensm and infiniband-diags")]


def dual_port_on_one_leaf():
    """Dual-port HCAs with both ports on their leaf: 3 leaves of 4 hosts, 2 spines."""
    b = FabricBuilder("dual-port-one-leaf")
    hosts = b.add_hosts([f"n{i:02d}" for i in range(12)])
    leaves = [b.add_switch(f"L{i}", 1) for i in range(3)]
    spines = [b.add_switch(f"S{i}", 2) for i in range(2)]
    for i, h in enumerate(hosts):
        b.cable(h, leaves[i // 4], 3071e6)
        b.cable(h, leaves[i // 4], 3071e6)
    for lf in leaves:
        for s in spines:
            for _ in range(2):
                b.cable(lf, s, 3071e6)
    return b.build(groups={"leaf": np.arange(12) // 4}, levels=[Level("leaf", "Same Leaf")])


def terminal_paths(fabric, routing):
    """Every pair of ports on two hosts: (port name, port name) -> ((node, out port), ...)."""
    t = np.arange(fabric.n_terminals)
    s, d = (x.ravel() for x in np.meshgrid(t, t))
    keep = fabric.terminal_host[s] != fabric.terminal_host[d]
    s, d = s[keep], d[keep]
    router = make_routing(fabric, routing) if isinstance(routing, str) else routing
    r = terminal_routes(router, s, d)
    order = np.argsort(r.flow, kind="stable")
    cut = np.flatnonzero(np.diff(r.flow[order])) + 1
    out = {}
    for fl, links in zip(r.flow[order][np.r_[0, cut]].tolist(), np.split(r.link[order], cut)):
        out[(fabric.terminal_name(s[fl]), fabric.terminal_name(d[fl]))] = tuple(
            (fabric.node_names[fabric.link_src[l]], int(fabric.link_src_port[l])) for l in links.tolist())
    return out


SHAPES = {
    "rail-optimised": (lambda: fat_tree(k=4, levels=2, rails=2, rail_optimised=True), ("minhop", "updn", "ftree", "dor")),
    "dual-port-itasca": (lambda: itasca(leaves=18, host_ports=2), ("minhop", "updn", "dor")),
    "dual-port-director": (lambda: director(radix=12, host_ports=2), ("minhop", "updn", "ftree")),
    "dual-port-one-leaf": (dual_port_on_one_leaf, ("minhop", "updn", "ftree")),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_multiport_fabrics_route_as_opensm_port_for_port(tmp_path, shape):
    make, engines = SHAPES[shape]
    f = make()
    net = tmp_path / "fabric.net"
    write_ibsim(f, net)
    with IbSim(net, workdir=str(tmp_path / "sim")) as sim:
        got = {}
        for e in engines:
            dump = sim.opensm(e)
            topo = parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout, "ibnetdiscover")
            got[e] = build_fabric(topo, read_lfts(dump))       # each CA port's LID has its entries
        g = got[engines[-1]]                                   # the tables the switches hold now
        fts = build_fabric(topo, parse_lfts(sim.run(["dump_fts"]).stdout, "dump_fts"))
        # ibtracert from port LID to port LID agrees hop by hop with the tables
        rng = np.random.default_rng(5)
        pairs = [(int(a), int(b)) for a, b in rng.integers(0, g.n_terminals, (8, 2))
                 if g.terminal_host[a] != g.terminal_host[b]]
        r = terminal_routes(make_routing(g, "tables"), np.array([a for a, _ in pairs]), np.array([b for _, b in pairs]))
        for k, (a, b) in enumerate(pairs):
            out = sim.run(["ibtracert", str(g.terminal_lid[a]), str(g.terminal_lid[b])]).stdout
            ours = [(g.node_names[g.link_src[l]], int(g.link_src_port[l])) for l in r.path(k)]
            assert parse_ibtracert(out) == ours, (shape, g.terminal_name(a), g.terminal_name(b))
    assert g.n_terminals == f.n_terminals and sorted(g.host_names) == sorted(f.host_names)
    assert len(set(g.terminal_lid.tolist())) == g.n_terminals          # one LID per CA port
    n = g.n_terminals * g.n_terminals - int(np.sum(np.bincount(g.terminal_host) ** 2))
    assert compare_routes(g, g.lft, fts.lft) == (n, n)
    for e, ge in got.items():
        theirs = terminal_paths(ge, "tables")
        assert len(theirs) == n
        for fabric in (ge, f):                # fabscope's engine, on the imported and on the generated fabric
            ours = terminal_paths(fabric, e)
            same = sum(ours[k] == theirs[k] for k in theirs)
            assert same == n, (shape, e, "imported" if fabric is ge else "generated", n - same)


def test_lmc_2_on_dual_port_hosts_routes_every_port_by_its_base_lid(tmp_path):
    """opensm -l 2: each CA port owns 4 LIDs; the tables import one column per port, by its base LID."""
    f = director(radix=12, host_ports=2)
    net = tmp_path / "fabric.net"
    write_ibsim(f, net)
    with IbSim(net, workdir=str(tmp_path / "sim")) as sim:
        dump = sim.opensm("minhop", ("-l", "2"))
        g = build_fabric(parse_ibnetdiscover(sim.run(["ibnetdiscover"]).stdout), read_lfts(dump))
    assert g.lmc == 2 and np.all(g.terminal_lid % 4 == 0) and g.params["lft_missing"] == 0
    n = g.n_terminals * (g.n_terminals - 2)
    assert compare_routes(g, g.lft, make_routing(g, "minhop").lft) == (n, n)
