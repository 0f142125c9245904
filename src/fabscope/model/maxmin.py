"""Max-min fair rates by progressive filling, and the congestion-count model.

Resources (directed links, and each host's intra-node memory) have capacities;
flow ``f`` puts ``w[r, f]`` of its rate on resource ``r``.  Progressive
filling raises every unfrozen flow's rate at the same pace; when a resource
fills, the flows on it freeze; a flow also freezes at its own cap.  The result
is the max-min fair allocation: no flow can gain without a flow of smaller or
equal rate losing.

Two implementations of the same steps.  :func:`maxmin_reference` is numpy (it
scans every resource at each level): the reference, and the path where no C
compiler is found.  ``maxmin.c``, built on first use by :mod:`fabscope.cbuild`,
keeps the resources' fill levels under a tournament tree, so a level touches
only the resources it fills and the rows its frozen flows cross; it does the
reference's float operations in the reference's order, so the rates are the
same bits, not merely close (``tests/model/test_maxmin.py`` holds them to
that).  :func:`maxmin` takes the C path where the library loads
(:func:`available`), else the reference.  A caller that solves one matrix
under many capacities passes :func:`prepare`'s :class:`MaxMinMatrix` instead
of the matrix, so no call converts it again (``PairModel.flow_rates`` does).
At the diagnosis's size (109,800 pairs, 219,600 flows, 1.1 million resources)
a solve took 0.27 CPU s in numpy and 0.08 in C, 0.36 before with the
conversion (``python bench/bench_maxmin.py``; docs/diagnose.md).

>>> import numpy as np
>>> from fabscope.sparse import csr_matrix
>>> # two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2)
>>> A = csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]]))
>>> maxmin(A, np.array([10.0, 2.0])).tolist()
[8.0, 2.0]
>>> m = prepare(A)                       # converted once, solved under several capacities
>>> maxmin(m, np.array([10.0, 20.0])).tolist(), maxmin_reference(m, np.array([10.0, 20.0])).tolist()
([5.0, 5.0], [5.0, 5.0])
"""

from __future__ import annotations

import ctypes
import os
import threading
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from fabscope.cbuild import load_library
from fabscope.csr import gather as _gather
from fabscope.sparse import csc_matrix, csr_matrix

__all__ = ["REL_TOL", "MaxMinMatrix", "prepare", "maxmin", "maxmin_reference", "available", "congestion_count"]

#: a resource counts as full when less than this share of its capacity is left
REL_TOL = 1e-9

SOURCE = os.path.join(os.path.dirname(__file__), "maxmin.c")


@lru_cache(maxsize=1)
def _load() -> tuple[ctypes.CDLL | None, str]:
    dll, why = load_library(SOURCE, "maxmin")
    if dll is not None:
        dll.mm_solve.restype = ctypes.c_int64
        dll.mm_solve.argtypes = [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 9 + [ctypes.c_int64, ctypes.c_double] + \
            [ctypes.c_void_p] * 2
        dll.mm_work_bytes.restype = ctypes.c_int64
        dll.mm_work_bytes.argtypes = [ctypes.c_int64] * 2
    return dll, why


def available() -> bool:
    """True where ``maxmin.c`` builds (or was built) and loads: :func:`maxmin` then runs it."""
    return _load()[0] is not None


class MaxMinMatrix:
    """A resource-by-flow matrix in the forms both solvers read, converted once: the CSR (rows'
    flows), the CSC (flows' rows and weights) and each row's weight sum.  It also keeps the C
    solver's scratch between solves (about 55 bytes a resource), lent to one solve at a time.

    >>> m = prepare(csr_matrix(np.array([[1.0, 0.5], [0.0, 2.0]])))
    >>> m.shape, m.live_w.tolist(), m.C.indices.tolist()
    ((2, 2), [1.5, 2.0], [0, 0, 1])
    """

    def __init__(self, A: Any) -> None:
        # a float CSR is kept as it is (not copied): the solvers only read it
        is_f64 = isinstance(A, csr_matrix) and A.data.dtype == np.float64
        self.A = A if is_f64 else csr_matrix(A, dtype=np.float64)
        self.shape = self.A.shape
        self.C: csc_matrix = self.A.tocsc()
        self.live_w = np.asarray(self.A.sum(axis=1)).ravel()     # numpy's summation order: the C code takes it
        self.live_w.flags.writeable = False
        self._work: np.ndarray | None = None
        self._work_lock = threading.Lock()

    @cached_property
    def arrays(self) -> tuple[np.ndarray, ...] | None:
        """What ``mm_solve`` reads: rptr (int64), rind (int32), cptr (int64), cind (int32), cdat, live_w;
        None for a matrix of 2**31 rows or flows or more (the C code's indices are 32-bit)."""
        if max(self.shape) >= 2**31:
            return None
        i64 = lambda a: np.ascontiguousarray(a, np.int64)  # noqa: E731
        i32 = lambda a: np.ascontiguousarray(a, np.int32)  # noqa: E731   (no copy where already int32)
        return (i64(self.A.indptr), i32(self.A.indices), i64(self.C.indptr), i32(self.C.indices),
                np.ascontiguousarray(self.C.data, np.float64), np.ascontiguousarray(self.live_w))


def prepare(A: Any) -> MaxMinMatrix:
    """``A`` converted once for :func:`maxmin` (a :class:`MaxMinMatrix` is returned as it is)."""
    return A if isinstance(A, MaxMinMatrix) else MaxMinMatrix(A)


def _inputs(m: MaxMinMatrix, capacity: Any, flow_cap: Any) -> tuple[np.ndarray, np.ndarray]:
    n_res, n_flows = m.shape
    capacity = np.ascontiguousarray(capacity, dtype=np.float64)
    cap = np.full(n_flows, np.inf) if flow_cap is None else np.ascontiguousarray(flow_cap, dtype=np.float64)
    if capacity.shape != (n_res,):
        raise ValueError(f"capacity has shape {capacity.shape}; the matrix has {n_res} resources")
    if cap.shape != (n_flows,):
        raise ValueError(f"flow_cap has shape {cap.shape}; the matrix has {n_flows} flows")
    return capacity, cap


def maxmin(A: csr_matrix | MaxMinMatrix, capacity: np.ndarray, flow_cap: np.ndarray | None = None,
           compiled: bool = True) -> np.ndarray:
    """Max-min fair rates of the flows (columns of ``A``) over resources (rows).

    ``flow_cap`` bounds each flow's rate (``inf`` for none).  Flows that
    cross no resource and have no cap get ``inf``.  Runs ``maxmin.c`` where it
    loads and ``compiled`` is true, else :func:`maxmin_reference`; the rates are
    the same bits.  A capacity that is NaN goes to the reference (the C code's
    tree needs an order).
    """
    m = prepare(A)
    capacity, cap = _inputs(m, capacity, flow_cap)
    dll = _load()[0] if compiled else None
    if dll is None or m.arrays is None:
        return maxmin_reference(m, capacity, cap)
    rptr, rind, cptr, cind, cdat, live_w = m.arrays
    capped = np.flatnonzero(np.isfinite(cap))
    capped = np.ascontiguousarray(capped[np.argsort(cap[capped], kind="stable")], np.int64)
    rate = np.empty(m.shape[1])
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    mine = m._work_lock.acquire(blocking=False)      # another thread solving: it allocates its own
    try:
        if mine and m._work is None:
            m._work = np.empty(dll.mm_work_bytes(*m.shape), np.uint8)
        err = dll.mm_solve(m.shape[0], m.shape[1], ptr(rptr), ptr(rind), ptr(cptr), ptr(cind), ptr(cdat),
                           ptr(live_w), ptr(capacity), ptr(cap), ptr(capped), len(capped), 1 + REL_TOL, ptr(rate),
                           ptr(m._work) if mine else None)
    finally:
        if mine:
            m._work_lock.release()
    if err:                       # -1: out of memory in C (numpy may still manage); -2: a capacity is NaN
        return maxmin_reference(m, capacity, cap)
    return rate


def maxmin_reference(A: csr_matrix | MaxMinMatrix, capacity: np.ndarray,
                     flow_cap: np.ndarray | None = None) -> np.ndarray:
    """:func:`maxmin` in numpy: the reference ``maxmin.c`` is held to, and the path where no compiler is found.

    All unfrozen flows share one rate, the water level, so a resource fills
    when the level reaches ``(capacity - load of its frozen flows) / (weight of
    its live flows)``.  That level changes only for the resources a freezing
    flow crosses, so each round touches just those (and takes one minimum).
    """
    m = prepare(A)
    capacity, cap = _inputs(m, capacity, flow_cap)
    A, C = m.A, m.C
    n_res, n_flows = A.shape
    rate = np.zeros(n_flows)
    touches = np.diff(C.indptr) > 0
    free = ~touches & ~np.isfinite(cap)
    rate[free] = np.inf
    active = ~free
    live_w = m.live_w.copy()                         # weight of live flows on each resource
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
