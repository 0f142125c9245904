"""Explain or suspect: which cables and hosts deliver less than the fabric says.

Given measured pairs (:mod:`.measured`), :func:`diagnose`

1. models the same pairs on the same routes with the same concurrency
   (:class:`.pairmodel.PairModel`); the log of measured / modeled is each
   pair's residual, after one global factor (the median ratio: what the MPI
   gets of the links' rate, reported as ``efficiency``);
2. estimates the noise from the bulk of the pairs (1.4826 x the median
   absolute deviation of the residuals) and calls a pair slow when its
   residual lies below ``sigmas`` times it;
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
from scipy.sparse import csr_matrix

from fabscope.diagnose.calibration import add_rows, detectable, null_calibration
from fabscope.diagnose.measured import DiagnoseError, Measured
from fabscope.diagnose.noise import NoiseModel, fit_noise
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.scan import water_levels
from fabscope.fabric.model import Fabric
from fabscope.result import Result

LABELS = ("nominal", "contention", "suspect", "unexplained", "faster")
#: capacity factors tried for a cable not yet suspected (of its current capacity)
GRID = np.geomspace(0.08, 0.95, 22)


def cable_name(f: Fabric, c: int) -> str:
    i = 2 * c
    a, b = f.node_names[f.link_src[i]], f.node_names[f.link_dst[i]]
    return f"{a}[{int(f.link_src_port[i])}] -- {b}[{int(f.link_dst_port[i])}]"


def cable_host(f: Fabric, c: int) -> str | None:
    s, d = int(f.link_src[2 * c]), int(f.link_dst[2 * c])
    h = s if s < f.n_hosts else d if d < f.n_hosts else -1
    return f.node_names[h] if h >= 0 else None


@dataclass(eq=False)
class Diagnosis:
    measured: Measured
    model: PairModel
    modeled: np.ndarray          # nominal model, bytes/s per pair
    fitted: np.ndarray           # model with the estimated capacities
    efficiency: float
    sigma: float
    threshold: float
    factor: np.ndarray           # per cable: estimated capacity / nominal
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
        for col in ("iter_min", "iter_median", "iter_max"):
            if getattr(m, col) is not None:
                pairs[col] = getattr(m, col)
        cov = self.model.pair_links.sum(axis=0).A1
        cov_c = cov[0::2] + cov[1::2]
        covered = np.flatnonzero(cov_c > 0)
        links = {"cable": covered, "link": 2 * covered, "capacity": f.link_capacity[2 * covered],
                 "estimate": f.link_capacity[2 * covered] * self.factor[covered], "pairs": cov_c[covered]}
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


class _Fit:
    """The model of the measured pairs under capacity factors, with what the scans need."""

    def __init__(self, pm: PairModel, log_meas: np.ndarray, log_eff: float, noise: NoiseModel) -> None:
        f = pm.fabric
        self.pm, self.f = pm, f
        self.log_meas, self.log_eff, self.noise = log_meas, log_eff, noise
        self.n_cables = f.n_links // 2
        A = pm.A.tocsr()
        self.A = A
        self.row_of_entry = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        kind = pm.res_kind
        self.row_cable = np.where(kind < f.n_links, kind // 2, -1)
        order = np.argsort(self.row_cable, kind="stable")
        self.rows_sorted = order
        counts = np.bincount(self.row_cable[self.row_cable >= 0], minlength=self.n_cables)
        self.cable_ptr = np.r_[0, np.cumsum(counts)] + int(np.sum(self.row_cable < 0))
        self.pair_bytes = np.bincount(pm.flow_pair, weights=pm.bytes[pm.flow_pair], minlength=pm.n_pairs)
        self.factor = np.ones(self.n_cables)

    def capacity(self, factor: np.ndarray) -> np.ndarray:
        return self.f.link_capacity * np.repeat(factor, 2)

    def solve(self, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rate = self.pm.flow_rates(self.capacity(factor))
        return rate, self.pm.pair_bandwidth(rate)

    def resid(self, bw: np.ndarray) -> np.ndarray:
        return self.log_meas - self.log_eff - np.log(bw)

    def rows_of(self, cables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the given cables, and which of them (index into ``cables``) each row is."""
        starts, ends = self.cable_ptr[cables], self.cable_ptr[cables + 1]
        lens = ends - starts
        idx = np.repeat(starts - np.r_[0, np.cumsum(lens)[:-1]], lens) + np.arange(lens.sum())
        return self.rows_sorted[idx], np.repeat(np.arange(len(cables)), lens)

    def effects(self, cables: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray,
                grid: np.ndarray, chunk: int = 400_000):
        """What scaling cable ``cables[i]`` by ``grid[j]`` (of its current capacity) does to the pairs, in
        chunks: (index into ``cables`` of each entry, the pair, log(new time / current time) per grid
        factor).  Entries come sorted by cable; pairs the cable does not slow have no entry."""
        pm, A = self.pm, self.A
        t_cur = self.pair_bytes / bw
        link_cap = self.capacity(factor)
        # chunks of cables, so that entries x grid stays in memory
        nnz_row = np.diff(A.indptr)
        per_cable = np.zeros(len(cables))
        rows, which = self.rows_of(cables)
        np.add.at(per_cable, which, nnz_row[rows])
        bounds = [0]
        acc = 0.0
        for i, v in enumerate(per_cable):
            acc += v
            if acc > chunk:
                bounds.append(i + 1)
                acc = 0.0
        if bounds[-1] != len(cables):
            bounds.append(len(cables))
        for a, b in zip(bounds[:-1], bounds[1:]):
            cs = cables[a:b]
            rows, which = self.rows_of(cs)
            if not len(rows):
                continue
            starts, ends = A.indptr[rows], A.indptr[rows + 1]
            lens = ends - starts
            pos = np.repeat(starts - np.r_[0, np.cumsum(lens)[:-1]], lens) + np.arange(lens.sum())
            local_row = np.repeat(np.arange(len(rows)), lens)
            flows = A.indices[pos]
            wts = A.data[pos]
            r = rate[flows]
            fin = np.isfinite(r)
            cap_row = link_cap[pm.res_kind[rows]]
            scale = grid[None, :] if grid.ndim == 1 else grid[a + which]      # one grid per cable
            lvl = water_levels(local_row[fin], r[fin], wts[fin], cap_row, scale)
            new = np.minimum(r[:, None], lvl[local_row])
            b_f = pm.bytes[pm.flow_pair[flows]]
            with np.errstate(divide="ignore", invalid="ignore"):
                dt = np.where(np.isfinite(r)[:, None], b_f[:, None] / new - (b_f / r)[:, None], 0.0)
            pair = pm.flow_pair[flows]
            key = which[local_row] * pm.n_pairs + pair
            ukey, inv = np.unique(key, return_inverse=True)
            dts = np.zeros((len(ukey), grid.shape[-1]))
            np.add.at(dts, inv, dt)
            p = ukey % pm.n_pairs
            c = ukey // pm.n_pairs
            keep = dts[:, 0] > 0                       # the strongest cut slows the pair at all
            p, c, dts = p[keep], c[keep], dts[keep]
            with np.errstate(divide="ignore"):
                yield a + c, p, np.log1p(dts / t_cur[p, None])

    def scan(self, cables: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray,
             grid: np.ndarray, chunk: int = 400_000) -> np.ndarray:
        """Change of the misfit (negative log-likelihood of all pairs under the noise model, nats) if
        cable ``cables[i]`` were scaled by ``grid[j]`` (of its current capacity): len(cables) x len(grid)."""
        out = np.zeros((len(cables), grid.shape[-1]))
        e_cur = self.resid(bw)
        loss_cur = self.noise.nll(e_cur)
        for c, p, D in self.effects(cables, factor, rate, bw, grid, chunk):
            d = self.noise.nll(e_cur[p, None] + D) - loss_cur[p, None]
            add_rows(out, c, d)
        return out

    def scan_best(self, cables: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray,
                  grid: np.ndarray = None) -> tuple[np.ndarray, np.ndarray]:
        """Per cable: the largest drop of the misfit (nats) and the factor that gives it: the grid, then
        9 factors around each cable's best (the nominal spread can be far finer than the grid's steps,
        and a factor a step off leaves every crossing pair several sigmas out)."""
        grid = GRID if grid is None else grid
        step = float(grid[1] / grid[0])
        # beside the grid, the factor each cable's slow crossing pairs point to (their mean residual:
        # exact for pairs the cable alone limits), and two neighbours
        e = self.resid(bw)
        slow = (e < -2 * self.noise.sigma).astype(float)
        pc = self.pair_cable[:, cables]
        n_slow = pc.T @ slow
        with np.errstate(invalid="ignore", divide="ignore"):
            target = np.clip(np.exp((pc.T @ (e * slow)) / n_slow), GRID[0] * 1.1, 0.99)
        target = np.where(n_slow > 0, target, 0.5)
        grid2 = np.c_[np.broadcast_to(grid, (len(cables), len(grid))),
                      target[:, None] * np.array([0.97, 1.0, 1.03])[None, :]]
        d = self.scan(cables, factor, rate, bw, grid2)
        j = np.argmin(d, axis=1)
        rows = np.arange(len(cables))
        fine = grid2[rows, j][:, None] * np.geomspace(1 / step, step, 9)[None, :]
        fine = np.minimum(fine, 1.0)
        d2 = self.scan(cables, factor, rate, bw, fine)
        k = np.argmin(d2, axis=1)
        better = d2[rows, k] < d[rows, j]
        gain = -np.where(better, d2[rows, k], d[rows, j])
        best = np.where(better, fine[rows, k], grid2[rows, j])
        return gain, best


def diagnose(measured: Measured, routing: Any = None, *, sigmas: float = 3.0, penalty: float | None = None,
             max_suspects: int = 40, calibrate: bool = True, screen: int = 256, min_sigma: float = 0.01,
             false_alarm: float = 0.01, null_draws: int = 30, figure: str = "robust",
             meta: dict[str, Any] | None = None, nominal: np.ndarray | None = None) -> Diagnosis:
    """Explain the measured pairs by the model, and suspect the cables that it cannot (module docstring).

    ``nominal``: each measured pair's prediction by another model of the healthy fabric (the
    program in time, :mod:`.timemodel`).  The fit then runs on the snapshot with each pair's
    ratio nominal / snapshot held fixed (:mod:`.pairmodel` stays the inner loop).
    ``figure``: ``robust`` (each pair's median iteration where the input has per-iteration figures,
    else its mean) or ``mean``.  ``penalty`` (nats) defaults to the level that noise alone, drawn
    from the noise model fitted to these pairs, exceeds with chance ``false_alarm`` per diagnosis
    (``null_draws`` draws, :func:`null_calibration`).
    """
    t0 = time.perf_counter()
    inter = measured.inter
    if not inter.any():
        raise DiagnoseError("no inter-node pairs: every measured pair sits on one host, so no cable is "
                            "measured; run the benchmark over several nodes")
    m = measured.subset(inter) if not inter.all() else measured
    f = m.fabric
    pm = PairModel(f, m.hs, m.hd, m.scenario, m.pingpong, m.bytes, routing)
    rate0 = pm.flow_rates()
    bw0 = pm.pair_bandwidth(rate0)
    bw_used, spread, fig_name = m.robust() if figure == "robust" else (m.bandwidth, None, "mean over the iterations")
    # in-time correction of the snapshot, per pair (0 without another nominal model)
    adjust = np.zeros(pm.n_pairs) if nominal is None else np.log(np.asarray(nominal, float)[inter] / bw0)
    log_meas = np.log(bw_used) - adjust
    y = log_meas - np.log(bw0)
    log_eff = float(np.median(y)) if calibrate else 0.0
    noise = fit_noise(y - log_eff, min_sigma, centre=None if calibrate else 0.0)
    if calibrate:       # the nominal pairs' centre, not the median of all, is the efficiency
        log_eff += noise.mu
        noise = replace(noise, mu=0.0, mu_j=noise.mu_j - noise.mu)
    e0 = y - log_eff
    sigma = noise.sigma
    thr = sigmas * sigma
    fit = _Fit(pm, log_meas, log_eff, noise)
    n_c = fit.n_cables
    factor = np.ones(n_c)
    rate, bw = rate0, bw0
    pair_cable = _pair_cables(pm, n_c)
    fit.pair_cable = pair_cable.tocsc()
    crossing_count = np.asarray(pair_cable.sum(axis=0)).ravel()
    covered_c = np.flatnonzero(crossing_count > 0)
    null = null_calibration(fit, covered_c, factor, rate0, bw0, draws=null_draws, false_alarm=false_alarm,
                            seed=pm.n_pairs)
    lam = penalty if penalty is not None else null.penalty
    chosen: list[int] = []
    gains: dict[int, float] = {}
    # lazy greedy: a full scan ranks every candidate; then only the best stale candidate is rescanned
    # with the current rates, and taken if it still beats the next one (gains only shrink as faults
    # are explained); a last full scan checks that nothing was missed.
    full_scans = 0
    while len(chosen) < max_suspects and full_scans < 4:
        e = fit.resid(bw)
        slow = np.flatnonzero(e < -thr)
        if not len(slow):
            break
        cand = np.unique(pair_cable[slow].indices)
        cand = cand[factor[cand] > GRID[0] * 1.01]
        if not len(cand):
            break
        if len(cand) > screen:
            # screening: cables whose crossing pairs are mostly slow first (slow^2 / crossing)
            is_slow = np.zeros(pm.n_pairs)
            is_slow[slow] = 1.0
            n_slow = pair_cable.T @ is_slow
            score = n_slow[cand] ** 2 / np.maximum(crossing_count[cand], 1)
            cand = cand[np.argsort(-score, kind="stable")[:screen]]
        stale, _ = fit.scan_best(cand, factor, rate, bw)
        full_scans += 1
        taken = 0
        while len(chosen) < max_suspects:
            i = int(np.argmax(stale))
            if stale[i] < lam:
                break
            c = int(cand[i])
            g_arr, best = fit.scan_best(np.array([c]), factor, rate, bw)
            g = float(g_arr[0])
            rest = np.delete(stale, i)
            if g < lam or g < rest.max(initial=-np.inf):
                stale[i] = g if g >= lam else -np.inf      # re-queued with its fresh gain
                continue
            factor[c] *= float(best[0])
            if c not in chosen:
                chosen.append(c)
            stale[i] = -np.inf
            taken += 1
            rate, bw = fit.solve(factor)
        if not taken:
            break
    # re-estimate each suspect with the others in place; drop those that no longer pay (again if one went)
    for _ in range(2):
        changed = False
        for c in list(chosen):
            trial = factor.copy()
            trial[c] = 1.0
            r1, b1 = fit.solve(trial)
            g_arr, best = fit.scan_best(np.array([c]), trial, r1, b1, np.r_[GRID, 1.0])
            g = float(g_arr[0])
            if g < lam or best[0] >= 1.0:
                chosen.remove(c)
                factor[c] = 1.0
                changed = True
                continue
            factor[c] = float(best[0])
            gains[c] = g
        if not changed:
            break
    if chosen or full_scans:
        rate, bw = fit.solve(factor)
    e_after = fit.resid(bw)
    # the strongest cables left out (below the penalty), with their confidence: for the calibration
    # check and for a reader who wants the next in line
    left = np.unique(pair_cable[np.flatnonzero(e_after < -thr)].indices)
    left = left[~np.isin(left, chosen)][:screen]
    candidates = []
    if len(left):
        g_left, _ = fit.scan_best(left, factor, rate, bw)
        for i in np.argsort(-g_left)[:5]:
            c = int(left[i])
            candidates.append({"cable": cable_name(f, c), "link": 2 * c, "evidence": round(float(g_left[i]), 1),
                               "confidence": round(null.confidence(float(g_left[i])), 4),
                               "tied": [cable_name(f, x) for x in _tie_group(pair_cable, c) if x != c]})
    # labels
    limit_res = pm.bottlenecks(rate0)
    label = np.zeros(pm.n_pairs, dtype=np.int16)
    ideal = _ideal_bandwidth(pm)
    label[bw0 < 0.97 * ideal] = 1
    slow0 = e0 < -thr
    label[slow0 & (e_after >= -thr)] = 2
    label[slow0 & (e_after < -thr)] = 3
    label[e0 > thr] = 4
    limit = _limits(pm, rate0, limit_res)
    ties, uncovered = _ties(pair_cable, n_c)
    tie_of = {c: g for g in ties for c in g}
    suspects = []
    src_keys: dict[Any, int] = {}
    src_of = (np.array([src_keys.setdefault(k[0], len(src_keys)) for k in m.scenario_key],
                       dtype=np.int64)[m.scenario] if m.scenario_key else np.zeros(m.n_pairs, np.int64))
    for c in sorted(chosen, key=lambda c: -gains.get(c, 0.0)):
        crossing = np.flatnonzero(pair_cable[:, [c]].toarray().ravel() > 0)
        impl = crossing[e0[crossing] < -thr]
        impl = impl[np.argsort(e0[impl])]
        group = tie_of.get(c, [c])
        g = gains.get(c, lam)
        conf = null.confidence(g) if g > lam else 0.0
        host = cable_host(f, c)
        names = np.array(f.host_names)
        s = {"link": 2 * c, "links": [2 * c, 2 * c + 1], "cable": cable_name(f, c), "host": host,
             "name": host if host else cable_name(f, c), "capacity": float(f.link_capacity[2 * c] * factor[c]),
             "nominal": float(f.link_capacity[2 * c]), "factor": float(factor[c]),
             "confidence": round(float(conf), 4), "confidence_each": round(float(conf) / len(group), 4),
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
            s["separate_by"] = _separating_pairs(pm, c, [x for x in group if x != c], crossing)
        suspects.append(s)
    rms = lambda e: float(np.sqrt(np.mean(e * e)))
    if chosen:
        # what the fit explains is no longer noise: the noise left, for what else these pairs could see
        fit.noise = fit_noise(e_after, min_sigma, centre=0.0)
    seen = detectable(fit, covered_c, rate0, bw0, lam)
    extra_meta = {"candidates": candidates, "penalty": round(float(lam), 2), "figure": fig_name, "false_alarm": false_alarm,
                  "noise_model": noise.as_dict(), "noise_left": fit.noise.as_dict(), "null": null.as_dict(),
                  "detectable": seen}
    if spread is not None and np.isfinite(spread).any():
        extra_meta["iteration_spread_median"] = round(float(np.nanmedian(spread)), 4)
    return Diagnosis(m, pm, bw0 * np.exp(adjust), bw * np.exp(adjust), float(np.exp(log_eff)), sigma, thr, factor, label, limit, suspects,
                     ties, uncovered, rms(e0), rms(e_after), time.perf_counter() - t0,
                     {**extra_meta, **(meta or {})}, bw_used, spread)


def _pair_cables(pm: PairModel, n_c: int) -> csr_matrix:
    """Pairs x cables, 1 where the pair crosses the cable (either way, either direction of the pair)."""
    pl = pm.pair_links.tocoo()
    m = csr_matrix((np.ones(len(pl.row)), (pl.row, pl.col // 2)), shape=(pm.n_pairs, n_c))
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


def _tie_group(pair_cable: csr_matrix, c: int) -> list[int]:
    """Cables crossed by exactly the pairs that cross ``c``."""
    col = pair_cable[:, [c]].toarray().ravel() > 0
    rows = pair_cable[np.flatnonzero(col)]
    cnt = np.asarray(pair_cable.sum(axis=0)).ravel()
    inall = np.flatnonzero(np.asarray(rows.sum(axis=0)).ravel() == col.sum())
    return [int(x) for x in inall if cnt[x] == col.sum()]


def _ideal_bandwidth(pm: PairModel) -> np.ndarray:
    """Each pair's bandwidth with its path to itself (the slowest link of each direction)."""
    f = pm.fabric
    cap = np.full(len(pm.flow_pair), np.inf)
    np.minimum.at(cap, pm.routes.flow, f.link_capacity[pm.routes.link] / np.maximum(pm.routes.weight, 1e-12))
    cap = np.minimum(cap, pm.flow_cap)
    return pm.pair_bandwidth(cap)


def _limits(pm: PairModel, rate: np.ndarray, res: np.ndarray) -> np.ndarray:
    f = pm.fabric
    n = pm.n_pairs
    which = np.full(n, -1, dtype=np.int64)
    order = np.argsort(rate, kind="stable")[::-1]
    which[pm.flow_pair[order]] = res[order]
    cache: dict[int, str] = {}
    out = []
    for r in which.tolist():
        if r not in cache:
            cache[r] = "" if r < 0 else f.link_name(r) if r < f.n_links else f"{f.node_names[r - f.n_links]} memory"
        out.append(cache[r])
    return np.array(out, dtype=str)


def _ties(pair_cable: csr_matrix, n_c: int) -> tuple[list[list[int]], np.ndarray]:
    """Groups of cables crossed by exactly the same pairs; and the cables no pair crosses."""
    rng = np.random.default_rng(12345)
    n_p = pair_cable.shape[0]
    h = (pair_cable.T @ rng.random((n_p, 2))).round(9)
    cover = np.asarray(pair_cable.sum(axis=0)).ravel()
    covered = np.flatnonzero(cover > 0)
    key = {}
    for c in covered.tolist():
        key.setdefault((h[c, 0], h[c, 1], cover[c]), []).append(c)
    return list(key.values()), np.flatnonzero(cover == 0)


def _separating_pairs(pm: PairModel, c: int, others: list[int], crossing: np.ndarray,
                      tries: int = 256) -> list[dict[str, Any]]:
    """For each cable tied with ``c``: a host pair whose route crosses one of the two and not the other."""
    f = pm.fabric
    rng = np.random.default_rng(c)
    names = f.host_names
    ends = np.unique(np.r_[pm.hs[crossing], pm.hd[crossing]])
    a = rng.choice(ends, tries)
    b = rng.integers(0, f.n_hosts, tries)
    flip = rng.random(tries) < 0.5
    src, dst = np.where(flip, b, a), np.where(flip, a, b)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    routes = pm.router.routes(src, dst)
    rev = pm.router.routes(dst, src)
    hit = np.zeros((len(src), f.n_links // 2), bool)
    hit[routes.flow, routes.link // 2] = True
    hit[rev.flow, rev.link // 2] = True
    out = []
    for o in others:
        sep = np.flatnonzero(hit[:, c] != hit[:, o])
        if len(sep):
            i = int(sep[0])
            out.append({"cable": cable_name(f, o), "pair": [names[src[i]], names[dst[i]]],
                        "crosses": cable_name(f, c if hit[i, c] else o)})
        else:
            out.append({"cable": cable_name(f, o), "pair": None, "crosses": None})
    return out
