"""Sparse matrices in numpy (their entries ordered in C from :data:`COMPILED_FROM` entries, where a
compiler is found): the part of ``scipy.sparse`` fabscope's commands use on every run.

Importing ``scipy.sparse`` costs a process more CPU than numpy itself (it loads numpy's testing,
f2py and masked-array modules: docs/startup.md), so a small ``simulate``, ``compare`` or
``diagnose`` would spend most of its time there.  :class:`csr_matrix`, :class:`csc_matrix` and
:class:`coo_matrix` take the same arguments as scipy's and hold the same arrays (canonical: indices
sorted in each row or column, duplicates summed, as scipy builds them from ``(data, (row, col))``).
Products with dense arrays sum in the order scipy does, so the figures are the same bits.
Transposes, conversions, selecting whole rows or columns and sums along an axis are numpy too; any
other attribute or operation converts the matrix to scipy's (imported then) and answers from it,
so code written for scipy runs unchanged, only slower to start.

>>> import numpy as np
>>> m = csr_matrix((np.array([1.0, 2.0, 3.0]), (np.array([0, 1, 1]), np.array([2, 0, 0]))), shape=(2, 3))
>>> m.toarray().tolist()                                  # (1, 0) given twice: summed
[[0.0, 0.0, 1.0], [5.0, 0.0, 0.0]]
>>> (m @ np.ones(3)).tolist(), (m.T @ np.array([1.0, 2.0])).tolist()
([1.0, 5.0], [10.0, 0.0, 1.0])
>>> m.sum(axis=0).A1.tolist(), m[:, [2]].toarray().ravel().tolist()
([5.0, 0.0, 1.0], [1.0, 0.0])
>>> connected_components(coo_matrix((np.ones(2), ([3, 1], [0, 4])), shape=(5, 5)), directed=False)[1].tolist()
[0, 1, 2, 0, 1]
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

import numpy as np

from fabscope.arrays import unique
from fabscope.csr import gather


def _segments_sum(seg: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per segment id in ``0..n-1``, the sum of its values in the order given (as scipy's loops add)."""
    if values.dtype.kind == "f" and values.dtype.itemsize == 8:
        return np.bincount(seg, weights=values, minlength=n)
    out = np.zeros(n, dtype=values.dtype)
    np.add.at(out, seg, values)
    return out


def _sum_dtype(data: np.ndarray) -> np.ndarray:
    """``data`` in the type scipy sums it in (small integers widened, as numpy does)."""
    if data.dtype.kind in "bi" and data.dtype.itemsize < 8:
        return data.astype(np.int64)
    if data.dtype.kind == "u" and data.dtype.itemsize < 8:
        return data.astype(np.uint64)
    return data


#: entries from which :func:`_line_order` takes the compiled counting sort (``lineorder.c``): below it
#: numpy's sort costs a few milliseconds, and a small command builds no library for it
COMPILED_FROM = 1 << 16


@lru_cache(maxsize=1)
def _load() -> tuple[Any, str]:
    import ctypes

    from fabscope.cbuild import load_library

    dll, why = load_library(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lineorder.c"), "lineorder")
    if dll is not None:
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        dll.lo_order.restype = i64
        dll.lo_order.argtypes = [i64, p, p, i64, p, p, p]
    return dll, why


def line_order_compiled(major: np.ndarray, minor: np.ndarray, n_major: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """:func:`_line_order` in C (``lineorder.c``): a stable counting sort by major line, then each line
    put in minor order where it is not already (none where the minor lines come in order, as in a
    canonical matrix transposed).  ``(order, minor in that order, where each major line ends, how many
    entries repeat the one before)``; None where no compiler builds it, or where the major lines
    outnumber the entries eightfold (their counts would cost more than the sort).

    >>> major, minor = np.array([2, 0, 2, 0, 1]), np.array([1, 3, 0, 3, 2])
    >>> out = line_order_compiled(major, minor, 3)
    >>> out is None or (out[0].tolist(), out[1].tolist(), out[2].tolist(), out[3]) == (
    ...     np.lexsort((minor, major)).tolist(), [3, 3, 2, 0, 1], [2, 3, 5], 1)
    True
    """
    if n_major > 8 * len(major) + 1024:           # a count per line would outweigh the entries
        return None
    dll = _load()[0]
    if dll is None:
        return None
    major, minor = np.ascontiguousarray(major, np.int64), np.ascontiguousarray(minor, np.int64)
    if len(major) and (major.min() < 0 or major.max() >= n_major):     # the C code indexes its counts by them
        raise ValueError(f"a major line outside 0..{n_major - 1}")
    out, minor_out = np.empty(len(major), np.int64), np.empty(len(major), np.int64)
    count = np.empty(n_major + 1, np.int64)
    ptr = lambda a: a.ctypes.data  # noqa: E731
    dups = dll.lo_order(len(major), ptr(major), ptr(minor), n_major, ptr(out), ptr(count), ptr(minor_out))
    return None if dups < 0 else (out, minor_out, count[:n_major], int(dups))


def _line_order(major: np.ndarray, minor: np.ndarray, n_major: int, n_minor: int, compiled: bool = True
                ) -> np.ndarray:
    """``np.lexsort((minor, major))``: entries by major line, then minor, then input order.  From
    :data:`COMPILED_FROM` entries (and ``compiled``), :func:`line_order_compiled`; else (and without a
    compiler), where the three fit in 63 bits they are packed into one integer and sorted as values,
    five times faster than lexsort on a million entries (the same order: the input position breaks
    every tie).

    >>> major, minor = np.array([2, 0, 2, 0, 1]), np.array([1, 3, 0, 3, 2])
    >>> _line_order(major, minor, 3, 4).tolist(), np.lexsort((minor, major)).tolist()
    ([1, 3, 4, 2, 0], [1, 3, 4, 2, 0])
    """
    n = len(major)
    if compiled and n >= COMPILED_FROM:
        out = line_order_compiled(major, minor, n_major)
        if out is not None:
            return out[0]
    b_pos, b_min = max(int(n - 1).bit_length(), 1), max(int(n_minor - 1).bit_length(), 1)
    if n < 2 or b_pos + b_min + max(int(n_major - 1).bit_length(), 1) > 63:
        return np.lexsort((minor, major))
    key = (major.astype(np.int64) << (b_min + b_pos)) | (minor.astype(np.int64) << b_pos)
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    return key & ((1 << b_pos) - 1)


def _index_array(key: Any, n: int) -> np.ndarray | None:
    """Positions a 1-D key (slice, list, int array, bool mask) selects of ``n``; None for a key it does not handle."""
    if isinstance(key, slice):
        return np.arange(n)[key]
    if isinstance(key, (int, np.integer)) or key is Ellipsis:
        return None
    k = np.asarray(key)
    if k.ndim != 1:
        return None
    if k.dtype == bool:
        return np.flatnonzero(k) if len(k) == n else None
    if k.dtype.kind not in "iu":
        return None if len(k) else np.zeros(0, np.int64)
    k = k.astype(np.int64)
    if len(k) and (k.min() < -n or k.max() >= n):
        raise IndexError(f"index out of range for an axis of {n}")
    return np.where(k < 0, k + n, k)


_OWN = {"data", "indices", "indptr", "row", "col", "shape"}


class _Sparse:
    """What every format shares: the scipy fallback and the operators built on it."""

    shape: tuple[int, int]
    format = ""
    __array_priority__ = 10.1                       # ndarray @ matrix defers to __rmatmul__, as for scipy's

    def _scipy(self) -> Any:
        import scipy.sparse as sp

        c = self.tocoo()
        return getattr(sp, self.format + "_matrix")(
            sp.coo_matrix((c.data, (c.row, c.col)), shape=self.shape))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in _OWN:       # not yet set: never convert to scipy for it
            raise AttributeError(name)
        return getattr(self._scipy(), name)

    def _binary(self, op: str, other: Any) -> Any:
        other = other._scipy() if isinstance(other, _Sparse) else other
        return getattr(self._scipy(), op)(other)

    def __ne__(self, other: Any) -> Any:          # type: ignore[override]
        """Against a sparse matrix of the same shape: True where the two differ (a missing entry is 0), as scipy."""
        if not (isinstance(other, _Sparse) and other.shape == self.shape):
            return self._binary("__ne__", other)
        a, b = csr_matrix(self.tocoo()), csr_matrix(other.tocoo())      # canonical: sorted, duplicates summed
        ka = a._major_ids() * self.shape[1] + a.indices
        kb = b._major_ids() * self.shape[1] + b.indices
        keys = unique(np.concatenate((ka, kb)))       # np.union1d without numpy.ma
        va, vb = np.zeros(len(keys), a.data.dtype), np.zeros(len(keys), b.data.dtype)
        va[np.searchsorted(keys, ka)] = a.data
        vb[np.searchsorted(keys, kb)] = b.data
        k = keys[va != vb]
        out = csr_matrix((np.ones(len(k), bool), (k // self.shape[1], k % self.shape[1])), shape=self.shape)
        return out if self.format != "csc" else out.tocsc()

    def __eq__(self, other: Any) -> Any:          # type: ignore[override]
        return self._binary("__eq__", other)

    __hash__ = None                                # type: ignore[assignment]  # as scipy's

    def __add__(self, other: Any) -> Any:
        return self._binary("__add__", other)

    def __sub__(self, other: Any) -> Any:
        return self._binary("__sub__", other)

    def __mul__(self, other: Any) -> Any:
        return self._binary("__mul__", other)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nnz(self) -> int:
        return len(self.data)

    def toarray(self) -> np.ndarray:
        c = self.tocoo()
        out = np.zeros(self.shape, dtype=c.data.dtype)
        np.add.at(out, (c.row, c.col), c.data)
        return out

    def sum(self, axis: int | None = None) -> Any:
        """As scipy's: a number, or a 1 x n (axis 0) or n x 1 (axis 1) ``np.matrix``, summed in scipy's order."""
        data = _sum_dtype(self.data)
        if axis is None:
            return data.sum()
        ax = {0: 0, -2: 0, 1: 1, -1: 1}[axis]
        n = self.shape[1 - ax]
        if isinstance(self, _Compressed) and ax != self._axis:     # along the compressed lines
            out = np.zeros(n, dtype=data.dtype)
            nz = np.flatnonzero(np.diff(self.indptr))
            if len(nz):
                out[nz] = np.add.reduceat(data, self.indptr[nz].astype(np.intp))
        else:
            c = self.tocoo()
            out = _segments_sum(c.col if ax == 0 else c.row, data, n)
        return out.reshape((1, -1) if ax == 0 else (-1, 1)).view(np.matrix)     # as scipy: no warning


class coo_matrix(_Sparse):
    """Entries as (data, row, col), in the order given (duplicates kept, as scipy's)."""

    format = "coo"

    def __init__(self, arg: Any, shape: tuple[int, int] | None = None, dtype: Any = None) -> None:
        if isinstance(arg, _Sparse):
            c = arg.tocoo()
            data, row, col, shape = c.data, c.row, c.col, arg.shape
        elif isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[1], tuple):
            data, (row, col) = np.asarray(arg[0]), arg[1]
            row, col = np.asarray(row, dtype=np.int64).ravel(), np.asarray(col, dtype=np.int64).ravel()
            data = np.broadcast_to(data, row.shape).copy() if data.ndim == 0 else data.ravel()
            if shape is None:
                shape = (int(row.max()) + 1 if len(row) else 0, int(col.max()) + 1 if len(col) else 0)
        elif hasattr(arg, "tocoo"):                  # a scipy matrix
            c = arg.tocoo()
            data, row, col, shape = np.asarray(c.data), c.row.astype(np.int64), c.col.astype(np.int64), c.shape
        else:
            a = np.atleast_2d(np.asarray(arg))
            row, col = np.nonzero(a)
            data, shape = a[row, col], a.shape
        if dtype is not None:
            data = data.astype(dtype)
        self.data, self.row, self.col = data, row, col
        self.shape = (int(shape[0]), int(shape[1]))
        if len(row) and (row.min() < 0 or col.min() < 0 or row.max() >= self.shape[0] or col.max() >= self.shape[1]):
            raise ValueError("an entry's row or column is outside the shape")

    def tocoo(self) -> coo_matrix:
        return self

    def tocsr(self) -> csr_matrix:
        return csr_matrix(self)

    def tocsc(self) -> csc_matrix:
        return csc_matrix(self)

    @property
    def T(self) -> coo_matrix:
        return coo_matrix((self.data, (self.col, self.row)), shape=(self.shape[1], self.shape[0]))


class _Compressed(_Sparse):
    """Rows (csr) or columns (csc) compressed: entries of major line ``i`` at ``indptr[i]:indptr[i+1]``."""

    _axis = 0                                     # the axis that is compressed: 0 rows, 1 columns

    def __init__(self, arg: Any, shape: tuple[int, int] | None = None, dtype: Any = None) -> None:
        if isinstance(arg, _Compressed) and arg._axis == self._axis:
            data, indices, indptr, shape = arg.data, arg.indices, arg.indptr, arg.shape
        elif isinstance(arg, tuple) and len(arg) == 3:
            data, indices, indptr = (np.asarray(x) for x in arg)
            if shape is None:
                shape = self._oriented(len(indptr) - 1, int(indices.max()) + 1 if len(indices) else 0)
        else:
            c = arg.tocoo() if isinstance(arg, _Sparse) else coo_matrix(arg, shape=shape)
            data, indices, indptr = self._compress(c)
            shape = c.shape
        self.data = data if dtype is None else data.astype(dtype)
        self.indices, self.indptr = indices, indptr
        self.shape = (int(shape[0]), int(shape[1]))

    def _oriented(self, major: int, minor: int) -> tuple[int, int]:
        return (major, minor) if self._axis == 0 else (minor, major)

    def _compress(self, c: coo_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Canonical arrays of ``c``: sorted by major then minor line, duplicates summed (input order)."""
        major, minor = (c.row, c.col) if self._axis == 0 else (c.col, c.row)
        n_major = c.shape[self._axis]
        fast = line_order_compiled(major, minor, n_major) if len(major) >= COMPILED_FROM else None
        if fast is not None and not fast[3]:            # no duplicate to sum: the order gives every array
            order, minor, ends, _ = fast
            indptr = np.zeros(n_major + 1, dtype=np.int32 if len(major) < 2**31 else np.int64)
            indptr[1:] = ends
            return c.data[order], minor.astype(indptr.dtype), indptr
        order = fast[0] if fast is not None else _line_order(major, minor, n_major, c.shape[1 - self._axis],
                                                             compiled=False)       # asked already
        major, minor, data = major[order], minor[order], c.data[order]
        if len(major) > 1:
            new = np.r_[True, (major[1:] != major[:-1]) | (minor[1:] != minor[:-1])]
            if not new.all():
                seg = np.cumsum(new) - 1
                data = _segments_sum(seg, data, int(seg[-1]) + 1)
                major, minor = major[new], minor[new]
        indptr = np.zeros(n_major + 1, dtype=np.int32 if len(major) < 2**31 else np.int64)
        np.cumsum(np.bincount(major, minlength=n_major), out=indptr[1:])
        return data, minor.astype(indptr.dtype), indptr

    def _major_ids(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.indptr) - 1), np.diff(self.indptr))

    def tocoo(self) -> coo_matrix:
        major, minor = self._major_ids(), self.indices.astype(np.int64)
        row, col = (major, minor) if self._axis == 0 else (minor, major)
        return coo_matrix((self.data, (row, col)), shape=self.shape)

    def tocsr(self) -> csr_matrix:
        return self if isinstance(self, csr_matrix) else csr_matrix(self)

    def tocsc(self) -> csc_matrix:
        return self if isinstance(self, csc_matrix) else csc_matrix(self)

    @property
    def T(self) -> _Compressed:
        other = csc_matrix if self._axis == 0 else csr_matrix
        return other((self.data, self.indices, self.indptr), shape=(self.shape[1], self.shape[0]))

    def transpose(self) -> _Compressed:
        return self.T

    def sum_duplicates(self) -> None:
        self.data, self.indices, self.indptr = self._compress(self.tocoo())

    def __matmul__(self, x: Any) -> Any:
        if isinstance(x, _Sparse) or hasattr(x, "tocoo") or np.ndim(x) not in (1, 2):
            return self._binary("__matmul__", x)
        x = np.asarray(x)
        if x.shape[0] != self.shape[1]:
            raise ValueError(f"dimension mismatch: {self.shape} @ {x.shape}")
        if x.ndim == 2:
            return np.stack([self @ x[:, j] for j in range(x.shape[1])], axis=1).reshape(self.shape[0], x.shape[1])
        major = self._major_ids()
        if self._axis == 0:          # y[i] = sum over row i of data * x[col]
            return _segments_sum(major, self.data * x[self.indices], self.shape[0])
        return _segments_sum(self.indices, self.data * x[major], self.shape[0])

    def __rmatmul__(self, x: Any) -> Any:
        if isinstance(x, _Sparse) or hasattr(x, "tocoo") or np.ndim(x) not in (1, 2):
            return self._binary("__rmatmul__", x)
        return (self.T @ np.asarray(x).T).T

    def __getitem__(self, key: Any) -> Any:
        """Whole rows or columns by slice, list or mask (``m[rows]``, ``m[:, cols]``); anything else as scipy."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (key, slice(None))
        r, c = _index_array(rows, self.shape[0]), _index_array(cols, self.shape[1])
        if r is None or c is None:
            return self._scipy()[key]
        major, minor = (r, c) if self._axis == 0 else (c, r)
        n_minor = self.shape[1 - self._axis]
        pos = gather(self.indptr.astype(np.int64), major)
        counts = (self.indptr[major + 1] - self.indptr[major]).astype(np.int64)
        mids = np.repeat(np.arange(len(major)), counts)
        old_minor = self.indices[pos].astype(np.int64)
        if len(minor) != n_minor or np.any(minor != np.arange(n_minor)):
            if len(unique(minor)) != len(minor):
                return self._scipy()[key]
            new_of = np.full(n_minor, -1, np.int64)
            new_of[minor] = np.arange(len(minor))
            keep = new_of[old_minor] >= 0
            pos, mids, new_minor = pos[keep], mids[keep], new_of[old_minor[keep]]
        else:
            new_minor = old_minor
        # the kept entries in their stored order (as scipy leaves them: a reordered minor axis stays unsorted)
        indptr = np.zeros(len(major) + 1, dtype=self.indptr.dtype)
        np.cumsum(np.bincount(mids, minlength=len(major)), out=indptr[1:])
        return type(self)((self.data[pos], new_minor.astype(self.indices.dtype), indptr), shape=(len(r), len(c)))


class csr_matrix(_Compressed):
    """Compressed sparse rows (scipy's ``csr_matrix``)."""

    format = "csr"
    _axis = 0


class csc_matrix(_Compressed):
    """Compressed sparse columns (scipy's ``csc_matrix``)."""

    format = "csc"
    _axis = 1


def hstack(blocks: list[Any], format: str | None = None) -> _Sparse:
    """Blocks side by side (scipy's ``hstack``); as csr unless ``format`` says csc or coo."""
    cs = [b.tocoo() if isinstance(b, _Sparse) else coo_matrix(b) for b in blocks]
    if len({c.shape[0] for c in cs}) > 1:
        raise ValueError("blocks of hstack differ in their number of rows")
    offs = np.cumsum([0] + [c.shape[1] for c in cs])
    c = coo_matrix((np.concatenate([c.data for c in cs]),
                    (np.concatenate([c.row for c in cs]), np.concatenate([c.col + o for c, o in zip(cs, offs)]))),
                   shape=(cs[0].shape[0], int(offs[-1])))
    return {"csc": csc_matrix, "coo": coo_matrix}.get(format or "csr", csr_matrix)(c)


def connected_components(graph: Any, directed: bool = False) -> tuple[int, np.ndarray]:
    """(count, label of each vertex) of an undirected graph given as a square sparse matrix; labels
    numbered in order of each component's lowest vertex, as scipy's ``csgraph`` numbers them."""
    if directed:
        raise ValueError("only undirected components are computed here")
    c = graph.tocoo() if isinstance(graph, _Sparse) else coo_matrix(graph)
    n = c.shape[0]
    u, v = c.row, c.col
    parent = np.arange(n)
    while True:                  # hook each edge's higher root under its lower one, then flatten
        pu, pv = parent[u], parent[v]
        differ = pu != pv
        if not differ.any():
            break
        np.minimum.at(parent, np.maximum(pu, pv)[differ], np.minimum(pu, pv)[differ])
        while True:
            gp = parent[parent]
            if np.array_equal(gp, parent):
                break
            parent = gp
    roots, labels = np.unique(parent, return_inverse=True)
    return len(roots), labels
