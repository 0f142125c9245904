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
from fabscope.routing.distances import switch_links
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
        # coordinates one row per dimension: gathering rows of 2-4 numbers took ten times as long
        rc_t = np.full((nd, s), -1, dtype=np.int64)
        rc_t[:, f.host_switch - h] = f.coords.T
        if np.any(rc_t < 0):
            raise RoutingError(f"{f.name!r}: a router without hosts has no coordinates")
        k = np.array(f.dims, dtype=np.int64)
        nbr = np.full((s, nd, 2), -1, dtype=np.int64)
        sl = switch_links(f)
        a, b = f.link_src[sl] - h, f.link_dst[sl] - h
        diff = rc_t.take(b, axis=1) - rc_t.take(a, axis=1)     # take: a fifth of [:, b]'s time
        dim = np.argmax(diff != 0, axis=0)
        step = diff[dim, np.arange(len(sl))]
        kk = k[dim]
        plus = (step == 1) | (step == -(kk - 1))
        minus = (step == -1) | (step == kk - 1)
        at = (a * nd + dim) * 2                          # nbr[a, dim, way] as one index
        flat_nbr = nbr.reshape(-1)
        flat_nbr[at[plus]] = sl[plus]
        flat_nbr[at[minus] + 1] = sl[minus]
        self._t.update(rc=np.ascontiguousarray(rc_t.T), rc_t=rc_t, k=k, per=np.array(f.periodic, bool), nbr=nbr,
                       down=f.terminal_downlink)

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
        dr = self.fabric.terminal_switch[dst] - h
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
        if not self.fabric.single_port:
            return walk(self.fabric, src, dst, self.next_link, self.name)
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        got = self._routes_at_once(src, dst)
        return got if got is not None else walk(self.fabric, src, dst, self.next_link, self.name)

    def terminal_routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        if "tables" in self._t:
            return self._t["tables"].terminal_routes(src, dst)
        if not self.fabric.single_port:
            return walk(self.fabric, src, dst, self.next_link, self.name, terminals=True)
        return self.routes(src, dst)

    def _rings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Every ring's links in the order a run of steps takes them, made once: per dimension
        d and way (+, -), one row per ring (the other coordinates), the links leaving its
        coordinates 0, 1, .. k-1 twice over (going -: 0, k-1, .. 1 twice), so that a run from
        any coordinate is consecutive entries; -1 where a router has no link that way.
        Returns (the rows flattened one after the other, where each (d, way) starts, strides
        of the coordinates).  None where the walk alone can vouch for the routes: coordinates
        out of range or shared by two routers, or a link that does not lead to the router one
        step along its dimension (a cable the coordinates do not describe)."""
        t = self._t
        if "rings" not in t:
            t["rings"] = None
            f, h = self.fabric, self.fabric.n_hosts
            rc_t, k, nbr = t["rc_t"], t["k"], t["nbr"]
            size = int(np.prod(k))
            if not (np.all(rc_t < k[:, None]) and size <= 4 * rc_t.shape[1] + 1024):
                return None
            stride = np.r_[np.cumprod(k[::-1])[::-1][1:], 1].astype(np.int64)
            flat = (rc_t * stride[:, None]).sum(axis=0)           # coordinates in range: one number
            if np.bincount(flat, minlength=size).max(initial=0) > 1:
                return None
            by_flat = np.full((len(k), 2, size), -1, np.int64)
            for d, kd in enumerate(k.tolist()):
                for w in (0, 1):
                    go = nbr[:, d, w]
                    r = np.flatnonzero(go >= 0)
                    ahead = flat[r] + (np.mod(rc_t[d, r] + 1 - 2 * w, kd) - rc_t[d, r]) * stride[d]
                    if np.any(flat[f.link_dst[go[r]] - h] != ahead):
                        return None
                    by_flat[d, w, flat] = go
            rows, starts, at = [], np.zeros((len(k), 2), np.int64), 0
            for d, (kd, sd) in enumerate(zip(k.tolist(), stride.tolist())):
                ring = np.arange(size // kd)
                ring0 = (ring // sd) * sd * kd + ring % sd          # each ring's coordinate 0
                q = np.arange(2 * kd)
                for w, leave in ((0, q % kd), (1, -q % kd)):
                    rows.append(by_flat[d, w][ring0[:, None] + leave * sd].ravel())
                    starts[d, w] = at
                    at += rows[-1].size
            t["rings"] = (np.concatenate(rows), starts, stride)
        return t["rings"]

    def _routes_at_once(self, src: np.ndarray, dst: np.ndarray) -> Routes | None:
        """The routes :func:`walk` finds with :meth:`next_link`, computed without walking.

        A flow's route is its NIC link, then per dimension a run of steps one way
        round the ring (the way :meth:`_forward` picks at the start holds at every
        router on the way: going + what is left only shrinks, going - it stays past
        half-way), then the link down to its host.  A run is consecutive entries
        of :meth:`_rings`; every step of every flow is looked up at once and placed
        as the walk lists them (hop by hop, flows ascending in each).  None, for
        the walk to decide and name the fault, where a step has no link or the
        coordinates cannot vouch for the routes.
        """
        f, t = self.fabric, self._t
        rings = self._rings()
        if rings is None:
            return None
        ring_links, starts, stride = rings
        h, n = f.n_hosts, len(src)
        active = np.flatnonzero(src != dst)
        sa, da = src[active], dst[active]
        first = first_links(f, sa, da)
        k, nd, m = t["k"], len(t["k"]), len(active)
        # one row per dimension, one column per flow (rows of a few thousand: numpy's fast case)
        c = t["rc_t"].take(f.link_dst[first] - h, axis=1)
        dc = t["rc_t"].take(f.host_switch[da] - h, axis=1)
        kc = k[:, None]
        delta = dc - c
        fwd = self._forward(c, delta, np.arange(nd)[:, None])
        mod = np.mod(delta, kc)
        steps = np.where(t["per"][:, None], np.where(fwd, mod, kc - mod), np.abs(delta))
        # per dimension d: the hop of its first step, and the ring entry of its first link (the
        # ring: the coordinates before d at the destination's, after d at the source's)
        hop0 = np.empty_like(steps)
        key0 = np.empty_like(steps)
        hop, before, after = np.ones(m, np.int64), np.zeros(m, np.int64), (c * stride[:, None]).sum(axis=0)
        for d in range(nd):
            kd, sd = int(k[d]), int(stride[d])
            hop0[d] = hop
            hop = hop + steps[d]
            after = after - c[d] * sd
            other = before + after
            row = ((other // (sd * kd)) * sd + other % sd) * 2 * kd
            key0[d] = np.where(fwd[d], starts[d, 0] + row + c[d], starts[d, 1] + row + (kd - c[d]) % kd)
            before = before + dc[d] * sd
        length = hop + 1                                     # links: NIC, the runs, down to the host
        cnt = steps.ravel()                                  # (dimension, flow) pairs; their runs end to end
        start = np.cumsum(cnt) - cnt
        who = np.repeat(np.arange(nd * m), cnt)
        along = np.arange(len(who))
        link = ring_links.take((key0.ravel() - start).take(who) + along)
        if np.any(link < 0):
            return None
        grid = np.full((int(length.max(initial=2)), m), -1, np.int64)     # hop x flow, as the walk goes
        grid[0] = first
        grid[length - 1, np.arange(m)] = t["down"][da]
        grid.ravel()[((hop0 * m + np.arange(m)).ravel() - start * m).take(who) + along * m] = link
        used = grid >= 0
        hops = np.zeros(n)
        hops[active] = length
        return Routes(n, np.broadcast_to(active, grid.shape)[used], grid[used].astype(np.int32),
                      np.ones(int(length.sum())), hops)

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
        if "tables" in self._t or not f.single_port:
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

