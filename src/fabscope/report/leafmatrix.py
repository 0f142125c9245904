"""The all-pairs leaf matrix of seed 000: Max / Average / Min of the pairs between two leaves.

>>> import numpy as np
>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> from fabscope.traffic.patterns import leaf_pairs
>>> from fabscope.model.simulate import simulate
>>> f = fat_tree(k=4, levels=2)
>>> p = Placement.block(f, 16, ppn=1)
>>> m = leaf_matrix(simulate(f, p, leaf_pairs(f, p, 1e6, nodes_per_leaf=2)), f)
>>> m.min.shape, bool(np.all(np.isnan(np.diag(m.min))))
((4, 4), True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.fabric.model import MB, Fabric
from fabscope.result import Result

SHADES = " .:-=+*#%@"


@dataclass(frozen=True)
class LeafMatrix:
    leaves: np.ndarray          # leaf group ids, in matrix order
    max: np.ndarray             # MB/s, symmetric, NaN where no pair was run
    avg: np.ndarray
    min: np.ndarray
    near: np.ndarray | None     # True where the two leaves share a near set

    def block_summary(self, which: str = "min") -> dict[str, tuple[float, float, float]]:
        """Max / Average / Min of one matrix over near-set and far leaf pairs."""
        m = getattr(self, which)
        iu = np.triu_indices(len(self.leaves), 1)
        vals = m[iu]
        out = {"All leaf pairs": vals}
        if self.near is not None:
            nr = self.near[iu]
            out = {"Near-set pairs": vals[nr], "Far pairs": vals[~nr], "All leaf pairs": vals}
        return {k: (float(np.nanmax(v)), float(np.nanmean(v)), float(np.nanmin(v)))
                for k, v in out.items() if len(v) and not np.all(np.isnan(v))}

    def render(self, which: str = "min", lo: float | None = None, hi: float | None = None) -> str:
        """The matrix as characters, darker for higher bandwidth (one per leaf pair)."""
        m = getattr(self, which)
        lo = np.nanmin(m) if lo is None else lo
        hi = np.nanmax(m) if hi is None else hi
        span = max(hi - lo, 1e-9)
        lines = []
        for row in m:
            chars = []
            for v in row:
                if np.isnan(v):
                    chars.append(" ")
                else:
                    chars.append(SHADES[min(len(SHADES) - 1, int((v - lo) / span * (len(SHADES) - 1) + 0.5))])
            lines.append("".join(chars))
        return "\n".join(lines)


def leaf_matrix(result: Result, fabric: Fabric) -> LeafMatrix:
    """Per pair of leaves, the Max / Average / Min bandwidth of the node pairs between them."""
    hidx = fabric.host_index
    leaf = fabric.groups["leaf"]
    a = leaf[[hidx[h] for h in result.pairs["src_host"]]]
    b = leaf[[hidx[h] for h in result.pairs["dst_host"]]]
    ids = np.unique(np.r_[a, b])
    ia, ib = np.searchsorted(ids, a), np.searchsorted(ids, b)
    n = len(ids)
    bw = np.asarray(result.pairs["bandwidth"], float) / MB
    key = np.minimum(ia, ib) * n + np.maximum(ia, ib)
    mx = np.full(n * n, -np.inf)
    mn = np.full(n * n, np.inf)
    np.maximum.at(mx, key, bw)
    np.minimum.at(mn, key, bw)
    sm = np.bincount(key, weights=bw, minlength=n * n)
    ct = np.bincount(key, minlength=n * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        av = np.where(ct > 0, sm / np.maximum(ct, 1), np.nan)
    mx[ct == 0] = np.nan
    mn[ct == 0] = np.nan

    def sym(v: np.ndarray) -> np.ndarray:
        m = v.reshape(n, n)
        m = np.where(np.isnan(m), m.T, m)
        return m

    near = None
    if "near" in fabric.groups:
        first = {int(l): i for i, l in enumerate(leaf)}
        ns = fabric.groups["near"][[first[int(l)] for l in ids]]
        near = ns[:, None] == ns[None, :]
    return LeafMatrix(ids, sym(mx), sym(av), sym(mn), near)
