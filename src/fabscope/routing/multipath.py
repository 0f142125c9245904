"""Routing over all minimal paths: ECMP (one path per flow) and the adaptive bound.

At every switch the next hops of a flow are the cables that bring it one hop
closer to its destination's switch.  ECMP picks one of them per flow and hop,
by a hash of (source, destination, hop) or at random from ``seed``; the
adaptive bound splits the flow evenly over all of them, hop by hop, an ideal
that no real adaptive routing beats on load balance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.routing.distances import switch_distances
from fabscope.routing.routes import Routes, host_terminals


def _candidates(fabric: Fabric, dist: np.ndarray, cur: np.ndarray, dst: np.ndarray):
    """Expand each (cur, destination terminal) into its minimal next links: (row index, link id)."""
    h = fabric.n_hosts
    indptr, order = fabric.out_links
    deg = indptr[cur + 1] - indptr[cur]
    rows = np.repeat(np.arange(len(cur)), deg)
    offs = np.arange(len(rows)) - np.repeat(np.cumsum(deg) - deg, deg)
    links = order[indptr[cur][rows] + offs]
    nxt = fabric.link_dst[links].astype(np.int64)
    t = fabric.terminal_switch[dst] - h
    here = cur[rows] - h
    d_now = dist[here, t[rows]]
    is_sw = nxt >= h
    d_next = np.where(is_sw, dist[np.where(is_sw, nxt - h, 0), t[rows]], -2)
    ok = (is_sw & (d_next == d_now - 1)) | (~is_sw & (links == fabric.terminal_downlink[dst[rows]]))
    return rows[ok], links[ok]


@dataclass(eq=False)
class MultipathRouting:
    fabric: Fabric
    mode: str = "ecmp"          # "ecmp" (hash), "random" or "adaptive"
    seed: int = 0

    @property
    def name(self) -> str:
        return {"ecmp": "ecmp", "random": "ecmp-random", "adaptive": "adaptive"}[self.mode]

    def routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        return self.terminal_routes(*host_terminals(self.fabric, src, dst))

    def terminal_routes(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        f = self.fabric
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        dist = switch_distances(f)
        rng = np.random.default_rng(self.seed)
        n = len(src)
        th = f.terminal_host
        act = np.flatnonzero(th[src] != th[dst])
        l0 = f.terminal_uplink[src[act]].astype(np.int64)
        dst_host = th[dst]
        flows, links, weights = [act], [l0], [np.ones(len(act))]
        # state: one row per (flow, node) with the share of the flow there
        fl, node, w = act, f.link_dst[l0].astype(np.int64), np.ones(len(act))
        hop = 1
        hops = np.zeros(n)
        hops[act] = 1.0
        while len(fl):
            done = node == dst_host[fl]
            fl, node, w = fl[~done], node[~done], w[~done]
            if not len(fl):
                break
            rows, cand = _candidates(f, dist, node, dst[fl])
            n_c = np.bincount(rows, minlength=len(fl))
            if np.any(n_c == 0):
                i = int(np.flatnonzero(n_c == 0)[0])
                raise RoutingError(f"{self.name}: {f.node_names[node[i]]} has no minimal hop towards "
                                   f"{f.terminal_label(dst[fl[i]])}")
            if self.mode == "adaptive":
                nf, nl, nw = fl[rows], cand, w[rows] / n_c[rows]
            else:
                start = np.r_[0, np.cumsum(n_c)[:-1]]
                if self.mode == "random":
                    pick = rng.integers(0, n_c)
                else:
                    s, d = src[fl], dst[fl]
                    hsh = (s * 0x9E3779B1 + d * 0x85EBCA77 + hop * 0xC2B2AE3D) & 0x7FFFFFFF
                    hsh = (hsh ^ (hsh >> 15)) * 0x2C1B3C6D & 0x7FFFFFFF
                    pick = hsh % n_c
                sel = start + pick
                nf, nl, nw = fl, cand[sel], w
            np.add.at(hops, nf, nw)
            # merge shares that reach the same (flow, link)
            key = nf * f.n_links + nl
            uk, inv = np.unique(key, return_inverse=True)
            ws = np.bincount(inv, weights=nw)
            nf, nl = uk // f.n_links, uk % f.n_links
            flows.append(nf)
            links.append(nl)
            weights.append(ws)
            nxt = f.link_dst[nl].astype(np.int64)
            key = nf * f.n_nodes + nxt
            uk, inv = np.unique(key, return_inverse=True)
            fl, node, w = uk // f.n_nodes, uk % f.n_nodes, np.bincount(inv, weights=ws)
            hop += 1
            if hop > f.n_nodes:
                raise RoutingError(f"{self.name}: routes loop")
        return Routes(n, np.concatenate(flows), np.concatenate(links).astype(np.int32),
                      np.concatenate(weights), hops)
