"""Hop distances between switches, the basis of min-hop and multipath engines."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fabscope.fabric.model import Fabric


def switch_links(fabric: Fabric) -> np.ndarray:
    """Ids of links that join two switches."""
    h = fabric.n_hosts
    return np.flatnonzero((fabric.link_src >= h) & (fabric.link_dst >= h))


def switch_distances(fabric: Fabric) -> np.ndarray:
    """Hops between every two switches, shape (S, S), int16 (-1 unreachable).

    Cached per fabric object (fabrics are immutable).
    """
    return _cached(fabric)


@lru_cache(maxsize=8)
def _cached(fabric: Fabric) -> np.ndarray:
    # SciPy here, not at the top: dimension-order and tree routing import this module and never
    # call it, and SciPy's import is a third of a small simulation's whole process
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    h, s = fabric.n_hosts, fabric.n_switches
    sl = switch_links(fabric)
    g = csr_matrix((np.ones(len(sl)), (fabric.link_src[sl] - h, fabric.link_dst[sl] - h)), shape=(s, s))
    d = shortest_path(g, method="D", unweighted=True, directed=True)
    d[np.isinf(d)] = -1
    out = d.astype(np.int16)
    out.setflags(write=False)
    return out


def host_downlinks(fabric: Fabric) -> np.ndarray:
    """For each host, the link from its switch down to it (reverse of its first port)."""
    indptr, order = fabric.host_uplinks
    return order[indptr[:-1]] ^ 1
