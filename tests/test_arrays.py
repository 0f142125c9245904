"""fabscope.arrays: NumPy's unique and median, the same values, without numpy.ma."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from fabscope.arrays import median, unique, unique_inverse


def test_unique_and_median_are_numpys():
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 4, 7, 8, 100, 101):
        for x in (rng.integers(0, 5, n), rng.integers(-10**12, 10**12, n), rng.normal(size=n),
                  rng.exponential(1e-3, n), np.repeat(rng.normal(size=1), n)):
            assert np.array_equal(unique(x), np.unique(x)) and unique(x).dtype == np.unique(x).dtype
            assert median(x) == float(np.median(x)), (n, x)           # the same bits
    assert np.isnan(median(np.array([1.0, np.nan, 2.0]))) and np.isnan(np.median(np.array([1.0, np.nan, 2.0])))


def test_unique_inverse_is_numpys_whether_it_counts_or_sorts():
    rng = np.random.default_rng(6)
    for n, lo, hi, bound in [(0, 0, 1, 5), (1, 0, 1, 1), (1000, 0, 50, 50), (1000, 0, 3000, 3000),
                             (100, 0, 10_000, 10_000), (200, -5, 5, 5), (200, 0, 9, 5)]:
        x = rng.integers(lo, hi, n)
        u, inv = unique_inverse(x, bound)          # counting for the first four, NumPy's for the last three
        U, INV = np.unique(x, return_inverse=True)
        assert np.array_equal(u, U) and np.array_equal(inv, INV) and (u.dtype, inv.dtype) == (U.dtype, INV.dtype)


def test_neither_imports_numpy_ma():
    code = ("import sys, numpy as np\nfrom fabscope.arrays import median, unique\n"
            "unique(np.array([2, 1, 2])); median(np.array([3.0, 1.0]))\nprint('numpy.ma' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "False", p.stderr
