"""The history in the report: trends per class, a calendar of alarms, cables' capacity over time.

:func:`history_sections` reads a :class:`fabscope.history.store.History`,
runs ``check`` on every run that has earlier runs of its test, and returns
report sections (:class:`fabscope.report.sections.Section`) that
:func:`fabscope.report.html.write` turns into the one-file page
(``fabscope history report``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go

from fabscope.history.check import CheckReport, check
from fabscope.history.db import describe
from fabscope.history.series import cable_series, class_series
from fabscope.history.store import History, Run
from fabscope.report.picture import Picture, color, layout
from fabscope.report.sections import Section, Table


def check_all(h: History, runs: Sequence[Run], **kw: Any) -> dict[int, CheckReport]:
    """``check`` of every run that has an earlier run of its test."""
    out = {}
    for r in runs:
        try:
            out[r.id] = check(h, r.id, runs=list(runs), **kw)
        except Exception as err:          # no baseline yet: no check
            if "no earlier run" not in str(err):
                raise
    return out


def class_trends(h: History, runs: Sequence[Run], reports: dict[int, CheckReport]) -> Picture | None:
    """Median ratio to the model (bandwidth where there is none) per class, per test, over time;
    runs with an alarm of that class ringed in red."""
    classes = [c for (c,) in h.db.query("SELECT DISTINCT cls FROM classes WHERE cls <> 'Overall' ORDER BY cls")]
    if not classes:
        return None
    fig = go.Figure()
    test_of = {r.id: r.test or r.kind for r in runs}
    use_ratio = all(row[8] is not None for c in classes for row in class_series(h, c))
    k = 0
    for c in classes:
        rows = class_series(h, c)
        for test in sorted({test_of.get(r[0], "") for r in rows}):
            sel = [r for r in rows if test_of.get(r[0]) == test]
            y = [r[8] if use_ratio else r[7] / 1e6 for r in sel]
            alarm = [any(f.alarm and f.what == "class" and f.name == c for f in reports.get(r[0], _Empty()).findings)
                     for r in sel]
            fig.add_trace(go.Scatter(
                x=[r[1] for r in sel], y=y, mode="lines+markers", name=f"{c} ({test})",
                line=dict(color=color(k)),
                marker=dict(size=[12 if a else 6 for a in alarm], line=dict(width=[3 if a else 0 for a in alarm],
                                                                             color="red")),
                hovertemplate=f"{c} ({test})<br>run %{{customdata}}<br>%{{x}}<br>%{{y:.3f}}<extra></extra>",
                customdata=[r[0] for r in sel]))
            k += 1
    what = "median measured / modeled" if use_ratio else "median MB/s"
    layout(fig, f"Trends per class: {what}", xaxis_title="run time", yaxis_title=what)
    return Picture("history-classes", "Trends per class", fig,
                   f"{what} of each class's pairs in every run; a red ring: an alarm of that class")


class _Empty:
    findings: list = []


def alarm_calendar(runs: Sequence[Run], reports: dict[int, CheckReport]) -> Picture | None:
    """Days (columns) by week (rows): the number of alarms raised by the runs of each day."""
    if not runs:
        return None
    days: dict[dt.date, list[str]] = {}
    checked: set[dt.date] = set()
    for r in runs:
        d = dt.date.fromisoformat(r.time[:10])
        days.setdefault(d, [])
        rep = reports.get(r.id)
        if rep is None:
            continue
        checked.add(d)
        days[d] += [f"run {r.id} ({r.test}): {f.what} {f.name}" for f in rep.alarms]
    first, last = min(days), max(days)
    start = first - dt.timedelta(days=first.weekday())
    n_weeks = (last - start).days // 7 + 1
    z = np.full((n_weeks, 7), np.nan)
    text = [["" for _ in range(7)] for _ in range(n_weeks)]
    for d, names in days.items():
        w, wd = (d - start).days // 7, d.weekday()
        z[w, wd] = len(names) if d in checked else np.nan
        text[w][wd] = f"{d}<br>" + ("<br>".join(names[:8]) if names else
                                    "no alarm" if d in checked else "no baseline yet")
    weeks = [str(start + dt.timedelta(days=7 * w)) for w in range(n_weeks)]
    fig = go.Figure(go.Heatmap(z=z, x=["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], y=weeks, text=text,
                               hovertemplate="%{text}<extra></extra>", zmin=0, zmax=max(1.0, np.nanmax(z, initial=1)),
                               colorscale=[[0, "#e8f5e9"], [0.01, "#ffcdd2"], [1, "#b71c1c"]], xgap=3, ygap=3,
                               colorbar=dict(title="alarms")))
    layout(fig, "Calendar of alarms", yaxis=dict(autorange="reversed", title="week of", type="category"),
            margin=dict(l=110))
    return Picture("history-calendar", "Calendar of alarms", fig,
                   "each day's alarms from 'history check' (hover for the suspects); blank: no run, or no earlier run to check against",
                   height=max(260, 60 + 34 * n_weeks))


def cable_capacity(h: History, reports: dict[int, CheckReport], top: int = 6) -> Picture | None:
    """Estimated capacity / nominal over time of the cables (and hosts) alarms named, else the most suspected."""
    named = []
    for rep in reports.values():
        for f in rep.alarms:
            if f.cable and f.cable not in named:
                named.append(f.cable)
    if len(named) < top:
        rows = h.db.query("SELECT name, count(*) FROM cables WHERE suspect = 1 GROUP BY name ORDER BY count(*) DESC")
        named += [n for n, _ in rows if n not in named][: top - len(named)]
    if not named:
        return None
    fig = go.Figure()
    for i, name in enumerate(named[:top]):
        (c,) = h.db.query("SELECT DISTINCT cable FROM cables WHERE name = ?", (name,))[0]
        rows = cable_series(h, int(c))
        fig.add_trace(go.Scatter(x=[r[1] for r in rows], y=[r[4] / r[3] for r in rows], mode="lines+markers",
                                 name=name, line=dict(color=color(i)), customdata=[r[0] for r in rows],
                                 hovertemplate=f"{name}<br>run %{{customdata}}<br>%{{x}}<br>%{{y:.2f}} of capacity"
                                               "<extra></extra>"))
    layout(fig, "Cables over time: capacity estimated by the tomography", xaxis_title="run time",
            yaxis=dict(title="estimate / nominal", range=[0, 1.1]))
    return Picture("history-cables", "Cables over time", fig,
                   "each run's tomography estimate of the cables the alarms named (or the most suspected)")


def history_sections(h: History, **check_kw: Any) -> list[Section]:
    runs = h.runs()
    reports = check_all(h, runs, **check_kw)
    alarms = [(r, f) for r in runs if r.id in reports for f in reports[r.id].alarms]
    facts = [("history", describe(h.url)), ("fabric", str(h._meta("fabric_name") or "not given")),
             ("runs", f"{len(runs)}" + (f", {runs[0].time} to {runs[-1].time}" if runs else "")),
             ("checked", f"{len(reports)} runs against the runs of their test before them"),
             ("alarms", str(len(alarms)))]
    rows = [[str(r.id), r.time, r.test or r.kind, f.what, f.name, f"{f.test.factor:.3f}", f"{f.test.p:.2g}",
             "" if f.first_run is None else str(f.first_run)] for r, f in alarms]
    table = Table("Alarms", ["run", "time", "test", "what", "suspect", "factor", "p", "slow since run"], rows,
                  note="Hodges-Lehmann factor of the pairs' log ratios against the baseline runs; "
                       "one-sided Mann-Whitney p")
    pics = [p for p in (class_trends(h, runs, reports), alarm_calendar(runs, reports), cable_capacity(h, reports))
            if p is not None]
    return [Section("Fabric history", facts=facts, tables=[table], pictures=pics)]
