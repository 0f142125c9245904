"""Rows of a compressed (CSR-style) layout, gathered without a Python loop.

>>> import numpy as np
>>> gather(np.array([0, 2, 2, 5]), np.array([2, 0])).tolist()    # row 2's entries, then row 0's
[2, 3, 4, 0, 1]
"""

from __future__ import annotations

import numpy as np


def gather(indptr: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Positions of the entries of rows ``which`` (in that order) of a layout whose row ``i``
    holds entries ``indptr[i]:indptr[i + 1]``."""
    which = np.asarray(which, dtype=np.int64)
    starts = indptr[which]
    lens = indptr[which + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return offs + np.arange(total)
