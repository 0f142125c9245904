"""The resources messages share, built as the static model builds them.

Resource ``r < n_links`` is directed link ``r``; resource ``n_links + h`` is
host ``h``'s memory, which every on-node copy of that host crosses.  An
on-node copy is also capped at the host's copy rate; a message between hosts
has no cap of its own.  Routes come from the same routing engine as
:func:`fabscope.model.simulate.simulate`, once per distinct (source host,
destination host) pair, or (source port, destination port) pair where hosts
have several (``terminals``): messages of one pair share one *path*.

A path's latency is what a message pays before its bytes flow:
the software overhead ``alpha``, the sum of its links' latencies and seed
002's per-hop term ``hops * flit / B`` (``B``: the slowest link crossed).

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)
>>> p = build_paths(f, None, [0, 0], [3, 0])
>>> p.resources(0), p.resources(1)            # 4 links across the tree; host 0's memory
([0, 10, 15, 7], [16])
>>> float(p.cap[1]) == float(f.host_copy_rate[0]), bool(np.isinf(p.cap[0]))
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.fabric.model import Fabric
from fabscope.model.latency import DEFAULT_ALPHA, DEFAULT_FLIT
from fabscope.routing import Routing, make_routing, terminal_routes


@dataclass(frozen=True, eq=False)
class Paths:
    """Distinct host pairs' resource lists (CSR), caps and latencies."""

    src_host: np.ndarray
    dst_host: np.ndarray
    indptr: np.ndarray           # path p's entries: indptr[p]:indptr[p+1]
    res: np.ndarray              # resource ids
    weight: np.ndarray           # share of the message's rate put on the resource
    cap: np.ndarray              # per-message rate cap (inf: none)
    latency: np.ndarray          # seconds before the bytes flow
    hops: np.ndarray
    capacity: np.ndarray         # capacity of every resource (links, then host memories)
    n_links: int
    routing: str

    @property
    def n_paths(self) -> int:
        return len(self.src_host)

    def resources(self, p: int) -> list[int]:
        return self.res[self.indptr[p]:self.indptr[p + 1]].tolist()

    def resource_name(self, fabric: Fabric, r: int) -> str:
        return fabric.link_name(r) if r < self.n_links else f"{fabric.node_names[r - self.n_links]} memory"


def check_capacity(capacity) -> None:
    """Refuse resource capacities that are not finite and positive, before either engine runs.

    A fabric's are (its checks refuse others); a hand-built problem may not be.
    An infinite capacity lets a flow take an infinite rate and its resources an
    infinite load (the compiled engine then kept a flow at its old rate where the
    Python reference raised it), and a zero one makes flows that never finish.

    >>> check_capacity(np.array([1e9, 3e9]))
    >>> check_capacity(np.array([1e9, np.inf]))
    Traceback (most recent call last):
    ...
    fabscope.errors.TrafficError: resource 1 has capacity inf; the dynamic engine needs finite capacities > 0
    """
    c = np.asarray(capacity, dtype=float)
    bad = np.flatnonzero(~(np.isfinite(c) & (c > 0)))
    if len(bad):
        from fabscope.errors import TrafficError

        raise TrafficError(f"resource {int(bad[0])} has capacity {c[bad[0]]:g}; "
                           f"the dynamic engine needs finite capacities > 0")


def build_paths(fabric: Fabric, routing: Routing | str | None, src_host, dst_host, *, seed: int = 0,
                alpha: float = DEFAULT_ALPHA, flit: float = DEFAULT_FLIT, latency: bool = True,
                terminals: bool = False) -> Paths:
    """Route each (src_host[i], dst_host[i]) and collect its resources; with ``terminals`` the
    pairs are of terminals (host ports), and ``Paths.src_host``/``dst_host`` their hosts.

    ``latency=False`` gives every path zero latency (the sharing-only comparison with SimGrid).
    """
    router = routing if routing is not None and not isinstance(routing, str) else make_routing(fabric, routing, seed=seed)
    hs = np.asarray(src_host, dtype=np.int64)
    hd = np.asarray(dst_host, dtype=np.int64)
    n = len(hs)
    if terminals:
        routes = terminal_routes(router, hs, hd, fabric)
        if not fabric.single_port:
            hs, hd = fabric.terminal_host[hs], fabric.terminal_host[hd]
    else:
        routes = router.routes(hs, hd)
    n_l = fabric.n_links
    intra = np.flatnonzero(hs == hd)
    flw, res, wts = _by_path(routes.flow.astype(np.int64, copy=False), routes.link.astype(np.int64),
                             routes.weight.astype(float, copy=False), intra, n_l + hs[intra], n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(flw, minlength=n), out=indptr[1:])
    cap = np.full(n, np.inf)
    cap[intra] = fabric.host_copy_rate[hs[intra]]
    hops = np.asarray(routes.hops, dtype=float)
    if latency:
        lk = routes.link.astype(np.int64)
        wire = np.bincount(routes.flow, weights=routes.weight * fabric.link_latency[lk], minlength=n)
        slow = np.full(n, np.inf)
        np.minimum.at(slow, routes.flow, fabric.link_capacity[lk])
        per_hop = np.where(np.isfinite(slow), hops * flit / np.where(np.isfinite(slow), slow, 1.0), 0.0)
        lat = alpha + wire + per_hop
    else:
        lat = np.zeros(n)
    capacity = np.r_[fabric.link_capacity, fabric.host_memory_bw].astype(float)
    return Paths(hs, hd, indptr, res, wts, cap, lat, hops, capacity, n_l, router.name)


def _by_path(flw: np.ndarray, res: np.ndarray, wts: np.ndarray, intra: np.ndarray, memory: np.ndarray,
             n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The routes' entries and the on-node copies' memories, grouped by path, each route in hop order.

    What a stable sort by path gives, placed without sorting where it can be: a hop-by-hop
    walk lists the paths still on their way once per hop, each hop's list ascending, so an
    entry's hop is the number of the ascending run it sits in.  That holds when every run
    number is below its path's entry count (a path's runs then are 0, 1, ... in order);
    otherwise (routes split over several paths) the stable sort decides.

    >>> f, r, w = _by_path(np.array([0, 2, 0, 2, 2]), np.array([10, 30, 11, 31, 32]), np.ones(5),
    ...                    np.array([1]), np.array([99]), 3)
    >>> f.tolist(), r.tolist()
    ([0, 0, 1, 2, 2, 2], [10, 11, 99, 30, 31, 32])
    """
    if len(intra):
        flw, res = np.concatenate([flw, intra]), np.concatenate([res, memory])
        wts = np.concatenate([wts, np.ones(len(intra))])
    count = np.bincount(flw, minlength=n)
    run = np.zeros(len(flw), np.int64)
    m = len(flw) - len(intra)                   # route entries; the memories' entries are each path's only one
    if m > 1:
        np.cumsum(flw[1:m] <= flw[:m - 1], out=run[1:m])
    if len(flw) and np.all(run < count[flw]):
        start = np.zeros(n, np.int64)
        np.cumsum(count[:-1], out=start[1:])
        pos = start[flw] + run
        out = np.empty_like(flw), np.empty_like(res), np.empty_like(wts)
        for o, a in zip(out, (flw, res, wts)):
            o[pos] = a
        return out
    order = np.argsort(flw, kind="stable")
    return flw[order], res[order], wts[order]
