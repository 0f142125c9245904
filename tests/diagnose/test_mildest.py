"""Under a budget of engine events the model's own error can look like a mild fault: such suspects are not
named (diagnose's ``mildest``; budget.MILDEST_UNDER_BUDGET), and are listed as candidates ``too_mild``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabscope.diagnose.budget import MILDEST_UNDER_BUDGET
from fabscope.diagnose.plan import make_plan
from fabscope.diagnose.synthetic import synthetic
from fabscope.diagnose.timemodel import dynamic_bandwidth
from fabscope.diagnose.tomography import diagnose
from fabscope.diagnose.withmodel import diagnose_with_model
from fabscope.fabric.io import load_fabric


def _inner_cables(f):
    return np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))


def test_a_mild_cable_is_named_only_where_the_model_may_name_it():
    f = load_fabric("fat-tree:k=4,levels=2")
    plan = make_plan(f)
    strong, mild = (int(c) for c in _inner_cables(f)[[3, 9]])
    m = synthetic(f, *plan.pairs, {strong: 0.4, mild: 0.85}, noise=0.01, seed=3)
    every = {s["link"] // 2: s["factor"] for s in diagnose(m).suspects}
    assert set(every) == {strong, mild} and every[mild] == pytest.approx(0.85, abs=0.03)
    d = diagnose(m, mildest=MILDEST_UNDER_BUDGET)
    assert [s["link"] // 2 for s in d.suspects] == [strong]
    assert d.meta["mildest_factor"] == MILDEST_UNDER_BUDGET
    held = [c for c in d.meta["candidates"] if c["link"] // 2 == mild]
    assert held and held[0]["too_mild"] and held[0]["factor"] > MILDEST_UNDER_BUDGET
    assert not any(c["too_mild"] for c in diagnose(m).meta["candidates"])


def _in_time_night(rounds: int, iters: int | None = None):
    """Random pairs of a 2:1 tree ``rounds`` rounds, "measured" as the program in time runs them with one
    leaf-spine cable (links 40 and 41) at x0.4, times 3% noise."""
    f = load_fabric("fat-tree:k=4,levels=2,up=2")
    rng = np.random.default_rng(1)
    hs, hd, sc = [], [], []
    for r in range(rounds):
        p = rng.permutation(f.n_hosts)
        hs += p[0::2].tolist(); hd += p[1::2].tolist(); sc += [r] * (f.n_hosts // 2)
    shape = synthetic(f, np.array(hs), np.array(hd), np.array(sc), {}, 0.0)
    if iters is not None:
        shape = dataclasses.replace(shape, iters=np.full(shape.n_pairs, iters), warmup=np.full(shape.n_pairs, 2))
    cap = f.link_capacity.copy()
    cap[[40, 41]] *= 0.4
    faulty = dataclasses.replace(shape, fabric=dataclasses.replace(f, link_capacity=cap))
    return dataclasses.replace(shape, bandwidth=dynamic_bandwidth(faulty, "dmodk").bandwidth
                               * np.exp(rng.normal(0, 0.03, shape.n_pairs)))


def test_the_default_model_holds_back_mild_suspects_only_under_its_budget():
    m = _in_time_night(8, iters=20)
    whole = diagnose_with_model(m, "dmodk")
    assert "mildest_factor" not in whole.meta and whole.meta["model_info"]["iterations"] == [20]
    cut = diagnose_with_model(m, "dmodk", events=1)                  # the fewest iterations a budget leaves
    assert cut.meta["model_info"]["iterations"] == [3] and cut.meta["mildest_factor"] == MILDEST_UNDER_BUDGET
    assert [s["link"] for s in cut.suspects] == [s["link"] for s in whole.suspects] == [40]


def test_a_confirmation_round_under_a_budget_keeps_a_suspect_too_mild_for_its_model():
    """A whole-model diagnosis may name a cable at x0.85; the round's joint diagnosis, made within a
    budget, cannot: it keeps that suspect as it was (``kept: too mild``) rather than clear it."""
    from fabscope.diagnose.settle import settle

    f = load_fabric("fat-tree:k=4,levels=2")
    plan = make_plan(f)
    strong, mild = (int(c) for c in _inner_cables(f)[[3, 9]])
    m = synthetic(f, *plan.pairs, {strong: 0.4, mild: 0.85}, noise=0.01, seed=3)
    first = diagnose(m).suspects
    joint = diagnose(m, mildest=MILDEST_UNDER_BUDGET)
    out = settle(joint, first, 0)
    names = {s["link"] // 2: s["name"] for s in first}
    assert out["confirmed"] == [names[strong]] and out["kept_too_mild"] == [names[mild]] and not out["cleared"]
    kept = {s["link"] // 2: s for s in joint.suspects}
    assert kept[mild]["kept"] == "too mild" and kept[mild]["factor"] == pytest.approx(0.85, abs=0.03)


def test_a_suspect_the_first_fit_is_unsure_of_is_tested_against_the_model_without_it(monkeypatch):
    """The second model leaves out the first fit's suspects under SECOND_MODEL_Z null scales, so that the
    second fit does not test a suspect against a model that already holds its cut; a real fault is
    still named, at about its factor."""
    from fabscope.diagnose import withmodel

    m = _in_time_night(16)
    sure = diagnose_with_model(m, "dmodk")
    assert "second_model_without" not in sure.meta["model_info"]
    seen = []
    real = withmodel.refined_nominal
    monkeypatch.setattr(withmodel, "refined_nominal", lambda mm, factor, *a, **k: seen.append(factor) or
                        real(mm, factor, *a, **k))
    monkeypatch.setattr(withmodel, "SECOND_MODEL_Z", np.inf)                # every suspect unsure
    unsure = diagnose_with_model(m, "dmodk")
    assert unsure.meta["model_info"]["second_model_without"] == [s["name"] for s in sure.suspects]
    assert len(seen) == 1 and np.all(seen[0] == 1.0)                       # the second model: no cut
    assert [s["link"] for s in unsure.suspects] == [40]
    assert unsure.suspects[0]["factor"] == pytest.approx(0.4, abs=0.05)
