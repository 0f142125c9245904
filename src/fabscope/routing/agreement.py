"""How far two sets of forwarding tables agree: same path for each pair of host ports.

Used to check fabscope's own engines against the tables OpenSM wrote
(``bench/route_agreement.py``, the ibsim tests); the tables themselves are
plain arrays from :mod:`fabscope.fabric.importers.lfts`.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.routing.tables import minhop_tables
>>> f = fat_tree(k=2, levels=2)
>>> lft = minhop_tables(f)
>>> compare_routes(f, lft, lft)
(12, 12)
"""

from __future__ import annotations

import numpy as np

from fabscope.fabric.importers.lfts import unroutable
from fabscope.fabric.model import Fabric
from fabscope.routing.tables import TableRouting

__all__ = ["compare_routes", "unroutable"]


def compare_routes(fabric: Fabric, lft_a: np.ndarray, lft_b: np.ndarray, src: np.ndarray | None = None,
                   dst: np.ndarray | None = None) -> tuple[int, int]:
    """(pairs checked, pairs whose routes are identical) under two sets of tables; all pairs of
    host ports (terminals) on different hosts by default, port for port (hosts where each has one).

    A pair neither set of tables routes counts as identical; one only one routes, as different.
    """
    if src is None or dst is None:
        t = np.arange(fabric.n_terminals)
        src, dst = (x.ravel() for x in np.meshgrid(t, t))
        keep = fabric.terminal_host[src] != fabric.terminal_host[dst]
        src, dst = src[keep], dst[keep]
    src, dst = np.asarray(src), np.asarray(dst)
    bad_a = unroutable(fabric, lft_a, src, dst, terminals=True)
    bad_b = unroutable(fabric, lft_b, src, dst, terminals=True)
    both = ~bad_a & ~bad_b
    paths = []
    for lft in (lft_a, lft_b):
        r = TableRouting(fabric, np.asarray(lft)).terminal_routes(src[both], dst[both])
        order = np.argsort(r.flow, kind="stable")
        f, l = r.flow[order], r.link[order]
        starts = np.r_[0, np.flatnonzero(np.diff(f)) + 1]
        hop = np.arange(len(f)) - np.repeat(starts, np.diff(np.r_[starts, len(f)]))
        m = np.full((int(both.sum()), int(hop.max(initial=0)) + 1), -1, np.int64)
        m[f, hop] = l
        paths.append(m)
    w = max(p.shape[1] for p in paths)
    a, b = (np.pad(p, ((0, 0), (0, w - p.shape[1])), constant_values=-1) for p in paths)
    return len(src), int(np.all(a == b, axis=1).sum() + (bad_a & bad_b).sum())
