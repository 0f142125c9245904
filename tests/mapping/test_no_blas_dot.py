"""The mapper's sums over a graph's edges are not np.dot: OpenBLAS wakes its threads for a dot of
more than 10,000 entries and they spin on after it (5-7 ms of CPU a call here, more than the sum;
fabscope.mapping.metrics.weighted_sum)."""

from __future__ import annotations

import numpy as np

from fabscope.fabric.io import load_fabric
from fabscope.mapping.api import map_ranks
from fabscope.mapping.commspec import load_comm
from fabscope.mapping.metrics import evaluate
from fabscope.mapping.targets import Target


def test_topo_on_a_large_graph_calls_no_long_dot(monkeypatch):
    g = load_comm("geometric:2048,degree=10,seed=1")
    assert g.n_edges > 10_000
    t = Target.whole(load_fabric("fat-tree:k=8,levels=3"), g.n, 8)
    long_dots = []
    real = np.dot

    def dot(a, b, *rest):
        if np.size(a) > 10_000:
            long_dots.append(np.size(a))
        return real(a, b, *rest)

    monkeypatch.setattr(np, "dot", dot)
    m = map_ranks(g, t, "topo")
    e = evaluate(m, g)
    assert long_dots == [] and e.hops_per_byte > 1
    monkeypatch.undo()
    from fabscope.mapping.metrics import weighted_sum

    hops = np.random.default_rng(0).integers(0, 7, g.n_edges)
    assert weighted_sum(hops, g.bytes) == float(np.dot(hops, g.bytes))     # whole bytes: exact in any order
