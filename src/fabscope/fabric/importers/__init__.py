"""Importers: real fabrics from ``ibnetdiscover`` and their forwarding tables.

>>> import os
>>> s = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tests", "fabric", "data")
>>> f = import_fabric(os.path.join(s, "ibnetdiscover.small.txt"), os.path.join(s, "opensm-lfts.small.minhop"))
>>> f.n_hosts, f.n_switches, f.n_links // 2, f.class_labels
(16, 6, 32, ('Same Node', 'Same Leaf', 'Diff Leafs'))
>>> f.host_names[:3], int(f.host_lid[0]), f.lft.shape
(('H-0-0', 'H-0-1', 'H-0-2'), 1, (6, 16))
"""

from __future__ import annotations

from fabscope.fabric.importers.assemble import build_fabric, natural_key
from fabscope.fabric.importers.hostmap import HostMap, parse_hostmap, read_hostmap
from fabscope.fabric.importers.ibnetdiscover import Topology, parse_ibnetdiscover, read_ibnetdiscover
from fabscope.fabric.rates import link_rate
from fabscope.fabric.importers.lfts import Tables, check_lft, parse_lfts, read_lfts, tables_to_lft
from fabscope.fabric.model import Fabric

__all__ = ["HostMap", "Tables", "Topology", "build_fabric", "check_lft", "import_fabric", "link_rate",
           "natural_key", "parse_hostmap", "parse_ibnetdiscover", "parse_lfts", "read_hostmap",
           "read_ibnetdiscover", "read_lfts", "tables_to_lft"]


def import_fabric(topology: str, lfts: str | None = None, hostmap: str | None = None,
                  name: str | None = None, cores: int = 1) -> Fabric:
    """Read ``ibnetdiscover`` output (either form), optional tables and host map, into a Fabric."""
    import os

    topo = read_ibnetdiscover(topology)
    tables = read_lfts(lfts) if lfts else None
    hm = read_hostmap(hostmap) if hostmap else None
    f = build_fabric(topo, tables, hm, name=name or os.path.splitext(os.path.basename(topology))[0], cores=cores)
    return f.with_params(topology=os.path.abspath(topology), lfts=os.path.abspath(lfts) if lfts else None)
