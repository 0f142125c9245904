"""Where ranks sit: a rank -> (host, core) map checked against the fabric.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2, cores=2)
>>> Placement.block(f, n_ranks=4, ppn=2).host.tolist()
[0, 0, 1, 1]
>>> Placement.cyclic(f, n_ranks=4, ppn=2).host.tolist()
[0, 1, 0, 1]
>>> Placement.from_hostlist(f, ["h0002", "h0002", "h0000"]).host.tolist()
[2, 2, 0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fabscope.errors import PlacementError
from fabscope.limits import human_bytes, memory_limit
from fabscope.fabric.model import Fabric


@dataclass(frozen=True, eq=False)
class Placement:
    """``host[r]`` and ``core[r]`` of every rank ``r`` (host indices of a fabric)."""

    host: np.ndarray
    core: np.ndarray

    @property
    def n_ranks(self) -> int:
        return len(self.host)

    @staticmethod
    def _check(fabric: Fabric, host: np.ndarray) -> "Placement":
        if len(host) == 0:
            raise PlacementError("no ranks to place")
        if host.min() < 0 or host.max() >= fabric.n_hosts:
            raise PlacementError(f"a rank sits on host index {int(host.max())}, the fabric has {fabric.n_hosts} hosts")
        # core = order of the rank among the ranks on its host
        order = np.argsort(host, kind="stable")
        sorted_h = host[order]
        starts = np.r_[0, np.flatnonzero(np.diff(sorted_h)) + 1]
        first = np.repeat(starts, np.diff(np.r_[starts, len(host)]))
        core = np.empty_like(host)
        core[order] = np.arange(len(host)) - first
        counts = np.bincount(host, minlength=fabric.n_hosts)
        over = np.flatnonzero(counts > fabric.host_cores)
        if len(over):
            h = int(over[0])
            raise PlacementError(f"{int(counts[h])} ranks on host {fabric.node_names[h]!r}, which has {int(fabric.host_cores[h])} cores")
        host = host.astype(np.int32)
        host.setflags(write=False)
        core = core.astype(np.int32)
        core.setflags(write=False)
        return Placement(host, core)

    @classmethod
    def block(cls, fabric: Fabric, n_ranks: int, ppn: int | None = None,
              hosts: Sequence[int] | None = None) -> "Placement":
        """Ranks ``ppn`` at a time on consecutive hosts (``ppn`` defaults to all cores)."""
        ppn = ppn or int(fabric.host_cores.max())
        hosts_arr = np.arange(fabric.n_hosts) if hosts is None else np.asarray(hosts)
        _fits(fabric, n_ranks, ppn, len(hosts_arr))
        return cls._check(fabric, hosts_arr[np.arange(n_ranks) // ppn])

    @classmethod
    def cyclic(cls, fabric: Fabric, n_ranks: int, ppn: int | None = None,
               hosts: Sequence[int] | None = None) -> "Placement":
        """Rank ``r`` on host ``r mod n_nodes`` of the ``ceil(n_ranks / ppn)`` hosts used."""
        ppn = ppn or int(fabric.host_cores.max())
        hosts_arr = np.arange(fabric.n_hosts) if hosts is None else np.asarray(hosts)
        _fits(fabric, n_ranks, ppn, len(hosts_arr))
        n_nodes = -(-n_ranks // ppn)
        return cls._check(fabric, hosts_arr[np.arange(n_ranks) % n_nodes])

    @classmethod
    def from_hostlist(cls, fabric: Fabric, names: Sequence[str]) -> "Placement":
        """One rank per line of a host file (``$PBS_NODEFILE`` repeats a host per rank)."""
        idx = fabric.host_index
        missing = [n for n in names if n not in idx]
        if missing:
            raise PlacementError(f"host {missing[0]!r} is not in fabric {fabric.name!r}"
                                 + (f" ({len(missing)} unknown hosts)" if len(missing) > 1 else ""))
        return cls._check(fabric, np.array([idx[n] for n in names], dtype=np.int64))

    @classmethod
    def from_hosts(cls, fabric: Fabric, host: Sequence[int]) -> "Placement":
        return cls._check(fabric, np.asarray(host, dtype=np.int64))


def _fits(fabric: Fabric, n_ranks: int, ppn: int, n_hosts: int) -> None:
    if n_ranks <= 0:
        raise PlacementError(f"rank count must be positive, got {n_ranks}")
    if ppn <= 0:
        raise PlacementError(f"ranks per node must be positive, got {ppn}")
    cores = int(fabric.host_cores.max())
    if ppn > cores:
        raise PlacementError(f"{ppn} ranks per node, but hosts of {fabric.name!r} have {cores} cores")
    if n_ranks > ppn * n_hosts:
        raise PlacementError(f"{n_ranks} ranks at {ppn} per node need {-(-n_ranks // ppn)} hosts; "
                             f"{fabric.name!r} has {n_hosts}")
    if n_ranks * BYTES_PER_RANK < SMALL:
        return
    lim, source = memory_limit()
    if n_ranks * BYTES_PER_RANK > lim:
        raise PlacementError(f"{n_ranks:,} ranks ({ppn:,} a node): about {human_bytes(n_ranks * BYTES_PER_RANK)} "
                             f"to place them; the limit is {human_bytes(lim)} ({source})")


#: placing a rank holds its host and core and sorts them: about 6 int64 a rank at the peak
BYTES_PER_RANK = 48
#: placements smaller than this are not checked against the memory limit (no /proc read per placement)
SMALL = 64e6
