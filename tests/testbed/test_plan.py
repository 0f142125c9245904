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


def test_more_than_one_port_per_host_is_refused():
    with pytest.raises(TestbedError, match="has 2 ports"):
        make_plan("tb1", _two_port_fabric(), 1e6)


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
