"""What a report says about each run: its tables and pictures, in order.

The same :class:`Table` objects go to the HTML page and to the terminal
(:func:`fabscope.report.tables.print_tables`), so the two never disagree.

>>> import numpy as np
>>> from fabscope.result import Result
>>> r = Result(meta={"kind": "model", "fabric": "x"}, class_labels=("Same Leaf", "Far"),
...            pairs={"cls": np.array([0, 1]), "bandwidth": np.array([3e9, 1e9])})
>>> t = class_rows(r)
>>> t.columns
['Max', 'Average', 'Min', '[MB/sec]', 'pairs']
>>> t.rows[1]
['3000.00', '3000.00', '3000.00', 'Same Leaf', '1']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from fabscope.errors import MeasureError
from fabscope.fabric.model import MB
from fabscope.measure import analysis as an
from fabscope.report import compare as cmp
from fabscope.report import figures as fg
from fabscope.report import heatmaps
from fabscope.report.picture import Picture
from fabscope.report.inputs import Run
from fabscope.report.tables import class_cells
from fabscope.result import Result
from fabscope.seeds import ITASCA_MERGE, seed_table


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class Section:
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    pictures: list[Picture] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _f(x: float, nd: int = 2) -> str:
    return "" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def mbs(x: float) -> str:
    """A rate in MB/s with the digits it needs: whole MB/s from 100 up, else three significant digits.

    >>> mbs(3071.4), mbs(1.25), mbs(12.5), mbs(0.0123), mbs(float("nan"))
    ('3071', '1.25', '12.5', '0.0123', '')
    """
    if x is None or not np.isfinite(x):
        return ""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


#: what each count of a diagnosis's ``explained`` means (Diagnosis.counts)
EXPLAINED = {"nominal": "at the modeled rate", "contention": "explained by contention on the routes",
             "suspect": "explained by the suspects", "unexplained": "unexplained", "faster": "faster than modeled"}


def explained_note(ex: Any) -> str:
    """A diagnosis's counts of pairs in words.

    >>> explained_note({"nominal": 55, "contention": 21, "suspect": 1})
    'pairs: 55 at the modeled rate, 21 explained by contention on the routes, 1 explained by the suspects'
    """
    if isinstance(ex, dict):
        return "pairs: " + ", ".join(f"{v} {EXPLAINED.get(k, k)}" for k, v in ex.items())
    return f"explained: {ex}"


# ---- tables ---------------------------------------------------------------------
def class_rows(r: Result, title: str = "Max / Average / Min by class") -> Table:
    """The seeds' table; with the seed's own figures beside when the run is one the seed measured."""
    merge = ITASCA_MERGE if r.meta.get("fabric") == "itasca" else None
    seed = seed_table(r.meta)
    cols, rows = class_cells(r.summary(merge=merge), seed)
    return Table(title, cols, rows, "beside: seed 000's own figures" if seed else "")


def compare_rows(r: Result) -> Table:
    """Measured and modeled Max / Average / Min by class, side by side, with the ratio of averages."""
    meas = {s.label: s for s in r.summary("measured")}
    mod = {s.label: s for s in r.summary("modeled")}
    cols = ["class", "measured Max", "Average", "Min", "modeled Max", "Average", "Min", "measured/modeled", "pairs"]
    rows = []
    for label, m in meas.items():
        p = mod[label]
        rows.append([label, _f(m.max), _f(m.avg), _f(m.min), _f(p.max), _f(p.avg), _f(p.min),
                     _f(m.avg / p.avg if p.avg else float("nan"), 3), str(m.count)])
    return Table("Measured beside modeled, by class [MB/sec]", cols, rows)


def furthest(r: Result, top: int = 15) -> np.ndarray:
    """Indices of the pairs whose measurement is furthest from the model (|log ratio|)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.abs(np.log(np.asarray(r.pairs["ratio"], float)))
    lr[~np.isfinite(lr)] = -1
    return np.argsort(-lr, kind="stable")[:top]


def pair_rows(r: Result, idx: Sequence[int], title: str, routes: Callable[[np.ndarray], list[str]] | None = None,
              ) -> Table:
    """Chosen pairs: ranks, hosts, class, figures (and the route, where the fabric is known)."""
    p = r.pairs
    cols = ["src", "dst", "src host", "dst host", "class"]
    has_cmp = "measured" in p
    cols += ["measured MB/s", "modeled MB/s", "ratio"] if has_cmp else ["MB/s"]
    route = routes(np.asarray(idx)) if routes is not None and len(idx) else None
    if route:
        cols.append("route")
    rows = []
    for k, i in enumerate(idx):
        row = [str(p["src"][i]) if "src" in p else "", str(p["dst"][i]) if "dst" in p else "",
               str(p["src_host"][i]) if "src_host" in p else "", str(p["dst_host"][i]) if "dst_host" in p else "",
               r.class_labels[int(p["cls"][i])]]
        if has_cmp:
            row += [mbs(p["measured"][i] / MB), mbs(p["modeled"][i] / MB), _f(p["ratio"][i], 3)]
        else:
            row += [mbs(p["bandwidth"][i] / MB)]
        if route:
            row.append(route[k])
        rows.append(row)
    return Table(title, cols, rows)


def latency_rows(fit: an.LatencyModel) -> Table:
    rows = [[f"{g.first:,} .. {g.last:,}", _f(g.alpha * 1e6, 3), _f(g.beta / MB, 1)] for g in fit.regimes]
    kinks = ", ".join(f"{k:,} B" for k in fit.kinks) or "none"
    return Table("Fitted latency model alpha + m/beta per regime", ["sizes [B]", "alpha [us]", "beta [MB/s]"], rows,
                 f"kinks (protocol switch points): {kinks}; rms relative error {fit.rms_rel_error:.1%}")


def cbr_rows(cbrs: dict[str, dict[int, float]]) -> Table:
    sizes = sorted({s for by in cbrs.values() for s in by})
    rows = [[f"{s:,}"] + [_f(cbrs[m].get(s, float("nan")), 2) for m in cbrs] for s in sizes]
    return Table("Communication Balance Ratios (intra-node / inter-node, seed 001)", ["size [B]"] +
                 [f"CBR-{m}" for m in cbrs], rows, "1 = balanced")


def balance_rows(bal: dict[str, float]) -> Table:
    names = {"memory_max": "memory MAX (one core)", "memory_min": "memory MIN (all cores)",
             "interconnect_max": "interconnect MAX (one core)", "interconnect_min": "interconnect MIN (all cores)",
             "peak_gflops_core": "peak GFLOPS per core", "peak_gflops_node": "peak GFLOPS per node"}
    return Table("Balance ratios, bytes per FLOP (seed 004)", ["ratio", "value"],
                 [[names.get(k, k), f"{v:.3g}"] for k, v in bal.items()])


def link_rows(r: Result) -> Table | None:
    hot = r.extra.get("hot_links") or []
    if not hot:
        return None
    rows = [[h["name"], mbs(h["load"] / MB), _f(100 * h["utilisation"], 1)] for h in hot]
    return Table("Most loaded links", ["link", "load [MB/s]", "utilisation [%]"], rows)


def suspect_rows(r: Result) -> Table | None:
    sus = r.extra.get("suspects") or []
    if not sus:
        return None
    rows = [[fg.suspect_name(s), mbs(float(s.get("capacity") or 0) / MB), mbs(float(s.get("nominal") or 0) / MB),
             _f(float(s.get("confidence") or 0), 2), str(len(s.get("pairs") or []))] for s in sus]
    ex = r.extra.get("explained")
    return Table("Diagnosis: suspects", ["suspect", "estimated MB/s", "nominal MB/s", "confidence", "pairs"], rows,
                 explained_note(ex) if ex is not None else "")


def criticality_rows(r: Result, top: int = 20) -> Table | None:
    crit = sorted(r.extra.get("criticality") or [], key=lambda c: -float(c.get("lost", 0)))[:top]
    if not crit:
        return None
    rows = [[str(c.get("cable")), mbs(float(c.get("lost", 0)) / MB), str(c.get("losing_pairs", "")),
             " ".join(str(x) for x in c.get("links") or [])] for c in crit]
    return Table("Criticality: the cables whose loss costs most", ["cable", "lost MB/s", "pairs losing", "links"],
                 rows)


def mapping_rows(rows: list[dict[str, Any]]) -> Table | None:
    if not rows:
        return None
    keys = [k for k in rows[0]]
    return Table("Mapping: metrics of each algorithm", keys,
                 [[f"{r.get(k):.4g}" if isinstance(r.get(k), float) else str(r.get(k, "")) for k in keys]
                  for r in rows])


# ---- one run ---------------------------------------------------------------------------
#: the facts a section lists, and the words they are shown with
FACTS = {"kind": "kind", "fabric": "fabric", "routing": "routing", "model": "model", "pattern": "pattern",
         "ranks": "ranks", "ppn": "ranks per node", "size_text": "message size", "seed": "pattern seed",
         "test": "test", "mpi_library": "MPI", "status": "status", "matched_pairs": "matched pairs",
         "fabscope_version": "fabscope"}


def facts(run: Run) -> list[tuple[str, str]]:
    """The run's facts: the file it was read from (its name, never a title), then what its metadata says."""
    import os

    r = run.result
    m = r.meta if r is not None else {}
    names = " against ".join(os.path.basename(p) for p in run.path.split(" against ")) if run.path else ""
    out = [("file", names)] if names else []
    # a seed says which random pairs ran: not a fact of a sweep or of a test without random choices
    unseeded = m.get("kind") == "measure" and not any(w in str(m.get("test") or "") for w in ("random", "bisection"))
    out += [(word, str(m[k])) for k, word in FACTS.items()
            if m.get(k) not in (None, "") and not (k == "seed" and (unseeded or is_sweep(r)))]
    if is_sweep(r):
        out.append(("message sizes", f"{len(np.unique(r.pairs['bytes'])):,}"))
    elif r is not None:
        out.append(("pairs", f"{r.n_pairs:,}"))
    return out


def route_namer(run: Run) -> Callable[[np.ndarray], list[str]] | None:
    """Names the links each chosen pair crosses, when the fabric (and so its routing) is known."""
    f, r = run.fabric, run.result
    if f is None or r is None or "src_host" not in r.pairs:
        return None

    def names(idx: np.ndarray) -> list[str]:
        from fabscope.routing import make_routing

        router = make_routing(f, r.meta.get("routing") if r.meta.get("kind") != "measure" else None,
                              seed=int(r.meta.get("seed") or 0))
        hi = f.host_index
        hs = np.array([hi[h] for h in r.pairs["src_host"][idx]])
        hd = np.array([hi[h] for h in r.pairs["dst_host"][idx]])
        routes = router.routes(hs, hd)
        out = []
        for k in range(len(idx)):
            links = routes.link[routes.flow == k]
            hops = [f.node_names[int(f.link_dst[l])] for l in links[:-1]]
            out.append(" > ".join(hops) if hops else "(on node)")
        return out

    return names


def size_series(run: Run) -> tuple[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], Any, str]:
    """Curves against message size: the bench file's sweeps, or a result whose pairs span several sizes."""
    series: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    fit, fit_label = None, ""
    b = run.bench
    if b is not None:
        for test in b.tests:
            recs = [x for x in b.of(test, "size") if x.get("bytes")]
            if len(recs) < 2:
                continue
            m = np.array([x["bytes"] for x in recs], float)
            lat = np.array([x.get("latency", np.nan) or np.nan for x in recs], float)
            bw = np.array([x.get("bandwidth", np.nan) or np.nan for x in recs], float)
            series[test] = (m, lat, bw)
        if "pingpong" in series:
            m, lat, _ = series["pingpong"]
            if np.isfinite(lat).sum() >= 2:
                fit = an.fit_latency_model(m[np.isfinite(lat)], lat[np.isfinite(lat)])
                fit_label = "pingpong"
    elif run.result is not None and "bytes" in run.result.pairs and "time" in run.result.pairs:
        r = run.result
        sizes = np.unique(r.pairs["bytes"])
        if len(sizes) >= 3:
            t = np.array([np.median(r.pairs["time"][r.pairs["bytes"] == s]) for s in sizes], float)
            # bytes over the whole message time (start-up included), as the fitted curve draws it
            series["median over pairs"] = (sizes.astype(float), t, sizes / t)
            fit = an.fit_latency_model(sizes, t)
            fit_label = "median over pairs"
    return series, fit, fit_label


def is_sweep(r: Result | None) -> bool:
    """A run whose pairs are one pair (or one set of pairs) measured at several message sizes: pingpong, bw, ...

    >>> from fabscope.result import Result
    >>> mk = lambda b: Result(meta={}, class_labels=("X",), pairs={"cls": np.zeros(len(b), int), "bytes": np.array(b),
    ...                                                        "bandwidth": np.ones(len(b))})
    >>> is_sweep(mk([1, 2, 4, 8])), is_sweep(mk([2**20] * 4)), is_sweep(None)
    (True, False, False)
    """
    if r is None or not r.n_pairs or "bytes" not in r.pairs:
        return False
    return len(np.unique(np.asarray(r.pairs["bytes"]))) > 1


def run_section(run: Run, title: str | None = None) -> Section:
    """Everything the report shows about one run."""
    r = run.result
    sec = Section(title or run.label, facts(run))
    if run.bench is not None and run.bench.describe() not in dict(sec.facts).values():   # said once
        sec.notes.append(run.bench.describe())
    sweep = is_sweep(r)
    if sweep:
        sizes = np.unique(r.pairs["bytes"])
        sec.notes.append(f"a sweep of {len(sizes)} message sizes, {int(sizes[0]):,} to {int(sizes[-1]):,} B: "
                         "drawn as curves against message size (a class table or box of its figures would mix "
                         "sizes)")
    if r is not None and r.n_pairs and not sweep:
        is_cmp = "measured" in r.pairs and "modeled" in r.pairs
        sec.tables.append(compare_rows(r) if is_cmp else class_rows(r))
        if is_cmp:
            far = furthest(r)
            namer = route_namer(run)
            tab = pair_rows(r, far, "Pairs furthest from the model", namer)
            sec.tables.append(tab)
            routes = [row[-1] for row in tab.rows] if tab.columns[-1] == "route" else None
            sec.pictures.append(fg.compare_scatter(r, far, routes))
        box = fg.class_boxes(r)
        if box:
            sec.pictures.append(box)
        leaf = heatmaps.leaf_heatmaps(r, run.fabric) if run.fabric is not None else None
        if leaf:
            sec.pictures.append(leaf)
            from fabscope.report.leafmatrix import leaf_matrix

            lm = leaf_matrix(r, run.fabric)
            sec.tables.append(Table("Leaf pairs: the per-leaf-pair minima [MB/sec]", ["leaf pairs", "Max", "Average",
                                    "Min"], [[k, _f(a, 0), _f(b, 0), _f(c, 0)] for k, (a, b, c)
                                             in lm.block_summary("min").items()]))
        rank = heatmaps.rank_heatmap(r, min_density=0.5 if leaf else 0.05)
        if rank:
            sec.pictures.append(rank)
        elif not leaf:
            host = heatmaps.host_heatmap(r)
            if host:
                sec.pictures.append(host)
    series, fit, fit_label = size_series(run)
    if series:
        sec.pictures.append(fg.size_curves(series, fit, fit_label))
        if fit is not None:
            sec.tables.append(latency_rows(fit))
    if run.bench is not None:
        try:
            bal = an.balance(run.bench)
        except MeasureError:       # no clock reported: `fabscope analyze --peak-gflops` gives it
            bal = None
        if bal:
            sec.tables.append(balance_rows(bal))
    if r is not None:
        for pic, tab in ((fg.hot_links(r, run.fabric), link_rows(r)), (fg.suspects(r), suspect_rows(r)),
                         (fg.criticality(r), criticality_rows(r))):
            if tab:
                sec.tables.append(tab)
            if pic:
                sec.pictures.append(pic)
    if run.mapping:
        sec.tables.append(mapping_rows(run.mapping))
        sec.pictures.append(fg.mapping_metrics(run.mapping))
    if run.fabric is not None:
        draw = fg.fabric_drawing(run.fabric, r)
        if draw:
            sec.pictures.append(draw)
    sec.pictures = [p for p in sec.pictures if p is not None]
    return sec


# ---- several runs -------------------------------------------------------------------------
def cbr_section(runs: Sequence[Run]) -> Section | None:
    kinds = {an.pair_kind(r.bench): r.bench for r in runs if r.bench is not None and r.bench.of("pingpong")}
    intra = kinds.get("Intra-socket") or kinds.get("Inter-socket")
    if not intra or "Inter-node" not in kinds:
        return None
    c = an.cbr(intra, kinds["Inter-node"])
    if not c:
        return None
    return Section("Communication Balance Ratios", tables=[cbr_rows(c)], pictures=[fg.cbr_curves(c)])


def history_section(runs: Sequence[Run]) -> Section | None:
    """Runs of one fabric side by side: classes and pairs that changed most (first run against each later one)."""
    res = [(r.label, r.result) for r in runs if r.result is not None and r.result.n_pairs]
    if len(res) < 2:
        return None
    sec = Section("Runs side by side")
    labels = sorted({s.label for _, r in res for s in r.summary()}, key=lambda x: (x != "Overall", x))
    avg = {lab: {s.label: s.avg for s in r.summary()} for lab, r in res}
    cols = ["class"] + [f"{lab} avg" for lab, _ in res] + [f"change {res[-1][0]} / {res[0][0]}"]
    rows = []
    for c in labels:
        a, b = avg[res[0][0]].get(c), avg[res[-1][0]].get(c)
        rows.append([c] + [_f(avg[lab].get(c, float("nan"))) for lab, _ in res]
                    + [_f(b / a, 3) if a and b else ""])
    rows.sort(key=lambda row: -abs(np.log(float(row[-1]))) if row[-1] else 0)
    sec.tables.append(Table("Average bandwidth by class [MB/sec], the classes that changed most first", cols, rows))
    base_label, base = res[0]
    for lab, r in res[1:]:
        ch = cmp.changed_pairs(base, r, 15)
        if ch:
            sec.tables.append(Table(
                f"Pairs that changed most from {base_label} to {lab}",
                ["src", "dst", "src host", "dst host", "class", f"{base_label} MB/s", f"{lab} MB/s", "ratio"],
                [[str(x.get("src", "")), str(x.get("dst", "")), str(x.get("src_host", "")), str(x.get("dst_host", "")),
                  x["cls"], _f(x["before"] / MB, 0), _f(x["after"] / MB, 0), _f(np.exp(x["change"]), 3)]
                 for x in ch]))
        else:
            sec.notes.append(f"{base_label} and {lab} share no pair (same ranks on the same hosts): "
                             "classes compared only.")
    pic = fg.history(res)
    if pic:
        sec.pictures.append(pic)
    return sec


def build_sections(runs: Sequence[Run], progress: Callable[[str], None] | None = None) -> list[Section]:
    """The report's sections: one per run, then CBRs and the runs side by side where there are several."""
    out = []
    for r in runs:
        if progress:
            progress(f"drawing {r.label}")
        out.append(run_section(r))
    for extra in (cbr_section(runs), history_section(runs)):
        if extra is not None:
            out.append(extra)
    return out
