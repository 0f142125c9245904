"""The rail-aligned allreduce on rail-optimised pods: each inter-node ring on its own NIC and rail."""

import numpy as np
import pytest

from fabscope.dynamic.programs import allreduce_rail, allreduce_ring, collective
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
