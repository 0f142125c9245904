"""The testbed's plan without root: fabric, names, forwarding tables, size checks."""

from __future__ import annotations

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.fabric.generators import fat_tree, torus
from fabscope.routing import make_routing
from fabscope.testbed import commands, names
from fabscope.testbed.lifecycle import hosts_that_fit, prepare
from fabscope.testbed.names import TestbedError, parse_rate
from fabscope.testbed.plan import forwarding, make_plan


def test_plan_scales_every_link_by_one_factor():
    f = fat_tree(k=4, levels=2, up=2)
    p = make_plan("tb1", f, rate=25e6)
    assert np.allclose(p.fabric.link_capacity / f.link_capacity, p.scale * p.efficiency)
    assert np.isclose(max(p.wire_rate(l) for l in range(f.n_links)), 25e6)
    assert p.fabric.host_names[3] == "fstb-tb1-h3" and p.fabric.params["original_hosts"][3] == f.host_names[3]


def test_forwarding_tables_route_every_pair_as_the_engine():
    f = fat_tree(k=4, levels=2)
    r = make_routing(f, "dmodk")
    lft = forwarding(f, r)
    tr = make_routing(f, "tables", lft=lft)
    src, dst = np.divmod(np.arange(f.n_hosts ** 2), f.n_hosts)
    keep = src != dst
    a, b = r.routes(src[keep], dst[keep]), tr.routes(src[keep], dst[keep])
    assert np.array_equal(a.flow, b.flow) and np.array_equal(a.link, b.link)
    assert (lft >= 0).all()          # full tables: also the entries no pair uses


def test_split_routing_is_refused():
    f = fat_tree(k=2, levels=2)
    with pytest.raises(TestbedError, match="splits flows"):
        forwarding(f, make_routing(f, "adaptive"))


def test_commands_name_only_the_testbeds_objects():
    p = make_plan("tb7", fat_tree(k=2, levels=2), rate=1e6)
    lines = commands.cable_lines(p) + commands.mgmt_lines(p, "10.233.9")
    created = {w for ln in lines for w in ln.split() if w.startswith(("fstb-", "fb"))}
    assert created and all(names.owns_netns("tb7", w) or names.owns_link("tb7", w) for w in created)
    assert all(len(w) <= 15 for w in created if w.startswith("fb"))


def test_too_big_says_how_many_fit_and_why():
    with pytest.raises(TestbedError, match=r"runs at most \d+ link-bound at --rate 1000Mbit: .* cores forward"):
        prepare("tb1", "fat-tree:k=8,levels=2", parse_rate("1Gbit"))
    n, why = hosts_that_fit(make_plan("tb1", fat_tree(k=2, levels=2), 1e5).fabric,
                            forwarding(fat_tree(k=2, levels=2), make_routing(fat_tree(k=2, levels=2), "dmodk")))
    assert n > 4 and why


def test_a_host_with_two_ports_gets_two_interfaces_each_its_address_and_route():
    """A dual-port host (both ports on one switch): fab0 and fab1, an address each, and the switch
    routes each address to its own cable (the plan refused such hosts)."""
    from fabscope.routing import make_routing
    from fabscope.testbed import commands
    from fabscope.testbed.plan import forwarding

    p = make_plan("tb1", _two_port_fabric(), 1e6)
    f = p.fabric
    assert [p.ifname(int(l)) for l in f.terminal_uplink] == ["fab0", "fab1", "fab0"]
    assert [p.terminal_ip(t) for t in range(3)] == ["10.200.0.1", "10.200.0.2", "10.200.0.3"]
    lft = forwarding(f, make_routing(f, "minhop"))
    routes = [ln for ln in commands.node_ip_lines(p, 2, lft, "10.233.0") if ln.startswith("route")]
    assert routes == [f"route replace 10.200.0.{t + 1}/32 via 10.199.255.254 dev p{t + 1} onlink" for t in range(3)]
    host = commands.node_ip_lines(p, 0, lft, "10.233.0")
    assert "addr add 10.200.0.2/32 dev fab1" in host and "rule add from 10.200.0.2 table 101 priority 101" in host


def _two_port_fabric():
    from fabscope.fabric.model import FabricBuilder, Level

    b = FabricBuilder("two ports")
    h = b.add_hosts(["a", "b"])
    s = b.add_switch("sw", level=1)
    b.cable(h[0], s, 1e9)
    b.cable(h[0], s, 1e9)
    b.cable(h[1], s, 1e9)
    return b.build(groups={"leaf": [0, 0]}, levels=[Level("leaf", "Same Leaf")])


@pytest.mark.parametrize("argv, words", [
    (["testbed", "up", "--name", "Bad Name", "--fabric", "fat-tree:k=2,levels=2"], "testbed name"),
    (["testbed", "up", "--name", "x", "--fabric", "fat-tree:k=2,levels=2", "--rate", "fast"], "cannot read rate"),
    (["testbed", "up", "--name", "x", "--fabric", "nosuch:k=2"], "unknown fabric"),
])
def test_bad_input_is_one_line(argv, words, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fabscope: error:") and words in err[0], err


def test_torus_runs_with_dor_tables():
    f = torus(dims=(3, 3))
    lft = forwarding(f, make_routing(f, "dor"))
    assert (lft >= 0).all()


def _state_file(tmp_path, monkeypatch, name="ci7"):
    """A testbed's state as 'up' writes it (no namespaces: the commands below only read the fabric)."""
    from dataclasses import replace

    from fabscope.fabric.io import to_dict
    from fabscope.testbed import state

    monkeypatch.setenv("FABSCOPE_TESTBED_DIR", str(tmp_path / "state"))
    p = make_plan(name, fat_tree(k=4, levels=2), 5e6)
    lft = forwarding(p.fabric, make_routing(p.fabric, "dmodk"))
    st = state.State(name=name, spec="fat-tree:k=4,levels=2", routing="dmodk", rate=5e6, mgmt_subnet="10.233.9",
                     fabric=to_dict(p.fabric), scale=p.scale, efficiency=p.efficiency,
                     nominal=to_dict(replace(p.fabric, lft=lft)))
    state.save(st)
    return st, p


def test_every_fabric_option_takes_a_testbed_as_built_or_now(tmp_path, monkeypatch, capsys):
    import json

    from fabscope.resolver import resolve_fabric
    from fabscope.testbed import state

    st, p = _state_file(tmp_path, monkeypatch)
    st.degraded["20"] = 1e5
    st.cut = ["s1-0001[6]"]
    state.save(st)
    built, now = resolve_fabric("ci7"), resolve_fabric("ci7:now")
    hosts = tmp_path / "hosts"
    hosts.write_text("".join(f"{h}\n" for h in built.host_names))
    assert built.name.startswith("testbed ci7 as built") and now.name.startswith("testbed ci7 now")
    assert built.link_capacity[40] == p.fabric.link_capacity[40] and now.n_links == built.n_links - 2
    assert resolve_fabric("ci7:built").name == built.name
    for argv in (["fabric", "export", "--fabric", "ci7", "--format", "json", "-o", str(tmp_path / "b.json")],
                 ["fabric", "export", "--fabric", "ci7:now", "--format", "json", "-o", str(tmp_path / "n.json")],
                 ["simulate", "--fabric", "ci7", "--ppn", "1", "--pattern", "random-pairs"],
                 ["map", "--fabric", "ci7:now", "--comm", "stencil2d:4x4", "--ppn", "1", "--nodes", str(hosts)],
                 ["fabric", "whatif", "--fabric", "ci7", "--fail", "s1-0000[5]"]):
        assert main(argv) == 0, argv
    b, n = (json.loads((tmp_path / f).read_text()) for f in ("b.json", "n.json"))
    assert len(b["cables"]["a"]) == len(n["cables"]["a"]) + 1
    capsys.readouterr()
    assert main(["simulate", "--fabric", "ci8", "--ppn", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown fabric 'ci8'" in err[0] and "no testbed 'ci8' is up" in err[0], err
