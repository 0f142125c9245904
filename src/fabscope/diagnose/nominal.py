"""What diagnose takes as the healthy fabric's prediction: the program in time (:mod:`.timemodel`) within
its budget of engine events (:mod:`.budget`), or the snapshot; and the same program rerun on the fabric
with a first fit's estimates, for the second fit (:mod:`.withmodel` runs the two).

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.diagnose.synthetic import synthetic
>>> m = synthetic(fat_tree(k=4, levels=2), np.arange(8), np.arange(8, 16), np.zeros(8, np.int64), {}, 0.0)
>>> bw, how = nominal_model(m, events=4_000)                # 8 pairs x 102 iterations x 8 events: over it
>>> how["iterations"], how["iterations_measured"], how["events"] <= how["events_budget"]
([60], [100], True)
>>> nominal_model(m, model="static")
(None, {'model': 'static', 'sharing': 'maxmin'})
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.arrays import unique
from fabscope.diagnose.budget import EVENTS_PER_PAIR_ITERATION, MIN_BUDGET_ITERATIONS, MODEL_EVENTS
from fabscope.diagnose.measured import Measured, run_iterations
from fabscope.diagnose.timemodel import MODELS, default_workers, dynamic_bandwidth

__all__ = ["PARALLEL_PAIRS", "budget_iterations", "nominal_from", "nominal_model", "refined_nominal"]


#: below this many measured pairs the sets run in this process (starting workers costs ~0.1 s)
PARALLEL_PAIRS = 5000


def _workers(measured: Measured, workers: int | None) -> int:
    if workers is not None:
        return workers
    return default_workers() if measured.n_pairs >= PARALLEL_PAIRS else 1


def budget_iterations(measured: Measured, events: float | None) -> tuple[int | None, dict[str, Any]]:
    """The timed iterations the model in time runs within ``events`` engine events (``None``: the measured
    count, where it fits or ``events`` is ``None``/0), and what was estimated.  The estimate is
    :data:`EVENTS_PER_PAIR_ITERATION` per pair and iteration, warm-up included.

    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.diagnose.synthetic import synthetic
    >>> f = fat_tree(k=4, levels=2)
    >>> m = synthetic(f, np.arange(8), np.arange(8, 16), np.zeros(8, np.int64), {}, 0.0)
    >>> budget_iterations(m, 10_000)[0] is None         # 8 pairs x 102 iterations x 8: fits
    True
    >>> budget_iterations(m, 4_000)                     # 4,000 / 64 - 2 = 60
    (60, {'events_budget': 4000, 'events_estimated': 6528, 'iterations_measured': [100]})
    """
    if not events:
        return None, {}
    sel = measured.inter & measured.pingpong
    its, n, warm = [], 0, []
    for s in unique(measured.scenario[sel]).tolist():
        at = np.flatnonzero(sel & (measured.scenario == s))
        dflt_it, dflt_w = run_iterations(str(measured.test[at[0]]), None)
        it = int(measured.iters[at[0]]) if measured.iters is not None else dflt_it
        w = int(measured.warmup[at[0]]) if measured.warmup is not None else dflt_w
        its.append(it)
        warm.append((len(at), w))
        n += len(at) * (it + w)
    if not n:
        return None, {}
    estimate = EVENTS_PER_PAIR_ITERATION * n
    if estimate <= events:
        return None, {}
    pairs = sum(k for k, _ in warm)
    w_mean = sum(k * w for k, w in warm) / pairs
    n_it = max(MIN_BUDGET_ITERATIONS, int(events // (EVENTS_PER_PAIR_ITERATION * pairs) - w_mean))
    if n_it >= min(its):
        return None, {}
    return n_it, {"events_budget": int(events), "events_estimated": int(estimate),
                  "iterations_measured": sorted(set(its))}


def nominal_model(measured: Measured, routing: Any = None, model: str = "dynamic", *,
                  iterations: int | None = None, engine: str = "auto", fast: bool = True,
                  workers: int | None = None, reuse: dict | None = None,
                  events: float | None = MODEL_EVENTS) -> tuple[np.ndarray | None, dict[str, Any]]:
    """What diagnose takes as the healthy fabric's prediction: the program in time (the per-pair
    figures and how they were made), or ``None`` for the snapshot.  ``workers``: processes for the
    sets (``None``: the usable cores from :data:`PARALLEL_PAIRS` pairs on, else 1).  ``reuse``: the
    components' figures, kept for :func:`refined_nominal` (:func:`dynamic_bandwidth`).

    ``events``: where ``iterations`` is not given and the measured iterations would take more engine
    events than this, the model runs the timed iterations that fit (:func:`budget_iterations`; at
    least :data:`MIN_BUDGET_ITERATIONS`) and its info says so (``events_budget``, ``events_estimated``,
    ``iterations_measured``), each set whole (``fast=False``), in one process unless ``workers`` says
    otherwise.  ``None`` or 0: the measured count whatever it costs.
    """
    from fabscope.diagnose.measured import DiagnoseError

    if model not in MODELS:
        raise DiagnoseError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
    if model == "static":
        return None, {"model": "static", "sharing": "maxmin"}
    budget: dict[str, Any] = {}
    if iterations is None:
        iterations, budget = budget_iterations(measured, events)
        if budget:
            # a few iterations: each set whole (the components' shortcut saves little or costs more: 3.2
            # against 3.8 CPU s on the 3-level tree, 0.37 against 0.87 on a dragonfly, 1.37 against 1.32 on
            # a torus), and seconds of model, where a second process costs more CPU than it saves
            fast = False
            workers = 1 if workers is None else workers
    sel = measured.inter
    pred = dynamic_bandwidth(measured.subset(sel) if not sel.all() else measured, routing,
                             iterations=iterations, engine=engine, fast=fast, workers=_workers(measured, workers),
                             reuse=reuse)
    bw = np.full(measured.n_pairs, np.nan)
    bw[sel] = pred.bandwidth
    return bw, {**pred.info, **budget}


def refined_nominal(measured: Measured, factor: np.ndarray, routing: Any = None, *,
                    iterations: int | None = None, engine: str = "auto", fast: bool = True,
                    workers: int | None = None, reuse: dict | None = None, pm: Any = None,
                    healthy: np.ndarray | None = None) -> np.ndarray:
    """The nominal prediction for a second fit: the snapshot of the healthy fabric times each pair's
    ratio in time / snapshot on the fabric with the first fit's capacity ``factor`` per directed link
    (or per cable, both directions alike).

    The first fit holds each pair's in-time ratio at its healthy value; a slow cable changes how
    pairs crossing it overlap in time, so the ratio is taken again where the faults are.  ``reuse``:
    the dict :func:`nominal_model` filled; the components no changed capacity touches are not run
    again (the same figures).  ``pm`` and ``healthy``: the snapshot of the inter-node pairs
    (:class:`.pairmodel.PairModel`) and its healthy bandwidths, where the caller has them (a diagnosis's
    :class:`.basis.Basis`); else made here.
    """
    import dataclasses

    from fabscope.diagnose.pairmodel import PairModel

    sel = measured.inter
    m = measured.subset(sel) if not sel.all() else measured
    f = m.fabric
    factor = np.asarray(factor, float)
    cap = f.link_capacity * (factor if len(factor) == f.n_links else np.repeat(factor, 2))
    faulty = dataclasses.replace(m, fabric=dataclasses.replace(f, link_capacity=cap))
    dyn = dynamic_bandwidth(faulty, routing, iterations=iterations, engine=engine, fast=fast,
                            workers=_workers(measured, workers), reuse=reuse).bandwidth
    if pm is None:
        pm = PairModel(f, m.hs, m.hd, m.scenario, m.pingpong, m.bytes, routing)
    out = np.full(measured.n_pairs, np.nan)
    out[sel] = (pm.bandwidth() if healthy is None else healthy) * dyn / pm.bandwidth(cap)
    return out


def nominal_from(earlier: Any, measured: Measured, routing_name: str, origin: str = "the earlier diagnosis"
                 ) -> tuple[np.ndarray, dict[str, Any], tuple[np.ndarray, list[int]] | None]:
    """The healthy fabric's model of ``measured`` taken from ``earlier``, a diagnosis (a
    :class:`fabscope.result.Result` of kind ``diagnose``) of the same pairs with the model in time: each
    pair's ``modeled`` figure, which a diagnosis keeps as the healthy fabric's prediction whatever it
    found (a nightly job's last night, made with ``--model-events 0`` once and carried from night to
    night).  Its info is the earlier model's, with ``taken_from``; third, the healthy run at the budget's
    iterations the earlier diagnosis kept (``(figures, [iterations])``, :mod:`.withmodel`), or None.

    Refused, naming what differs (:class:`.measured.DiagnoseError`): another kind of result, the
    snapshot's model, another fabric or routing, other pairs (hosts, sizes, concurrent sets, tests,
    iterations, in the same order), a figure that is not a positive number.

    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.diagnose.synthetic import synthetic
    >>> from fabscope.diagnose.tomography import diagnose
    >>> m = synthetic(fat_tree(k=4, levels=2), np.arange(8), np.arange(8, 16), np.zeros(8, np.int64), {}, 0.0)
    >>> bw, how = nominal_model(m)
    >>> res = diagnose(m, nominal=bw, meta={"model": "dynamic", "model_info": how}).to_result()
    >>> bw2, how2, kept = nominal_from(res, m, res.meta["routing"], "night1.json")
    >>> bool(np.allclose(bw2, bw, rtol=1e-12)), how2["taken_from"], how2["iterations"], kept
    (True, 'night1.json', [100], None)
    >>> other = synthetic(m.fabric, np.arange(8), np.arange(8, 16)[::-1], np.zeros(8, np.int64), {}, 0.0)
    >>> nominal_from(res, other, res.meta["routing"], "night1.json")
    Traceback (most recent call last):
    ...
    fabscope.diagnose.measured.DiagnoseError: --model-from night1.json: its pairs are not these (pair 0: h0000 -> h0008 there, h0000 -> h0015 here)
    """
    from fabscope.diagnose.measured import DiagnoseError

    meta, pairs = earlier.meta, earlier.pairs
    say = f"--model-from {origin}"
    if meta.get("kind") != "diagnose":
        raise DiagnoseError(f"{say}: not a diagnosis (a result of kind {str(meta.get('kind'))[:40]!r}); give "
                            "what diagnose -o wrote")
    if meta.get("model") != "dynamic":
        raise DiagnoseError(f"{say}: made with the {str(meta.get('model'))[:40]!r} model; only the model in time "
                            "is taken (the snapshot costs little to make again)")
    f = measured.fabric
    if meta.get("fabric") != f.name or dict(meta.get("fabric_params") or {}) != dict(f.params):
        raise DiagnoseError(f"{say}: a diagnosis on fabric {str(meta.get('fabric'))[:80]!r}, not {f.name!r}")
    if meta.get("routing") != routing_name:
        raise DiagnoseError(f"{say}: routed by {str(meta.get('routing'))[:40]!r}, not {routing_name!r}")
    sel = measured.inter
    m = measured.subset(sel) if not sel.all() else measured
    names = np.array(f.host_names, dtype=object)
    here = {"src_host": names[m.hs].astype(str), "dst_host": names[m.hd].astype(str), "bytes": m.bytes,
            "scenario": m.scenario, "test": m.test}
    if m.iters is not None or "iters" in pairs:
        here["iters"] = m.iters
    n = len(pairs.get("src_host", ()))
    if n != m.n_pairs:
        raise DiagnoseError(f"{say}: its pairs are not these ({n:,} pairs there, {m.n_pairs:,} here)")
    for col, mine in here.items():
        theirs = pairs.get(col)
        if theirs is None or mine is None:
            raise DiagnoseError(f"{say}: its pairs are not these (the {col} of each pair is known on one side only)")
        same = np.asarray(theirs) == np.asarray(mine)
        if not np.all(same):
            k = int(np.flatnonzero(~same)[0])
            there = f"{str(pairs['src_host'][k])[:80]} -> {str(pairs['dst_host'][k])[:80]}"     # the file's names
            mine_k = f"{here['src_host'][k]} -> {here['dst_host'][k]}"
            what = (f"{there} there, {mine_k} here" if there != mine_k else
                    f"{there}: its {col} {str(np.asarray(theirs)[k])[:40]} there, {str(np.asarray(mine)[k])[:40]} here")
            raise DiagnoseError(f"{say}: its pairs are not these (pair {k}: {what})")
    try:
        modeled = np.asarray(pairs["modeled"], dtype=float)
    except (KeyError, TypeError, ValueError):
        raise DiagnoseError(f"{say}: no modeled figure for each pair") from None
    bad = ~(np.isfinite(modeled) & (modeled > 0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DiagnoseError(f"{say}: pair {k}'s modeled figure is {str(pairs['modeled'][k])[:40]}, not a positive "
                            "number of bytes/s")
    bw = np.full(measured.n_pairs, np.nan)
    bw[sel] = modeled
    info = meta.get("model_info") if isinstance(meta.get("model_info"), dict) else {}
    keep = ("model", "sharing", "engine", "iterations", "iterations_measured", "events", "events_budget",
            "events_estimated", "ports", "phases")
    return bw, {**{k: info[k] for k in keep if k in info}, "model": "dynamic", "taken_from": origin}, \
        _kept_budget(pairs, info, sel, measured.n_pairs, say)


def _kept_budget(pairs: dict, info: dict, sel: np.ndarray, n: int, say: str
                 ) -> tuple[np.ndarray, list[int]] | None:
    """The healthy run at the budget's iterations an earlier diagnosis kept (``modeled_budget``, its
    ``budget_iterations``), or None where it kept none; refused where a figure is not a positive number."""
    from fabscope.diagnose.measured import DiagnoseError

    its = info.get("budget_iterations")
    if "modeled_budget" not in pairs or not isinstance(its, list) or len(its) != 1 or \
            not isinstance(its[0], int) or isinstance(its[0], bool) or its[0] < 1:
        return None
    try:
        fig = np.asarray(pairs["modeled_budget"], dtype=float)
    except (TypeError, ValueError):
        fig = np.full(1, np.nan)
    bad = ~(np.isfinite(fig) & (fig > 0)) if fig.shape == (int(sel.sum()),) else np.ones(1, bool)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DiagnoseError(f"{say}: pair {k}'s modeled_budget figure is {str(pairs['modeled_budget'][k])[:40]}, "
                            "not a positive number of bytes/s")
    bw = np.full(n, np.nan)
    bw[sel] = fig
    return bw, [int(its[0])]
