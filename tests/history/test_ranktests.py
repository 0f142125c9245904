"""fabscope.history.ranktests against SciPy's tests (the reference: scipy.stats, imported here only).

Random inputs with ties (values rounded to a few levels) and without, small and large n, every
alternative; edge cases: every value equal, n = 2, one side of one value.  p-values agree within
1e-12 relatively (the normal tail: math.erfc against SciPy's ndtr, at most 2e-13 apart down to
p = 1e-300), exact p-values of Kendall's tau within 1e-12, the Theil-Sen slope and its interval exactly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")

from fabscope.history.ranktests import (average_ranks, kendall_tau, mann_whitney, normal_cdf,  # noqa: E402
                                        normal_ppf, theil_sen)

ALTERNATIVES = ("less", "greater", "two-sided")


def _close(a: float, b: float, rtol: float = 1e-12) -> bool:
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return abs(a - b) <= rtol * max(abs(a), abs(b)) or abs(a - b) < 1e-300


def _draws(seed: int):
    """(x, y) pairs: continuous, tied (few levels), heavy ties, small and large, unequal sizes."""
    rng = np.random.default_rng(seed)
    for n1, n2 in [(1, 1), (1, 5), (2, 2), (3, 4), (8, 9), (9, 9), (20, 7), (60, 200), (500, 3000), (5000, 40)]:
        shift = rng.uniform(-1, 1)
        x, y = rng.normal(shift, 1, n1), rng.normal(0, 1, n2)
        yield x, y
        yield np.round(x * 2) / 2, np.round(y * 2) / 2          # ties within and across
        yield np.round(x), np.zeros(n2)                           # one side all equal
        yield np.round(rng.uniform(0, 2, n1)), np.round(rng.uniform(0, 2, n2))   # three levels


def test_normal_tail_and_quantile_are_scipys():
    z = np.r_[np.linspace(-37, 9, 20001), 0.0, -1e-8, 1e-8]
    for v in z:
        assert _close(normal_cdf(float(v)), float(special.ndtr(v)), 2e-12), v
    for p in np.r_[np.logspace(-300, -1, 600), np.linspace(0.01, 0.99, 99), 1 - np.logspace(-15, -1, 50)]:
        assert _close(normal_ppf(float(p)), float(stats.norm.ppf(p)), 1e-12), p


def test_ranks_are_scipys():
    rng = np.random.default_rng(1)
    for v in (rng.normal(size=50), np.round(rng.normal(size=200)), np.ones(7), np.array([2.0])):
        r, t = average_ranks(v)
        assert np.array_equal(r, stats.rankdata(v))
        assert sorted(t.tolist()) == sorted(np.unique(v, return_counts=True)[1].tolist())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mann_whitney_is_scipys_asymptotic(seed):
    for x, y in _draws(seed):
        for alt in ALTERNATIVES:
            ours = mann_whitney(x, y, alt)
            ref = stats.mannwhitneyu(x, y, alternative=alt, method="asymptotic")
            assert ours.u == float(ref.statistic)
            assert _close(ours.p, float(ref.pvalue)), (len(x), len(y), alt, ours.p, float(ref.pvalue))


def test_mann_whitney_edges():
    # every value equal: U at its mean, z = -inf after the continuity correction, p = 1 (as SciPy)
    ref = stats.mannwhitneyu(np.ones(3), np.ones(4), alternative="less", method="asymptotic")
    assert mann_whitney(np.ones(3), np.ones(4), "less").p == float(ref.pvalue) == 1.0
    # n = 2, one value each
    for alt in ALTERNATIVES:
        ref = stats.mannwhitneyu([0.0], [1.0], alternative=alt, method="asymptotic")
        assert _close(mann_whitney(np.array([0.0]), np.array([1.0]), alt).p, float(ref.pvalue))
    # far apart: a p-value near the bottom of the doubles
    x, y = np.arange(3000.0), np.arange(3000.0) + 10000
    ref = float(stats.mannwhitneyu(x, y, alternative="less", method="asymptotic").pvalue)
    assert ref < 1e-300 and _close(mann_whitney(x, y, "less").p, ref)


def _series(seed: int):
    rng = np.random.default_rng(seed)
    for n in (2, 3, 4, 5, 8, 12, 20, 29, 33, 34, 40, 120, 600):
        x = np.arange(n, dtype=float)
        y = rng.normal(size=n) - rng.uniform(-0.2, 0.2) * x
        yield x, y                                   # no ties: exact at n <= 33
        yield x, np.round(y)                         # ties in y: asymptotic
        yield np.round(x / 3), y                     # ties in x
        yield x, np.sort(y)                          # every pair concordant: exact at any n
        yield x, np.r_[np.sort(y)[::-1][:-2], np.sort(y)[:2][::-1]] if n > 3 else y[::-1]
        s = np.sort(y)                               # one discordant pair: exact at any n
        if n > 2:
            s[[0, 1]] = s[[1, 0]]
        yield x, s


@pytest.mark.parametrize("seed", [0, 1])
def test_kendall_tau_is_scipys(seed):
    for x, y in _series(seed):
        for alt in ALTERNATIVES:
            ours = kendall_tau(x, y, alt)
            ref = stats.kendalltau(x, y, alternative=alt)
            assert _close(ours.tau, float(ref.statistic), 1e-15), (len(x), alt)
            assert _close(ours.p, float(ref.pvalue)), (len(x), alt, ours.p, float(ref.pvalue))


def test_kendall_tau_edges():
    x = np.arange(5.0)
    for y in (np.ones(5), np.array([1.0])):          # a constant side; one point: NaN as SciPy
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # SciPy's warning that one point is too few
            ref = stats.kendalltau(x[:len(y)], y, alternative="less")
        ours = kendall_tau(x[:len(y)], y, "less")
        assert np.isnan(ours.tau) and np.isnan(ours.p) and np.isnan(ref.statistic) and np.isnan(ref.pvalue)
    for y in ([0.0, 1.0], [1.0, 0.0]):              # n = 2: exact
        for alt in ALTERNATIVES:
            ref = stats.kendalltau([0.0, 1.0], y, alternative=alt)
            assert kendall_tau(np.array([0.0, 1.0]), np.array(y), alt) == (float(ref.statistic), float(ref.pvalue))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_theil_sen_is_scipys(seed):
    rng = np.random.default_rng(seed)
    for n in (2, 3, 5, 10, 29, 100, 400):
        x = np.arange(n, dtype=float)
        for y, xs in ((rng.normal(size=n) + 0.1 * x, None), (np.round(rng.normal(size=n)), x),
                      (rng.normal(size=n), np.round(rng.uniform(0, n / 3, n)))):
            for conf in (0.95, 0.9, 0.99, 0.05):
                if xs is not None and np.ptp(xs) == 0:
                    continue
                ours = theil_sen(y, xs, conf)
                ref = stats.theilslopes(y, xs, alpha=conf)
                assert ours == tuple(float(v) for v in ref), (n, conf, ours, ref)


def test_theil_sen_edges():
    ours, ref = theil_sen(np.ones(6)), stats.theilslopes(np.ones(6))
    assert ours == tuple(float(v) for v in ref) and ours.slope == 0.0
    assert theil_sen(np.array([1.0, 3.0])) == tuple(float(v) for v in stats.theilslopes([1.0, 3.0]))
    with pytest.raises(ValueError, match="at least two"):
        theil_sen(np.array([1.0]))
