"""Dimension-order routing on tori, meshes and hypercubes.

A packet corrects its first differing coordinate first, then the next, taking
the shorter way round a ring (the + direction when both are equally short)
and the only way along a mesh line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.distances import host_downlinks, switch_links
from fabscope.routing.routes import Routes, walk


@dataclass(eq=False)
class DimensionOrderRouting:
    fabric: Fabric
    name: str = "dor"
    _t: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        f = self.fabric
        if f.coords is None or f.dims is None:
            raise RoutingError(f"dimension-order routing needs coordinates; {f.name!r} has none")
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
        fwd = np.where(t["per"][dim], np.mod(delta, k) <= k // 2, delta > 0)
        out = t["nbr"][r, dim, np.where(fwd, 0, 1)]
        return np.where(at, t["down"][dst], out)

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return walk(self.fabric, src, dst, self.next_link, self.name)
