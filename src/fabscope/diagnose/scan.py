"""What degrading one cable would do to the measured pairs, for many cables at once.

The tomography (:mod:`.tomography`) asks, for every candidate cable ``c``
and every factor ``s`` on a grid, how far the model's pairs would move if
``c``'s capacity were multiplied by ``s``.  Rerunning the flow model for
each (cable, factor) is too slow at 100,000 pairs, so this module answers
locally: the flows on ``c`` (per concurrent set) keep their current rates
except where ``c`` becomes too small for them, where they are cut to the
new water level ``w`` of ``c``, the level at which ``sum_f weight_f *
min(rate_f, w)`` equals the new capacity.  That level is the largest of
``(T - P_j) / K_j`` over the flows in increasing rate order (``P_j`` the
load of the slower flows, ``K_j`` the weight of the others), because the
load as a function of the level is concave and piecewise linear.  What
flows elsewhere would gain from the capacity ``c`` frees is ignored here;
the caller checks its choices with the whole model.

>>> import numpy as np
>>> # one row (a link of capacity 10 in one round) carrying flows at 2, 4 and 4
>>> lvl = water_levels(np.array([0, 0, 0]), np.array([2.0, 4.0, 4.0]), np.ones(3),
...                    np.array([10.0]), np.array([[1.0, 0.6, 0.3]]))
>>> lvl.round(3).tolist()                # 10: no change; 6: 2 + 2w = 6 -> w = 2; 3: 3w = 3 -> 1
[[inf, 2.0, 1.0]]
"""

from __future__ import annotations

import numpy as np


def water_levels(row: np.ndarray, rate: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
                 scale: np.ndarray) -> np.ndarray:
    """Water level of every row (0..R-1) at each capacity scale (``scale``: R x G, or 1 x G).

    ``row``, ``rate``, ``weight``: the entries (flows on rows) with their
    current rates; ``capacity``: each row's current capacity.  ``inf`` where
    the row's new capacity still carries its current load.
    """
    R = len(capacity)
    scale = np.broadcast_to(scale, (R, scale.shape[-1]))
    order = np.lexsort((rate, row))
    r, w, rw = row[order], weight[order], rate[order]
    load = np.bincount(r, weights=w * rw, minlength=R)
    wsum = np.bincount(r, weights=w, minlength=R)
    starts = np.r_[0, np.flatnonzero(np.diff(r)) + 1] if len(r) else np.zeros(0, np.int64)
    cum = np.cumsum(w * rw)
    cumw = np.cumsum(w)
    base = np.repeat(cum[starts] - (w * rw)[starts], np.diff(np.r_[starts, len(r)]))
    basew = np.repeat(cumw[starts] - w[starts], np.diff(np.r_[starts, len(r)]))
    P = cum - w * rw - base                 # load of the slower flows of the row
    K = wsum[r] - (cumw - w - basew)        # weight of this flow and the faster ones
    T = capacity[:, None] * scale           # R x G
    vals = (T[r] - P[:, None]) / np.maximum(K, 1e-300)[:, None]
    lvl = np.full(T.shape, -np.inf)
    present = np.unique(r)
    if len(r):
        lvl[present] = np.maximum.reduceat(vals, starts, axis=0)
    lvl[T >= load[:, None] * (1 - 1e-12)] = np.inf
    return lvl
