"""Up*/down* routing as OpenSM 3.3.23's ``updn`` engine computes it.

1. Roots: the switches named, or, when none are, those from which (nearly) all
   hosts lie at one distance: one bar of the histogram of host distances above
   90% of the hosts and no other above 5% (``updn_find_root_nodes_by_min_hop``).
2. Ranks: breadth-first distance from the nearest root.
3. For each destination switch a breadth-first search outwards, in switch GUID
   order and port order, that never takes a step from "down" to "up" (a step
   towards a lower rank is up; equal ranks: towards the bigger GUID is up;
   root to root is up), sets the hop count of the port it arrives by.  A
   switch's direction is set when it is queued; it can be queued again (with
   a new direction) once dequeued, when a longer route reaches a port not yet
   counted: that is OpenSM's search, kept as is.
4. The unicast manager fills the tables from those hop counts exactly as for
   minhop (:func:`fabscope.routing.tables.balanced_tables`).

Switch GUIDs: :func:`fabscope.routing.tables.switch_guid_rank`.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)
>>> [f.node_names[f.n_hosts + s] for s in updn_roots(f)]
['s2-0000', 's2-0001']
>>> r = UpDownRouting(f).routes([0], [3])
>>> [f.link_name(l) for l in r.path(0)][1]
's1-0000[4] -> s2-0001[1]'
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.distances import switch_distances
from fabscope.routing.routes import Routes
from fabscope.routing.tables import NO_PATH, SwitchPorts, TableRouting, balanced_tables, switch_guid_rank


def switch_indices(fabric: Fabric, names: Sequence[str], what: str) -> list[int]:
    """Switch numbers (0-based) of switch names; one line naming the first unknown one."""
    out = []
    for nm in names:
        v = fabric.node_index.get(nm)
        if v is None or v < fabric.n_hosts:
            raise RoutingError(f"{what}: no switch {nm!r} in fabric {fabric.name!r}")
        out.append(v - fabric.n_hosts)
    return out


def updn_roots(fabric: Fabric) -> list[int]:
    """Switches OpenSM's updn takes as roots when none are given (0-based switch numbers)."""
    h = fabric.n_hosts
    dist = switch_distances(fabric)
    indptr, order = fabric.host_uplinks
    ca_sw = fabric.link_dst[order].astype(np.int64) - h      # every host port counts
    per_sw = np.bincount(ca_sw, minlength=fabric.n_switches)
    n = len(ca_sw)
    thd1, thd2 = n * 0.9, n * 0.05
    roots = []
    for s in np.argsort(switch_guid_rank(fabric), kind="stable").tolist():
        d = dist[s].astype(np.int64)
        ok = (d >= 0) & (per_sw > 0)
        hist = np.bincount(d[ok], weights=per_sw[ok]) if ok.any() else np.zeros(1)
        if np.sum(hist > thd1) == 1 and np.sum(hist > thd2) == 1:
            roots.append(s)
    return roots


def updn_ranks(fabric: Fabric, roots: Sequence[int], ports: SwitchPorts) -> np.ndarray:
    s = fabric.n_switches
    rank = np.full(s, 1 << 30, np.int64)
    rank[list(roots)] = 0
    nbrs = _neighbours(ports, s)
    q = deque(sorted(roots, key=lambda x: switch_guid_rank(fabric)[x]))
    while q:
        u = q.popleft()
        for _, v, _ in nbrs[u]:
            if rank[v] > rank[u] + 1:
                rank[v] = rank[u] + 1
                q.append(v)
    return rank


def _neighbours(ports: SwitchPorts, s: int) -> list[list[tuple[int, int, int]]]:
    """Per switch, in port order: (index into ports of the link out, remote switch, index of the link back)."""
    back = {}
    for i, (a, b, link) in enumerate(zip(ports.src.tolist(), ports.dst.tolist(), ports.link.tolist())):
        back[link] = i
    out: list[list[tuple[int, int, int]]] = [[] for _ in range(s)]
    for i, (a, b, link) in enumerate(zip(ports.src.tolist(), ports.dst.tolist(), ports.link.tolist())):
        out[a].append((i, b, back[link ^ 1]))
    return out


def updn_hops(fabric: Fabric, roots: Sequence[int], ports: SwitchPorts) -> np.ndarray:
    """Hop counts (switch-to-switch links of ``ports`` x destination switch) of OpenSM's updn search."""
    s = fabric.n_switches
    rank = updn_ranks(fabric, roots, ports)
    gid = switch_guid_rank(fabric)
    nbrs = _neighbours(ports, s)
    hops = np.full((s, len(ports.link)), NO_PATH, np.int64)
    UP, DOWN = 0, 1
    rk, gd = rank.tolist(), gid.tolist()
    for t in np.argsort(gid, kind="stable").tolist():
        hp = [int(NO_PATH)] * len(ports.link)
        least = [int(NO_PATH)] * s
        least[t] = 0
        dirn = [UP] * s
        queued = [False] * s
        q = deque([t])
        while q:
            u = q.popleft()
            queued[u] = False
            cur = dirn[u]
            ru, gu = rk[u], gd[u]
            for _, v, back in nbrs[u]:
                rv = rk[v]
                if ru == 0 and rv == 0:
                    nd = UP
                elif ru < rv:
                    nd = DOWN
                elif ru > rv:
                    nd = UP
                else:
                    nd = UP if gu > gd[v] else DOWN
                if cur == DOWN and nd == UP:
                    continue
                c = least[u] + 1
                if c < hp[back]:
                    hp[back] = c
                    if c < least[v]:
                        least[v] = c
                    if not queued[v]:
                        dirn[v] = nd
                        queued[v] = True
                        q.append(v)
        hops[t] = hp
    return hops


@dataclass(eq=False)
class UpDownRouting:
    """OpenSM's ``updn`` on ``fabric``; ``roots``: switch names (default: found as OpenSM does)."""

    fabric: Fabric
    roots: Sequence[str] | None = None
    name: str = "updn"
    _tables: TableRouting | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        f = self.fabric
        root_ids = switch_indices(f, self.roots, "updn roots") if self.roots else updn_roots(f)
        if not root_ids:
            raise RoutingError(f"updn finds no root switches in {f.name!r} (OpenSM falls back to minhop); "
                               "name them: updn:roots=SW1+SW2")
        sp = SwitchPorts.of(f)
        hops = updn_hops(f, root_ids, sp)
        self.root_ids = root_ids
        self.lft = balanced_tables(f, lambda t: hops[t], ports=sp)
        self._tables = TableRouting(f, self.lft, name=self.name)

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return self._tables.routes(src, dst)

    def terminal_routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return self._tables.terminal_routes(src, dst)
