"""fabscope.arrays: NumPy's unique and median, the same values, without numpy.ma."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from fabscope.arrays import median, unique


def test_unique_and_median_are_numpys():
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 4, 7, 8, 100, 101):
        for x in (rng.integers(0, 5, n), rng.integers(-10**12, 10**12, n), rng.normal(size=n),
                  rng.exponential(1e-3, n), np.repeat(rng.normal(size=1), n)):
            assert np.array_equal(unique(x), np.unique(x)) and unique(x).dtype == np.unique(x).dtype
            assert median(x) == float(np.median(x)), (n, x)           # the same bits
    assert np.isnan(median(np.array([1.0, np.nan, 2.0]))) and np.isnan(np.median(np.array([1.0, np.nan, 2.0])))


def test_neither_imports_numpy_ma():
    code = ("import sys, numpy as np\nfrom fabscope.arrays import median, unique\n"
            "unique(np.array([2, 1, 2])); median(np.array([3.0, 1.0]))\nprint('numpy.ma' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "False", p.stderr
