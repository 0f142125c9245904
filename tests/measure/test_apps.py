"""The application kernels (halo2d, halo3d, fft-transpose, allreduce-loop): real MPI jobs of
4 and 8 ranks on this host, their records, the traffic they count, and the PMPI profiler's
matrix of the same runs.

The expected matrices are worked out here from the grid (who neighbours whom), not from the
program's own arithmetic; the allreduce ring's bytes are the hand-worked figures of
tests/mapping/test_pmpi.py (10 doubles on 4 ranks: chunks of 3, 3, 2, 2).
"""

from __future__ import annotations

import io
import json
import os
import subprocess

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.traffic.commfiles import read_app_comm, read_comm_file
from fabscope.measure.apps import app_runs
from fabscope.measure.parse import read_run, to_result

pytestmark = pytest.mark.mpi
PMPI = os.path.join(os.path.dirname(__file__), "..", "..", "csrc", "pmpi")


def errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("fabscope-bench: error:")]


def grid_neighbours(dims, periodic):
    """(src, dst) of every face a rank sends, rank = row-major index of its grid coordinates (as
    MPI_Cart_create without reordering numbers them), self-faces (extent 1, periodic) left out."""
    dims = list(dims)
    n = int(np.prod(dims))
    out = []
    for r in range(n):
        c = list(np.unravel_index(r, dims))
        for d in range(len(dims)):
            for step in (-1, 1):
                q = list(c)
                q[d] += step
                if not 0 <= q[d] < dims[d]:
                    if not periodic:
                        continue
                    q[d] %= dims[d]
                s = int(np.ravel_multi_index(q, dims))
                if s != r:
                    out.append((r, s))
    return out


def expected(n, faces, per_face):
    m = np.zeros((n, n), np.int64)
    for s, d in faces:
        m[s, d] += per_face
    return m


def run_app(bench, np_, *args, name="out.jsonl", env=None):
    p, out = bench.run(np_, *args, name=name, env=env)
    assert p.returncode == 0, p.stderr
    run = read_run(out)
    assert run.complete
    apps = app_runs(run)
    assert len(apps) == 1
    return apps[0], out


@pytest.mark.parametrize("dims,periodic", [((2, 2), True), ((4, 1), False), ((4, 1), True), ((1, 4), False)])
def test_halo2d_sends_each_face_to_its_neighbour(bench, dims, periodic):
    size, it, warm = 1000, 4, 2
    a, _ = run_app(bench, 4, "halo2d", "--dims", f"{dims[0]}x{dims[1]}", "--periodic", "yes" if periodic else "no",
                   "--size", str(size), "--iterations", str(it), "--warmup", str(warm))
    assert a.iterations_counted == it + warm and a.counted_as == "messages"
    assert a.params["dims"] == list(dims) and a.params["periodic"] == [periodic] * 2
    want = expected(4, grid_neighbours(dims, periodic), size * (it + warm))
    assert np.array_equal(a.sent.toarray(), want), a.sent.toarray()
    assert np.array_equal(a.messages.toarray(), want // size)
    if dims == (2, 2):          # 2*size to each of the two neighbours per iteration
        assert a.sent.toarray()[0].tolist() == [0, 2 * size * 6, 2 * size * 6, 0]
    if dims == (4, 1) and not periodic:   # the chain's ends send one face, to one rank
        assert a.sent.toarray()[0].tolist() == [0, size * 6, 0, 0]
        assert a.sent.toarray()[3].tolist() == [0, 0, size * 6, 0]


def test_halo2d_record_times_and_default_grid(bench):
    a, out = run_app(bench, 4, "halo2d", "--size", "64", "--iterations", "7", "--warmup", "1")
    assert a.params["dims"] == [2, 2] and a.params["periodic"] == [True, True] and a.params["compute"] == 0
    assert len(a.t_iter) == 7 and np.all(a.t_iter > 0)
    assert a.t_iter_min == pytest.approx(a.t_iter.min(), rel=1e-6)
    assert a.t_iter_max == pytest.approx(a.t_iter.max(), rel=1e-6)
    assert a.t_iter_median == pytest.approx(np.median(a.t_iter), rel=1e-6)
    assert a.t_iter_mean == pytest.approx(a.t_iter.mean(), rel=1e-6)
    # the record contract, key by key (other branches build on it)
    lines = [json.loads(ln) for ln in out.read_text().splitlines()]
    app = next(x for x in lines if x["type"] == "app")
    traffic = next(x for x in lines if x["type"] == "app-traffic")
    assert {"type", "test", "ranks", "iterations", "warmup", "size", "params", "t_iter", "t_iter_median",
            "t_iter_mean", "t_iter_min", "t_iter_max"} <= set(app)
    assert {"type", "test", "ranks", "iterations_counted", "sent"} <= set(traffic)
    assert all(isinstance(b, int) for _, _, b in traffic["sent"])
    assert len({(s, d) for s, d, _ in traffic["sent"]}) == len(traffic["sent"])


def test_compute_is_busy_time_inside_every_iteration(bench):
    a, _ = run_app(bench, 4, "halo2d", "--size", "8", "--iterations", "3", "--warmup", "0", "--compute", "0.05")
    assert a.params["compute"] == 0.05
    assert a.t_iter.min() >= 0.05


def test_halo3d_periodic_2x2x2(bench):
    size, it, warm = 100, 2, 1
    a, _ = run_app(bench, 8, "halo3d", "--size", str(size), "--iterations", str(it), "--warmup", str(warm))
    assert a.params["dims"] == [2, 2, 2] and a.params["periodic"] == [True] * 3
    sent = a.sent.toarray()
    # extent 2, periodic: both faces of a dimension go to the same rank, 3 distinct neighbours each
    assert all(np.count_nonzero(sent[r]) == 3 for r in range(8))
    assert np.array_equal(sent, expected(8, grid_neighbours((2, 2, 2), True), size * (it + warm)))
    assert sent[0, 1] == 2 * size * (it + warm)


def test_halo3d_non_periodic_edges_send_nothing(bench):
    a, _ = run_app(bench, 4, "halo3d", "--dims", "1x1x4", "--periodic", "no", "--size", "10",
                   "--iterations", "2", "--warmup", "0")
    assert np.array_equal(a.sent.toarray(), expected(4, [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)], 20))


@pytest.mark.parametrize("dims", ["2x2", "1x4", "4x1"])
def test_fft_transpose_alltoall_in_rows_then_columns(bench, dims):
    pr, pc = (int(x) for x in dims.split("x"))
    size, it, warm = 10, 3, 1
    a, _ = run_app(bench, 4, "fft-transpose", "--dims", dims, "--size", str(size), "--iterations", str(it),
                   "--warmup", str(warm))
    assert a.params["dims"] == [pr, pc] and a.counted_as == "pmpi-pairwise"
    want = np.zeros((4, 4), np.int64)
    for r in range(4):
        for q in range(4):
            same_row, same_col = r // pc == q // pc, r % pc == q % pc
            if q != r and (same_row or same_col):
                want[r, q] = size * (it + warm)
    assert np.array_equal(a.sent.toarray(), want)


def test_allreduce_loop_counted_as_the_profilers_ring(bench):
    it, warm = 3, 1
    a, _ = run_app(bench, 4, "allreduce-loop", "--size", "80", "--iterations", str(it), "--warmup", str(warm))
    assert a.counted_as == "pmpi-ring" and a.params["elements"] == 10
    want = np.zeros((4, 4), np.int64)
    for r, elems in enumerate((15, 16, 15, 14)):   # test_pmpi.py's ring of 10 doubles
        want[r, (r + 1) % 4] = 8 * elems * (it + warm)
    assert np.array_equal(a.sent.toarray(), want)
    assert np.array_equal(a.messages.toarray(), (want > 0) * 6 * (it + warm))


@pytest.mark.parametrize("args,message", [
    (["halo3d", "--dims", "2x2"], "halo3d: --dims needs 3 numbers (PXxPYxPZ), got 2"),
    (["allreduce-loop", "--size", "7"], "allreduce-loop: --size must be a positive multiple of 8 bytes"),
    (["allreduce-loop", "--dims", "2x2"], "allreduce-loop: takes no --dims"),
    (["halo2d", "--periodic", "maybe"], "--periodic: expected yes or no, got 'maybe'"),
    (["halo2d", "--compute", "-1"], "--compute: expected seconds between 0 and 3600, got '-1'"),
    (["halo2d", "--compute", "nan"], "--compute: expected seconds between 0 and 3600, got 'nan'"),
    (["halo2d", "--size", "0"], "halo2d: --size must be at least 1 byte"),
    (["halo2d", "--dims", "4294967298x1"], "--dims: expected up to 6 positive integers (at most 16777216)"),
    (["fft-transpose", "--iterations", "50001"], "fft-transpose: at most 50000 iterations"),
])
def test_bad_options_one_line_before_mpi(binary, args, message):
    p = subprocess.run([str(binary), *args, "--check-args"], check=False, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    lines = errors(p.stderr)
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_grid_that_does_not_hold_the_ranks(bench, tmp_path, capsys):
    # the program itself, started by hand: one line, every rank the same status, nothing measured
    p, out = bench.run(4, "halo2d", "--dims", "3x3")
    assert p.returncode == 3
    assert errors(p.stderr) == ["fabscope-bench: error: halo2d: --dims makes a grid of 9 ranks, the job has 4"]
    assert not app_runs(read_run(out))
    # fabscope measure: refused before anything is built or launched
    res = tmp_path / "never.jsonl"
    assert main(["measure", "--np", "4", "halo2d", "--dims", "3x3", "--out", str(res)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["fabscope: error: halo2d: --dims 3x3 makes a grid of 9 ranks, the job has 4 (--np)"]
    assert not res.exists()


def test_help_lists_the_kernels(capsys):
    assert main(["measure", "halo2d", "--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("fabscope-bench halo2d: 2-D halo exchange")
    assert "--periodic yes|no" in text and "--compute SECONDS" in text
    with pytest.raises(SystemExit):
        main(["measure", "--help"])
    text = capsys.readouterr().out
    assert all(k in text for k in ("halo2d", "halo3d", "fft-transpose", "allreduce-loop"))


def test_measure_analyze_and_map_read_the_run(tmp_path, capsys, mpi, monkeypatch):
    out, res = tmp_path / "halo.jsonl", tmp_path / "halo.json"
    assert main(["measure", "--np", "4", "halo2d", "--size", "1KiB", "--iterations", "5", "--warmup", "1",
                 "--out", str(out), "-o", str(res)]) == 0
    text = capsys.readouterr().out
    row = next(ln for ln in text.splitlines() if ln.startswith("halo2d"))
    # 4 ranks x 4 faces of 1024 B per iteration, on one host
    assert row.split()[1] == "4" and "1 host, 4 ranks each" in row and " 16384 " in row and "2x2" in row
    doc = json.loads(res.read_text())
    assert doc["meta"]["app"]["test"] == "halo2d" and doc["meta"]["app"]["bytes_per_iteration"] == 16384
    r = to_result(read_run(out))
    assert r.n_pairs == 8 and set(r.pairs["bytes"].tolist()) == {2048.0}
    # the communication graph per iteration, as map --comm reads it
    g = read_comm_file(str(out))
    assert g.n == 4 and g.n_edges == 8 and set(g.bytes.tolist()) == {2048.0} and set(g.msgs.tolist()) == {2.0}
    assert g.grid == (2, 2) and g.periodic == (True, True)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))     # no host list on standard input
    assert main(["map", "--fabric", "fat-tree:k=4", "--ppn", "1", "--comm", str(out)]) == 0
    assert "halo.jsonl: 4 ranks" in capsys.readouterr().out


def test_comm_file_of_two_kernels_or_none_is_refused(bench, tmp_path):
    p, out = bench.run(4, "halo2d,fft-transpose", "--size", "8", "--iterations", "1", "--warmup", "0")
    assert p.returncode == 0
    from fabscope.errors import TrafficError
    with pytest.raises(TrafficError, match="the runs of 2 kernels"):
        read_comm_file(str(out))
    assert read_app_comm(str(out), "fft-transpose").n_edges == 8
    p, other = bench.run(2, "random-pairs", "--size", "8", "--iterations", "1", name="rp.jsonl")
    with pytest.raises(TrafficError, match="no application record"):
        read_comm_file(str(other))


def test_hostile_traffic_lines_are_refused(tmp_path):
    from fabscope.errors import SchemaError
    head = {"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2}
    app = {"type": "app", "test": "halo2d", "ranks": 2, "iterations": 1, "warmup": 0, "size": 8,
           "params": {"dims": [2, 1]}, "t_iter": [0.1], "t_iter_median": 0.1, "t_iter_mean": 0.1,
           "t_iter_min": 0.1, "t_iter_max": 0.1}
    for sent, msg in (([[0, 2, 8]], r"the pair \(0, 2\)"), ([[0, 0, 8]], r"the pair \(0, 0\)"),
                      ([[0, 1, -8]], "is -8, not an integer >= 0"), ([[0, 1, 8], [0, 1, 8]], "lists a pair twice"),
                      ([[0, 1]], "triples")):
        traffic = {"type": "app-traffic", "test": "halo2d", "ranks": 2, "iterations_counted": 1, "sent": sent}
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(json.dumps(x) for x in (head, app, traffic)) + "\n")
        with pytest.raises(SchemaError, match=msg):
            read_run(path)


# ---- the PMPI profiler's matrix equals the kernel's own ---------------------------------------
@pytest.fixture(scope="module")
def pmpi_library(mpi, tmp_path_factory):
    lib = tmp_path_factory.mktemp("pmpi") / "libfabscope_pmpi.so"
    sources = sorted(os.path.join(PMPI, f) for f in os.listdir(PMPI) if f.endswith(".c"))
    subprocess.run([mpi.mpicc, "-O2", "-Wall", "-Werror", "-fPIC", "-shared", "-o", str(lib), *sources],
                   check=True, timeout=300)
    return lib


@pytest.mark.parametrize("args", [
    ["halo2d", "--size", "1000"],
    ["halo2d", "--dims", "4x1", "--periodic", "no", "--size", "3"],
    ["halo3d", "--dims", "1x2x2", "--size", "100"],
    ["fft-transpose", "--size", "10"],
    ["allreduce-loop", "--size", "80"],
], ids=["halo2d", "halo2d-chain", "halo3d", "fft-transpose", "allreduce-loop"])
def test_pmpi_profiler_matrix_equals_the_kernels(bench, pmpi_library, tmp_path, args):
    """The profiler preloaded into every rank counts the same bytes and messages as the kernel
    reports.  fabscope-bench turns the profiler off (MPI_Pcontrol(0)) after MPI_Init and each
    kernel turns it on around its loop only, so its set-up, timing and output traffic is not in
    the profiler's matrix either (without that window this test fails: the set-up's Allgathers
    and the time reduction are counted)."""
    mtx = tmp_path / "comm.mtx"
    a, _ = run_app(bench, 4, *args, "--iterations", "3", "--warmup", "1",
                   env={"LD_PRELOAD": str(pmpi_library), "FABSCOPE_PMPI_OUT": str(mtx)})
    g = read_comm_file(str(mtx))
    B, M = np.zeros((4, 4)), np.zeros((4, 4))
    B[g.src, g.dst] = g.bytes
    M[g.src, g.dst] = g.msgs
    assert np.array_equal(B, a.sent.toarray()), f"profiler\n{B}\nkernel\n{a.sent.toarray()}"
    assert np.array_equal(M, a.messages.toarray()), f"profiler\n{M}\nkernel\n{a.messages.toarray()}"
    assert B.sum() > 0


@pytest.mark.parametrize("args", [["halo2d", "--dims", "4x1"], ["halo3d", "--periodic", "no"], ["fft-transpose"],
                                  ["allreduce-loop"]], ids=lambda a: a[0])
def test_validate_checks_what_every_kernel_received(bench, args):
    """--validate: one more exchange after the loop (untimed, not in the traffic), every byte checked;
    a rank that spoils what it sends (FABSCOPE_BENCH_CORRUPT) is caught, status 4 on every rank."""
    a, _ = run_app(bench, 4, *args, "--size", "64", "--iterations", "2", "--warmup", "0", "--validate")
    assert a.iterations_counted == 2
    p, out = bench.run(4, *args, "--size", "64", "--iterations", "2", "--validate",
                       env={"FABSCOPE_BENCH_CORRUPT": "1"}, name="bad.jsonl")
    assert p.returncode == 4
    lines = errors(p.stderr)
    assert len(lines) == 1 and "validation failed" in lines[0], p.stderr
    assert read_run(out).error.startswith("validation failed")


def test_a_torus_fabric_does_not_set_the_kernels_grid(tmp_path, mpi):
    """With --fabric of a torus, measure gives the torus's --dims to `hops`; a kernel's grid is the
    ranks' own (its --dims or MPI_Dims_create), so it gets none."""
    from fabscope.fabric.generators import torus
    from fabscope.measure.runner import plan

    fab = torus((2, 2, 2))
    hops = plan(["hops"], np=8, out=tmp_path / "h.jsonl", fabric=fab, mpi=mpi)
    assert hops.args[hops.args.index("--dims") + 1] == "2x2x2"
    job = plan(["halo2d", "--size", "8"], np=8, out=tmp_path / "k.jsonl", fabric=fab, mpi=mpi)
    assert "--dims" not in job.args


@pytest.mark.parametrize("args,spec", [
    (["halo2d", "--dims", "4x2"], "stencil2d:4x2,halo=100"),
    (["halo2d", "--dims", "4x2", "--periodic", "no"], "stencil2d:4x2,halo=100,periodic=0x0"),
    (["halo3d", "--dims", "2x2x2"], "stencil3d:2x2x2,halo=100"),
    (["fft-transpose", "--dims", "2x4"], "pencils:2x4,size=100"),
], ids=["halo2d", "halo2d-open", "halo3d", "fft-transpose"])
def test_the_measured_graph_is_the_generators(bench, args, spec):
    """One iteration of a kernel on 8 ranks is, pair by pair, the graph fabscope's generator of the
    same code makes (bytes, messages, grid), so a model of the spec is a model of the run."""
    from fabscope.mapping.commspec import load_comm

    _, out = run_app(bench, 8, *args, "--size", "100", "--iterations", "2", "--warmup", "1")
    got, want = read_comm_file(str(out)), load_comm(spec)
    assert (got.n, got.grid, got.periodic) == (want.n, want.grid, want.periodic)
    assert got.src.tolist() == want.src.tolist() and got.dst.tolist() == want.dst.tolist()
    assert got.bytes.tolist() == want.bytes.tolist() and got.msgs.tolist() == want.msgs.tolist()



def test_a_traffic_line_too_long_to_read_is_refused_before_the_loop(bench):
    """The bound (1,000,000 bytes, under fabscope's 1 MiB line) lowered by FABSCOPE_BENCH_MAX_LINE
    so that 4 ranks reach it: one line, status 3, no record, and no iteration run (a minute of
    busy work per iteration would time the job out)."""
    p, out = bench.run(4, "halo2d", "--size", "8", "--compute", "60", env={"FABSCOPE_BENCH_MAX_LINE": "400"})
    assert p.returncode == 3
    lines = errors(p.stderr)
    assert len(lines) == 1 and "16 rank pairs exchange data" in lines[0] and "the 400 bytes" in lines[0], p.stderr
    assert not app_runs(read_run(out))
    a, _ = run_app(bench, 4, "halo2d", "--size", "8", "--iterations", "1", env={"FABSCOPE_BENCH_MAX_LINE": "800"})
    assert a.sent.nnz == 8
