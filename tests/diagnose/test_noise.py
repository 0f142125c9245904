"""Diagnosis under real noise: robust per-pair figures, the mixture noise model, the null
calibration of the penalty, the confirmation round."""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.diagnose.confirm import confirm_pairs, pack_rounds
from fabscope.diagnose.measured import Measured, concat, load_measured
from fabscope.diagnose.noise import fit_noise
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.plan import bench_random_pairs, make_plan
from fabscope.diagnose.tomography import cable_name, diagnose
from fabscope.fabric.io import load_fabric
from fabscope.measure.parse import read_run
from fabscope.result import Result

SPEC = "fat-tree:k=4,levels=2"
OVERSUB = "fat-tree:k=8,levels=2,up=2"       # 64 hosts, leaves 4:1 oversubscribed
ITER = 20


def runs(f, pm, faults: dict[int, float], seed: int, jitter: float = 0.1, burst: tuple[int, int] = (1, ITER),
         only: np.ndarray | None = None, cut: tuple[float, float] = (0.3, 0.7)) -> Measured:
    """The model's pairs with ``faults``, each pair's ITER iterations drawn: 1.5 % per pair, 2 % per iteration,
    and a share ``jitter`` of the pairs (or the pairs ``only``) cut to 30-70 % (``cut``) of their mean by a
    burst."""
    rng = np.random.default_rng(seed)
    cap = f.link_capacity.copy()
    for c, x in faults.items():
        cap[[2 * c, 2 * c + 1]] *= x
    tau = 2 * pm.bytes / pm.bandwidth(cap)
    T = tau[:, None] * np.exp(rng.normal(0, 0.015, (pm.n_pairs, 1)) + rng.normal(0, 0.02, (pm.n_pairs, ITER)))
    hit = np.flatnonzero(rng.random(pm.n_pairs) < jitter) if only is None else only
    for p in hit:
        k = int(rng.integers(burst[0], burst[1] + 1))
        s0 = int(rng.integers(0, ITER - k + 1))
        T[p, s0:s0 + k] += T[p].sum() * (1 / rng.uniform(*cut) - 1) / k
    n = pm.n_pairs
    sc = np.unique(pm.scenario)
    mean = T.mean(axis=1)
    return Measured(f, np.arange(n), np.arange(n), pm.hs, pm.hd, pm.bytes, 2 * pm.bytes / mean, mean,
                    np.searchsorted(sc, pm.scenario), pm.pingpong, np.full(n, "random-pairs"), ("run",),
                    tuple(("run", "random-pairs", int(s)) for s in sc), iter_min=T.min(axis=1),
                    iter_median=np.median(T, axis=1), iter_max=T.max(axis=1))


def mean_only(m: Measured) -> Measured:
    """The same run as a file without per-iteration figures (fabscope-bench before them)."""
    return Measured(m.fabric, m.src, m.dst, m.hs, m.hd, m.bytes, m.bandwidth, m.time, m.scenario, m.pingpong,
                    m.test, m.sources, m.scenario_key)


@pytest.fixture(scope="module")
def oversub():
    f = load_fabric(OVERSUB)
    hs, hd, r = make_plan(f).pairs
    return f, PairModel(f, hs, hd, r, bytes=np.full(len(hs), float(1 << 20)))


# ---- robust figures -------------------------------------------------------------------
def _bench_file(path, with_iter: bool) -> None:
    lines = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 4},
             {"type": "ranks", "host": ["h0000", "h0005", "h0010", "h0015"], "core": [0] * 4, "socket": [0] * 4},
             {"type": "test", "test": "random-pairs"}]
    for src, dst, med, worst in ((0, 1, 0.001, 0.02), (2, 3, 0.001, 0.0011)):
        rec = {"type": "pair", "test": "random-pairs", "src": src, "dst": dst, "bytes": 1 << 20, "iters": 20,
               "time": (19 * med + worst) / 20, "bandwidth": 2 * (1 << 20) * 20 / (19 * med + worst), "scenario": 0}
        if with_iter:
            rec.update(iter_min=0.95 * med, iter_median=med, iter_max=worst)
        lines.append(rec)
    lines.append({"type": "end", "status": 0})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_the_median_iteration_is_used_where_the_file_has_it_and_old_files_still_read(tmp_path):
    f = load_fabric(SPEC)
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    _bench_file(new, True)
    _bench_file(old, False)
    m_new, m_old = load_measured([str(new)], f), load_measured([str(old)], f)
    bw, spread, figure = m_new.robust()
    # pair 0 had one iteration 20x slower: its mean drops by half, its median iteration does not
    assert m_new.bandwidth[0] < 0.55 * bw[0] and bw[0] == pytest.approx(2 * (1 << 20) / 0.001)
    assert spread[0] == pytest.approx((0.02 - 0.00095) / 0.001) and figure.startswith("median iteration (2 of 2")
    bw_o, spread_o, figure_o = m_old.robust()
    assert np.array_equal(bw_o, m_old.bandwidth) and np.isnan(spread_o).all() and figure_o.startswith("mean")
    # the diagnosis says which figure it used, and keeps the spread
    d = diagnose(m_new, penalty=10).to_result()
    assert d.meta["figure"].startswith("median iteration") and "spread" in d.pairs


@pytest.mark.mpi
def test_fabscope_bench_writes_each_pairs_best_median_and_worst_iteration(real_run):
    recs = read_run(real_run).of("random-pairs", "pair")
    assert recs
    for r in recs:
        assert 0 < r["iter_min"] <= r["iter_median"] <= r["iter_max"]
        assert r["iter_min"] <= r["time"] <= r["iter_max"] * (1 + 1e-6)   # the mean lies among them


# ---- the noise model -----------------------------------------------------------------
@pytest.mark.parametrize("w", [0.0, 0.1, 0.3])
def test_mixture_recovers_the_share_of_jittered_pairs_and_the_nominal_spread(w):
    rng = np.random.default_rng(5)
    n = 4000
    j = rng.random(n) < w
    e = np.where(j, np.log(rng.uniform(0.3, 0.7, n)), rng.normal(0.01, 0.02, n))
    nm = fit_noise(e)
    assert nm.sigma == pytest.approx(0.02, rel=0.1) and nm.mu == pytest.approx(0.01, abs=0.003)
    assert nm.w == pytest.approx(w, abs=0.02)
    if w:
        assert np.exp(nm.mu_j) == pytest.approx(0.5, abs=0.08)
        # a pair at 45 % is read as jitter, one at 99 % as nominal
        assert nm.p_jitter(np.log([0.45, 0.99])).round(2).tolist() == [1.0, 0.0]


def test_heavy_tailed_noise_brings_no_suspect_where_a_gaussian_misfit_would(oversub):
    f, pm = oversub
    for seed in range(3):
        m = mean_only(runs(f, pm, {}, seed))        # the file has only means: the jitter is all in them
        d = diagnose(m, penalty=None)
        assert d.suspects == [], [s["name"] for s in d.suspects]
        assert d.meta["noise_model"]["w"] == pytest.approx(0.1, abs=0.05)
        # the same pairs under the least-squares reading (the nominal spread, no jitter component) accuse
        e = np.log(m.bandwidth / d.modeled) - np.log(d.efficiency)
        assert np.sum(e < -3 * d.sigma) >= 0.05 * m.n_pairs


def test_faults_are_named_with_a_calibrated_looking_confidence_and_the_penalty_comes_from_the_null(oversub):
    f, pm = oversub
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[2])
    host = int(np.flatnonzero(f.link_src[0::2] < f.n_hosts)[17])
    d = diagnose(runs(f, pm, {inner: 0.25, host: 0.5}, 11))
    got = {s["link"] // 2 for s in d.suspects}
    assert got == {inner, host}
    assert all(s["confidence"] > 0.99 for s in d.suspects)
    null = d.meta["null"]
    assert null["draws"] == 30 and d.meta["penalty"] >= 6
    # the penalty is the null's 99 % quantile: most draws' maxima lie below it
    assert null["max_gain_median"] < d.meta["penalty"]


def test_mild_fault_found_and_the_detectable_degradation_is_said(oversub):
    f, pm = oversub
    host = int(np.flatnonzero(f.link_src[0::2] < f.n_hosts)[40])
    d = diagnose(runs(f, pm, {host: 0.8}, 3))
    assert [s["link"] // 2 for s in d.suspects] == [host]
    assert d.suspects[0]["factor"] == pytest.approx(0.8, abs=0.06)
    seen = d.meta["detectable"]
    assert seen["factors"][3] == 0.8 and seen["share_seen"][3] > 0.5
    assert seen["share_seen"] == sorted(seen["share_seen"], reverse=True)   # stronger faults are seen more


# ---- re-measure before accusing -------------------------------------------------------
def _crossing(pm, c: int) -> np.ndarray:
    pl = pm.pair_links.tocsc()
    return np.unique(np.r_[pl[:, 2 * c].indices, pl[:, 2 * c + 1].indices])


def test_a_pair_slow_in_one_round_and_nominal_in_another_is_jitter():
    f = load_fabric(SPEC)
    host = int(np.flatnonzero(f.link_src[0::2] < f.n_hosts)[5])
    # the plan that counts cables' pairs (96): on the plan that counts each direction's (128), a one-way
    # unit crossed by 2 of the busy node's pairs and 18 others is named at x0.95 with 8.2 nats, the
    # penalty at its 6-nat floor (docs/diagnose.md, the bench of faults)
    hs, hd, r = make_plan(f, directions=False).pairs
    pm = PairModel(f, np.r_[hs, hs], np.r_[hd, hd], np.r_[r, r + r.max() + 1], bytes=np.full(2 * len(hs), 1e6))
    first = _crossing(pm, host)
    first = first[first < len(hs)]                      # the host's pairs, in the first copy of the rounds
    m = runs(f, pm, {}, 4, jitter=0.0, only=first, burst=(ITER, ITER), cut=(0.5, 0.5))   # a busy node
    # alone, the first copy accuses the host: all its pairs slow
    one = diagnose(m.subset(np.arange(len(hs))), penalty=6)
    assert [s["link"] // 2 for s in one.suspects] == [host]
    # with the same rounds run again, where the host's pairs are nominal: jitter, no suspect
    assert diagnose(m, penalty=6).suspects == []


def test_confirmation_pairs_cross_the_suspect_and_controls_avoid_it(oversub):
    f, pm = oversub
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[5])
    d = diagnose(runs(f, pm, {inner: 0.3}, 8))
    assert [s["link"] // 2 for s in d.suspects] == [inner]
    measured = {(min(a, b), max(a, b)) for a, b in zip(pm.hs.tolist(), pm.hd.tolist())}
    cp = confirm_pairs(f, d.suspects, measured, pm.router, seed=1)
    roles = [x[2] for x in cp]
    assert roles.count("cross") == 4 and roles.count("repeat") == 1 and roles.count("control") == 2
    for a, b, role, name in cp:
        check = PairModel(f, np.array([a]), np.array([b]), routing=pm.router)
        crosses = inner in set((check.routes.link // 2).tolist())
        assert crosses == (role != "control"), (role, a, b)
        assert name == cable_name(f, inner)
    assert all((min(a, b), max(a, b)) not in measured for a, b, role, _ in cp if role == "cross")
    rounds = pack_rounds(cp)
    for r in rounds:
        hosts = [h for i in r for h in cp[i][:2]]
        assert len(hosts) == len(set(hosts))
        assert sum(cp[i][2] == "cross" for i in r) <= 1


def test_confirmation_clears_jitter_and_keeps_the_fault(oversub):
    f, pm = oversub
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[9])
    host = int(np.flatnonzero(f.link_src[0::2] < f.n_hosts)[30])
    cross_host = _crossing(pm, host)
    # run A: the host's pairs all jittered (a busy node for the whole run), and a real fault elsewhere
    a = runs(f, pm, {inner: 0.4}, 21, jitter=0.0, only=cross_host, burst=(ITER, ITER), cut=(0.5, 0.5))
    da = diagnose(a)
    assert {s["link"] // 2 for s in da.suspects} == {inner, host}
    measured = {(min(x, y), max(x, y)) for x, y in zip(pm.hs.tolist(), pm.hd.tolist())}
    cp = confirm_pairs(f, da.suspects, measured, pm.router, seed=2)
    rounds = pack_rounds(cp)
    hs = np.array([cp[i][0] for r in rounds for i in r])
    hd = np.array([cp[i][1] for r in rounds for i in r])
    sc = np.array([k for k, r in enumerate(rounds) for _ in r])
    pm2 = PairModel(f, hs, hd, sc, bytes=np.full(len(hs), float(1 << 20)), routing=pm.router)
    b = runs(f, pm2, {inner: 0.4}, 22, jitter=0.0, only=np.zeros(0, np.int64))     # the node is quiet again
    both = diagnose(concat([a, b]))
    assert [s["link"] // 2 for s in both.suspects] == [inner]
    s = both.suspects[0]
    assert [x[0] for x in s["by_source"]] == ["run", "run"] or len(s["by_source"]) == 2
    assert all(slow == n for _, slow, n in s["by_source"][1:])      # every new crossing pair slow too


def test_confirm_cli_writes_jobs_whose_first_round_is_the_chosen_pairs(tmp_path, capsys):
    f = load_fabric(SPEC)
    hs, hd, r = make_plan(f).pairs
    pm = PairModel(f, hs, hd, r, bytes=np.full(len(hs), float(1 << 20)))
    host = int(np.flatnonzero(f.link_src[0::2] < f.n_hosts)[6])
    m = runs(f, pm, {host: 0.3}, 9, jitter=0.0)
    from fabscope.diagnose.synthetic import as_result

    meas = tmp_path / "meas.json"
    r0 = as_result(m)
    for col in ("iter_min", "iter_median", "iter_max"):
        r0.pairs[col] = getattr(m, col)
    r0.write_json(meas)
    res = tmp_path / "diag.json"
    assert main(["diagnose", str(meas), "--fabric", SPEC, "-o", str(res)]) == 0
    out = capsys.readouterr().out
    assert "median iteration" in out and "false alarm" in out
    script = tmp_path / "confirm.sh"
    assert main(["diagnose", "--plan", "--confirm", str(res), "--fabric", SPEC, "-o", str(script)]) == 0
    text = script.read_text()
    summary = json.loads((tmp_path / "confirm.sh.json").read_text())
    planned = {(min(f.host_index[p["src"]], f.host_index[p["dst"]]), max(f.host_index[p["src"]],
                                                                          f.host_index[p["dst"]]))
               for p in summary["pairs"]}
    # each job's host file order makes fabscope-bench's first random-pairs round the chosen pairs
    assert "<<" not in text                           # host files by printf, no here-document
    lines = text.splitlines()
    hostfiles = {w[-1]: w[2:-2] for w in (shlex.split(x) for x in lines if x.startswith("printf "))}
    measures = [shlex.split(x)[1:] for x in lines if x.startswith("$FABSCOPE measure")]
    got = set()
    for cmd in measures:
        hosts = hostfiles[cmd[cmd.index("--hostfile") + 1]]
        s, d, _ = bench_random_pairs(len(hosts), int(cmd[cmd.index("--seed") + 1]), 1)
        got |= {tuple(sorted((f.host_index[hosts[x]], f.host_index[hosts[y]]))) for x, y in zip(s, d)}
    assert measures and got == planned
    last = shlex.split(lines[-1])
    assert last[:3] == ["$FABSCOPE", "diagnose", str(res)] and len(last) == 3 + len(measures) + 2
    # the joint diagnosis reads the diagnose result back as measurements
    again = load_measured([str(res)], f)
    assert again.n_pairs == m.n_pairs and np.allclose(again.iter_median, m.iter_median)


def test_confirm_bad_input_is_one_line(tmp_path, capsys):
    meas = tmp_path / "m.json"
    Result(meta={"kind": "measure"}, class_labels=("x",),
           pairs={"bandwidth": np.array([1.0]), "cls": np.array([0])}).write_json(meas)
    for argv, words in ((["diagnose", "--plan", "--confirm", str(meas), "--fabric", SPEC], "kind 'measure'"),
                        (["diagnose", str(meas), "--confirm", str(meas), "--fabric", SPEC], "goes with --plan"),
                        (["diagnose", "--plan", "--confirm", str(tmp_path / "nope.json"), "--fabric", SPEC],
                         "nope.json"),
                        (["diagnose", str(meas), "--false-alarm", "2", "--fabric", SPEC], "--false-alarm")):
        assert main([*argv, "-o", str(tmp_path / "x.sh")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
        assert not (tmp_path / "x.sh").exists()


def test_noise_fit_has_the_same_bits_whatever_the_blas_thread_count():
    """The noise fit on 109,800 residuals in processes with 1 and 2 OpenBLAS threads: the same
    model to the last bit.  Its sums went through BLAS (``a @ b``), which OpenBLAS splits among its
    threads past about 10,000 entries: the last bits followed the machine's cores."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from fabscope.diagnose.noise import fit_noise; rng = np.random.default_rng(3); "
            "e = np.r_[rng.normal(0, 0.05, 100000), rng.normal(-0.7, 0.3, 9800)]; "
            "print(repr(fit_noise(e, centre=0.0)), repr(fit_noise(e)))")
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    out = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=dict(os.environ, OPENBLAS_NUM_THREADS=str(n), OMP_NUM_THREADS=str(n),
                                   PYTHONPATH=os.path.abspath(src))).stdout for n in (1, 2)]
    assert "NoiseModel" in out[0] and out[0] == out[1]
