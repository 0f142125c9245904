"""Destination-based forwarding tables, as InfiniBand switches hold them.

``lft[s, t]`` is the link switch ``s`` forwards packets for terminal ``t``
(host port, :meth:`Fabric.terminal`; the host where hosts have one port) by
(``-1``: no entry), as a switch's LFT holds an entry per port LID.  Tables come from the min-hop engine here, from OpenSM's
dumps (importers), or from any engine that fills them.

The min-hop engine works the way OpenSM's ``minhop`` does: destinations are
taken in the order of OpenSM's unicast manager (:func:`destination_order`:
switches with most host ports first, then GUID order, each switch's host ports in port
order), and each switch sends a destination out of the least-used of its
ports that lie on a shortest path, the lowest port number breaking ties.
:func:`balanced_tables` is that manager; ``updn`` and ``dor`` feed it other
hop counts or candidates, as OpenSM's engines of those names do.  Counting "least used" per port over
all destinations is what balances routes overall and still lets a handful of
flows meet on one cable, as Itasca's did (seed 000).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.distances import switch_distances, switch_links
from fabscope.routing.routes import Routes, walk


@dataclass(frozen=True, eq=False)
class TableRouting:
    """Route by forwarding tables: ``lft`` has shape (n_switches, n_terminals)."""

    fabric: Fabric
    lft: np.ndarray
    name: str = "tables"

    def __post_init__(self) -> None:
        shape = (self.fabric.n_switches, self.fabric.n_terminals)
        if self.lft.shape != shape:
            raise RoutingError(f"forwarding tables of shape {self.lft.shape}, the fabric needs {shape}")

    def next_link(self, cur: np.ndarray, dst: np.ndarray, hop: int) -> np.ndarray:
        return self.lft[cur - self.fabric.n_hosts, dst]

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return walk(self.fabric, src, dst, self.next_link, self.name)

    def terminal_routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return walk(self.fabric, src, dst, self.next_link, self.name, terminals=True)


def switch_guid_rank(fabric: Fabric) -> np.ndarray:
    """Rank of each switch in OpenSM's GUID order (its switch table is a map keyed by GUID).

    ``params["switch_guids"]`` (one per switch) where the fabric carries them; otherwise
    switch index order, which is the GUID order ibsim gives a fabric exported by fabscope
    (GUIDs are handed out in net file order).
    """
    g = fabric.params.get("switch_guids")
    if g is not None and len(g) == fabric.n_switches:
        return np.argsort(np.argsort(np.asarray(g, dtype=np.uint64), kind="stable"), kind="stable")
    return np.arange(fabric.n_switches)


def destination_order(fabric: Fabric) -> np.ndarray:
    """Terminals (host ports) in the order OpenSM's unicast manager routes them.

    ``sort_ports_by_switch_load``: switches with the most end ports first (ties in
    GUID order), and the end ports of each switch in the order of its ports.

    >>> from fabscope.fabric.generators import fat_tree
    >>> destination_order(fat_tree(k=2, levels=2)).tolist()
    [0, 1, 2, 3]
    """
    up = fabric.terminal_uplink
    sw = fabric.link_dst[up].astype(np.int64) - fabric.n_hosts
    port = fabric.link_dst_port[up].astype(np.int64)
    load = np.bincount(sw, minlength=fabric.n_switches)
    rank = switch_guid_rank(fabric)
    return np.lexsort((np.arange(len(up)), port, rank[sw], -load[sw]))


@dataclass(frozen=True, eq=False)
class SwitchPorts:
    """Switch-to-switch links grouped by source switch, in port order (OpenSM's port scan)."""

    link: np.ndarray      # link ids
    src: np.ndarray       # source switch (0-based)
    dst: np.ndarray       # remote switch (0-based)
    port: np.ndarray
    seg: np.ndarray       # start of each source switch's run
    seg_sw: np.ndarray
    seg_id: np.ndarray

    @classmethod
    def of(cls, fabric: Fabric) -> "SwitchPorts":
        h = fabric.n_hosts
        sl = switch_links(fabric)
        sl = sl[np.lexsort((sl, fabric.link_src_port[sl], fabric.link_src[sl]))]
        ls = fabric.link_src[sl].astype(np.int64) - h
        seg = np.r_[0, np.flatnonzero(np.diff(ls)) + 1] if len(sl) else np.zeros(0, np.int64)
        return cls(sl, ls, fabric.link_dst[sl].astype(np.int64) - h, fabric.link_src_port[sl].astype(np.int64),
                   seg, ls[seg], np.repeat(np.arange(len(seg)), np.diff(np.r_[seg, len(ls)])))


#: "no path" in hop arrays
NO_PATH = np.int64(1) << 30


def balanced_tables(fabric: Fabric, hops_to, *, dor: bool = False, ports: SwitchPorts | None = None) -> np.ndarray:
    """Forwarding tables the way OpenSM's unicast manager fills them from a hop matrix.

    ``hops_to(t)`` gives, for every link of ``ports`` (a :class:`SwitchPorts`), the hops
    from its source switch to switch ``t`` when leaving by it (:data:`NO_PATH`: none).
    Destinations are taken in :func:`destination_order`; each switch sends one out of
    the least-used of its least-hop ports, the lowest port breaking ties
    (``osm_switch_recommend_path``).  With ``dor`` only the ports towards the remote
    switch of the first least-hop port in port order are candidates (OpenSM's ``dor``).
    Uses count host destinations only (switch LIDs are not counted by default).
    """
    h, s = fabric.n_hosts, fabric.n_switches
    sp = ports or SwitchPorts.of(fabric)
    lft = np.full((s, fabric.n_terminals), -1, dtype=np.int32)
    down = fabric.terminal_downlink
    tsw = fabric.terminal_switch - h
    if not len(sp.link):
        lft[tsw, np.arange(fabric.n_terminals)] = down
        return lft
    used = np.zeros(len(sp.link), dtype=np.int64)
    big = np.int64(1) << 50
    pos = np.arange(len(sp.link))
    cache: dict[int, np.ndarray] = {}
    for d in destination_order(fabric).tolist():
        t = int(tsw[d])
        cand = cache.get(t)
        if cand is None:
            hops = np.asarray(hops_to(t), dtype=np.int64)
            least = np.minimum.reduceat(hops, sp.seg)
            cand = (hops == least[sp.seg_id]) & (hops < NO_PATH) & (sp.src != t)
            if dor:
                firstpos = np.minimum.reduceat(np.where(cand, pos, len(pos)), sp.seg)
                okseg = firstpos < len(pos)
                first_dst = np.where(okseg, sp.dst[np.minimum(firstpos, len(pos) - 1)], -1)
                cand &= sp.dst == first_dst[sp.seg_id]
            cache[t] = cand
        key = np.where(cand, used * 65536 + sp.port, big)
        best = np.minimum.reduceat(key, sp.seg)
        ok = best < big
        hit = cand & (key == best[sp.seg_id])
        chosen = np.minimum.reduceat(np.where(hit, pos, len(pos)), sp.seg)[ok]
        lft[sp.seg_sw[ok], d] = sp.link[chosen]
        used[chosen] += 1
        lft[t, d] = down[d]
    return lft


def minhop_hops(fabric: Fabric, ports: SwitchPorts):
    """``hops_to`` of OpenSM's min-hop matrices: one more than the remote switch's distance."""
    dist = switch_distances(fabric)

    def hops_to(t: int) -> np.ndarray:
        dv = dist[ports.dst, t].astype(np.int64)
        return np.where(dv >= 0, dv + 1, NO_PATH)

    return hops_to


def minhop_tables(fabric: Fabric, *, dor: bool = False) -> np.ndarray:
    """Forwarding tables of the OpenSM-like min-hop engine (see the module docstring);
    ``dor``: OpenSM's ``dor`` (the first least-hop port in port order decides the way).

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=2, levels=2)
    >>> lft = minhop_tables(f)
    >>> [f.link_name(l) for l in lft[0]]      # leaf s1-0000 towards each host
    ['s1-0000[1] -> h0000[1]', 's1-0000[2] -> h0001[1]', 's1-0000[3] -> s2-0000[1]', 's1-0000[4] -> s2-0001[1]']
    """
    sp = SwitchPorts.of(fabric)
    return balanced_tables(fabric, minhop_hops(fabric, sp), dor=dor, ports=sp)
