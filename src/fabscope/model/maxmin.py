"""Max-min fair rates by progressive filling, and the congestion-count model.

Resources (directed links, and each host's intra-node memory) have capacities;
flow ``f`` puts ``w[r, f]`` of its rate on resource ``r``.  Progressive
filling raises every unfrozen flow's rate at the same pace; when a resource
fills, the flows on it freeze; a flow also freezes at its own cap.  The result
is the max-min fair allocation: no flow can gain without a flow of smaller or
equal rate losing.

>>> import numpy as np
>>> from fabscope.sparse import csr_matrix
>>> # two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2)
>>> A = csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]]))
>>> maxmin(A, np.array([10.0, 2.0])).tolist()
[8.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from fabscope.csr import gather as _gather
from fabscope.sparse import csr_matrix

#: a resource counts as full when less than this share of its capacity is left
REL_TOL = 1e-9


def maxmin(A: csr_matrix, capacity: np.ndarray, flow_cap: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates of the flows (columns of ``A``) over resources (rows).

    ``flow_cap`` bounds each flow's rate (``inf`` for none).  Flows that
    cross no resource and have no cap get ``inf``.

    All unfrozen flows share one rate, the water level, so a resource fills
    when the level reaches ``(capacity - load of its frozen flows) / (weight of
    its live flows)``.  That level changes only for the resources a freezing
    flow crosses, so each round touches just those (and takes one minimum).
    """
    A = csr_matrix(A, dtype=np.float64)
    n_res, n_flows = A.shape
    capacity = np.asarray(capacity, dtype=np.float64)
    cap = np.full(n_flows, np.inf) if flow_cap is None else np.asarray(flow_cap, dtype=np.float64)
    C = A.tocsc()
    rate = np.zeros(n_flows)
    touches = np.diff(C.indptr) > 0
    free = ~touches & ~np.isfinite(cap)
    rate[free] = np.inf
    active = ~free
    live_w = np.asarray(A.sum(axis=1)).ravel()       # weight of live flows on each resource
    frozen = np.zeros(n_res)                         # load of frozen flows on each resource
    fill = np.full(n_res, np.inf)
    np.divide(capacity, live_w, out=fill, where=live_w > 0)
    capped = np.flatnonzero(np.isfinite(cap) & active)
    capped = capped[np.argsort(cap[capped], kind="stable")]
    ptr = 0
    n_active = int(active.sum())
    seen = np.zeros(n_flows, dtype=np.int64)         # scratch for dropping duplicate flow ids
    while n_active:
        while ptr < len(capped) and not active[capped[ptr]]:
            ptr += 1
        next_cap = cap[capped[ptr]] if ptr < len(capped) else np.inf
        level = min(fill.min(initial=np.inf), next_cap)
        if not np.isfinite(level):  # pragma: no cover - guarded by `free` above
            break
        full = np.flatnonzero(fill <= level * (1 + REL_TOL))
        new = C.indices[0:0]
        if len(full):
            new = A.indices[_gather(A.indptr, full)]
        at_cap = []
        while ptr < len(capped) and cap[capped[ptr]] <= level * (1 + REL_TOL):
            at_cap.append(capped[ptr])
            ptr += 1
        new = np.r_[new, np.array(at_cap, dtype=new.dtype)]
        new = new[active[new]]
        if not len(new):  # pragma: no cover - numerical safety
            fill[full] = np.inf
            continue
        if len(new) > 1:  # drop duplicates without sorting
            first = np.zeros(len(new), dtype=bool)
            seen[new[::-1]] = np.arange(len(new))[::-1]
            first[seen[new]] = True
            new = new[first]
        active[new] = False
        rate[new] = level
        n_active -= len(new)
        pos = _gather(C.indptr, new)
        rows, w = C.indices[pos], C.data[pos]
        np.add.at(live_w, rows, -w)
        np.add.at(frozen, rows, w * level)
        lw = live_w[rows]
        with np.errstate(over="ignore", divide="ignore"):
            fill[rows] = np.where(lw > 1e-9, (capacity[rows] - frozen[rows]) / np.maximum(lw, 1e-300), np.inf)
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
    per = np.full(len(count), np.inf)
    np.divide(np.asarray(capacity, float), count, out=per, where=count > 0)
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
