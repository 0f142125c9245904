"""Clos directors and Itasca, the fabric of seed 000.

A 324-port QDR director is a two-level fat tree of 36-port switches::

      spine 1 ... spine 9          9 spines, 36 ports: 2 cables to each line
        ||  \\\\    //  ||
      line 1 ........ line 18      18 line switches: 18 ports up, 18 ports down
       |||             |||
     18 ports down each: 18 x 18 = 324 = 9 x 36

Itasca (University of Minnesota, 2009) hangs 16-node leaf switches under two
such directors.  Each leaf has 2 QDR cables to each of 2 line switches in each
director (8 uplinks for 16 nodes: 2:1).  Leaves that share their line
switches form a *near set* of 9 (9 leaves x 2 cables = 18 down ports)::

        director A                         director B
     line 2s   line 2s+1               line 2s   line 2s+1
        \\\\      //    ... 9 leaves ...    \\\\      //
         leaf 9s+j (16 nodes, 8 cores each)

The seed counts 68 leaves and 1074 nodes in its summary but shows 67 leaves
of 16 compute nodes: 67 x 16 = 1072 compute nodes, the 68th leaf and the two
remaining nodes being storage and service.  fabscope models the 67 compute
leaves (the default ``leaves=67``), since only compute nodes run MPI ranks.

``host_ports=P`` gives every host a P-port HCA cabled to P switches (a
dual-port HCA on two leaves, or on two line switches of a director): the
leaves (line switches) go in groups of P, and the hosts of a group have
port p on its p-th switch, so a group holds as many hosts as one switch has
host ports.  Hosts of one group classify as on one leaf (line switch).
"""

from __future__ import annotations

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric.generators.size import Size
from fabscope.fabric.generators.trees import QDR_BYTES_PER_S, SWITCH_LATENCY_S
from fabscope.fabric.model import MB, Fabric, FabricBuilder, Level

#: one ping-pong copy between two ranks of an Itasca node (seed 000: best Same Node pair)
ITASCA_COPY_RATE = 3773.94 * MB
#: a Nehalem socket's intra-socket MPI bandwidth (seed 001: 7474 MB/s), two sockets per node
NEHALEM_NODE_MEMORY = 2 * 7474 * MB


def _add_director(b: FabricBuilder, tag: str, radix: int, links_per_pair: int,
                  capacity: float, latency: float) -> list[int]:
    """Add a director's line and spine switches; return the line switches."""
    if radix < 2 or radix % 2 or (radix // 2) % links_per_pair:
        raise FabricError(f"director radix {radix} with {links_per_pair} cables per pair does not divide evenly")
    n_lines = radix // links_per_pair
    n_spines = radix // 2 // links_per_pair
    lines = [b.add_switch(f"{tag}-line{i + 1:02d}", level=2) for i in range(n_lines)]
    spines = [b.add_switch(f"{tag}-spine{i + 1}", level=3) for i in range(n_spines)]
    for ln in lines:
        for sp in spines:
            for _ in range(links_per_pair):
                b.cable(ln, sp, capacity, latency)
    return lines


def director_size(radix: int = 36, *, links_per_pair: int = 2, host_ports: int = 1, **_: object) -> Size:
    """What :func:`director` would build.

    >>> director_size().links == director().n_links
    True
    >>> director_size(host_ports=2).hosts == director(host_ports=2).n_hosts
    True
    """
    radix, lpp, ports = int(radix), max(int(links_per_pair), 1), max(int(host_ports), 1)
    lines, spines = radix // lpp, radix // 2 // lpp
    cables = lines * (radix // 2)
    return Size(cables // ports, lines + spines, 2 * (cables + lines * spines * lpp))


def itasca_size(leaves: int = 67, *, nodes_per_leaf: int = 16, directors: int = 2, radix: int = 36,
                links_per_pair: int = 2, host_ports: int = 1, **_: object) -> Size:
    """What :func:`itasca` would build.

    >>> itasca_size().links == itasca().n_links
    True
    >>> itasca_size(66, host_ports=2).links == itasca(66, host_ports=2).n_links
    True
    """
    leaves, npl, dirs, radix = (max(int(x), 0) for x in (leaves, nodes_per_leaf, directors, radix))
    lpp, ports = max(int(links_per_pair), 1), max(int(host_ports), 1)
    lines, spines = radix // lpp, radix // 2 // lpp
    host_cables = leaves // ports * ports * npl
    cables = host_cables + leaves * dirs * 2 * lpp + dirs * lines * spines * lpp
    return Size(host_cables // ports, leaves + dirs * (lines + spines), 2 * cables)


def director(radix: int = 36, *, links_per_pair: int = 2, capacity: float = QDR_BYTES_PER_S,
             latency: float = SWITCH_LATENCY_S, cores: int = 8, sockets: int = 2, host_ports: int = 1) -> Fabric:
    """A two-level Clos director of radix-R switches with its hosts on the line ports.

    R/links_per_pair line switches of R/2 host ports each, and R/2/links_per_pair spines;
    ``host_ports=P``: P-port hosts, port p on the p-th line switch of a group of P.

    >>> d = director()           # Itasca's 324-port QDR director
    >>> d.n_hosts, d.n_switches, d.n_links // 2
    (324, 27, 648)
    >>> d = director(host_ports=2)       # 162 dual-port hosts, each on two line switches
    >>> d.n_hosts, [d.terminal_name(t) for t in (0, 1)], [d.node_names[int(s)] for s in d.terminal_switch[:2]]
    (162, ['h0000[1]', 'h0000[2]'], ['dir-line01', 'dir-line02'])
    """
    n_lines = radix // max(links_per_pair, 1)
    per_line = radix // 2
    ports = _check_ports(host_ports, n_lines, "line switches of the director")
    b = FabricBuilder(f"director(radix={radix}" + (f",host_ports={ports})" if ports > 1 else ")"))
    hosts = b.add_hosts([f"h{i:04d}" for i in range(n_lines // ports * per_line)])
    lines = _add_director(b, "dir", radix, links_per_pair, capacity, latency)
    for i, h in enumerate(hosts):
        for p in range(ports):
            b.cable(h, lines[i // per_line * ports + p], capacity, latency)
    n = len(hosts)
    return b.build(
        groups={"line": np.arange(n) // per_line}, levels=(Level("line", "Same Line Switch"),),
        far_label="Diff Line Switches",
        host_cores=np.full(n, cores), host_sockets=np.full(n, sockets),
        params={"generator": "director", "radix": radix, "links_per_pair": links_per_pair,
                "capacity": capacity, "latency": latency, **({"host_ports": ports} if ports > 1 else {})},
    )


def _check_ports(host_ports: int, switches: int, what: str) -> int:
    ports = int(host_ports)
    if ports < 1 or switches % ports:
        raise FabricError(f"host_ports={host_ports}: the {switches} {what} do not split into groups of {host_ports}")
    return ports


def itasca(leaves: int = 67, *, nodes_per_leaf: int = 16, near_set: int = 9, directors: int = 2,
           radix: int = 36, links_per_pair: int = 2, capacity: float = QDR_BYTES_PER_S,
           latency: float = SWITCH_LATENCY_S, cores: int = 8, sockets: int = 2,
           copy_rate: float = ITASCA_COPY_RATE, memory_bw: float = NEHALEM_NODE_MEMORY,
           host_ports: int = 1) -> Fabric:
    """Itasca as seed 000 describes it (see the module docstring).

    >>> f = itasca()
    >>> f.n_hosts, f.n_switches, f.total_cores
    (1072, 121, 8576)
    >>> f.class_labels
    ('Same Node', 'Same Leaf', 'Near Set', 'Far Leafs')
    >>> f = itasca(66, host_ports=2)      # dual-port HCAs: 33 leaf pairs of 16 nodes
    >>> f.n_hosts, [f.node_names[int(s)] for s in f.terminal_switch[:2]]
    (528, ['leaf01', 'leaf02'])
    """
    lines_per_dir = radix // links_per_pair
    pairs_per_dir = lines_per_dir // 2
    if near_set * links_per_pair != radix // 2:
        raise FabricError(f"a near set of {near_set} leaves with {links_per_pair} cables to each of 2 line "
                          f"switches needs {near_set * links_per_pair} down ports on each; a line switch has {radix // 2}")
    if not 1 <= leaves <= pairs_per_dir * near_set:
        raise FabricError(f"itasca: {leaves} leaves; two directors of radix {radix} take 1..{pairs_per_dir * near_set}")
    ports = _check_ports(host_ports, leaves, "leaves")
    b = FabricBuilder("itasca")
    n = leaves // ports * nodes_per_leaf
    hosts = b.add_hosts([f"node{i + 1:04d}" for i in range(n)])
    leaf_sw = [b.add_switch(f"leaf{i + 1:02d}", level=1) for i in range(leaves)]
    dir_lines = [_add_director(b, f"dir{chr(65 + d)}", radix, links_per_pair, capacity, latency)
                 for d in range(directors)]
    for i, h in enumerate(hosts):
        for p in range(ports):
            b.cable(h, leaf_sw[i // nodes_per_leaf * ports + p], capacity, latency)
    for li, leaf in enumerate(leaf_sw):
        s = li // near_set
        for lines in dir_lines:
            for ln in (lines[2 * s], lines[2 * s + 1]):
                for _ in range(links_per_pair):
                    b.cable(leaf, ln, capacity, latency)
    leaf_of = np.arange(n) // nodes_per_leaf          # of a dual-port host: its pair of leaves
    return b.build(
        groups={"leaf": leaf_of, "near": leaf_of * ports // near_set},
        levels=(Level("leaf", "Same Leaf"), Level("near", "Near Set")),
        far_label="Far Leafs",
        host_cores=np.full(n, cores), host_sockets=np.full(n, sockets),
        host_copy_rate=np.full(n, copy_rate), host_memory_bw=np.full(n, memory_bw),
        params={"generator": "itasca", "leaves": leaves, "nodes_per_leaf": nodes_per_leaf,
                "near_set": near_set, "directors": directors, "radix": radix,
                "links_per_pair": links_per_pair, "capacity": capacity, "latency": latency,
                "cores": cores, "copy_rate": copy_rate, "memory_bw": memory_bw,
                **({"host_ports": ports} if ports > 1 else {})},
    )
