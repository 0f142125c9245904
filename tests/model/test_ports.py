"""Port policies in the static model: striping over a host's links (seed 003's bulk transfer)."""

import numpy as np
import pytest

from fabscope.errors import TrafficError
from fabscope.fabric.generators import fat_tree
from fabscope.fabric.placement import Placement
from fabscope.fabric.ports import STRIPE_THRESHOLD, parse_ports, split_flows
from fabscope.model.simulate import simulate
from fabscope.traffic.flows import Traffic


def _pair(f, size, ports, routing=None):
    t = Traffic.build("one", [0], [f.n_hosts - 1], size)
    return simulate(f, Placement.block(f, f.n_hosts, ppn=1), t, routing, ports=ports)


@pytest.mark.parametrize("rail_optimised", (False, True))
def test_a_message_striped_over_two_links_gets_twice_one_link_above_the_threshold(rail_optimised):
    """Seed 003: "Bandwidth ~ n * 2 Gbyte/s", striping from ~500000 bytes."""
    f = fat_tree(k=4, levels=2, rails=2, rail_optimised=rail_optimised)
    link = float(f.link_capacity[0])
    above, below = 2 * STRIPE_THRESHOLD, STRIPE_THRESHOLD // 2
    assert _pair(f, above, "stripe").pairs["bandwidth"][0] == pytest.approx(2 * link)
    assert _pair(f, below, "stripe").pairs["bandwidth"][0] == pytest.approx(link)
    assert _pair(f, above, "rank").pairs["bandwidth"][0] == pytest.approx(link)
    # the threshold is an option: 64 KiB striped at stripe:64KiB
    assert _pair(f, 1 << 16, "stripe:64KiB").pairs["bandwidth"][0] == pytest.approx(2 * link)
    # a striped message pays one latency, its bytes split: faster than one link
    t2, t1 = (_pair(f, above, p).pairs["time"][0] for p in ("stripe", "rank"))
    assert t1 / 2 < t2 < t1


def test_striped_flows_share_links_with_the_others():
    """Two ranks per host each striping: each gets one link's worth, not two."""
    f = fat_tree(k=4, levels=2, rails=2)
    pl = Placement.block(f, 2 * f.n_hosts, ppn=2)
    t = Traffic.build("two", [0, 1], [30, 31], 1 << 20)
    r = simulate(f, pl, t, ports="stripe")
    assert np.allclose(r.pairs["bandwidth"], f.link_capacity[0])


def test_one_port_hosts_ignore_the_policy():
    f = fat_tree(k=4, levels=2)
    a, b = _pair(f, 1 << 20, "rank"), _pair(f, 1 << 20, "stripe")
    assert a.pairs["bandwidth"].tolist() == b.pairs["bandwidth"].tolist()
    s = split_flows(f, Placement.block(f, 16, ppn=1), [0, 3], [5, 3], [1e6, 1e6], "stripe")
    assert s.identity and s.src.tolist() == [0, 3] and s.dst.tolist() == [5, 3]


def test_rank_policy_puts_local_rank_i_on_port_i():
    f = fat_tree(k=2, levels=2, rails=2)
    s = split_flows(f, Placement.block(f, 8, ppn=2), [0, 1, 1], [2, 3, 2], [1.0] * 3, "rank")
    assert [f.terminal_name(int(t)) for t in s.src] == ["h0000[1]", "h0000[2]", "h0000[2]"]
    # the destination's port of the same index: rank 2 is local rank 0, reached on port 2 from port 2
    assert [f.terminal_name(int(t)) for t in s.dst] == ["h0001[1]", "h0001[2]", "h0001[2]"]


@pytest.mark.parametrize("bad", ["spread", "rank:5", "stripe:lots", "stripe:-1"])
def test_bad_policy_is_refused_in_one_line(bad):
    with pytest.raises(TrafficError) as e:
        parse_ports(bad)
    assert "\n" not in str(e.value)


def test_simulate_cli_stripes_static_and_dynamic(tmp_path, capsys):
    import json

    from fabscope.cli import main

    bw = {}
    for ports in ("rank", "stripe"):
        for dyn in ([], ["--dynamic", "--engine", "python"]):
            out = tmp_path / f"{ports}{len(dyn)}.json"
            assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2,rails=2", "--pattern", "shift:k=8",
                         "--ppn", "1", "--size", "4MiB", "--ports", ports, "-o", str(out)] + dyn) == 0
            doc = json.loads(out.read_text())
            bw[ports, bool(dyn)] = min(doc["pairs"]["bandwidth"])
    capsys.readouterr()
    for dyn in (False, True):
        assert bw["stripe", dyn] / bw["rank", dyn] == pytest.approx(2, rel=0.02)


def test_simulate_cli_refuses_a_bad_policy_before_work(capsys):
    from fabscope.cli import main

    assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2,rails=2", "--ports", "spread"]) != 0
    err = capsys.readouterr().err
    assert "unknown port policy 'spread'" in err and len(err.strip().splitlines()) == 1
