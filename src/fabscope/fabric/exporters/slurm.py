"""Slurm ``topology.conf`` for the tree plugin: the scheduler allocates along the fabric.

Leaf switches list their hosts (``Nodes=``), every higher switch the
switches one level down it connects to (``Switches=``), with host lists
compressed as Slurm writes them.

>>> from fabscope.fabric.generators import fat_tree
>>> print(to_slurm(fat_tree(k=2, levels=2)), end="")
# topology.conf for fat-tree(k=2,levels=2), written by fabscope (TopologyPlugin=topology/tree)
SwitchName=s1-0000 Nodes=h[0000-0001]
SwitchName=s1-0001 Nodes=h[0002-0003]
SwitchName=s2-0000 Switches=s1-[0000-0001]
SwitchName=s2-0001 Switches=s1-[0000-0001]
>>> compress_hostlist(["node1", "node2", "node3", "node7", "login"])
'login,node[1-3,7]'
>>> expand_hostlist("login,node[1-3,7],n[08-10]")
['login', 'node1', 'node2', 'node3', 'node7', 'n08', 'n09', 'n10']
"""

from __future__ import annotations

import os
import re
from typing import Sequence

import numpy as np

from fabscope.atomic import atomic_open
from fabscope.errors import FabricError
from fabscope.fabric.model import Fabric
from fabscope.names import plain, slurm_name

_TAIL = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(names: Sequence[str]) -> str:
    """Slurm's compressed form: ``node[0001-0016,0018]``; names are grouped by prefix and digit count."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for n in dict.fromkeys(names):
        m = _TAIL.match(n)
        if m is None or "[" in n or "," in n:
            plain.append(n)
        else:
            groups.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
    out = sorted(plain)
    for (prefix, width), nums in sorted(groups.items()):
        nums = sorted(set(nums))
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        runs, start = [], nums[0]
        for a, b in zip(nums, nums[1:] + [None]):
            if b is None or b != a + 1:
                runs.append(f"{start:0{width}d}" + (f"-{a:0{width}d}" if a != start else ""))
                start = b
        out.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(out)


def expand_hostlist(text: str) -> list[str]:
    """Inverse of :func:`compress_hostlist`."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?", text):
        prefix, ranges = m.group(1), m.group(2)
        if ranges is None:
            out.append(prefix)
            continue
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            width = len(lo)
            out.extend(f"{prefix}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1))
    return out


def to_slurm(fabric: Fabric) -> str:
    """``topology.conf`` text; FabricError if the fabric is not a tree of switches."""
    from fabscope.fabric.importers.infer import infer_hierarchy

    nh = fabric.n_hosts
    level = fabric.switch_level.astype(np.int64)
    sl = np.flatnonzero((fabric.link_src >= nh) & (fabric.link_dst >= nh))
    if np.any(level <= 0):
        hs = fabric.host_switch.astype(np.int64) - nh
        cab = np.c_[fabric.link_src[sl] - nh, fabric.link_dst[sl] - nh]
        level = infer_hierarchy(fabric.n_switches, hs, cab)[0].astype(np.int64)
        if np.any(level <= 0):
            raise FabricError(f"fabric {fabric.name!r} is not a tree of switches (a torus or mesh?); "
                              "Slurm's tree topology cannot describe it")
    names = fabric.node_names
    lines = [f"# topology.conf for {plain(fabric.name)}, written by fabscope (TopologyPlugin=topology/tree)"]
    hosts_of: dict[int, list[str]] = {}
    for i in range(fabric.n_links):
        a, b = int(fabric.link_src[i]), int(fabric.link_dst[i])
        if a < nh <= b:
            hosts_of.setdefault(b - nh, []).append(names[a])
    below: dict[int, set[int]] = {}
    for i in sl.tolist():
        a, b = int(fabric.link_src[i]) - nh, int(fabric.link_dst[i]) - nh
        if level[a] == level[b] + 1:
            below.setdefault(a, set()).add(b)
    for s in np.lexsort((np.arange(fabric.n_switches), level)).tolist():
        name = slurm_name(names[nh + s], "switch")
        if s in hosts_of:
            nodes = [slurm_name(h, "host") for h in hosts_of[s]]
            lines.append(f"SwitchName={name} Nodes={compress_hostlist(nodes)}")
        elif s in below:
            lines.append(f"SwitchName={name} Switches={compress_hostlist([names[nh + c] for c in below[s]])}")
    return "\n".join(lines) + "\n"


def write_slurm(fabric: Fabric, path: str | os.PathLike[str]) -> None:
    text = to_slurm(fabric)
    with atomic_open(path) as fh:
        fh.write(text)
