"""The ``ip`` and ``tc`` batch lines that build a testbed, computed from its plan.

Kept apart from running them so that they can be read and tested without root.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.routing import make_routing
>>> from fabscope.testbed.plan import make_plan, forwarding
>>> p = make_plan("tb1", fat_tree(k=2, levels=2), rate=25e6)
>>> cable_lines(p)[0]
'link add fab0 address 02:fb:00:00:00:00 mtu 9000 netns fstb-tb1-h0 type veth peer name p1 address 02:fb:00:00:00:01 mtu 9000 netns fstb-tb1-s0'
>>> lft = forwarding(p.fabric, make_routing(p.fabric, "dmodk"))
>>> [ln for ln in node_ip_lines(p, 4, lft, "10.233.0") if ln.startswith("route")][3]
'route replace 10.200.0.4/32 via 10.199.255.254 dev p4 onlink'
>>> shaper_lines(p, 0)[0]
'qdisc replace dev fab0 root handle 1: tbf rate 200000000bit burst 50000b limit 16777216'
>>> queue_bytes(25e6, 9000), queue_bytes(40e9 / 8, 9000)      # bytes/s: 16 MiB, or 100 ms at 40 Gbit
(16777216, 500000000)
"""

from __future__ import annotations

import numpy as np

from fabscope.testbed import names
from fabscope.testbed.plan import GATEWAY, Plan

#: queue a shaper holds, in time at its rate (TCP needs some to fill a link) ...
QUEUE_TIME = 0.1
#: ... and at least this many bytes: 16 messages of 1 MiB, so that 8 ranks of a host (--ppn 8), each
#: with a message in flight, do not overflow it.  A tbf whose queue is full drops, and TCP backs off:
#: an InfiniBand link does not drop (credits hold the data back at the sender), so the testbed keeps
#: its queues deep enough not to drop instead (seed 000 at 8 ranks per host dropped 3.6% of its
#: packets with 100 ms of queue, none with 3 s: docs/testbed.md)
QUEUE_BYTES = 16 << 20


def queue_bytes(wire_rate: float, mtu: int) -> int:
    """The shaper's queue limit in bytes: :data:`QUEUE_TIME` at the rate, at least :data:`QUEUE_BYTES`
    (and the bucket)."""
    return int(max(wire_rate * QUEUE_TIME, QUEUE_BYTES, burst_bytes(wire_rate, mtu)))


def burst_bytes(wire_rate: float, mtu: int) -> int:
    """Bucket size: 2 ms at the rate, at least two full frames."""
    return int(max(wire_rate * 0.002, 2 * (mtu + 14)))


def cable_lines(p: Plan) -> list[str]:
    """``ip -batch`` lines (root namespace) creating every cable straight into its two namespaces."""
    f, out = p.fabric, []
    for l in range(0, f.n_links, 2):
        a, b = int(f.link_src[l]), int(f.link_dst[l])
        out.append(f"link add {p.ifname(l)} address {p.mac(l)} mtu {p.mtu} netns {p.netns(a)} type veth "
                   f"peer name {p.ifname(l + 1)} address {p.mac(l + 1)} mtu {p.mtu} netns {p.netns(b)}")
    return out


def mgmt_lines(p: Plan, subnet: str) -> list[str]:
    """The management bridge and one veth per host to it (root namespace)."""
    br = names.bridge(p.name)
    out = [f"link add {br} type bridge", f"addr add {subnet}.1/24 dev {br}", f"link set {br} up"]
    for i in range(p.fabric.n_hosts):
        v = names.mgmt_veth(p.name, i)
        out += [f"link add {v} type veth peer name {names.MGMT_IF} netns {p.netns(i)}",
                f"link set {v} master {br}", f"link set {v} up"]
    return out


def mgmt_ip(subnet: str, i: int) -> str:
    return f"{subnet}.{i + 2}"


def route_lines(p: Plan, j: int, lft: np.ndarray) -> list[str]:
    """One route per destination host on switch ``j`` (switch number), by its forwarding table."""
    out = []
    for d in range(p.fabric.n_hosts):
        l = int(lft[j, d])
        if l >= 0:
            out.append(f"route replace {p.host_ip(d)}/32 via {GATEWAY} dev {p.ifname(l)} onlink")
        else:
            out.append(f"route replace unreachable {p.host_ip(d)}/32")
    return out


def neigh_line(p: Plan, link: int) -> str:
    """The far end of ``link``'s cable answers to GATEWAY on its port: a permanent neighbour, no ARP on
    the fabric.  A port taken down loses it (the kernel flushes a device's neighbours), so ``restore``
    adds it again."""
    return f"neigh replace {GATEWAY} lladdr {p.mac(link ^ 1)} dev {p.ifname(link)} nud permanent"


def node_ip_lines(p: Plan, node: int, lft: np.ndarray, subnet: str) -> list[str]:
    """``ip -batch`` lines run inside ``node``'s namespace: ports up, addresses, neighbours, routes."""
    f = p.fabric
    ports = np.flatnonzero(f.link_src == node)
    out = ["link set lo up"]
    for l in ports:
        out.append(f"link set {p.ifname(int(l))} up")
        out.append(neigh_line(p, int(l)))
    if node < f.n_hosts:
        out += [f"link set {names.MGMT_IF} up",
                f"addr add {p.host_ip(node)}/32 dev {names.HOST_IF}",
                f"addr add {mgmt_ip(subnet, node)}/24 dev {names.MGMT_IF}",
                f"route replace 10.200.0.0/16 via {GATEWAY} dev {names.HOST_IF} onlink",
                f"route replace 10.201.0.0/16 via {GATEWAY} dev {names.HOST_IF} onlink"]
    else:
        j = node - f.n_hosts
        out.append(f"addr add {p.switch_ip(j)}/32 dev lo")
        out += route_lines(p, j, lft)
    return out


def shaper(ifname: str, wire_rate: float, mtu: int, delay: float = 0.0, change: bool = False) -> list[str]:
    verb = "change" if change else "replace"
    out = [f"qdisc {verb} dev {ifname} root handle 1: tbf rate {names.format_rate(wire_rate)} "
           f"burst {burst_bytes(wire_rate, mtu)}b limit {queue_bytes(wire_rate, mtu)}"]
    if delay >= 1e-6 and not change:
        out.append(f"qdisc replace dev {ifname} parent 1:1 handle 10: netem delay {int(round(delay * 1e6))}us")
    return out


def shaper_lines(p: Plan, node: int) -> list[str]:
    """``tc -batch`` lines for ``node``: a tbf shaper (and netem delay where the fabric gives >= 1 us)
    on the egress of each of its ports, i.e. one direction of each of its cables."""
    f = p.fabric
    out: list[str] = []
    for l in np.flatnonzero(f.link_src == node):
        out += shaper(p.ifname(int(l)), p.wire_rate(int(l)), p.mtu, float(f.link_latency[l]) if p.delay else 0.0)
    return out


SWITCH_SYSCTL = ["net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
                 "net.ipv4.icmp_ratelimit=0", "net.ipv6.conf.all.disable_ipv6=1",
                 "net.ipv6.conf.default.disable_ipv6=1"]
HOST_SYSCTL = ["net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
               "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
