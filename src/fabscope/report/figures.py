"""The report's pictures, as Plotly figures (interactive in the HTML, PNG/SVG by export): distributions,
curves, scatter, links, suspects, the fabric drawn, history.  The matrices are in
:mod:`fabscope.report.heatmaps`, what every picture shares in :mod:`fabscope.report.picture`.

Every builder takes plain arrays or a :class:`~fabscope.result.Result` and
returns a :class:`~fabscope.report.picture.Picture`, or ``None`` when the run has nothing to draw.
Bandwidths are drawn in MB/s (10^6 bytes/s), times in microseconds.

>>> import numpy as np
>>> from fabscope.result import Result
>>> r = Result({}, ("leaf", "spine"), {"bandwidth": np.array([1e9, 2e9, 3e9]), "cls": np.array([0, 0, 1])})
>>> [t.name for t in class_boxes(r).fig.data]
['leaf (2)', 'spine (1)']
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from fabscope.fabric.model import MB, Fabric
from fabscope.report.picture import MAX_POINTS, Picture, color, layout
from fabscope.result import Result


# ---- distributions ----------------------------------------------------------------
def class_boxes(result: Result, column: str = "bandwidth", title: str = "") -> Picture | None:
    """Per class: box of quartiles, whiskers at min and max, mean marked (statistics computed here)."""
    v = np.asarray(result.pairs[column], float) / MB
    cls = np.asarray(result.pairs["cls"])
    fig = go.Figure()
    for i, label in enumerate(result.class_labels):
        x = v[(cls == i) & np.isfinite(v)]
        if not len(x):
            continue
        q1, med, q3 = np.percentile(x, [25, 50, 75])
        fig.add_trace(go.Box(
            name=f"{label} ({len(x)})", x=[f"{label} ({len(x)})"], q1=[q1], median=[med], q3=[q3], lowerfence=[x.min()], upperfence=[x.max()],
            mean=[x.mean()], boxmean=True, marker_color=color(i), showlegend=False,
            hovertemplate=f"{label}<br>%{{y:.1f}} MB/s<extra></extra>"))
    if not fig.data:
        return None
    layout(fig, title or "Distribution per class [MB/s]", yaxis=dict(title="MB/s", rangemode="tozero"))
    return Picture("classes", "Distribution per class", fig,
                   "Box: quartiles and median; dashed: mean; whiskers: min and max of the class.", 900, 480)


# ---- curves against message size ---------------------------------------------------
def size_curves(series: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], fit: Any = None,
                fit_label: str = "") -> Picture | None:
    """Latency and bandwidth against message size, log axes; the fitted model and its kinks.

    ``series`` maps a label to (sizes [B], latency [s] or NaN, bandwidth [B/s] or NaN).
    """
    if not series:
        return None
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Latency [us]", "Bandwidth [MB/s]"), horizontal_spacing=0.09)
    for i, (label, (m, lat, bw)) in enumerate(series.items()):
        m = np.asarray(m, float)
        for col, y, unit in ((1, np.asarray(lat, float) * 1e6, "us"), (2, np.asarray(bw, float) / MB, "MB/s")):
            ok = np.isfinite(y) & (y > 0)
            if ok.any():
                fig.add_trace(go.Scatter(x=m[ok], y=y[ok], mode="lines+markers", name=label, legendgroup=label,
                                         showlegend=col == 1 or not np.isfinite(lat).any(), line=dict(color=color(i)),
                                         hovertemplate=f"{label}<br>%{{x:,.0f}} B: %{{y:.3g}} {unit}<extra></extra>"),
                              1, col)
    if fit is not None:
        lo = min(float(np.nanmin(s[0])) for s in series.values())
        hi = max(float(np.nanmax(s[0])) for s in series.values())
        mm = np.geomspace(max(lo, 1), hi, 200)
        t = fit.predict(mm)
        name = "fitted model" + (f" ({fit_label})" if fit_label else "")
        fig.add_trace(go.Scatter(x=mm, y=t * 1e6, mode="lines", name=name, legendgroup="fit",
                                 line=dict(color="black", dash="dash"),
                                 hovertemplate="model: %{x:,.0f} B: %{y:.3g} us<extra></extra>"), 1, 1)
        fig.add_trace(go.Scatter(x=mm, y=mm / t / MB, mode="lines", name=name, legendgroup="fit", showlegend=False,
                                 line=dict(color="black", dash="dash"),
                                 hovertemplate="model: %{x:,.0f} B: %{y:.3g} MB/s<extra></extra>"), 1, 2)
        for k in fit.kinks:
            for ref in ("x", "x2"):
                fig.add_vline(x=k, line=dict(color="#d62728", dash="dot", width=1), xref=ref,
                              row=1, col=1 if ref == "x" else 2)
            fig.add_annotation(x=np.log10(k), y=0.97, xref="x", yref="paper", text=f" kink {k:,} B",
                               showarrow=False, font=dict(color="#d62728", size=11), yanchor="top", xanchor="left")
    fig.update_xaxes(type="log", title="message size [B]")
    fig.update_yaxes(type="log")
    layout(fig, "Latency and bandwidth against message size", legend=dict(orientation="h", y=-0.2))
    cap = "Log axes. Dashed: the fitted piecewise model alpha + m/beta; dotted red: its kinks (protocol switches)."
    return Picture("size-curves", "Latency and bandwidth against message size", fig, cap, 1200, 520)


def cbr_curves(cbrs: Mapping[str, Mapping[int, float]]) -> Picture | None:
    """Communication Balance Ratios (intra / inter) against message size."""
    if not cbrs:
        return None
    fig = go.Figure()
    for i, (metric, by) in enumerate(cbrs.items()):
        s = sorted(by)
        fig.add_trace(go.Scatter(x=s, y=[by[k] for k in s], mode="lines+markers", name=f"CBR-{metric}",
                                 line=dict(color=color(i)),
                                 hovertemplate=f"CBR-{metric}<br>%{{x:,}} B: %{{y:.2f}}<extra></extra>"))
    fig.add_hline(y=1, line=dict(color="#777", dash="dot"))
    layout(fig, "Communication Balance Ratios (intra-node / inter-node)",
            xaxis=dict(type="log", title="message size [B]"), yaxis=dict(title="ratio"))
    return Picture("cbr", "Communication Balance Ratios", fig, "1 means balanced: ranks can go anywhere.", 900, 460)


# ---- measured against modeled ---------------------------------------------------------
def compare_scatter(result: Result, furthest: np.ndarray, routes: Sequence[str] | None = None) -> Picture | None:
    """Measured against modeled bandwidth per pair, classes coloured; the furthest pairs ringed, with their routes."""
    p = result.pairs
    if "measured" not in p or "modeled" not in p:
        return None
    meas, mod = np.asarray(p["measured"], float) / MB, np.asarray(p["modeled"], float) / MB
    n = len(meas)
    keep = np.arange(n)
    note = ""
    if n > MAX_POINTS:
        rng = np.random.default_rng(0)
        keep = np.union1d(rng.choice(n, MAX_POINTS, replace=False), furthest)
        note = f" {len(keep):,} of {n:,} pairs drawn (a sample, with the furthest)."
    cls = np.asarray(p["cls"])
    hosts = "src_host" in p
    fig = go.Figure()
    for i, label in enumerate(result.class_labels):
        sel = keep[cls[keep] == i]
        if not len(sel):
            continue
        cd = np.stack([p["src"][sel], p["dst"][sel]], 1) if "src" in p else None
        txt = ([f"{a} -> {b}" for a, b in zip(p["src_host"][sel], p["dst_host"][sel])] if hosts else None)
        fig.add_trace(go.Scatter(
            x=mod[sel].astype(np.float32), y=meas[sel].astype(np.float32), mode="markers", name=label,
            marker=dict(color=color(i), size=6, opacity=0.7), customdata=cd, text=txt,
            hovertemplate=(f"{label}<br>ranks %{{customdata[0]}} -> %{{customdata[1]}}<br>%{{text}}<br>"
                           "modeled %{x:.0f} MB/s<br>measured %{y:.0f} MB/s<extra></extra>")))
    if len(furthest):
        f = np.asarray(furthest)
        desc = [f"ranks {p['src'][i]} -> {p['dst'][i]}" if "src" in p else "" for i in f]
        if hosts:
            desc = [f"{d}<br>{p['src_host'][i]} -> {p['dst_host'][i]}" for d, i in zip(desc, f)]
        if routes:
            desc = [f"{d}<br>route: {r}" for d, r in zip(desc, routes)]
        fig.add_trace(go.Scatter(x=mod[f], y=meas[f], mode="markers", name="furthest from the model",
                                 marker=dict(symbol="circle-open", size=13, color="black", line=dict(width=1.5)),
                                 text=desc, hovertemplate=("%{text}<br>modeled %{x:.0f} MB/s<br>measured %{y:.0f} MB/s"
                                                           "<extra></extra>")))
    hi = float(np.nanmax(np.r_[meas, mod])) * 1.05
    fig.add_trace(go.Scatter(x=[0, hi], y=[0, hi], mode="lines", name="measured = modeled",
                             line=dict(color="#777", dash="dot"), hoverinfo="skip"))
    layout(fig, "Measured against modeled, pair by pair [MB/s]",
            xaxis=dict(title="modeled [MB/s]", range=[0, hi]), yaxis=dict(title="measured [MB/s]", range=[0, hi]))
    return Picture("measured-vs-modeled", "Measured against modeled", fig,
                   "One point per pair; on the dotted line the model is exact." + note, 820, 640)


# ---- links -------------------------------------------------------------------------
#: colours of link levels (left panel of :func:`hot_links`): greys and browns, none of the classes' colours
LEVEL_COLOURS = ["#555555", "#a6761d", "#b3b3b3", "#e6ab02", "#666666"]


def link_level(fabric: Fabric | None, link: int) -> str:
    """Which levels a directed link joins: 'host - leaf', 'leaf - level 2', ... (switch levels count from 1, the
    leaves; on Itasca level 2 is the directors' line switches, level 3 their spines).

    >>> from fabscope.fabric.generators import fat_tree
    >>> f = fat_tree(k=4, levels=2)
    >>> link_level(f, 0), link_level(f, f.n_links - 1), link_level(None, 0)
    ('host - leaf', 'leaf - level 2', 'link')
    """
    if fabric is None or fabric.switch_level is None or not 0 <= link < fabric.n_links:
        return "link"
    def tier(node: int) -> int:
        return 0 if node < fabric.n_hosts else int(fabric.switch_level[node - fabric.n_hosts])
    names = {0: "host", 1: "leaf"}
    a, b = sorted((tier(int(fabric.link_src[link])), tier(int(fabric.link_dst[link]))))
    return f"{names.get(a, f'level {a}')} - {names.get(b, f'level {b}')}"


def hot_links(result: Result, fabric: Fabric | None = None) -> Picture | None:
    """The most loaded links (utilisation, coloured by the level they join) and, per class, the links that limit
    its pairs (coloured by class, as the other pictures colour classes)."""
    hot = result.extra.get("hot_links") or []
    lim = result.extra.get("limiting_links") or {}
    if not hot and not lim:
        return None
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Most loaded links [% of capacity], by link level",
                                                        "Links that limit each class [flows held back], by class"),
                        horizontal_spacing=0.32)
    if hot:
        rows = hot[::-1]
        levels = [link_level(fabric, int(h["link"])) if "link" in h else "link" for h in rows]
        for k, lev in enumerate(dict.fromkeys(levels)):
            sel = [h for h, lv in zip(rows, levels) if lv == lev]
            fig.add_trace(go.Bar(y=[h["name"] for h in sel], x=[100 * h["utilisation"] for h in sel], orientation="h",
                                 customdata=[h["load"] / MB for h in sel], name=f"link: {lev}", offsetgroup="load",
                                 marker_color=LEVEL_COLOURS[k % len(LEVEL_COLOURS)], legendgroup="levels",
                                 legendgrouptitle_text="left: link level",
                                 hovertemplate="%{y}<br>%{x:.1f} % used, %{customdata:.4g} MB/s<extra></extra>"), 1, 1)
        fig.update_yaxes(categoryorder="array", categoryarray=[h["name"] for h in rows], row=1, col=1)
    for label, items in lim.items():
        i = result.class_labels.index(label) if label in result.class_labels else len(result.class_labels)
        top = items[:5][::-1]
        fig.add_trace(go.Bar(y=[x["name"] for x in top], x=[x["flows"] for x in top], orientation="h",
                             name=f"class: {label}", marker_color=color(i), legendgroup="classes",
                             legendgrouptitle_text="right: class of pair",
                             hovertemplate=f"{label}<br>%{{y}}<br>limits %{{x}} flows<extra></extra>"), 1, 2)
    fig.update_yaxes(automargin=True, tickfont=dict(size=10))
    layout(fig, "Links: load and the pairs they limit", barmode="group", legend=dict(orientation="h", y=-0.15),
            height=max(420, 26 * max(len(hot), sum(min(5, len(v)) for v in lim.values()))))
    return Picture("links", "Most loaded links", fig,
                   "Left: utilisation of the busiest directed links, coloured by the level of the fabric they join. "
                   "Right: how many flows each link holds back, coloured by class of pair.", 1300, 560)


def suspect_name(s: Mapping[str, Any]) -> str:
    """A suspect as a person reads it: 'cable s1-0000[8] -- s2-0003[1]' or 'host h0009 (its cable)'.

    >>> suspect_name({"name": "h0009", "host": "h0009", "link": 18}), suspect_name({"link": 0, "host": None})
    ('host h0009 (its NIC or cable)', 'cable of link 0')
    """
    if s.get("host"):
        return f"host {s['host']} (its NIC or cable)"
    if s.get("name"):
        return f"cable {s['name']}"
    return f"cable of link {s.get('link')}" if s.get("link") is not None else "unnamed suspect"


def suspects(result: Result) -> Picture | None:
    """Diagnosis: each suspect's estimated capacity beside its nominal one, with its confidence."""
    sus = result.extra.get("suspects") or []
    if not sus:
        return None
    names = [suspect_name(s) for s in sus][::-1]
    est = [float(s.get("capacity") or 0) / MB for s in sus][::-1]
    nom = [float(s.get("nominal") or 0) / MB for s in sus][::-1]
    conf = [float(s.get("confidence") or 0) for s in sus][::-1]
    npairs = [len(s.get("pairs") or []) for s in sus][::-1]
    cd = np.stack([conf, npairs], 1)
    fig = go.Figure([
        go.Bar(y=names, x=nom, orientation="h", name="nominal", marker_color="#bbbbbb", customdata=cd,
               hovertemplate="%{y}<br>nominal %{x:.4g} MB/s<extra></extra>"),
        go.Bar(y=names, x=est, orientation="h", name="estimated", marker=dict(color=conf, colorscale="Reds", cmin=0,
                                                                              cmax=1, colorbar=dict(title="confidence")),
               customdata=cd, hovertemplate=("%{y}<br>estimated %{x:.4g} MB/s<br>confidence %{customdata[0]:.2f}"
                                             "<br>%{customdata[1]} pairs explained<extra></extra>"))])
    fig.update_yaxes(automargin=True)
    layout(fig, "Diagnosis: suspects, estimated against nominal capacity [MB/s]", barmode="overlay",
            height=max(380, 40 * len(sus) + 120), legend=dict(orientation="h", y=-0.2))
    return Picture("suspects", "Diagnosis suspects", fig,
                   "Grey: what the fabric says the cable or host carries; coloured by confidence: what the pairs "
                   "measured imply.", 1000, max(380, 40 * len(sus) + 120))


def criticality(result: Result, top: int = 30) -> Picture | None:
    """Criticality sweep: bandwidth lost when each cable is cut, the most critical first."""
    crit = sorted(result.extra.get("criticality") or [], key=lambda c: -float(c.get("lost", 0)))[:top]
    if not crit:
        return None
    crit = crit[::-1]
    fig = go.Figure(go.Bar(
        y=[c.get("cable", "?") for c in crit], x=[float(c.get("lost", 0)) / MB for c in crit], orientation="h",
        customdata=[[c.get("losing_pairs", 0), len(c.get("links") or [])] for c in crit], marker_color="#d62728",
        hovertemplate="%{y}<br>lost %{x:.0f} MB/s<br>%{customdata[0]} pairs lose<extra></extra>"))
    fig.update_yaxes(automargin=True)
    layout(fig, "Criticality: bandwidth lost when one cable is cut [MB/s]", height=max(380, 24 * len(crit) + 120))
    return Picture("criticality", "Criticality ranking", fig, "Each bar: the sum over pairs of the bandwidth lost "
                   "without that cable.", 1000, max(380, 24 * len(crit) + 120))


def mapping_metrics(rows: Sequence[Mapping[str, Any]]) -> Picture | None:
    """Each mapping algorithm's metrics side by side, one panel per metric."""
    if not rows:
        return None
    keys = [k for k in rows[0] if k != "algorithm" and isinstance(rows[0][k], (int, float))
            and not isinstance(rows[0][k], bool)]
    if not keys:
        return None
    cols = min(3, len(keys))
    nrow = (len(keys) + cols - 1) // cols
    fig = make_subplots(rows=nrow, cols=cols, subplot_titles=keys, vertical_spacing=0.18)
    algs = [str(r["algorithm"]) for r in rows]
    for k, key in enumerate(keys):
        fig.add_trace(go.Bar(x=algs, y=[r.get(key) for r in rows], marker_color=[color(i) for i in range(len(algs))],
                             showlegend=False, hovertemplate=f"%{{x}}<br>{key}: %{{y:.4g}}<extra></extra>"),
                      k // cols + 1, k % cols + 1)
    layout(fig, "Mapping: each algorithm's metrics (lower is better)", height=300 * nrow + 80)
    return Picture("mapping", "Mapping metrics", fig, "", 1200, 300 * nrow + 80)


# ---- the fabric --------------------------------------------------------------------
def fabric_drawing(fabric: Fabric, result: Result | None, max_nodes: int = 160) -> Picture | None:
    """Small fabrics: hosts and switches by tier, each cable coloured by the load of its busier direction."""
    if fabric.n_nodes > max_nodes:
        return None
    n_h = fabric.n_hosts
    util = np.zeros(fabric.n_links)
    load = np.zeros(fabric.n_links)
    if result is not None and result.links is not None and len(result.links.get("link", [])) \
            and "load" in result.links:    # a diagnosis's links carry estimates, not loads
        lid = np.asarray(result.links["link"], np.int64)
        if len(lid) and (lid.min() < 0 or lid.max() >= fabric.n_links):
            from fabscope.errors import SchemaError

            raise SchemaError(f"the result's link {int(lid.max() if lid.max() >= fabric.n_links else lid.min())} "
                              f"is no link of fabric {fabric.name!r} ({fabric.n_links} links)")
        load[lid] = np.asarray(result.links["load"], float)
        util[lid] = load[lid] / np.asarray(result.links["capacity"], float)
    pos = _positions(fabric)
    a, b = np.minimum(fabric.link_src, fabric.link_dst), np.maximum(fabric.link_src, fabric.link_dst)
    key = a.astype(np.int64) * fabric.n_nodes + b
    cables, inv = np.unique(key, return_inverse=True)
    cu = np.zeros(len(cables))
    np.maximum.at(cu, inv, util)
    cl = np.zeros(len(cables))
    np.maximum.at(cl, inv, load)
    first = np.zeros(len(cables), np.int64)
    first[inv[::-1]] = np.arange(fabric.n_links)[::-1]
    bins = [(0, 1e-9, "#cccccc", "idle"), (1e-9, 0.5, "#9ecae1", "< 50 %"), (0.5, 0.9, "#fd8d3c", "50-90 %"),
            (0.9, 10, "#d62728", ">= 90 %")]
    fig = go.Figure()
    hx, hy, htxt = [], [], []
    for lo, hi, c, label in bins:
        sel = np.flatnonzero((cu >= lo) & (cu < hi))
        if not len(sel):
            continue
        xs, ys = [], []
        for k in sel:
            s, d = int(cables[k] // fabric.n_nodes), int(cables[k] % fabric.n_nodes)
            xs += [pos[s][0], pos[d][0], None]
            ys += [pos[s][1], pos[d][1], None]
            hx.append((pos[s][0] + pos[d][0]) / 2)
            hy.append((pos[s][1] + pos[d][1]) / 2)
            htxt.append(f"{fabric.link_name(int(first[k]))}<br>busier direction: {100 * cu[k]:.0f} %, "
                        f"{cl[k] / MB:.0f} MB/s")
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=c, width=1 + 3 * (lo >= 0.5)),
                                 name=f"cable load {label}", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=hx, y=hy, mode="markers", marker=dict(size=8, opacity=0), text=htxt,
                             hovertemplate="%{text}<extra></extra>", showlegend=False))
    names = fabric.node_names
    for kind, idx, sym, c in (("hosts", range(n_h), "circle", "#2ca02c"),
                              ("switches", range(n_h, fabric.n_nodes), "square", "#1f3b73")):
        idx = list(idx)
        fig.add_trace(go.Scatter(x=[pos[i][0] for i in idx], y=[pos[i][1] for i in idx], mode="markers", name=kind,
                                 marker=dict(symbol=sym, size=9 if kind == "hosts" else 12, color=c),
                                 text=[names[i] for i in idx], hovertemplate="%{text}<extra></extra>"))
    layout(fig, "The fabric, cables coloured by load", xaxis=dict(visible=False), yaxis=dict(visible=False),
            legend=dict(orientation="h", y=-0.05), height=560)
    return Picture("fabric", "The fabric with link loads", fig,
                   "Hosts at the bottom, switches above by tier (or by coordinates); hover a cable for its load.",
                   1100, 560)


def _positions(fabric: Fabric) -> list[tuple[float, float]]:
    """Tiers for trees (hosts at 0, switches at 1 + level), a spring layout otherwise."""
    n_h = fabric.n_hosts
    if fabric.switch_level is not None and fabric.n_switches:
        tier = np.r_[np.zeros(n_h), np.asarray(fabric.switch_level, float) + 1]
    else:
        tier = None
    if tier is not None and fabric.coords is None:
        pos: list[tuple[float, float]] = [(0.0, 0.0)] * fabric.n_nodes
        for t in np.unique(tier):
            idx = np.flatnonzero(tier == t)
            xs = np.linspace(0, 1, len(idx) + 2)[1:-1]
            for x, i in zip(xs, idx):
                pos[int(i)] = (float(x), float(t))
        return pos
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(fabric.n_nodes))
    g.add_edges_from(zip(fabric.link_src.tolist(), fabric.link_dst.tolist()))
    p = nx.springlayout(g, seed=0)
    return [(float(p[i][0]), float(p[i][1])) for i in range(fabric.n_nodes)]


# ---- several runs ----------------------------------------------------------------------
def history(runs: Sequence[tuple[str, Result]]) -> Picture | None:
    """Average bandwidth by class, the runs side by side."""
    if len(runs) < 2:
        return None
    fig = go.Figure()
    for i, (label, r) in enumerate(runs):
        rows = r.summary()
        fig.add_trace(go.Bar(x=[s.label for s in rows], y=[s.avg for s in rows], name=label, marker_color=color(i),
                             customdata=[[s.max, s.min, s.count] for s in rows],
                             hovertemplate=(f"{label}<br>%{{x}}: average %{{y:.0f}} MB/s<br>max %{{customdata[0]:.0f}},"
                                            " min %{customdata[1]:.0f}, %{customdata[2]} pairs<extra></extra>")))
    layout(fig, "The runs side by side: average bandwidth by class [MB/s]", barmode="group",
            yaxis=dict(title="MB/s"), legend=dict(orientation="h", y=-0.15))
    return Picture("runs", "Runs side by side", fig, "", 1000, 480)
