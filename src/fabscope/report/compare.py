"""Measured beside modeled, pair by pair, and what changed between two runs.

:func:`join` builds a compare result (meta.kind ``"compare"``) with the pair
columns ``measured``, ``modeled`` and ``ratio`` (= measured / modeled) and
``extra["compare"]``, the shape ``fabscope compare`` writes, so the report
draws either the same way.

>>> import numpy as np
>>> from fabscope.result import Result
>>> def run(kind, bw):
...     return Result(meta={"kind": kind}, class_labels=("Near", "Far"),
...                   pairs={"src": np.array([0, 2]), "dst": np.array([1, 3]),
...                          "src_host": np.array(["a", "c"]), "dst_host": np.array(["b", "d"]),
...                          "cls": np.array([0, 1]), "bandwidth": np.array(bw)})
>>> c = join(run("measure", [2e9, 1e9]), run("model", [3e9, 1e9]))
>>> c.pairs["ratio"].round(3).tolist()
[0.667, 1.0]
>>> [(x["label"], round(x["ratio"], 3)) for x in c.extra["compare"]["classes"]]
[('Overall', 0.75), ('Near', 0.667), ('Far', 1.0)]
>>> [(p["src_host"], round(p["change"], 3)) for p in changed_pairs(run("model", [3e9, 1e9]), c, 1)]
[('a', -0.405)]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.errors import SchemaError
from fabscope.result import Result

KEY_COLUMNS = ("src", "dst", "src_host", "dst_host")


def _keys(r: Result, cols: tuple[str, ...]) -> list[tuple]:
    return list(zip(*(r.pairs[c].tolist() for c in cols)))


def match(a: Result, b: Result) -> tuple[np.ndarray, np.ndarray]:
    """Indices (ia, ib) of the pairs two results share: same ranks on the same hosts.

    Falls back to the same host pair (ranks aside) when no rank pair matches,
    and to rank pairs alone only when a result names no hosts.
    """
    hosts = all("src_host" in r.pairs and "dst_host" in r.pairs for r in (a, b))
    for cols in (KEY_COLUMNS, ("src_host", "dst_host"), ("src", "dst")):
        if not all(c in a.pairs and c in b.pairs for c in cols) or (hosts and "src_host" not in cols):
            continue
        kb = {k: i for i, k in enumerate(_keys(b, cols))}
        ia, ib = [], []
        for i, k in enumerate(_keys(a, cols)):
            j = kb.get(k)
            if j is not None:
                ia.append(i)
                ib.append(j)
        if ia:
            return np.array(ia, dtype=np.int64), np.array(ib, dtype=np.int64)
    return np.zeros(0, np.int64), np.zeros(0, np.int64)


def join(measured: Result, modeled: Result) -> Result:
    """The compare result of a measurement and the model of the same pairs."""
    mf, pf = measured.meta.get("fabric"), modeled.meta.get("fabric")
    if mf and pf and mf != pf:
        raise SchemaError(f"the measurement is of fabric {mf!r} but the model of fabric {pf!r}")
    im, ip = match(measured, modeled)
    if not len(im):
        raise SchemaError("the measurement and the model share no pair (same ranks on the same hosts): "
                          "runs of different fabrics or jobs")
    labels = modeled.class_labels
    pairs = {k: np.asarray(v)[ip] for k, v in modeled.pairs.items()}
    meas = np.asarray(measured.pairs["bandwidth"], float)[im]
    mod = np.asarray(modeled.pairs["bandwidth"], float)[ip]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(mod > 0, meas / mod, np.nan)
    pairs.update(bandwidth=meas, measured=meas, modeled=mod, ratio=ratio)
    meta = {**{k: v for k, v in modeled.meta.items() if k not in ("fabscope_version",)},
            "kind": "compare", "measured": measured.meta.get("source") or measured.meta.get("test"),
            "matched_pairs": int(len(im)), "measured_pairs": measured.n_pairs, "modeled_pairs": modeled.n_pairs}
    out = Result(meta=meta, class_labels=labels, pairs=pairs, links=modeled.links, extra=dict(modeled.extra))
    out.extra["compare"] = {"classes": compare_classes(out)}
    return out


def compare_classes(r: Result) -> list[dict[str, Any]]:
    """Per class: average measured and modeled bandwidth and their ratio (bytes/s)."""
    cls = np.asarray(r.pairs["cls"])
    m, p = np.asarray(r.pairs["measured"], float), np.asarray(r.pairs["modeled"], float)
    out = []
    for label, sel in [("Overall", np.ones(len(cls), bool))] + [(lab, cls == i) for i, lab in enumerate(r.class_labels)]:
        if sel.any():
            ma, pa = float(m[sel].mean()), float(p[sel].mean())
            out.append({"label": label, "measured_avg": ma, "modeled_avg": pa,
                        "ratio": ma / pa if pa > 0 else float("nan"), "pairs": int(sel.sum())})
    return out


def changed_pairs(before: Result, after: Result, top: int = 20) -> list[dict[str, Any]]:
    """The pairs of two runs whose bandwidth changed most (log ratio ``change``, largest first)."""
    ia, ib = match(before, after)
    if not len(ia):
        return []
    a = np.asarray(before.pairs["bandwidth"], float)[ia]
    b = np.asarray(after.pairs["bandwidth"], float)[ib]
    with np.errstate(divide="ignore", invalid="ignore"):
        ch = np.log(np.where((a > 0) & (b > 0), b / a, 1.0))
    order = np.argsort(-np.abs(ch), kind="stable")[:top]
    out = []
    for k in order:
        i = ia[k]
        row = {c: before.pairs[c][i].item() for c in KEY_COLUMNS if c in before.pairs}
        row.update(cls=before.class_labels[int(before.pairs["cls"][i])], before=float(a[k]), after=float(b[k]),
                   change=float(ch[k]))
        out.append(row)
    return out
