r"""Graphviz: the switches and their cables (parallel cables drawn once, labelled with their count).

Hosts are drawn when there are few (``hosts=None``: up to 64), else each
switch's label counts them.

>>> from fabscope.fabric.generators import fat_tree
>>> print(to_dot(fat_tree(k=2, levels=2, links_per_pair=2), hosts=False))
graph "fat-tree(k=2,levels=2)" {
  node [shape=box, fontsize=10];
  "s1-0000" [label="s1-0000\n2 hosts"];
  "s1-0001" [label="s1-0001\n2 hosts"];
  "s2-0000";
  "s2-0001";
  "s1-0000" -- "s2-0000" [label="2", penwidth=2];
  "s1-0000" -- "s2-0001" [label="2", penwidth=2];
  "s1-0001" -- "s2-0000" [label="2", penwidth=2];
  "s1-0001" -- "s2-0001" [label="2", penwidth=2];
}
"""

from __future__ import annotations

import os
from collections import Counter

from fabscope.atomic import atomic_open
from fabscope.fabric.model import Fabric
from fabscope.names import plain


def _q(s: str) -> str:
    return '"' + plain(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(fabric: Fabric, hosts: bool | None = None) -> str:
    show_hosts = fabric.n_hosts <= 64 if hosts is None else hosts
    nh, names = fabric.n_hosts, fabric.node_names
    pairs: Counter[tuple[int, int]] = Counter()
    n_hosts_of: Counter[int] = Counter()
    for i in range(0, fabric.n_links, 2):
        a, b = sorted((int(fabric.link_src[i]), int(fabric.link_dst[i])))
        if a < nh and not show_hosts:
            n_hosts_of[b] += 1
            continue
        pairs[(a, b)] += 1
    out = [f"graph {_q(fabric.name)} {{", "  node [shape=box, fontsize=10];"]
    if show_hosts:
        out += [f"  {_q(names[h])} [shape=ellipse];" for h in range(nh)]
    for v in range(nh, fabric.n_nodes):
        k = n_hosts_of.get(v)
        out.append(f"  {_q(names[v])}" + (f" [label={_q(names[v])[:-1]}\\n{k} hosts\"];" if k else ";"))
    for (a, b), k in sorted(pairs.items()):
        out.append(f"  {_q(names[a])} -- {_q(names[b])}" + (f' [label="{k}", penwidth={min(k, 8)}];' if k > 1 else ";"))
    out.append("}")
    return "\n".join(out)


def write_dot(fabric: Fabric, path: str | os.PathLike[str], hosts: bool | None = None) -> None:
    text = to_dot(fabric, hosts)
    with atomic_open(path) as fh:
        fh.write(text + "\n")
