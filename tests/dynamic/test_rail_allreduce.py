"""The rail-aligned allreduce on rail-optimised pods: each inter-node ring on its own NIC and rail."""

import numpy as np
import pytest

from fabscope.dynamic.programs import allreduce_rail, allreduce_rail_tree, allreduce_ring, collective
from fabscope.dynamic.run import run_program_on
from fabscope.errors import TrafficError
from fabscope.fabric.generators import xgft
from fabscope.fabric.placement import Placement

#: the gpu-pod preset's hosts and links on 8 leaves of 2 nodes: 8 NICs of 48 GB/s per node, NVLink copies
POD = dict(links_per_pair=2, capacity=48e9, cores=8, copy_rate=450e9, memory_bw=3.6e12)
NIC = 48e9


def _pods():
    return xgft((2, 4), (1, 4), rails=8, rail_optimised=True, **POD), xgft((2, 4), (1, 4), **POD)


def _time(f, prog, engine="c"):
    return run_program_on(f, Placement.block(f, prog.n_ranks, ppn=8), prog, engine=engine).outcome.makespan


@pytest.mark.parametrize("size, nic_gain", [(1 << 24, 3.5), (1 << 30, 4.5)])
def test_rail_allreduce_beats_the_flat_ring_by_the_injection_ratio_and_never_the_ideal(size, nic_gain):
    """8 NICs against 1: the rail version gains what its inter-node rings gain (8x) less its on-node
    phases (at NVLink's 450 GB/s, not overlapped) and, at 16 MiB, the latency of its 268 rounds."""
    eight, one = _pods()
    n_nodes = eight.n_hosts
    n = 8 * n_nodes
    # bytes each node must send and receive in any allreduce, over its injection bandwidth
    ideal = 2 * (n_nodes - 1) / n_nodes * size / NIC
    t = {}
    for nics, f in ((8, eight), (1, one)):
        for prog in (allreduce_ring(n, size), allreduce_rail(n, size, ppn=8)):
            a, b = _time(f, prog, "python"), _time(f, prog, "c")
            assert a == pytest.approx(b, rel=1e-9)
            t[nics, prog.params["algorithm"]] = a
            assert a >= ideal / nics
    assert t[8, "ring"] == pytest.approx(t[1, "ring"], rel=1e-9)   # one message leaves a node per step
    assert t[8, "ring"] / t[8, "rail"] >= 4
    assert t[1, "rail"] / t[8, "rail"] >= nic_gain


def test_ring_i_of_the_rail_allreduce_rides_nic_i_and_stays_on_its_rail():
    eight, _ = _pods()
    n = 8 * eight.n_hosts
    for ports in ("rank", "rail"):
        run = run_program_on(eight, Placement.block(eight, n, ppn=8), allreduce_rail(n, 1 << 20, ppn=8),
                             ports=ports)
        prog, paths = run.program, run.paths
        across = np.flatnonzero(prog.src // 8 != prog.dst // 8)
        assert len(across) == 2 * n * (eight.n_hosts - 1)
        assert np.all(run.rail[across] == 0) and np.all(prog.src[across] % 8 == prog.dst[across] % 8)
        first = np.array([paths.resources(p)[0] for p in run.msg_path[across]])
        nic = eight.terminal(prog.src[across] // 8, prog.src[across] % 8)
        assert np.array_equal(first, eight.terminal_uplink[nic])


def test_rail_allreduce_program_rounds():
    p = allreduce_rail(12, 12e6, ppn=3)         # 4 nodes of 3
    node, local = np.divmod(p.src, 3)
    on = p.src // 3 == p.dst // 3
    assert np.array_equal(p.dst[on], node[on] * 3 + (local[on] + 1) % 3)
    assert np.all(p.bytes[on] == 4e6) and on.sum() == 2 * 12 * 2
    assert np.array_equal(p.dst[~on], (node[~on] + 1) % 4 * 3 + local[~on])
    assert np.all(p.bytes[~on] == 1e6) and (~on).sum() == 2 * 12 * 3
    # reduce-scatter on the node, the rings, then the allgather on the node
    assert np.array_equal(np.unique(p.step_round[p.send_step[on]]), [0, 1, 8, 9])
    flat = allreduce_ring(12, 12e6)
    one = allreduce_rail(12, 12e6, ppn=1)
    assert all(np.array_equal(getattr(one, k), getattr(flat, k)) for k in ("src", "dst", "bytes", "send_step"))
    assert collective("allreduce", "rail", 12, 12e6, ppn=3).n_messages == p.n_messages
    with pytest.raises(TrafficError, match="ranks per node"):
        collective("allreduce", "rail", 12, 12e6)


def test_simulate_cli_runs_the_rail_allreduce_and_refuses_ranks_not_node_by_node(tmp_path, capsys):
    import json

    from fabscope.cli import main

    fab = "fat-tree:k=4,levels=2,rails=2,rail_optimised=1"
    out = tmp_path / "rail.json"
    assert main(["simulate", "--fabric", fab, "--ppn", "2", "--pattern", "allreduce:rail", "--size", "1MiB",
                 "--dynamic", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    # 16 nodes of 2: every message between nodes on its rail, those on a node (class 2) 2 * 32 * 1
    assert sorted(doc["pairs"]["rail"]) == [0] * (2 * 32 * 15) + [2] * (2 * 32 * 1)
    capsys.readouterr()
    assert main(["simulate", "--fabric", fab, "--ppn", "2", "--placement", "cyclic", "--pattern",
                 "allreduce:rail", "--dynamic"]) != 0
    err = capsys.readouterr().err
    assert "allreduce:rail needs 2 ranks on every node" in err and len(err.strip().splitlines()) == 1



def test_rail_tree_moves_every_piece_once_along_every_tree_cable_after_it_arrived():
    """Each rail's binary tree over 6 nodes (depth 2): every piece goes up each tree cable once,
    after the sender's children sent it up, and down once, after the sender's parent sent it down."""
    ppn, n_nodes, c = 3, 6, 4
    p = allreduce_rail_tree(ppn * n_nodes, 12e6, ppn=ppn, pieces=c, trees=1)
    across = p.src // ppn != p.dst // ppn
    assert np.all(p.bytes[across] == 12e6 / ppn / c)
    assert np.all(p.src[across] % ppn == p.dst[across] % ppn)          # tree i on local rank i
    rnd = p.step_round[p.send_step]
    a, b = p.src[across] // ppn, p.dst[across] // ppn
    up = a > b
    assert np.all(np.where(up, (a - 1) // 2 == b, (b - 1) // 2 == a))    # only tree cables
    for kid in range(1, n_nodes):                                        # 4 pieces up, 4 down, per rail
        assert np.sum(up & (a == kid)) == np.sum(~up & (b == kid)) == ppn * c
    first = (ppn - 1)                                                    # rounds of the on-node phase
    for i in range(ppn):
        sel = across & (p.src % ppn == i)
        s, d, r = p.src[sel] // ppn, p.dst[sel] // ppn, rnd[sel] - first
        u = s > d
        for kid in range(1, n_nodes):
            sent_up = np.sort(r[u & (s == kid)])                          # piece c at the c-th of them
            for g in (2 * kid + 1, 2 * kid + 2):                          # its children sent it before
                if g < n_nodes:
                    assert np.all(np.sort(r[u & (s == g)]) < sent_up)
            got_down = np.sort(r[~u & (d == kid)])
            par = (kid - 1) // 2
            if par > 0:
                assert np.all(np.sort(r[~u & (d == par)]) < got_down)
            assert np.all(np.sort(r[u & (d == 0)])[-1] < np.sort(r[~u & (s == 0)])[-1])
    assert int(p.step_round.max()) + 1 == 2 * (ppn - 1) + 2 * 2 + c - 1
    with pytest.raises(TrafficError, match="ranks per node"):
        collective("allreduce", "rail-tree", 12, 12e6)
    with pytest.raises(TrafficError, match="nodes of 5"):
        allreduce_rail_tree(12, 1.0, ppn=5)


@pytest.mark.parametrize("n_nodes", [2, 5, 6, 7])
def test_the_double_tree_is_the_tree_and_its_mirror_each_with_half(n_nodes):
    """NCCL's double binary tree: the second tree is the first with node k at N-1-k, each with
    half of the vector; no node is inside both (it would send every piece down twice twice)."""
    ppn, c = 2, 3
    n = ppn * n_nodes
    two = allreduce_rail_tree(n, 12e6, ppn=ppn, pieces=c)
    one = allreduce_rail_tree(n, 6e6, ppn=ppn, pieces=c, trees=1)

    def across(p, mirror=False):
        sel = p.src // ppn != p.dst // ppn
        s, d = p.src[sel], p.dst[sel]
        if mirror:
            s, d = (n_nodes - 1 - s // ppn) * ppn + s % ppn, (n_nodes - 1 - d // ppn) * ppn + d % ppn
        return sorted(zip(s.tolist(), d.tolist(), p.step_round[p.send_step[sel]].tolist(), p.bytes[sel].tolist()))
    assert across(two) == sorted(across(one) + across(one, mirror=True))
    on = two.src // ppn == two.dst // ppn
    assert np.all(two.bytes[on] == 12e6 / ppn)
    down = lambda p: {int(x) for x in p.src[(p.src // ppn != p.dst // ppn) & (p.src < p.dst)] // ppn}  # noqa: E731
    inner = down(one)                                  # nodes that send down in the first tree
    assert not inner & {n_nodes - 1 - x for x in inner}


def test_rail_tree_beats_the_rail_ring_where_rounds_cost_more_than_bytes():
    """On 8 nodes of 8 NICs: the tree's 2 D + C - 1 = 6 rounds against the ring's 2 (N - 1) = 14 win
    while latency rules (64 KiB); at 1 GiB the ring, which sends each byte once per node where an
    interior tree node sends a piece up and two down, is ahead.  Both engines agree."""
    eight, _ = _pods()
    n = 8 * eight.n_hosts
    t = {}
    for size in (1 << 16, 1 << 30):
        for prog in (allreduce_rail(n, size, ppn=8), allreduce_rail_tree(n, size, ppn=8)):
            t[size, prog.params["algorithm"]] = _time(eight, prog)
    assert t[1 << 16, "rail-tree"] < 0.8 * t[1 << 16, "rail"]
    assert t[1 << 30, "rail"] < t[1 << 30, "rail-tree"] < 2 * t[1 << 30, "rail"]
    prog = allreduce_rail_tree(n, 1 << 22, ppn=8)
    assert _time(eight, prog, "python") == pytest.approx(_time(eight, prog, "c"), rel=1e-9)


def test_simulate_cli_runs_the_rail_tree(capsys):
    from fabscope.cli import main

    fab = "fat-tree:k=4,levels=2,rails=2,rail_optimised=1"
    assert main(["simulate", "--fabric", fab, "--ppn", "2", "--pattern", "allreduce:rail-tree", "--size", "1MiB",
                 "--dynamic"]) == 0
    assert "allreduce (rail-tree)" in capsys.readouterr().out
    assert main(["simulate", "--fabric", fab, "--ppn", "2", "--placement", "cyclic", "--pattern",
                 "allreduce:rail-tree", "--dynamic"]) != 0
    assert "allreduce:rail-tree needs 2 ranks on every node" in capsys.readouterr().err
