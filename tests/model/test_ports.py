"""Port policies in the static model: striping over a host's links (seed 003's bulk transfer)."""

import numpy as np
import pytest

from fabscope.errors import TrafficError
from fabscope.fabric.generators import fat_tree
from fabscope.fabric.placement import Placement
from fabscope.fabric.ports import STRIPE_THRESHOLD, parse_ports, split_flows
from fabscope.model.simulate import simulate
from fabscope.routing import make_routing, terminal_routes
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
    # rank 2 is local rank 0 (port 1), on the other plane from port 2: reached on port 2, the source's plane
    assert [f.terminal_name(int(t)) for t in s.dst] == ["h0001[1]", "h0001[2]", "h0001[2]"]


def test_rank_reaches_the_destination_ranks_own_port_and_rail_stays_on_the_rail():
    """MPI with a NIC per rank delivers to the destination rank's NIC: on rail leaves, rank 0
    (port 1) to rank 1 of another host (port 2 there) crosses rails through a spine; ``rail``
    (NCCL's PXN) keeps it on rail 1, over the rail leaf alone where both hosts share it."""
    f = fat_tree(k=4, levels=2, rails=2, rail_optimised=True)
    pl = Placement.block(f, f.n_hosts * 2, ppn=2)
    t = Traffic.build("one", [0], [3], 1 << 20)                 # rank 3: local rank 1 of host 1
    names = {}
    for policy in ("rank", "rail"):
        s = split_flows(f, pl, t.src, t.dst, t.bytes, policy)
        path = terminal_routes(make_routing(f, "dmodk"), s.src, s.dst, f).path(0)
        spine = any(f.switch_level[f.link_dst[link] - f.n_hosts] == 2 for link in path[:-1])
        r = simulate(f, pl, t, "dmodk", ports=policy)
        names[policy] = (f.terminal_name(int(s.src[0])), f.terminal_name(int(s.dst[0])), int(r.pairs["rail"][0]), spine)
    # rank: port 1 to port 2 of h0001, rail class 1 (cross), a spine on the way
    assert names["rank"] == ("h0000[1]", "h0001[2]", 1, True)
    # rail: port 1 to port 1, same rail, the two hosts' rail leaf alone
    assert names["rail"] == ("h0000[1]", "h0001[1]", 0, False)


def test_pairs_classed_by_rail_beside_the_classes(tmp_path):
    f = fat_tree(k=4, levels=2, rails=2, rail_optimised=True)
    pl = Placement.block(f, f.n_hosts * 2, ppn=2)
    t = Traffic.build("two", [0, 0, 0], [2, 3, 1], 1 << 20)      # same rail, cross rail, one host
    r = simulate(f, pl, t, "dmodk", ports="rank")
    assert r.pairs["rail"].tolist() == [0, 1, 2]
    rows = {row.label: row.count for row in r.summary()}
    assert rows["Same Rail"] == 1 and rows["Cross Rail"] == 1 and rows["Same Node"] == 1
    # one-port fabrics have no rails: no column, no rows
    g = fat_tree(k=4, levels=2)
    one = simulate(g, Placement.block(g, 16, ppn=1), Traffic.build("one", [0], [5], 1e6))
    assert "rail" not in one.pairs and "Same Rail" not in {row.label for row in one.summary()}
    # the column goes through the result file and back
    from fabscope.result import Result
    r.write_json(tmp_path / "r.json")
    assert Result.read_json(tmp_path / "r.json").pairs["rail"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("bad", ["spread", "rank:5", "rail:5", "stripe:lots", "stripe:-1"])
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


def test_dynamic_results_class_pairs_by_rail(tmp_path, capsys):
    """In time too: at 2 ranks per node on rail leaves, shift:k=1's inter-node messages cross rails
    under rank and stay on theirs under rail."""
    import json

    from fabscope.cli import main

    rails = {}
    for ports in ("rank", "rail"):
        out = tmp_path / f"{ports}.json"
        assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2,rails=2,rail_optimised=1", "--pattern",
                     "shift:k=1", "--ppn", "2", "--size", "1MiB", "--dynamic", "--ports", ports, "-o", str(out)]) == 0
        doc = json.loads(out.read_text())
        rails[ports] = sorted(doc["pairs"]["rail"])
    capsys.readouterr()
    assert rails["rank"] == [1] * 16 + [2] * 16 and rails["rail"] == [0] * 16 + [2] * 16
