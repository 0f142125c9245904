"""Max-min fair rates by progressive filling, and the congestion-count model.

Resources (directed links, and each host's intra-node memory) have capacities;
flow ``f`` puts ``w[r, f]`` of its rate on resource ``r``.  Progressive
filling raises every unfrozen flow's rate at the same pace; when a resource
fills, the flows on it freeze; a flow also freezes at its own cap.  The result
is the max-min fair allocation: no flow can gain without a flow of smaller or
equal rate losing.

>>> import numpy as np
>>> from scipy.sparse import csr_matrix
>>> # two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2)
>>> A = csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]]))
>>> maxmin(A, np.array([10.0, 2.0])).tolist()
[8.0, 2.0]
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

#: a resource counts as full when less than this share of its capacity is left
REL_TOL = 1e-9


def maxmin(A: csr_matrix, capacity: np.ndarray, flow_cap: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates of the flows (columns of ``A``) over resources (rows).

    ``flow_cap`` bounds each flow's rate (``inf`` for none).  Flows that
    cross no resource and have no cap get ``inf``.

    All unfrozen flows share one rate, the water ``level``, so a round costs
    two sparse products over what is still active; the matrix is compacted to
    the active flows and their resources whenever half of them have frozen.
    """
    A = csr_matrix(A, dtype=np.float64)
    n_res, n_flows = A.shape
    capacity = np.asarray(capacity, dtype=np.float64)
    cap_all = np.full(n_flows, np.inf) if flow_cap is None else np.asarray(flow_cap, dtype=np.float64)
    rate = np.zeros(n_flows)
    touches = np.diff(A.tocsc().indptr) > 0
    free = ~touches & ~np.isfinite(cap_all)
    rate[free] = np.inf
    cols = np.flatnonzero(~free)                    # global ids of the live columns
    B = A[:, cols].tocsr()
    cap = cap_all[cols]
    c = capacity.copy()
    rem = capacity.copy()
    active = np.ones(len(cols), dtype=bool)
    load = B @ active.astype(np.float64)
    level = 0.0
    while active.any():
        used = load > 0
        share = np.full(len(rem), np.inf)
        share[used] = rem[used] / load[used]
        delta = min(share.min(initial=np.inf), cap[active].min(initial=np.inf) - level)
        if not np.isfinite(delta):  # pragma: no cover - guarded by `free` above
            break
        delta = max(delta, 0.0)
        level += delta
        rem -= delta * load
        full = used & (rem <= REL_TOL * c)
        frozen = (full.astype(np.float64) @ B) > 0
        frozen |= cap <= level * (1 + REL_TOL)
        newly = active & frozen
        if not newly.any():  # numerical safety: freeze the flows of the tightest resource
            tight = used & (share <= share[used].min() * (1 + 1e-6))
            newly = active & ((tight.astype(np.float64) @ B) > 0)
        rate[cols[newly]] = level
        active &= ~newly
        load -= B @ newly.astype(np.float64)
        load[load < 1e-12] = 0.0
        if active.sum() * 2 < len(active):           # compact to what is still live
            keep_r = load > 0
            B = B[keep_r][:, active]
            rem, c, load = rem[keep_r], c[keep_r], load[keep_r]
            cols, cap = cols[active], cap[active]
            active = np.ones(len(cols), dtype=bool)
    return rate


def congestion_count(A: csr_matrix, capacity: np.ndarray, flow_cap: np.ndarray | None = None) -> np.ndarray:
    """Each flow's rate as capacity / flows on the busiest resource of its path (as ORCS computes it).

    >>> import numpy as np
    >>> A = csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]]))
    >>> congestion_count(A, np.array([10.0, 2.0])).tolist()
    [5.0, 2.0]
    """
    A = csr_matrix(A, dtype=np.float64)
    count = np.asarray(A.sum(axis=1)).ravel()
    per = np.where(count > 0, np.asarray(capacity, float) / np.maximum(count, 1e-300), np.inf)
    # min over each flow's resources of per[r]
    AT = A.T.tocsr()
    vals = per[AT.indices]
    rate = np.full(A.shape[1], np.inf)
    nz = np.diff(AT.indptr) > 0
    if len(vals):
        mins = np.minimum.reduceat(vals, AT.indptr[:-1][nz])
        rate[nz] = mins
    if flow_cap is not None:
        rate = np.minimum(rate, flow_cap)
    return rate
