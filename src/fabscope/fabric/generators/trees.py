"""Fat trees: the extended generalized fat tree (XGFT) and the k-ary n-tree.

XGFT(h; m1..mh; w1..wh) (Öhring et al.): level-0 nodes are hosts; a node at
level l has m(l) children and every node at level l-1 has w(l) parents.  A
node at level l is labelled (a_h..a_{l+1}, b_l..b_1); its parents replace
a_{l+1} by each b_{l+1} < w_{l+1}.  A k-ary n-tree is XGFT(n; k..k; 1,k..k)::

    level 2        S0   S1   S2   S3          k = 2, n = 3 shown to level 2
                   | \\ / |   | \\ / |
                   |  X  |   |  X  |
    level 1        L0   L1   L2   L3
                  / \\  / \\  / \\  / \\
    hosts        h0 h1 h2 h3 h4 h5 h6 h7

Oversubscription: give ``w`` fewer parents than ``m`` children, e.g. a
two-level tree of leaves with 16 hosts and 8 uplinks is ``xgft((16, n), (1, 8))``.
"""

from __future__ import annotations

from math import prod
from typing import Sequence

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric.generators.size import XGFT_BYTES_PER_LINK, XGFT_BYTES_PER_NODE, XGFT_SECONDS_PER_LINK, Size
from fabscope.fabric.model import Fabric, Level

#: QDR InfiniBand delivers about 3071 MB/s of its 4 GB/s (seed 000)
QDR_BYTES_PER_S = 3071e6
#: a switch hop of an InfiniBand QDR switch, roughly
SWITCH_LATENCY_S = 100e-9

_LEVEL_LABELS = {1: ("leaf", "Same Leaf", "Diff Leafs"), 2: ("pod", "Same Pod", "Diff Pods")}


def xgft(m: Sequence[int], w: Sequence[int], *, links_per_pair: int = 1,
         capacity: float = QDR_BYTES_PER_S, latency: float = SWITCH_LATENCY_S,
         cores: int = 8, sockets: int = 2, rails: int = 1, rail_optimised: bool = False,
         copy_rate: float | None = None, memory_bw: float | None = None,
         name: str | None = None, _params: dict | None = None) -> Fabric:
    """Extended generalized fat tree XGFT(h; m; w).

    ``links_per_pair`` parallel cables join each switch to each of its
    parents (hosts always get one).  Hosts: prod(m).  Switches at level l:
    prod(m[l:]) * prod(w[:l]).  ``copy_rate`` and ``memory_bw`` (bytes/s) set
    the hosts' on-node copies where given (the model's defaults otherwise).

    ``rails=R`` gives every host R ports, port r on rail r: independent
    planes (R copies of the switches, named ``rail1-s1-0000``...; dual-rail
    clusters), or with ``rail_optimised=1`` rail leaves (and levels below the
    top) joined by shared top switches, which get R times ``m[-1]`` children
    (GPU pods: port r of every host of a leaf group on that group's rail-r
    leaf).  Hosts classify pairs as on one rail.

    >>> f = xgft((4, 4), (1, 2))       # 4 leaves of 4 hosts, 2 spines
    >>> f.n_hosts, f.n_switches, f.n_links // 2
    (16, 6, 24)
    >>> f = xgft((4, 4), (1, 2), rails=2, rail_optimised=True)   # 8 rail leaves, 2 spines of 8 ports
    >>> f.n_hosts, f.n_terminals, f.n_switches
    (16, 32, 10)
    """
    m = tuple(int(x) for x in m)
    w = tuple(int(x) for x in w)
    h = len(m)
    if h < 1 or len(w) != h:
        raise FabricError(f"xgft needs m and w of the same length >= 1, got m={m} w={w}")
    if min(m) < 1 or min(w) < 1 or links_per_pair < 1:
        raise FabricError(f"xgft parameters must be positive, got m={m} w={w} links_per_pair={links_per_pair}")
    if rails < 1:
        raise FabricError(f"xgft needs rails >= 1, got rails={rails}")
    if rails > 1:
        kw = dict(links_per_pair=links_per_pair, capacity=capacity, latency=latency, cores=cores, sockets=sockets,
                  copy_rate=copy_rate, memory_bw=memory_bw)
        tag = f",rails={rails}" + (",rail_optimised=1" if rail_optimised else "")
        full = (name[:-1] + tag + ")") if name else f"xgft(m={','.join(map(str, m))};w={','.join(map(str, w))}{tag})"
        one = xgft(m, w, **kw, name=full, _params={**(_params or {}), "rails": rails,
                                                     "rail_optimised": bool(rail_optimised)})
        ports = xgft(m[:-1] + (m[-1] * rails,), w, **kw) if rail_optimised else _planes(one, rails)
        return _ports_to_hosts(ports, one, rails)
    n_at = [prod(m[l:]) * prod(w[:l]) for l in range(h + 1)]
    offset = np.cumsum([0] + n_at)  # node index of the first node of each level
    n_hosts = n_at[0]
    # Cables made in the order of (lower end, upper end), each node's down-links before its
    # up-links (a node's children are numbered below it), so that link order is port order.
    # The arrays are computed, not sorted: tests/fabric/test_vectorised.py holds them equal
    # to the sorted reference.  Node i of level l: (A, B) = divmod(i, W_l); its parent through
    # up-port b is A // m_l * (W_l w_l) + b W_l + B, of whose m_l children it is the
    # (A mod m_l)-th; every cable is repeated ``reps`` times in a row.
    ends: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    n_down = 0                       # down-cables of every node of level l (its ports before the up ones)
    for l in range(h):  # cables from level l to level l+1
        W_l, w_l = prod(w[:l]), w[l]
        reps = 1 if l == 0 else links_per_pair
        i = np.arange(n_at[l], dtype=np.int64)
        A, B = np.divmod(i, W_l)
        shape = (n_at[l], w_l, reps)
        up = np.arange(w_l, dtype=np.int64)[None, :, None]
        rep = np.arange(reps, dtype=np.int64)[None, None, :]
        parent = (A // m[l] * (W_l * w_l) + B)[:, None, None] + up * W_l
        a = np.broadcast_to((offset[l] + i)[:, None, None], shape)
        b = np.broadcast_to(offset[l + 1] + parent, shape)
        port_a = np.broadcast_to(n_down + up * reps + rep + 1, shape)
        port_b = np.broadcast_to((A % m[l] * reps)[:, None, None] + rep + 1, shape)
        ends.append(tuple(x.reshape(-1) for x in (a, b, port_a, port_b)))
        n_down = m[l] * reps
    a, b, pa, pb = (np.concatenate([e[j] for e in ends]) for j in range(4))
    link_src = np.empty(2 * len(a), dtype=np.int32)
    link_dst = np.empty_like(link_src)
    link_src[0::2], link_src[1::2] = a, b
    link_dst[0::2], link_dst[1::2] = b, a
    ports = np.empty(len(link_src), dtype=np.int16)
    ports[0::2], ports[1::2] = pa, pb
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
    # one level of switches: every host reaches every other through one switch
    far = _LEVEL_LABELS.get(h - 1, ("", "", f"Diff Level-{h - 1} Subtrees"))[2] if h > 1 else "Same Switch"
    sw_level = np.repeat(np.arange(1, h + 1), n_at[1:])
    return Fabric(
        name=name or f"xgft(m={','.join(map(str, m))};w={','.join(map(str, w))})",
        node_names=tuple(names), n_hosts=n_hosts,
        link_src=link_src, link_dst=link_dst,
        link_capacity=np.full(len(link_src), capacity),
        link_latency=np.full(len(link_src), latency),
        link_src_port=ports, link_dst_port=ports[np.arange(len(link_src)) ^ 1],
        switch_level=sw_level,
        host_cores=np.full(n_hosts, cores), host_sockets=np.full(n_hosts, sockets),
        host_copy_rate=None if copy_rate is None else np.full(n_hosts, copy_rate),
        host_memory_bw=None if memory_bw is None else np.full(n_hosts, memory_bw),
        groups=groups, levels=tuple(levels), far_label=far,
        params={"generator": "xgft", "m": list(m), "w": list(w), "links_per_pair": links_per_pair,
                "capacity": capacity, "latency": latency, "cores": cores, "sockets": sockets,
                **{k: v for k, v in (("copy_rate", copy_rate), ("memory_bw", memory_bw)) if v is not None},
                **(_params or {})},
    )


def xgft_size(m: Sequence[int], w: Sequence[int], *, links_per_pair: int = 1, rails: int = 1,
              rail_optimised: bool = False, **_: object) -> Size:
    """What :func:`xgft` would build, counted (Python integers: nothing is allocated).

    >>> xgft_size((4, 4), (1, 2)).links == xgft((4, 4), (1, 2)).n_links
    True
    >>> [xgft_size((4, 4), (1, 2), rails=3, rail_optimised=o).switches
    ...  == xgft((4, 4), (1, 2), rails=3, rail_optimised=o).n_switches for o in (False, True)]
    [True, True]
    """
    m = tuple(max(int(x), 0) for x in m)
    w = tuple(max(int(x), 0) for x in w)
    rails = max(int(rails), 1)
    if rails > 1:
        if rail_optimised and m:
            s = xgft_size(m[:-1] + (m[-1] * rails,), w, links_per_pair=links_per_pair)
            return Size(s.hosts // rails, s.switches, s.links, bytes_per_link=s.bytes_per_link,
                        bytes_per_node=s.bytes_per_node, seconds_per_link=s.seconds_per_link)
        s = xgft_size(m, w, links_per_pair=links_per_pair)
        return Size(s.hosts, s.switches * rails, s.links * rails, bytes_per_link=s.bytes_per_link,
                    bytes_per_node=s.bytes_per_node, seconds_per_link=s.seconds_per_link)
    h = min(len(m), len(w))
    n_at = [prod(m[l:h]) * prod(w[:l]) for l in range(h + 1)]
    cables = sum(n_at[l] * w[l] * (1 if l == 0 else max(int(links_per_pair), 0)) for l in range(h))
    return Size(n_at[0], sum(n_at[1:]), 2 * cables, bytes_per_link=XGFT_BYTES_PER_LINK,
                bytes_per_node=XGFT_BYTES_PER_NODE, seconds_per_link=XGFT_SECONDS_PER_LINK)


def fat_tree_size(k: int, levels: int = 2, *, up: int | None = None, links_per_pair: int = 1,
                  rails: int = 1, rail_optimised: bool = False, **_: object) -> Size:
    """What :func:`fat_tree` would build.

    >>> fat_tree_size(4, 3).links == fat_tree(k=4, levels=3).n_links
    True
    >>> fat_tree_size(1000, 5).hosts
    1000000000000000
    """
    k, levels = int(k), max(int(levels), 0)
    up = k if up is None else int(up)
    return xgft_size((k,) * levels, (1,) + (up,) * (levels - 1) if levels else (), links_per_pair=links_per_pair,
                     rails=rails, rail_optimised=rail_optimised)


def fat_tree(k: int, levels: int = 2, *, up: int | None = None, links_per_pair: int = 1,
             capacity: float = QDR_BYTES_PER_S, latency: float = SWITCH_LATENCY_S,
             cores: int = 8, sockets: int = 2, rails: int = 1, rail_optimised: bool = False) -> Fabric:
    """k-ary n-tree (Petrini): k^n hosts, n k^(n-1) switches of 2k ports.

    ``up`` parents per switch below the top (default k, non-blocking);
    fewer gives an oversubscribed tree (k:up at every level).  ``rails=R``
    and ``rail_optimised`` as for :func:`xgft`.

    >>> f = fat_tree(k=4, levels=3)
    >>> f.n_hosts, f.n_switches, f.n_links // 2      # n k^n cables
    (64, 48, 192)
    >>> fat_tree(k=4, levels=2, up=2).n_switches     # 4 leaves, 2 spines
    6
    >>> f = fat_tree(k=2, levels=2, rails=2)         # two planes of 4 switches
    >>> f.n_switches, [f.node_names[int(f.terminal_switch[t])] for t in (0, 1)]
    (8, ['s1-0000', 'rail1-s1-0000'])
    >>> f = fat_tree(k=2, levels=2, rails=2, rail_optimised=True)   # 4 rail leaves, 2 shared spines
    >>> f.n_switches, [f.node_names[int(f.terminal_switch[t])] for t in (0, 1)]
    (6, ['s1-0000', 's1-0002'])
    """
    if k < 1 or levels < 1:
        raise FabricError(f"fat-tree needs k >= 1 and levels >= 1, got k={k} levels={levels}")
    up = k if up is None else up
    # the parameters go in at once: a second Fabric (with_params) checks a million-host tree again
    return xgft((k,) * levels, (1,) + (up,) * (levels - 1), links_per_pair=links_per_pair,
                capacity=capacity, latency=latency, cores=cores, sockets=sockets, rails=rails,
                rail_optimised=rail_optimised,
                name=f"fat-tree(k={k},levels={levels}" + (f",up={up}" if up != k else "") + ")",
                _params={"generator": "fat-tree", "k": k, "levels": levels, "up": up})


def _planes(one: Fabric, rails: int) -> Fabric:
    """``rails`` copies of ``one`` side by side, each host once per plane, plane-major (a fabric of
    single-port endpoints; :func:`_ports_to_hosts` merges them into hosts)."""
    h, s, n = one.n_hosts, one.n_switches, one.n_links
    r = np.repeat(np.arange(rails, dtype=np.int64), n)

    def shift(node: np.ndarray) -> np.ndarray:
        node = np.tile(node.astype(np.int64), rails)
        return np.where(node < h, node + r * h, node - h + rails * h + r * s)

    names = [f"{nm}" if p == 0 else f"p{p}{nm}" for p in range(rails) for nm in one.host_names]
    names += [nm if p == 0 else f"rail{p}-{nm}" for p in range(rails) for nm in one.node_names[h:]]
    # plane-major cables keep both directions of a cable side by side (n is even)
    return Fabric(name=one.name, node_names=tuple(names), n_hosts=h * rails,
                  link_src=shift(one.link_src), link_dst=shift(one.link_dst),
                  link_capacity=np.tile(one.link_capacity, rails), link_latency=np.tile(one.link_latency, rails),
                  link_src_port=np.tile(one.link_src_port, rails), link_dst_port=np.tile(one.link_dst_port, rails),
                  switch_level=np.tile(one.switch_level, rails))


def _ports_to_hosts(ports: Fabric, one: Fabric, rails: int) -> Fabric:
    """Endpoint ``r * H + h`` of ``ports`` becomes port r of host h of ``one`` (its names, groups,
    cores and parameters); the host cables are ordered host by host, rail by rail (port order)."""
    h = one.n_hosts
    x_src, x_dst = ports.link_src.astype(np.int64), ports.link_dst.astype(np.int64)
    n_ep = ports.n_hosts

    def node(x: np.ndarray) -> np.ndarray:
        return np.where(x < n_ep, x % h, x - n_ep + h)

    # cables re-ordered so that host h's ports come in rail order: host cables first by (host, rail)
    cable = np.arange(ports.n_links // 2)
    ep = np.minimum(x_src[0::2], x_dst[0::2])
    is_host = ep < n_ep
    key = np.where(is_host, (ep % h) * rails + ep // h, n_ep + cable)
    order = np.argsort(key, kind="stable")
    links = np.empty(2 * len(order), np.int64)
    links[0::2], links[1::2] = 2 * order, 2 * order + 1
    src, dst = node(x_src[links]), node(x_dst[links])
    sp, dp = ports.link_src_port[links].copy(), ports.link_dst_port[links].copy()
    host_end = src < h
    sp[host_end] = (x_src[links][host_end] // h) + 1          # a host's port number is its rail, 1-based
    host_end = dst < h
    dp[host_end] = (x_dst[links][host_end] // h) + 1
    return Fabric(name=one.name, node_names=one.host_names + ports.node_names[n_ep:], n_hosts=h,
                  link_src=src, link_dst=dst, link_capacity=ports.link_capacity[links],
                  link_latency=ports.link_latency[links], link_src_port=sp, link_dst_port=dp,
                  switch_level=ports.switch_level, host_cores=one.host_cores, host_sockets=one.host_sockets,
                  host_copy_rate=one.host_copy_rate, host_memory_bw=one.host_memory_bw,
                  groups=one.groups, levels=one.levels, far_label=one.far_label, params=one.params)
