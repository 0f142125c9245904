"""Allreduce reduced in the switches (SHARP-style): a tree up and back down, flat in the rank count."""

import numpy as np
import pytest

from fabscope.dynamic import fast
from fabscope.dynamic.innetwork import allreduce_sharp, reduction_tree
from fabscope.dynamic.programs import collective
from fabscope.dynamic.run import run_program_on
from fabscope.errors import TrafficError
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree
from fabscope.routing.distances import switch_distances

F = fat_tree(k=4, levels=3)        # 4 hosts a leaf, 16 a pod, 64 in all


@pytest.mark.parametrize("n,depth", [(2, 1), (4, 1), (5, 2), (16, 2), (17, 3), (64, 3)])
def test_tree_spans_the_job_and_climbs_one_hop_at_a_time(n, depth):
    h = F.n_hosts
    sw, up, d = reduction_tree(F, np.arange(n))
    assert d == depth
    assert up[0] == -1 and np.all(up[1:] >= 0)
    assert set(F.host_switch[:n].tolist()) <= set(sw.tolist())
    dist = switch_distances(F)
    root = sw[0] - h
    for s, link in zip(sw[1:], up[1:]):
        assert F.link_src[link] == s
        assert dist[F.link_dst[link] - h, root] == dist[s - h, root] - 1


def test_every_tree_cable_carries_the_vector_once_each_way():
    size = 1 << 20
    run = allreduce_sharp(F, Placement.block(F, 24, ppn=1), size, chunk=1 << 16)
    prog = run.program
    assert prog.params["pieces"] == 16
    n = 24
    assert prog.bytes[prog.src < n].sum() == pytest.approx(n * size)       # every rank sends its vector
    assert prog.bytes[prog.dst < n].sum() == pytest.approx(n * size)       # and gets the result
    between = (prog.src >= n) & (prog.dst >= n)
    assert prog.bytes[between].sum() == pytest.approx(2 * (len(run.switches) - 1) * size)


def test_time_flat_in_rank_count_at_one_depth_and_near_one_link():
    size = 1 << 20
    link_time = size / F.link_capacity[0]
    t = {n: allreduce_sharp(F, Placement.block(F, n, ppn=1), size).makespan for n in (5, 8, 12, 16, 17, 40, 64)}
    assert t[5] == pytest.approx(t[8]) == pytest.approx(t[12]) == pytest.approx(t[16])
    assert t[17] == pytest.approx(t[40]) == pytest.approx(t[64])
    assert t[16] < t[17] < 1.5 * link_time                                 # one level more: a little later
    # the pipeline fills in 2 (depth + 1) pieces: smaller pieces, nearer one link's time
    fine = allreduce_sharp(F, Placement.block(F, 64, ppn=1), size, chunk=1 << 14).makespan
    assert link_time < fine < 1.15 * link_time
    small = {n: allreduce_sharp(F, Placement.block(F, n, ppn=1), 8.0).makespan for n in (2, 4, 16, 64)}
    assert small[2] == pytest.approx(small[4]) and small[4] < small[16] < small[64]


def test_below_ring_and_recursive_doubling_from_a_few_ranks_on():
    for n in (8, 32):
        pl = Placement.block(F, n, ppn=1)
        for size in (8.0, 1 << 20):
            sharp = allreduce_sharp(F, pl, size).makespan
            for algo in ("ring", "recursive-doubling"):
                assert sharp < run_program_on(F, pl, collective("allreduce", algo, n, size)).outcome.makespan


@pytest.mark.skipif(not fast.available(), reason="compiled engine not built")
def test_both_engines_agree():
    pl = Placement.block(F, 20, ppn=2)
    a = allreduce_sharp(F, pl, 3e5, engine="c")
    b = allreduce_sharp(F, pl, 3e5, engine="python")
    assert a.engine == "c" and b.engine == "python"
    assert np.allclose(a.outcome.msg_end, b.outcome.msg_end, rtol=1e-9)


def test_bad_input_named():
    with pytest.raises(TrafficError, match="at least 2 ranks"):
        allreduce_sharp(F, Placement.block(F, 1, ppn=1), 8.0)
    with pytest.raises(TrafficError, match="size and a chunk"):
        allreduce_sharp(F, Placement.block(F, 4, ppn=1), 0.0)


def test_simulate_runs_allreduce_sharp_and_refuses_outputs_it_cannot_write(capsys, tmp_path):
    from fabscope.cli import main

    argv = ["simulate", "--fabric", "fat-tree:k=4,levels=3", "--ppn", "1", "--pattern", "allreduce:sharp",
            "--dynamic", "--size", "1MiB"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    want = allreduce_sharp(F, Placement.block(F, 64, ppn=1), 1 << 20).makespan
    assert f"allreduce (sharp), 64 ranks, 1 MiB: done at {want * 1e3:.3f} ms" in out
    assert "depth 3" in out
    assert main(argv + ["-o", str(tmp_path / "r.json")]) == 1
    assert "prints its time only; -o" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(TrafficError, match="needs the fabric"):
        collective("allreduce", "sharp", 4, 8.0)
