"""Rails: independent planes, rail-optimised leaves, and the GPU pod preset."""

import numpy as np
import pytest

from fabscope.dynamic.programs import allreduce_ring
from fabscope.dynamic.run import run_program_on
from fabscope.fabric.generators import xgft, xgft_size
from fabscope.fabric.io import load_fabric, read_json, write_json
from fabscope.fabric.placement import Placement
from fabscope.model.simulate import simulate
from fabscope.traffic.patterns import shift


def test_gpu_pod_preset_is_the_reference_designs_shape():
    f = load_fabric("gpu-pod")
    assert (f.n_hosts, f.n_terminals, f.n_switches) == (128, 1024, 48)
    assert set(f.host_n_ports.tolist()) == {8}
    # every NIC r of a scalable unit's 32 nodes on one leaf, and that leaf is rail r's
    leaf = f.terminal_switch.reshape(128, 8)
    for r in range(8):
        assert len(np.unique(leaf[:, r])) == 4
    assert not np.intersect1d(leaf[:, 0], leaf[:, 1]).size
    # 16 spines of 64 ports: 2 cables to each of the 32 leaves
    spines = np.flatnonzero(f.switch_level == 2) + f.n_hosts
    assert len(spines) == 16 and all(np.sum(f.link_src == s) == 64 for s in spines)


def test_rail_aligned_shift_on_the_pod_runs_every_pair_at_the_nic_rate():
    f = load_fabric("gpu-pod")
    n = 8 * f.n_hosts
    r = simulate(f, Placement.block(f, n, ppn=8), shift(n, 1 << 24, k=8))
    assert np.allclose(r.pairs["bandwidth"], 48e9)


@pytest.mark.parametrize("size", [1 << 20, 1 << 24])
def test_flat_ring_allreduce_on_eight_nics_is_never_slower_than_on_one(size):
    """Every route used to end on the destination's first NIC: 8 NICs per host made the ring 2.6x slower."""
    spec = dict(links_per_pair=2, capacity=48e9, cores=8, copy_rate=450e9, memory_bw=3.6e12)
    eight = xgft((4, 4), (1, 4), rails=8, rail_optimised=True, **spec)
    one = xgft((4, 4), (1, 4), **spec)
    t = []
    for f in (eight, one):
        n = 8 * f.n_hosts
        t.append(run_program_on(f, Placement.block(f, n, ppn=8), allreduce_ring(n, size)).outcome.makespan)
    assert t[0] <= t[1] * (1 + 1e-9)


def test_railed_fabric_survives_json(tmp_path):
    f = xgft((4, 2), (1, 2), rails=2)
    write_json(f, tmp_path / "f.json")
    g = read_json(tmp_path / "f.json")
    assert g.n_terminals == 16 and np.array_equal(g.terminal_switch, f.terminal_switch)
    assert [g.terminal_name(t) for t in range(3)] == ["h0000[1]", "h0000[2]", "h0001[1]"]


def test_rails_spec_is_counted_before_it_is_built():
    from fabscope.errors import FabricError

    s = xgft_size((64, 64, 64), (1, 64, 64), rails=8, rail_optimised=True)
    assert s.hosts == 64 ** 3
    with pytest.raises(FabricError, match="links"):
        load_fabric("fat-tree:k=200,levels=4,rails=8")


@pytest.mark.parametrize("spec", ["itasca:leaves=18,host_ports=2", "director:radix=12,host_ports=2"])
def test_dual_port_hosts_on_director_style_fabrics_stripe_over_both_links(spec):
    f = load_fabric(spec)
    assert set(f.host_n_ports.tolist()) == {2}
    # the two ports of a host on two switches
    assert np.all(f.terminal_switch[0::2] != f.terminal_switch[1::2])
    n = f.n_hosts
    pl = Placement.block(f, n, ppn=1)
    one = simulate(f, pl, shift(n, 1 << 20, k=1), ports="rank").pairs["bandwidth"]
    two = simulate(f, pl, shift(n, 1 << 20, k=1), ports="stripe").pairs["bandwidth"]
    link = f.link_capacity[0]
    assert np.allclose(one, link) and np.all(two > 1.5 * link) and np.all(two <= 2 * link * (1 + 1e-9))


def test_host_ports_must_split_the_switches_evenly():
    from fabscope.errors import FabricError

    with pytest.raises(FabricError, match="the 67 leaves do not split into groups of 2"):
        load_fabric("itasca:host_ports=2")


def test_per_port_tables_and_lids_survive_json(tmp_path):
    from dataclasses import replace

    from fabscope.routing import make_routing

    f = xgft((4, 2), (1, 2), rails=2, rail_optimised=True)
    lft = make_routing(f, "minhop").lft
    f = replace(f, lft=lft, terminal_lid=2 * np.arange(f.n_terminals) + 1, switch_lid=np.arange(f.n_switches) + 100)
    assert f.host_lid.tolist() == (2 * f.host_uplinks[0][:-1] + 1).tolist()      # a host's first port's LID
    write_json(f, tmp_path / "f.json")
    g = read_json(tmp_path / "f.json")
    assert np.array_equal(g.lft, lft) and np.array_equal(g.terminal_lid, f.terminal_lid)
    assert make_routing(g).name == "tables"


def test_cutting_one_port_of_a_dual_port_host_keeps_its_other_port_routed():
    from dataclasses import replace

    from fabscope.routing import make_routing
    from fabscope.whatif import cut_cables

    f = load_fabric("director:radix=12,host_ports=2")
    f = replace(f, lft=make_routing(f, "minhop").lft, terminal_lid=np.arange(f.n_terminals) + 1,
                switch_lid=np.arange(f.n_switches) + 100)
    g, gone = cut_cables(f, ["h0000[2]"])
    assert gone and g.n_terminals == f.n_terminals - 1 and g.lft.shape == (g.n_switches, g.n_terminals)
    assert g.terminal_lid.tolist() == [1] + list(range(3, f.n_terminals + 1))
    n = g.n_hosts
    r = simulate(g, Placement.block(g, n, ppn=1), shift(n, 1 << 20, k=1), "tables", ports="stripe")
    bw = dict(zip(r.pairs["src_host"].tolist(), r.pairs["bandwidth"].tolist()))
    assert bw["h0000"] == pytest.approx(g.link_capacity[0]) and bw["h0001"] == pytest.approx(2 * g.link_capacity[0])


def test_kept_routes_between_ports_of_a_cut_multiport_fabric_are_routes_of_it(capsys):
    """The cut fabric's ports are numbered anew: kept routes find each in the fabric before by its cable
    (port ids were taken for host ids, and the sweep of `fabric critical` failed on a railed tree)."""
    from fabscope.cli import main
    from fabscope.routing import check_routes, make_routing, terminal_routes
    from fabscope.whatif import cut_cables
    from fabscope.whatif.cuts import KeptRoutes, link_map

    f = load_fabric("director:radix=12,host_ports=2")
    g, _ = cut_cables(f, ["h0000[2]", "dir-line01[1]"])
    t = np.arange(g.n_terminals)
    s, d = (x.ravel() for x in np.meshgrid(t, t))
    keep = g.terminal_host[s] != g.terminal_host[d]
    s, d = s[keep], d[keep]
    kept = KeptRoutes(make_routing(f, "minhop"), make_routing(g, "minhop"), link_map(f, g))
    check_routes(g, s, d, terminal_routes(kept, s, d), terminals=True)
    assert main(["fabric", "critical", "--fabric", "fat-tree:k=2,levels=2,rails=2,rail_optimised=1", "--ppn", "1",
                 "--pattern", "shift:k=1"]) == 0
    assert "h0001[2]" in capsys.readouterr().out
