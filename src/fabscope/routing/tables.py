"""Destination-based forwarding tables, as InfiniBand switches hold them.

``lft[s, d]`` is the link switch ``s`` forwards packets for host ``d`` by
(``-1``: no entry).  Tables come from the min-hop engine here, from OpenSM's
dumps (importers), or from any engine that fills them.

The min-hop engine works the way OpenSM's ``minhop`` does: destinations are
taken in LID order (host index order here), and each switch sends a
destination out of the least-used of its ports that lie on a shortest path,
the lowest port number breaking ties.  Counting "least used" per port over
all destinations is what balances routes overall and still lets a handful of
flows meet on one cable, as Itasca's did (seed 000).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.distances import host_downlinks, switch_distances, switch_links
from fabscope.routing.routes import Routes, walk


@dataclass(frozen=True, eq=False)
class TableRouting:
    """Route by forwarding tables: ``lft`` has shape (n_switches, n_hosts)."""

    fabric: Fabric
    lft: np.ndarray
    name: str = "tables"

    def __post_init__(self) -> None:
        shape = (self.fabric.n_switches, self.fabric.n_hosts)
        if self.lft.shape != shape:
            raise RoutingError(f"forwarding tables of shape {self.lft.shape}, the fabric needs {shape}")

    def next_link(self, cur: np.ndarray, dst: np.ndarray, hop: int) -> np.ndarray:
        return self.lft[cur - self.fabric.n_hosts, dst]

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return walk(self.fabric, src, dst, self.next_link, self.name)


def minhop_tables(fabric: Fabric) -> np.ndarray:
    """Forwarding tables of the OpenSM-like min-hop engine (see the module docstring).

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=2, levels=2)
    >>> lft = minhop_tables(f)
    >>> [f.link_name(l) for l in lft[0]]      # leaf s1-0000 towards each host
    ['s1-0000[1] -> h0000[1]', 's1-0000[2] -> h0001[1]', 's1-0000[3] -> s2-0000[1]', 's1-0000[4] -> s2-0001[1]']
    """
    h, s = fabric.n_hosts, fabric.n_switches
    dist = switch_distances(fabric)
    sl = switch_links(fabric)
    # switch-to-switch links grouped by source switch, in port order
    order = np.lexsort((fabric.link_src_port[sl], sl, fabric.link_src[sl]))
    sl = sl[order]
    ls = fabric.link_src[sl].astype(np.int64) - h
    lv = fabric.link_dst[sl].astype(np.int64) - h
    port = fabric.link_src_port[sl].astype(np.int64)
    seg = np.r_[0, np.flatnonzero(np.diff(ls)) + 1]
    seg_sw = ls[seg]
    seg_id = np.repeat(np.arange(len(seg)), np.diff(np.r_[seg, len(ls)]))
    used = np.zeros(len(sl), dtype=np.int64)
    lft = np.full((s, h), -1, dtype=np.int32)
    down = host_downlinks(fabric)
    tsw = fabric.host_switch.astype(np.int64) - h
    big = np.int64(1) << 40
    pos = np.arange(len(sl))
    for d in range(h):
        t = tsw[d]
        dt = dist[:, t].astype(np.int64)
        cand = (dt[lv] == dt[ls] - 1) & (dt[ls] > 0)
        key = np.where(cand, used * 65536 + port, big)
        best = np.minimum.reduceat(key, seg)
        ok = best < big
        # position of the first link per segment whose key equals the segment's best
        hit = cand & (key == best[seg_id])
        first = np.minimum.reduceat(np.where(hit, pos, len(sl)), seg)
        chosen = first[ok]
        lft[seg_sw[ok], d] = sl[chosen]
        used[chosen] += 1
        lft[t, d] = down[d]
    return lft
