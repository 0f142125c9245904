"""Where ranks can go: a fabric, the job's nodes and their slots; and a checked Mapping.

A :class:`Target` lists the job's *slots* (one per rank it can run),
host by host, in the order the job's node list names the hosts.  A
:class:`Mapping` is a value: it checks on creation that it sends every rank to
its own slot (one-to-one), and errors name both sizes.

>>> from fabscope.fabric.generators import itasca
>>> f = itasca()
>>> t = Target.from_names(f, ["node0017"] * 8 + ["node0001"] * 8)    # a $PBS_NODEFILE
>>> t.n_slots, t.n_nodes, t.slot_host[:2].tolist(), [f.host_names[h] for h in t.nodes]
(16, 2, [16, 16], ['node0017', 'node0001'])
>>> m = Mapping(t, [0, 8, 1], "example")
>>> m.host.tolist(), m.core.tolist()
([16, 0, 16], [0, 0, 1])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from fabscope.errors import MappingError, PlacementError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement

__all__ = ["Target", "Mapping", "read_nodes"]


def read_nodes(arg: str) -> list[tuple[str, int]]:
    """``(host, slots)`` from a host file path (``$PBS_NODEFILE``, Open MPI, Hydra, plain),
    or else SLURM's compressed host list (one slot per name; ``--ppn`` sets the rest).

    Parsing is :mod:`fabscope.measure.hostlists`'s, shared with the measure commands.

    >>> read_nodes("n[1-3]")
    [('n1', 1), ('n2', 1), ('n3', 1)]
    """
    import os

    from fabscope.measure.hostlists import expand_nodelist, parse_hostfile, read_hostfile

    if os.path.isfile(arg):
        return read_hostfile(arg)
    if os.sep in arg:
        raise PlacementError(f"host file {arg} does not exist")
    return parse_hostfile(expand_nodelist(arg))


@dataclass(frozen=True, eq=False)
class Target:
    """Slots of a job on a fabric: ``slot_host[s]`` and ``slot_core[s]`` of every slot ``s``."""

    fabric: Fabric
    nodes: np.ndarray        # host index of each node of the job, in node-list order
    slots_per_node: np.ndarray

    def __post_init__(self) -> None:
        nodes = np.asarray(self.nodes, dtype=np.int64)
        spn = np.asarray(self.slots_per_node, dtype=np.int64)
        if len(nodes) == 0:
            raise PlacementError("the job has no nodes")
        if len(np.unique(nodes)) != len(nodes):
            raise PlacementError("a node appears twice in the job's node list")
        cores = self.fabric.host_cores[nodes]
        over = np.flatnonzero(spn > cores)
        if len(over):
            h = int(nodes[over[0]])
            raise PlacementError(f"{int(spn[over[0]])} ranks per node on {self.fabric.host_names[h]!r}, "
                                 f"which has {int(self.fabric.host_cores[h])} cores")
        if np.any(spn < 1):
            raise PlacementError("ranks per node must be positive")
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "slots_per_node", spn)

    # ---- construction ----------------------------------------------------
    @classmethod
    def from_names(cls, fabric: Fabric, names: Sequence[str], slots: Sequence[int] | None = None,
                   ppn: int | None = None) -> "Target":
        """From host names: repeats add slots (``$PBS_NODEFILE``), or ``slots`` per name,
        or ``ppn`` for every node (overrides both)."""
        idx = fabric.host_index
        missing = [n for n in names if n not in idx]
        if missing:
            more = f" ({len(set(missing))} unknown hosts)" if len(set(missing)) > 1 else ""
            raise PlacementError(f"host {missing[0]!r} of the node list is not in fabric {fabric.name!r}{more}")
        order: list[int] = []
        count: dict[int, int] = {}
        for i, n in enumerate(names):
            h = idx[n]
            if h not in count:
                order.append(h)
                count[h] = 0
            count[h] += 1 if slots is None else int(slots[i])
        spn = [ppn if ppn else count[h] for h in order]
        return cls(fabric, np.array(order), np.array(spn))

    @classmethod
    def whole(cls, fabric: Fabric, n_ranks: int, ppn: int | None = None) -> "Target":
        """The first hosts of the fabric that hold ``n_ranks`` at ``ppn`` per node.

        ``ppn`` defaults to the fewest ranks per node that fit: ranks spread
        over every host when they divide evenly, else full nodes.

        >>> from fabscope.fabric.generators import torus
        >>> Target.whole(torus((4, 4)), 32).slots_per_node[:3].tolist()
        [2, 2, 2]
        """
        cores = int(fabric.host_cores.max())
        if ppn is None:
            ppn = n_ranks // fabric.n_hosts if n_ranks % fabric.n_hosts == 0 and n_ranks >= fabric.n_hosts else cores
            ppn = max(1, min(ppn, cores))
        n_nodes = -(-n_ranks // ppn)
        if n_nodes > fabric.n_hosts:
            raise MappingError(f"{n_ranks} ranks at {ppn} per node need {n_nodes} nodes; "
                               f"fabric {fabric.name!r} has {fabric.n_hosts}")
        return cls(fabric, np.arange(n_nodes), np.full(n_nodes, ppn))

    # ---- slots -----------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_slots(self) -> int:
        return int(self.slots_per_node.sum())

    @property
    def slot_host(self) -> np.ndarray:
        return np.repeat(self.nodes, self.slots_per_node)

    @property
    def slot_core(self) -> np.ndarray:
        starts = np.repeat(np.cumsum(self.slots_per_node) - self.slots_per_node, self.slots_per_node)
        return np.arange(self.n_slots) - starts

    @property
    def node_of_slot(self) -> np.ndarray:
        """Position of each slot's node in :attr:`nodes`."""
        return np.repeat(np.arange(self.n_nodes), self.slots_per_node)

    def check_fits(self, n_ranks: int) -> None:
        if n_ranks > self.n_slots:
            raise MappingError(f"{n_ranks} ranks, but the job has {self.n_slots} slots "
                               f"({self.n_nodes} nodes x {_ppn_text(self.slots_per_node)} ranks per node)")

    def split_io(self, n_io: int) -> tuple["Target", np.ndarray]:
        """Keep ``n_io`` nodes for I/O ranks, one rank each: the compute target and the I/O hosts.

        The I/O nodes are the last of the job's nodes in fabric order, so the
        compute nodes stay as packed in the hierarchy as they were.
        """
        if n_io <= 0:
            return self, np.zeros(0, np.int64)
        if n_io >= self.n_nodes:
            raise MappingError(f"{n_io} I/O ranks each need a node of their own; the job has {self.n_nodes} nodes")
        order = np.argsort(self.nodes, kind="stable")
        io_pos = np.sort(order[-n_io:])
        keep = np.setdiff1d(np.arange(self.n_nodes), io_pos)
        return Target(self.fabric, self.nodes[keep], self.slots_per_node[keep]), self.nodes[io_pos]


def _ppn_text(spn: np.ndarray) -> str:
    lo, hi = int(spn.min()), int(spn.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


@dataclass(frozen=True, eq=False)
class Mapping:
    """Rank ``r`` runs in slot ``slot[r]`` of ``target``: one-to-one, checked on creation."""

    target: Target
    slot: np.ndarray
    algorithm: str = ""
    seconds: float = 0.0
    info: Any = None

    def __post_init__(self) -> None:
        s = np.array(self.slot, dtype=np.int64, copy=True)
        n, n_slots = len(s), self.target.n_slots
        if n == 0:
            raise MappingError("a mapping of no ranks")
        if n > n_slots:
            raise MappingError(f"{n} ranks, but the job has {n_slots} slots")
        if s.min() < 0 or s.max() >= n_slots:
            raise MappingError(f"{self.algorithm or 'mapping'}: slot {int(s.max() if s.max() >= n_slots else s.min())} "
                               f"is outside the job's {n_slots} slots")
        if len(np.unique(s)) != n:
            dup = np.flatnonzero(np.bincount(s) > 1)[0]
            raise MappingError(f"{self.algorithm or 'mapping'}: slot {int(dup)} holds two ranks "
                               f"({n} ranks for {n_slots} slots)")
        s.setflags(write=False)
        object.__setattr__(self, "slot", s)

    @property
    def n_ranks(self) -> int:
        return len(self.slot)

    @property
    def fabric(self) -> Fabric:
        return self.target.fabric

    @property
    def host(self) -> np.ndarray:
        return self.target.slot_host[self.slot]

    @property
    def core(self) -> np.ndarray:
        return self.target.slot_core[self.slot]

    @property
    def host_names(self) -> list[str]:
        names = self.fabric.host_names
        return [names[h] for h in self.host.tolist()]

    def placement(self) -> Placement:
        """The foundation's :class:`Placement` (for the flow model)."""
        return Placement(self.host.astype(np.int32), self.core.astype(np.int32))

    def with_io(self, io_ranks: Sequence[int], io_hosts: np.ndarray, full: "Target") -> "Mapping":
        """Insert I/O ranks (one per I/O host) into a mapping of the other ranks onto ``full``."""
        io_ranks = np.asarray(io_ranks, dtype=np.int64)
        n = self.n_ranks + len(io_ranks)
        is_io = np.zeros(n, bool)
        is_io[io_ranks] = True
        # slot index in `full` of (host, core)
        first = np.full(self.fabric.n_hosts, -1, np.int64)
        first[full.nodes] = np.cumsum(full.slots_per_node) - full.slots_per_node
        out = np.empty(n, np.int64)
        out[~is_io] = first[self.host] + self.core
        out[io_ranks] = first[np.asarray(io_hosts, np.int64)]
        return Mapping(full, out, self.algorithm, self.seconds, self.info)
