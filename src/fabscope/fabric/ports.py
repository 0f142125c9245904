"""How MPI uses a host's ports: a policy maps each message to one or more port pairs.

A host with several ports (dual-port HCAs, dual-rail nodes, a NIC per rail
on GPU pods) is used in one of two ways by the real stacks:

``rank``
    one port per rank: rank ``r`` takes port ``local rank mod ports`` of its
    host (MPI's round-robin of local ranks over the NICs; with as many ranks
    as NICs per host, rank i on NIC i, as rail-aligned GPU pods run), and
    reaches the destination's port of the same index, on its own rail.
``stripe[:THRESHOLD]``
    one message above ``THRESHOLD`` bytes split evenly over all port pairs
    ``p -> p`` (IBM HPS's bulk transfer stripes from ``MP_BULK_MIN_MSG_SIZE``,
    about 500,000 bytes, seed 003; UCX's multi-rail rendezvous; Open MPI's
    TCP BTL over several interfaces); below it, one port as ``rank``.

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.errors import TrafficError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement

#: bytes from which ``stripe`` splits a message: IBM HPS's "message striping at ~500000 bytes" (seed 003)
STRIPE_THRESHOLD = 500_000
POLICIES = ("rank", "stripe")


@dataclass(frozen=True)
class PortPolicy:
    """``rank`` or ``stripe`` (with the size from which a message is striped)."""

    name: str = "rank"
    threshold: int = STRIPE_THRESHOLD

    def __str__(self) -> str:
        return self.name if self.name == "rank" else f"stripe:{self.threshold}"


def parse_ports(spec: str | PortPolicy | None) -> PortPolicy:
    """``rank`` (default), ``stripe`` or ``stripe:THRESHOLD`` (a size: ``500000``, ``512KiB``, ``1M``).

    >>> str(parse_ports("stripe:64KiB")), str(parse_ports(None))
    ('stripe:65536', 'rank')
    >>> parse_ports("spread")
    Traceback (most recent call last):
    ...
    fabscope.errors.TrafficError: unknown port policy 'spread'; choose from rank, stripe[:THRESHOLD]
    """
    if isinstance(spec, PortPolicy):
        return spec
    if spec is None:
        return PortPolicy()
    name, colon, arg = str(spec).strip().partition(":")
    name = name.strip().lower()
    if name not in POLICIES:
        raise TrafficError(f"unknown port policy {name[:40]!r}; choose from rank, stripe[:THRESHOLD]")
    if name == "rank":
        if colon:
            raise TrafficError("port policy 'rank' takes no threshold")
        return PortPolicy("rank")
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


def rank_ports(fabric: Fabric, placement: Placement, src_rank: np.ndarray, dst_rank: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The ``rank`` policy's port pair of each message: the source rank's port (local rank mod
    its host's ports) and the destination's port of the same index (mod its ports)."""
    hs = placement.host[src_rank].astype(np.int64)
    hd = placement.host[dst_rank].astype(np.int64)
    n_ports = fabric.host_n_ports
    p = placement.core[src_rank].astype(np.int64) % n_ports[hs]
    return fabric.terminal(hs, p), fabric.terminal(hd, p % n_ports[hd])


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
    ts, td = rank_ports(fabric, placement, src_rank, dst_rank)
    if policy.name == "rank":
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
