"""Dimension-order routing on tori, meshes and hypercubes.

A packet corrects its first differing coordinate first, then the next, taking
the shorter way round a ring and the only way along a mesh line.  Half-way
round an even ring both ways are equally short; the tie rule decides:

``plus``     always + (fabscope's torus generator numbers each router's + port
             before its - port, so this is what OpenSM's ``dor`` does on it)
``simgrid``  + except from coordinate k/2 to 0, which goes - (SimGrid's torus zone)
``opensm``   OpenSM's ``dor``: no coordinates needed; at each switch the first
             least-hop port in port order decides the next switch (parallel
             cables to it balanced by use, as minhop does).  The rule for
             imported tori, which carry no coordinates.

>>> from fabscope.fabric.generators import torus
>>> f = torus((4,))
>>> [f.node_names[f.link_dst[l]] for l in DimensionOrderRouting(f).routes([2], [0]).path(0)]
['r(2)', 'r(3)', 'r(0)', 'nid00000']
>>> [f.node_names[f.link_dst[l]] for l in DimensionOrderRouting(f, tie="simgrid").routes([2], [0]).path(0)]
['r(2)', 'r(1)', 'r(0)', 'nid00000']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.distances import host_downlinks, switch_links
from fabscope.routing.routes import Routes, first_links, walk

TIES = ("plus", "simgrid", "opensm")


@dataclass(eq=False)
class DimensionOrderRouting:
    fabric: Fabric
    tie: str | None = None
    name: str = "dor"
    _t: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        f = self.fabric
        if self.tie is None:
            self.tie = "opensm" if f.coords is None or f.dims is None else "plus"
        if self.tie not in TIES:
            raise RoutingError(f"unknown dor tie rule {self.tie!r}; choose from {', '.join(TIES)}")
        if self.tie == "opensm":
            from fabscope.routing.tables import TableRouting, minhop_tables

            self._t["tables"] = TableRouting(f, minhop_tables(f, dor=True), name=self.name)
            return
        if f.coords is None or f.dims is None:
            raise RoutingError(f"dor:tie={self.tie} needs coordinates; {f.name!r} has none "
                               "(dor:tie=opensm follows port order instead)")
        h, s, nd = f.n_hosts, f.n_switches, len(f.dims)
        rc = np.full((s, nd), -1, dtype=np.int64)
        rc[f.host_switch - h] = f.coords
        if np.any(rc < 0):
            raise RoutingError(f"{f.name!r}: a router without hosts has no coordinates")
        k = np.array(f.dims, dtype=np.int64)
        nbr = np.full((s, nd, 2), -1, dtype=np.int64)
        sl = switch_links(f)
        a, b = f.link_src[sl] - h, f.link_dst[sl] - h
        diff = rc[b] - rc[a]
        dim = np.argmax(diff != 0, axis=1)
        step = diff[np.arange(len(sl)), dim]
        kk = k[dim]
        plus = (step == 1) | (step == -(kk - 1))
        minus = (step == -1) | (step == kk - 1)
        nbr[a[plus], dim[plus], 0] = sl[plus]
        nbr[a[minus], dim[minus], 1] = sl[minus]
        self._t.update(rc=rc, k=k, per=np.array(f.periodic, bool), nbr=nbr, down=host_downlinks(f))

    def _forward(self, c: np.ndarray, delta: np.ndarray, dim) -> np.ndarray:
        """Whether each move of ``delta`` along ``dim`` from coordinate ``c`` goes + (the tie rule included)."""
        t = self._t
        k = t["k"][dim]
        m = np.mod(delta, k)
        fwd = np.where(t["per"][dim], m <= k // 2, delta > 0)
        if self.tie == "simgrid":
            fwd &= ~((2 * m == k) & (2 * c == k))
        return fwd

    def next_link(self, cur: np.ndarray, dst: np.ndarray, hop: int) -> np.ndarray:
        t = self._t
        h = self.fabric.n_hosts
        r = cur - h
        c = t["rc"][r]
        dr = self.fabric.host_switch[dst] - h
        d = t["rc"][dr]
        diff = d - c
        moving = diff != 0
        at = ~moving.any(axis=1)
        dim = np.argmax(moving, axis=1)
        delta = diff[np.arange(len(r)), dim]
        fwd = self._forward(c[np.arange(len(r)), dim], delta, dim)
        out = t["nbr"][r, dim, np.where(fwd, 0, 1)]
        return np.where(at, t["down"][dst], out)

    @property
    def lft(self) -> np.ndarray | None:
        """Forwarding tables (``tie=opensm``); None when routed by coordinates."""
        t = self._t.get("tables")
        return None if t is None else t.lft

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        if "tables" in self._t:
            return self._t["tables"].routes(src, dst)
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        got = self._routes_at_once(src, dst)
        return got if got is not None else walk(self.fabric, src, dst, self.next_link, self.name)

    def _router_table(self) -> np.ndarray | None:
        """Router of each coordinate tuple (C order, -1: none); None where coordinates are
        out of range or shared by two routers (then only the hop-by-hop walk is sure)."""
        t = self._t
        if "table" not in t:
            rc, k = t["rc"], t["k"]
            size = int(np.prod(k))
            table = None
            if np.all(rc < k) and size <= 4 * len(rc) + 1024:
                table = np.full(size, -1, np.int64)
                flat = np.ravel_multi_index(rc.T, k)
                table[flat] = np.arange(len(rc))
                if not np.array_equal(table[flat], np.arange(len(rc))):
                    table = None
            t["table"] = table
        return t["table"]

    def _routes_at_once(self, src: np.ndarray, dst: np.ndarray) -> Routes | None:
        """The routes :func:`walk` finds with :meth:`next_link`, computed without walking.

        A flow's route is its NIC link, then per dimension a run of steps one way
        round the ring (the way :meth:`_forward` picks at the start holds at every
        router on the way: going + the rest only shrinks, going - it stays past
        half-way), then the link down to its host.  The entries come out as the
        walk lists them (hop by hop, flows ascending in each).  None, for the walk
        to decide (and name the fault), where a step has no link, a coordinate no
        router, or links do not follow on from each other.
        """
        f, t = self.fabric, self._t
        table = self._router_table()
        if table is None:
            return None
        h, n = f.n_hosts, len(src)
        active = np.flatnonzero(src != dst)
        sa, da = src[active], dst[active]
        first = first_links(f, sa, da)
        r0 = f.link_dst[first].astype(np.int64) - h
        if np.any(r0 < 0):
            return None
        k, nd = t["k"], len(t["k"])
        c, dc = t["rc"][r0], t["rc"][f.host_switch[da] - h]
        delta = dc - c
        dims = np.arange(nd)
        fwd = self._forward(c, delta, dims)
        m = np.mod(delta, k)
        steps = np.where(t["per"], np.where(fwd, m, k - m), np.abs(delta))
        steps[delta == 0] = 0
        off = np.cumsum(steps, axis=1) - steps               # hops before each dimension's run
        length = steps.sum(axis=1) + 2                      # links: NIC, the runs, down to the host
        stride = np.r_[np.cumprod(k[::-1])[::-1][1:], 1]
        grid = np.full((int(length.max(initial=2)), len(active)), -1, np.int64)    # hop x flow
        cols = np.arange(len(active))
        grid[0] = first
        grid[length - 1, cols] = t["down"][da]
        for d in range(nd):
            cnt = steps[:, d]
            who = np.repeat(cols, cnt)
            if not len(who):
                continue
            pos = np.arange(len(who)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            sign = np.where(fwd[who, d], 1, -1)
            at = (dc[who, :d] @ stride[:d]) + (c[who, d + 1:] @ stride[d + 1:]) \
                + np.mod(c[who, d] + pos * sign, k[d]) * stride[d]
            r = table[at]
            if np.any(r < 0):
                return None
            grid[1 + off[who, d] + pos, who] = t["nbr"][r, d, np.where(fwd[who, d], 0, 1)]
        used = np.arange(len(grid))[:, None] < length[None, :]
        link = grid[used]
        if np.any(link < 0):
            return None
        follows = used[1:]
        if np.any(f.link_dst[grid[:-1][follows]] != f.link_src[grid[1:][follows]]):
            return None
        flow = np.broadcast_to(active, grid.shape)[used]
        hops = np.zeros(n)
        hops[active] = length
        return Routes(n, flow, link.astype(np.int32), np.ones(len(link)), hops)

    def link_load(self, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """What each link carries when flow ``i`` puts ``weight[i]`` on every link of its route.

        The same sums as routing every flow and adding up, without building the
        routes: a flow's stretch along one dimension is a run of consecutive
        links of one ring, added with a difference array per ring and
        direction.  The tests hold it equal to :meth:`routes`.

        >>> from fabscope.fabric.generators import torus
        >>> f = torus((4, 4))
        >>> r = DimensionOrderRouting(f)
        >>> load = r.link_load(np.array([0, 1]), np.array([10, 2]), np.array([1.0, 2.0]))
        >>> routed = r.routes(np.array([0, 1]), np.array([10, 2]))
        >>> bool(np.allclose(load, np.bincount(routed.link, np.array([1.0, 2.0])[routed.flow], f.n_links)))
        True
        """
        f = self.fabric
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        w = np.asarray(weight, float)
        if "tables" in self._t:
            r = self.routes(src, dst)
            return np.bincount(r.link, weights=w[r.flow] * r.weight, minlength=f.n_links)
        go = src != dst
        src, dst, w = src[go], dst[go], w[go]
        load = np.bincount(first_links(f, src, dst), weights=w, minlength=f.n_links)
        load += np.bincount(self._t["down"][dst], weights=w, minlength=f.n_links)
        t, h = self._t, f.n_hosts
        c = t["rc"][f.host_switch[src] - h].copy()
        d = t["rc"][f.host_switch[dst] - h]
        k_all = t["k"]
        n_flat = int(np.prod(k_all))
        router = np.full(n_flat, -1, np.int64)          # router number of every coordinate tuple
        router[np.ravel_multi_index(t["rc"].T, k_all)] = np.arange(len(t["rc"]))
        for dim in range(len(k_all)):
            k, stride = int(k_all[dim]), int(np.prod(k_all[dim + 1:]))
            delta = d[:, dim] - c[:, dim]
            mv = delta != 0
            cm, dm, wm = c[mv], delta[mv], w[mv]
            fwd = self._forward(cm[:, dim], dm, dim)
            m = np.mod(dm, k)
            per = bool(t["per"][dim])
            steps = np.where(fwd, m if per else dm, (k - m) if per else -dm)
            # the flow's links along dim: positions [lo, lo + steps) of its ring, mod k
            lo = np.where(fwd, cm[:, dim], np.mod(cm[:, dim] - steps + 1, k))
            ring_c = cm.copy()
            ring_c[:, dim] = 0
            ring = np.ravel_multi_index(ring_c.T, k_all)     # the ring's position-0 tuple
            side = np.where(fwd, 0, 1)
            end = lo + steps
            wrap = end > k
            diff = np.zeros((2, n_flat, k + 1))
            np.add.at(diff, (side, ring, lo), wm)
            np.add.at(diff, (side, ring, np.minimum(end, k)), -wm)
            np.add.at(diff, (side[wrap], ring[wrap], 0), wm[wrap])
            np.add.at(diff, (side[wrap], ring[wrap], end[wrap] - k), -wm[wrap])
            run = np.cumsum(diff[:, :, :k], axis=2)
            sd, rg, pos = np.nonzero(run)
            at = router[rg + pos * stride]
            lk = t["nbr"][at, dim, sd]
            ok = lk >= 0                                 # float residue past a mesh's last router
            load += np.bincount(lk[ok], weights=run[sd, rg, pos][ok], minlength=f.n_links)
            c[mv, dim] = d[mv, dim]
        return load

