"""What every report picture shares: the :class:`Picture`, the plotly template, the colours.

>>> import plotly.graph_objects as go
>>> pic = Picture("demo", "Demo", layout(go.Figure(), "Demo"))
>>> pic.fig.layout.title.text, color(0), color(10) == color(0)
('Demo', '#1f77b4', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

#: a small template: Plotly's default one is written into every figure (~10 kB each)
TEMPLATE = go.layout.Template(layout=dict(
    font=dict(family="DejaVu Sans, Arial, sans-serif", size=12),
    paper_bgcolor="white", plot_bgcolor="white",
    xaxis=dict(showline=True, linecolor="#444", gridcolor="#e5e5e5", ticks="outside", zeroline=False),
    yaxis=dict(showline=True, linecolor="#444", gridcolor="#e5e5e5", ticks="outside", zeroline=False),
    colorway=["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
              "#bcbd22", "#17becf"],
    margin=dict(l=70, r=30, t=50, b=60), hoverlabel=dict(namelength=-1),
))
pio.templates["fabscope"] = TEMPLATE
COLORSCALE = "Viridis"
#: matrices with more cells than this go to the browser as uint16 MB/s instead of float32
FLOAT_CELLS = 400_000
#: scatter plots draw at most this many points (the furthest pairs always among them)
MAX_POINTS = 5_000


@dataclass
class Picture:
    name: str           # file name stem of its PNG/SVG export
    title: str
    fig: go.Figure
    caption: str = ""
    width: int = 900    # export size in pixels
    height: int = 500


def layout(fig: go.Figure, title: str, **kw: Any) -> go.Figure:
    fig.update_layout(template="fabscope", title=dict(text=title, x=0.01, font=dict(size=15)), **kw)
    return fig


def color(i: int) -> str:
    cw = TEMPLATE.layout.colorway
    return cw[i % len(cw)]
