"""The report's matrices: pair by pair, rank by rank, node by node and leaf by leaf (seed 000's pictures).

Large matrices go to the browser as typed arrays (float32, or uint16 MB/s for
the largest), so a 1,024 x 1,024 pair matrix stays a few MB.

>>> import numpy as np
>>> m = pair_matrix(np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1.0, 2.0, 3.0]), 3)
>>> m.tolist()
[[nan, 1.0, nan], [nan, nan, 2.0], [3.0, nan, nan]]
>>> pic = heatmap(m, ["r0", "r1", "r2"], "rank", "demo", "demo")
>>> pic.fig.data[0].type, pic.fig.data[0].z.dtype.name
('heatmap', 'float32')
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from fabscope.fabric.model import MB, Fabric
from fabscope.report.picture import COLORSCALE, FLOAT_CELLS, Picture, layout
from fabscope.result import Result


def pair_matrix(row: np.ndarray, col: np.ndarray, value: np.ndarray, n: int, how: str = "avg") -> np.ndarray:
    """An n x n matrix of ``value`` aggregated (avg, max or min) over the pairs in each cell; NaN where none."""
    key = np.asarray(row, np.int64) * n + np.asarray(col, np.int64)
    v = np.asarray(value, float)
    ct = np.bincount(key, minlength=n * n)
    if how == "avg":
        out = np.bincount(key, weights=v, minlength=n * n) / np.maximum(ct, 1)
    elif how == "max":
        out = np.full(n * n, -np.inf)
        np.maximum.at(out, key, v)
    else:
        out = np.full(n * n, np.inf)
        np.minimum.at(out, key, v)
    out = out.astype(float)
    out[ct == 0] = np.nan
    return out.reshape(n, n)


def colour_range(values: np.ndarray) -> tuple[float, float]:
    """The colour bar's span: the values' range, from 0 when they spread less than a tenth of the largest
    (one pair, or pairs that all ran alike, get a bar from 0 to their figure, not one under 1 MB/s wide).

    >>> colour_range(np.array([1836.2, 1836.6])), colour_range(np.array([500.0, 3000.0]))
    ((0.0, 1836.6), (500.0, 3000.0))
    """
    if not len(values):
        return 0.0, 1.0
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 0.1 * abs(hi):
        lo = min(0.0, lo)
    return lo, (hi if hi > lo else lo + 1.0)


def _heat_z(m: np.ndarray) -> tuple[np.ndarray, float, float, Any]:
    """z array, colour range and colour scale; uint16 (missing = 0, drawn white) for large matrices."""
    fin = m[np.isfinite(m)]
    lo, hi = colour_range(fin)
    if m.size <= FLOAT_CELLS or hi >= 65000:
        return m.astype(np.float32), lo, hi, COLORSCALE
    z = np.where(np.isfinite(m), np.clip(np.rint(m), 1, 65535), 0).astype(np.uint16)
    # below zmin is clamped to the first colour: make that a white sliver for the missing cells
    from plotly.colors import get_colorscale

    base = get_colorscale(COLORSCALE)
    eps = 1e-3
    scale = [[0.0, "white"], [eps * 0.5, "white"]] + [[eps + (1 - eps) * s, c] for s, c in base]
    zmin = lo - (hi - lo) * eps / (1 - eps) - 1
    return z, zmin, hi, scale


def heatmap(m: np.ndarray, labels: Sequence[str], axis: str, title: str, name: str,
            blocks: Sequence[tuple[int, int]] = (), caption: str = "", unit: str = "MB/s") -> Picture:
    """One matrix as a heatmap, row = source, column = destination; ``blocks`` outlined on the diagonal."""
    z, lo, hi, scale = _heat_z(m)
    lab = list(labels)
    fig = go.Figure(go.Heatmap(
        z=z, x=lab, y=lab, zmin=lo, zmax=hi, colorscale=scale,
        colorbar=dict(title=dict(text=unit, side="right")),
        hovertemplate=f"from %{{y}}<br>to %{{x}}<br>%{{z:.0f}} {unit}<extra></extra>"))
    _blocks(fig, blocks, lab)
    n = len(lab)
    step = max(1, int(np.ceil(n / 40)))     # every k-th label where there are many
    ax = dict(title=f"destination {axis}", type="category", automargin=True, tickvals=lab[::step],
              ticktext=[x.split(" (")[0] if n > 40 else x for x in lab[::step]], constrain="domain")
    layout(fig, title, xaxis=ax, yaxis=dict(ax, title=f"source {axis}", autorange="reversed"),
            width=None, height=None)
    return Picture(name, title, fig, caption, 760, 680)


#: near-set outlines: a dark line under a light one, seen on dark cells and on the white of empty ones
OUTLINES = (("#222222", 3.0), ("#ff7f0e", 1.5))


def _blocks(fig: go.Figure, blocks: Sequence[tuple[int, int]], lab: Sequence[str], **ref: str) -> None:
    for a, b in blocks:          # index range [a, b) on both axes
        if b - a < 2:
            continue
        for colour, width in OUTLINES:
            fig.add_shape(type="rect", x0=a - 0.5, x1=b - 0.5, y0=a - 0.5, y1=b - 0.5, layer="above",
                          line=dict(color=colour, width=width), fillcolor="rgba(0,0,0,0)", **ref)


def leaf_heatmaps(result: Result, fabric: Fabric) -> Picture | None:
    """Seed 000's pictures: Max, Average and Min of the node pairs between two leaves, near sets as blocks."""
    from fabscope.report.leafmatrix import leaf_matrix

    if "leaf" not in fabric.groups or "src_host" not in result.pairs:
        return None
    lm = leaf_matrix(result, fabric)
    if len(lm.leaves) < 2:
        return None
    leaf = fabric.groups["leaf"]
    near = fabric.groups.get("near")
    hosts = fabric.host_names
    first = {int(l): i for i, l in reversed(list(enumerate(leaf)))}
    last = {int(l): i for i, l in enumerate(leaf)}
    nset = np.array([int(near[first[int(l)]]) if near is not None else 0 for l in lm.leaves])
    order = np.lexsort((lm.leaves, nset))
    def name(l: int) -> str:
        """The leaf switch's own name (as the links and the terminal name it), else 'leaf N'."""
        out = np.flatnonzero(fabric.link_src == first[l])
        peer = int(fabric.link_dst[out[0]]) if len(out) else -1
        return fabric.node_names[peer] if peer >= fabric.n_hosts else f"leaf {l}"

    labels = [f"{name(int(lm.leaves[i]))} ({hosts[first[int(lm.leaves[i])]]}..{hosts[last[int(lm.leaves[i])]]})"
              for i in order]
    # ticks: the leaf's name (hover gives its hosts); every k-th leaf where there are many
    step = max(1, int(np.ceil(len(labels) / 24)))
    tickvals = labels[::step]
    ticktext = [lab.split(" (")[0] for lab in tickvals]
    blocks = []
    if near is not None:
        ns = nset[order]
        cuts = np.flatnonzero(np.r_[True, ns[1:] != ns[:-1], True])
        blocks = list(zip(cuts[:-1], cuts[1:]))
    mats = {k: getattr(lm, k)[np.ix_(order, order)] for k in ("max", "avg", "min")}
    fin = np.concatenate([m[np.isfinite(m)] for m in mats.values()])
    lo, hi = colour_range(fin)
    fig = make_subplots(rows=1, cols=3, subplot_titles=("Max", "Average", "Min"), horizontal_spacing=0.04)
    for j, (k, m) in enumerate(mats.items(), 1):
        fig.add_trace(go.Heatmap(
            z=m.astype(np.float32), x=labels, y=labels, coloraxis="coloraxis", name=k,
            hovertemplate=f"%{{y}}<br>%{{x}}<br>{k} of the node pairs: %{{z:.0f}} MB/s<extra></extra>"), 1, j)
        ref = "" if j == 1 else str(j)
        _blocks(fig, blocks, labels, xref=f"x{ref}", yref=f"y{ref}")
        # square cells, the axes shrunk to the matrix (constrain): no empty band above or below it
        fig.update_xaxes(type="category", tickvals=tickvals, ticktext=ticktext, tickangle=-90, tickfont=dict(size=9),
                         row=1, col=j, title="destination leaf", scaleanchor=f"y{ref}", constrain="domain")
        fig.update_yaxes(type="category", tickvals=tickvals, ticktext=ticktext, tickfont=dict(size=9),
                         autorange="reversed", row=1, col=j, constrain="domain",
                         title="source leaf" if j == 1 else None)
    layout(fig, "Leaf by leaf: bandwidth of the node pairs between two leaves [MB/s]",
            coloraxis=dict(colorscale=COLORSCALE, cmin=lo, cmax=hi, colorbar=dict(title="MB/s")))
    cap = ("Rows and columns are leaves ordered by near set" + (" (outlined: dark and orange)" if blocks else "")
           + "; each cell is the max, average or min bandwidth of the node pairs between the two leaves.")
    return Picture("leaf-matrix", "Leaf-by-leaf matrices", fig, cap, 1500, 560)


def rank_heatmap(result: Result, max_ranks: int = 1024, min_density: float = 0.05) -> Picture | None:
    """Rank by rank (average over repeats), for runs small or dense enough to show as a matrix."""
    if "src" not in result.pairs:
        return None
    src, dst = np.asarray(result.pairs["src"], np.int64), np.asarray(result.pairs["dst"], np.int64)
    ranks = np.unique(np.r_[src, dst])
    n = len(ranks)
    if n < 2 or n > max_ranks:
        return None
    cells = len(np.unique(src * (ranks.max() + 1) + dst))
    if n > 64 and cells < min_density * n * n:
        return None          # too sparse to be worth a matrix (e.g. random pairs)
    i, j = np.searchsorted(ranks, src), np.searchsorted(ranks, dst)
    m = pair_matrix(i, j, np.asarray(result.pairs["bandwidth"], float) / MB, n)
    if "src_host" in result.pairs:
        host = {}
        for r, h in zip(np.r_[src, dst].tolist(), np.r_[result.pairs["src_host"], result.pairs["dst_host"]].tolist()):
            host[r] = h
        labels = [f"rank {r} ({host[r]})" for r in ranks.tolist()]
    else:
        labels = [f"rank {r}" for r in ranks.tolist()]
    return heatmap(m, labels, "rank", "Rank by rank: bandwidth of each pair [MB/s]", "rank-matrix",
                   caption="Row: source rank, column: destination rank (hover for hosts and figure).")


def host_heatmap(result: Result, max_hosts: int = 512) -> Picture | None:
    """Node by node (average of the pairs between two hosts) when no leaf matrix can be drawn."""
    if "src_host" not in result.pairs:
        return None
    sh, dh = result.pairs["src_host"], result.pairs["dst_host"]
    hosts, inv = np.unique(np.r_[sh, dh], return_inverse=True)
    n = len(hosts)
    if n < 3 or n > max_hosts:
        return None
    k = len(sh)
    m = pair_matrix(inv[:k], inv[k:], np.asarray(result.pairs["bandwidth"], float) / MB, n)
    if np.isfinite(m).sum() < max(4, 0.05 * n * n):
        return None
    return heatmap(m, hosts.tolist(), "node", "Node by node: average bandwidth of the pairs between two nodes [MB/s]",
                   "node-matrix")
