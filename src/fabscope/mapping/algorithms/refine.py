"""Refinement by swaps: lower hop-bytes, then the load on the busiest routed link.

:func:`refine_hops` proposes, in batches, to move a rank next to one of its
peers (into a slot of the peer's node, or into the slot of a peer's peer),
swapping it with whatever rank sat there.  The hop-bytes change of every
proposal is computed at once with arrays; the improving proposals whose
neighbourhoods do not overlap are applied together, so each applied swap
gains exactly what was computed.

:func:`refine_links` then takes the step no common mapping tool takes: it
routes the graph on the fabric's own routing (static tables on Itasca,
dimension order on tori), finds the most loaded link, and tries swaps of
the ranks whose bytes cross it, keeping a swap when the maximum link load
falls (or as much load with fewer links at the peak).  Half its proposals
*pull*: a rank with a heavy edge over the hot link joins its peer's node in
place of the rank there whose move leaves the lowest peak; that is what
empties a crowded host link at several ranks per node.  The others swap
whole nodes within a group (new destination routes) or single ranks.

Neither step may worsen the metric it does not optimise by more than a
stated tolerance (:data:`TOLERANCE`, 1 %): :func:`refine_links` keeps
hop-bytes within ``hop_slack`` of where it started (``topo`` passes the
tolerance; the default 0 never lets them rise), and :func:`refine_hops` checks the busiest routed link
at the end; when it rose by more than the tolerance, the latest pass that
kept within it is returned (the input when none did).  A hop-bytes gain
under 0.1 % is not worth that risk: the input comes back unchanged.  Both
record what they found in ``info["stages"]``.

>>> from fabscope.fabric.generators import torus
>>> from fabscope.mapping.commgraph import stencil
>>> from fabscope.mapping.targets import Target
>>> from fabscope.mapping.algorithms.baselines import random
>>> from fabscope.mapping.metrics import evaluate
>>> g = stencil((8, 8), halo=1)
>>> m0 = random(64, Target.whole(torus((8, 8), cores=1), 64), seed=0)
>>> m1 = refine_hops(m0, g, seed=0)
>>> evaluate(m1, g, links=False).hop_bytes < evaluate(m0, g, links=False).hop_bytes
True
"""

from __future__ import annotations

import time

import numpy as np

from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.metrics import host_hops, link_loads, router_for, weighted_sum
from fabscope.mapping.targets import Mapping

__all__ = ["refine_hops", "refine_links", "TOLERANCE", "max_link_load", "hop_bytes"]

#: how much a refinement may worsen the metric it does not optimise (relative)
TOLERANCE = 0.01
#: a hop-bytes gain below this (relative) is dropped: not worth the risk to the link load
MIN_KEEP_GAIN = 1e-3


def hop_bytes(slot: np.ndarray, target, graph: CommGraph) -> float:
    h = target.slot_host[slot]
    return weighted_sum(host_hops(target.fabric, h[graph.src], h[graph.dst]), graph.bytes)


def max_link_load(slot: np.ndarray, target, graph: CommGraph, routing=None) -> float:
    """Bytes on the busiest directed link when the ranks sit in ``slot`` (the fabric's routing)."""
    from fabscope.mapping.metrics import link_loads

    h = target.slot_host[slot]
    load = link_loads(target.fabric, h[graph.src], h[graph.dst], graph.bytes, routing)
    return float(load.max(initial=0.0))


def near_nodes(target) -> tuple[np.ndarray, np.ndarray]:
    """For every node of the job, the job's other nodes on its switch or on a switch cabled to it (CSR).

    Swapping towards them moves a rank one hop at a time on a torus, within a leaf on a tree.
    """
    f = target.fabric
    h = f.n_hosts
    sw = f.host_switch[target.nodes].astype(np.int64) - h
    s_all = f.n_switches
    a, b = f.link_src.astype(np.int64), f.link_dst.astype(np.int64)
    inter = (a >= h) & (b >= h)
    # switch adjacency with itself: pairs (switch, switch')
    sa = np.r_[a[inter] - h, np.arange(s_all)]
    sb = np.r_[b[inter] - h, np.arange(s_all)]
    key = np.unique(sa * s_all + sb)
    sa, sb = key // s_all, key % s_all
    # nodes per switch
    order = np.argsort(sw, kind="stable")
    per = np.bincount(sw, minlength=s_all)
    start = np.cumsum(per) - per
    # node i -> switches next to its switch -> nodes on them
    sptr = np.r_[0, np.cumsum(np.bincount(sa, minlength=s_all))]
    deg_s = sptr[sw + 1] - sptr[sw]
    own, pos = _ranges(sptr[sw], deg_s)
    nsw = sb[pos]
    own2, pos2 = _ranges(start[nsw], per[nsw])
    node_i = own[own2]
    node_j = order[pos2]
    keep = node_i != node_j
    node_i, node_j = node_i[keep], node_j[keep]
    if not len(node_i) or len(node_i) > 64 * len(sw):   # none, or a big leaf: not "near" enough to help
        return None, None
    o = np.argsort(node_i, kind="stable")
    ptr = np.r_[0, np.cumsum(np.bincount(node_i, minlength=len(sw)))]
    return ptr, node_j[o]


def _with_stage(info, **stage) -> dict:
    """``info`` (a dict or None) with one more entry in ``info["stages"]``."""
    out = dict(info) if isinstance(info, dict) else {}
    out["stages"] = list(out.get("stages", [])) + [stage]
    return out


def _ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Owner index and flat positions of the concatenated ranges ``[starts[i], starts[i]+counts[i])``."""
    owner = np.repeat(np.arange(len(starts)), counts)
    offs = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.repeat(starts, counts) + offs


def refine_hops(mapping: Mapping, graph: CommGraph, *, seed: int = 0, passes: int = 30,
                batch: int | None = None, min_gain: float = 1e-4,
                link_tolerance: float | None = TOLERANCE, routing=None, start_link: float | None = None,
                min_keep_gain: float = MIN_KEEP_GAIN) -> Mapping:
    """Lower hop-bytes by batches of independent swaps (see the module docstring).

    ``link_tolerance``: how much the busiest routed link may rise (relative;
    None: unchecked); ``start_link``: the input's busiest link, when known.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    A = graph.adjacency.tocsr()
    indptr, nbr, w = A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data
    deg = np.diff(indptr)
    n = graph.n
    target = mapping.target
    f = mapping.fabric
    shost = target.slot_host
    spn = target.slots_per_node
    sfirst = (np.cumsum(spn) - spn)[target.node_of_slot]   # first slot of each slot's node
    sspn = spn[target.node_of_slot]
    slot = mapping.slot.copy()
    occ = np.full(target.n_slots, -1, np.int64)
    occ[slot] = np.arange(n)
    batch = batch or max(256, n // 4)
    node_of_slot = target.node_of_slot
    first_of_node = np.cumsum(spn) - spn
    near_ptr, near_idx = near_nodes(target)
    has = np.flatnonzero(deg > 0)
    if not len(has):
        return mapping
    hb = weighted_sum(host_hops(f, shost[slot[graph.src]], shost[slot[graph.dst]]), graph.bytes)
    hb0 = hb
    snaps: list[tuple[float, np.ndarray]] = []       # (hop-bytes, slots) after each pass
    keep_snaps = n <= 200_000                        # memory: one copy of the slots per pass
    hopeless = False
    for p_i in range(passes):
        gained = 0.0
        for b_i in range(4):
            if p_i == 0 and b_i == 1 and gained < 0.1 * min_keep_gain * hb0:
                hopeless = True          # a quarter pass found a tenth of what would be kept: stop here
                break
            u = rng.choice(has, min(batch, len(has)), replace=True)
            v = nbr[indptr[u] + rng.integers(0, deg[u])]
            kind = rng.random(len(u))
            sv = slot[v]
            t_node = sfirst[sv] + rng.integers(0, sspn[sv])         # a slot of v's node
            has_v = deg[v] > 0
            x = np.where(has_v, nbr[indptr[v] + rng.integers(0, np.maximum(deg[v], 1))], v)
            t = np.where(kind < 0.35, t_node, slot[x])               # or the slot of v's peer
            if near_ptr is not None:                                 # or a slot of a node next to v's
                nv = node_of_slot[sv]
                cnt = near_ptr[nv + 1] - near_ptr[nv]
                pick = near_idx[np.minimum(near_ptr[nv] + rng.integers(0, np.maximum(cnt, 1)), len(near_idx) - 1)]
                t_near = first_of_node[pick] + rng.integers(0, spn[pick])
                t = np.where((kind >= 0.65) & (cnt > 0), t_near, t)
            wr = occ[t]
            ok = (wr != u) & (t != slot[u])
            u, t, wr = u[ok], t[ok], wr[ok]
            if not len(u):
                continue
            su = slot[u]
            hu, ht = shost[su], shost[t]
            # rank u moves from hu to ht
            own, pos = _ranges(indptr[u], deg[u])
            x = nbr[pos]
            hx = shost[slot[x]]
            keep = x != wr[own]
            du = (host_hops(f, ht[own], hx) - host_hops(f, hu[own], hx)) * w[pos] * keep
            delta = np.bincount(own, weights=du, minlength=len(u))
            # rank w (if any) moves from ht to hu
            has_w = wr >= 0
            ww = np.where(has_w, wr, 0)
            own2, pos2 = _ranges(indptr[ww], np.where(has_w, deg[ww], 0))
            y = nbr[pos2]
            hy = shost[slot[y]]
            keep2 = y != u[own2]
            dw = (host_hops(f, hu[own2], hy) - host_hops(f, ht[own2], hy)) * w[pos2] * keep2
            delta += np.bincount(own2, weights=dw, minlength=len(u))
            good = np.flatnonzero(delta < -1e-12)
            if not len(good):
                continue
            # independent set: each proposal claims u, w and their peers; the best claimant wins
            prio = np.empty(len(u))
            prio[good] = np.argsort(np.argsort(delta[good]))
            claim_owner = np.r_[good, good, good, good, own[np.isin(own, good)], own2[np.isin(own2, good)]]
            claim_vert = np.r_[u[good], np.where(has_w[good], wr[good], u[good]), n + t[good], n + su[good],
                               x[np.isin(own, good)], y[np.isin(own2, good)]]
            best = np.full(n + target.n_slots, np.inf)
            np.minimum.at(best, claim_vert, prio[claim_owner])
            lost = np.zeros(len(u), bool)
            lost[claim_owner[best[claim_vert] < prio[claim_owner]]] = True
            acc = good[~lost[good]]
            if not len(acc):
                continue
            au, at, aw = u[acc], t[acc], wr[acc]
            asu = slot[au]
            slot[au] = at
            occ[at] = au
            mv = aw >= 0
            slot[aw[mv]] = asu[mv]
            occ[asu] = np.where(mv, aw, -1)
            gained += float(-delta[acc].sum())
        hb_new = hb - gained
        if gained > 0 and keep_snaps:
            snaps.append((hb_new, slot.copy()))
        if hopeless or gained <= min_gain * max(hb, 1e-300):   # bounded by passes, never by the clock
            hb = hb_new
            break
        hb = hb_new
    name = mapping.algorithm + "+swap" if mapping.algorithm else "swap"
    if hb0 - hb < min_keep_gain * max(hb0, 1e-300) or hb >= hb0:
        info = _with_stage(mapping.info, step="swap", kept=False, hop_bytes=hb0,
                           why=f"hop-bytes gain {100 * (hb0 - hb) / max(hb0, 1e-300):.3g} % < {100 * min_keep_gain:g} %")
        return Mapping(target, mapping.slot, mapping.algorithm, mapping.seconds + time.perf_counter() - t0, info)
    stage = {"step": "swap", "kept": True, "hop_bytes": hb}
    if link_tolerance is not None:
        start = start_link if start_link is not None else max_link_load(mapping.slot, target, graph, routing)
        limit = start * (1 + link_tolerance) + 1e-9
        cands = snaps[::-1] if snaps else [(hb, slot)]
        if not snaps or not np.array_equal(snaps[-1][1], slot):
            cands.insert(0, (hb, slot))
        for hb_c, slot_c in cands:
            peak = max_link_load(slot_c, target, graph, routing)
            if peak <= limit:
                slot, hb = slot_c, hb_c
                stage.update(hop_bytes=hb, max_link_load=peak, start_link=start)
                break
        else:
            info = _with_stage(mapping.info, step="swap", kept=False, hop_bytes=hb0, max_link_load=start,
                               why=f"every pass raised the busiest link above {100 * link_tolerance:g} % of {start:.6g}")
            return Mapping(target, mapping.slot, mapping.algorithm, mapping.seconds + time.perf_counter() - t0, info)
    return Mapping(target, slot, name, mapping.seconds + time.perf_counter() - t0, _with_stage(mapping.info, **stage))


def refine_links(mapping: Mapping, graph: CommGraph, *, routing=None, seed: int = 0, tries: int = 400,
                 hop_slack: float = 0.0, patience: int = 150,
                 pull: float = 0.5) -> Mapping:
    """Lower the load on the busiest routed link by swaps (see the module docstring).

    Stops after ``tries`` proposals or ``patience`` proposals in a row that
    did not help (counts, never the clock: the result depends only on the
    inputs and ``seed``).  Hop-bytes never rise by more than
    ``hop_slack`` (relative to the input; 0: never); ``pull`` is the share of
    proposals that pull a rank into its peer's node.
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    f = mapping.fabric
    router = routing if routing is not None and not isinstance(routing, str) else router_for(f, routing)
    target = mapping.target
    shost = target.slot_host
    slot = mapping.slot.copy()
    occ = np.full(target.n_slots, -1, np.int64)
    occ[slot] = np.arange(graph.n)
    src, dst, b = graph.src, graph.dst, graph.bytes
    by_rank = np.argsort(np.r_[src, dst], kind="stable") % len(src)
    cnt = np.bincount(np.r_[src, dst], minlength=graph.n)
    start = np.cumsum(cnt) - cnt

    def edges_of(ranks: np.ndarray) -> np.ndarray:
        _, pos = _ranges(start[ranks], cnt[ranks])
        return np.unique(by_rank[pos])

    def load_of(e: np.ndarray, hs: np.ndarray, hd: np.ndarray, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                      np.ndarray]:
        """Links and bytes of the edges ``e`` routed between hosts ``hs`` and ``hd``, with the segment
        ``seg`` of the edge each comes from: every trial's old and new places routed in one call (the
        routes of one segment come in the order they would alone, so the sums are the same)."""
        inter = hs != hd
        if not inter.any():
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
        r = router.routes(hs[inter].astype(np.int64), hd[inter].astype(np.int64))
        return r.link, b[e[inter]][r.flow] * r.weight, seg[inter][r.flow]

    load = link_loads(f, shost[slot[src]], shost[slot[dst]], b, router)
    peak0 = float(load.max(initial=0.0))
    hb = weighted_sum(host_hops(f, shost[slot[src]], shost[slot[dst]]), b)
    hb0 = hb
    slot_node = target.node_of_slot
    spn = target.slots_per_node
    first_slot = np.cumsum(spn) - spn
    lv_grp = np.asarray(f.groups[f.levels[0].key]) if f.levels else None
    crossing: np.ndarray | None = None          # sampled edges over the hot link, until a swap is kept
    crossing_of = -1
    idle = 0
    accepted = 0
    hb_cap = hb0 * (1 + hop_slack)

    def prepare(s_a: np.ndarray, s_b: np.ndarray):
        """Swap the ranks of slots ``s_a`` with those of ``s_b`` on trial: (hop-bytes, edges, their hosts
        before and after) when hop-bytes stay within the slack, else None.  The slots are left as they were."""
        r_a, r_b = occ[s_a], occ[s_b]
        in_a, in_b = r_a >= 0, r_b >= 0
        ranks = np.concatenate([r_a[in_a], r_b[in_b]])
        if not len(ranks):
            return None
        es = edges_of(ranks)
        e_s, e_d = src[es], dst[es]
        hs0, hd0 = shost[slot[e_s]], shost[slot[e_d]]
        slot[r_a[in_a]] = s_b[in_a]
        slot[r_b[in_b]] = s_a[in_b]
        hs1, hd1 = shost[slot[e_s]], shost[slot[e_d]]
        slot[r_a[in_a]] = s_a[in_a]
        slot[r_b[in_b]] = s_b[in_b]
        hops = host_hops(f, np.concatenate([hs0, hs1]), np.concatenate([hd0, hd1]))     # one call for both
        be = b[es]
        hb_t = hb - float(np.dot(hops[:len(es)], be)) + float(np.dot(hops[len(es):], be))
        if hb_t > hb_cap + 1e-9:
            return None
        return hb_t, es, hs0, hd0, hs1, hd1

    def trials(moves: list) -> list:
        """Per move, None or (hop-bytes, loads, peak, links at the peak) after it; routed in one call."""
        prep = [prepare(s_a, s_b) for s_a, s_b in moves]
        ok = [j for j, x in enumerate(prep) if x is not None]
        out: list = [None] * len(moves)
        if not ok:
            return out
        parts = [(prep[j][1], prep[j][2 + 2 * side], prep[j][3 + 2 * side], 2 * i + side)
                 for i, j in enumerate(ok) for side in (0, 1)]
        k, w, seg = load_of(np.concatenate([x[0] for x in parts]), np.concatenate([x[1] for x in parts]),
                            np.concatenate([x[2] for x in parts]),
                            np.concatenate([np.full(len(x[0]), x[3]) for x in parts]))
        for i, j in enumerate(ok):
            t = load.copy()
            was, now = seg == 2 * i, seg == 2 * i + 1
            np.subtract.at(t, k[was], w[was])
            np.add.at(t, k[now], w[now])
            p = float(t.max())
            out[j] = (prep[j][0], t, p, int(np.sum(t >= p * (1 - 1e-9))))
        return out

    for it in range(tries):
        if idle >= patience:
            break
        hot = int(np.argmax(load))
        peak = load[hot]
        if peak <= 0:
            break
        idle += 1
        if crossing is None or crossing_of != hot:
            # ranks whose edges cross the hot link: sample edges and keep those routed over it
            cand_e = rng.choice(len(src), min(len(src), 4096), replace=False)
            hs, hd = shost[slot[src[cand_e]]], shost[slot[dst[cand_e]]]
            inter = hs != hd
            cand_e = cand_e[inter]
            if not len(cand_e):
                break
            r = router.routes(hs[inter].astype(np.int64), hd[inter].astype(np.int64))
            crossing, crossing_of = cand_e[np.unique(r.flow[r.link == hot])], hot
        if not len(crossing):
            crossing = None
            continue
        e = crossing[rng.integers(len(crossing))]
        u, v = (src[e], dst[e]) if rng.random() < 0.5 else (dst[e], src[e])
        node_u = slot_node[slot[u]]
        moves = []
        if rng.random() < pull:
            # pull: u joins its peer v's node in place of one of the ranks there, the one whose
            # move to u's slot leaves the lowest peak (a heavy edge off the hot link becomes node-local)
            node_t = slot_node[slot[v]]
            if node_t == node_u:
                continue
            moves = [(np.array([slot[u]]), np.array([s_t]))
                     for s_t in range(first_slot[node_t], first_slot[node_t] + spn[node_t]) if occ[s_t] != v]
        else:
            # swap u's whole node with another node of its lowest group (keeps hop-bytes on a
            # tree, changes the destination-based routes), or swap u with one rank of that node
            if lv_grp is not None and rng.random() < 0.8:
                same = np.flatnonzero(lv_grp[target.nodes] == lv_grp[target.nodes[node_u]])
                node_t = same[rng.integers(len(same))]
            else:
                node_t = rng.integers(target.n_nodes)
            if node_t == node_u:
                continue
            if rng.random() < 0.7 and spn[node_t] == spn[node_u]:
                moves = [(np.arange(first_slot[node_u], first_slot[node_u] + spn[node_u]),
                          np.arange(first_slot[node_t], first_slot[node_t] + spn[node_t]))]
            else:
                moves = [(np.array([slot[u]]), np.array([first_slot[node_t] + int(rng.integers(spn[node_t]))]))]
        n_peak_old = int(np.sum(load >= peak * (1 - 1e-9)))
        best = None
        for (s_a, s_b), res in zip(moves, trials(moves)):
            if res is None:
                continue
            hb_t, t, p, n_p = res
            if p < peak * (1 - 1e-9) or (p <= peak * (1 + 1e-9) and n_p < n_peak_old):
                if best is None or (p, n_p, hb_t) < best[0]:
                    best = ((p, n_p, hb_t), s_a, s_b, hb_t, t)
        if best is not None:
            _, s_a, s_b, hb, load = best
            r_a, r_b = occ[s_a], occ[s_b]
            slot[r_a[r_a >= 0]] = s_b[r_a >= 0]
            slot[r_b[r_b >= 0]] = s_a[r_b >= 0]
            occ[s_a], occ[s_b] = r_b, r_a
            crossing, idle = None, 0
            accepted += 1
    peak = float(load.max(initial=0.0))
    kept = accepted > 0 and peak < peak0 * (1 - 1e-9)
    name = mapping.algorithm + "+links" if kept and mapping.algorithm else ("links" if kept else mapping.algorithm)
    info = _with_stage(mapping.info, step="links", kept=kept, start_link=peak0,
                       max_link_load=peak if kept else peak0, hop_bytes=hb if kept else hb0, swaps=accepted)
    return Mapping(target, slot if kept else mapping.slot, name, mapping.seconds + time.perf_counter() - t0, info)
