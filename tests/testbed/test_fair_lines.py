"""The fair share's tc lines without root: which hosts cross each link, and the htb under each shaper."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fabscope.fabric.generators import fat_tree, torus
from fabscope.routing import make_routing
from fabscope.testbed import commands
from fabscope.testbed.plan import forwarding, make_plan


@pytest.mark.parametrize("fabric,engine", [(fat_tree(k=4, levels=2, up=2), "dmodk"), (torus(dims=(3, 3)), "dor"),
                                           (fat_tree(k=4, levels=3), "dmodk")])
def test_link_sources_are_the_hosts_the_engine_routes_over_each_link(fabric, engine):
    p = make_plan("tb1", fabric, rate=5e6)
    r = make_routing(p.fabric, engine)
    got = commands.link_sources(p, forwarding(p.fabric, r))
    n = p.fabric.n_hosts
    src, dst = np.divmod(np.arange(n * n), n)
    keep = src != dst
    rt = r.routes(src[keep], dst[keep])
    want = [set() for _ in range(p.fabric.n_links)]
    for fl, l in zip(rt.flow.tolist(), rt.link.tolist()):
        want[l].add(int(src[keep][fl]))
    assert [set(s) for s in got] == want
    assert max(len(s) for s in got) > 1                   # some link is shared, or the test says nothing


def test_shared_ports_get_one_class_and_deep_queue_per_source_host():
    p = make_plan("tb1", fat_tree(k=4, levels=2, up=2), rate=5e6)
    lft = forwarding(p.fabric, make_routing(p.fabric, "dmodk"))
    src = commands.link_sources(p, lft)
    f = p.fabric
    for node in range(f.n_nodes):
        lines = commands.shaper_lines(p, node, src)
        for l in np.flatnonzero(f.link_src == node):
            dev = p.ifname(int(l))
            mine = [ln for ln in lines if f" dev {dev} " in ln]
            assert mine[0].startswith(f"qdisc replace dev {dev} root handle 1: tbf rate ")   # the rate, as before
            ips = sorted(re.findall(r"match ip src (\S+)/32", " ".join(mine)))
            if len(src[l]) < 2:
                assert len(mine) == 1, mine                  # a host's own cable: the tbf alone
                continue
            assert ips == sorted(p.host_ip(h) for h in src[l])
            classes = re.findall(r"classid 2:(\w+) htb rate (\d+)bit quantum (\d+)", " ".join(mine))
            assert len(classes) == len(src[l]) + 1           # and the default class
            # equal quanta, of the largest packet the tbf passes whole: round-robin fair in bytes
            assert {int(q) for _, _, q in classes} == {commands.burst_bytes(p.wire_rate(int(l)), p.mtu)}
            assert min(int(r) for _, r, _ in classes) >= 8 * p.wire_rate(int(l))   # the htb never holds back
            flows = set(re.findall(r"flowid 2:(\w+)", " ".join(mine)))
            assert flows == {c for c, _, _ in classes} - {"1"}
            limits = [int(x) for x in re.findall(r"bfifo limit (\d+)", " ".join(mine))]
            assert len(limits) == len(classes) and min(limits) >= commands.QUEUE_BYTES


def test_without_fair_share_and_for_degrade_the_tbf_alone():
    p = make_plan("tb1", fat_tree(k=4, levels=2, up=2), rate=5e6)
    src = commands.link_sources(p, forwarding(p.fabric, make_routing(p.fabric, "dmodk")))
    spine = p.fabric.n_nodes - 1
    assert any("htb" in ln for ln in commands.shaper_lines(p, spine, src))
    assert not any("htb" in ln for ln in commands.shaper_lines(p, spine, src, fair=False))
    assert commands.shaper_lines(p, spine, src, fair=False) == commands.shaper_lines(p, spine)
    change = commands.shaper("p1", 1e6, 9000, change=True, sources=["10.200.0.1", "10.200.0.2"])
    assert len(change) == 1 and change[0].startswith("qdisc change dev p1 root handle 1: tbf rate 8000000bit")


def test_delay_stage_is_each_class_queue_and_holds_the_no_drop_bytes():
    lines = commands.shaper("p1", 5e6, 9000, delay=5e-6, sources=["10.200.0.1", "10.200.0.2"])
    netem = [ln for ln in lines if "netem" in ln]
    assert len(netem) == 3 and all("delay 5us" in ln for ln in netem)
    # netem counts packets: its limit holds QUEUE_BYTES of the smallest frames
    assert all(int(ln.split("limit ")[1]) * 64 >= commands.QUEUE_BYTES for ln in netem)
    alone = commands.shaper("fab0", 5e6, 9000, delay=5e-6)
    assert alone[1].startswith("qdisc replace dev fab0 parent 1:1 handle 10: netem delay 5us limit ")
