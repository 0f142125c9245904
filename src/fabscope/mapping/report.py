"""How a job sits in the fabric (seed 000's "Considerations for scaling"), from the model.

For a job's nodes: how many groups of each level it spans (leaves, near
sets...) against the fewest that could hold it, the switches of each tier its
traffic crosses, and the bandwidth per node the flow model predicts under
random-pair and nearest-neighbour traffic (one rank per node, every node
sending at once), by the class of pair.  A job spread over more groups than
it needs gets a warning.

>>> from fabscope.fabric.generators import itasca
>>> f = itasca()
>>> r = placement_report(f, list(range(0, 64, 2)) + list(range(512, 544)))
>>> r.spans[0]
('leaf', 'Same Leaf', 6, 4)
>>> r.warnings[0]
'fragmented: 64 nodes span 6 leaf groups; 4 would hold them'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from fabscope.fabric.model import MB, Fabric
from fabscope.fabric.placement import Placement
from fabscope.units import rate_digits, rate_unit

__all__ = ["PlacementReport", "placement_report"]


@dataclass
class PlacementReport:
    n_nodes: int
    #: (level key, label, groups spanned, fewest that hold the job)
    spans: list[tuple[str, str, int, int]]
    #: switch tier (1 = leaves) -> switches the job's traffic crosses
    tiers: dict[int, int]
    #: class label -> (random MB/s per node, nearest-neighbour MB/s per node), averages
    bandwidth: dict[str, tuple[float | None, float | None]]
    #: (random, nearest-neighbour) MB/s per node over all pairs; None for a one-node job (no fabric traffic)
    overall: tuple[float | None, float | None]
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"{self.n_nodes} nodes"]
        for key, label, used, need in self.spans:
            out.append(f"  {key:<10} groups spanned: {used:>5}   fewest that hold the job: {need}")
        for tier, k in sorted(self.tiers.items()):
            out.append(f"  switches of tier {tier} crossed: {k}")
        out.append("")
        if self.n_nodes < 2:
            out.append("  no fabric traffic: the ranks of a one-node job talk on the node")
            return out + [f"warning: {w}" for w in self.warnings]
        figures = [v for pair in [*self.bandwidth.values(), self.overall] for v in pair if v is not None]
        unit, size = rate_unit(max(figures, default=0.0) * MB)        # one unit for the table

        def f(v: float | None) -> str:
            return "-" if v is None else rate_digits(v * MB / size)

        out.append(f"  {f'bandwidth per node [{unit}]':<28} {'random pairs':>14} {'nearest neighbour':>18}")
        for label, (r, nn) in self.bandwidth.items():
            out.append(f"  {label:<28} {f(r):>14} {f(nn):>18}")
        out.append(f"  {'Overall':<28} {f(self.overall[0]):>14} {f(self.overall[1]):>18}")
        out += [f"warning: {w}" for w in self.warnings]
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"n_nodes": self.n_nodes, "spans": self.spans, "tiers": self.tiers,
                "bandwidth_mb_s": self.bandwidth, "overall_mb_s": self.overall, "warnings": self.warnings}


def placement_report(fabric: Fabric, nodes: Sequence[int], size: float = 1 << 20, seed: int = 0) -> PlacementReport:
    """The report for the job on host indices ``nodes`` (see the module docstring)."""
    from fabscope.mapping.metrics import router_for
    from fabscope.model.simulate import simulate
    from fabscope.traffic.patterns import permutation, shift

    nodes = np.unique(np.asarray(nodes, dtype=np.int64))
    n = len(nodes)
    spans, warnings = [], []
    for lv in fabric.levels:
        g = np.asarray(fabric.groups[lv.key])
        cap = int(np.bincount(g).max())
        used = len(np.unique(g[nodes]))
        need = -(-n // cap)
        spans.append((lv.key, lv.label, used, need))
        if used > need:
            warnings.append(f"fragmented: {n} nodes span {used} {lv.key} groups; {need} would hold them")
    bw: dict[str, list[float | None]] = {lab: [None, None] for lab in fabric.class_labels[1:]}
    overall: list[float | None] = [None, None]
    tiers: dict[int, int] = {}
    if n >= 2:
        pl = Placement.from_hosts(fabric, nodes)
        router = router_for(fabric)
        for j, traffic in enumerate((permutation(n, size, seed), shift(n, size, 1))):
            res = simulate(fabric, pl, traffic, router)
            v = np.asarray(res.pairs["bandwidth"], float) / MB
            cls = np.asarray(res.pairs["cls"])
            overall[j] = float(v.mean())
            for c in np.unique(cls):
                bw[fabric.class_labels[int(c)]][j] = float(v[cls == c].mean())
        # switch tiers crossed by all pairs of a sample of the job's nodes
        k = min(n, 64)
        s = nodes[np.linspace(0, n - 1, k).astype(int)]
        a, b = np.meshgrid(s, s)
        keep = a.ravel() != b.ravel()
        r = router.routes(a.ravel()[keep], b.ravel()[keep])
        sw = np.unique(fabric.link_dst[r.link])
        sw = sw[sw >= fabric.n_hosts]
        lvl = fabric.switch_level[sw - fabric.n_hosts]
        tiers = {int(t): int(c) for t, c in zip(*np.unique(lvl, return_counts=True))}
    bandwidth = {lab: (v[0], v[1]) for lab, v in bw.items() if v[0] is not None or v[1] is not None}
    return PlacementReport(n, spans, tiers, bandwidth, (overall[0], overall[1]), warnings)
