"""Adaptive routing as a switch does it: each switch picks, among its minimal next hops, the output
that carries the least load so far.

InfiniBand adaptive routing (and Ethernet's flowlet switching) chooses per packet among the ports a
switch may use towards a destination by their queues; on a fat tree the choice is among the up ports,
the way down being unique.  The flow model has no queues, so the static version places the flows one
at a time, in an order drawn from ``seed``: at every switch on its way a flow takes the minimal next
hop with the least load (flows already placed on it over its capacity), the lowest link id among
equal ones, and adds itself there.  Each switch sees only its own outputs: the choice is local, made
without knowing what lies beyond, unlike the ideal even split (``adaptive``), which spreads every flow
over all its minimal paths.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)                   # 0 -> 3 and 1 -> 2 both climb from leaf 0
>>> r = LocalAdaptiveRouting(f).routes(np.array([0, 1]), np.array([3, 2]))
>>> sorted({f.link_name(l) for l in r.link if f.link_name(l).startswith("s1-0000[")})  # both spines
['s1-0000[3] -> s2-0000[1]', 's1-0000[4] -> s2-0001[1]']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.distances import switch_distances
from fabscope.routing.multipath import _candidates
from fabscope.routing.routes import Routes, first_links
from fabscope.routing.split import split_routes


@dataclass(eq=False)
class LocalAdaptiveRouting:
    fabric: Fabric
    seed: int = 0
    #: each flow placed in this many equal parts, each choosing on its own (1: the whole flow at once,
    #: as flowlet switching keeps a flow on one path; more: towards per-packet choice)
    parts: int = 1
    name: str = "adaptive-local"

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        f = self.fabric
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n, h = len(src), f.n_hosts
        dist = switch_distances(f)
        act = np.flatnonzero(src != dst)
        up = first_links(f, src[act], dst[act]).astype(np.int64)
        cost = (1.0 / f.link_capacity).tolist()
        load = [0.0] * f.n_links
        link_dst = f.link_dst.tolist()
        host_switch = f.host_switch.tolist()
        choices: dict[tuple[int, int], list[int]] = {}

        def options(node: int, d: int) -> list[int]:
            """Minimal next links from switch ``node`` towards host ``d`` (towards its switch, then it)."""
            k = (node, d if host_switch[d] == node else -1 - host_switch[d])
            c = choices.get(k)
            if c is None:
                _, links = _candidates(f, dist, np.array([node]), np.array([d]))
                c = choices[k] = sorted(links.tolist())
                if not c:
                    raise RoutingError(f"{self.name}: {f.node_names[node]} has no minimal hop towards "
                                       f"{f.node_names[d]}")
            return c

        paths: list[list[int]] = []
        owner: list[int] = []
        share = 1.0 / self.parts
        for _ in range(self.parts):
            for i in np.random.default_rng(self.seed + _).permutation(len(act)).tolist():
                d = int(dst[act[i]])
                link = int(up[i])
                path: list[int] = []
                while True:
                    path.append(link)
                    load[link] += cost[link] * share
                    node = link_dst[link]
                    if node == d:
                        break
                    if node < h:
                        raise RoutingError(f"{self.name}: a route to {f.node_names[d]} reaches host "
                                           f"{f.node_names[node]} on the way")
                    link = min(options(node, d), key=load.__getitem__)   # the first of the least loaded
                paths.append(path)
                owner.append(i)
        lengths = np.array([len(p) for p in paths], np.int64)
        hops = np.zeros(n)
        np.add.at(hops, act[np.array(owner, np.int64)], lengths * share)
        flow = np.repeat(act[np.array(owner, np.int64)], lengths)
        link = np.fromiter((l for p in paths for l in p), np.int64, int(lengths.sum()))
        if self.parts > 1:
            return split_routes(n, flow, link, np.full(len(link), share), hops)
        order = np.argsort(flow, kind="stable")               # each flow's links together, in hop order
        return Routes(n, flow[order], link[order].astype(np.int32), np.ones(len(link)), hops)
