"""How good a mapping is: hop-bytes, hops per byte and per edge, dilation, link load, modeled time.

Hops between two hosts count as seed 002 counts them on direct networks:
router-to-router links (tori, meshes, hypercubes: the coordinate distance;
ranks on one router are 0 hops apart).  On indirect networks (trees,
directors, dragonflies) they are the links a message crosses, host links
included: on Itasca 2 within a leaf, 4 within a near set, 6 between far
leaves.  Ranks on one node are 0 hops apart everywhere.

Hop-bytes (seed 002) is ``sum(hops_e * bytes_e)`` over the graph's directed
edges; maximum dilation is the largest ``hops_e``.  The maximum link load is
the bytes the busiest directed link carries when every edge follows the
fabric's routing; the modeled time is the max-min flow model's time for one
exchange of the whole graph (all edges at once).

>>> from fabscope.fabric.generators import torus
>>> from fabscope.mapping.commgraph import ring
>>> from fabscope.mapping.targets import Mapping, Target
>>> f = torus((4,), cores=1)                  # a ring of 4 routers
>>> t = Target.whole(f, 4)
>>> g = ring(4, size=10)                      # 8 edges of 10 bytes
>>> m = evaluate(Mapping(t, [0, 2, 1, 3]), g)   # 0-1 and 2-3 are 2 hops, 1-2 and 3-0 are 1
>>> m.hop_bytes, m.hops_per_edge, m.max_dilation
(120.0, 1.5, 2)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from fabscope.fabric.model import Fabric
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.targets import Mapping

__all__ = ["Metrics", "evaluate", "host_hops", "link_loads", "router_for", "weighted_sum"]


def weighted_sum(x: np.ndarray, w: np.ndarray) -> float:
    """``sum(x * w)``, e.g. the hop-bytes of edges' hops ``x`` and bytes ``w``; not ``np.dot``: OpenBLAS
    wakes its threads for a dot of more than 10,000 entries and they spin on after it, 5-7 ms of CPU
    a call on a 2-core machine (a 37,354-edge graph), more than the sum itself.  Hops times whole
    bytes are integers: their sum is exact in any order, so it is np.dot's.

    >>> weighted_sum(np.array([1, 2, 0]), np.array([10.0, 5.0, 7.0]))
    20.0
    """
    return float(np.sum(np.multiply(x, w, dtype=float)))


def host_hops(fabric: Fabric, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hops between hosts ``a`` and ``b`` (see the module docstring)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if fabric.coords is not None:
        return fabric.coord_hops(a, b).astype(np.int64)
    from fabscope.routing.distances import switch_distances

    h = fabric.n_hosts
    sw = fabric.host_switch.astype(np.int64) - h
    d = switch_distances(fabric)[sw[a], sw[b]].astype(np.int64) + 2
    return np.where(a == b, 0, d)


@lru_cache(maxsize=8)
def router_for(fabric: Fabric, name: str | None = None):
    """The fabric's routing engine (default engine unless ``name``), cached per fabric."""
    from fabscope.routing import make_routing

    return make_routing(fabric, name)


#: flows routed at a time for their link loads: the routes' temporaries (tens of bytes per hop)
#: follow this, not the graph (4,096-rank geometric graph on a torus: 10 MB whole, 1 MB in chunks)
LOAD_CHUNK = 4096


def link_loads(fabric: Fabric, host_src: np.ndarray, host_dst: np.ndarray, nbytes: np.ndarray,
               routing: Any = None) -> np.ndarray:
    """Bytes on every directed link when each flow follows the routing."""
    router = routing if routing is not None and not isinstance(routing, str) else router_for(fabric, routing)
    if len(host_src) > LOAD_CHUNK:
        load = np.zeros(fabric.n_links)
        for i in range(0, len(host_src), LOAD_CHUNK):
            c = slice(i, i + LOAD_CHUNK)
            load += link_loads(fabric, host_src[c], host_dst[c], nbytes[c], router)
        return load
    if hasattr(router, "link_load"):            # DOR: loads without building every route
        return router.link_load(host_src, host_dst, nbytes)
    inter = np.flatnonzero(host_src != host_dst)
    if not len(inter):
        return np.zeros(fabric.n_links)
    r = router.routes(host_src[inter].astype(np.int64), host_dst[inter].astype(np.int64))
    return np.bincount(r.link, weights=nbytes[inter][r.flow] * r.weight, minlength=fabric.n_links)


@dataclass(frozen=True)
class Metrics:
    hop_bytes: float
    #: hop-bytes over total bytes
    hops_per_byte: float
    #: mean hops over the graph's directed edges (unweighted)
    hops_per_edge: float
    max_dilation: int
    #: bytes on the busiest directed link, and its name
    max_link_load: float | None = None
    max_link: str = ""
    #: seconds for one exchange of the graph under the max-min flow model
    model_time: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def edge_hops(mapping: Mapping, graph: CommGraph) -> np.ndarray:
    host = mapping.host
    return host_hops(mapping.fabric, host[graph.src], host[graph.dst])


def evaluate(mapping: Mapping, graph: CommGraph, *, links: bool = True, model: bool = False,
             routing: Any = None) -> Metrics:
    """Every metric of ``mapping`` for ``graph`` (link loads need routes; the model time a solve)."""
    if graph.n != mapping.n_ranks:
        from fabscope.errors import MappingError

        raise MappingError(f"graph {graph.name!r} has {graph.n} ranks, the mapping {mapping.n_ranks}")
    f = mapping.fabric
    host = mapping.host
    hs, hd = host[graph.src], host[graph.dst]
    hops = host_hops(f, hs, hd)
    hb = weighted_sum(hops, graph.bytes)
    tot = graph.total_bytes
    kw: dict[str, Any] = {}
    if links:
        load = link_loads(f, hs, hd, graph.bytes, routing)
        i = int(np.argmax(load))
        kw.update(max_link_load=float(load[i]), max_link=f.link_name(i) if load[i] > 0 else "")
    if model:
        kw["model_time"] = model_time(mapping, graph, routing)
    return Metrics(hop_bytes=hb, hops_per_byte=hb / tot if tot else 0.0,
                   hops_per_edge=float(hops.mean()) if len(hops) else 0.0,
                   max_dilation=int(hops.max(initial=0)), **kw)


def model_time(mapping: Mapping, graph: CommGraph, routing: Any = None) -> float:
    """Seconds the flow model predicts for one exchange: every edge sends at once; the slowest ends it."""
    from fabscope.model.simulate import simulate

    router = routing if routing is not None and not isinstance(routing, str) else router_for(mapping.fabric, routing)
    res = simulate(mapping.fabric, mapping.placement(), graph.traffic(), router)
    return float(np.max(res.pairs["time"]))
