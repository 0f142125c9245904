"""Routes as arrays: which links each flow crosses, with what share of its rate.

A :class:`Routes` is the flow-by-link incidence in coordinate form: entry
``i`` says flow ``flow[i]`` puts ``weight[i]`` of its rate on link
``link[i]``.  Single-path routings give weight 1; the adaptive bound splits a
flow over its minimal paths and gives fractions that sum to 1 at each hop.
Flows between ranks of one host cross no link.

Engines route *terminals* (host ports, :meth:`Fabric.terminal`): a route
leaves by the source port's cable and ends on the cable into the destination
port, the one its traffic addresses (as a LID does).  ``routes(src, dst)``
takes hosts and routes each pair between one port of each
(:func:`host_terminals`); ``terminal_routes(src, dst)`` takes terminals.
Where every host has one port the two are the same.
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


#: next_link(current node indices, destination terminals, hop number) -> link ids (-1: none)
NextLink = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


def host_terminals(fabric: Fabric, src, dst) -> tuple[np.ndarray, np.ndarray]:
    """The port pair a host pair's route takes when no policy says which: the source's port
    ``dst mod its ports`` (spread by destination), and the destination's port of the same index
    (mod its ports), so that a route stays on one rail where the rails are planes.  Identity
    where every host has one port.

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=2, levels=2, rails=2)
    >>> [t.tolist() for t in host_terminals(f, [0, 0], [1, 2])]
    [[1, 0], [3, 4]]
    """
    return fabric.host_pair_terminals(src, dst)


def first_links(fabric: Fabric, src: np.ndarray, dst: np.ndarray, *, terminals: bool = False) -> np.ndarray:
    """The port each flow leaves its host by: of source terminals, or of host pairs by
    :func:`host_terminals`."""
    if not terminals:
        src, _ = host_terminals(fabric, src, dst)
    return fabric.terminal_uplink[np.asarray(src, dtype=np.int64)]


def terminal_routes(router, src, dst, fabric: Fabric | None = None) -> Routes:
    """``router``'s routes between terminals: its ``terminal_routes`` where it has one; an engine
    that routes hosts only routes fabrics whose hosts have one port (terminal = host): ``fabric``
    (default: the router's own) says whether they do."""
    fn = getattr(router, "terminal_routes", None)
    if fn is not None:
        return fn(src, dst)
    fabric = fabric if fabric is not None else getattr(router, "fabric", None)
    if fabric is not None and not fabric.single_port:
        raise RoutingError(f"routing {router.name!r} routes hosts with one port only; "
                           f"fabric {fabric.name!r} has hosts with several")
    return router.routes(src, dst)


def _pair(fabric: Fabric, s: int, d: int) -> str:
    return f"{fabric.terminal_label(s)} -> {fabric.terminal_label(d)}"


def walk(fabric: Fabric, src: np.ndarray, dst: np.ndarray, next_link: NextLink, engine: str,
         *, terminals: bool = False) -> Routes:
    """Follow ``next_link`` hop by hop from every source to its destination: host pairs (each by
    :func:`host_terminals`), or terminal pairs with ``terminals``.  ``next_link`` is given
    destination terminals.  Pairs on one host cross no link.

    Raises :class:`RoutingError` naming the first pair that has no entry, that
    loops (more hops than the fabric has nodes), or that reaches its host by
    another of its ports.
    """
    if not terminals:
        src, dst = host_terminals(fabric, src, dst)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    n = len(src)
    th = fabric.terminal_host
    dst_host = dst if fabric.single_port else th[dst]
    active = np.flatnonzero((src != dst) if fabric.single_port else (th[src] != dst_host))
    flows = [active]
    links = [fabric.terminal_uplink[src[active]].astype(np.int32)]
    cur = fabric.link_dst[links[0]].astype(np.int64)
    last = links[0]
    hops = np.zeros(n, dtype=np.int32)
    hops[active] = 1
    hop = 1
    while len(active):
        arrived = cur == dst_host[active]
        if arrived.any():
            if not fabric.single_port:
                wrong = arrived & (last != fabric.terminal_downlink[dst[active]])
                if wrong.any():
                    f = int(active[np.flatnonzero(wrong)[0]])
                    raise RoutingError(f"{engine}: route {_pair(fabric, src[f], dst[f])} reaches its host "
                                       f"by another port ({fabric.link_name(int(last[wrong][0]))})")
            keep = ~arrived
            active, cur, last = active[keep], cur[keep], last[keep]
            if not len(active):
                break
        hosts_mid = cur < fabric.n_hosts
        if hosts_mid.any():
            f = int(active[np.flatnonzero(hosts_mid)[0]])
            raise RoutingError(f"{engine}: route {_pair(fabric, src[f], dst[f])} "
                               f"reaches host {fabric.node_names[cur[hosts_mid][0]]} on the way")
        nxt = next_link(cur, dst[active], hop)
        bad = nxt < 0
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            f = int(active[i])
            raise RoutingError(f"{engine}: switch {fabric.node_names[cur[i]]} has no route to "
                               f"{fabric.terminal_label(dst[f])} (from {fabric.terminal_label(src[f])})")
        wrong = fabric.link_src[nxt] != cur
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise RoutingError(f"{engine}: switch {fabric.node_names[cur[i]]} forwards by link {int(nxt[i])}, "
                               f"which leaves {fabric.node_names[fabric.link_src[nxt[i]]]}")
        flows.append(active)
        links.append(nxt.astype(np.int32))
        hops[active] += 1
        cur = fabric.link_dst[nxt].astype(np.int64)
        last = nxt
        hop += 1
        if hop > fabric.n_nodes:
            f = int(active[0])
            raise RoutingError(f"{engine}: route {_pair(fabric, src[f], dst[f])} "
                               f"loops (more than {fabric.n_nodes} hops)")
    flow = np.concatenate(flows) if flows else np.zeros(0, np.int64)
    link = np.concatenate(links) if links else np.zeros(0, np.int32)
    return Routes(n, flow, link, np.ones(len(link)), hops.astype(float))


def check_routes(fabric: Fabric, src: np.ndarray, dst: np.ndarray, routes: Routes, *,
                 terminals: bool = False) -> None:
    """Check single-path routes: each starts at its source, ends at its destination,
    and every link leaves the node the previous one entered.  Raises RoutingError.
    Host pairs by default (as :func:`host_terminals` picks their ports); ``terminals``:
    terminal pairs, each route from its source port's cable to the one into its destination port."""
    if not terminals:
        src, dst = host_terminals(fabric, src, dst)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if np.isin(routes.flow, np.flatnonzero(fabric.terminal_host[src] == fabric.terminal_host[dst])).any():
        raise RoutingError("a route between two ports of one host crosses links")
    order = np.lexsort((np.arange(len(routes.flow)), routes.flow))
    f, l = routes.flow[order], routes.link[order]
    if np.any(routes.weight != 1):
        raise RoutingError("check_routes checks single-path routes only")
    starts = np.r_[0, np.flatnonzero(np.diff(f)) + 1]
    ends = np.r_[starts[1:], len(f)] - 1
    ff = f[starts]
    up, down = fabric.terminal_uplink[src[ff]], fabric.terminal_downlink[dst[ff]]
    if np.any(l[starts] != up):
        raise RoutingError(f"a route does not start at its source port (flow {int(ff[np.flatnonzero(l[starts] != up)[0]])})")
    if np.any(l[ends] != down):
        raise RoutingError(f"a route does not end at its destination port (flow {int(ff[np.flatnonzero(l[ends] != down)[0]])})")
    same = f[1:] == f[:-1]
    broken = same & (fabric.link_dst[l[:-1]] != fabric.link_src[l[1:]])
    if broken.any():
        raise RoutingError(f"route of flow {int(f[1:][broken][0])} jumps between links")
    covered = np.zeros(len(src), bool)
    covered[ff] = True
    missing = np.flatnonzero(~covered & (fabric.terminal_host[src] != fabric.terminal_host[dst]))
    if len(missing):
        raise RoutingError(f"flow {int(missing[0])} has no route")
