"""Explain or suspect: which cables and hosts deliver less than the fabric says.

Given measured pairs (:mod:`.measured`), :func:`diagnose`

1. models the same pairs on the same routes with the same concurrency
   (:class:`.pairmodel.PairModel`); the log of measured / modeled is each
   pair's residual, after one global factor (the median ratio: what the MPI
   gets of the links' rate, reported as ``efficiency``);
2. estimates the noise (:mod:`.noise`) first from the pairs the model puts
   at their path's rate (no fault can speed those), then again on what the
   faults found leave unexplained, and calls a pair slow when its residual
   lies below ``sigmas`` times the nominal spread;
3. infers every cable's effective capacity from all pairs at once: the
   sparse set of capacity factors (most cables healthy) under which the flow
   model best reproduces every pair.  Greedily, like NetBouncer's iterative
   explanation: among the cables slow pairs cross, the one whose degradation
   (by the best factor on a grid, :mod:`.scan`) most reduces the robust
   (Huber) misfit of *all* pairs, healthy ones included, is added while the
   reduction pays its penalty (``penalty`` in units of the noise variance, a
   BIC-like prior that a cable is healthy); the whole model is then rerun
   with the estimates, every suspect is re-estimated with the others in
   place and dropped if it no longer pays its way;
4. labels every inter-node pair: ``nominal`` (near the model, at the rate of
   its path), ``contention`` (near the model, which holds it below its
   path's rate by sharing: routing or oversubscription, with the link that
   limits it), ``suspect`` (slow, explained by the estimated faults),
   ``unexplained`` (slow, not explained) or ``faster`` (above the model);
5. finds cables the measurements cannot tell apart (crossed by exactly the
   same pairs) and, for each suspect's group, a host pair that would split it.

A cable is one unknown for both its directions (a cable that trains at a
lower width or speed does so both ways); a host's only cable is its NIC, so
a slow host and a bad host cable are the same unknown here and are reported
as the host.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.diagnose.measured import Measured
>>> from fabscope.diagnose.pairmodel import PairModel
>>> f = fat_tree(k=4, levels=2)                        # 16 hosts, 4 leaves, 4 spines
>>> rng = np.random.default_rng(0)
>>> hs, hd, sc = [], [], []
>>> for r in range(12):                                # 12 rounds of random pairs
...     p = rng.permutation(16); hs += p[0::2].tolist(); hd += p[1::2].tolist(); sc += [r] * 8
>>> pm = PairModel(f, hs, hd, sc, routing="dmodk")
>>> cap = f.link_capacity.copy(); cap[[40, 41]] *= 0.4  # one leaf-spine cable at 40%
>>> bw = pm.bandwidth(cap) * np.exp(rng.normal(0, 0.03, len(hs)))
>>> m = Measured(f, np.arange(len(hs)), np.arange(len(hs)), np.array(hs), np.array(hd), np.full(len(hs), 1e6),
...              bw, np.zeros(len(hs)), np.array(sc), np.ones(len(hs), bool), np.full(len(hs), "random-pairs"),
...              (), tuple(("x", "random-pairs", r) for r in range(12)))
>>> d = diagnose(m, "dmodk")
>>> [(s["name"] == cable_name(f, 20), round(s["factor"], 1)) for s in d.suspects]
[(True, 0.4)]
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fabscope.arrays import median, unique
from fabscope.diagnose.basis import Basis
from fabscope.diagnose.budget import too_mild
from fabscope.diagnose.cables import (cable_host, cable_name, column_rows, direction_name, separating_pairs,
                                      tie_group)
from fabscope.diagnose.calibration import detectable, null_calibration
from fabscope.diagnose.fit import GRID
from fabscope.diagnose.greedy import free_units, reestimate, search
from fabscope.diagnose.measured import DiagnoseError, Measured
from fabscope.diagnose.noise import PRIOR, fit_noise
from fabscope.diagnose.pairmodel import PairModel
from fabscope.result import Result

__all__ = ["Diagnosis", "diagnose", "cable_name", "cable_host", "LABELS", "GRID"]

LABELS = ("nominal", "contention", "suspect", "unexplained", "faster")
#: searches at most: the first under the prior's jitter, then under the jitter left once the faults
#: found explain their pairs
JITTER_PASSES = 3


@dataclass(eq=False)
class Diagnosis:
    measured: Measured
    model: PairModel
    modeled: np.ndarray          # nominal model, bytes/s per pair
    fitted: np.ndarray           # model with the estimated capacities
    efficiency: float
    sigma: float
    threshold: float
    factor: np.ndarray           # per directed link: estimated capacity / nominal
    label: np.ndarray            # per pair: index into LABELS
    limit: np.ndarray            # per pair: name of the link that limits it in the nominal model
    suspects: list[dict[str, Any]]
    ties: list[list[int]]        # groups of covered cables crossed by the same pairs
    uncovered: np.ndarray        # cables no measured pair crosses
    rms_before: float
    rms_after: float
    seconds: float
    meta: dict[str, Any] = field(default_factory=dict)
    used: np.ndarray | None = None     # the per-pair figure diagnosed (bytes/s): robust or mean
    spread: np.ndarray | None = None   # (worst - best) / median iteration, NaN where unknown
    #: what a second fit of the same pairs takes from this one (``diagnose(refit=)``): the suspects
    #: chosen (units), the penalty, the null and the noise model the search ended under
    search: dict[str, Any] = field(default_factory=dict, repr=False)
    #: the healthy fabric's model in time at the budget's iterations where ``modeled`` is another (a model
    #: taken from an earlier night: :mod:`.withmodel`), per pair, for the next night to take
    modeled_budget: np.ndarray | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {name: int(np.sum(self.label == i)) for i, name in enumerate(LABELS)}

    def to_result(self) -> Result:
        m, f = self.measured, self.measured.fabric
        names = np.array(f.host_names, dtype=object)
        used = m.bandwidth if self.used is None else self.used
        ratio = used / self.modeled
        pairs = {"src": m.src, "dst": m.dst, "src_host": names[m.hs].astype(str),
                 "dst_host": names[m.hd].astype(str), "cls": f.classify(m.hs, m.hd), "bytes": m.bytes,
                 "bandwidth": m.bandwidth, "time": m.time, "scenario": m.scenario, "test": m.test,
                 "measured": used, "mean_bandwidth": m.bandwidth, "modeled": self.modeled, "ratio": ratio, "fitted": self.fitted,
                 "label": np.array(LABELS, dtype=object)[self.label].astype(str), "limit": self.limit}
        if self.spread is not None:
            pairs["spread"] = self.spread
        if self.modeled_budget is not None:
            pairs["modeled_budget"] = self.modeled_budget
        if m.iters is not None:
            pairs["iters"] = m.iters
        for col in ("iter_min", "iter_median", "iter_max"):
            if getattr(m, col) is not None:
                pairs[col] = getattr(m, col)
        cov = self.model.pair_links.sum(axis=0).A1
        cov_c = cov[0::2] + cov[1::2]
        covered = np.flatnonzero(cov_c > 0)
        fwd, rev = self.factor[2 * covered], self.factor[2 * covered + 1]
        # a cable's estimate is its weaker direction's; each direction's factor beside it
        links = {"cable": covered, "link": 2 * covered, "capacity": f.link_capacity[2 * covered],
                 "estimate": f.link_capacity[2 * covered] * np.minimum(fwd, rev), "pairs": cov_c[covered],
                 "factor_fwd": fwd, "factor_rev": rev}
        meta = {"kind": "diagnose", "fabric": f.name, "fabric_params": dict(f.params),
                "routing": self.model.router.name, "model": "static", "sources": list(m.sources),
                "tests": sorted(set(m.test.tolist())), "scenarios": m.n_scenarios,
                "efficiency": self.efficiency, "noise_sigma": self.sigma, "threshold": self.threshold,
                "rms_log_error_before": self.rms_before, "rms_log_error_after": self.rms_after,
                "solve_seconds": round(self.seconds, 3), **{k: v for k, v in self.meta.items() if k != "candidates"}}
        extra = {"suspects": self.suspects, "candidates": self.meta.get("candidates", []), "explained": self.counts,
                 "unidentifiable": [[cable_name(f, c) for c in g] for g in self.ties if len(g) > 1][:200],
                 "uncovered_cables": len(self.uncovered),
                 "uncovered": [cable_name(f, int(c)) for c in self.uncovered[:50]]}
        return Result(meta=meta, class_labels=f.class_labels, pairs=pairs, links=links, extra=extra)


def diagnose(measured: Measured, routing: Any = None, *, sigmas: float = 3.0, penalty: float | None = None,
             max_suspects: int = 40, calibrate: bool = True, screen: int = 256, min_sigma: float = 0.01,
             false_alarm: float = 0.01, null_draws: int = 30, figure: str = "robust",
             meta: dict[str, Any] | None = None, nominal: np.ndarray | None = None,
             basis: Basis | None = None, refit: Diagnosis | None = None, mildest: float = 1.0) -> Diagnosis:
    """Explain the measured pairs by the model, and suspect the cables that it cannot (module docstring).

    ``nominal``: each measured pair's prediction by another model of the healthy fabric (the
    program in time, :mod:`.timemodel`).  The fit then runs on the snapshot with each pair's
    ratio nominal / snapshot held fixed (:mod:`.pairmodel` stays the inner loop).
    ``figure``: ``robust`` (each pair's median iteration where the input has per-iteration figures,
    else its mean) or ``mean``.  ``penalty`` (nats) defaults to the level that noise alone, drawn
    from the noise model fitted to these pairs, exceeds with chance ``false_alarm`` per diagnosis
    (``null_draws`` draws, :func:`null_calibration`).  ``basis``: kept from an earlier diagnosis of the
    same ``measured`` and ``routing`` (:class:`.basis.Basis`: the parts that do not depend on the
    figures nor on ``nominal``), filled where it holds another's.

    ``refit``: a diagnosis of the same pairs under another ``nominal`` (the program in time rerun on
    the fabric with its suspects, cli/diagnose.py).  Its suspects are re-estimated under this nominal,
    the weakest dropped while it does not pay that diagnosis's penalty (:func:`.greedy.reestimate`), and
    no new one is looked for: the search, its null calibration and its noise passes are that
    diagnosis's (the noise is fitted again to the residuals under its estimates).

    ``mildest``: a suspect's factor is at most this; a cable or host whose best estimate is milder is
    not named, and listed among the candidates as ``too_mild``.  :func:`.withmodel.diagnose_with_model`
    gives :data:`.budget.MILDEST_UNDER_BUDGET` where its budget of engine events cut the iterations modeled.
    """
    t0 = time.perf_counter()
    inter = measured.inter
    if not inter.any():
        raise DiagnoseError("no inter-node pairs: every measured pair sits on one host, so no cable is "
                            "measured; run the benchmark over several nodes")
    base = (basis if basis is not None else Basis()).of(measured, routing)
    m = base.m
    f = m.fabric
    pm, rate0, bw0 = base.pm, base.rate0, base.bw0
    bw_used, spread, fig_name = m.robust() if figure == "robust" else (m.bandwidth, None, "mean over the iterations")
    # in-time correction of the snapshot, per pair (0 without another nominal model)
    adjust = np.zeros(pm.n_pairs) if nominal is None else np.log(np.asarray(nominal, float)[inter] / bw0)
    log_meas = np.log(bw_used) - adjust
    y = log_meas - np.log(bw0)
    log_eff = float(median(y)) if calibrate else 0.0
    # the nominal level from the pairs no fault can speed: those the model puts at their path's rate
    # (a fault can speed a shared pair, its neighbours on the fault's path getting a larger share)
    unshared = bw0 >= 0.97 * base.ideal
    noise = fit_noise(y - log_eff, min_sigma, centre=None if calibrate else 0.0, unshared=unshared)
    if calibrate:       # the nominal pairs' centre, not the median of all, is the efficiency
        log_eff += noise.mu
        noise = replace(noise, mu=0.0, mu_j=noise.mu_j - noise.mu)
    e0 = y - log_eff
    sigma = noise.sigma
    thr = sigmas * sigma
    fit = base.fit.for_figures(log_meas, log_eff, noise)
    L = fit.n_links
    factor = np.ones(L)
    rate, bw = rate0, bw0
    pu = fit.pair_unit
    # faults and jitter compete for the slow pairs.  Jitter fitted to the raw residuals takes the
    # faults' pairs in too (a tight cluster of pairs cut by one amount, where moving one of several
    # faults part of the way only costs), and a null drawn from it makes noise look as strong as
    # faults.  So the first search runs under the prior's jitter (PRIOR: 1 pair in 10, around x0.5,
    # wide); then the jitter is fitted to what the faults found leave unexplained and the search goes
    # on under it from the faults found (each kept only where it still pays), until the jitter
    # settles: coordinate ascent of the joint likelihood of faults and noise.
    left_noise = None
    if refit is not None:     # a second fit: the first's suspects re-estimated, its penalty and null kept
        null, lam = refit.search["null"], refit.search["lam"]
        fit.noise = fit_noise(fit.resid(fit.solve(refit.factor)[1]), min_sigma, centre=0.0)
        found = reestimate(fit, refit.factor, list(refit.search["chosen"]), lam, mildest)
    else:
        fit.noise = replace(noise, w=PRIOR["w"], mu_j=PRIOR["mu_j"], sigma_j=max(PRIOR["sigma_j"], 2 * sigma))
        found = (factor, [], {}, 0)
        null_u = base.null_u
        effects = base.null_effects if penalty is None else None
        for k in range(JITTER_PASSES + 1):
            # the first pass, under the prior's jitter, only finds faults for the jitter to be fitted without:
            # a third of the draws calibrate it (the later passes re-estimate and drop what does not pay)
            draws = null_draws if k else max(10, null_draws // 3)
            null = null_calibration(fit, null_u, factor, rate0, bw0, draws=draws, false_alarm=false_alarm,
                                    seed=pm.n_pairs, effects=effects)
            lam = penalty if penalty is not None else null.penalty
            found = search(fit, found[0], lam, thr, max_suspects=max_suspects, screen=screen, start=found[1],
                           mildest=mildest)
            if k == JITTER_PASSES:
                break
            again = fit_noise(fit.resid(fit.solve(found[0])[1]), min_sigma, centre=0.0)
            settled = abs(again.w - fit.noise.w) < 0.01 and abs(again.mu_j - fit.noise.mu_j) < 0.05
            if settled and k:
                left_noise = again           # the noise the faults found leave: fitted already
                break
            fit.noise = again
    noise = fit.noise
    # a pair is slow by the noise the search ended under (measured once the faults found explain their
    # pairs, and the neighbours they speed), not by the first estimate's
    sigma = noise.sigma
    thr = sigmas * sigma
    factor, chosen, gains, full_scans = found
    if chosen or full_scans:
        rate, bw = fit.solve(factor)
    e_after = fit.resid(bw)
    # the strongest units left out (below the penalty), with their confidence: for the calibration
    # check and for a reader who wants the next in line
    left = unique(pu[np.flatnonzero(e_after < -thr)].indices)
    taken = np.zeros(L, bool)
    for u in chosen:
        taken[fit.links_of(u)] = True
    # a direction crossed by the same pairs as its reverse is its cable, as in the search and the null: listed
    # one way at a time, the two would be two candidates at one confidence, one of them wrong whatever is degraded
    left = left[free_units(taken, left) & ((left >= L) | ~base.tied[np.minimum(left, L - 1)])][:screen]
    candidates = []
    if len(left):
        g_left, x_left = fit.scan_best(left, factor, rate, bw)
        for i in np.argsort(-g_left)[:5]:
            u = int(left[i])
            c = fit.links_of(u)[0] // 2
            if u not in base.tied_names:        # the pairs' structure: the same for a second fit
                base.tied_names[u] = _tied_cables(f, fit, u, c)
            candidates.append({"cable": cable_name(f, c), "link": fit.links_of(u)[0],
                               "direction": "both" if u >= L else direction_name(f, u),
                               "evidence": round(float(g_left[i]), 1),
                               "confidence": round(null.confidence(float(g_left[i])), 4),
                               "factor": round(float(x_left[i]), 3),
                               # milder than the model can tell from its own error: not named, whatever it gains
                               "too_mild": too_mild(float(x_left[i]), mildest),
                               "tied": base.tied_names[u]})
    # labels
    label = np.zeros(pm.n_pairs, dtype=np.int16)
    label[~unshared] = 1
    slow0 = e0 < -thr
    label[slow0 & (e_after >= -thr)] = 2
    label[slow0 & (e_after < -thr)] = 3
    label[e0 > thr] = 4
    limit = base.limits
    pair_cable, groups, uncovered = base.pair_cable, base.groups, base.uncovered
    tie_of = {c: g for g in groups for c in g}
    suspects = []
    src_keys: dict[Any, int] = {}
    src_of = (np.array([src_keys.setdefault(k[0], len(src_keys)) for k in m.scenario_key],
                       dtype=np.int64)[m.scenario] if m.scenario_key else np.zeros(m.n_pairs, np.int64))
    names = np.array(f.host_names)
    # each suspect's evidence in the null's scales above its location (-inf: at the penalty or under),
    # which the confidence is a calibrated reading of
    zs: list[float] = []
    for u in sorted(chosen, key=lambda u: -gains.get(u, 0.0)):
        links = fit.links_of(u)
        c = links[0] // 2
        crossing = column_rows(fit.pair_unit_csc, u)
        impl = crossing[e0[crossing] < -thr]
        impl = impl[np.argsort(e0[impl])]
        group = tie_of.get(c, [c])
        g = gains.get(u, lam)
        conf = null.confidence(g) if g > lam else 0.0
        zs.append(null.z(g) if g > lam else -np.inf)
        host = cable_host(f, c)
        x = float(factor[links].min())
        one_way = not np.array_equal(column_rows(fit.pair_unit_csc, 2 * c), column_rows(fit.pair_unit_csc, 2 * c + 1))
        s = {"link": links[0], "links": links, "cable": cable_name(f, c), "host": host,
             "name": host if host else cable_name(f, c),
             "direction": "both" if u >= L else direction_name(f, u),
             # can these pairs tell the cable's two directions apart at all (a host's never, by ping-pong)
             "directions_told_apart": one_way,
             "capacity": float(f.link_capacity[links[0]] * x), "nominal": float(f.link_capacity[links[0]]),
             "factor": x, "confidence": round(float(conf), 4), "confidence_each": round(float(conf) / len(group), 4),
             "evidence": round(float(g), 1), "jitter_pairs": int(np.sum(noise.p_jitter(e0[crossing]) > 0.5)),
             "pairs": [[str(names[pm.hs[p]]), str(names[pm.hd[p]])] for p in impl[:20]],
             "n_pairs": len(impl), "crossing_pairs": len(crossing),
             "tied": [cable_name(f, x) for x in group if x != c]}
        if len(set(src_of.tolist())) > 1:
            # how each run bears the suspect out: a fault slows crossing pairs in every run, jitter in one
            src_name = {v: (m.sources[k] if isinstance(k, int) and k < len(m.sources) else k)
                        for k, v in src_keys.items()}
            s["by_source"] = [[str(src_name[k]),
                               int(np.sum(e0[impl_k] < -thr)), len(impl_k)]
                              for k in sorted(set(src_of[crossing].tolist()))
                              for impl_k in [crossing[src_of[crossing] == k]]]
        if s["tied"]:
            s["separate_by"] = separating_pairs(pm, c, [x for x in group if x != c], crossing)
        suspects.append(s)
    rms = lambda e: float(np.sqrt(np.mean(e * e)))
    if chosen:
        # what the fit explains is no longer noise: the noise left, for what else these pairs could see
        fit.noise = left_noise if left_noise is not None else fit_noise(e_after, min_sigma, centre=0.0)
    covered_c = np.flatnonzero(np.asarray(pair_cable.sum(axis=0)).ravel() > 0)
    seen = detectable(fit, L + covered_c, rate0, bw0, lam, effects=base.detect_effects)
    extra_meta = {"candidates": candidates, "penalty": round(float(lam), 2), "figure": fig_name, "false_alarm": false_alarm,
                  "noise_model": noise.as_dict(), "noise_left": fit.noise.as_dict(), "null": null.as_dict(),
                  "detectable": seen}
    if mildest < 1.0:
        extra_meta["mildest_factor"] = mildest
    if spread is not None and np.isfinite(spread).any():
        extra_meta["iteration_spread_median"] = round(float(np.nanmedian(spread)), 4)
    return Diagnosis(m, pm, bw0 * np.exp(adjust), bw * np.exp(adjust), float(np.exp(log_eff)), sigma, thr, factor, label, limit, suspects,
                     groups, uncovered, rms(e0), rms(e_after), time.perf_counter() - t0,
                     {**extra_meta, **(meta or {})}, bw_used, spread,
                     {"chosen": list(chosen), "lam": lam, "null": null, "noise": noise, "z": zs})


def _tied_cables(f: Any, fit: Any, u: int, c: int) -> list[str]:
    """Other cables with a unit crossed by exactly the pairs that cross unit ``u``."""
    L = f.n_links
    return sorted({cable_name(f, v // 2 if v < L else v - L) for v in tie_group(fit.pair_unit, u, fit.pair_unit_csc)}
                  - {cable_name(f, c)})


