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

from collections.abc import Sequence

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
    """One route per destination host port (terminal) on switch ``j`` (switch number), by its
    forwarding table ``lft[switch, terminal]``."""
    out = []
    for d in range(p.fabric.n_terminals):
        l = int(lft[j, d])
        if l >= 0:
            out.append(f"route replace {p.terminal_ip(d)}/32 via {GATEWAY} dev {p.ifname(l)} onlink")
        else:
            out.append(f"route replace unreachable {p.terminal_ip(d)}/32")
    return out


#: policy routing tables of a host's ports: port p's own table is ``PORT_TABLE + p``
PORT_TABLE = 100


def host_route_lines(p: Plan, host: int) -> list[str]:
    """A host's addresses and routes: each port its own address; where it has several, a packet
    leaves by the port its source address belongs to (one policy table per port: a socket bound to
    an interface's address, as Open MPI's TCP BTL binds each of its interfaces, sends by that
    interface), and an unbound one by the port of the destination port's index (its rail).

    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.testbed.plan import make_plan
    >>> q = make_plan("tb2", fat_tree(k=2, levels=2, rails=2), rate=25e6)
    >>> [ln for ln in host_route_lines(q, 0) if "101" in ln or "dev fab1" == ln[-8:]][:3]
    ['addr add 10.200.0.2/32 dev fab1', 'rule add from 10.200.0.2 table 101 priority 101', 'route replace 10.200.0.0/16 via 10.199.255.254 dev fab1 onlink table 101']
    >>> host_route_lines(q, 0)[-1]
    'route replace 10.200.0.8/32 via 10.199.255.254 dev fab1 onlink'
    """
    f = p.fabric
    first = int(f.host_uplinks[0][host])
    n_ports = int(f.host_n_ports[host])
    out = []
    for q in range(n_ports):
        dev = names.host_if(q)
        out.append(f"addr add {p.terminal_ip(first + q)}/32 dev {dev}")
        if n_ports > 1:
            out += [f"rule add from {p.terminal_ip(first + q)} table {PORT_TABLE + q} priority {PORT_TABLE + q}"]
            out += [f"route replace {net} via {GATEWAY} dev {dev} onlink table {PORT_TABLE + q}"
                    for net in ("10.200.0.0/16", "10.201.0.0/16")]
    out += [f"route replace {net} via {GATEWAY} dev {names.HOST_IF} onlink" for net in ("10.200.0.0/16", "10.201.0.0/16")]
    if n_ports > 1:
        for t in np.flatnonzero(f.terminal_port > 0):
            out.append(f"route replace {p.terminal_ip(int(t))}/32 via {GATEWAY} "
                       f"dev {names.host_if(int(f.terminal_port[t]) % n_ports)} onlink")
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
        own = host_route_lines(p, node)
        out += [f"link set {names.MGMT_IF} up", own[0], f"addr add {mgmt_ip(subnet, node)}/24 dev {names.MGMT_IF}"]
        out += own[1:]
    else:
        j = node - f.n_hosts
        out.append(f"addr add {p.switch_ip(j)}/32 dev lo")
        out += route_lines(p, j, lft)
    return out


def shaper(ifname: str, wire_rate: float, mtu: int, delay: float = 0.0, change: bool = False,
           sources: Sequence[str] = ()) -> list[str]:
    """``tc`` lines of one directed link: the ``tbf`` that sets its rate (``change``: that line alone, as
    ``degrade`` and ``restore`` rewrite it) and, below it, the delay stage and the fair share.

    With two or more ``sources`` (the IPs of the hosts whose routes cross the link) an ``htb`` under
    the tbf gives each source host its own class and queue, served round-robin with equal quanta
    (the tbf's bucket: see :func:`fair_quantum`), so flows that meet on the link share it evenly instead of in
    their packets' arrival order; other packets share a default class.  The htb's classes never run
    out of tokens (:data:`HTB_RATE_FACTOR` times the link's rate): it only orders, the tbf shapes.

    >>> [ln.split(" parent ")[-1] for ln in shaper("p1", 5e6, 9000, sources=["10.200.0.1", "10.200.0.2"])][1:5]
    ['1:1 handle 2: htb default 1', '2: classid 2:1 htb rate 400000000bit quantum 18028', '2:1 bfifo limit 16777216', '2: classid 2:2 htb rate 400000000bit quantum 18028']
    >>> shaper("p1", 5e6, 9000, sources=["10.200.0.1", "10.200.0.2"])[-1]
    'filter add dev p1 parent 2: protocol ip prio 1 u32 match ip src 10.200.0.2/32 flowid 2:3'
    """
    verb = "change" if change else "replace"
    limit = queue_bytes(wire_rate, mtu)
    out = [f"qdisc {verb} dev {ifname} root handle 1: tbf rate {names.format_rate(wire_rate)} "
           f"burst {burst_bytes(wire_rate, mtu)}b limit {limit}"]
    if change:
        return out
    us = int(round(delay * 1e6)) if delay >= 1e-6 else 0
    # netem counts its queue in packets: as many as the byte limit holds of the smallest (ack) frames
    leaf = f"netem delay {us}us limit {limit // 64}" if us else f"bfifo limit {limit}"
    if len(sources) < 2:
        if us:
            out.append(f"qdisc replace dev {ifname} parent 1:1 handle 10: {leaf}")
        return out
    quantum = fair_quantum(wire_rate, mtu)
    rate = names.format_rate(HTB_RATE_FACTOR * wire_rate)
    out.append(f"qdisc replace dev {ifname} parent 1:1 handle 2: htb default 1")
    for c in range(1, len(sources) + 2):
        out += [f"class replace dev {ifname} parent 2: classid 2:{c:x} htb rate {rate} quantum {quantum}",
                f"qdisc replace dev {ifname} parent 2:{c:x} {leaf}"]
    out += [f"filter add dev {ifname} parent 2: protocol ip prio 1 u32 match ip src {ip}/32 flowid 2:{c + 2:x}"
            for c, ip in enumerate(sources)]
    return out


def fair_quantum(wire_rate: float, mtu: int) -> int:
    """Bytes each source may send per round-robin turn: the largest packet the tbf passes whole, its
    bucket (it cuts larger GSO packets into frames; packets of up to a bucket pass as they are).

    htb serves a class until its deficit goes negative, then adds one quantum: with a quantum below
    the largest packet a class sends one packet per turn, whatever its size, so a source whose
    packets are two frames long would get twice the share of one whose packets are one.  A quantum
    of the largest packet makes the turns equal in bytes (deficit round-robin).  (Measured, this
    did not settle the bulk flows' shares: docs/testbed.md, *Sharing a link fairly, measured*.)

    >>> fair_quantum(5e6, 9000)        # two frames: 2 ms at 40 Mbit is less
    18028
    """
    return burst_bytes(wire_rate, mtu)

#: the htb classes' rate, times the link's: never reached (the tbf above lets less through), so the htb
#: orders packets and never holds them back, and ``degrade``'s change of the tbf alone sets the rate
HTB_RATE_FACTOR = 10


def link_sources(p: Plan, lft: np.ndarray) -> list[list[int]]:
    """For every directed link of ``p``'s fabric, the host ports (terminals; hosts where each has one)
    whose routes (forwarding tables ``lft``: switch x destination terminal -> link) cross it, in order.

    >>> from fabscope.fabric.generators import fat_tree
    >>> from fabscope.routing import make_routing
    >>> from fabscope.testbed.plan import make_plan, forwarding
    >>> p = make_plan("tb1", fat_tree(k=2, levels=2), rate=25e6)
    >>> src = link_sources(p, forwarding(p.fabric, make_routing(p.fabric, "dmodk")))
    >>> src[0], max(len(s) for s in src)          # a host's own cable; a leaf's downlink to a host
    ([0], 3)
    """
    f = p.fabric
    n, n_t = f.n_hosts, f.n_terminals
    term_link = np.asarray(f.terminal_uplink, np.int64)
    crossed = np.zeros((f.n_links, n_t), bool)
    terms = np.arange(n_t)
    for d in range(n_t):
        src = terms[(f.terminal_host != f.terminal_host[d]) & (lft[f.terminal_switch - n, d] >= 0)]
        link = term_link[src]
        for _ in range(f.n_nodes + 1):               # a route visits each node once: a loop in the tables ends here
            if not src.size:
                break
            crossed[link, src] = True
            node = f.link_dst[link]
            go = node >= n                                   # still at a switch: its table's next link
            src, node = src[go], node[go]
            link = lft[node - n, d] if src.size else link[:0]
            ok = link >= 0
            src, link = src[ok], link[ok]
    return [np.flatnonzero(row).tolist() for row in crossed]


def shaper_lines(p: Plan, node: int, sources: list[list[int]] | None = None, fair: bool = True) -> list[str]:
    """``tc -batch`` lines for ``node``: a tbf shaper (and netem delay where the fabric gives >= 1 us)
    on the egress of each of its ports, i.e. one direction of each of its cables; with ``fair``, on
    each port that two or more hosts' routes cross (``sources``, from :func:`link_sources`), the
    per-host round-robin of :func:`shaper`."""
    f = p.fabric
    out: list[str] = []
    for l in np.flatnonzero(f.link_src == node):
        ips = [p.terminal_ip(t) for t in sources[int(l)]] if fair and sources is not None else []
        out += shaper(p.ifname(int(l)), p.wire_rate(int(l)), p.mtu,
                      float(f.link_latency[l]) if p.delay else 0.0, sources=ips)
    return out


SWITCH_SYSCTL = ["net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
                 "net.ipv4.icmp_ratelimit=0", "net.ipv6.conf.all.disable_ipv6=1",
                 "net.ipv6.conf.default.disable_ipv6=1"]
# icmp_ratelimit: a host with several ports answered traceroute's probes to its second port only after
# a dozen unanswered ones (the ICMP errors to one peer share one rate limit)
HOST_SYSCTL = ["net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0", "net.ipv4.icmp_ratelimit=0",
               "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
