"""Turn a discovered topology (and its forwarding tables) into a Fabric.

Hosts are the channel adapters, named from their node descriptions (first
word: ``"node0001 HCA-1"`` is ``node0001``) or a host map; switches keep
their descriptions.  Hosts are ordered by name (``node2`` before
``node10``), switches by level and name, so that a fabric exported to ibsim
and discovered again comes back in the same order.  Link rates come from
each cable's width and speed; LIDs and LMC are kept, and the tables become
``Fabric.lft`` (``--routing tables``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric.generators.trees import SWITCH_LATENCY_S
from fabscope.fabric.importers.hostmap import MAX_CORES, HostMap
from fabscope.fabric.importers.ibnetdiscover import Topology
from fabscope.fabric.rates import link_rate
from fabscope.fabric.importers.infer import infer_hierarchy
from fabscope.fabric.importers.lfts import Tables, check_lft, tables_to_lft
from fabscope.fabric.model import Fabric
from fabscope.names import check_host_name, check_switch_name


def natural_key(s: str) -> tuple[Any, ...]:
    """Sort key that puts ``node2`` before ``node10``.

    >>> sorted(["n10", "n2", "m1"], key=natural_key)
    ['m1', 'n2', 'n10']
    """
    return tuple((0, int(p), "") if p.isdecimal() else (1, 0, p) for p in re.split(r"(\d+)", s) if p)


def build_fabric(topo: Topology, tables: Tables | None = None, hostmap: HostMap | None = None,
                 name: str | None = None, cores: int = 1, latency: float = SWITCH_LATENCY_S) -> Fabric:
    """A Fabric from an ibnetdiscover :class:`Topology` and optional tables and host map."""
    if not 1 <= cores <= MAX_CORES:
        raise FabricError(f"cores per host must be 1..{MAX_CORES}, got {cores}")
    cas = [n for n in topo.nodes.values() if n.kind == "CA"]
    sws = [n for n in topo.nodes.values() if n.kind == "SW"]
    if not cas:
        raise FabricError(f"{topo.source}: no channel adapters (hosts) in the topology")
    host_name: dict[int, str] = {}
    for ca in cas:
        if hostmap is not None:
            nm = hostmap.lookup(ca.guid, next(iter(ca.port_guid.values()), 0), ca.desc)
            if nm is None:
                raise FabricError(f"{hostmap.source}: no host for CA {ca.desc!r} (guid {ca.guid:#018x}, "
                                  f"{topo.where(ca.line)})")
        else:
            nm = ca.desc.split()[0] if ca.desc.split() else f"ca-{ca.guid:016x}"
        host_name[ca.guid] = check_host_name(nm, topo.where(ca.line))
    seen: dict[str, int] = {}
    for ca in cas:
        nm = host_name[ca.guid]
        if nm in seen:
            raise FabricError(f"{topo.where(ca.line)}: two CAs are both host {nm!r} (guids {seen[nm]:#018x} and "
                              f"{ca.guid:#018x}); give a host map keyed by GUID")
        seen[nm] = ca.guid
    sw_name: dict[int, str] = {}
    descs = [s.desc for s in sws]
    for s in sws:
        check_switch_name(s.desc, topo.where(s.line))
        dup = descs.count(s.desc) > 1 or s.desc in seen
        sw_name[s.guid] = f"{s.desc}@{s.guid:#x}" if dup else s.desc
    # order: hosts by name, switches by (level, name) with levels from the graph
    sw_tmp = {s.guid: i for i, s in enumerate(sws)}
    host_sw_tmp: dict[int, int] = {}
    port_sw_tmp: list[int] = []          # the switch of every CA port: a leaf with second ports only is a leaf
    cab = []
    for ln in topo.links:
        ka, kb = topo.nodes[ln.a].kind, topo.nodes[ln.b].kind
        if ka == "CA" and kb == "CA":
            raise FabricError(f"{topo.where(ln.line)}: a cable joins two CAs; hosts attach to switches")
        if ka == "SW" and kb == "SW":
            cab.append((sw_tmp[ln.a], sw_tmp[ln.b]))
        else:
            ca, sw = (ln.a, ln.b) if ka == "CA" else (ln.b, ln.a)
            host_sw_tmp.setdefault(ca, sw_tmp[sw])
            port_sw_tmp.append(sw_tmp[sw])
    lost = [ca for ca in cas if ca.guid not in host_sw_tmp]
    if lost:
        raise FabricError(f"{topo.where(lost[0].line)}: CA {lost[0].desc!r} has no active port (port down?)")
    host_order = sorted(cas, key=lambda c: natural_key(host_name[c.guid]))
    level, _, _, _ = infer_hierarchy(len(sws), np.array(port_sw_tmp, np.int64), np.array(cab, np.int64).reshape(-1, 2))
    sw_order = sorted(range(len(sws)), key=lambda i: (int(level[i]) or 99, natural_key(sw_name[sws[i].guid])))
    nh = len(cas)
    index = {c.guid: i for i, c in enumerate(host_order)}
    index.update({sws[i].guid: nh + k for k, i in enumerate(sw_order)})
    names = [host_name[c.guid] for c in host_order] + [sw_name[sws[i].guid] for i in sw_order]
    # cables, lower node index first, sorted
    rows = []
    for ln in topo.links:
        a, b, pa, pb = index[ln.a], index[ln.b], ln.a_port, ln.b_port
        if a > b:
            a, b, pa, pb = b, a, pb, pa
        rows.append((a, pa, b, pb, link_rate(ln.width, ln.speed)))
    rows.sort()
    c = np.array(rows, dtype=np.float64).reshape(-1, 5)
    a, pa, b, pb, cap = c[:, 0].astype(np.int32), c[:, 1], c[:, 2].astype(np.int32), c[:, 3], c[:, 4]
    n = len(rows)
    src, dst = np.empty(2 * n, np.int32), np.empty(2 * n, np.int32)
    sp, dp = np.empty(2 * n, np.int16), np.empty(2 * n, np.int16)
    src[0::2], src[1::2], dst[0::2], dst[1::2] = a, b, b, a
    sp[0::2], sp[1::2], dp[0::2], dp[1::2] = pa, pb, pb, pa
    sw_level = level[np.array(sw_order, np.int64)] if sws else np.zeros(0, np.int16)
    host_sw = np.array([host_sw_tmp[c.guid] for c in host_order], np.int64)
    new_of_tmp = np.empty(len(sws), np.int64)
    new_of_tmp[np.array(sw_order, np.int64)] = np.arange(len(sws))
    sw_cab = new_of_tmp[np.array(cab, np.int64).reshape(-1, 2)] if cab else np.zeros((0, 2), np.int64)
    _, groups, levels, far = infer_hierarchy(len(sws), new_of_tmp[host_sw], sw_cab)
    hc = np.array([hostmap.cores.get(host_name[c.guid], cores) if hostmap else cores for c in host_order])
    # every CA port's own LID, host by host in port order (the cables are sorted so)
    at_host = c[:, 0] < nh
    port_lid = [host_order[int(h)].port_lid.get(int(p), host_order[int(h)].lid)
                for h, p in zip(c[at_host, 0], c[at_host, 1])]
    fabric = Fabric(
        name=name or "imported", node_names=tuple(names), n_hosts=nh,
        link_src=src, link_dst=dst, link_capacity=np.r_[cap, cap].reshape(2, -1).T.ravel(),
        link_latency=np.full(2 * n, latency), link_src_port=sp, link_dst_port=dp,
        switch_level=sw_level, host_cores=hc, host_sockets=np.ones(nh),
        groups=groups, levels=levels, far_label=far,
        host_lid=np.array([c.lid for c in host_order]), terminal_lid=np.array(port_lid, np.int64),
        switch_lid=np.array([sws[i].lid for i in sw_order]),
        lmc=max((c.lmc for c in cas), default=0),
        params={"source": topo.source},
    )
    if tables is None:
        return fabric
    switch_of_guid = {sws[i].guid: k for k, i in enumerate(sw_order)}
    bare = [sws[i] for i in sw_order if sws[i].guid not in tables.switches]
    if bare:
        s = bare[0]
        more = f" (and {len(bare) - 1} more switches)" if len(bare) > 1 else ""
        raise FabricError(f"{tables.source}: no forwarding table for switch {s.desc!r} (LID {s.lid}, "
                          f"{topo.where(s.line)}){more}; give the tables of every switch")
    lft = tables_to_lft(fabric, tables, switch_of_guid)
    missing = check_lft(fabric, lft, tables.source)
    from dataclasses import replace

    return replace(fabric, lft=lft, params={**fabric.params, "tables": tables.source, "lft_missing": missing})
