"""The one model of a machine that every part of fabscope takes.

A :class:`Fabric` is a graph of nodes (hosts first, then switches) joined by
*directed* links.  Every physical cable is two directed links stored side by
side: link ``2k`` goes one way and link ``2k + 1`` the other, so the reverse
of link ``i`` is ``i ^ 1``.  Parallel cables between the same two nodes are
separate links.  Capacities are in bytes per second, latencies in seconds.

Hosts carry their cores, sockets and an intra-node resource (the memory that
on-node MPI copies go through).  A host has one or more *ports*, each its own
cable to a switch; routes and tables address host ports as *terminals*
(:mod:`fabscope.fabric.terminals`).  Named hierarchy *groups* (leaf, near set,
director, pod, group...) give every host a group id per level; they classify
pairs of hosts, nearest level first, as the seeds' tables do.

Arrays are held read-only; functions that "change" a fabric return a new one.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=2, levels=2)
>>> f.n_hosts, f.n_switches, f.n_links
(4, 4, 16)
>>> f.class_labels
('Same Node', 'Same Leaf', 'Diff Leafs')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric.terminals import HostPorts, read_only

#: MB as the seeds and the OSU benchmarks count it.
MB = 1.0e6
#: the most cores a host may have (a bound on typos and hostile files, far above any node's)
MAX_CORES = 1 << 20


_ro = read_only


@dataclass(frozen=True, eq=False)
class Level:
    """A level of the hierarchy used to classify pairs of hosts.

    ``key`` names an entry of :attr:`Fabric.groups`; ``label`` is how the
    seeds' tables name a pair whose hosts share a group of that level.
    """

    key: str
    label: str


class _LinkNames:
    """``names[i]`` of link ``i`` (``a -> b``), made only for the one a message names."""

    def __init__(self, f: "Fabric") -> None:
        self.f = f

    def __getitem__(self, i: int) -> str:
        return f"{self.f.node_names[int(self.f.link_src[i])]} -> {self.f.node_names[int(self.f.link_dst[i])]}"


@dataclass(frozen=True, eq=False)
class Fabric(HostPorts):
    """Hosts, switches, directed links, groups and coordinates.

    Build one with a generator (:mod:`fabscope.fabric.generators`), an
    importer, or :func:`fabscope.fabric.io.load`; the constructor checks the
    arrays for consistency and raises :class:`FabricError` naming the fault.
    """

    name: str
    node_names: tuple[str, ...]
    n_hosts: int
    link_src: np.ndarray
    link_dst: np.ndarray
    link_capacity: np.ndarray
    link_latency: np.ndarray
    #: port numbers at each end (1-based for switches as InfiniBand counts them, 0 unknown)
    link_src_port: np.ndarray | None = None
    link_dst_port: np.ndarray | None = None
    #: per switch: 1 for leaves, rising towards the core; 0 where unknown
    switch_level: np.ndarray | None = None
    host_cores: np.ndarray | None = None
    host_sockets: np.ndarray | None = None
    #: bytes/s of the node's shared intra-node resource (all on-node copies)
    host_memory_bw: np.ndarray | None = None
    #: bytes/s one on-node copy reaches alone
    host_copy_rate: np.ndarray | None = None
    #: level key -> group id per host, for classifying pairs
    groups: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: levels of the hierarchy, nearest first (after the node itself)
    levels: tuple[Level, ...] = ()
    #: label of pairs that share no level
    far_label: str = "Far"
    #: torus/mesh coordinates of each host's router, shape (n_hosts, ndims)
    coords: np.ndarray | None = None
    dims: tuple[int, ...] | None = None
    periodic: tuple[bool, ...] | None = None
    #: the generator and its parameters, or where the fabric was read from
    params: Mapping[str, Any] = field(default_factory=dict)
    #: forwarding tables read from the switches (importers): ``lft[switch, terminal]`` = link id, -1 none
    lft: np.ndarray | None = None
    #: InfiniBand base LIDs of hosts (their first port) and switches (port 0); 0 unknown
    host_lid: np.ndarray | None = None
    switch_lid: np.ndarray | None = None
    #: LID mask control: each host port answers to 2**lmc LIDs from its base LID
    lmc: int = 0
    #: base LID of every host port (terminal), as each CA port has its own; where hosts have one
    #: port it is ``host_lid``; where given without ``host_lid``, that is each host's first port's
    terminal_lid: np.ndarray | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        n_nodes = len(self.node_names)
        if not 0 < self.n_hosts <= n_nodes:
            raise FabricError(f"fabric {self.name!r}: {self.n_hosts} hosts among {n_nodes} nodes")
        set_(self, "node_names", tuple(self.node_names))
        for name, dtype in (("link_src", np.int32), ("link_dst", np.int32),
                            ("link_capacity", np.float64), ("link_latency", np.float64)):
            set_(self, name, _ro(getattr(self, name), dtype))
        n_links = len(self.link_src)
        for name in ("link_dst", "link_capacity", "link_latency"):
            if len(getattr(self, name)) != n_links:
                raise FabricError(f"fabric {self.name!r}: {name} has {len(getattr(self, name))} entries for {n_links} links")
        for name in ("link_src_port", "link_dst_port"):
            v = getattr(self, name)
            set_(self, name, _ro(np.zeros(n_links) if v is None else v, np.int16))
        n_sw = n_nodes - self.n_hosts
        defaults = {
            "switch_level": (np.zeros(n_sw), np.int16, n_sw),
            "host_cores": (np.ones(self.n_hosts), np.int32, self.n_hosts),
            "host_sockets": (np.ones(self.n_hosts), np.int32, self.n_hosts),
            "host_memory_bw": (np.full(self.n_hosts, 10e9), np.float64, self.n_hosts),
            "host_copy_rate": (np.full(self.n_hosts, 5e9), np.float64, self.n_hosts),
        }
        for name, (default, dtype, size) in defaults.items():
            v = getattr(self, name)
            arr = _ro(default if v is None else v, dtype)
            if len(arr) != size:
                raise FabricError(f"fabric {self.name!r}: {name} has {len(arr)} entries, expected {size}")
            set_(self, name, arr)
        groups = {k: _ro(v, np.int32) for k, v in dict(self.groups).items()}
        for k, v in groups.items():
            if len(v) != self.n_hosts:
                raise FabricError(f"fabric {self.name!r}: group level {k!r} has {len(v)} entries for {self.n_hosts} hosts")
        set_(self, "groups", groups)
        for lv in self.levels:
            if lv.key not in groups:
                raise FabricError(f"fabric {self.name!r}: level {lv.key!r} has no groups")
        if self.coords is not None:
            c = _ro(self.coords, np.int32)
            if c.ndim != 2 or len(c) != self.n_hosts:
                raise FabricError(f"fabric {self.name!r}: coords must have one row per host")
            set_(self, "coords", c)
            if self.dims is None or len(self.dims) != c.shape[1]:
                raise FabricError(f"fabric {self.name!r}: coords need dims of the same rank")
            set_(self, "dims", tuple(int(d) for d in self.dims))
            per = self.periodic if self.periodic is not None else (True,) * len(self.dims)
            set_(self, "periodic", tuple(bool(p) for p in per))
        set_(self, "params", dict(self.params))
        self._check_links()
        self._check_host_values()
        self._check_tables()

    def _check_tables(self) -> None:
        set_ = object.__setattr__
        if self.host_lid is not None and self.single_port:       # one port: the host's LID is its port's
            set_(self, "terminal_lid", self.host_lid)
        if self.host_lid is None and self.terminal_lid is not None and len(self.terminal_lid) == self.n_terminals:
            set_(self, "host_lid", np.asarray(self.terminal_lid)[self.host_uplinks[0][:-1]])
        for name, size in (("host_lid", self.n_hosts), ("switch_lid", self.n_switches),
                           ("terminal_lid", self.n_terminals)):
            v = getattr(self, name)
            if v is not None:
                arr = _ro(v, np.int32)
                if arr.shape != (size,):
                    raise FabricError(f"fabric {self.name!r}: {name} has {arr.size} entries, expected {size}")
                set_(self, name, arr)
        if self.lft is not None:
            lft = _ro(self.lft, np.int32)
            if lft.shape != (self.n_switches, self.n_terminals):
                raise FabricError(f"fabric {self.name!r}: forwarding tables of shape {lft.shape}, "
                                  f"expected ({self.n_switches}, {self.n_terminals}) (switches, host ports)")
            if lft.size and (lft.max() >= self.n_links or lft.min() < -1):
                raise FabricError(f"fabric {self.name!r}: forwarding tables name a link that does not exist")
            set_(self, "lft", lft)

    def _check_host_values(self) -> None:
        """Every host number finite and in range, named (a memory_bw of -1 hung the solver)."""
        from fabscope.numbers import numbers

        checks = (("host_cores", 1, MAX_CORES, False), ("host_sockets", 1, MAX_CORES, False),
                  ("host_memory_bw", 0, None, True), ("host_copy_rate", 0, None, True))
        hosts = self.node_names[: self.n_hosts]
        for name, lo, hi, lo_open in checks:
            numbers(getattr(self, name), f"fabric {self.name!r}: {name[5:]} of host", lo, hi, lo_open=lo_open,
                    error=FabricError, names=hosts)
        cables = _LinkNames(self)
        numbers(self.link_capacity, f"fabric {self.name!r}: capacity of link", 0, lo_open=True,
                error=FabricError, names=cables)
        numbers(self.link_latency, f"fabric {self.name!r}: latency of link", 0, error=FabricError, names=cables)

    def _check_links(self) -> None:
        n_nodes = len(self.node_names)
        src, dst = self.link_src, self.link_dst
        if len(src) % 2:
            raise FabricError(f"fabric {self.name!r}: an odd number of directed links; each cable needs both directions")
        bad = np.flatnonzero((src < 0) | (src >= n_nodes) | (dst < 0) | (dst >= n_nodes))
        if len(bad):
            i = int(bad[0])
            raise FabricError(f"fabric {self.name!r}: link {i} ({int(src[i])} -> {int(dst[i])}) is dangling: "
                              f"no node with that index (there are {n_nodes})")
        rev = np.arange(len(src)) ^ 1
        bad = np.flatnonzero((src != dst[rev]) | (dst != src[rev]))
        if len(bad):
            i = int(bad[0])
            raise FabricError(f"fabric {self.name!r}: link {i} {self.link_name(i)} and link {i ^ 1} are not two directions of one cable")
        loops = np.flatnonzero(src == dst)
        if len(loops):
            raise FabricError(f"fabric {self.name!r}: link {int(loops[0])} joins node {self.node_names[src[loops[0]]]!r} to itself")
        if np.any(self.link_capacity <= 0):
            i = int(np.flatnonzero(self.link_capacity <= 0)[0])
            raise FabricError(f"fabric {self.name!r}: link {i} {self.link_name(i)} has capacity {self.link_capacity[i]}")
        host_links = np.bincount(src[src < self.n_hosts], minlength=self.n_hosts)
        if np.any(host_links == 0):
            h = int(np.flatnonzero(host_links == 0)[0])
            raise FabricError(f"fabric {self.name!r}: host {self.node_names[h]!r} has no link")
        hh = (src < self.n_hosts) & (dst < self.n_hosts)
        if np.any(hh):
            i = int(np.flatnonzero(hh)[0])
            raise FabricError(f"fabric {self.name!r}: link {i} {self.link_name(i)} joins two hosts; hosts attach to switches")

    # ---- sizes and names -------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_switches(self) -> int:
        return self.n_nodes - self.n_hosts

    @property
    def n_links(self) -> int:
        """Directed links (twice the cables)."""
        return len(self.link_src)

    @property
    def host_names(self) -> tuple[str, ...]:
        return self.node_names[: self.n_hosts]

    @cached_property
    def host_index(self) -> dict[str, int]:
        """Host name -> host index."""
        return {n: i for i, n in enumerate(self.host_names)}

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.node_names)}

    def link_name(self, i: int) -> str:
        """``"a[p] -> b[q]"`` for link ``i``, with port numbers where known."""
        s, d = int(self.link_src[i]), int(self.link_dst[i])
        sp, dp = int(self.link_src_port[i]), int(self.link_dst_port[i])
        a = self.node_names[s] + (f"[{sp}]" if sp else "")
        b = self.node_names[d] + (f"[{dp}]" if dp else "")
        return f"{a} -> {b}"

    @property
    def total_cores(self) -> int:
        return int(self.host_cores.sum())

    # ---- adjacency ------------------------------------------------------
    @cached_property
    def out_links(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of out-links per node: ``(indptr, link ids)``, links in id order."""
        order = np.argsort(self.link_src, kind="stable").astype(np.int32)
        counts = np.bincount(self.link_src, minlength=self.n_nodes)
        indptr = np.zeros(self.n_nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr, order

    @cached_property
    def host_uplinks(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the links leaving each host (its NIC ports)."""
        indptr, order = self.out_links
        return indptr[: self.n_hosts + 1], order[: indptr[self.n_hosts]]

    @cached_property
    def host_switch(self) -> np.ndarray:
        """The switch each host's first port attaches to (node index)."""
        indptr, order = self.host_uplinks
        return self.link_dst[order[indptr[:-1]]]

    @property
    def class_labels(self) -> tuple[str, ...]:
        """Labels of the classes :meth:`classify` returns, nearest first.

        Fabrics with coordinates (tori, meshes, hypercubes) class pairs beyond
        their levels by router hops: ``"1 hop"``, ``"2 hops"``, ...
        """
        head = ("Same Node",) + tuple(lv.label for lv in self.levels)
        if self.coords is None:
            return head + (self.far_label,)
        return head + tuple(f"{d} hop" + ("s" if d > 1 else "") for d in range(1, self.diameter + 1))

    @property
    def diameter(self) -> int:
        """Router hops across the coordinate space (fabrics with coordinates only)."""
        assert self.dims is not None and self.periodic is not None
        return int(sum(k // 2 if p else k - 1 for k, p in zip(self.dims, self.periodic)))

    def coord_hops(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Minimal router hops between hosts ``a`` and ``b`` on a torus or mesh."""
        assert self.coords is not None and self.dims is not None and self.periodic is not None
        d = np.abs(self.coords[a] - self.coords[b])
        k = np.array(self.dims)
        d = np.where(np.array(self.periodic), np.minimum(d, k - d), d)
        return d.sum(axis=-1)

    def classify(self, a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> np.ndarray:
        """Class index of each pair of hosts: 0 same node, then the levels, last far.

        >>> from fabscope.fabric.generators import fat_tree
        >>> f = fat_tree(k=2, levels=2)
        >>> f.classify([0, 0, 0], [0, 1, 2]).tolist()
        [0, 1, 2]
        """
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        if self.coords is not None:
            out = (len(self.levels) + self.coord_hops(a, b)).astype(np.int16)
        else:
            out = np.full(a.shape, len(self.levels) + 1, dtype=np.int16)
        for i, lv in reversed(list(enumerate(self.levels, start=1))):
            g = self.groups[lv.key]
            out[g[a] == g[b]] = i
        out[a == b] = 0
        return out

    def with_params(self, **params: Any) -> "Fabric":
        """A copy with ``params`` updated (arrays are shared; they are read-only)."""
        from dataclasses import replace

        return replace(self, params={**self.params, **params})

    def __repr__(self) -> str:
        return (f"Fabric({self.name!r}, hosts={self.n_hosts}, switches={self.n_switches}, "
                f"links={self.n_links})")


class FabricBuilder:
    """Collects nodes and cables, then builds a :class:`Fabric`.

    Generators and importers use it so that every fabric obeys the same
    conventions (hosts first, cables as two directed links, ports counted).

    >>> b = FabricBuilder("tiny")
    >>> h = b.add_hosts(["n0", "n1"])
    >>> s = b.add_switch("sw", level=1)
    >>> b.cable(h[0], s, 1e9); b.cable(h[1], s, 1e9)
    >>> b.build(groups={"leaf": [0, 0]}, levels=[Level("leaf", "Same Leaf")]).n_links
    4
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.hosts: list[str] = []
        self.switches: list[str] = []
        self.levels_of: list[int] = []
        self._cables: list[tuple[int, int, float, float, int, int]] = []
        self._ports: dict[int, int] = {}
        self._frozen_hosts = False

    def add_hosts(self, names: Sequence[str]) -> list[int]:
        if self._frozen_hosts:
            raise FabricError("add every host before the first switch")
        start = len(self.hosts)
        self.hosts.extend(names)
        return list(range(start, len(self.hosts)))

    def add_switch(self, name: str, level: int = 0) -> int:
        """Add a switch; returns its *switch number* (node index is resolved at build)."""
        self._frozen_hosts = True
        self.switches.append(name)
        self.levels_of.append(level)
        return -len(self.switches)  # negative: a switch, resolved in build()

    def _next_port(self, node: int) -> int:
        p = self._ports.get(node, 0) + 1
        self._ports[node] = p
        return p

    def cable(self, a: int, b: int, capacity: float, latency: float = 0.0,
              port_a: int | None = None, port_b: int | None = None) -> None:
        """Join ``a`` and ``b`` (host indices, or switch numbers from :meth:`add_switch`)."""
        pa = self._next_port(a) if port_a is None else port_a
        pb = self._next_port(b) if port_b is None else port_b
        self._cables.append((a, b, capacity, latency, pa, pb))

    def resolve(self, x: int) -> int:
        return x if x >= 0 else len(self.hosts) + (-x - 1)

    def build(self, **kw: Any) -> Fabric:
        n = len(self._cables)
        src = np.empty(2 * n, dtype=np.int32)
        dst = np.empty(2 * n, dtype=np.int32)
        cap = np.empty(2 * n)
        lat = np.empty(2 * n)
        sp = np.empty(2 * n, dtype=np.int16)
        dp = np.empty(2 * n, dtype=np.int16)
        if n:
            c = np.array(self._cables, dtype=np.float64)
            a = c[:, 0].astype(np.int64)
            b = c[:, 1].astype(np.int64)
            nh = len(self.hosts)
            a = np.where(a >= 0, a, nh - a - 1)
            b = np.where(b >= 0, b, nh - b - 1)
            src[0::2], src[1::2] = a, b
            dst[0::2], dst[1::2] = b, a
            cap[0::2] = cap[1::2] = c[:, 2]
            lat[0::2] = lat[1::2] = c[:, 3]
            sp[0::2], sp[1::2] = c[:, 4], c[:, 5]
            dp[0::2], dp[1::2] = c[:, 5], c[:, 4]
        # host ports are not numbered by InfiniBand switches; keep 1 for their NIC
        return Fabric(
            name=kw.pop("name", self.name),
            node_names=tuple(self.hosts + self.switches),
            n_hosts=len(self.hosts),
            link_src=src, link_dst=dst, link_capacity=cap, link_latency=lat,
            link_src_port=sp, link_dst_port=dp,
            switch_level=np.array(self.levels_of, dtype=np.int16),
            **kw,
        )
