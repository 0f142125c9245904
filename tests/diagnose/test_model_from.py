"""``diagnose --model-from``: the healthy fabric's model in time taken from an earlier diagnosis of the same
pairs (a nightly job's last night), run again only where the first fit finds suspects."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import fabscope.diagnose.withmodel as withmodel
from fabscope.cli import main
from fabscope.diagnose.budget import EVENTS_PER_PAIR_ITERATION
from fabscope.diagnose.synthetic import as_result
from fabscope.diagnose.tomography import cable_name
from fabscope.fabric.io import load_fabric
from fabscope.result import Result

from diagnose.test_budget import ITERS, SPEC, WARM, _in_time, _inner


def _night(tmp_path, name, m):
    res = as_result(m)
    res.meta["argv"] = ["fabscope-bench", "random-pairs", "--iterations", str(ITERS)]
    path = tmp_path / name
    res.write_json(path)
    return path


@pytest.fixture
def runs(monkeypatch):
    """The models the command runs (the real ones, counted)."""
    made = []
    real = withmodel.nominal_model
    monkeypatch.setattr(withmodel, "nominal_model", lambda *a, **k: made.append(k.get("events")) or real(*a, **k))
    return made


def test_a_healthy_night_runs_no_model_and_a_faulty_one_the_budget_twice_then_once(tmp_path, capsys, runs):
    f = load_fabric(SPEC)
    inner = _inner(f)
    healthy = _night(tmp_path, "n1.json", _in_time(f, inner, 1.0, seed=1))
    d1, d2 = tmp_path / "d1.json", tmp_path / "d2.json"
    # night 1: every measured iteration modeled, once
    assert main(["diagnose", str(healthy), "--fabric", SPEC, "--model-events", "0", "-o", str(d1)]) == 0
    assert len(runs) == 1
    first = Result.read_json(d1)
    assert first.extra["suspects"] == [] and first.meta["model_info"]["iterations"] == [ITERS]
    # night 2, the same pairs, healthy: the model taken, none run; the same figures of record
    capsys.readouterr()
    assert main(["diagnose", str(healthy), "--fabric", SPEC, "--model-from", str(d1), "-o", str(d2)]) == 0
    assert len(runs) == 1
    assert f"taken from {d1}, not run again" in capsys.readouterr().out
    second = Result.read_json(d2)
    np.testing.assert_allclose(second.pairs["modeled"], first.pairs["modeled"], rtol=1e-12)
    assert second.meta["model_info"]["taken_from"] == str(d1) and second.extra["suspects"] == []
    # night 3, the same pairs with a cable at x0.4: named; the program run twice within the budget (the
    # healthy fabric and the suspects), the model of record still night 1's
    faulty = _night(tmp_path, "n3.json", _in_time(f, inner, 0.4, seed=2))
    budget = EVENTS_PER_PAIR_ITERATION * len(first.pairs["src"]) * (20 + WARM)
    d3 = tmp_path / "d3.json"
    assert main(["diagnose", str(faulty), "--fabric", SPEC, "--model-from", str(d2), "--model-events", str(budget),
                 "-o", str(d3)]) == 0
    assert runs[1:] == [budget]
    third = Result.read_json(d3)
    info = third.meta["model_info"]
    assert info["taken_from"] == str(d2) and info["rerun_iterations"] == [20] and info["refined"] is True
    assert [s["cable"] for s in third.extra["suspects"]] == [cable_name(f, inner)]
    assert abs(third.extra["suspects"][0]["factor"] - 0.4) < 0.05
    np.testing.assert_allclose(third.pairs["modeled"], first.pairs["modeled"], rtol=1e-12)
    # night 3 kept the healthy run at the budget: night 4 (faulty again) takes it and runs the program once
    assert info["budget_iterations"] == [20] and len(third.pairs["modeled_budget"]) == len(third.pairs["modeled"])
    faulty4 = _night(tmp_path, "n4.json", _in_time(f, inner, 0.4, seed=3))
    d4, d4_ran = tmp_path / "d4.json", tmp_path / "d4-ran.json"
    capsys.readouterr()
    assert main(["diagnose", str(faulty4), "--fabric", SPEC, "--model-from", str(d3), "--model-events", str(budget),
                 "-o", str(d4)]) == 0
    assert runs[1:] == [budget]                 # no healthy run this night
    assert "that an earlier night made" in capsys.readouterr().out
    fourth = Result.read_json(d4)
    assert fourth.meta["model_info"]["budget_taken"] is True
    np.testing.assert_allclose(fourth.pairs["modeled_budget"], third.pairs["modeled_budget"], rtol=1e-12)
    # the same night with the healthy run made again: the same suspect, the same estimate
    assert main(["diagnose", str(faulty4), "--fabric", SPEC, "--model-from", str(d2), "--model-events", str(budget),
                 "-o", str(d4_ran)]) == 0
    assert runs[1:] == [budget, budget]
    ran4 = Result.read_json(d4_ran)
    assert [s["cable"] for s in fourth.extra["suspects"]] == [s["cable"] for s in ran4.extra["suspects"]] \
        == [cable_name(f, inner)]
    assert abs(fourth.extra["suspects"][0]["factor"] - ran4.extra["suspects"][0]["factor"]) < 1e-9
    # a healthy night carries the kept run on
    d5 = tmp_path / "d5.json"
    assert main(["diagnose", str(healthy), "--fabric", SPEC, "--model-from", str(d4), "-o", str(d5)]) == 0
    fifth = Result.read_json(d5)
    assert fifth.extra["suspects"] == [] and fifth.meta["model_info"]["budget_iterations"] == [20]
    np.testing.assert_allclose(fifth.pairs["modeled_budget"], third.pairs["modeled_budget"], rtol=1e-12)


def test_another_plan_or_model_is_refused_before_any_model_runs(tmp_path, capsys, runs):
    f = load_fabric(SPEC)
    night = _night(tmp_path, "n1.json", _in_time(f, _inner(f), 1.0, seed=1))
    d1, static, out = tmp_path / "d1.json", tmp_path / "static.json", tmp_path / "out.json"
    assert main(["diagnose", str(night), "--fabric", SPEC, "-o", str(d1)]) == 0
    assert main(["diagnose", str(night), "--fabric", SPEC, "--model", "static", "-o", str(static)]) == 0
    m = _in_time(f, _inner(f), 1.0, seed=1)
    other = _night(tmp_path, "other.json", dataclasses.replace(m, hs=m.hd, hd=m.hs, src=m.dst, dst=m.src))
    bad = dict(json.loads(d1.read_text()))
    bad["pairs"] = dict(bad["pairs"])
    bad["pairs"]["modeled"] = [-1.0] + list(bad["pairs"]["modeled"][1:])
    junk = tmp_path / "junk.json"
    junk.write_text(json.dumps(bad))
    bad_kept = dict(json.loads(d1.read_text()))
    bad_kept["pairs"] = dict(bad_kept["pairs"], modeled_budget=["x"] + list(bad_kept["pairs"]["modeled"][1:]))
    bad_kept["meta"] = dict(bad_kept["meta"], model_info=dict(bad_kept["meta"]["model_info"], budget_iterations=[20]))
    junk_kept = tmp_path / "junk-kept.json"
    junk_kept.write_text(json.dumps(bad_kept))
    capsys.readouterr()
    del runs[:]
    cases = [
        ([str(other), "--model-from", str(d1)], "its pairs are not these (pair 0: "),
        ([str(night), "--model-from", str(static)], "made with the 'static' model"),
        ([str(night), "--model-from", str(night)], "not a diagnosis"),
        ([str(night), "--model-from", str(junk)], "pair 0's modeled figure is -1.0, not a positive number"),
        ([str(night), "--model-from", str(junk_kept)], "pair 0's modeled_budget figure is x, not a positive number"),
        ([str(night), "--model-from", str(d1), "--fabric", "fat-tree:k=4,levels=2"], "a diagnosis on fabric"),
        ([str(night), "--model-from", str(d1), "--routing", "ecmp-random"], "routed by"),
        ([str(night), "--model-from", str(d1), "--model", "static"], "not with --model static"),
    ]
    for argv, want in cases:
        argv = ["diagnose", *argv] + ([] if "--fabric" in argv else ["--fabric", SPEC]) + ["-o", str(out)]
        assert main(argv) == 1, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and want in err[0], (argv, err)
        assert not out.exists()
    assert runs == []
