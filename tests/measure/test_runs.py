"""Real MPI jobs of 2 and 4 ranks on this host, checked for what they measure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.errors import FabscopeError, MeasureError
from fabscope.fabric.model import FabricBuilder, Level
from fabscope.measure.analysis import classify
from fabscope.measure.parse import read_run, to_result
from fabscope.measure.runner import measure

JOB_TIMEOUT = 60


def errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("fabscope-bench: error:")]

pytestmark = pytest.mark.mpi
SANE = 1e12  # 1 TB/s: no pair on this host gets near it


def pairs_of(run, test="random-pairs"):
    return [(r["src"], r["dst"], r["scenario"]) for r in run.of(test, "pair")]


def test_random_pairs_every_rank_once_per_round(bench):
    p, out = bench.run(4, "random-pairs", "--size", "65536", "--iterations", "20", "--rounds", "3", "--validate")
    assert p.returncode == 0, p.stderr
    run = read_run(out)
    assert run.complete and run.tests == ["random-pairs"]
    for k in range(3):
        ranks = [x for s, d, sc in pairs_of(run) if sc == k for x in (s, d)]
        assert sorted(ranks) == [0, 1, 2, 3]  # a perfect matching: every rank in exactly one pair
    bw = np.array([r["bandwidth"] for r in run.of("random-pairs")])
    assert np.all(bw > 0) and np.all(bw < SANE)
    # reproducible by seed
    p2, out2 = bench.run(4, "random-pairs", "--size", "8", "--iterations", "2", "--rounds", "3", name="again.jsonl")
    assert [(s, d) for s, d, _ in pairs_of(read_run(out2))] == [(s, d) for s, d, _ in pairs_of(run)]


def test_pingpong_sweep_is_sane(bench):
    p, out = bench.run(2, "pingpong", "--max-size", "1048576", "--iterations", "200")
    assert p.returncode == 0, p.stderr
    recs = read_run(out).of("pingpong", "size")
    sizes = [r["bytes"] for r in recs]
    assert sizes[0] == 0 and sizes[-1] == 1 << 20 and len(sizes) == 22
    lat = {r["bytes"]: r["latency"] for r in recs}
    bw = {r["bytes"]: r["bandwidth"] for r in recs}
    assert 0 < lat[8] < 1e-3 and lat[1 << 20] > lat[8]
    assert bw[1 << 20] > bw[8] and bw[1 << 20] < SANE


def test_leaf_offset_and_hops_pair_the_right_ranks(bench):
    # 4 ranks as endpoints, 2 per leaf: offset 1 pairs the n-th of leaf 0 with the n-th of leaf 1
    p, out = bench.run(4, "leaf-offset,hops,all-pairs", "--per-rank", "--leaf-size", "2", "--dims", "4",
                       "--mesh", "--hops", "2", "--size", "4096", "--iterations", "5")
    assert p.returncode == 0, p.stderr
    run = read_run(out)
    assert sorted((s, d) for s, d, _ in pairs_of(run, "leaf-offset")) == [(0, 2), (1, 3)]
    assert sorted((s, d) for s, d, _ in pairs_of(run, "hops")) == [(0, 2), (1, 3)]
    assert len(pairs_of(run, "all-pairs")) == 12  # every ordered pair of 4 ranks once
    assert len(set((s, d) for s, d, _ in pairs_of(run, "all-pairs"))) == 12


def test_classes_for_known_placements(bench):
    p, out = bench.run(2, "random-pairs", "--size", "8", "--iterations", "2")
    run = read_run(out)
    host = run.ranks["host"][0]
    # without a fabric: both ranks on this host -> intra- or inter-socket, never inter-node
    r = to_result(run)
    assert r.class_labels[int(r.pairs["cls"][0])] in ("Intra-socket", "Inter-socket")
    # a fabric that names this host: the pair is "Same Node"; another host is on the same leaf
    b = FabricBuilder("two")
    h = b.add_hosts([host, "other"])
    s = b.add_switch("leaf", level=1)
    b.cable(h[0], s, 1e9)
    b.cable(h[1], s, 1e9)
    f = b.build(groups={"leaf": [0, 0]}, levels=[Level("leaf", "Same Leaf")])
    assert to_result(run, fabric=f).class_labels[int(to_result(run, fabric=f).pairs["cls"][0])] == "Same Node"
    fake = type(run)(run.path, run.header, {"host": [host, "other"], "socket": [0, 0]})
    assert classify(fake, np.array([0]), np.array([1]), f)[0].tolist() == [1]
    fake.ranks["socket"] = [0, 1]
    fake.ranks["host"] = [host, host]
    assert classify(fake, np.array([0]), np.array([1]))[0].tolist() == [1]  # inter-socket
    b2 = FabricBuilder("elsewhere")
    h2 = b2.add_hosts(["n1"])
    s2 = b2.add_switch("s")
    b2.cable(h2[0], s2, 1e9)
    with pytest.raises(MeasureError, match="does not name host"):
        to_result(run, fabric=b2.build())


def test_validation_catches_corrupted_data(bench):
    p, out = bench.run(2, "pingpong", "--validate", "--max-size", "4096", "--iterations", "10")
    assert p.returncode == 0, p.stderr
    p, out = bench.run(4, "random-pairs", "--validate", "--size", "4096", "--iterations", "5",
                       env={"FABSCOPE_BENCH_CORRUPT": "1"})
    assert p.returncode == 4
    assert len(errors(p.stderr)) == 1 and "validation failed: 1 corrupted bytes" in p.stderr
    assert read_run(out).error.startswith("validation failed")


@pytest.mark.parametrize("args,code,message", [
    (["nosuchtest"], 2, "unknown test 'nosuchtest'"),
    (["pingpong", "--size", "1Q"], 2, "cannot read size '1Q'"),
    (["leaf-offset"], 3, "needs endpoints on at least 2 leaves"),
    (["hops"], 3, "needs coordinates"),
])
def test_bad_input_one_line_same_code_every_rank(bench, tmp_path, args, code, message):
    codes = tmp_path / "codes"
    codes.mkdir()
    # each rank records its own exit code; Open MPI's mpirun signals the other ranks once
    # one has exited non-zero, so the wrapper ignores that to finish writing
    wrap = ["sh", "-c", f'trap "" TERM HUP INT; "$0" "$@"; c=$?; echo $c > {codes}/$$; exit $c']
    p, out = bench.run(2, *args, wrap=wrap)
    assert p.returncode == code
    lines = errors(p.stderr)
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert sorted(f.read_text().strip() for f in codes.iterdir()) == [str(code)] * 2


def test_topology_file_must_name_the_hosts(bench, tmp_path):
    topo = tmp_path / "topo"
    topo.write_text("# host leaf\nnode1 0\nnode2 1\n")
    p, _ = bench.run(2, "leaf-offset", "--topo", str(topo))
    assert p.returncode == 3 and "is not in topology file" in errors(p.stderr)[0]


def test_python_side_errors_are_one_line(tmp_path, mpi):
    out = tmp_path / "x.jsonl"
    with pytest.raises(FabscopeError, match="does not parse"):
        measure(["random-pairs", "--size", "lots"], np=2, out=out, mpi=mpi)
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost\n")
    with pytest.raises(MeasureError, match="4 ranks, but the 1 hosts of .* allow 1"):
        measure(["pingpong"], np=4, out=out, hostfile=str(hosts), mpi=mpi)
    with pytest.raises(MeasureError, match="unknown test 'bogus'"):
        measure(["bogus"], np=2, out=out, mpi=mpi, timeout=JOB_TIMEOUT)
    from fabscope.fabric.generators import fat_tree
    with pytest.raises(MeasureError, match="does not name host 'localhost'"):
        measure(["leaf-offset"], np=1, out=out, hostfile=str(hosts), fabric=fat_tree(k=2, levels=2), mpi=mpi)


def test_killed_run_leaves_a_readable_partial_file(bench, tmp_path):
    out = tmp_path / "killed.jsonl"
    argv = bench.argv(2, ["random-pairs", "--size", "65536", "--iterations", "50", "--rounds", "100000"], out)
    proc = subprocess.Popen(["timeout", str(JOB_TIMEOUT), *argv], env=bench.env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if out.exists() and out.read_text().count('"type":"pair"') >= 5:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with open(out, "a") as fh:  # as if the kill had cut the last line short
        fh.write('{"type":"pair","test":"random-pairs","src":0,"ds')
    run = read_run(out)
    assert not run.complete and run.truncated and run.status is None
    assert len(run.of("random-pairs", "pair")) >= 5
    assert "incomplete: the job stopped during random-pairs, last line cut" in run.describe()
    assert to_result(run).n_pairs == len(run.of("random-pairs", "pair"))


def test_cli_measure_and_analyze_in_process(tmp_path, capsys, mpi, monkeypatch):
    out = tmp_path / "pp.jsonl"
    res = tmp_path / "pp.json"
    assert main(["measure", "--np", "2", "--timeout", str(JOB_TIMEOUT), "pingpong", "--max-size", "65536",
                 "--iterations", "50", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "latency model" in text and "complete" in text
    assert main(["analyze", str(out), "-o", str(res)]) == 0
    text = capsys.readouterr().out
    assert "pingpong (Intra-socket)" in text or "pingpong (Inter-socket)" in text
    doc = json.loads(res.read_text())
    assert doc["schema"] == "fabscope.result" and doc["meta"]["kind"] == "measure"
    assert main(["measure", "--np", "2", "nosuchtest", "--out", str(out)]) == 1
    assert "unknown test" in capsys.readouterr().err
    # a pair test's table, line by line (the terminal writer printed it as one line with "\n" in it)
    rp = tmp_path / "rp.jsonl"
    assert main(["measure", "--np", "2", "--timeout", str(JOB_TIMEOUT), "random-pairs", "--size", "4096",
                 "--iterations", "5", "--out", str(rp)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not any("\\n" in ln for ln in lines), lines
    assert any(ln.split()[:3] == ["Max", "Average", "Min"] for ln in lines), lines


def test_suite_runs_every_test_on_two_ranks(bench):
    p, out = bench.run(2, "suite", "--iterations", "3", "--warmup", "0", "--max-size", "65536",
                       "--size", "4096", "--stream-n", "100000")
    assert p.returncode == 0, p.stderr
    run = read_run(out)
    assert run.complete
    assert {"pingpong", "bw", "bibw", "mbw", "multi-lat", "random-pairs", "all-pairs", "random-msg",
            "bucket-brigade", "ring", "random-ring", "alltoall", "allreduce", "stream"} <= set(run.tests)
    assert all(run.of(t) for t in run.tests)
    assert {r["mode"] for r in run.of("stream")} == {"all", "single"}
