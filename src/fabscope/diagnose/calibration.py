"""How much evidence noise alone gives, and which degradations the measurements would see.

The two questions :func:`fabscope.diagnose.tomography.diagnose` asks of its fit before and after the
search: the penalty a suspect must pay (:func:`null_calibration`, a Gumbel law fitted to the largest
gain of any cable over draws of pure noise) and, at the noise measured, the share of cables whose
degradation by 25 %, 50 %, ... would be seen (:func:`detectable`).  ``fit`` is the tomography's fit
of one set of measured pairs: its noise model, its pair model and the effect of each cable's factor
on the pairs that cross it (``fit.effects``).

>>> out = np.zeros(3)
>>> add_rows(out, np.array([0, 0, 2]), np.array([1.0, 2.0, 5.0]))
>>> out.tolist()
[3.0, 0.0, 5.0]
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabscope.arrays import median
from fabscope.diagnose.confidence import confidence


def add_rows(out: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    """out[idx[k]] += vals[k], for ``idx`` sorted."""
    if not len(idx):
        return
    starts = np.r_[0, np.flatnonzero(np.diff(idx)) + 1]
    out[idx[starts]] += np.add.reduceat(vals, starts, axis=0)


#: factors of the null calibration (steps of 12.5 %), then each draw's :data:`NULL_REFINE` strongest cables
#: refined: on 109,800 pairs of a 3-level tree and of a torus, the penalty within 0.03 nat of a grid twice as
#: fine (steps of 6 %, refined alike), the calibration's effects in 0.65 and its draws in 0.55 of the time
#: (``bench/null_grid.py``)
NULL_GRID = np.geomspace(0.08, 0.98, 22)
#: cables of each draw refined around their best grid factor (with 5 the coarse grid's maxima fell up to 3.7
#: nats short of the fine grid's where the strongest cable lay between two factors)
NULL_REFINE = 60
#: a suspect brings at least this much evidence (nats), whatever the null calibration says
MIN_PENALTY = 6.0
#: degradations for which the diagnosis says whether its measurements would see them
DETECT_GRID = np.array([0.25, 0.5, 0.7, 0.8, 0.9, 0.95])


@dataclass(eq=False)
class NullCalibration:
    """How much evidence noise alone produces: the largest gain any one cable shows when the
    residuals are drawn from the fitted noise model with no fault, over ``draws`` draws, with a
    Gumbel law (the law of maxima) fitted to those maxima by its moments."""

    maxima: np.ndarray
    loc: float
    scale: float
    penalty: float
    seconds: float

    def p_value(self, g: float) -> float:
        """Chance that noise alone gives some cable at least ``g`` nats."""
        return float(-np.expm1(-np.exp(-(g - self.loc) / self.scale)))

    def confidence(self, g: float) -> float:
        """Chance that a cable with evidence ``g`` is degraded rather than noise: a logistic in the
        evidence in the null's units, (g - loc) / scale, fitted on the fault bench
        (:func:`fabscope.diagnose.confidence.confidence`).

        >>> n = NullCalibration(np.zeros(3), loc=2.0, scale=1.0, penalty=6.6, seconds=0.0)
        >>> [round(n.confidence(g), 3) for g in (2.0, 6.6, 10.0, 20.0)]
        [0.009, 0.379, 0.93, 1.0]
        """
        return confidence((g - self.loc) / self.scale)

    def as_dict(self) -> dict[str, Any]:
        return {"draws": len(self.maxima), "max_gain_median": round(float(median(self.maxima)), 2),
                "max_gain_max": round(float(self.maxima.max()), 2), "gumbel_loc": round(self.loc, 3),
                "gumbel_scale": round(self.scale, 3), "seconds": round(self.seconds, 3)}


def null_effects(fit: Any, cables: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray) -> list:
    """The effect of every :data:`NULL_GRID` factor of every unit on its pairs, in single precision (it
    does not depend on what was measured nor on the noise: one computation serves every draw and every
    noise model the diagnosis calibrates)."""
    return [(c, p, D.astype(np.float32)) for c, p, D in fit.effects(cables, factor, rate, bw, NULL_GRID)]


def null_calibration(fit: Any, cables: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray, *,
                     draws: int = 30, false_alarm: float = 0.01, seed: int = 0, refine: int = NULL_REFINE,
                     effects: list | None = None) -> NullCalibration:
    """The penalty that noise alone exceeds with chance ``false_alarm`` (see :class:`NullCalibration`).

    The effect of every grid factor of every cable on its pairs does not depend on what was measured,
    so it is computed once (``effects``, from :func:`null_effects`); every draw's residuals are drawn
    first, and each unit's entries are summed for all draws at once with the likelihood as a table
    (:mod:`.unitgains`, in C: a gain moves by about 0.01 nat)."""
    from fabscope.diagnose.unitgains import nll_table, unit_minima

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    grid = NULL_GRID         # then the strongest cables refined
    step = float(grid[1] / grid[0])
    eff = effects if effects is not None else null_effects(fit, cables, factor, rate, bw)
    noise = fit.noise
    n = fit.pm.n_pairs
    E = np.empty((n, draws))
    for k in range(draws):
        E[:, k] = noise.sample(n, rng)
    U = len(cables)
    out = (np.zeros((draws, U)), np.zeros((draws, U), np.int64))
    table = nll_table(noise)
    for c, p, D in eff:
        unit_minima(c, p, D, E, table, U, out)
    best_u, arg_u = out
    maxima = np.maximum(-best_u.min(axis=1, initial=0.0), 0.0)
    if U:
        # the diagnosis refines each candidate's factor (scan_best); so does the null, for each draw's
        # strongest few cables (the largest refined gain is among them), all draws in one pass
        top = np.argsort(best_u, axis=1, kind="stable")[:, :refine]
        k_top = top.shape[1]
        fine = np.minimum(grid[np.take_along_axis(arg_u, top, axis=1)].reshape(-1)[:, None]
                          * np.geomspace(1 / step, step, 17)[None, :], 1.0)
        out2 = np.zeros((draws * k_top, fine.shape[1]))
        for c, p, D in fit.effects(cables[top.reshape(-1)], factor, rate, bw, fine):
            e = E[p, c // k_top]
            add_rows(out2, c, noise.nll(e[:, None] + D) - noise.nll(e)[:, None])
        maxima = np.maximum(maxima, -out2.reshape(draws, -1).min(axis=1, initial=0.0))
    sd = float(np.std(maxima))
    scale = max(sd * np.sqrt(6) / np.pi, 0.25)
    loc = float(np.mean(maxima)) - 0.5772156649 * scale
    pen = max(loc - scale * np.log(-np.log1p(-false_alarm)), MIN_PENALTY)
    return NullCalibration(maxima, loc, scale, pen, time.perf_counter() - t0)


def detect_effects(fit: Any, cables: np.ndarray, rate: np.ndarray, bw: np.ndarray) -> list:
    """What each :data:`DETECT_GRID` factor of each of ``cables`` does to its pairs (figure- and
    noise-independent: :func:`detectable` reads it, and a second diagnosis of the same pairs keeps it)."""
    return list(fit.effects(cables, np.ones(fit.n_links), rate, bw, DETECT_GRID))


def detectable(fit: Any, cables: np.ndarray, rate: np.ndarray, bw: np.ndarray, penalty: float,
               effects: list | None = None) -> dict[str, Any]:
    """Which degradations these measurements see at the noise measured: a cable at factor x is seen
    when the evidence it would bring, less two of its standard deviations (sqrt(2 E), the Gaussian
    approximation), still clears the penalty.  Share of the covered cables per factor of
    :data:`DETECT_GRID`, and the mildest factor seen on at least 90 % of them."""
    noise = fit.noise
    E = np.zeros((len(cables), len(DETECT_GRID)))
    base = float(noise.nll(np.zeros(1))[0])
    for c, p, D in effects if effects is not None else detect_effects(fit, cables, rate, bw):
        add_rows(E, c, noise.nll(-D) - base)
    seen = E - 2 * np.sqrt(2 * np.maximum(E, 0)) >= penalty
    share = seen.mean(axis=0) if len(cables) else np.zeros(len(DETECT_GRID))
    ok = np.flatnonzero(share >= 0.9)
    return {"factors": DETECT_GRID.tolist(), "share_seen": [round(float(x), 3) for x in share],
            "mildest_seen_on_90pct": float(DETECT_GRID[ok].max()) if len(ok) else None}
