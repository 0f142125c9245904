"""The noise of measured pairs, fitted to the data: a mixture of nominal and jittered pairs.

Real runs are not Gaussian around the model: most pairs sit within a few
percent of it, and some are cut by OS jitter, a daemon, another job on the
node, to a fraction of their rate, whatever cable they cross.  A least-squares
or Huber misfit reads such a pair as strong evidence against every cable it
crosses.  :class:`NoiseModel` is the likelihood of a pair's residual ``e``
(log measured / modeled after the global efficiency) as a mixture:

* nominal, a share ``1 - w - FLOOR``: Normal(``mu``, ``sigma``);
* jittered, a share ``w``: Normal(``mu_j``, ``sigma_j``), centred below;
* a floor of share ``FLOOR`` spread evenly over ``e`` in [-``SPAN``, ``SPAN``], so that one
  pair, however far off, moves the log-likelihood by a bounded amount.

:func:`fit_noise` takes the nominal component from the pairs at the model's
rate alone (:func:`nominal_level`: the centre of the shortest half of the
residuals, the spread from the pairs above it), and fits the jitter by
expectation-maximisation (a pair's share of each component given its
residual, then the jitter's weighted mean and spread).  A fault slows the
pairs that cross it, but it can also *speed* a pair that shares links with
the flows it holds back (on an oversubscribed tree, x1.4-2 of the model),
so the level is taken from the pairs the model puts at their path's rate
(``unshared``: no fault can speed those) where there are enough of them.
So however many pairs are slow, and however many are sped, the nominal
spread does not widen to take them in: as long as more than half the
unshared pairs run at the model's rate, the shortest half lies among them
(the breakdown point, 50 % of the unshared pairs; of all pairs, where too
few are unshared).  Slow pairs that a fault explains better than the jitter
does are the search's to take (:mod:`.tomography` fits the noise again on
what the faults found leave unexplained, their neighbours' speed-up
included).

>>> rng = np.random.default_rng(0)
>>> e = np.r_[rng.normal(0, 0.015, 900), np.log(rng.uniform(0.3, 0.7, 100))]   # 1 pair in 10 jittered
>>> nm = fit_noise(e)
>>> round(nm.sigma, 3), round(nm.w, 2), round(float(np.exp(nm.mu_j)), 1)
(0.015, 0.1, 0.5)
>>> bool(nm.nll(np.array([-0.7]))[0] - nm.nll(np.array([0.0]))[0] < 6)   # a pair at half its rate: 6 nats at most
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fabscope.arrays import dot, median

#: share of the uniform floor, and the half-width of the log range it covers
FLOOR = 1e-4
SPAN = 5.0
_LOG_FLOOR = np.log(FLOOR / (2 * SPAN))
_HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)
_SQRT_2PI = np.sqrt(2 * np.pi)


@dataclass(frozen=True)
class NoiseModel:
    mu: float          # nominal centre (log ratio)
    sigma: float       # nominal spread
    w: float           # share of jittered pairs
    mu_j: float        # centre of the jittered pairs
    sigma_j: float     # their spread

    def _logs(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        z0 = (e - self.mu) / self.sigma
        z1 = (e - self.mu_j) / self.sigma_j
        a = np.log(max(1 - self.w - FLOOR, 1e-12)) - np.log(self.sigma) - _HALF_LOG_2PI - 0.5 * z0 * z0
        b = np.log(max(self.w, 1e-300)) - np.log(self.sigma_j) - _HALF_LOG_2PI - 0.5 * z1 * z1
        return a, b, np.full(np.shape(e), _LOG_FLOOR)

    def nll(self, e: np.ndarray) -> np.ndarray:
        """Negative log density of each residual (nats).  Summed densities, not log-sum-exp: the floor
        keeps the sum away from 0, and this is the diagnosis's innermost loop."""
        e = np.asarray(e)
        if e.dtype != np.float32:          # single precision where the caller asks for it (the null)
            e = e.astype(float, copy=False)
        share = max(1 - self.w - FLOOR, 1e-12)
        if e.dtype == np.float64:          # in place: the operations below, in their order, a third of the arrays
            z, d0, d1 = np.empty(e.shape), np.empty(e.shape), np.empty(e.shape)
            _density(e, self.mu, self.sigma, share, z, d0)
            _density(e, self.mu_j, self.sigma_j, self.w, z, d1)
            np.add(d0, d1, out=d0)
            np.add(d0, FLOOR / (2 * SPAN), out=d0)
            np.log(d0, out=d0)
            return np.negative(d0, out=d0)
        k0 = share / (self.sigma * _SQRT_2PI)
        k1 = self.w / (self.sigma_j * _SQRT_2PI)
        z0 = (e - self.mu) * (1.0 / self.sigma)
        z1 = (e - self.mu_j) * (1.0 / self.sigma_j)
        return -np.log(k0 * np.exp(-0.5 * z0 * z0) + k1 * np.exp(-0.5 * z1 * z1) + FLOOR / (2 * SPAN))

    def p_jitter(self, e: np.ndarray) -> np.ndarray:
        """Each residual's posterior chance of being jitter or an outlier rather than nominal."""
        a, b, c = self._logs(np.asarray(e, dtype=float))
        return 1.0 - np.exp(a - np.logaddexp(np.logaddexp(a, b), c))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` residuals drawn from the model (for the null calibration of the penalty)."""
        u = rng.random(n)
        out = rng.normal(self.mu, self.sigma, n)
        j = u < self.w
        out[j] = rng.normal(self.mu_j, self.sigma_j, int(j.sum()))
        k = u > 1 - FLOOR
        out[k] = rng.uniform(-SPAN, SPAN, int(k.sum()))
        return out

    def as_dict(self) -> dict[str, float]:
        return {k: round(float(v), 6) for k, v in asdict(self).items()}


#: the jitter component is at least this wide (log ratio): jitter cuts pairs by scattered amounts, while
#: the pairs across one degraded cable drop by one amount; without a floor the fit could take such a
#: cluster for jitter
SIGMA_J_MIN = 0.15
#: below this many pairs the mixture is not fitted: the jitter component keeps its prior
MIN_FIT = 50
#: prior jitter: 1 pair in 10, centred at half the rate, wide
PRIOR = {"w": 0.1, "mu_j": np.log(0.5), "sigma_j": 0.35}
#: the nominal level is taken from the unshared pairs alone where at least this many were measured
MIN_UNSHARED = 5


def nominal_level(e: np.ndarray, min_sigma: float = 0.01, unshared: np.ndarray | None = None) -> tuple[float, float]:
    """(centre, spread) of the pairs at the model's rate: the median of the shortest interval that
    holds half the residuals, and 1.4826 x the median distance above it of the residuals above it (a
    fault slows the pairs that cross it, so the upper side is the nominal pairs' alone).

    ``unshared`` (bool per residual): the pairs the model does not hold below their path's rate by
    sharing.  A fault can only slow those; it can *speed* a shared pair (on an oversubscribed tree, a
    pair sharing an uplink with a flow held back elsewhere gets a larger share), which puts fast pairs
    above the centre and, with the slow ones, can leave fewer than half the pairs at the model's rate.
    Given at least :data:`MIN_UNSHARED` of them, the level is theirs alone.

    >>> rng = np.random.default_rng(1)
    >>> e = np.r_[rng.normal(0.0, 0.02, 530), rng.normal(np.log(0.4), 0.02, 470)]   # 47 % at x0.4
    >>> c, s = nominal_level(e)
    >>> abs(c) < 0.01, round(s, 2)
    (True, 0.02)
    >>> sh = np.r_[rng.normal(np.log(0.4), 0.02, 600), rng.normal(np.log(1.6), 0.02, 200)]  # slowed or sped
    >>> e = np.r_[rng.normal(0.0, 0.02, 200), sh]
    >>> c, s = nominal_level(e)                              # 80 % of the pairs off the model's rate
    >>> bool(abs(c) < 0.1)
    False
    >>> c, s = nominal_level(e, unshared=np.arange(len(e)) < 200)
    >>> abs(c) < 0.01, round(s, 2)
    (True, 0.02)
    """
    x = np.asarray(e, dtype=float)
    if unshared is not None and int(np.sum(unshared)) >= MIN_UNSHARED:
        x = x[np.asarray(unshared, bool)]
    x = np.sort(x)
    n = len(x)
    if n == 0:
        return 0.0, min_sigma
    h = n // 2 + 1
    width = x[h - 1:] - x[:n - h + 1]
    i = int(np.argmin(width))
    centre = float(median(x[i:i + h]))
    return centre, upper_spread(x, centre, min_sigma)


def upper_spread(e: np.ndarray, centre: float, min_sigma: float = 0.01) -> float:
    """1.4826 x the median distance above ``centre`` of the residuals above it (of all, below 3 of them).

    >>> round(upper_spread(np.array([-1.0, -0.5, 0.0, 0.01, 0.02, 0.03]), 0.0), 6)   # 1.4826 x 0.02
    0.029652
    """
    up = e[e > centre] - centre
    sigma = 1.4826 * float(median(up)) if len(up) >= 3 else 1.4826 * float(median(np.abs(e - median(e))))
    return max(sigma, min_sigma)


def fit_noise(e: np.ndarray, min_sigma: float = 0.01, iterations: int = 200, w_max: float = 0.5,
              weights: np.ndarray | None = None, centre: float | None = None,
              sigma_j_min: float = SIGMA_J_MIN, unshared: np.ndarray | None = None) -> NoiseModel:
    """Maximum-likelihood mixture (module docstring) of residuals ``e``, by EM.

    The nominal component stays near :func:`nominal_level`'s (its centre within one spread,
    its spread at most 1.5 times, at least ``min_sigma``); the jittered component is kept below the nominal one (its centre at least one nominal
    sigma lower) and at least twice as wide (and ``sigma_j_min``), so that it cannot take over
    the bulk.  ``centre`` fixes the nominal centre (e.g. 0 when the model's absolute rates are to
    be taken as they are).  ``unshared``: which pairs a fault cannot speed (:func:`nominal_level`);
    the nominal centre and the bound on its spread come from them.  With fewer than :data:`MIN_FIT` residuals the jitter component is
    :data:`PRIOR`.

    >>> fit_noise(np.array([-0.92, -0.9, -0.88]), centre=0.0).w     # 3 pairs: the prior
    0.1
    """
    e = np.asarray(e, dtype=float)
    wt = np.ones(len(e)) if weights is None else np.asarray(weights, dtype=float)
    mid, _ = nominal_level(e, min_sigma, unshared)
    mu0 = mid if centre is None else float(centre)
    level = e if unshared is None or int(np.sum(unshared)) < MIN_UNSHARED else e[np.asarray(unshared, bool)]
    sig = upper_spread(level, mu0, min_sigma)
    nm = NoiseModel(mu0, sig, 0.05, mu0 - 0.5, max(0.25, 3 * sig))
    if len(e) < MIN_FIT:
        return NoiseModel(mu0, sig, PRIOR["w"], mu0 + PRIOR["mu_j"], max(PRIOR["sigma_j"], 2 * sig))
    last = np.inf
    # the iteration's arrays, written in place (a pair's operations are the ones, in the order, of the
    # expressions in the comments: the same bits, without a fresh 0.9 MB array per operation; half the
    # CPU of those expressions at 109,800 pairs, bench/noise_fit.py --against)
    n = len(e)
    z0, z1, d0, d1, tot, r0, r1 = (np.empty(n) for _ in range(7))
    wsum = wt.sum()
    for _ in range(iterations):
        # densities, not logs: the floor keeps their sum away from 0 (as in NoiseModel.nll), and the
        # exp and log of each pair once per iteration are this loop's cost
        _density(e, nm.mu, nm.sigma, max(1 - nm.w - FLOOR, 1e-12), z0, d0)   # k0 * exp(-0.5 * z0 * z0)
        _density(e, nm.mu_j, nm.sigma_j, max(nm.w, 1e-300), z1, d1)
        np.add(d0, d1, out=tot)
        np.add(tot, FLOOR / (2 * SPAN), out=tot)                             # d0 + d1 + FLOOR / (2 * SPAN)
        np.divide(d0, tot, out=r0)                                           # d0 / tot * wt
        np.divide(d1, tot, out=r1)
        if weights is not None:
            np.multiply(r0, wt, out=r0)
            np.multiply(r1, wt, out=r1)
        n0, n1 = r0.sum(), r1.sum()
        # the nominal level stays where the nominal pairs put it: the centre within one spread of theirs,
        # the spread (EM's, the more efficient) at most 1.5 times the one above the centre
        mu = mu0 if centre is not None else float(np.clip(dot(r0, e) / max(n0, 1e-300), mu0 - sig, mu0 + sig))
        sigma = float(np.clip(np.sqrt(_dot_sq(r0, e, mu, z0) / max(n0, 1e-300)), min_sigma, 1.5 * sig))
        w = float(np.clip(n1 / wsum, 1e-4, w_max))
        if n1 > 1e-9:
            mu_j = min(dot(r1, e) / n1, mu - sigma)
            sigma_j = max(float(np.sqrt(_dot_sq(r1, e, mu_j, z1) / n1)), 2 * sigma, sigma_j_min)
        else:
            mu_j, sigma_j = nm.mu_j, nm.sigma_j
        nm = NoiseModel(mu, sigma, w, mu_j, sigma_j)
        np.log(tot, out=tot)
        ll = float(np.add.reduce(tot)) if weights is None else dot(wt, tot)     # dot(wt, log(tot))
        if abs(ll - last) < 1e-9 * max(1.0, abs(ll)):
            break
        last = ll
    return nm


def _density(e: np.ndarray, mu: float, sigma: float, share: float, z: np.ndarray, out: np.ndarray) -> None:
    """``out = (share / (sigma * sqrt(2 pi))) * exp(-0.5 * z * z)`` with ``z = (e - mu) * (1 / sigma)``, in
    place (``z`` is scratch)."""
    np.subtract(e, mu, out=z)
    np.multiply(z, 1.0 / sigma, out=z)
    np.multiply(z, -0.5, out=out)
    np.multiply(out, z, out=out)
    np.exp(out, out=out)
    np.multiply(out, share / (sigma * _SQRT_2PI), out=out)


def _dot_sq(r: np.ndarray, e: np.ndarray, mu: float, scratch: np.ndarray) -> float:
    """``dot(r, (e - mu) ** 2)`` in place (``scratch`` is overwritten)."""
    np.subtract(e, mu, out=scratch)
    np.multiply(scratch, scratch, out=scratch)
    np.multiply(r, scratch, out=scratch)
    return float(np.add.reduce(scratch))
