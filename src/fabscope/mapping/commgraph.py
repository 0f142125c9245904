"""Communication graphs: who sends how many bytes to whom.

A :class:`CommGraph` holds directed edges ``src -> dst`` with the bytes and
messages sent, aggregated (one entry per ordered pair, no self edges).
Generators build the graphs of common codes; :func:`fabscope.mapping.commspec.load_comm`
reads a ``--comm`` spec or a file (:mod:`fabscope.traffic.commfiles`).

>>> g = stencil((4, 4), halo=100)            # 2D periodic halo exchange
>>> g.n, g.n_edges, g.total_bytes
(16, 64, 6400.0)
>>> g.grid
(4, 4)
>>> ring(4, size=8).n_edges, pencils(2, 3, size=1).n_edges
(8, 18)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from math import prod
from typing import Any, Sequence

import numpy as np
from scipy.sparse import csr_matrix

from fabscope.errors import TrafficError

__all__ = ["CommGraph", "stencil", "pencils", "ring", "tree", "random_sparse", "GENERATORS"]

DEFAULT_SIZE = 1 << 20  # bytes per message when a spec names none


@dataclass(frozen=True, eq=False)
class CommGraph:
    """Directed, aggregated communication: ``bytes[i]`` from ``src[i]`` to ``dst[i]``.

    ``grid``/``periodic`` record the application's process grid when the graph
    comes from one (stencils, pencils): torus mappings fold that grid.
    """

    name: str
    n: int
    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    msgs: np.ndarray
    grid: tuple[int, ...] | None = None
    periodic: tuple[bool, ...] | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_coo(cls, name: str, n: int, src: Any, dst: Any, nbytes: Any, msgs: Any = None,
                 **kw: Any) -> "CommGraph":
        """Aggregate repeated ``(src, dst)`` pairs and drop self edges.

        >>> g = CommGraph.from_coo("x", 3, [0, 0, 1, 2], [1, 1, 1, 0], [5, 7, 9, 1])
        >>> g.src.tolist(), g.dst.tolist(), g.bytes.tolist(), g.msgs.tolist()
        ([0, 2], [1, 0], [12.0, 1.0], [2.0, 1.0])
        """
        n = int(n)
        if n <= 0:
            raise TrafficError(f"communication graph {name!r} has {n} ranks")
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        b = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), src.shape).ravel()
        m = np.ones(len(src)) if msgs is None else np.broadcast_to(np.asarray(msgs, dtype=np.float64), src.shape).ravel()
        if len(dst) != len(src):
            raise TrafficError(f"communication graph {name!r}: {len(src)} sources for {len(dst)} destinations")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise TrafficError(f"communication graph {name!r} names rank {int(max(src.max(), dst.max()))}; it has {n} ranks")
        if np.any(b < 0) or np.any(~np.isfinite(b)):
            raise TrafficError(f"communication graph {name!r} has a negative or non-finite byte count")
        keep = (src != dst) & ((b > 0) | (m > 0))
        key = src[keep] * n + dst[keep]
        uk, inv = np.unique(key, return_inverse=True)
        agg_b = np.bincount(inv, weights=b[keep], minlength=len(uk))
        agg_m = np.bincount(inv, weights=m[keep], minlength=len(uk))
        return cls(name, n, (uk // n).astype(np.int64), (uk % n).astype(np.int64), agg_b, agg_m, **kw)

    @property
    def n_edges(self) -> int:
        return len(self.src)

    @property
    def total_bytes(self) -> float:
        return float(self.bytes.sum())

    @cached_property
    def undirected(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(u, v, w)`` with ``u < v`` and ``w`` the bytes both ways."""
        u = np.minimum(self.src, self.dst)
        v = np.maximum(self.src, self.dst)
        key = u * self.n + v
        uk, inv = np.unique(key, return_inverse=True)
        return uk // self.n, uk % self.n, np.bincount(inv, weights=self.bytes, minlength=len(uk))

    @cached_property
    def adjacency(self) -> csr_matrix:
        """Symmetric CSR of bytes both ways (the graph partitioners take)."""
        u, v, w = self.undirected
        return csr_matrix((np.r_[w, w], (np.r_[u, v], np.r_[v, u])), shape=(self.n, self.n))

    def traffic(self):
        """The graph as :class:`fabscope.traffic.flows.Traffic` (one flow per edge)."""
        from fabscope.traffic.flows import Traffic

        return Traffic.build(self.name, self.src, self.dst, self.bytes, **self.params)

    def without(self, ranks: Sequence[int]) -> tuple["CommGraph", np.ndarray]:
        """The graph of the other ranks, renumbered; and old rank of each new one.

        >>> g, old = ring(4).without([1])
        >>> g.n, old.tolist()
        (3, [0, 2, 3])
        """
        drop = np.zeros(self.n, bool)
        drop[np.asarray(ranks, dtype=np.int64)] = True
        old = np.flatnonzero(~drop)
        new = np.full(self.n, -1, np.int64)
        new[old] = np.arange(len(old))
        k = ~drop[self.src] & ~drop[self.dst]
        g = CommGraph.from_coo(self.name, len(old), new[self.src[k]], new[self.dst[k]], self.bytes[k],
                               self.msgs[k], params=dict(self.params))
        return g, old

    def __repr__(self) -> str:
        return f"CommGraph({self.name!r}, ranks={self.n}, edges={self.n_edges}, bytes={self.total_bytes:.3g})"


def _per_axis(value: bool | Sequence[bool], nd: int, what: str) -> tuple[bool, ...]:
    if isinstance(value, (bool, int, np.bool_)):
        return (bool(value),) * nd
    out = tuple(bool(v) for v in value)
    if len(out) != nd:
        raise TrafficError(f"{what} has {len(out)} entries for {nd} dimensions")
    return out


def stencil(dims: Sequence[int], halo: float = DEFAULT_SIZE, periodic: bool | Sequence[bool] = True,
            ) -> CommGraph:
    """Halo exchange on a 1D/2D/3D grid: every rank sends ``halo`` bytes to each face neighbour.

    Ranks are numbered in C order (the last dimension varies fastest), as
    ``MPI_Cart_create`` numbers them.  ``periodic`` is one bool or one per axis.

    >>> g = stencil((3, 3, 3), halo=1, periodic=False)     # 2 * 3 * (2 * 3 * 3) edges
    >>> g.n_edges
    108
    """
    dims = tuple(int(d) for d in dims)
    if not dims or min(dims) < 1:
        raise TrafficError(f"stencil dimensions must be positive, got {'x'.join(map(str, dims))}")
    per = _per_axis(periodic, len(dims), "periodic")
    n = prod(dims)
    idx = np.arange(n, dtype=np.int64)
    strides = np.array([prod(dims[i + 1:]) for i in range(len(dims))], dtype=np.int64)
    src, dst = [], []
    for ax, k in enumerate(dims):
        if k == 1:
            continue
        c = (idx // strides[ax]) % k
        for step in (1, -1):
            nc = c + step
            ok = (nc >= 0) & (nc < k)
            if per[ax]:
                ok[:] = True
                nc %= k
            src.append(idx[ok])
            dst.append(idx[ok] + (nc[ok] - c[ok]) * strides[ax])
    s = np.concatenate(src) if src else np.zeros(0, np.int64)
    d = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    return CommGraph.from_coo(f"stencil{len(dims)}d:{'x'.join(map(str, dims))}", n, s, d, float(halo),
                              grid=dims, periodic=per,
                              params={"pattern": "stencil", "dims": list(dims), "periodic": list(per), "halo": halo})


def pencils(rows: int, cols: int, size: float = DEFAULT_SIZE) -> CommGraph:
    """FFT pencils: all-to-all within each row and each column of a ``rows x cols`` grid.

    Rank ``r`` sits at row ``r // cols``, column ``r % cols``; it sends ``size``
    bytes to every other rank of its row and of its column (one transpose each).
    """
    if rows < 1 or cols < 1:
        raise TrafficError(f"pencil grid must be positive, got {rows}x{cols}")
    n = rows * cols
    r = np.arange(n, dtype=np.int64)
    row, col = r // cols, r % cols
    # same row: every other column
    s1 = np.repeat(r, cols)
    d1 = np.repeat(row * cols, cols) + np.tile(np.arange(cols), n)
    s2 = np.repeat(r, rows)
    d2 = np.tile(np.arange(rows), n) * cols + np.repeat(col, rows)
    return CommGraph.from_coo(f"pencils:{rows}x{cols}", n, np.r_[s1, s2], np.r_[d1, d2], float(size),
                              grid=(rows, cols), periodic=(False, False),
                              params={"pattern": "pencils", "rows": rows, "cols": cols, "size": size})


def ring(n: int, size: float = DEFAULT_SIZE, bidirectional: bool = True) -> CommGraph:
    """Rank ``r`` sends to ``r + 1`` (and ``r - 1``), wrapping around."""
    if n < 1:
        raise TrafficError(f"a ring needs at least one rank, got {n}")
    r = np.arange(n, dtype=np.int64)
    s, d = [r], [(r + 1) % n]
    if bidirectional:
        s.append(r)
        d.append((r - 1) % n)
    return CommGraph.from_coo(f"ring:{n}", n, np.concatenate(s), np.concatenate(d), float(size),
                              grid=(n,), periodic=(True,), params={"pattern": "ring", "n": n, "size": size})


def tree(n: int, arity: int = 2, size: float = DEFAULT_SIZE) -> CommGraph:
    """A reduction/broadcast tree: rank ``r > 0`` exchanges ``size`` with ``(r - 1) // arity``.

    >>> tree(7, arity=2, size=1).n_edges      # 6 child-parent links, both ways
    12
    """
    if n < 1 or arity < 1:
        raise TrafficError(f"a tree needs n >= 1 and arity >= 1, got n={n} arity={arity}")
    c = np.arange(1, n, dtype=np.int64)
    p = (c - 1) // arity
    return CommGraph.from_coo(f"tree:{n}", n, np.r_[c, p], np.r_[p, c], float(size),
                              params={"pattern": "tree", "n": n, "arity": arity, "size": size})


def random_sparse(n: int, degree: int = 6, size: float = DEFAULT_SIZE, seed: int = 0) -> CommGraph:
    """Every rank sends ``size`` bytes to ``degree`` random other ranks (seeded).

    >>> g = random_sparse(100, degree=4, size=1, seed=3)
    >>> g.n_edges <= 400, g.n
    (True, 100)
    """
    if n < 2 or degree < 1:
        raise TrafficError(f"random graph needs n >= 2 and degree >= 1, got n={n} degree={degree}")
    rng = np.random.default_rng(seed)
    s = np.repeat(np.arange(n, dtype=np.int64), degree)
    d = (s + rng.integers(1, n, len(s))) % n
    return CommGraph.from_coo(f"random:{n}", n, s, d, float(size),
                              params={"pattern": "random", "n": n, "degree": degree, "size": size, "seed": seed})


def _dims(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        raise TrafficError(f"dimensions {text!r} do not parse; write e.g. 16x16x32") from None
    if not out or min(out) < 1:
        raise TrafficError(f"dimensions {text!r} must be positive")
    return out


def _gen_stencil(nd: int | None):
    def make(pos: str, kw: dict[str, str]) -> CommGraph:
        dims = _dims(pos)
        if nd is not None and len(dims) != nd:
            raise TrafficError(f"stencil{nd}d takes {nd} dimensions, got {pos!r}")
        per = kw.pop("periodic", "1")
        periodic = [p not in ("0", "false", "no") for p in per.split("x")]
        from fabscope.units import parse_size

        halo = parse_size(kw.pop("halo", kw.pop("size", str(DEFAULT_SIZE))))
        return stencil(dims, halo, periodic if len(periodic) > 1 else periodic[0])
    return make


def _gen_pencils(pos: str, kw: dict[str, str]) -> CommGraph:
    from fabscope.units import parse_size

    dims = _dims(pos)
    if len(dims) != 2:
        raise TrafficError(f"pencils take a 2D process grid ROWSxCOLS, got {pos!r}")
    return pencils(dims[0], dims[1], parse_size(kw.pop("size", str(DEFAULT_SIZE))))


def _gen_n(fn, *ints: str):
    def make(pos: str, kw: dict[str, str]) -> CommGraph:
        from fabscope.units import parse_size

        n = _dims(pos)
        if len(n) != 1:
            raise TrafficError(f"give a rank count, got {pos!r}")
        args = {k: int(kw.pop(k)) for k in ints if k in kw}
        return fn(n[0], size=parse_size(kw.pop("size", str(DEFAULT_SIZE))), **args)
    return make


#: spec name -> maker(positional, keywords)
GENERATORS = {
    "stencil": _gen_stencil(None), "stencil2d": _gen_stencil(2), "stencil3d": _gen_stencil(3),
    "pencils": _gen_pencils, "fft": _gen_pencils,
    "ring": _gen_n(ring), "tree": _gen_n(tree, "arity"), "random": _gen_n(random_sparse, "degree", "seed"),
}
