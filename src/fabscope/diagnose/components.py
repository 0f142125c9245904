"""A lock-step ping-pong set split into independent components: pairs that share no resource
(either way) and no rank do not interact, so each component runs alone on its own resources, and
a component shaped like one already run reuses its figures (exact; docs/diagnose.md).

:func:`fast_set` is what :func:`fabscope.diagnose.timemodel.dynamic_bandwidth` runs for such a
set by default; its ``fast=False`` runs each set whole, the reference the tests hold this to.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from fabscope.csr import gather
from fabscope.diagnose.benchprogram import bench_program, engine_run, timed_seconds
from fabscope.dynamic.resources import Paths, build_paths


def components(n_pairs: int, pf: np.ndarray, pr: np.ndarray, paths: Paths, first: np.ndarray,
                second: np.ndarray) -> np.ndarray:
    """Each pair's component in the graph "shares a resource (either way) or a rank"."""
    from fabscope.sparse import connected_components, coo_matrix

    lens = np.diff(paths.indptr)
    rows, cols = [], []
    for p in (pf, pr):
        rows.append(np.repeat(np.arange(n_pairs), lens[p]))
        cols.append(paths.res[gather(paths.indptr, p)])
    n_res = len(paths.capacity)
    rows += [np.arange(n_pairs)] * 2
    cols += [n_res + first, n_res + second]
    r, c = np.concatenate(rows), np.concatenate(cols)
    n = n_pairs + n_res + int(max(first.max(), second.max())) + 1
    g = coo_matrix((np.ones(len(r), np.int8), (r, n_pairs + c)), shape=(n, n))
    return connected_components(g, directed=False)[1][:n_pairs]


def _local(values: np.ndarray) -> np.ndarray:
    """Relabel ``values`` 0, 1, ... in order of first appearance (the same shape, relabelled alike)."""
    u, first, inv = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(len(u), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(u))
    return rank[inv]


def _component_times(first: np.ndarray, second: np.ndarray, size: np.ndarray, fwd: list, rev: list, paths: Paths,
                     it: int, w: int, engine: str, sharing: str, cache: dict, stats: dict) -> np.ndarray:
    """Timed seconds per pair of one component, run on its own resources; cached by the component's
    shape (its ranks, sizes, and its paths' resources relabelled in order of first use, with their
    capacities, weights, caps and latencies)."""
    k = len(first)
    ranks = np.unique(np.r_[first, second], return_inverse=True)[1]     # in order: the lower rank pings first
    lf, ls = ranks[:k], ranks[k:]
    pids = np.ravel(np.c_[fwd, rev])                # path 2j: pair j's ping, 2j + 1: its pong
    at = gather(paths.indptr, pids)
    lens = (paths.indptr[pids + 1] - paths.indptr[pids]).astype(np.int64)
    gres = paths.res[at]
    lres = _local(gres)
    cap_res = np.zeros(int(lres.max()) + 1 if len(lres) else 0)
    cap_res[lres] = paths.capacity[gres]
    weight = paths.weight[at]
    key = (it, w, sharing, engine, lf.tobytes(), ls.tobytes(), size.tobytes(), lens.tobytes(), lres.tobytes(),
           weight.tobytes(), cap_res.tobytes(), paths.cap[pids].tobytes(), paths.latency[pids].tobytes())
    if key in cache:
        stats["cached"] += 1
        return cache[key]
    sub = Paths(paths.src_host[pids], paths.dst_host[pids], np.r_[0, np.cumsum(lens)].astype(np.int64), lres, weight,
                paths.cap[pids], paths.latency[pids], paths.hops[pids], cap_res, len(cap_res), paths.routing)
    prog = bench_program(lf, ls, size, it, w, True, 2 * k)
    odd = (prog.step_round[prog.send_step] % 2).astype(np.int64)       # a pong: the pair's second path
    out, used = engine_run(prog, sub, 2 * np.tile(np.arange(k), 2 * (it + w)) + odd, engine, sharing)
    stats["events"] += int(out.events)
    stats["engines"].add(used)
    t = timed_seconds(prog, out.step_end, lf, 2 * (w + it) - 1, 2 * w - 1)
    cache[key] = t
    return t


def fast_set(f, router, hs: np.ndarray, hd: np.ndarray, size: np.ndarray, a: np.ndarray, b: np.ndarray,
              host: np.ndarray, it: int, w: int, engine: str, sharing: str, cache: dict, stats: dict,
              alone_only: bool = False) -> np.ndarray:
    """One ping-pong concurrent set, component by component: timed seconds per pair.

    ``alone_only``: only the pairs that are a component by themselves, NaN for the others (a pair
    alone on its resources and ranks takes the same time whenever it starts: the pairs of a set
    whose phases are drawn)."""
    first, second = np.minimum(a, b), np.maximum(a, b)
    h1, h2 = host[first], host[second]
    key = np.r_[h1 * f.n_hosts + h2, h2 * f.n_hosts + h1]
    uniq, inv = np.unique(key, return_inverse=True)
    paths = build_paths(f, router, uniq // f.n_hosts, uniq % f.n_hosts)
    n = len(first)
    pf, pr = inv[:n], inv[n:]
    comp = components(n, pf, pr, paths, first, second)
    t = np.zeros(n)
    order = np.argsort(comp, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(comp[order]) != 0, True])
    one = _OnePair(paths, size, pf, pr, it, w, sharing, engine)
    for lo, hi in pairwise(bounds.tolist()):
        stats["components"] += 1
        if hi - lo == 1:                        # most components: one pair, keyed without NumPy
            j = int(order[lo])
            key = one.key(j)
            if key in cache:
                stats["cached"] += 1
                t[j] = cache[key]
                continue
            sel = order[lo:hi]
            t[j] = cache[key] = _component_times(first[sel], second[sel], size[sel], pf[sel], pr[sel], paths, it,
                                                 w, engine, sharing, cache, stats)[0]
            continue
        sel = order[lo:hi]
        if alone_only:
            t[sel] = np.nan
            continue
        t[sel] = _component_times(first[sel], second[sel], size[sel], pf[sel], pr[sel], paths, it, w, engine,
                                  sharing, cache, stats)
    return t


class _OnePair:
    """The cache key of a one-pair component, built from Python lists: the same shape as
    :func:`_component_times`' key (its paths' resources relabelled in order of first use, with
    their capacities and weights, the paths' caps and latencies, the size), a tuple of its own
    (a one-pair component's ranks are always 0 and 1).  NumPy's calls on arrays of a few
    elements cost more than the work, and diagnose's sets split into thousands of such components:
    with those calls, the Python around the engine was a quarter of its time model
    (docs/benchmarks.md, "The dynamic engine")."""

    def __init__(self, paths: Paths, size: np.ndarray, pf: np.ndarray, pr: np.ndarray, it: int, w: int,
                 sharing: str, engine: str):
        self.ind, self.res = paths.indptr.tolist(), paths.res.tolist()
        self.wt, self.capacity = paths.weight.tolist(), paths.capacity.tolist()
        self.cap, self.lat = paths.cap.tolist(), paths.latency.tolist()
        self.size, self.pf, self.pr = size.tolist(), pf.tolist(), pr.tolist()
        self.head = ("one pair", it, w, sharing, engine)

    def key(self, j: int) -> tuple:
        ind, res, wt = self.ind, self.res, self.wt
        f, r = self.pf[j], self.pr[j]
        seq = res[ind[f]:ind[f + 1]] + res[ind[r]:ind[r + 1]]
        local: dict[int, int] = {}
        lres = tuple(local.setdefault(x, len(local)) for x in seq)
        return (*self.head, self.size[j], ind[f + 1] - ind[f], lres,
                tuple(wt[ind[f]:ind[f + 1]] + wt[ind[r]:ind[r + 1]]), tuple(self.capacity[x] for x in local),
                self.cap[f], self.cap[r], self.lat[f], self.lat[r])
