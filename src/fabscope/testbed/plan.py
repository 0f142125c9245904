"""What a testbed is made of, computed from a fabric before anything is created.

The testbed's own :class:`~fabscope.fabric.model.Fabric` is the fabric given,
with two changes that make it the model of what runs here:

* hosts are renamed ``fstb-NAME-h<i>``: the names MPI reports (their UTS
  host names), so measured pairs find their hosts in it;
* a host with several ports gets one fabric interface per port (``fab0``,
  ``fab1``, ...), each with its own address (:meth:`Plan.terminal_ip`), and
  switches forward by destination port, as a LID addresses a port;
* capacities are scaled by one factor, ``scale = rate / fastest link``, and
  then by the payload share of an Ethernet frame (``efficiency``, TCP/IP
  headers at the MTU used): the tc shapers count frames on the wire, MPI
  counts payload.

>>> from fabscope.fabric.generators import fat_tree
>>> p = make_plan("tb1", fat_tree(k=2, levels=2), rate=25e6)
>>> p.fabric.host_names[:2], round(p.scale * 3.071e9 / 1e6, 3)
(('fstb-tb1-h0', 'fstb-tb1-h1'), 25.0)
>>> round(p.efficiency, 4), p.wire_rate(0) == 25e6
(0.9927, True)
>>> p.netns(0), p.netns(4), p.ifname(0), p.ifname(1)
('fstb-tb1-h0', 'fstb-tb1-s0', 'fab0', 'p1')
>>> p.host_ip(0), p.switch_ip(0)
('10.200.0.1', '10.201.0.1')

Two ports per host: ``fab0`` and ``fab1``, an address each, the host's own
address its first port's:

>>> q = make_plan("tb2", fat_tree(k=2, levels=2, rails=2), rate=25e6)
>>> [q.ifname(int(l)) for l in q.fabric.terminal_uplink[:2]], q.terminal_ip(1), q.host_ip(1)
(['fab0', 'fab1'], '10.200.0.2', '10.200.0.3')
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from fabscope.errors import FabscopeError
from fabscope.fabric.model import Fabric
from fabscope.testbed import names
from fabscope.testbed.names import TestbedError

#: MTU of the fabric's veth cables: large frames keep the per-packet CPU cost low
MTU = 9000
#: IPv4 (20) + TCP with timestamps (32) per frame; Ethernet header 14
IP_TCP_HEADERS = 52
ETH_HEADER = 14
#: the next hop every fabric route names (one static neighbour per port stands for the cable's far end)
GATEWAY = "10.199.255.254"
#: most hosts one management /24 holds (.1 is the bridge)
MAX_MGMT_HOSTS = 253


def payload_efficiency(mtu: int = MTU) -> float:
    """Share of a full frame that is TCP payload."""
    return (mtu - IP_TCP_HEADERS) / (mtu + ETH_HEADER)


def _ip(base: str, i: int) -> str:
    return f"{base}.{(i + 1) >> 8}.{(i + 1) & 255}"


@dataclass(frozen=True, eq=False)
class Plan:
    name: str
    #: the testbed's fabric: hosts renamed, capacities as delivered to MPI (see the module docstring)
    fabric: Fabric
    #: testbed capacity = original capacity * scale * efficiency
    scale: float
    efficiency: float
    mtu: int = MTU
    #: whether links get the fabric's latency as a netem delay (where >= 1 us and the kernel has netem)
    delay: bool = True
    #: whether each link shares its rate round-robin among the hosts whose routes cross it (htb under the
    #: tbf: :func:`fabscope.testbed.commands.shaper`), else first come, first served (a tbf alone)
    fair: bool = True

    # ---- naming ----------------------------------------------------------
    def netns(self, node: int) -> str:
        h = self.fabric.n_hosts
        return names.ns_host(self.name, node) if node < h else names.ns_switch(self.name, node - h)

    def ifname(self, link: int) -> str:
        """Interface at the *source* end of directed link ``link``, in that node's namespace."""
        return self._ifnames[link]

    @cached_property
    def _ifnames(self) -> list[str]:
        f = self.fabric
        out = []
        for l in range(f.n_links):
            s, port = int(f.link_src[l]), int(f.link_src_port[l])
            out.append(f"p{port}" if s >= f.n_hosts else "")
        for t, l in enumerate(f.terminal_uplink):             # a host's ports: fab0, fab1, ... in port order
            out[int(l)] = names.host_if(int(f.terminal_port[t]))
        for l, n in enumerate(out):
            if n == "p0":
                out[l] = f"c{l // 2}"
        seen: dict[tuple[int, str], int] = {}
        for l, n in enumerate(out):
            key = (int(f.link_src[l]), n)
            if key in seen:
                raise TestbedError(f"{f.node_names[key[0]]} has two cables named {n!r} (ports {n}): "
                                   "the testbed needs distinct port numbers")
            seen[key] = l
        return out

    def mac(self, link: int) -> str:
        """MAC of the source end of ``link`` (locally administered; unique within the testbed)."""
        b = int(link).to_bytes(4, "big")
        return "02:fb:" + ":".join(f"{x:02x}" for x in b)

    def host_ip(self, i: int) -> str:
        """Address of host ``i``: its first port's."""
        return self.terminal_ip(int(self.fabric.host_uplinks[0][i]))

    def terminal_ip(self, t: int) -> str:
        """Address of host port (terminal) ``t``; where hosts have one port, host ``t``'s."""
        return _ip("10.200", t)

    def switch_ip(self, j: int) -> str:
        return _ip("10.201", j)

    def wire_rate(self, link: int) -> float:
        """Bytes/s the tc shaper lets through at ``link``'s source end (frames, headers included)."""
        return float(self.fabric.link_capacity[link]) / self.efficiency

    @property
    def host_names(self) -> tuple[str, ...]:
        return self.fabric.host_names


def testbed_fabric(name: str, fabric: Fabric, rate: float, mtu: int = MTU) -> tuple[Fabric, float, float]:
    """The fabric as the testbed runs it: hosts renamed, capacities scaled.  Returns (fabric, scale, efficiency)."""
    names.check_name(name)
    top = float(fabric.link_capacity.max())
    scale = rate / top
    eff = payload_efficiency(mtu)
    hosts = tuple(names.ns_host(name, i) for i in range(fabric.n_hosts))
    nodes = hosts + fabric.node_names[fabric.n_hosts:]
    g = replace(fabric, name=f"testbed {name}: {fabric.name}", node_names=nodes,
                link_capacity=fabric.link_capacity * scale * eff,
                params={**fabric.params, "testbed": name, "scale": scale, "efficiency": eff,
                        "rate": rate, "original_hosts": list(fabric.host_names)})
    return g, scale, eff


def make_plan(name: str, fabric: Fabric, rate: float, mtu: int = MTU) -> Plan:
    """Check that ``fabric`` can run as a testbed here and compute its plan; raises TestbedError."""
    if fabric.n_hosts > MAX_MGMT_HOSTS:
        raise TestbedError(f"fabric {fabric.name!r} has {fabric.n_hosts} hosts; a testbed holds at most "
                           f"{MAX_MGMT_HOSTS} (one management /24)")
    g, scale, eff = testbed_fabric(name, fabric, rate, mtu)
    p = Plan(name, g, scale, eff, mtu)
    p.ifname(0)  # checks port names
    return p


def forwarding(fabric: Fabric, routing) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Destination-based tables ``lft[switch, terminal]`` (link ids, -1 none) that realise ``routing``'s
    routes for every pair of host ports (terminals; hosts where each has one) on different hosts that
    the switches join (not across separate planes): what each switch namespace is told.  Raises
    TestbedError if the routing is not destination-based (a switch would need two next hops for one
    destination).

    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.routing import make_routing
    >>> f = fat_tree(k=2, levels=2)
    >>> lft = forwarding(f, make_routing(f, "dmodk"))
    >>> [f.link_name(l) for l in lft[0]]
    ['s1-0000[1] -> h0000[1]', 's1-0000[2] -> h0001[1]', 's1-0000[3] -> s2-0000[1]', 's1-0000[4] -> s2-0001[1]']
    """
    from fabscope.fabric.ports import planes
    from fabscope.routing import terminal_routes

    h, n_t = fabric.n_hosts, fabric.n_terminals
    src, dst = np.meshgrid(np.arange(n_t), np.arange(n_t), indexing="ij")
    src, dst = src.ravel(), dst.ravel()
    plane = planes(fabric)
    keep = (fabric.terminal_host[src] != fabric.terminal_host[dst]) & (plane[src] == plane[dst])
    src, dst = src[keep], dst[keep]
    try:
        r = terminal_routes(routing, src, dst, fabric)
    except FabscopeError as err:
        raise TestbedError(f"routing {getattr(routing, 'name', '?')}: {err}") from err
    if np.any(r.weight != 1):
        raise TestbedError(f"routing {routing.name!r} splits flows over several paths; a testbed switch "
                           "forwards by destination on one path (choose dmodk, minhop or tables)")
    lft = np.full((fabric.n_switches, n_t), -1, np.int64)
    at = fabric.link_src[r.link].astype(np.int64)
    sw = at >= h
    s_idx, d_idx, l_idx = at[sw] - h, dst[r.flow[sw]], r.link[sw].astype(np.int64)
    lft[s_idx, d_idx] = l_idx
    clash = lft[s_idx, d_idx] != l_idx
    if clash.any():
        i = int(np.flatnonzero(clash)[0])
        raise TestbedError(f"routing {routing.name!r} is not destination-based: switch "
                           f"{fabric.node_names[int(s_idx[i]) + h]} sends packets for {fabric.terminal_label(int(d_idx[i]))} "
                           "by more than one port; the testbed needs one route per destination")
    # entries no host-to-host route uses (a spine towards hosts routed by other spines) still get
    # a shortest path, as a switch's full table would: ICMP answers from switches need them
    empty = lft < 0
    if empty.any():
        from fabscope.routing.tables import minhop_tables

        fill = fabric.lft if fabric.lft is not None else minhop_tables(fabric)
        lft[empty] = fill[empty]
    return lft
