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

from fabscope.arrays import median, unique
from fabscope.diagnose.confidence import confidence
from fabscope.diagnose.unitgains import NullEffects


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
        [0.003, 0.095, 0.62, 1.0]
        """
        return confidence(self.z(g))

    def z(self, g: float) -> float:
        """``g`` in the null's units: how many of its scales above its location."""
        return (g - self.loc) / self.scale

    def as_dict(self) -> dict[str, Any]:
        return {"draws": len(self.maxima), "max_gain_median": round(float(median(self.maxima)), 2),
                "max_gain_max": round(float(self.maxima.max()), 2), "gumbel_loc": round(self.loc, 3),
                "gumbel_scale": round(self.scale, 3), "seconds": round(self.seconds, 3)}


def null_order(units: np.ndarray, n_links: int, combine: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """``units`` (directed links, then cables both ways: :mod:`.fit`'s numbering) in the order the null takes
    them, each cable after its directions; and per unit, how many of its directions are listed just
    before it where its gain is taken as theirs summed (:class:`.unitgains.NullEffects`): every cable's, or
    where ``combine`` (per cable) says so.

    >>> u, adds = null_order(np.array([1, 4, 5, 8, 9, 10]), n_links=8)     # links 1, 4, 5; cables 0, 1, 2
    >>> u.tolist(), adds.tolist()
    ([1, 8, 9, 4, 5, 10], [0, 1, 0, 0, 0, 2])
    >>> null_order(np.array([1, 4, 5, 8, 9, 10]), 8, combine=np.array([True, True, False, True]))[1].tolist()
    [0, 1, 0, 0, 0, 0]
    """
    units = unique(np.asarray(units, np.int64))
    L = n_links
    cable = np.where(units < L, units // 2, units - L)
    units = units[np.lexsort((units >= L, cable))]
    cable = np.where(units < L, units // 2, units - L)
    adds = np.zeros(len(units), np.int64)
    for back in (1, 2):       # a cable's directions sit just before it, of the same cable
        k = np.arange(back, len(units))
        adds[k] += (units[k] >= L) & (units[k - back] < L) & (cable[k - back] == cable[k]) & (adds[k] == back - 1)
    if combine is not None:
        adds[(units >= L) & ~np.asarray(combine, bool)[cable]] = 0
    return units, adds


def null_effects(fit: Any, units: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray,
                 chunk: int = 400_000) -> NullEffects:
    """The effect of every :data:`NULL_GRID` factor of every unit on its pairs, in single precision (it does
    not depend on what was measured nor on the noise: one computation serves every draw and every noise
    model the diagnosis calibrates).

    A cable both ways slows a pair that crosses one direction as that direction does (the same rows, cut
    alike), so where its directions are units too the cable's gain is theirs summed; its own entries are
    the pairs crossing both ways (log1p(expm1(D one way) + expm1(D the other)): their times' increases
    add), each less its two one-way entries, where that costs fewer entries (:func:`_sums_pay`).  At
    109,800 pairs it leaves 0.53 of the entries on a torus, whose pairs cross each cable one way (dimension
    order), 0.59 on a 3-level tree and 0.62 on Itasca; none is summed on a dragonfly, whose pairs cross
    every cable both ways (its directions are tied: not units of the null).  ``chunk``:
    :meth:`.fit.Fit.effects`'s."""
    L, n = fit.n_links, fit.pm.n_pairs
    order, adds = null_order(units, L, _sums_pay(fit.pm.pair_links, L))
    own = adds == 0
    pos = np.flatnonzero(own)
    chunks = [(pos[c], p, D.astype(np.float32))
              for c, p, D in fit.effects(order[own], factor, rate, bw, NULL_GRID, chunk)]
    both = np.flatnonzero(adds == 2)
    extra = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, len(NULL_GRID)), np.float32), np.zeros(0))
    if len(both) and chunks:
        key = np.concatenate([c * n + p for c, p, _ in chunks])      # sorted: by unit, then pair
        D_all = chunks[0][2] if len(chunks) == 1 else np.concatenate([D for _, _, D in chunks])
        # each cable's second direction's entries (the unit just before it) whose pair crosses the first too
        starts, ends = np.searchsorted(key, (both - 1) * n), np.searchsorted(key, both * n)
        lens = ends - starts
        kb = np.repeat(starts - np.r_[0, np.cumsum(lens)[:-1]], lens) + np.arange(lens.sum())
        cab = np.repeat(both, lens)
        pb = key[kb] - (cab - 1) * n
        want = (cab - 2) * n + pb
        ka = np.minimum(np.searchsorted(key, want), len(key) - 1)
        hit = key[ka] == want
        ka, kb, cab, pb = ka[hit], kb[hit], cab[hit], pb[hit]
        Da, Db = D_all[ka].astype(float), D_all[kb].astype(float)
        Dj = np.log1p(np.expm1(Da) + np.expm1(Db)).astype(np.float32)
        m = len(cab)
        extra = (np.repeat(cab, 3), np.repeat(pb, 3),
                 np.stack([Dj, D_all[ka], D_all[kb]], axis=1).reshape(3 * m, -1),
                 np.tile([1.0, -1.0, -1.0], m))
    return NullEffects(order, adds, chunks, extra)


def _sums_pay(pair_links: Any, n_links: int) -> np.ndarray:
    """Per cable: whether its directions' sums and three corrections per pair crossing it both ways cost
    fewer entries than its own entries do (its pairs crossing one way outnumber three times those crossing
    both: on a torus nearly every cable, on a dragonfly whose routes are symmetric none).  ``pair_links``:
    pairs x directed links, canonical (sorted in each row)."""
    pl = pair_links.tocsr()
    row = np.repeat(np.arange(pl.shape[0]), np.diff(pl.indptr))
    cable = pl.indices.astype(np.int64) // 2
    twice = (cable[1:] == cable[:-1]) & (row[1:] == row[:-1])       # a pair on both directions
    both = np.bincount(cable[1:][twice], minlength=n_links // 2)
    crossing = np.bincount(cable, minlength=n_links // 2) - both     # pairs crossing the cable at all
    return 3 * both < crossing


def null_calibration(fit: Any, cables: np.ndarray, factor: np.ndarray, rate: np.ndarray, bw: np.ndarray, *,
                     draws: int = 30, false_alarm: float = 0.01, seed: int = 0, refine: int = NULL_REFINE,
                     effects: NullEffects | None = None) -> NullCalibration:
    """The penalty that noise alone exceeds with chance ``false_alarm`` (see :class:`NullCalibration`), over
    the units ``cables``.

    The effect of every grid factor of every unit on its pairs does not depend on what was measured,
    so it is computed once (``effects``, from :func:`null_effects` of the same units); every draw's
    residuals are drawn first, and each unit's entries are summed for all draws at once with the
    likelihood as a table (:mod:`.unitgains`, in C: a gain moves by about 0.01 nat)."""
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
    cables = eff.units        # in the order the loop took them
    U = len(cables)
    best_u, arg_u = unit_minima(eff, E, table=nll_table(noise))
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
