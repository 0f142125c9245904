r"""ibsim net files: bring any fabscope fabric up under the real subnet manager.

The format is ibnetdiscover's, simplified: a header per node and one line
per connected port, hosts first (ibsim attaches the SM to the first port in
the file).  Where a link's capacity is an InfiniBand rate (fabscope's QDR is
4x QDR: 3071 MB/s) the width and speed are written too (``w=`` and ``s=``
bit masks, and ``e=`` for FDR, EDR and HDR, set at both ends as ibsim
requires), so ibnetdiscover reports them and the import gets the same
capacities back.

>>> from fabscope.fabric.generators import fat_tree
>>> to_ibsim(fat_tree(k=2, levels=2)).splitlines()[:3]
['# fabscope: fat-tree(k=2,levels=2), 4 hosts, 4 switches, 8 cables', '', 'Hca\t1\t"h0000"']
"""

from __future__ import annotations

import os

import numpy as np

from fabscope.atomic import atomic_open
from fabscope.errors import FabricError
from fabscope.fabric.rates import link_rate
from fabscope.fabric.model import Fabric
from fabscope.names import check_switch_name

_WIDTH_MASK = {1: 1, 4: 2, 8: 4, 12: 8}
#: ibsim's speed fields: ``s=`` the speed mask, ``e=`` the extended speed (FDR, EDR and HDR, as
#: ibnetdiscover reports them under ibsim 0.10)
_SPEED = {"SDR": "s=1", "DDR": "s=2", "QDR": "s=4", "FDR": "s=4 e=1", "EDR": "s=4 e=2", "HDR": "s=4 e=4"}
#: largest port number ibsim and InfiniBand switches take
MAX_PORT = 254


def ib_rate(capacity: float) -> tuple[int, str] | None:
    """(width, speed) whose MPI rate is ``capacity`` (0.5% tolerance), or None.

    >>> ib_rate(3071e6), ib_rate(425e6), ib_rate(12.125e9)
    ((4, 'QDR'), None, (4, 'EDR'))
    """
    for w in (4, 1, 8, 12):
        for sp in ("QDR", "DDR", "SDR", "FDR", "EDR", "HDR"):
            if abs(link_rate(w, sp) - capacity) <= 0.005 * capacity:
                return w, sp
    return None


def port_numbers(fabric: Fabric) -> np.ndarray:
    """Each directed link's source port: the fabric's own if unique per node, else 1, 2, ... in link order."""
    sp = fabric.link_src_port.astype(np.int64)
    key = fabric.link_src.astype(np.int64) * 65536 + sp
    if np.all(sp > 0) and len(np.unique(key)) == len(key):
        return sp
    order = np.argsort(fabric.link_src, kind="stable")
    s = fabric.link_src[order]
    starts = np.r_[0, np.flatnonzero(np.diff(s)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(s)]))
    out = np.empty(len(sp), np.int64)
    out[order] = np.arange(len(s)) - first + 1
    return out


def to_ibsim(fabric: Fabric) -> str:
    """The fabric as an ibsim net file (text)."""
    for nm in fabric.node_names:
        check_switch_name(nm, "ibsim net file", FabricError, "node")  # the one rule of what a quoted name may hold
    port = port_numbers(fabric)
    if port.max(initial=0) > MAX_PORT:
        i = int(np.argmax(port))
        raise FabricError(f"node {fabric.node_names[fabric.link_src[i]]!r} has {int(port[i])} ports; "
                          f"InfiniBand switches have at most {MAX_PORT}")
    rate = {}
    n_odd = 0
    for c in np.unique(fabric.link_capacity):
        r = ib_rate(float(c))
        rate[float(c)] = "" if r is None else f"\tw={_WIDTH_MASK[r[0]]} {_SPEED[r[1]]}"
        n_odd += r is None
    rev = np.arange(fabric.n_links) ^ 1
    indptr, order = fabric.out_links
    names = fabric.node_names
    out = [f"# fabscope: {fabric.name}, {fabric.n_hosts} hosts, {fabric.n_switches} switches, "
           f"{fabric.n_links // 2} cables"]
    if n_odd:
        out.append("# some capacities are no InfiniBand rate: those links come up as ibsim's default 4x SDR")
    for v in range(fabric.n_nodes):
        links = order[indptr[v]:indptr[v + 1]]
        links = links[np.argsort(port[links], kind="stable")]
        kind = "Hca" if v < fabric.n_hosts else "Switch"
        block = [f'{kind}\t{int(port[links].max(initial=1))}\t"{names[v]}"']
        for l in links.tolist():
            block.append(f'[{int(port[l])}]\t"{names[fabric.link_dst[l]]}"[{int(port[rev[l]])}]'
                         f"{rate[float(fabric.link_capacity[l])]}")
        out.append("\n".join(block))
    return "\n\n".join(out) + "\n"


def write_ibsim(fabric: Fabric, path: str | os.PathLike[str]) -> None:
    text = to_ibsim(fabric)
    with atomic_open(path) as fh:
        fh.write(text)
