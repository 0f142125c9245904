"""NumPy's ``unique`` and ``median`` of plain arrays, without importing ``numpy.ma``.

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
"""

from __future__ import annotations

import numpy as np


def unique(x) -> np.ndarray:
    """``np.unique(x)``: the sorted distinct values (by sorting, not NumPy's hash table)."""
    return np.unique(x, return_index=True)[0]


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
