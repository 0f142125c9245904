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
from fabscope.routing.routes import Routes, walk

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
        k = t["k"][dim]
        m = np.mod(delta, k)
        fwd = np.where(t["per"][dim], m <= k // 2, delta > 0)
        if self.tie == "simgrid":
            ci = c[np.arange(len(r)), dim]
            fwd &= ~((2 * m == k) & (2 * ci == k))

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
        return walk(self.fabric, src, dst, self.next_link, self.name)
