"""diagnose: suspects from pairs the flow model makes with injected faults; plans; the real run's refusal."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.diagnose.measured import DiagnoseError, load_measured
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.plan import bench_random_pairs, make_plan
from fabscope.diagnose.synthetic import as_result, synthetic
from fabscope.diagnose.tomography import cable_name, diagnose
from fabscope.fabric.io import load_fabric, write_json
from fabscope.measure.parse import read_run
from fabscope.result import Result

from .conftest import named_fabric

SPEC = "fat-tree:k=4,levels=2"


@pytest.fixture(scope="module")
def planned():
    f = load_fabric(SPEC)
    plan = make_plan(f)
    hs, hd, r = plan.pairs
    return f, plan, PairModel(f, hs, hd, r, bytes=np.full(len(hs), float(plan.size)))


def _host_cable(f, host: str) -> int:
    h = f.host_index[host]
    return int(np.flatnonzero(f.link_src == h)[0]) // 2


def test_injected_cable_and_slow_host_are_named(planned, tmp_path, capsys):
    f, plan, pm = planned
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[3])
    slow = _host_cable(f, "h0009")
    faults = {inner: 0.4, slow: 0.5}
    m = synthetic(f, *plan.pairs, faults, noise=0.03, seed=1, model=pm)
    d = diagnose(m)
    got = {s["link"] // 2: s for s in d.suspects}
    assert set(got) == {inner, slow}
    assert got[inner]["factor"] == pytest.approx(0.4, rel=0.1) and got[slow]["factor"] == pytest.approx(0.5, rel=0.1)
    assert got[slow]["host"] == "h0009" and got[inner]["host"] is None
    assert d.rms_after < d.rms_before
    # the same through the CLI, from a measured result file
    meas = tmp_path / "meas.json"
    as_result(m).write_json(meas)
    out = tmp_path / "diag.json"
    assert main(["diagnose", str(meas), "--fabric", SPEC, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "host h0009" in text and cable_name(f, inner) in text
    doc = json.loads(out.read_text())
    assert doc["meta"]["kind"] == "diagnose"
    s0 = doc["extra"]["suspects"][0]
    assert {"link", "host", "name", "capacity", "nominal", "confidence", "pairs"} <= set(s0)
    assert 0 < s0["confidence"] <= 1 and s0["capacity"] < s0["nominal"]
    assert doc["extra"]["explained"]["suspect"] > 0


def test_no_fault_no_suspect_and_contention_is_explained():
    f = load_fabric("fat-tree:k=4,levels=2,up=2")         # leaves 2:1 oversubscribed
    plan = make_plan(f)
    m = synthetic(f, *plan.pairs, {}, noise=0.05, seed=2)
    d = diagnose(m)
    assert d.suspects == []
    counts = d.counts
    assert counts["contention"] > 0 and counts["suspect"] == 0
    res = d.to_result()
    lab = np.asarray(res.pairs["label"])
    lim = np.asarray(res.pairs["limit"])[lab == "contention"]
    assert all(x.startswith("s") for x in lim)              # limited by switch links, not by host cables


def test_links_crossed_by_the_same_pairs_are_reported_with_a_pair_to_split_them():
    f = load_fabric(SPEC)
    # one pair, measured three times alone: its two host cables are crossed by exactly the same pairs
    m = synthetic(f, np.array([0, 0, 0]), np.array([5, 5, 5]), np.array([0, 1, 2]),
                  {_host_cable(f, "h0000"): 0.4}, noise=0.01, seed=3)
    d = diagnose(m, penalty=10, calibrate=False)   # one pair: no bulk of healthy pairs to calibrate on
    assert len(d.suspects) == 1
    s = d.suspects[0]
    assert cable_name(f, _host_cable(f, "h0000")) in [s["cable"]] + s["tied"]
    assert cable_name(f, _host_cable(f, "h0005")) in [s["cable"]] + s["tied"]
    # confidence is the group's (one of them is degraded); each cable gets its share of it
    assert s["confidence_each"] == pytest.approx(s["confidence"] / len([s["cable"]] + s["tied"]), abs=1e-3)
    # each proposed pair really crosses one of the two cables and not the other
    for sep in s["separate_by"]:
        a, b = sep["pair"]
        pm = PairModel(f, np.array([f.host_index[a]]), np.array([f.host_index[b]]))
        crossed = {cable_name(f, int(c)) for c in pm.routes.link // 2}
        assert (s["cable"] in crossed) != (sep["cable"] in crossed)


@pytest.mark.mpi
def test_plan_predicts_the_pairs_fabscope_bench_ran(real_run):
    run = read_run(real_run)
    got = sorted((min(r["src"], r["dst"]), max(r["src"], r["dst"]), r["scenario"])
                 for r in run.of("random-pairs", "pair"))
    s, d, r = bench_random_pairs(len(run.ranks["host"]), int(run.header["seed"]), 3)
    assert sorted(zip(s.tolist(), d.tolist(), r.tolist())) == got


@pytest.mark.mpi
def test_real_run_on_one_host_has_no_inter_node_pair(real_run, tmp_path, capsys):
    fpath = tmp_path / "f.json"
    write_json(named_fabric(read_run(real_run).ranks["host"][0]), fpath)
    with pytest.raises(DiagnoseError, match="no inter-node pairs"):
        diagnose(load_measured([str(real_run)], load_fabric(str(fpath))))
    out = tmp_path / "d.json"
    assert main(["diagnose", str(real_run), "--fabric", str(fpath), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no inter-node pairs" in err[0] and not out.exists()


def test_plan_cli_writes_a_script_whose_pairs_cover_every_cable(tmp_path, capsys):
    out = tmp_path / "plan.sh"
    assert main(["diagnose", "--plan", "--fabric", SPEC, "--budget", "10min", "-o", str(out)]) == 0
    script = out.read_text()
    assert script.startswith("#!/bin/sh") and script.count("$FABSCOPE measure") == 5   # 4 leaves + all hosts
    assert "$FABSCOPE diagnose plan-leaf000.jsonl" in script
    summary = json.loads((tmp_path / "plan.sh.json").read_text())
    assert summary["estimated_seconds"] <= 600 and summary["cover_min"] >= 4 and summary["unidentifiable"] == []
    f = load_fabric(SPEC)
    plan = make_plan(f)
    pm = PairModel(f, *plan.pairs)
    assert len(np.unique(pm.routes.link // 2)) == f.n_links // 2
    for argv, msg in ((["--budget", "5s"], "budget"), (["--budget", "soon"], "cannot read duration")):
        assert main(["diagnose", "--plan", "--fabric", SPEC, *argv, "-o", str(tmp_path / "x.sh")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0] and not (tmp_path / "x.sh").exists()


def test_diagnose_needs_measurements(capsys, tmp_path):
    assert main(["diagnose", "--fabric", SPEC]) == 1
    assert "needs measured runs" in capsys.readouterr().err


def test_plans_of_the_docs_table(itasca_fabric):
    """docs/diagnose.md, "Planned": the 2-level k=4 tree's plan (budget 10 min, 1 MiB x 20) is 5 jobs,
    40 rounds, 224 pairs, about 21 s; Itasca's plan leaves out exactly the 72 cables no min-hop route
    crosses (line switches 17 and 18 of each director) and otherwise covers every cable.  Its plan
    stops where 100 rounds brought no progress and leaves those rounds out (it was 488 rounds with
    them: 64 directions inside the directors stay short of pairs they hold back either way)."""
    small = make_plan(load_fabric(SPEC), budget=600.0).summary()
    assert (small["jobs"], small["rounds"], small["pairs"]) == (5, 40, 224)
    assert 20 < small["estimated_seconds"] < 22
    big = make_plan(itasca_fabric, budget=600.0).summary()
    assert itasca_fabric.n_links // 2 == 2256 and big["unrouted_cables"] == 72
    assert big["uncovered"] == [] and big["never_at_line_rate"] == 0
    assert (big["jobs"], big["rounds"], big["pairs"]) == (68, 388, 66464)


def test_second_diagnosis_from_the_firsts_basis_is_the_same(planned):
    """The CLI's second fit (another nominal prediction for the same pairs) takes the snapshot, the
    fit's matrices, the null's effects and the ties from the first (diagnose/basis.py): its answer
    is that of a diagnosis made from nothing, on a fabric with a cable and a slow host degraded."""
    from fabscope.diagnose.basis import Basis

    f, plan, pm = planned
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[3])
    m = synthetic(f, *plan.pairs, {inner: 0.4, _host_cable(f, "h0009"): 0.5}, noise=0.03, seed=1, model=pm)
    bw0 = pm.bandwidth()
    rng = np.random.default_rng(5)
    nominals = [bw0 * np.exp(rng.normal(0, 0.02, len(bw0))) for _ in range(2)]
    basis = Basis()
    first = diagnose(m, nominal=nominals[0], basis=basis)
    assert first.suspects and basis.measured is m
    again = diagnose(m, nominal=nominals[1], basis=basis)
    alone = diagnose(m, nominal=nominals[1])
    assert again.model is first.model and alone.model is not first.model       # taken, not made again
    assert json.dumps(again.suspects) == json.dumps(alone.suspects)
    for k in ("factor", "modeled", "fitted", "label", "limit"):
        np.testing.assert_array_equal(getattr(again, k), getattr(alone, k))
    keep = lambda d: {k: v for k, v in d.meta.items() if k not in ("null",)}
    assert json.dumps(keep(again), sort_keys=True) == json.dumps(keep(alone), sort_keys=True)
    assert {k: v for k, v in again.meta["null"].items() if k != "seconds"} == \
        {k: v for k, v in alone.meta["null"].items() if k != "seconds"}
