"""How MPI uses a host's ports: a policy maps each message to one or more port pairs.

A host with several ports (dual-port HCAs, dual-rail nodes, a NIC per rail
on GPU pods) is used in one of these ways by the real stacks:

``rank``
    one port per rank, as MPI with a NIC per rank: rank ``r`` sends from
    port ``local rank mod ports`` of its host (MPI's round-robin of local
    ranks over the NICs; rank i on NIC i where there are as many ranks as
    NICs) and its message arrives at the destination *rank's* own port
    (its local rank mod its host's ports), the address that rank listens
    on.  Ranks of different local index talk across rails, through the
    spines of a rail-optimised fabric.  Where the destination's port cannot
    be reached from the source's (independent planes: separate subnets), the
    message goes to the destination host's port on the source's plane.
``rail``
    rail-aligned: the message stays on the source port's rail, arriving at
    the destination host's port of the same index, as stacks that move data
    over the node to the NIC of the right rail first give (NCCL's PXN).
``stripe[:THRESHOLD]``
    one message above ``THRESHOLD`` bytes split evenly over all port pairs
    ``p -> p`` (IBM HPS's bulk transfer stripes from ``MP_BULK_MIN_MSG_SIZE``,
    about 500,000 bytes, seed 003; UCX's multi-rail rendezvous; Open MPI's
    TCP BTL over several interfaces); below it, one port as ``rank``.

A pair is on the *same rail* when every sub-flow goes from a port to the
destination's port of the same index, else *cross rail*
(:func:`rail_class`; on multi-port fabrics a rail is the ports of one index).

Each port pair is a *sub-flow* between two terminals
(:meth:`fabscope.fabric.model.Fabric.terminal`).  A message's bandwidth is
the sum of its sub-flows' rates; in time it ends when its last sub-flow ends.
Where every host has one port both policies give each message its one pair,
host to host.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric.placement import Placement
>>> f = fat_tree(k=2, levels=2, rails=2)
>>> pl = Placement.block(f, 4, ppn=1)
>>> s = split_flows(f, pl, [0, 0], [1, 2], [1e6, 1e3], parse_ports("stripe"))
>>> s.flow.tolist(), [f.terminal_name(t) for t in s.src], s.bytes.tolist()
([0, 0, 1], ['h0000[1]', 'h0000[2]', 'h0000[1]'], [500000.0, 500000.0, 1000.0])

Two ranks per host on rail leaves joined by spines: rank 0 (port 1) to rank 3
(local rank 1: port 2 of the next host) crosses rails under ``rank``, not under ``rail``:

>>> f = fat_tree(k=2, levels=2, rails=2, rail_optimised=True)
>>> pl = Placement.block(f, 8, ppn=2)
>>> [[f.terminal_name(t) for t in split_flows(f, pl, [0], [3], [1e6], p).dst] for p in ("rank", "rail")]
[['h0001[2]'], ['h0001[1]']]
>>> [rail_class(f, split_flows(f, pl, [0], [3], [1e6], p)).tolist() for p in ("rank", "rail")]
[[1], [0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.errors import TrafficError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement

#: bytes from which ``stripe`` splits a message: IBM HPS's "message striping at ~500000 bytes" (seed 003)
STRIPE_THRESHOLD = 500_000
POLICIES = ("rank", "rail", "stripe")
#: labels of :func:`rail_class`'s values 0 and 1 (2: both ends on one host, no rail)
RAIL_LABELS = ("Same Rail", "Cross Rail")
_CHOICES = "rank, rail, stripe[:THRESHOLD]"


@dataclass(frozen=True)
class PortPolicy:
    """``rank``, ``rail`` or ``stripe`` (with the size from which a message is striped)."""

    name: str = "rank"
    threshold: int = STRIPE_THRESHOLD

    def __str__(self) -> str:
        return f"stripe:{self.threshold}" if self.name == "stripe" else self.name


def parse_ports(spec: str | PortPolicy | None) -> PortPolicy:
    """``rank`` (default), ``rail``, ``stripe`` or ``stripe:THRESHOLD`` (a size: ``500000``, ``512KiB``, ``1M``).

    >>> str(parse_ports("stripe:64KiB")), str(parse_ports(None))
    ('stripe:65536', 'rank')
    >>> parse_ports("spread")
    Traceback (most recent call last):
    ...
    fabscope.errors.TrafficError: unknown port policy 'spread'; choose from rank, rail, stripe[:THRESHOLD]
    """
    if isinstance(spec, PortPolicy):
        return spec
    if spec is None:
        return PortPolicy()
    name, colon, arg = str(spec).strip().partition(":")
    name = name.strip().lower()
    if name not in POLICIES:
        raise TrafficError(f"unknown port policy {name[:40]!r}; choose from {_CHOICES}")
    if name != "stripe":
        if colon:
            raise TrafficError(f"port policy {name!r} takes no threshold")
        return PortPolicy(name)
    if not colon:
        return PortPolicy("stripe")
    from fabscope.errors import FabscopeError
    from fabscope.units import parse_size

    arg = arg.strip()
    if arg.startswith("threshold="):
        arg = arg[len("threshold="):]
    try:
        return PortPolicy("stripe", parse_size(arg))
    except FabscopeError as err:
        raise TrafficError(f"port policy stripe: threshold: {err}") from None


@dataclass(frozen=True, eq=False)
class SubFlows:
    """Sub-flow ``i`` carries ``bytes[i]`` of flow ``flow[i]`` from terminal ``src[i]`` to ``dst[i]``
    (flows' sub-flows in order, flow by flow).  ``identity``: one sub-flow per flow, in order."""

    n_flows: int
    flow: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    identity: bool

    @property
    def n(self) -> int:
        return len(self.flow)

    def total(self, v: np.ndarray) -> np.ndarray:
        """Per flow, the sum of its sub-flows' ``v`` (rates: a striped pair's bandwidth)."""
        return v if self.identity else np.bincount(self.flow, weights=v, minlength=self.n_flows)

    def most(self, v: np.ndarray) -> np.ndarray:
        """Per flow, the largest of its sub-flows' ``v`` (end times, hops, latencies)."""
        if self.identity:
            return v
        out = np.full(self.n_flows, -np.inf)
        np.maximum.at(out, self.flow, v)
        return out

    def least(self, v: np.ndarray) -> np.ndarray:
        """Per flow, the smallest of its sub-flows' ``v``."""
        if self.identity:
            return v
        out = np.full(self.n_flows, np.inf)
        np.minimum.at(out, self.flow, v)
        return out


def planes(fabric: Fabric) -> np.ndarray:
    """Connected part of the switches each terminal is on (independent planes: one per rail).

    >>> from fabscope.fabric.generators import fat_tree
    >>> [len(set(planes(fat_tree(k=2, levels=2, rails=2, rail_optimised=o)).tolist())) for o in (False, True)]
    [2, 1]
    """
    from fabscope.sparse import connected_components, coo_matrix

    n = fabric.n_nodes
    sw = (fabric.link_src >= fabric.n_hosts) & (fabric.link_dst >= fabric.n_hosts)  # hosts join no planes
    g = coo_matrix((np.ones(int(sw.sum())), (fabric.link_src[sw], fabric.link_dst[sw])), shape=(n, n))
    return connected_components(g, directed=False)[1][fabric.terminal_switch]


def rank_ports(fabric: Fabric, placement: Placement, src_rank: np.ndarray, dst_rank: np.ndarray,
               policy: PortPolicy | str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The port pair of each message under ``rank`` (default) or ``rail``: the source rank's port
    (local rank mod its host's ports), and the destination rank's own port (``rank``, where
    reachable from the source's) or the destination host's port of the source's index (``rail``)."""
    hs = placement.host[src_rank].astype(np.int64)
    hd = placement.host[dst_rank].astype(np.int64)
    n_ports = fabric.host_n_ports
    p = placement.core[src_rank].astype(np.int64) % n_ports[hs]
    ts, aligned = fabric.terminal(hs, p), fabric.terminal(hd, p % n_ports[hd])
    if parse_ports(policy).name == "rail":
        return ts, aligned
    own = fabric.terminal(hd, placement.core[dst_rank].astype(np.int64) % n_ports[hd])
    plane = planes(fabric)
    return ts, np.where(plane[own] == plane[ts], own, aligned)


def rail_class(fabric: Fabric, sub: SubFlows) -> np.ndarray:
    """Per flow: 0 every sub-flow on one rail (port index to the same index), 1 some crosses rails,
    2 both ends on one host (:data:`RAIL_LABELS`)."""
    tp = fabric.terminal_port
    hs, hd = fabric.terminal_host[sub.src], fabric.terminal_host[sub.dst]
    cross = np.bincount(sub.flow, weights=(tp[sub.src] != tp[sub.dst]) & (hs != hd), minlength=sub.n_flows)
    node = np.bincount(sub.flow, weights=hs == hd, minlength=sub.n_flows)
    return np.where(node > 0, 2, cross > 0).astype(np.int16)


def split_flows(fabric: Fabric, placement: Placement, src_rank, dst_rank, nbytes,
                policy: PortPolicy | str | None = None) -> SubFlows:
    """Each message's sub-flows under ``policy`` (see the module docstring)."""
    policy = parse_ports(policy)
    src_rank = np.asarray(src_rank, dtype=np.int64)
    dst_rank = np.asarray(dst_rank, dtype=np.int64)
    nbytes = np.asarray(nbytes, dtype=float)
    n = len(src_rank)
    if fabric.single_port:
        hs = placement.host[src_rank].astype(np.int64)
        hd = placement.host[dst_rank].astype(np.int64)
        return SubFlows(n, np.arange(n), hs, hd, nbytes, True)
    ts, td = rank_ports(fabric, placement, src_rank, dst_rank, "rail" if policy.name == "rail" else "rank")
    if policy.name != "stripe":
        return SubFlows(n, np.arange(n), ts, td, nbytes, True)
    hs, hd = fabric.terminal_host[ts], fabric.terminal_host[td]
    k = np.minimum(fabric.host_n_ports[hs], fabric.host_n_ports[hd])
    k = np.where((nbytes >= policy.threshold) & (hs != hd), k, 1)
    flow = np.repeat(np.arange(n), k)
    p = np.arange(len(flow)) - np.repeat(np.cumsum(k) - k, k)         # port index within the message
    one = np.repeat(k == 1, k)
    src = np.where(one, ts[flow], fabric.host_uplinks[0][hs[flow]] + p)
    dst = np.where(one, td[flow], fabric.host_uplinks[0][hd[flow]] + p)
    return SubFlows(n, flow, src, dst, nbytes[flow] / k[flow], bool(np.all(k == 1)))
