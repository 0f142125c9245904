"""diagnose's nominal model is the program in time: a fault on an oversubscribed tree that the
snapshot cannot see, found when the measurements come from the program in time."""

from __future__ import annotations

import dataclasses

import numpy as np

from fabscope.cli import main
from fabscope.diagnose.measured import Measured
from fabscope.diagnose.nominal import nominal_model, refined_nominal
from fabscope.diagnose.timemodel import dynamic_bandwidth
from fabscope.diagnose.tomography import cable_name, diagnose
from fabscope.fabric.io import load_fabric
from fabscope.result import Result
from fabscope.traffic.draws import random_pairs_rounds

SPEC = "fat-tree:k=4,levels=2,up=2"        # leaves 2:1 oversubscribed
ROUNDS, ITERS = 16, 10


def _pairs(f):
    hs, hd, sc = [], [], []
    for r, (a, b) in enumerate(random_pairs_rounds(f.n_hosts, 3, ROUNDS)):
        hs += a.tolist()
        hd += b.tolist()
        sc += [r] * len(a)
    return np.array(hs), np.array(hd), np.array(sc)


def _measured(f, hs, hd, sc, bw):
    k = len(hs)
    return Measured(f, hs, hd, hs, hd, np.full(k, 1e6), bw, np.zeros(k), sc, np.ones(k, bool),
                    np.full(k, "random-pairs"), ("x",), tuple(("x", "random-pairs", r) for r in range(ROUNDS)),
                    np.full(k, ITERS), np.full(k, 2))


def test_fault_measured_in_time_is_found_with_the_model_in_time(tmp_path, capsys):
    f = load_fabric(SPEC)
    hs, hd, sc = _pairs(f)
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[3])
    cap = f.link_capacity.copy()
    cap[[2 * inner, 2 * inner + 1]] *= 0.4
    faulty = dataclasses.replace(f, link_capacity=cap)
    # "measured": the benchmark's program run in time on the faulty fabric, 3% noise
    bw = dynamic_bandwidth(_measured(faulty, hs, hd, sc, np.ones(len(hs)))).bandwidth
    bw = bw * np.exp(np.random.default_rng(0).normal(0, 0.03, len(hs)))
    m = _measured(f, hs, hd, sc, bw)
    nominal, how = nominal_model(m)
    assert how["model"] == "dynamic" and how["iterations"] == [ITERS] and how["warmup"] == [2]
    d = diagnose(m, nominal=nominal)
    assert [s["cable"] for s in d.suspects] == [cable_name(f, inner)]
    assert abs(d.suspects[0]["factor"] - 0.4) < 0.1
    np.testing.assert_allclose(d.modeled, nominal)          # the model of record is the program in time
    # the snapshot, for the same measurements, misfits them: with the nominal level over all pairs it named
    # nothing (0.32 rms); from the unshared pairs (the same in both models) it names the cable, further from
    # x0.4 and with more error left than in time
    snap = diagnose(m)
    assert [s["cable"] for s in snap.suspects] in ([], [cable_name(f, inner)])
    if snap.suspects:
        assert abs(snap.suspects[0]["factor"] - 0.4) > abs(d.suspects[0]["factor"] - 0.4)
    assert snap.rms_after > d.rms_after + 0.03
    # the CLI says which model, in its output and in the result
    p = m.fabric.host_names
    meas = Result(meta={"kind": "measure", "test": "random-pairs", "argv": ["fabscope-bench", "--iterations",
                                                                         str(ITERS)]},
                  class_labels=("x",), pairs={"src": hs, "dst": hd, "src_host": np.array(p)[hs],
                                              "dst_host": np.array(p)[hd], "cls": np.zeros(len(hs)),
                                              "bytes": np.full(len(hs), 1e6), "bandwidth": bw, "scenario": sc})
    path, out = tmp_path / "m.json", tmp_path / "d.json"
    meas.write_json(path)
    assert main(["diagnose", str(path), "--fabric", SPEC, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "model: dynamic: the program the benchmark ran, in time (max-min sharing, 10 timed iterations" in text
    assert cable_name(f, inner) in text
    res = Result.read_json(out)
    assert res.meta["model"] == "dynamic" and res.meta["model_info"]["iterations"] == [ITERS]
    # refined: the program in time rerun with the first fit's estimate, then a second fit
    assert res.meta["model_info"]["refined"] is True
    (s0,) = res.extra["suspects"]
    assert abs(s0["factor"] - 0.4) < abs(d.suspects[0]["factor"] - 0.4) + 1e-9
    assert res.meta["rms_log_error_after"] < d.rms_after
    np.testing.assert_allclose(res.pairs["modeled"], nominal)
    assert main(["diagnose", str(path), "--fabric", SPEC, "--model", "static", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "model: static" in text and ("no suspect" in text if not snap.suspects else cable_name(f, inner) in text)
    assert Result.read_json(out).meta["model"] == "static"


def test_bad_model_options_are_one_line(tmp_path, capsys):
    out = tmp_path / "d.json"
    for argv, msg in ((["diagnose", "x.json", "--fabric", SPEC, "--model-iterations", "0"], "at least 1"),
                      (["diagnose", "x.json", "--fabric", SPEC, "--model", "sometimes"], "invalid choice"),
                      (["compare", "x.json", "--fabric", SPEC, "--model-iterations", "0"], "at least 1"),
                      (["compare", "x.json", "--fabric", SPEC, "--start-offset", "-1"], "--start-offset")):
        code = None
        try:
            code = main(argv + ["-o", str(out)])
        except SystemExit as e:          # argparse's own refusal
            code = e.code
        assert code not in (0, None)
        err = capsys.readouterr().err.strip().splitlines()
        assert msg in err[-1], err
        assert not out.exists()


def test_all_pairs_shift_is_modeled_one_way_in_time():
    """all-pairs sends one way per shift, every rank sending and receiving at once: 4 hosts on two
    leaves under one spine, shift 1: every directed link carries one flow, so each at line rate;
    shift 2: two flows cross the spine each way, half each."""
    from .conftest import named_fabric
    from fabscope.diagnose.compare import compare
    from fabscope.diagnose.measured import load_measured

    f = named_fabric("a", others=3, capacity=1e9)          # a, n1 | n2, n3
    hosts = np.array(["a", "n1", "n2", "n3"])
    src = np.r_[np.arange(4), np.arange(4)]
    dst = np.r_[(np.arange(4) + 1) % 4, (np.arange(4) + 2) % 4]
    r = Result(meta={"kind": "measure", "test": "all-pairs", "argv": ["fabscope-bench", "--iterations", "5"]},
               class_labels=("x",), pairs={"src": src, "dst": dst, "src_host": hosts[src], "dst_host": hosts[dst],
                                           "cls": np.zeros(8), "bytes": np.full(8, 1e7),
                                           "bandwidth": np.full(8, 5e8), "scenario": np.r_[[1] * 4, [2] * 4]})
    m = load_measured([r], f)
    assert not m.pingpong.any() and m.iters.tolist() == [5] * 8
    dyn = compare(m, model="dynamic")
    assert dyn.meta["model_info"]["iterations"] == [5]
    np.testing.assert_allclose(dyn.pairs["modeled"][:4], 1e9, rtol=2e-3)
    crossing = np.flatnonzero((np.isin(src, [0, 1]) != np.isin(dst, [0, 1])) & (np.arange(8) >= 4))
    np.testing.assert_allclose(dyn.pairs["modeled"][crossing], 0.5e9, rtol=2e-3)
    np.testing.assert_allclose(compare(m, model="static").pairs["modeled"], dyn.pairs["modeled"], rtol=2e-3)


def _bench_sets(f, rounds, iters, seed=1):
    hs, hd, sc = [], [], []
    for r, (a, b) in enumerate(random_pairs_rounds(f.n_hosts, seed, rounds)):
        hs += a.tolist()
        hd += b.tolist()
        sc += [r] * len(a)
    hs, hd, sc = np.array(hs), np.array(hd), np.array(sc)
    k = len(hs)
    return Measured(f, hs, hd, hs, hd, np.full(k, float(1 << 20)), np.ones(k), np.zeros(k), sc, np.ones(k, bool),
                    np.full(k, "random-pairs"), ("x",), tuple(("x", "random-pairs", r) for r in range(rounds)),
                    np.full(k, iters), np.full(k, 2))


def test_components_give_the_full_programs_figures():
    """The fast path (each set's independent components run alone, shapes reused) against the
    whole set as one program: the same per-pair bandwidth to 1e-7 (the engine sums in another
    order on relabelled resources), on an oversubscribed tree, a full tree and a torus."""
    for spec in (SPEC, "fat-tree:k=8,levels=2", "torus:4x4x4"):
        m = _bench_sets(load_fabric(spec), 4, 6)
        full = dynamic_bandwidth(m, fast=False)
        fast = dynamic_bandwidth(m)
        assert "components" not in full.info
        assert fast.info["components"] > fast.info["concurrent_sets"]        # the sets did split
        assert fast.info["components_reused"] > 0
        assert fast.info["events"] < full.info["events"]
        np.testing.assert_allclose(fast.bandwidth, full.bandwidth, rtol=1e-7)


def test_one_pair_components_are_told_apart_by_their_links_and_sizes():
    """Four pairs, each on its own leaf's host links (a component of one pair each, all of one
    shape): a pair crossing a cable at half capacity, or sending more bytes, is not given the
    figure of its healthy twin; the twins share one run.  The one-pair components' keys are built
    apart from the others' (components._OnePair): a key that left out the size, or the capacities
    and the latencies (which follow a link's capacity), fails here."""
    f = load_fabric("fat-tree:k=4,levels=2")
    cap = f.link_capacity.copy()
    cap[[0, 1]] *= 0.5                                  # host 0's cable, both ways
    f = dataclasses.replace(f, link_capacity=cap)
    hs, hd = np.array([0, 4, 8, 12]), np.array([1, 5, 9, 13])
    size = np.array([1e6, 1e6, 1e6, 2e6])
    m = Measured(f, hs, hd, hs, hd, size, np.ones(4), np.zeros(4), np.zeros(4, np.int64), np.ones(4, bool),
                 np.full(4, "random-pairs"), ("x",), (("x", "random-pairs", 0),), np.full(4, 5), np.full(4, 2))
    fast = dynamic_bandwidth(m, phases="lockstep")
    full = dynamic_bandwidth(m, phases="lockstep", fast=False)
    assert fast.info["components"] == 4 and fast.info["components_reused"] == 1
    np.testing.assert_allclose(fast.bandwidth, full.bandwidth, rtol=1e-9)
    bw = fast.bandwidth
    assert bw[1] == bw[2]
    assert bw[0] < 0.6 * bw[1]                           # the half-capacity cable
    assert bw[3] > (1 + 1e-4) * bw[1]                    # more bytes: the latency weighs less


def test_pairs_sharing_a_rank_are_one_component():
    """Pairs (0, 1) of 1 MB and (1, 2) of 4 MB share no link, only rank 1, whose steps hold a
    message of each (the benchmark's rounds): pair (0, 1) waits on the larger one; run alone it
    would be faster, so a split that ignored ranks would be wrong."""
    f = load_fabric("fat-tree:k=4,levels=2")
    src, dst = np.array([0, 1]), np.array([1, 2])
    hs, hd = np.array([0, 5]), np.array([5, 10])
    m = Measured(f, src, dst, hs, hd, np.array([1e6, 4e6]), np.ones(2), np.zeros(2), np.zeros(2, np.int64),
                 np.ones(2, bool), np.full(2, "random-pairs"), ("x",), (("x", "random-pairs", 0),),
                 np.full(2, 5), np.full(2, 2))
    full = dynamic_bandwidth(m, fast=False)
    fast = dynamic_bandwidth(m)
    assert fast.info["components"] == 1
    np.testing.assert_allclose(fast.bandwidth, full.bandwidth, rtol=1e-9)
    alone = dynamic_bandwidth(m.subset([0]))
    assert full.bandwidth[0] < 0.9 * alone.bandwidth[0]


def test_shortcut_does_not_apply_out_of_phase_and_falls_back():
    """Pairs started out of phase (seeded per set over the whole set) run as whole programs:
    the fast flag changes nothing, and no component is counted."""
    m = _bench_sets(load_fabric(SPEC), 3, 4)
    a = dynamic_bandwidth(m, start_offset=5e-4, seed=3)
    b = dynamic_bandwidth(m, start_offset=5e-4, seed=3, fast=False)
    assert "components" not in a.info
    np.testing.assert_array_equal(a.bandwidth, b.bandwidth)
    assert not np.allclose(a.bandwidth, dynamic_bandwidth(m).bandwidth, rtol=1e-3)   # the offset mattered


def test_sets_in_two_processes_give_the_same_figures():
    m = _bench_sets(load_fabric(SPEC), 5, 4)
    one = dynamic_bandwidth(m)
    two = dynamic_bandwidth(m, workers=2)
    assert two.info["workers"] == 2 and one.info["workers"] == 1
    np.testing.assert_array_equal(two.bandwidth, one.bandwidth)
    assert two.info["iterations"] == one.info["iterations"]
    assert two.info["events"] >= one.info["events"]          # each process reuses only the shapes it ran
    full2 = dynamic_bandwidth(m, fast=False, workers=2)
    np.testing.assert_array_equal(full2.bandwidth, dynamic_bandwidth(m, fast=False).bandwidth)


def test_drawn_phases_run_in_few_engine_runs_and_give_the_per_draw_figures(monkeypatch):
    """Independent phases (compare's default): every draw of every set ran as its own engine run
    (192 on diagnose's plan of a k=4 tree, most of compare's time).  Now the pairs alone on their
    resources and ranks (whose time does not depend on their phase) run once per shape, and the
    other pairs' draws run as copies on disjoint resources, several sets and draws to an engine run.
    The figures are the per-draw runs' (``fast=False``, the reference) to 1e-12: the pairs alone
    differ in the last bits (one run instead of the mean of eight), the others not at all here."""
    from fabscope.diagnose.plan import make_plan
    from fabscope.diagnose.synthetic import synthetic
    from fabscope.dynamic import fast

    runs = []
    real = fast.run_program
    monkeypatch.setattr(fast, "run_program", lambda *a, **k: runs.append(1) or real(*a, **k))
    for spec in (SPEC, "fat-tree:k=4,levels=2", "torus:4x4", "fat-tree:k=8,levels=2"):
        f = load_fabric(spec)
        m = synthetic(f, *make_plan(f).pairs, {}, noise=0.03, seed=1)
        n_sets = len(np.unique(m.scenario))
        runs.clear()
        together = dynamic_bandwidth(m, phases="independent")
        assert together.info["phases"] == "independent" and together.info["phase_draws"] == 8
        assert len(runs) < 4 * n_sets, spec                 # per draw: 8 runs a set
        runs.clear()
        ref = dynamic_bandwidth(m, phases="independent", fast=False)
        assert len(runs) == 8 * n_sets
        np.testing.assert_allclose(together.bandwidth, ref.bandwidth, rtol=1e-12, atol=0)
        assert np.mean(together.bandwidth == ref.bandwidth) > 0.3, spec
        assert together.info["events"] < 0.8 * ref.info["events"]


def test_second_model_runs_only_the_components_a_changed_capacity_touches():
    """diagnose's second model (the fabric with the suspects' estimates) given the first's
    components: the figures of a run without them, bit for bit, in one process and in two, from
    fewer engine events; the pairs crossing the slowed cable do change (a reuse that ignored the
    capacities would hand them the healthy figures and fail here)."""
    for spec in ("fat-tree:k=8,levels=2", "torus:4x4x4"):
        f = load_fabric(spec)
        m = _bench_sets(f, 4, 6)
        inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[2])
        cap = f.link_capacity.copy()
        cap[[2 * inner, 2 * inner + 1]] *= 0.5
        faulty = dataclasses.replace(m, fabric=dataclasses.replace(f, link_capacity=cap))
        for workers in (1, 2):
            reuse: dict = {}
            healthy = dynamic_bandwidth(m, reuse=reuse, workers=workers)
            assert reuse
            again = dynamic_bandwidth(faulty, reuse=reuse, workers=workers)
            alone = dynamic_bandwidth(faulty, workers=workers)
            np.testing.assert_array_equal(again.bandwidth, alone.bandwidth)
            assert 0 < again.info["events"] < alone.info["events"]
            changed = again.bandwidth != healthy.bandwidth
            assert 0 < changed.sum() < m.n_pairs
            np.testing.assert_array_equal(healthy.bandwidth, dynamic_bandwidth(m, workers=workers).bandwidth)


def test_refined_nominal_with_the_first_models_components_is_the_same():
    f = load_fabric(SPEC)
    m = _bench_sets(f, 4, 6)
    factor = np.ones(f.n_links)
    inner = int(np.flatnonzero((f.link_src >= f.n_hosts) & (f.link_dst >= f.n_hosts))[1])
    factor[inner] = 0.4                                 # one direction of a switch cable
    reuse: dict = {}
    nominal_model(m, reuse=reuse)
    np.testing.assert_array_equal(refined_nominal(m, factor, reuse=reuse), refined_nominal(m, factor))
