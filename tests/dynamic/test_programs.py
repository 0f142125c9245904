"""Programs: the compiled engine against the Python reference, collectives' shapes, benchmark
definitions by hand, replay files, deadlocks and the CLI."""

import json
import os

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.dynamic import fast
from fabscope.dynamic import programs as pg
from fabscope.dynamic.program import DeadlockError, Program
from fabscope.dynamic.results import message_result, pingpong_result
from fabscope.dynamic.run import run_program_on
from fabscope.errors import TrafficError
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree, torus
from fabscope.traffic.patterns import random_pairs

needs_c = pytest.mark.skipif(not fast.available(), reason=f"compiled engine unavailable: {fast.why_not()}")


@needs_c
@pytest.mark.parametrize("make", [
    lambda n: pg.pingpong(*_pairs(n), 2**20, 4, n_ranks=n),
    lambda n: pg.allreduce_ring(n, 8e6),
    lambda n: pg.allreduce_recursive_doubling(n, 8e6),
    lambda n: pg.alltoall_pairwise(n, 1e5),
    lambda n: pg.alltoall_bruck(n, 1e5),
    lambda n: pg.bcast_binomial(n, 1e6),
    lambda n: pg.random_messaging(n, 5, seed=3),
    lambda n: pg.bucket_brigade(n, 1e6, 3),
    lambda n: pg.window(*_pairs(n), 1e5, 3, window=8, n_ranks=n),
])
def test_compiled_engine_equals_python_reference(make, itasca_fabric):
    n = 32
    for f, ppn in ((itasca_fabric, 8), (torus((4, 4, 3)), 1)):
        pl = Placement.block(f, n, ppn=ppn)
        prog = make(n)
        a = run_program_on(f, pl, prog, engine="python").outcome
        b = run_program_on(f, pl, prog, engine="c").outcome
        np.testing.assert_allclose(b.msg_end, a.msg_end, rtol=1e-9)
        np.testing.assert_allclose(b.step_end, a.step_end, rtol=1e-9)
        np.testing.assert_allclose(b.delivered, prog.bytes, rtol=1e-9)


@needs_c
@pytest.mark.parametrize("sharing", ["maxmin", "count"])
def test_compiled_engine_equals_python_reference_at_scale(sharing, itasca_fabric):
    """1,024 ranks at 8 per node on Itasca, ping-pong with latencies: thousands of flows finish and
    start, their slots reused, refills spreading over leaves and directors."""
    n = 1024
    pl = Placement.block(itasca_fabric, n, ppn=8)
    prog = pg.pingpong(*_pairs(n), 2**20, 3, n_ranks=n)
    a = run_program_on(itasca_fabric, pl, prog, engine="python", sharing=sharing).outcome
    b = run_program_on(itasca_fabric, pl, prog, engine="c", sharing=sharing).outcome
    assert a.events > 10 * prog.n_messages / 4                 # rates changed many times
    assert b.events == a.events                                # the same live events (no stale ones counted)
    np.testing.assert_allclose(b.msg_end, a.msg_end, rtol=1e-9)
    np.testing.assert_allclose(b.delivered, prog.bytes, rtol=1e-9)


def _pairs(n):
    t = random_pairs(n, 1.0, seed=5)
    m = t.n_flows // 2
    return t.src[:m], t.dst[:m]


def test_pingpong_alone_by_hand():
    # one pair alone: each message takes latency + size / link rate; the benchmark's bandwidth is
    # 2 x size x iterations over the time of `iterations` round trips = size / (latency + size / B)
    f = fat_tree(k=2, levels=2)
    run = run_program_on(f, Placement.block(f, 4, ppn=1), pg.pingpong([3], [0], 1e6, 7, warmup=2))
    r = pingpong_result(f, run)
    lat, B = run.paths.latency, float(f.link_capacity[0])
    assert np.allclose(lat, lat[0])
    assert r.pairs["src"].tolist() == [0] and r.pairs["dst"].tolist() == [3]       # lower rank first
    assert r.pairs["bandwidth"][0] == pytest.approx(1e6 / (lat[0] + 1e6 / B), rel=1e-12)
    assert r.pairs["time"][0] == pytest.approx(2 * (lat[0] + 1e6 / B), rel=1e-12)
    assert r.meta["kind"] == "dynamic"


def test_pingpong_directions_alternate_unlike_the_snapshot():
    # one uplink per leaf.  Pair (0, 1) sends first from leaf 0 to leaf 1, pair (2, 3) from leaf 1
    # to leaf 0.  The static snapshot keeps both directions of both pairs in flight: 2 flows on
    # each direction of the uplink, half the rate each.  In time, the pairs' messages always go
    # opposite ways (full duplex): each message alone on its directed links, at the full rate.
    from fabscope.model.simulate import simulate
    from fabscope.traffic.flows import Traffic

    f = fat_tree(k=4, levels=2, up=1)
    hosts = [f.host_names[i] for i in (0, 4, 5, 1)]           # ranks 0, 3 on leaf 0; 1, 2 on leaf 1
    pl = Placement.from_hostlist(f, hosts)
    a, b = np.array([0, 2]), np.array([1, 3])
    dyn = pingpong_result(f, run_program_on(f, pl, pg.pingpong(a, b, 2**20, 20)))
    static = simulate(f, pl, Traffic.build("p", a, b, 2**20, pingpong=True))
    C = f.link_capacity[0]
    assert static.pairs["bandwidth"] == pytest.approx([C / 2, C / 2])
    lat = run_program_on(f, pl, pg.pingpong(a, b, 2**20, 1)).paths.latency[0]
    assert dyn.pairs["bandwidth"] == pytest.approx([2**20 / (lat + 2**20 / C)] * 2, rel=1e-9)


def test_collective_shapes():
    n = 12
    rd = pg.allreduce_recursive_doubling(n, 800.0)         # 4 extra ranks fold in and out of 8
    assert rd.n_messages == 4 + 8 * 3 + 4
    bk = pg.alltoall_bruck(n, 10.0)                         # ceil(log2 12) = 4 rounds
    assert bk.n_messages == 4 * n
    assert bk.bytes.sum() == pytest.approx(10.0 * n * sum(bin(i).count("1") for i in range(n)))
    bc = pg.bcast_binomial(n, 5.0)
    assert bc.n_messages == n - 1 and sorted(bc.dst.tolist()) == list(range(1, n))
    pw = pg.alltoall_pairwise(n, 10.0)
    pairs = set(zip(pw.src.tolist(), pw.dst.tolist()))
    assert len(pairs) == n * (n - 1)
    with pytest.raises(Exception, match="no algorithm 'tree'"):
        pg.collective("allreduce", "tree", 8, 1.0)


def test_bucket_brigade_is_a_chain():
    # 4 ranks, one 1 MB message passed down a line of hosts on one switch: 3 hops in sequence
    f = fat_tree(k=4, levels=2)
    run = run_program_on(f, Placement.block(f, 4, ppn=1), pg.bucket_brigade(4, 1e6, 1))
    per = run.paths.latency[0] + 1e6 / f.link_capacity[0]
    assert run.outcome.makespan == pytest.approx(3 * per, rel=1e-9)


def test_replay_matrix_and_trace(tmp_path):
    f = fat_tree(k=4, levels=2)
    pl = Placement.block(f, 4, ppn=1)
    csv = tmp_path / "m.csv"
    csv.write_text("0,1000,0,0\n0,0,0,0\n0,0,0,500\n0,0,0,0\n")
    prog = pg.replay_matrix(str(csv))
    assert prog.n_messages == 2
    trace = tmp_path / "t.csv"
    trace.write_text("time,src,dst,bytes\n0.0,0,1,1e6\n0.01,2,3,1e6\n")
    run = run_program_on(f, pl, pg.replay_trace(str(trace)))
    assert run.outcome.msg_post.tolist() == [0.0, 0.01]
    r = message_result(f, run)
    assert r.pairs["bandwidth"][0] == pytest.approx(1e6 / (run.paths.latency[0] + 1e6 / f.link_capacity[0]))
    bad = tmp_path / "bad.csv"
    bad.write_text("0.0,0,1,10\nnonsense\n")
    with pytest.raises(Exception, match="bad.csv:2: .* is not 'time,src,dst,bytes'"):
        pg.replay_trace(str(bad))


@needs_c
def test_deadlock_in_compiled_engine():
    prog = Program.from_ops("cycle", [[[("recv", 1)], [("send", 1, 8)]], [[("recv", 0)], [("send", 0, 8)]]])
    f = fat_tree(k=2, levels=2)
    with pytest.raises(DeadlockError, match="ranks 0, 1 wait"):
        run_program_on(f, Placement.block(f, 2, ppn=1), prog, engine="c")


# ---- the CLI -------------------------------------------------------------------------------
def test_cli_dynamic_pingpong_writes_result(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["simulate", "--fabric", "itasca", "--pattern", "random-pairs", "--ranks", "64", "--ppn", "8",
                 "--dynamic", "--iterations", "5", "--seed", "7", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["meta"]["kind"] == "dynamic" and doc["meta"]["benchmark"] == "ping-pong"
    assert doc["meta"]["program_params"]["iterations"] == 5
    assert {"src", "dst", "src_host", "dst_host", "cls", "bytes", "bandwidth", "time"} <= set(doc["pairs"])
    assert len(doc["pairs"]["src"]) == 32
    assert "Same Leaf" in capsys.readouterr().out


def test_cli_dynamic_collective_names_algorithm(capsys):
    assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2", "--ppn", "1", "--pattern",
                 "alltoall:bruck", "--dynamic", "--size", "64KiB"]) == 0
    assert "alltoall (bruck)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, msg", [
    (["--pattern", "allreduce:nope"], "allreduce has no algorithm 'nope'"),
    (["--pattern", "random-pairs", "--iterations", "0"], "--iterations must be at least 1"),
    (["--pattern", "replay:/nonexistent.csv"], "nonexistent"),
])
def test_cli_dynamic_bad_input_one_line(argv, msg, capsys, tmp_path):
    out = tmp_path / "x.json"
    rc = main(["simulate", "--fabric", "fat-tree:k=4,levels=2", "--ppn", "1", "--dynamic", "-o", str(out), *argv])
    err = capsys.readouterr().err
    assert rc != 0 and msg in err and len(err.strip().splitlines()) == 1 and err.startswith("fabscope: error:")
    assert not os.path.exists(out)


def test_program_steps_by_counting_equal_the_sort():
    """Program.from_arrays numbers a program's steps by counting where its (rank, round) keys are
    dense and by np.unique elsewhere: the same arrays either way, on keys dense, sparse and at
    the edge between."""
    from fabscope.dynamic.program import _unique

    rng = np.random.default_rng(5)
    for n, span in ((1, 1), (7, 3), (1000, 40), (1000, 4000), (1000, 4001), (3000, 10**9)):
        keys = rng.integers(0, span, n)
        u, i = _unique(keys)
        want_u, want_i = np.unique(keys, return_inverse=True)
        np.testing.assert_array_equal(u, want_u)
        np.testing.assert_array_equal(i, want_i)
        assert u.dtype == want_u.dtype and i.dtype == want_i.dtype


def test_negative_round_refused_in_one_line():
    with pytest.raises(TrafficError, match="has round -1; rounds count from 0"):
        Program.from_arrays("x", 2, [0, 1], [1, 0], [8.0, 8.0], [0, -1])
