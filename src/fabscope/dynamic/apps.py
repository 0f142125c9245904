"""Programs of whole applications: fabscope-bench's application kernels, and any communication graph.

Each kernel's program does per iteration what the kernel does, ``warmup``
untimed iterations first; a rank's iteration ``i + 1`` starts when its own
iteration-``i`` sends and receives have completed (no barrier between
iterations, as in the kernels), and its messages flow once both ends have
posted them (the rendezvous protocol of :mod:`.program`).

========================= ===========================================================
``halo(dims, ...)``       ``halo2d``/``halo3d``: Isend/Irecv of ``size`` bytes to each
                          face neighbour of a Cartesian grid, then Waitall
``fft_transpose(...)``    ``fft-transpose``: MPI_Alltoall in the row communicator, then
                          in the column communicator of a PR x PC grid
``allreduce_loop(...)``   ``allreduce-loop``: MPI_Allreduce of ``size`` bytes
``graph_loop(...)``       any application: a bytes matrix per iteration, every edge one
                          message, all posted together (Isend/Irecv ... Waitall)
========================= ===========================================================

>>> p = halo((2, 2), 1000.0, periodic=False, iterations=3, warmup=1)
>>> p.n_messages, p.params["rounds_per_iteration"]      # 4 ranks x 2 neighbours x 4 iterations
(32, 1)
>>> dims_create(16, 2), dims_create(12, 2), dims_create(16, 3)
([4, 4], [4, 3], [4, 2, 2])
>>> fft_transpose((2, 4), 100.0, iterations=1, warmup=0).n_messages   # rows: 2x4x3, columns: 4x2x1
32
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from fabscope.dynamic import programs as pg
from fabscope.dynamic.program import Program
from fabscope.errors import TrafficError

__all__ = ["KERNELS", "allreduce_loop", "dims_create", "fft_transpose", "graph_loop", "halo", "iteration_times"]

#: fabscope-bench's application kernels that have a program of their own here
KERNELS = ("halo2d", "halo3d", "fft-transpose", "allreduce-loop")
ALLTOALL = ("pairwise", "scattered")
ALLREDUCE = ("ring", "recursive-doubling")


def dims_create(n: int, ndims: int) -> list[int]:
    """A balanced grid of ``n`` ranks in ``ndims`` dimensions, largest first (what MPI_Dims_create
    returns): prime factors, largest first, each multiplied into the smallest dimension so far."""
    if n < 1 or ndims < 1:
        raise TrafficError(f"a grid of {n} ranks in {ndims} dimensions")
    f, m, p = [], n, 2
    while p * p <= m:
        while m % p == 0:
            f.append(p)
            m //= p
        p += 1
    if m > 1:
        f.append(m)
    dims = [1] * ndims
    for q in sorted(f, reverse=True):
        dims[dims.index(min(dims))] *= q
    return sorted(dims, reverse=True)


def _repeat(name: str, n: int, src, dst, size, rnd, iterations: int, warmup: int, delay: float = 0.0, /,
            **params: Any) -> Program:
    """One iteration's messages and rounds, ``warmup + iterations`` times, each iteration's rounds
    after the last one's; ``delay`` seconds (compute) before each of a rank's steps."""
    if iterations < 1 or warmup < 0:
        raise TrafficError(f"{name}: needs iterations >= 1 and warm-up >= 0, got {iterations} and {warmup}")
    if not (np.isfinite(delay) and delay >= 0):
        raise TrafficError(f"{name}: compute time must be a finite time >= 0, got {delay}")
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    size, rnd = np.broadcast_to(np.asarray(size, float), src.shape), np.asarray(rnd, np.int64)
    keep = src != dst                       # a message to itself is a local copy
    src, dst, size, rnd = src[keep], dst[keep], size[keep], rnd[keep]
    if len(src) == 0:
        raise TrafficError(f"{name}: no rank sends to another")
    per = int(rnd.max()) + 1
    k = iterations + warmup
    it = np.repeat(np.arange(k, dtype=np.int64), len(src))
    prog = Program.from_arrays(name, n, np.tile(src, k), np.tile(dst, k), np.tile(size, k),
                               np.tile(rnd, k) + it * per, iterations=iterations, warmup=warmup,
                               rounds_per_iteration=per, **params)
    if delay > 0:
        from dataclasses import replace

        prog = replace(prog, step_delay=np.full(prog.n_steps, float(delay)))
    return prog


def halo(dims: Sequence[int], size: float, periodic: bool | Sequence[bool] = True, iterations: int = 1,
         warmup: int = 0, compute: float = 0.0, name: str | None = None) -> Program:
    """Halo exchange on a Cartesian grid (C order, as MPI_Cart_create numbers ranks): per iteration
    every rank sends ``size`` bytes to each of its 2 x len(dims) neighbours (MPI_Cart_shift: none past a
    non-periodic edge; on a periodic axis of 2 both go to the same rank, of 1 to itself, a local copy)."""
    dims = [int(d) for d in dims]
    if not dims or min(dims) < 1:
        raise TrafficError(f"halo grid must have positive dimensions, got {dims}")
    per = [bool(periodic)] * len(dims) if isinstance(periodic, (bool, np.bool_)) else [bool(p) for p in periodic]
    if len(per) != len(dims):
        raise TrafficError(f"halo grid {dims}: {len(per)} periodic flags for {len(dims)} dimensions")
    n = prod(dims)
    idx = np.arange(n, dtype=np.int64)
    strides = [prod(dims[i + 1:]) for i in range(len(dims))]
    src, dst = [], []
    for ax, k in enumerate(dims):
        c = (idx // strides[ax]) % k
        for step in (1, -1):
            nc = c + step
            ok = np.ones(n, bool) if per[ax] else (nc >= 0) & (nc < k)
            nc %= k
            src.append(idx[ok])
            dst.append(idx[ok] + (nc[ok] - c[ok]) * strides[ax])
    s = np.concatenate(src)
    return _repeat(name or f"halo{len(dims)}d", n, s, np.concatenate(dst), float(size), np.zeros(len(s)),
                   iterations, warmup, compute, dims=dims, periodic=per, size=float(size))


def _alltoall_rounds(members: np.ndarray, size: float, algorithm: str) -> tuple[np.ndarray, ...]:
    """(src, dst, round) of one MPI_Alltoall among ``members`` (global ranks, in communicator order).

    pairwise (MPICH's for large messages): in round k-1 rank r sends to r xor k (a power of two
    members) or r + k and receives from r - k; scattered: every message posted at once."""
    g = len(members)
    if algorithm not in ALLTOALL:
        raise TrafficError(f"unknown all-to-all algorithm {algorithm!r}; choose from {', '.join(ALLTOALL)}")
    r = np.arange(g)
    src, dst, rnd = [], [], []
    pof2 = g & (g - 1) == 0
    for k in range(1, g):
        d = r ^ k if pof2 else (r + k) % g
        src.append(r)
        dst.append(d)
        rnd.append(np.full(g, 0 if algorithm == "scattered" else k - 1))
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return members[np.concatenate(src)], members[np.concatenate(dst)], np.concatenate(rnd)


def fft_transpose(grid: Sequence[int], size: float, iterations: int = 1, warmup: int = 0,
                  algorithm: str = "pairwise", compute: float = 0.0) -> Program:
    """The transposes of a pencil FFT on a PR x PC grid (rank r at row r // PC, column r % PC): per
    iteration an all-to-all of ``size`` bytes per destination among each row's PC ranks, then one among
    each column's PR ranks (``algorithm``: pairwise or scattered, see :func:`_alltoall_rounds`)."""
    if len(grid) != 2 or min(grid) < 1:
        raise TrafficError(f"fft-transpose needs a grid of 2 positive dimensions, got {list(grid)}")
    pr, pc = int(grid[0]), int(grid[1])
    n = pr * pc
    ranks = np.arange(n, dtype=np.int64).reshape(pr, pc)
    parts = []
    for row in ranks:                                  # row communicators: rounds 0 .. pc-2
        parts.append(_alltoall_rounds(row, size, algorithm))
    row_rounds = max(1, pc - 1) if algorithm == "pairwise" else 1
    for col in ranks.T:                                # column communicators: after the rows
        s, d, r = _alltoall_rounds(col, size, algorithm)
        parts.append((s, d, r + row_rounds))
    s, d, r = (np.concatenate([p[i] for p in parts]) for i in range(3))
    return _repeat("fft-transpose", n, s, d, float(size), r, iterations, warmup, compute,
                   dims=[pr, pc], size=float(size), algorithm=algorithm)


def allreduce_loop(n: int, size: float, iterations: int = 1, warmup: int = 0, algorithm: str | None = None,
                   compute: float = 0.0) -> Program:
    """MPI_Allreduce of ``size`` bytes per iteration, as :func:`.programs.allreduce_ring` or
    :func:`.programs.allreduce_recursive_doubling` (default: recursive doubling up to 2 KiB, as MPICH
    for short vectors, else the ring, whose bandwidth term equals MPICH's reduce-scatter + allgather)."""
    algo = algorithm or ("recursive-doubling" if size <= 2048 else "ring")
    if algo not in ALLREDUCE:
        raise TrafficError(f"unknown allreduce algorithm {algo!r}; choose from {', '.join(ALLREDUCE)}")
    if n < 2:
        raise TrafficError("allreduce-loop needs at least 2 ranks")
    one = pg.allreduce_ring(n, size) if algo == "ring" else pg.allreduce_recursive_doubling(n, size)
    return _repeat("allreduce-loop", n, one.src, one.dst, one.bytes, one.step_round[one.send_step],
                   iterations, warmup, compute, size=float(size), algorithm=algo)


def graph_loop(n: int, src, dst, nbytes, iterations: int = 1, warmup: int = 0, name: str = "graph") -> Program:
    """Any application's communication per iteration (``nbytes[i]`` from ``src[i]`` to ``dst[i]``):
    every rank posts all its sends and receives of an iteration at once and waits for them all."""
    src = np.asarray(src, np.int64)
    b = np.asarray(nbytes, float)
    keep = b > 0
    return _repeat(name, n, src[keep], np.asarray(dst, np.int64)[keep], b[keep], np.zeros(int(keep.sum())),
                   iterations, warmup, 0.0, generic=True)


def iteration_times(prog: Program, step_end: np.ndarray) -> np.ndarray:
    """Seconds of each timed iteration of a program made here, from its run's step end times: per
    iteration the longest over the ranks of (the rank's end of it - its end of the one before), as a
    kernel's per-iteration time is the slowest rank's.

    >>> p = halo((2,), 10.0, periodic=False, iterations=2, warmup=1)
    >>> iteration_times(p, np.array([1.0, 3.0, 6.0, 1.0, 3.0, 6.0])).tolist()
    [2.0, 3.0]
    """
    per = int(prog.params["rounds_per_iteration"])
    k = int(prog.params["iterations"]) + int(prog.params["warmup"])
    it = prog.step_round // per
    end = np.zeros((prog.n_ranks, k + 1))
    np.maximum.at(end, (prog.step_rank, it + 1), np.asarray(step_end, float))
    end = np.maximum.accumulate(end, axis=1)      # a rank idle in an iteration ends it when it ended the last
    dur = np.diff(end, axis=1).max(axis=0)
    return dur[int(prog.params["warmup"]):]
