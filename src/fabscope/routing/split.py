"""Routes of flows split over several paths, as one entry per (flow, link).

>>> r = split_routes(2, np.array([0, 0, 0, 0]), np.array([5, 7, 5, 8]), np.array([.5, .5, .5, .5]),
...                  np.array([2.0, 0.0]))
>>> r.flow.tolist(), r.link.tolist(), r.weight.tolist()
([0, 0, 0], [5, 7, 8], [1.0, 0.5, 0.5])
"""

from __future__ import annotations

import numpy as np

from fabscope.routing.routes import Routes


def split_routes(n: int, flow: np.ndarray, link: np.ndarray, weight: np.ndarray, hops: np.ndarray) -> Routes:
    """Routes of ``n`` flows from entries listed hop by hop, the shares of a (flow, link) that several
    paths cross added into one entry, kept where the first of them stood (the dynamic engine and
    the flow model take a resource once per flow)."""
    flow = np.asarray(flow, np.int64)
    link = np.asarray(link, np.int64)
    n_links = int(link.max()) + 1 if len(link) else 1
    uk, first, inv = np.unique(flow * n_links + link, return_index=True, return_inverse=True)
    wt = np.bincount(inv, weights=weight)
    o = np.argsort(first, kind="stable")
    uk, wt = uk[o], wt[o]
    return Routes(n, uk // n_links, (uk % n_links).astype(np.int32), wt, np.asarray(hops, float))
