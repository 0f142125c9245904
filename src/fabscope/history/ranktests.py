"""The rank tests of ``history check`` in numpy and the standard library: no scipy.stats to import.

Importing scipy.stats took 1.3 of the 4.3 CPU s of a nightly ``history check`` at 2,197 hosts; these
are the three tests it used, computed the way SciPy 1.17 computes them (``tests/history/test_ranktests.py``
holds them to SciPy's on random inputs with ties, small and large):

- :func:`mann_whitney`: the U test's normal approximation with the tie correction and the
  continuity correction (``scipy.stats.mannwhitneyu(..., method="asymptotic")``);
- :func:`kendall_tau`: Kendall's tau-b and its p-value, exact (the number of permutations with so
  many inversions, counted in integers) without ties at n <= 33 or one discordant pair from the end,
  the normal approximation with tie terms otherwise (``scipy.stats.kendalltau``, method "auto");
- :func:`theil_sen`: the median of the slopes between every two points, Sen's confidence interval
  (``scipy.stats.theilslopes``, method "separate").

The normal tail is the C library's ``erfc`` (``math.erfc``); SciPy's ``ndtr`` has its own, which
differs by up to 2e-13 relatively where p < 1e-23 (and in the last bits elsewhere).

>>> import numpy as np
>>> round(mann_whitney(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0, 6.0]), "less").p, 6)
0.024873
>>> t = kendall_tau(np.arange(5.0), np.array([5.0, 4.0, 3.0, 1.0, 2.0]), "less")
>>> round(t.tau, 3), round(t.p, 6)
(-0.8, 0.041667)
>>> round(theil_sen(np.array([0.0, 1.0, 2.0, 4.0]), np.arange(4.0)).slope, 4)
1.1667
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

_SQRT1_2 = math.sqrt(0.5)


def normal_cdf(z: float) -> float:
    """P(Z <= z) for a standard normal Z, from the complementary error function (no cancellation in
    either tail).

    >>> normal_cdf(0.0), round(normal_cdf(-1.959963984540054), 6)
    (0.5, 0.025)
    """
    return 0.5 * math.erfc(-z * _SQRT1_2)


def normal_ppf(p: float) -> float:
    """The z with P(Z <= z) = p: P. J. Acklam's rational approximation (its published coefficients;
    relative error 1.2e-9), then two Newton steps on :func:`normal_cdf` (to the last bits).

    >>> round(normal_ppf(0.025), 12), normal_ppf(0.5)
    (-1.95996398454, 0.0)
    """
    if not 0.0 < p < 1.0:
        return -math.inf if p == 0.0 else math.inf if p == 1.0 else math.nan
    if p == 0.5:
        return 0.0
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
         -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
         -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
         4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)
    q = min(p, 1.0 - p)
    if q < 0.02425:
        r = math.sqrt(-2.0 * math.log(q))
        z = (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) / \
            ((((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1.0)
        z = z if p < 0.5 else -z
    else:
        r = p - 0.5
        s = r * r
        z = (((((a[0] * s + a[1]) * s + a[2]) * s + a[3]) * s + a[4]) * s + a[5]) * r / \
            (((((b[0] * s + b[1]) * s + b[2]) * s + b[3]) * s + b[4]) * s + 1.0)
    for _ in range(2):     # Newton on the smaller tail, where the cdf has its precision
        e = (normal_cdf(z) - p) if p < 0.5 else (q - normal_cdf(-z))
        z -= e * math.sqrt(2 * math.pi) * math.exp(0.5 * z * z)
    return z


def average_ranks(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n of ``v``, ties given the mean of their ranks; and the size of each group of equal values.

    >>> r, t = average_ranks(np.array([3.0, 1.0, 3.0, 2.0]))
    >>> r.tolist(), t.tolist()
    ([3.5, 1.0, 3.5, 2.0], [1, 1, 2])
    """
    n = len(v)
    order = np.argsort(v)          # the order among equal values does not matter: they share their mean rank
    s = v[order]
    start = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])       # first index of each group of equal values
    sizes = np.diff(np.r_[start, n])
    # a group holding sorted positions i..j (0-based) has ranks i+1..j+1: their mean (i + j) / 2 + 1
    mean = start + (sizes - 1) / 2.0 + 1.0
    ranks = np.empty(n)
    ranks[order] = np.repeat(mean, sizes)
    return ranks, sizes


class MannWhitney(NamedTuple):
    u: float     # U of the first sample: pairs (x_i, y_j) with x_i > y_j, ties counting one half
    p: float


def mann_whitney(x: np.ndarray, y: np.ndarray, alternative: str = "two-sided") -> MannWhitney:
    """The Mann-Whitney U test of ``x`` against ``y`` (``alternative``: "less": x lower, "greater",
    "two-sided"), the normal approximation with the tie correction and continuity correction 1/2.

    >>> mann_whitney(np.array([1.0, 1.0]), np.array([1.0, 1.0, 1.0]), "less")     # all equal: z = -inf
    MannWhitney(u=3.0, p=1.0)
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    n1, n2 = len(x), len(y)
    ranks, t = average_ranks(np.r_[x, y])
    u1 = float(np.sum(ranks[:n1]) - n1 * (n1 + 1) / 2)
    u2 = n1 * n2 - u1
    if alternative == "greater":
        u, f = u1, 1
    elif alternative == "less":
        u, f = u2, 1
    elif alternative == "two-sided":
        u, f = max(u1, u2), 2
    else:
        raise ValueError(f"alternative {alternative!r}: less, greater or two-sided")
    n = n1 + n2
    t = t[t > 1].astype(float)
    tie_term = float(np.sum(t ** 3 - t))
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    s = math.sqrt(var) if var > 0 else 0.0
    num = u - n1 * n2 / 2 - 0.5
    if s > 0:
        z = num / s
    else:                 # every value equal (or one value): no spread to test against
        z = math.nan if num == 0 else math.copysign(math.inf, num)
    p = normal_cdf(-z) * f if not math.isnan(z) else math.nan
    return MannWhitney(u1, min(max(p, 0.0), 1.0) if not math.isnan(p) else p)


class KendallTau(NamedTuple):
    tau: float     # tau-b
    p: float


def _inversions_upto(n: int, c: int) -> list[int]:
    """How many permutations of n items have k inversions, for k = 0..c (Mahonian numbers, exact).

    >>> _inversions_upto(4, 6)
    [1, 3, 5, 6, 5, 3, 1]
    """
    row = [1] + [0] * c
    for j in range(2, n + 1):          # insert the j-th item: it adds 0..j-1 inversions
        acc, new = 0, []
        for k in range(c + 1):
            acc += row[k]
            if k >= j:
                acc -= row[k - j]
            new.append(acc)
        row = new
    return row


def _kendall_exact(n: int, concordant: int, alternative: str) -> float:
    """The exact p-value of ``concordant`` concordant pairs among n untied points."""
    tot = n * (n - 1) // 2
    nf = math.factorial(n)

    def at_most(c: int) -> int:           # permutations with at most c concordant pairs
        if c < 0:
            return 0
        if c > tot - c - 1:                   # the larger side: by symmetry, from the smaller one
            return nf - at_most(tot - c - 1)
        return sum(_inversions_upto(n, c))

    if alternative == "less":
        k = at_most(concordant)
    elif alternative == "greater":
        k = nf - at_most(concordant - 1)
    elif alternative == "two-sided":
        k = 2 * at_most(min(concordant, tot - concordant))
    else:
        raise ValueError(f"alternative {alternative!r}: less, greater or two-sided")
    return min(k / nf, 1.0)


def kendall_tau(x: np.ndarray, y: np.ndarray, alternative: str = "two-sided") -> KendallTau:
    """Kendall's tau-b of ``x`` and ``y`` and its p-value ("less": falling, "greater", "two-sided"):
    exact without ties at n <= 33 (or with at most one pair out of order either way), else the normal
    approximation with the tie terms of the variance.  NaN for fewer than two points or a constant side.

    >>> kendall_tau(np.arange(4.0), np.ones(4))
    KendallTau(tau=nan, p=nan)
    """
    x = np.asarray(x, float).ravel()
    y = np.asarray(y, float).ravel()
    if len(x) != len(y):
        raise ValueError(f"kendall_tau: {len(x)} x against {len(y)} y")
    n = len(x)
    if n < 2:
        return KendallTau(math.nan, math.nan)
    iu = np.triu_indices(n, 1)
    sx = np.sign(np.subtract.outer(x, x)[iu])
    sy = np.sign(np.subtract.outer(y, y)[iu])
    prod = sx * sy
    dis = int(np.count_nonzero(prod < 0))
    con_minus_dis = int(np.count_nonzero(prod > 0)) - dis
    xtie, ytie = int(np.count_nonzero(sx == 0)), int(np.count_nonzero(sy == 0))
    tot = n * (n - 1) // 2
    if xtie == tot or ytie == tot:
        return KendallTau(math.nan, math.nan)
    tau = con_minus_dis / math.sqrt(tot - xtie) / math.sqrt(tot - ytie)
    tau = min(1.0, max(-1.0, tau))
    if xtie == 0 and ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1):
        return KendallTau(tau, _kendall_exact(n, tot - dis, alternative))

    def tie_sums(v: np.ndarray) -> tuple[int, int]:
        cnt = np.unique(v, return_counts=True)[1].astype(np.int64)
        cnt = cnt[cnt > 1]
        return (int((cnt * (cnt - 1) * (cnt - 2)).sum()), int((cnt * (cnt - 1) * (2 * cnt + 5)).sum()))

    (x0, x1), (y0, y1) = tie_sums(x), tie_sums(y)
    m = n * (n - 1.0)
    var = (m * (2 * n + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (n - 2))
    z = con_minus_dis / math.sqrt(var)
    if alternative == "less":
        p = normal_cdf(z)
    elif alternative == "greater":
        p = normal_cdf(-z)
    elif alternative == "two-sided":
        p = 2 * normal_cdf(-abs(z))
    else:
        raise ValueError(f"alternative {alternative!r}: less, greater or two-sided")
    return KendallTau(tau, p)


class TheilSen(NamedTuple):
    slope: float
    intercept: float     # median(y) - slope * median(x)
    low: float           # the confidence interval of the slope
    high: float


def theil_sen(y: np.ndarray, x: np.ndarray | None = None, confidence: float = 0.95) -> TheilSen:
    """The Theil-Sen slope of ``y`` over ``x`` (default 0, 1, ...): the median of (y_j - y_i) / (x_j - x_i)
    over the pairs with x_j > x_i; its ``confidence`` interval after Sen (1968), ties in x and y taken off
    the variance.

    >>> t = theil_sen(np.array([0.0, 1.0, 2.0, 3.0, 10.0]))
    >>> t.slope, t.intercept, t.low, t.high
    (1.0, 0.0, 1.0, 7.0)
    """
    y = np.asarray(y, float).ravel()
    x = np.arange(len(y), dtype=float) if x is None else np.asarray(x, float).ravel()
    if len(x) != len(y):
        raise ValueError(f"theil_sen: {len(x)} x against {len(y)} y")
    if len(x) < 2:
        raise ValueError("theil_sen: at least two points")
    dx = x[:, None] - x
    dy = y[:, None] - y
    up = dx > 0
    slopes = np.sort(dy[up] / dx[up])
    if not len(slopes):
        raise ValueError("theil_sen: every x is the same")
    slope = float(np.median(slopes))
    intercept = float(np.median(y) - slope * np.median(x))
    alpha = 1.0 - confidence if confidence > 0.5 else confidence
    z = normal_ppf(alpha / 2.0)

    def reps(v: np.ndarray) -> int:
        k = np.unique(v, return_counts=True)[1].astype(np.int64)
        k = k[k > 1]
        return int((k * (k - 1) * (2 * k + 5)).sum())

    ny, nt = len(y), len(slopes)
    sigma = math.sqrt((ny * (ny - 1) * (2 * ny + 5) - reps(x) - reps(y)) / 18.0)
    hi = min(int(np.round((nt - z * sigma) / 2.0)), nt - 1)
    lo = max(int(np.round((nt + z * sigma) / 2.0)) - 1, 0)
    return TheilSen(slope, intercept, float(slopes[lo]), float(slopes[hi]))
