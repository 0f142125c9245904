"""Cable-by-cable generators of the torus and the XGFT, kept as the reference for the vectorised ones.

tests/fabric/test_vectorised.py holds the vectorised generators equal to these,
array by array.  They build cable by cable (torus) or sort the cables (xgft).
"""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Sequence

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric.generators.direct import BGP_LINK, ROUTER_LATENCY_S
from fabscope.fabric.generators.trees import _LEVEL_LABELS, QDR_BYTES_PER_S, SWITCH_LATENCY_S
from fabscope.fabric.model import Fabric, FabricBuilder, Level


def torus_reference(dims: Sequence[int], *, periodic: bool | Sequence[bool] = True, hosts_per_router: int = 1,
          capacity: float = BGP_LINK, latency: float = ROUTER_LATENCY_S, cores: int = 4,
          sockets: int = 1, name: str | None = None) -> Fabric:
    """A torus, mesh or mix of the two over ``dims``.

    A dimension of size k > 2 that wraps adds k cables per line of routers; size 2
    adds one (both neighbours are the same router); size 1 adds none.

    """
    dims = tuple(int(d) for d in dims)
    if not dims or min(dims) < 1:
        raise FabricError(f"torus dimensions must be positive, got {'x'.join(map(str, dims))}")
    per = (bool(periodic),) * len(dims) if isinstance(periodic, (bool, int, np.bool_)) else tuple(bool(p) for p in periodic)
    if len(per) != len(dims):
        raise FabricError(f"periodic has {len(per)} entries for {len(dims)} dimensions")
    if hosts_per_router < 1:
        raise FabricError("hosts_per_router must be at least 1")
    coords = np.array(list(product(*[range(d) for d in dims])), dtype=np.int32)
    n_r = len(coords)
    strides = np.array([int(np.prod(dims[i + 1:])) for i in range(len(dims))])
    b = FabricBuilder(name or ("torus" if all(per) else "mesh") + f"({'x'.join(map(str, dims))})")
    n_h = n_r * hosts_per_router
    hosts = b.add_hosts([f"nid{i:05d}" for i in range(n_h)])
    routers = [b.add_switch("r(" + ",".join(map(str, c)) + ")", level=0) for c in coords]
    for i, h in enumerate(hosts):
        b.cable(h, routers[i // hosts_per_router], capacity, latency)
    # router ports: its hosts, then per dimension the + cable before the - cable, so that
    # OpenSM's dor (first least-hop port in port order) goes + half-way round an even ring
    cables = []                          # (router a, router b, dimension): b is a's + neighbour
    for d, k in enumerate(dims):
        if k == 1:
            continue
        for r in range(n_r):
            c = coords[r, d]
            if c + 1 < k:
                cables.append((r, r + strides[d], d))
            elif per[d] and k > 2:
                cables.append((r, r - (k - 1) * strides[d], d))
    ends = sorted([(a, d, 0, i) for i, (a, _, d) in enumerate(cables)]
                  + [(bb, d, 1, i) for i, (_, bb, d) in enumerate(cables)])
    port = np.zeros((len(cables), 2), np.int64)
    nxt = np.full(n_r, hosts_per_router + 1)
    for r, _, side, i in ends:
        port[i, side] = nxt[r]
        nxt[r] += 1
    for i, (a, bb, _) in enumerate(cables):
        b.cable(routers[a], routers[bb], capacity, latency, port_a=int(port[i, 0]), port_b=int(port[i, 1]))
    host_coords = np.repeat(coords, hosts_per_router, axis=0)
    groups, levels = {}, ()
    if hosts_per_router > 1:
        groups = {"router": np.arange(n_h) // hosts_per_router}
        levels = (Level("router", "Same Router"),)
    return b.build(
        coords=host_coords, dims=dims, periodic=per, groups=groups, levels=levels,
        host_cores=np.full(n_h, cores), host_sockets=np.full(n_h, sockets),
        params={"generator": "torus", "dims": list(dims), "periodic": list(per),
                "hosts_per_router": hosts_per_router, "capacity": capacity, "latency": latency,
                "cores": cores},
    )


def xgft_reference(m: Sequence[int], w: Sequence[int], *, links_per_pair: int = 1,
         capacity: float = QDR_BYTES_PER_S, latency: float = SWITCH_LATENCY_S,
         cores: int = 8, sockets: int = 2, name: str | None = None) -> Fabric:
    """Extended generalized fat tree XGFT(h; m; w).

    ``links_per_pair`` parallel cables join each switch to each of its
    parents (hosts always get one).  Hosts: prod(m).  Switches at level l:
    prod(m[l:]) * prod(w[:l]).

    """
    m = tuple(int(x) for x in m)
    w = tuple(int(x) for x in w)
    h = len(m)
    if h < 1 or len(w) != h:
        raise FabricError(f"xgft needs m and w of the same length >= 1, got m={m} w={w}")
    if min(m) < 1 or min(w) < 1 or links_per_pair < 1:
        raise FabricError(f"xgft parameters must be positive, got m={m} w={w} links_per_pair={links_per_pair}")
    n_at = [prod(m[l:]) * prod(w[:l]) for l in range(h + 1)]
    offset = np.cumsum([0] + n_at)  # node index of the first node of each level
    n_hosts = n_at[0]
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    for l in range(h):  # cables from level l to level l+1
        W_l = prod(w[:l])
        i = np.arange(n_at[l])
        A, B = np.divmod(i, W_l)
        A_up = A // m[l]
        reps = 1 if l == 0 else links_per_pair
        for b in range(w[l]):
            parent = A_up * (W_l * w[l]) + b * W_l + B
            for _ in range(reps):
                src.append(offset[l] + i)
                dst.append(offset[l + 1] + parent)
    a = np.concatenate(src)
    b = np.concatenate(dst)
    # interleave so that the cable's two directions are links 2k and 2k+1, ordered
    # per node so that ports number down-links before up-links
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    link_src = np.empty(2 * len(a), dtype=np.int32)
    link_dst = np.empty_like(link_src)
    link_src[0::2], link_src[1::2] = a, b
    link_dst[0::2], link_dst[1::2] = b, a
    names = [f"h{i:04d}" for i in range(n_hosts)]
    for l in range(1, h + 1):
        names += [f"s{l}-{i:04d}" for i in range(n_at[l])]
    levels, groups = [], {}
    P = 1
    for l in range(1, h):
        P *= m[l - 1]
        key, label, _ = _LEVEL_LABELS.get(l, (f"level{l}", f"Same Level-{l} Subtree", ""))
        groups[key] = np.arange(n_hosts) // P
        levels.append(Level(key, label))
    far = _LEVEL_LABELS.get(h - 1, ("", "", f"Diff Level-{h - 1} Subtrees"))[2] if h > 1 else "Same Switch"
    sw_level = np.repeat(np.arange(1, h + 1), n_at[1:])
    ports = _ports_reference(link_src)
    return Fabric(
        name=name or f"xgft(m={','.join(map(str, m))};w={','.join(map(str, w))})",
        node_names=tuple(names), n_hosts=n_hosts,
        link_src=link_src, link_dst=link_dst,
        link_capacity=np.full(len(link_src), capacity),
        link_latency=np.full(len(link_src), latency),
        link_src_port=ports, link_dst_port=ports[np.arange(len(link_src)) ^ 1],
        switch_level=sw_level,
        host_cores=np.full(n_hosts, cores), host_sockets=np.full(n_hosts, sockets),
        groups=groups, levels=tuple(levels), far_label=far,
        params={"generator": "xgft", "m": list(m), "w": list(w), "links_per_pair": links_per_pair,
                "capacity": capacity, "latency": latency, "cores": cores, "sockets": sockets},
    )


def _ports_reference(link_src: np.ndarray) -> np.ndarray:
    """Number each node's out-links 1, 2, ... in link order (its port numbers)."""
    order = np.argsort(link_src, kind="stable")
    s = link_src[order]
    starts = np.r_[0, np.flatnonzero(np.diff(s)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(s)]))
    ports = np.empty(len(link_src), dtype=np.int16)
    ports[order] = np.arange(len(s)) - first + 1
    return ports


def dragonfly_reference(a: int, p: int, h: int, g: int, *, capacity: float = 3071e6,
                        global_capacity: float | None = None, latency: float = ROUTER_LATENCY_S,
                        cores: int = 8) -> Fabric:
    """The dragonfly built cable by cable (hosts, then each group's all-to-all, then the global
    cables round by round over the group pairs, each taking its groups' next free ports)."""
    gcap = capacity if global_capacity is None else global_capacity
    b = FabricBuilder(f"dragonfly(a={a},p={p},h={h},g={g})")
    n_h = g * a * p
    hosts = b.add_hosts([f"g{i // (a * p):02d}n{i % (a * p):03d}" for i in range(n_h)])
    routers = [b.add_switch(f"g{i // a:02d}r{i % a:02d}") for i in range(g * a)]
    for i, hh in enumerate(hosts):
        b.cable(hh, routers[i // p], capacity, latency)
    for grp in range(g):
        for i in range(a):
            for j in range(i + 1, a):
                b.cable(routers[grp * a + i], routers[grp * a + j], capacity, latency)
    if g > 1:
        per_pair = (a * h) // (g - 1)
        free = [0] * g
        for _ in range(per_pair):
            for gi in range(g):
                for gj in range(gi + 1, g):
                    ri = routers[gi * a + free[gi] // h]
                    rj = routers[gj * a + free[gj] // h]
                    free[gi] += 1
                    free[gj] += 1
                    b.cable(ri, rj, gcap, latency)
    return b.build(
        groups={"router": np.arange(n_h) // p, "group": np.arange(n_h) // (a * p)},
        levels=(Level("router", "Same Router"), Level("group", "Same Group")), far_label="Diff Groups",
        host_cores=np.full(n_h, cores),
        params={"generator": "dragonfly", "a": a, "p": p, "h": h, "g": g, "capacity": capacity,
                "global_capacity": gcap, "latency": latency, "cores": cores},
    )
