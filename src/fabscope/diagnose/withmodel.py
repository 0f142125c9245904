"""A diagnosis with its nominal model, as ``fabscope diagnose`` makes it: the model, the fit, and where the
fit finds suspects the model again on the fabric with their estimates and the suspects estimated again.

The default model is the program the benchmark ran, in time (:mod:`.timemodel`); the fit runs on the
snapshot with each pair's in-time ratio held (:mod:`.tomography`).  The second model runs with the
estimates of the suspects the first fit is sure of (:data:`SECOND_MODEL_Z`), as the first
ran (within the budget: the same iterations, each set whole; else only the components the suspects touch
run again), and the second fit takes the first's figure-independent part (:mod:`.basis`) and its search:
it re-estimates the first's suspects and looks for no new one (:func:`.greedy.reestimate`).

>>> import dataclasses
>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.diagnose.synthetic import synthetic
>>> from fabscope.diagnose.timemodel import dynamic_bandwidth
>>> f = fat_tree(k=4, levels=2, up=2)
>>> rng = np.random.default_rng(1)
>>> hs, hd, sc = [], [], []
>>> for r in range(16):
...     p = rng.permutation(f.n_hosts); hs += p[0::2].tolist(); hd += p[1::2].tolist(); sc += [r] * (f.n_hosts // 2)
>>> shape = synthetic(f, np.array(hs), np.array(hd), np.array(sc), {}, 0.0)
>>> cap = f.link_capacity.copy(); cap[[40, 41]] *= 0.4                 # one leaf-spine cable at x0.4
>>> faulty = dataclasses.replace(shape, fabric=dataclasses.replace(f, link_capacity=cap))
>>> bw = dynamic_bandwidth(faulty, "dmodk").bandwidth * np.exp(rng.normal(0, 0.03, shape.n_pairs))
>>> d = diagnose_with_model(dataclasses.replace(shape, bandwidth=bw), "dmodk")    # "measured" in time
>>> [(s["link"], round(s["factor"], 1)) for s in d.suspects], d.meta["model_info"]["refined"]
([(40, 0.4)], True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fabscope.diagnose.basis import Basis
from fabscope.diagnose.budget import MILDEST_UNDER_BUDGET, MODEL_EVENTS
from fabscope.diagnose.measured import Measured
from fabscope.diagnose.nominal import budget_iterations, nominal_model, refined_nominal
from fabscope.diagnose.tomography import Diagnosis, diagnose

__all__ = ["diagnose_with_model"]


def _call(name: str, fn: Callable[[], Any]) -> Any:
    return fn()


def diagnose_with_model(measured: Measured, routing: Any = None, model: str = "dynamic", *,
                        iterations: int | None = None, events: float | None = MODEL_EVENTS, refine: bool = True,
                        taken: tuple | None = None,
                        step: Callable[[str, Callable[[], Any]], Any] = _call, **kw: Any) -> Diagnosis:
    """The diagnosis of ``measured`` against ``model`` (``dynamic`` or ``static``; the module docstring).
    ``iterations`` and ``events``: :func:`.nominal.nominal_model`'s; the second model runs the iterations
    the first ran.  ``refine=False``: one fit.  ``step(name, fn)`` runs each of the four steps (a bench
    times them).  ``kw``: :func:`.tomography.diagnose`'s.

    ``taken``: the healthy fabric's model of these pairs made before, ``(figures, info)`` or ``(figures,
    info, kept)`` (:func:`.nominal.nominal_from`), for the first fit; no model runs unless it finds
    suspects.  Then the program in time runs within ``events`` on the fabric with the suspects, and the
    second fit takes the model taken times their ratio to the healthy fabric's at the same iterations
    (what the suspects change in time, the budget's error on the two runs cancelling where they do not).
    That healthy run is the model taken where it ran those iterations, else ``kept`` where it holds them
    (``(figures, iterations)``: the healthy run an earlier night made), else it runs here; the diagnosis
    keeps it (``modeled_budget``) for the next night."""
    if taken is not None and model != "dynamic":
        raise ValueError("a model taken from an earlier diagnosis is the model in time: model='dynamic'")
    reuse: dict = {}        # the components' figures: the second model runs only those the suspects touch
    kept = None
    if taken is None:
        nominal, how = step("the nominal model", lambda: nominal_model(measured, routing, model, iterations=iterations,
                                                                       reuse=reuse, events=events))
    else:
        nominal, how = taken[0], taken[1]
        kept = taken[2] if len(taken) > 2 else None
    kw.setdefault("mildest", mildest(how))
    basis = Basis()         # what the second fit takes from the first: all but the figures and the nominal
    d = step("the fit", lambda: diagnose(measured, routing, nominal=nominal,
                                         meta={"model": how["model"], "model_info": how}, basis=basis, **kw))
    if taken is not None and kept is not None:           # carried to the next night
        d.modeled_budget = kept[0]
        d.meta["model_info"] = how = {**how, "budget_iterations": list(kept[1])}
    if nominal is None or not d.suspects or not refine:
        return d
    ran, ran_how = nominal, how
    if taken is not None:
        ran, ran_how = _healthy_at_budget(measured, routing, model, nominal, how, kept, iterations, events, reuse, step)
        how = {**how, "rerun_iterations": ran_how.get("iterations")}
        if ran is not nominal:
            how.update(budget_iterations=list(ran_how["iterations"]), budget_taken=bool(ran_how.get("taken")))
    workers, fast = None, True
    if iterations is None and ran_how.get("events_budget"):     # the second model runs as the first ran
        iterations, workers, fast = ran_how["iterations"][0], ran_how["workers"], False
    sure, unsure = _sure_only(d)
    if unsure:
        how = {**how, "second_model_without": unsure}
    again = step("the model on the fabric with the suspects",
                 lambda: refined_nominal(measured, sure, routing, iterations=iterations, reuse=reuse,
                                         pm=basis.pm, healthy=basis.bw0, workers=workers, fast=fast))
    if taken is not None:
        again = again * (nominal / ran)
    first = d
    d = step("the suspects estimated again", lambda: diagnose(
        measured, routing, nominal=again, meta={"model": how["model"], "model_info": {**how, "refined": True}},
        basis=basis, refit=first, **kw))
    # the healthy fabric's prediction stays the model of record
    d.modeled, d.rms_before = first.modeled, first.rms_before
    if taken is not None:       # the healthy run at the budget for the next night: this one's, or the one carried
        d.modeled_budget = ran if ran is not nominal else first.modeled_budget
    return d


#: the evidence, in the null's scales above its location, under which a first fit's suspect is left out of the
#: second model: the second fit then tests it against the program in time without its own cut.  Run with it,
#: the model takes the cut's effect in time into the nominal, and the test is circular: on a 13x13x13 torus's
#: night (noise seed 4) a cable beside one at x0.40 on its line, named by the first fit at x0.73 with 12.2
#: nats against a penalty of 11.8 (5.1 null scales), was kept by the second fit at 12.6 with itself in the
#: model, and dropped without it, the 4 true faults unchanged (docs/diagnose.md, *How diagnose uses it*).
#: 10.2: the largest gain noise gives reaches it once in 27,000 diagnoses (the null's Gumbel law).  A
#: threshold on the evidence, not on the confidence, so that the confidence's calibration (a reading for the
#: user, :mod:`.confidence`) does not move the models.
SECOND_MODEL_Z = 10.2


def _sure_only(d: Diagnosis) -> tuple[np.ndarray, list[str]]:
    """``d``'s capacity factors with its suspects under :data:`SECOND_MODEL_Z` null scales left healthy, and
    those suspects' names."""
    factor = np.array(d.factor, float)
    unsure = [s for s, z in zip(d.suspects, d.search["z"]) if z < SECOND_MODEL_Z]
    for s in unsure:
        factor[s["links"]] = 1.0
    return factor, [str(s["name"]) for s in unsure]


def mildest(how: dict[str, Any]) -> float:
    """The mildest factor a suspect may have under the nominal model ``how`` (its ``model_info``):
    :data:`.budget.MILDEST_UNDER_BUDGET` where its budget of engine events had it run fewer timed iterations
    than were measured (``iterations_measured``, which only the budget records), else 1.

    >>> mildest({"iterations": [4], "iterations_measured": [100]}), mildest({"iterations": [100]})
    (0.8, 1.0)
    """
    its, measured = list(how.get("iterations") or []), list(how.get("iterations_measured") or [])
    return MILDEST_UNDER_BUDGET if its and measured and min(its) < max(measured) else 1.0


def _healthy_at_budget(measured: Measured, routing: Any, model: str, nominal: np.ndarray, how: dict,
                       kept: tuple | None, iterations: int | None, events: float | None, reuse: dict,
                       step: Callable) -> tuple[np.ndarray, dict[str, Any]]:
    """The healthy fabric's model at the iterations the model with the suspects runs within ``events``: the
    model taken where it ran them, else ``kept`` where it holds them, else run here."""
    n_it = iterations if iterations is not None else budget_iterations(measured, events)[0]
    if n_it is not None and iterations is None:
        same = {"iterations": [int(n_it)], "workers": 1, "events_budget": int(events or 0), "taken": True}
        if list(how.get("iterations") or []) == [n_it]:
            return nominal, same
        if kept is not None and list(kept[1]) == [n_it]:
            return kept[0], same
    return step("the healthy model at the budget",
                lambda: nominal_model(measured, routing, model, iterations=iterations, reuse=reuse, events=events))
