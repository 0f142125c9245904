"""NumPy's ``unique`` and ``median`` of plain arrays, without importing ``numpy.ma``; ``unique`` with
its inverse by counting; a dot product whose bits do not depend on the BLAS.

NumPy 2 imports its masked arrays (about 0.011 CPU s, 8 % of ``import numpy``) the first time
``np.unique`` is called without ``return_*`` or ``np.median`` at all, to ask whether the array is
masked; a command on a small input pays that for one call.  These give the same values
(``tests/test_arrays.py``) for the 1-D arrays of numbers the commands pass.

>>> unique(np.array([3, 1, 3, 2])).tolist()
[1, 2, 3]
>>> float(median(np.array([4.0, 1.0, 2.0]))), float(median(np.array([4.0, 1.0, 2.0, 3.0])))
(2.0, 2.5)
>>> import math; math.isnan(median(np.array([1.0, np.nan])))
True
>>> dot(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
32.0
"""

from __future__ import annotations

import numpy as np


def unique(x) -> np.ndarray:
    """``np.unique(x)``: the sorted distinct values (by sorting, not NumPy's hash table)."""
    return np.unique(x, return_index=True)[0]


def unique_inverse(x: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, return_inverse=True)`` of integers: by counting where they lie in ``0..bound-1`` and
    ``bound`` is at most 4 x ``len(x)`` (no sort: 0.03 CPU s against NumPy's 0.22-0.24 on the 2.6 million
    path entries of a 13x13x13 torus night's pairs, median of 5), else NumPy's.

    >>> u, inv = unique_inverse(np.array([7, 2, 7, 5]), 8)
    >>> u.tolist(), inv.tolist()
    ([2, 5, 7], [2, 0, 2, 1])
    """
    if bound > 4 * len(x) or (len(x) and (x.min() < 0 or x.max() >= bound)):
        return np.unique(x, return_inverse=True)
    seen = np.zeros(bound, bool)
    seen[x] = True
    return np.flatnonzero(seen), (np.cumsum(seen) - 1)[x]


def median(x) -> float:
    """``np.median(x)`` of a 1-D array of numbers: the middle value, or the mean of the middle two
    (added then halved, as NumPy's mean of two); NaN if there is one."""
    a = np.asarray(x, dtype=float).ravel()
    if len(a) == 0 or np.isnan(a).any():
        return float("nan")
    n = len(a)
    part = np.partition(a, [(n - 1) // 2, n // 2])
    if n % 2:
        return float(part[n // 2])
    return float((part[n // 2 - 1] + part[n // 2]) / 2.0)


def dot(a, b) -> float:
    """The sum of ``a * b`` (1-D), by NumPy's pairwise sum, not BLAS: ``a @ b`` over more than about
    10,000 entries is split by OpenBLAS among its threads, each summing its share, so its last bits
    change with the machine's cores, and the idle threads spin afterwards (diagnose's noise fit on
    109,800 pairs: 0.37 CPU s with a thread per core against 0.06 s with one;
    ``tests/diagnose/test_noise.py``)."""
    return float(np.add.reduce(np.multiply(a, b)))
