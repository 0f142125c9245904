"""D-mod-K on fat trees, computed rather than tabled, for millions of pairs.

Going up from a switch of level l, destination d takes up-port
``(d // stride_l) mod n_up`` where ``stride_l`` is the product of the up-port
counts of the levels below (Zahavi's D-mod-K; it spreads destinations so that
shift permutations meet no contention on a full k-ary n-tree).  Going down,
it takes the cable towards the child whose hosts include d, and among
parallel cables the ``d mod count``-th.  Needs hosts numbered so that the
hosts under every switch are contiguous, as every generator here does.

Destinations are host ports (terminals).  ``d`` is the terminal's number in
an order in which those under every switch are contiguous: terminal order
(host by host), or where that is not (rails: every host has a port under
each rail's switches) rail by rail, port ``p`` of host ``h`` numbered
``p * n_hosts + h`` in effect.  One-port hosts: ``d`` is the host.
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
        n_t = f.n_terminals
        lvl = np.r_[np.zeros(f.n_hosts, np.int64), f.switch_level.astype(np.int64)]
        if f.n_switches and np.any(f.switch_level < 1):
            raise RoutingError(f"dmodk needs switch levels (a tree); {f.name!r} has switches without one")
        down = np.flatnonzero(lvl[f.link_dst] < lvl[f.link_src])
        term = np.full(f.n_links, -1, np.int64)
        term[f.terminal_downlink] = np.arange(n_t)
        bad_node = -1
        orders = [np.arange(n_t, dtype=np.int64)]
        if not f.single_port:                              # rail by rail
            orders.append(np.argsort(np.lexsort((f.terminal_host, f.terminal_port))).astype(np.int64))
        for dkey in orders:
            lo, hi, clo, chi, bad_node = self._ranges(lvl, down, term, dkey)
            if bad_node < 0:
                break
        if bad_node >= 0:
            raise RoutingError(f"dmodk needs the hosts under each switch numbered contiguously; "
                               f"those under {f.node_names[bad_node]} are not")
        h = n_t                                            # the key space below
        # down links sorted by (switch, child lo) with parallel groups
        order = np.lexsort((down, clo, f.link_src[down]))
        ids = down[order]
        clo, chi = clo[order], chi[order]
        key = f.link_src[ids].astype(np.int64) * (h + 1) + clo
        grp_start = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
        grp_len = np.diff(np.r_[grp_start, len(key)])
        self._t.update(lvl=lvl, lo=lo, hi=hi, down_ids=ids, down_key=key[grp_start],
                       grp_start=grp_start, grp_len=grp_len, dkey=None if f.single_port else dkey)
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
        g_lo = clo[grp_start]
        g_hi = chi[grp_start]
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

    def _ranges(self, lvl: np.ndarray, down: np.ndarray, term: np.ndarray, dkey: np.ndarray):
        """Key ranges ``[lo, hi)`` below each node and each down link's child, level by level, and
        the first switch whose children's ranges leave a gap (-1: none)."""
        f = self.fabric
        n_t = len(dkey)
        lo = np.r_[np.zeros(f.n_hosts, np.int64), np.full(f.n_switches, n_t, np.int64)]
        hi = np.r_[np.zeros(f.n_hosts, np.int64), np.full(f.n_switches, -1, np.int64)]
        src_d, dst_d = f.link_src[down].astype(np.int64), f.link_dst[down].astype(np.int64)
        t = term[down]
        at_host = t >= 0
        clo = np.where(at_host, dkey[np.maximum(t, 0)], 0)
        chi = clo + 1
        for level in range(1, int(lvl.max()) + 1):
            m = lvl[src_d] == level
            sw = m & ~at_host
            clo[sw], chi[sw] = lo[dst_d[sw]], hi[dst_d[sw]]
            np.minimum.at(lo, src_d[m], clo[m])
            np.maximum.at(hi, src_d[m], chi[m])
        # contiguity: below each switch, the children's ranges leave no gap
        k_src = src_d * (n_t + 1)
        o = np.lexsort((clo, src_d))
        run = np.maximum.accumulate(k_src[o] + chi[o])
        same = src_d[o][1:] == src_d[o][:-1]
        gap = same & (k_src[o][1:] + clo[o][1:] > run[:-1])
        return lo, hi, clo, chi, (int(src_d[o][1:][gap][0]) if gap.any() else -1)

    def next_link(self, cur: np.ndarray, dst: np.ndarray, hop: int) -> np.ndarray:
        t = self._t
        h = self.fabric.n_terminals
        if t["dkey"] is not None:
            dst = t["dkey"][dst]
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

    def terminal_routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return walk(self.fabric, src, dst, self.next_link, self.name, terminals=True)
