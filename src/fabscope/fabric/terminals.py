"""A host's ports, as the rest of fabscope addresses them: *terminals*.

A host has one or more ports, each its own cable to a switch (dual-port HCAs,
multi-rail nodes, a NIC per rail on GPU pods): its out-links in port order
(:attr:`Fabric.host_uplinks <fabscope.fabric.model.Fabric.host_uplinks>`).  A
terminal is one host port, numbered host by host: port ``p`` of host ``h`` is
terminal ``host_uplinks[0][h] + p``.  Routes go from terminal to terminal and
destination-based tables are indexed by terminal, as an InfiniBand LFT is by
each port's LID; where every host has one port, terminal ``t`` is host ``t``.

:class:`HostPorts` holds these views; :class:`~fabscope.fabric.model.Fabric`
takes them from it, so that the model's own module holds the graph alone.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from fabscope.errors import FabricError


def read_only(a: Any, dtype: Any) -> np.ndarray:
    """A read-only copy of ``a`` as ``dtype`` (a fabric's arrays never change once built)."""
    arr = np.array(a, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


_ro = read_only


class HostPorts:
    """Terminals (host ports) of a fabric: mixed into :class:`~fabscope.fabric.model.Fabric`, whose
    ``host_uplinks``, ``link_*`` arrays, ``node_names`` and ``host_index`` they read."""

    @property
    def n_terminals(self) -> int:
        """Host ports, all hosts together (``n_hosts`` where each host has one).

        >>> from fabscope.fabric.generators import fat_tree
        >>> f = fat_tree(k=2, levels=2, rails=2)
        >>> f.n_hosts, f.n_terminals, f.single_port
        (4, 8, False)
        """
        return int(self.host_uplinks[0][-1])

    @property
    def single_port(self) -> bool:
        """Every host has one port: terminal ids are host ids."""
        return self.n_terminals == self.n_hosts

    @cached_property
    def host_n_ports(self) -> np.ndarray:
        """Ports of each host (int64)."""
        return np.diff(self.host_uplinks[0]).astype(np.int64)

    @cached_property
    def terminal_host(self) -> np.ndarray:
        """The host of each terminal (int64)."""
        return _ro(np.repeat(np.arange(self.n_hosts, dtype=np.int64), self.host_n_ports), np.int64)

    @cached_property
    def terminal_port(self) -> np.ndarray:
        """Each terminal's port index on its host, 0-based in port order (int64)."""
        indptr = self.host_uplinks[0]
        return _ro(np.arange(self.n_terminals, dtype=np.int64) - indptr[self.terminal_host], np.int64)

    @property
    def terminal_uplink(self) -> np.ndarray:
        """The link leaving each terminal (its cable towards the switch)."""
        return self.host_uplinks[1]

    @cached_property
    def terminal_downlink(self) -> np.ndarray:
        """The link into each terminal, where every route to it ends (``uplink ^ 1``)."""
        return _ro(self.terminal_uplink ^ 1, np.int64)

    @cached_property
    def terminal_switch(self) -> np.ndarray:
        """The switch each terminal attaches to (node index, int64)."""
        return _ro(self.link_dst[self.terminal_uplink], np.int64)

    def terminal(self, host: Any, port: Any = 0) -> np.ndarray:
        """Terminal ids of ``port`` (0-based index) of ``host``, element-wise;
        raises :class:`FabricError` naming a host that has no such port.

        >>> from fabscope.fabric.generators import fat_tree
        >>> fat_tree(k=2, levels=2, rails=2).terminal([0, 3], [1, 0]).tolist()
        [1, 6]
        """
        h = np.asarray(host, dtype=np.int64)
        p = np.asarray(port, dtype=np.int64)
        bad = (h < 0) | (h >= self.n_hosts)
        if np.any(bad):
            raise FabricError(f"fabric {self.name!r}: no host {int(h[bad].flat[0])}")
        h, p = np.broadcast_arrays(h, p)
        bad = (p < 0) | (p >= self.host_n_ports[h])
        if np.any(bad):
            i = np.flatnonzero(bad.ravel())[0]
            raise FabricError(f"fabric {self.name!r}: host {self.node_names[int(h.flat[i])]!r} has no port "
                              f"{int(p.flat[i])} (it has {int(self.host_n_ports[h.flat[i]])})")
        return self.host_uplinks[0][h] + p

    def host_pair_terminals(self, src: Any, dst: Any) -> tuple[np.ndarray, np.ndarray]:
        """The port pair of each host pair where no port policy says (host-indexed routing):
        the source's port ``dst mod its ports`` and the destination's port of the same index
        (mod its ports), on one rail.  Identity (int64) where every host has one port."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if self.single_port:
            return src, dst
        n_ports = self.host_n_ports
        p = dst % n_ports[src]
        return self.terminal(src, p), self.terminal(dst, p % n_ports[dst])

    def terminal_name(self, t: int) -> str:
        """``"node0001[2]"``: the host and its port number (the cable's port, else index + 1).

        >>> from fabscope.fabric.generators import fat_tree
        >>> fat_tree(k=2, levels=2, rails=2).terminal_name(3)
        'h0001[2]'
        """
        t = int(t)
        if not 0 <= t < self.n_terminals:
            raise FabricError(f"fabric {self.name!r}: no host port {t} (there are {self.n_terminals})")
        port = int(self.link_src_port[self.terminal_uplink[t]]) or int(self.terminal_port[t]) + 1
        return f"{self.node_names[int(self.terminal_host[t])]}[{port}]"

    def terminal_label(self, t: int) -> str:
        """How messages name terminal ``t``: its host where hosts have one port, else
        :meth:`terminal_name`."""
        return self.node_names[int(t)] if self.single_port else self.terminal_name(t)

    def find_terminal(self, name: str) -> int:
        """The terminal a name gives: ``"node0001[2]"`` (port number as :meth:`terminal_name`
        writes it) or a host name alone (its first port).  One line naming it if unknown.

        >>> from fabscope.fabric.generators import fat_tree
        >>> f = fat_tree(k=2, levels=2, rails=2)
        >>> f.find_terminal("h0001[2]"), f.find_terminal("h0002")
        (3, 4)
        """
        host, br, rest = name.partition("[")
        h = self.host_index.get(host)
        if h is None:
            raise FabricError(f"fabric {self.name!r}: no host {host!r}")
        start, end = int(self.host_uplinks[0][h]), int(self.host_uplinks[0][h + 1])
        if not br:
            return start
        for t in range(start, end):
            if self.terminal_name(t) == name:
                return t
        raise FabricError(f"fabric {self.name!r}: host {host!r} has no port {name[len(host):]!r}")

    # ---- classification -----------------------------------------------
