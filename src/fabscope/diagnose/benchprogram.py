"""fabscope-bench's pair kernel as a dynamic program, and its timing: what :mod:`.timemodel`
runs for each concurrent set and :mod:`.components` for each independent part of one.

The benchmark (csrc/pairs.c) pings from the lower rank of each pair, ``warmup`` untimed then
``iters`` timed round trips (``all-pairs``: one-way sends per iteration), and reports each pair as
the sender times it, from the end of the warm-up to the end of the last timed iteration.

>>> p = bench_program(np.array([0]), np.array([1]), np.array([8.0]), 2, 1, True, 2)
>>> p.n_messages, p.n_steps                      # 2 x (2 + 1) messages, each rank a step per message
(6, 12)
"""

from __future__ import annotations

import numpy as np

from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths


def pair_ranks(src: np.ndarray, dst: np.ndarray, hs: np.ndarray, hd: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local ranks of the pairs' two ends and the host of each local rank."""
    ranks = np.r_[src, dst]
    hosts = np.r_[hs, hd]
    uniq, inv = np.unique(ranks, return_inverse=True)
    host = np.full(len(uniq), -1, dtype=np.int64)
    host[inv] = hosts
    n = len(src)
    consistent = (np.all(src != dst) and np.array_equal(host[inv], hosts)
                  and len(np.unique(src)) == n and len(np.unique(dst)) == n)
    if consistent:
        return inv[:n], inv[n:], host
    return np.arange(n) * 2, np.arange(n) * 2 + 1, np.ravel(np.c_[hs, hd])


def bench_program(a: np.ndarray, b: np.ndarray, size: np.ndarray, it: int, w: int, pingpong: bool,
             n_ranks: int) -> Program:
    """fabscope-bench's pair kernel (ping-pong, the lower rank first) or all-pairs' one-way shift."""
    first, second = np.minimum(a, b), np.maximum(a, b)
    if pingpong:
        k = 2 * (it + w)
        rnd = np.repeat(np.arange(k), len(a))
        odd = (rnd % 2).astype(bool)
        f, s = np.tile(first, k), np.tile(second, k)
        return Program.from_arrays("ping-pong", n_ranks, np.where(odd, s, f), np.where(odd, f, s),
                                   np.tile(size, k), rnd, iterations=it, warmup=w)
    k = it + w
    rnd = np.repeat(np.arange(k), len(a))
    return Program.from_arrays("one-way", n_ranks, np.tile(a, k), np.tile(b, k), np.tile(size, k), rnd,
                               iterations=it, warmup=w)


def timed_seconds(prog: Program, end: np.ndarray, ranks: np.ndarray, last_round: int, warm_round: int) -> np.ndarray:
    """Each rank's time from the end of ``warm_round`` (0 if negative) to the end of ``last_round``."""
    n_rounds = int(prog.step_round.max()) + 1
    keys = prog.step_rank * n_rounds + prog.step_round
    t1 = end[np.searchsorted(keys, ranks * n_rounds + last_round)]
    t0 = np.zeros(len(ranks)) if warm_round < 0 else end[np.searchsorted(keys, ranks * n_rounds + warm_round)]
    return t1 - t0


def engine_run(prog: Program, paths: Paths, msg_path: np.ndarray, engine: str, sharing: str):
    """The engine on ready-made paths: the compiled one where it is available (``auto``)."""
    from fabscope.dynamic import fast

    if engine in ("auto", "c") and fast.available():
        return fast.run_program(prog, paths, msg_path, sharing), "c"
    if engine == "c":
        from fabscope.errors import FabscopeError

        raise FabscopeError(f"the compiled engine is not available: {fast.why_not()}")
    from fabscope.dynamic.engine import run_program

    res = [paths.res[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
    wts = [paths.weight[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
    return run_program(prog, paths.capacity, res, wts, paths.cap, paths.latency, msg_path.tolist(),
                       sharing=sharing), "python"
