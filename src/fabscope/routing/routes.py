"""Routes as arrays: which links each flow crosses, with what share of its rate.

A :class:`Routes` is the flow-by-link incidence in coordinate form: entry
``i`` says flow ``flow[i]`` puts ``weight[i]`` of its rate on link
``link[i]``.  Single-path routings give weight 1; the adaptive bound splits a
flow over its minimal paths and gives fractions that sum to 1 at each hop.
Flows between ranks of one host cross no link.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric


@dataclass(frozen=True, eq=False)
class Routes:
    n_flows: int
    flow: np.ndarray
    link: np.ndarray
    weight: np.ndarray
    #: hops of each flow (links crossed, host links included; mean over paths when split)
    hops: np.ndarray

    def matrix(self, n_links: int):
        """Sparse links x flows incidence (CSR) with the weights."""
        from scipy.sparse import csr_matrix

        return csr_matrix((self.weight, (self.link, self.flow)), shape=(n_links, self.n_flows))

    def path(self, f: int) -> list[int]:
        """Links of flow ``f`` in the order crossed (single-path routes)."""
        return self.link[self.flow == f].tolist()


#: next_link(current node indices, destination hosts, hop number) -> link ids (-1: none)
NextLink = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


def first_links(fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The NIC port each flow leaves its host by (spread by destination over a host's ports)."""
    indptr, order = fabric.host_uplinks
    n_ports = indptr[src + 1] - indptr[src]
    return order[indptr[src] + dst % n_ports]


def walk(fabric: Fabric, src: np.ndarray, dst: np.ndarray, next_link: NextLink, engine: str) -> Routes:
    """Follow ``next_link`` hop by hop from every source host to its destination host.

    Raises :class:`RoutingError` naming the first pair that has no entry, or
    that loops (more hops than the fabric has nodes).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    n = len(src)
    active = np.flatnonzero(src != dst)
    flows = [active]
    links = [first_links(fabric, src[active], dst[active]).astype(np.int32)]
    cur = fabric.link_dst[links[0]].astype(np.int64)
    hops = np.zeros(n, dtype=np.int32)
    hops[active] = 1
    hop = 1
    while len(active):
        arrived = cur == dst[active]
        if arrived.any():
            keep = ~arrived
            active, cur = active[keep], cur[keep]
            if not len(active):
                break
        hosts_mid = cur < fabric.n_hosts
        if hosts_mid.any():
            f = int(active[np.flatnonzero(hosts_mid)[0]])
            raise RoutingError(f"{engine}: route {fabric.node_names[src[f]]} -> {fabric.node_names[dst[f]]} "
                               f"reaches host {fabric.node_names[cur[hosts_mid][0]]} on the way")
        nxt = next_link(cur, dst[active], hop)
        bad = nxt < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            f = int(active[i])
            raise RoutingError(f"{engine}: switch {fabric.node_names[cur[i]]} has no route to "
                               f"{fabric.node_names[dst[f]]} (from {fabric.node_names[src[f]]})")
        wrong = fabric.link_src[nxt] != cur
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise RoutingError(f"{engine}: switch {fabric.node_names[cur[i]]} forwards by link {int(nxt[i])}, "
                               f"which leaves {fabric.node_names[fabric.link_src[nxt[i]]]}")
        flows.append(active)
        links.append(nxt.astype(np.int32))
        hops[active] += 1
        cur = fabric.link_dst[nxt].astype(np.int64)
        hop += 1
        if hop > fabric.n_nodes:
            f = int(active[0])
            raise RoutingError(f"{engine}: route {fabric.node_names[src[f]]} -> {fabric.node_names[dst[f]]} "
                               f"loops (more than {fabric.n_nodes} hops)")
    flow = np.concatenate(flows) if flows else np.zeros(0, np.int64)
    link = np.concatenate(links) if links else np.zeros(0, np.int32)
    return Routes(n, flow, link, np.ones(len(link)), hops.astype(float))


def check_routes(fabric: Fabric, src: np.ndarray, dst: np.ndarray, routes: Routes) -> None:
    """Check single-path routes: each starts at its source, ends at its destination,
    and every link leaves the node the previous one entered.  Raises RoutingError."""
    order = np.lexsort((np.arange(len(routes.flow)), routes.flow))
    f, l = routes.flow[order], routes.link[order]
    if np.any(routes.weight != 1):
        raise RoutingError("check_routes checks single-path routes only")
    starts = np.r_[0, np.flatnonzero(np.diff(f)) + 1]
    ends = np.r_[starts[1:], len(f)] - 1
    ff = f[starts]
    if np.any(fabric.link_src[l[starts]] != src[ff]):
        raise RoutingError(f"a route does not start at its source host (flow {int(ff[np.flatnonzero(fabric.link_src[l[starts]] != src[ff])[0]])})")
    if np.any(fabric.link_dst[l[ends]] != dst[ff]):
        raise RoutingError(f"a route does not end at its destination host (flow {int(ff[np.flatnonzero(fabric.link_dst[l[ends]] != dst[ff])[0]])})")
    same = f[1:] == f[:-1]
    broken = same & (fabric.link_dst[l[:-1]] != fabric.link_src[l[1:]])
    if broken.any():
        raise RoutingError(f"route of flow {int(f[1:][broken][0])} jumps between links")
    covered = np.zeros(len(src), bool)
    covered[ff] = True
    missing = np.flatnonzero(~covered & (src != dst))
    if len(missing):
        raise RoutingError(f"flow {int(missing[0])} has no route")
