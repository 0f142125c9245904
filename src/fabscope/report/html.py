"""The report page: one HTML file with Plotly's JavaScript and every figure inside it.

Rendered with Jinja2 from ``templates/report.html.j2``; written through
:func:`fabscope.atomic.atomic_open`, so a failure leaves no half-written page.

>>> from fabscope.report.sections import Section, Table
>>> page = render([Section("run", tables=[Table("t", ["a"], [["<1>"]])])], ["x.json"], "demo")
>>> "&lt;1&gt;" in page and page.count("<script") >= 1
True
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Sequence

import jinja2
import plotly.io as pio
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from fabscope import __version__
from fabscope.atomic import atomic_open
from fabscope.report.sections import Section

#: Plotly's options for every picture: no link to Plotly's cloud, PNG download at 2x
CONFIG = {"displaylogo": False, "responsive": True,
          "toImageButtonOptions": {"format": "png", "scale": 2}}


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("fabscope.report", "templates"),
                              autoescape=jinja2.select_autoescape(["html", "j2"]), trim_blocks=True,
                              lstrip_blocks=True)


def picture_html(pic, div_id: str) -> Markup:
    """One figure as a <div> and the script that draws it (Plotly's JavaScript is on the page once)."""
    html = pio.to_html(pic.fig, full_html=False, include_plotlyjs=False, config=CONFIG, div_id=div_id,
                       default_width="100%", default_height=f"{pic.height}px", validate=False)
    return Markup(_BDATA.sub(_unescape_slash, html))


#: Plotly writes "/" as "\u002f" (so no "</script>" can appear); inside base64 typed arrays,
#: which hold no "<", that only costs space: up to 6 bytes for 1 in smooth data
_BDATA = re.compile(r'"bdata":"([^"]*)"')


def _unescape_slash(m: re.Match) -> str:
    return '"bdata":"' + m.group(1).replace("\\u002f", "/") + '"'


TEXT_COLUMNS = ("[MB/sec]", "route", "link", "cable", "class", "src host", "dst host", "suspect", "link or host",
                "leaf pairs", "ratio", "sizes [B]")


def left_columns(columns: Sequence[str]) -> set[int]:
    """Columns of names (left-aligned): the first unless it holds figures, and the named text columns."""
    out = {i for i, c in enumerate(columns) if c in TEXT_COLUMNS and c != "ratio"}
    if columns and columns[0] not in ("Max", "src"):
        out.add(0)
    return out


def render(sections: Sequence[Section], inputs: Sequence[str], title: str) -> str:
    """The whole page as a string."""
    secs = []
    k = 0
    for s in sections:
        pics = []
        for p in s.pictures:
            k += 1
            pics.append({"name": p.name, "caption": p.caption, "html": picture_html(p, f"fig{k}-{p.name}")})
        secs.append({"title": s.title, "facts": s.facts, "notes": s.notes, "tables": s.tables, "pictures": pics})
    return _env().get_template("report.html.j2").render(
        left=left_columns, title=title, version=__version__, inputs=list(inputs), sections=secs, plotlyjs=Markup(get_plotlyjs()))


def _honour_umask(fd: int) -> None:
    """The temporary file is made 0600; the page gets the mode any new file would get."""
    mask = os.umask(0)
    os.umask(mask)
    os.fchmod(fd, 0o666 & ~mask)


def write(path: str | os.PathLike[str], sections: Sequence[Section], inputs: Sequence[str], title: str) -> int:
    """Write the page (atomically); returns its size in bytes."""
    page = render(sections, inputs, title)
    with atomic_open(path, "w") as fh:
        fh.write(page)
        _honour_umask(fh.fileno())
    return len(page.encode())
