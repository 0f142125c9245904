"""D-mod-K on fat trees, computed rather than tabled, for millions of pairs.

Going up from a switch of level l, destination d takes up-port
``(d // stride_l) mod n_up`` where ``stride_l`` is the product of the up-port
counts of the levels below (Zahavi's D-mod-K; it spreads destinations so that
shift permutations meet no contention on a full k-ary n-tree).  Going down,
it takes the cable towards the child whose hosts include d, and among
parallel cables the ``d mod count``-th.  Needs hosts numbered so that the
hosts under every switch are contiguous, as every generator here does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.routes import Routes, walk


@dataclass(eq=False)
class DModKRouting:
    fabric: Fabric
    name: str = "dmodk"
    _t: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        f = self.fabric
        h = f.n_hosts
        lvl = np.r_[np.zeros(h, np.int64), f.switch_level.astype(np.int64)]
        if f.n_switches and np.any(f.switch_level < 1):
            raise RoutingError(f"dmodk needs switch levels (a tree); {f.name!r} has switches without one")
        lo = np.r_[np.arange(h), np.full(f.n_switches, h)].astype(np.int64)
        hi = np.r_[np.arange(1, h + 1), np.full(f.n_switches, -1)].astype(np.int64)
        down = lvl[f.link_dst] < lvl[f.link_src]
        src_d, dst_d = f.link_src[down].astype(np.int64), f.link_dst[down].astype(np.int64)
        for level in range(1, int(lvl.max()) + 1):
            m = lvl[src_d] == level
            np.minimum.at(lo, src_d[m], lo[dst_d[m]])
            np.maximum.at(hi, src_d[m], hi[dst_d[m]])
        # contiguity: below each switch, the children's host ranges leave no gap
        k_src = src_d * (h + 1)
        o = np.lexsort((lo[dst_d], src_d))
        run = np.maximum.accumulate(k_src[o] + hi[dst_d[o]])
        same = src_d[o][1:] == src_d[o][:-1]
        gap = same & (k_src[o][1:] + lo[dst_d[o]][1:] > run[:-1])
        if gap.any():
            bad = int(src_d[o][1:][gap][0])
            raise RoutingError(f"dmodk needs the hosts under each switch numbered contiguously; "
                               f"those under {f.node_names[bad]} are not")
        # down links sorted by (switch, child lo) with parallel groups
        ids = np.flatnonzero(down)
        order = np.lexsort((ids, lo[f.link_dst[ids]], f.link_src[ids]))
        ids = ids[order]
        key = f.link_src[ids].astype(np.int64) * (h + 1) + lo[f.link_dst[ids]]
        grp_start = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
        grp_len = np.diff(np.r_[grp_start, len(key)])
        self._t.update(lvl=lvl, lo=lo, hi=hi, down_ids=ids, down_key=key[grp_start],
                       grp_start=grp_start, grp_len=grp_len)
        # up links per switch in link order
        up = np.flatnonzero(lvl[f.link_dst] > lvl[f.link_src])
        up = up[np.lexsort((up, f.link_src[up]))]
        n_up = np.bincount(f.link_src[up], minlength=f.n_nodes)
        up_ptr = np.r_[0, np.cumsum(n_up)]
        stride = np.ones(int(lvl.max()) + 1, np.int64)      # per level; hosts (level 0) 1
        s = 1
        for level in range(1, len(stride)):
            stride[level] = s
            sw = np.flatnonzero(lvl == level)
            s *= max(int(n_up[sw].max()) if len(sw) else 1, 1)
        # a switch whose children's host ranges are all as wide, one after the other from its
        # own lo, finds the child of a destination by division (every generated tree); the
        # others search the sorted keys (next_link)
        g_sw = f.link_src[ids[grp_start]].astype(np.int64)
        sw_start = np.r_[0, np.flatnonzero(np.diff(g_sw)) + 1]   # groups are sorted by switch
        first = np.full(f.n_nodes, -1, np.int64)
        first[g_sw[sw_start]] = sw_start
        g_lo = lo[f.link_dst[ids[grp_start]]]
        g_hi = hi[f.link_dst[ids[grp_start]]]
        width = np.zeros(f.n_nodes, np.int64)
        width[g_sw] = g_hi - g_lo                           # some group's width (all equal if uniform)
        j = np.arange(grp_start.size) - first[g_sw]
        ok = (g_hi - g_lo == width[g_sw]) & (g_lo == lo[g_sw] + j * width[g_sw])
        uniform = np.zeros(f.n_nodes, bool)
        uniform[g_sw] = True
        np.logical_and.at(uniform, g_sw, ok)
        uniform &= width > 0
        self._t.update(up=up, up_ptr=up_ptr, n_up=n_up, stride=stride[lvl], first_group=first,
                       width=np.where(uniform, width, 0))

    def next_link(self, cur: np.ndarray, dst: np.ndarray, hop: int) -> np.ndarray:
        t = self._t
        h = self.fabric.n_hosts
        below = (t["lo"][cur] <= dst) & (dst < t["hi"][cur])
        out = np.empty(len(cur), dtype=np.int64)
        if below.any():
            c, d = cur[below], dst[below]
            wd = t["width"][c]
            g = np.empty(len(c), np.int64)
            u = wd > 0
            g[u] = t["first_group"][c[u]] + (d[u] - t["lo"][c[u]]) // wd[u]
            if not u.all():
                g[~u] = np.searchsorted(t["down_key"], c[~u] * (h + 1) + d[~u], side="right") - 1
            out[below] = t["down_ids"][t["grp_start"][g] + d % t["grp_len"][g]]
        upm = ~below
        if upm.any():
            c, d = cur[upm], dst[upm]
            n_up = t["n_up"][c]
            if np.any(n_up == 0):
                return np.where(upm, -1, out)
            out[upm] = t["up"][t["up_ptr"][c] + (d // t["stride"][c]) % n_up]
        return out

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return walk(self.fabric, src, dst, self.next_link, self.name)
