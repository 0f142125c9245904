"""The flow model of a given set of host pairs, rerun cheaply with other capacities.

:class:`PairModel` routes the pairs once (each ping-pong pair is two flows,
one each way; a one-way pair is one flow), builds the resource-by-flow
matrix the max-min solver takes (directed links, then each host's memory
for on-node copies; a resource is separate per concurrent set, so pairs of
different rounds never share it) and then answers "what would every pair
get under these link capacities" with one call to
:func:`fabscope.model.maxmin.maxmin` on the matrix converted once
(:attr:`PairModel.solver_matrix`), so a call costs the solve only.  Its figures are those of
:func:`fabscope.model.simulate.simulate` for the same flows: a pair's
bandwidth is its data over its time, the time adding, per direction, the
software overhead, the links' latencies and size over rate.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)                    # 4 hosts, 2 leaves, 2 spines
>>> m = PairModel(f, np.array([0, 1]), np.array([2, 3]), scenario=np.array([0, 0]), routing="dmodk")
>>> bw = m.bandwidth()                             # each pair alone on its path: about line rate
>>> bool(np.all(bw > 0.99 * f.link_capacity[0]))
True
>>> cap = f.link_capacity.copy(); cap[m.path_links(0)] *= 0.5   # halve pair 0's links
>>> [round(float(x / f.link_capacity[0]), 1) for x in m.bandwidth(cap)]
[0.5, 1.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fabscope.arrays import unique_inverse
from fabscope.fabric.model import Fabric
from fabscope.model.latency import DEFAULT_ALPHA
from fabscope.model.maxmin import MaxMinMatrix, maxmin, prepare
from fabscope.routing import Routing, make_routing
from fabscope.sparse import csr_matrix


@dataclass(eq=False)
class PairModel:
    fabric: Fabric
    hs: np.ndarray
    hd: np.ndarray
    scenario: np.ndarray | None = None
    pingpong: np.ndarray | None = None
    bytes: np.ndarray | None = None
    routing: Routing | str | None = None
    alpha: float = DEFAULT_ALPHA

    def __post_init__(self) -> None:
        f = self.fabric
        n = len(self.hs)
        self.hs = np.asarray(self.hs, dtype=np.int64)
        self.hd = np.asarray(self.hd, dtype=np.int64)
        self.scenario = np.zeros(n, np.int64) if self.scenario is None else np.asarray(self.scenario, np.int64)
        self.pingpong = np.ones(n, bool) if self.pingpong is None else np.asarray(self.pingpong, bool)
        self.bytes = np.full(n, 1e6) if self.bytes is None else np.asarray(self.bytes, float)
        r = self.routing
        self.router = r if r is not None and not isinstance(r, str) else make_routing(f, r)
        back = np.flatnonzero(self.pingpong)
        # flows: one per pair (forward), then the reverse of each ping-pong pair
        self.flow_pair = np.r_[np.arange(n), back]
        self.flow_src = np.r_[self.hs, self.hd[back]]
        self.flow_dst = np.r_[self.hd, self.hs[back]]
        self.flow_scen = self.scenario[self.flow_pair]
        self.routes = self.router.routes(self.flow_src, self.flow_dst)
        n_f = len(self.flow_pair)
        n_l = f.n_links
        intra = np.flatnonzero(self.flow_src == self.flow_dst)
        res = np.r_[self.routes.link.astype(np.int64), n_l + self.flow_src[intra]]
        flw = np.r_[self.routes.flow, intra]
        wts = np.r_[self.routes.weight, np.ones(len(intra))]
        n_r = n_l + f.n_hosts
        res = res + self.flow_scen[flw] * n_r
        used, row = unique_inverse(res, n_r * (int(self.flow_scen.max(initial=0)) + 1))
        self.A = csr_matrix((wts, (row, flw)), shape=(len(used), n_f))
        #: which fabric resource each row is: link id, or n_links + host for a host's memory
        self.res_kind = used % n_r
        self.flow_cap = np.full(n_f, np.inf)
        self.flow_cap[intra] = f.host_copy_rate[self.flow_src[intra]]
        self.wire = np.bincount(self.routes.flow, weights=self.routes.weight * f.link_latency[self.routes.link],
                                minlength=n_f)

    @property
    def n_pairs(self) -> int:
        return len(self.hs)

    def path_links(self, p: int) -> np.ndarray:
        """Directed links pair ``p`` crosses, both directions of a ping-pong."""
        flows = np.flatnonzero(self.flow_pair == p)
        return np.unique(self.routes.link[np.isin(self.routes.flow, flows)])

    @cached_property
    def solver_matrix(self) -> MaxMinMatrix:
        """``A`` in the forms the max-min solver reads, converted on the first solve and kept."""
        return prepare(self.A)

    @cached_property
    def pair_links(self) -> csr_matrix:
        """Pairs x directed links: 1 where the pair (either direction) crosses the link."""
        f = self.flow_pair[self.routes.flow]
        m = csr_matrix((np.ones(len(f)), (f, self.routes.link)), shape=(self.n_pairs, self.fabric.n_links))
        m.data[:] = 1.0                  # canonical already (duplicates summed): a link crossed twice counts once
        return m

    def flow_rates(self, link_capacity: np.ndarray | None = None,
                   host_memory: np.ndarray | None = None) -> np.ndarray:
        """Max-min fair rate of every flow under these capacities (default: the fabric's)."""
        f = self.fabric
        cap_all = np.r_[f.link_capacity if link_capacity is None else link_capacity,
                        f.host_memory_bw if host_memory is None else host_memory]
        return maxmin(self.solver_matrix, cap_all[self.res_kind], self.flow_cap)

    def bandwidth(self, link_capacity: np.ndarray | None = None, host_memory: np.ndarray | None = None,
                  rates: np.ndarray | None = None) -> np.ndarray:
        """Bytes/s of every pair: its data over its time, as fabscope-bench reports it."""
        rate = self.flow_rates(link_capacity, host_memory) if rates is None else rates
        return self.pair_bandwidth(rate)

    def pair_bandwidth(self, rate: np.ndarray) -> np.ndarray:
        b = self.bytes[self.flow_pair]
        with np.errstate(divide="ignore"):
            t = self.alpha + self.wire + np.where(np.isinf(rate), 0.0, b / rate)
        n = self.n_pairs
        tot_b = np.bincount(self.flow_pair, weights=b, minlength=n)
        tot_t = np.bincount(self.flow_pair, weights=t, minlength=n)
        return tot_b / tot_t

    def binding(self, rate: np.ndarray, link_capacity: np.ndarray | None = None,
                within: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
        """Every (flow, fabric resource) where the resource limits the flow: full, and the flow among
        its fastest (max-min's bottleneck condition; a flow alone on its path is held by every full
        link of it), both ``within`` that share.  Two arrays of equal length, flows and resources (link
        id, or n_links + host).

        >>> from fabscope.fabric.generators import fat_tree
        >>> m = PairModel(fat_tree(k=2, levels=2), np.array([0]), np.array([2]), routing="dmodk")
        >>> fl, res = m.binding(m.flow_rates())
        >>> sorted(set(fl.tolist())), bool(np.all(np.isin(res, m.path_links(0))))   # both ways, its own links
        ([0, 1], True)
        """
        f = self.fabric
        cap_all = np.r_[f.link_capacity if link_capacity is None else link_capacity, f.host_memory_bw]
        capacity = cap_all[self.res_kind]
        fin = np.where(np.isfinite(rate), rate, 0.0)
        load = self.A @ fin
        full = load >= capacity * (1 - within)
        C = self.solver_matrix.C                         # the solver's CSC, converted once
        cols = np.repeat(np.arange(C.shape[1]), np.diff(C.indptr))
        rmax = np.zeros(C.shape[0])
        np.maximum.at(rmax, C.indices, fin[cols])
        ok = full[C.indices] & (fin[cols] >= rmax[C.indices] * (1 - within))
        return cols[ok], self.res_kind[C.indices[ok]]

    def bottlenecks(self, rate: np.ndarray, link_capacity: np.ndarray | None = None) -> np.ndarray:
        """Per flow, the fabric resource that limits it (full, and the flow is among its fastest); -1 none."""
        flows, res = self.binding(rate, link_capacity)
        out = np.full(self.A.shape[1], -1, dtype=np.int64)
        out[flows] = res
        return out

    def limit_names(self, rate: np.ndarray) -> np.ndarray:
        """Per pair, the name of the resource that limits it under ``rate`` (its slower direction's: a
        link's name, "HOST memory", or "" for none)."""
        f = self.fabric
        b = self.bottlenecks(rate)
        which = np.full(self.n_pairs, -1, dtype=np.int64)
        order = np.argsort(rate, kind="stable")[::-1]          # slowest flow of each pair written last
        which[self.flow_pair[order]] = b[order]
        cache: dict[int, str] = {}
        out = []
        for r in which.tolist():
            if r not in cache:
                cache[r] = "" if r < 0 else f.link_name(r) if r < f.n_links else f"{f.node_names[r - f.n_links]} memory"
            out.append(cache[r])
        return np.array(out, dtype=str)
