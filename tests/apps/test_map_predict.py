"""``fabscope map --predict``: an application's predicted time per iteration beside the mapping metrics."""

import io
import json
import sys

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.mapping.apprun import read_app_run
from fabscope.mapping.commspec import load_comm
from fabscope.mapping.predict import app_program

from .apprun_files import write_run

TREE = "fat-tree:k=4,levels=2,up=1"        # 16 hosts, 4 leaves of 4, one up-link per leaf (the testbed's shape)
HOSTS = [f"h{i:04d}" for i in range(16)]


@pytest.fixture(autouse=True)
def _no_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))      # no host file on standard input


def _map(tmp_path, capsys, comm, *extra):
    out = tmp_path / "m.json"
    rc = main(["map", "--fabric", TREE, "--ppn", "1", "--comm", str(comm), "--compare", "block,random",
               "--predict", "--json", str(out), *extra])
    text = capsys.readouterr()
    assert rc == 0, text.err
    return text.out, json.loads(out.read_text())


def test_halo2d_predicted_order_map_block_random(tmp_path, capsys):
    """halo2d 4x4 (not periodic) on the 16-host tree: fabscope's mapping (2x2 tiles a leaf: 4 halos
    leave a leaf) is predicted faster than block (a row a leaf: up to 8), block faster than random."""
    run = write_run(tmp_path / "halo.jsonl", "halo2d", HOSTS, [1e-3] * 10, iterations=10,
                    params={"dims": [4, 4], "periodic": [False, False], "compute": 0})
    out, doc = _map(tmp_path, capsys, run)
    t = {r["algorithm"]: r["predicted_iteration"] for r in doc["rows"]}
    chosen = doc["rows"][-1]["algorithm"]
    assert t[chosen] < t["block"] < t["random"]
    assert t["block"] / t[chosen] == pytest.approx(2.0, rel=0.05)     # 8 halos over the up-link against 4
    assert doc["predict"]["program"] == "kernel halo2d"
    assert doc["predict"]["order"] == [chosen, "block", "random"]
    assert doc["predict"]["iterations"] == 10 and doc["predict"]["warmup"] == 2
    assert "kernel halo2d" in out and f"predicted order: {chosen} < block < random" in out
    assert "iter ms" in out


def test_kernel_and_generic_programs_agree_on_a_halo(tmp_path):
    """The halo kernel posts all its halos at once, as the generic graph program does: same times."""
    from fabscope.fabric.generators import fat_tree
    from fabscope.mapping.predict import predict_iteration

    path = write_run(tmp_path / "halo.jsonl", "halo2d", HOSTS, [1e-3] * 5,
                     params={"dims": [4, 4], "periodic": [True, True]})
    run = read_app_run(path)
    g = load_comm(path)
    kern, how = app_program(run, g)
    gen, how2 = app_program(None, g, iterations=run.iterations)      # the run's graph is one iteration's
    assert how == "kernel halo2d" and how2.startswith("generic")
    f = fat_tree(k=4, levels=2, up=1)
    host = np.random.default_rng(1).permutation(16)
    a, b = predict_iteration(f, host, kern), predict_iteration(f, host, gen)
    assert a.median == pytest.approx(b.median, rel=1e-9)


def test_mismatched_traffic_uses_the_generic_program(tmp_path, capsys):
    """A halo2d record whose traffic is not a 4x4 halo's of its size (here: twice the bytes)."""
    g = load_comm("stencil2d:4x4,halo=1000")
    sent = [[int(s), int(d), 1000 * 7] for s, d in zip(g.src, g.dst)]
    wrong = write_run(tmp_path / "wrong.jsonl", "halo2d", HOSTS, [1e-3] * 5, size=500, sent=sent, counted=7,
                      params={"dims": [4, 4]})
    out, doc = _map(tmp_path, capsys, wrong)
    assert doc["predict"]["program"].startswith("generic")
    assert "not what fabscope's halo2d program sends" in doc["predict"]["program"]
    assert "generic: the graph wrong.jsonl per iteration" in out


def test_predict_a_pmpi_matrix_per_iteration(tmp_path, capsys):
    """A matrix of a whole run with --iterations N: each iteration sends 1/N of it."""
    m = tmp_path / "m.csv"
    m.write_text("0,4e6,0,0\n0,0,0,0\n0,0,0,0\n0,0,0,0\n")
    times = []
    for n in (1, 4):
        out = tmp_path / f"m{n}.json"
        assert main(["map", "--fabric", "fat-tree:k=4,levels=1", "--ppn", "1", "--comm", str(m), "--predict",
                     "--iterations", str(n), "--json", str(out)]) == 0
        times.append(json.loads(out.read_text())["rows"][0]["predicted_iteration"])
    capsys.readouterr()
    assert times[0] / times[1] == pytest.approx(4.0, rel=0.01)


@pytest.mark.parametrize("make,extra,msg", [
    (lambda p: write_run(p, "halo2d", HOSTS, [1e-3], app=False, traffic=False), [], "no application record"),
    (lambda p: write_run(p, "halo2d", HOSTS, [1e-3], traffic=False, params={"dims": [4, 4]}), [],
     "no application record (an 'app' line and its 'app-traffic' line)"),
    (lambda p: write_run(p, "my-solver", HOSTS, [1e-3], sent=[[0, 1, 8]]), [],
     "'my-solver' is not an application kernel"),
    (lambda p: write_run(p, "evil\x1b[2J", HOSTS, [1e-3], sent=[[0, 1, 8]]), [], "is not an application kernel"),
    (lambda p: write_run(p, "fft-transpose", HOSTS, [1e-3], sent=[[0, 1, 8]], params={"dims": [4, 2]}), [],
     "'dims' [4, 2] do not make 16 ranks"),
    (lambda p: write_run(p, "halo2d", HOSTS, [1e-3], params={"dims": [4, 4]}), ["--model-iterations", "0"],
     "--model-iterations must be >= 1"),
])
def test_bad_input_one_line_nothing_written(tmp_path, capsys, make, extra, msg):
    path = make(tmp_path / "run.jsonl")
    out = tmp_path / "m.json"
    rc = main(["map", "--fabric", TREE, "--ppn", "1", "--comm", path, "--predict", "--json", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 1 and msg in err and len(err.strip().splitlines()) == 1 and "\x1b" not in err
    assert not out.exists()


@pytest.mark.parametrize("size", [1024.0, 1 << 20])
def test_allreduce_loop_takes_the_algorithm_its_traffic_shows(tmp_path, size):
    """An allreduce-loop run's counted bytes say the algorithm: a ring's (what the PMPI library assumes:
    2 (n - 1) chunks of size / n to the right) or recursive doubling's (size to r xor 1, 2, 4)."""
    n, counted = 8, 3
    ring = [[r, (r + 1) % n, 2 * (n - 1) * size / n * counted] for r in range(n)]
    rd = [[r, r ^ k, size * counted] for r in range(n) for k in (1, 2, 4)]
    for sent, algo in ((ring, "ring"), (rd, "recursive-doubling")):
        path = write_run(tmp_path / f"{algo}.jsonl", "allreduce-loop", HOSTS[:n], [1e-3] * 2, size=size,
                         warmup=1, sent=sent, counted=counted)
        run = read_app_run(path)
        prog, how = app_program(run, run.graph())
        assert how == f"kernel allreduce-loop ({algo})" and prog.params["algorithm"] == algo


def test_predict_by_a_replayed_trace(tmp_path, capsys):
    """Rank 0 sends 4 MB to 1, 2 and 3 at time 0 (one host link shared by 3): 3 x 4 MB / C; the
    trace holds 2 iterations: half of it per iteration."""
    from fabscope.fabric.generators import fat_tree

    cap = float(fat_tree(k=4, levels=1).link_capacity[0])
    tr = tmp_path / "trace.csv"
    tr.write_text("time,src,dst,bytes\n0,0,1,4e6\n0,0,2,4e6\n0,0,3,4e6\n")
    out = tmp_path / "t.json"
    assert main(["map", "--fabric", "fat-tree:k=4,levels=1", "--ppn", "1", "--comm", "ring:4", "--trace", str(tr),
                 "--iterations", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["predict"]["program"].startswith("the trace") and "replayed trace's time" in text
    t = doc["rows"][0]["predicted_iteration"]
    assert 3 * 4e6 / cap / 2 < t < 3 * 4e6 / cap / 2 + 5e-6
    tr.write_text("0,0,9,4e6\n")
    assert main(["map", "--fabric", "fat-tree:k=4,levels=1", "--ppn", "1", "--comm", "ring:4", "--trace", str(tr),
                 "--json", str(out)]) == 1
    err = capsys.readouterr().err
    assert "names rank 9; the job has 4 ranks" in err and len(err.strip().splitlines()) == 1


def test_a_compared_mapping_predicted_faster_than_the_chosen_is_said(tmp_path, capsys):
    run = write_run(tmp_path / "halo.jsonl", "halo2d", HOSTS, [1e-3] * 3, params={"dims": [4, 4]})
    out = tmp_path / "m.json"
    assert main(["map", "--fabric", TREE, "--ppn", "1", "--comm", run, "--algorithm", "random", "--compare", "block",
                 "--predict", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "# note: block is predicted faster than the chosen random" in text
    assert json.loads(out.read_text())["predict"]["faster_than_chosen"] == "block"
    _, doc = _map(tmp_path, capsys, run)          # topo's choice, fastest: no note
    assert "faster_than_chosen" not in doc["predict"]
