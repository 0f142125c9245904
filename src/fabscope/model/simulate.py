"""Run traffic through the fabric's routing and the flow model; return a Result.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> from fabscope.traffic.patterns import shift
>>> f = fat_tree(k=4, levels=2, up=2)          # 2:1 oversubscribed leaves
>>> r = simulate(f, Placement.block(f, 16, ppn=1), shift(16, 1e6, k=4))
>>> float(round(r.summary()[0].min / f.link_capacity[0] * 1e6, 3))    # 4 flows on 2 uplinks: half each
0.5
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from fabscope.errors import FabscopeError, TrafficError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.model.latency import DEFAULT_ALPHA, message_time
from fabscope.model.maxmin import congestion_count, maxmin
from fabscope.result import Result
from fabscope.fabric.ports import PortPolicy, parse_ports, rail_class, split_flows
from fabscope.routing import Routing, make_routing, terminal_routes
from fabscope.traffic.flows import Traffic
from fabscope.sparse import csr_matrix

MODELS = ("maxmin", "congestion")


def simulate(fabric: Fabric, placement: Placement, traffic: Traffic, routing: Routing | str | None = None,
             *, model: str = "maxmin", alpha: float = DEFAULT_ALPHA, seed: int = 0,
             meta: dict[str, Any] | None = None, top_links: int = 10, ports: PortPolicy | str | None = None) -> Result:
    """Predict every pair's bandwidth and name the links that limit it.

    ``ports``: how flows use hosts' ports (:mod:`fabscope.fabric.ports`, default ``rank``); a
    flow split over several port pairs gets the sum of its sub-flows' rates.
    """
    t0 = time.perf_counter()
    if model not in MODELS:
        raise FabscopeError(f"unknown flow model {model!r}; choose from {', '.join(MODELS)}")
    if traffic.src.max(initial=0) >= placement.n_ranks or traffic.dst.max(initial=0) >= placement.n_ranks:
        raise TrafficError(f"pattern {traffic.name!r} names rank {int(max(traffic.src.max(), traffic.dst.max()))}, "
                           f"the job has {placement.n_ranks} ranks")
    router = routing if routing is not None and not isinstance(routing, str) else make_routing(fabric, routing, seed=seed)
    hs = placement.host[traffic.src].astype(np.int64)
    hd = placement.host[traffic.dst].astype(np.int64)
    # sub-flows: one per flow, or one per port pair of a flow striped over its hosts' ports
    sub = split_flows(fabric, placement, traffic.src, traffic.dst, traffic.bytes, ports)
    routes = terminal_routes(router, sub.src, sub.dst, fabric)
    sh = hs if sub.identity else fabric.terminal_host[sub.src]
    dh = hd if sub.identity else fabric.terminal_host[sub.dst]
    n_l, n_f, n_s = fabric.n_links, traffic.n_flows, sub.n
    # resources: directed links, then each host's memory for on-node copies
    intra = np.flatnonzero(sh == dh)
    res = np.r_[routes.link.astype(np.int64), n_l + sh[intra]]
    flw = np.r_[routes.flow, intra]
    wts = np.r_[routes.weight, np.ones(len(intra))]
    cap_all = np.r_[fabric.link_capacity, fabric.host_memory_bw]
    n_r = len(cap_all)
    if traffic.n_scenarios > 1:  # scenarios never share a resource
        res = res + traffic.scenario[sub.flow[flw]] * n_r
    used, row = np.unique(res, return_inverse=True)
    A = csr_matrix((wts, (row, flw)), shape=(len(used), n_s))
    capacity = cap_all[used % n_r]
    flow_cap = np.full(n_s, np.inf)
    flow_cap[intra] = fabric.host_copy_rate[sh[intra]]
    solve = maxmin if model == "maxmin" else congestion_count
    sub_rate = solve(A, capacity, flow_cap)
    # per-flow wire latency
    wire = np.bincount(routes.flow, weights=routes.weight * fabric.link_latency[routes.link], minlength=n_s)
    # seed 002's per-hop term uses the slowest link crossed (none for on-node copies)
    slow = np.full(n_s, np.inf)
    np.minimum.at(slow, routes.flow, fabric.link_capacity[routes.link])
    # a striped flow: its sub-flows' rates add up; the longest of their paths sets the latency
    rate = sub.total(sub_rate)
    t_flow = message_time(traffic.bytes, rate, sub.most(routes.hops), sub.most(wire), alpha=alpha,
                          link_rate=sub.least(slow))
    # pairs: a ping-pong's directions add their times
    pid, first = np.unique(traffic.pair, return_index=True)
    inv = np.searchsorted(pid, traffic.pair)
    with np.errstate(divide="ignore"):
        pair_bytes = np.bincount(inv, weights=traffic.bytes)
        pair_xfer = np.bincount(inv, weights=np.where(np.isinf(rate), 0.0, traffic.bytes / rate))
        bw = np.where(pair_xfer > 0, pair_bytes / np.maximum(pair_xfer, 1e-300), np.inf)
    pair_time = np.bincount(inv, weights=t_flow)
    cls = fabric.classify(hs[first], hd[first])
    names = np.array(fabric.host_names, dtype=object)
    pairs = {
        "src": traffic.src[first], "dst": traffic.dst[first],
        "src_host": names[hs[first]].astype(str), "dst_host": names[hd[first]].astype(str),
        "cls": cls, "bytes": traffic.bytes[first], "bandwidth": bw, "time": pair_time,
    }
    if traffic.n_scenarios > 1:
        pairs["scenario"] = traffic.scenario[first]
    if not fabric.single_port:  # where hosts have several ports: same rail or cross rail
        pairs["rail"] = rail_class(fabric, sub)[first]
    # link loads (max over scenarios) and what limits each class
    load_r = A @ np.where(np.isfinite(sub_rate), sub_rate, 0.0)
    link_rows = (used % n_r) < n_l
    lid = (used % n_r)[link_rows]
    load = np.zeros(n_l)
    np.maximum.at(load, lid, load_r[link_rows])
    full = load_r >= capacity * (1 - 1e-6)
    bottleneck = _bottlenecks(A, sub_rate, full)
    meta_all = {
        "kind": "model", "fabric": fabric.name, "fabric_params": dict(fabric.params),
        "routing": router.name, "model": model, "pattern": traffic.name,
        "pattern_params": dict(traffic.params), "ranks": placement.n_ranks, "seed": seed,
        "flows": n_f, "scenarios": traffic.n_scenarios, **({} if fabric.single_port else {"ports": str(parse_ports(ports))}),
        "solve_seconds": round(time.perf_counter() - t0, 4), **(meta or {}),
    }
    busy = np.flatnonzero(load > 0)
    util = load / fabric.link_capacity
    hot = busy[np.argsort(-util[busy], kind="stable")][:top_links]
    extra = {
        "hot_links": [{"link": int(i), "name": fabric.link_name(int(i)), "load": float(load[i]),
                       "utilisation": float(util[i])} for i in hot],
        "limiting_links": _limiting_by_class(fabric, cls[inv][sub.flow], bottleneck, used % n_r, n_l, top_links),
    }
    links = {"link": busy, "load": load[busy], "capacity": fabric.link_capacity[busy]}
    return Result(meta=meta_all, class_labels=fabric.class_labels, pairs=pairs, links=links, extra=extra)


def _bottlenecks(A: csr_matrix, rate: np.ndarray, full: np.ndarray) -> np.ndarray:
    """For each flow, a full resource (row of A) it crosses where its rate is the largest; -1 if none."""
    A = A.tocsc()
    out = np.full(A.shape[1], -1, dtype=np.int64)
    fin = np.where(np.isfinite(rate), rate, 0.0)
    # largest rate among the flows on each resource
    Ar = A.tocsr()
    rmax = np.zeros(A.shape[0])
    rows = np.repeat(np.arange(A.shape[0]), np.diff(Ar.indptr))
    np.maximum.at(rmax, rows, fin[Ar.indices])
    cols = np.repeat(np.arange(A.shape[1]), np.diff(A.indptr))
    ok = full[A.indices] & (fin[cols] >= rmax[A.indices] * (1 - 1e-6))
    out[cols[ok]] = A.indices[ok]
    return out


def _limiting_by_class(fabric: Fabric, flow_cls: np.ndarray, bottleneck: np.ndarray, res_kind: np.ndarray,
                       n_l: int, top: int) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for c, label in enumerate(fabric.class_labels):
        b = bottleneck[(flow_cls == c) & (bottleneck >= 0)]
        if not len(b):
            continue
        rid = res_kind[b]
        ids, counts = np.unique(rid, return_counts=True)
        order = np.argsort(-counts, kind="stable")[:top]
        out[label] = [{"name": fabric.link_name(int(i)) if i < n_l else f"{fabric.node_names[int(i) - n_l]} memory",
                       "flows": int(k)} for i, k in zip(ids[order], counts[order])]
    return out
