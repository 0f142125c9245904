"""Measured beside modeled: the same pairs, on the same routes, at the same time.

:func:`compare` models every measured pair with the concurrency it ran with
(:mod:`.measured`) on the fabric's routes, by default as the program it ran in
time (:mod:`.timemodel`), with ``model="static"`` as the snapshot
(:mod:`.pairmodel`), and returns a
result of kind ``"compare"``: pair columns ``measured``, ``modeled`` (bytes/s)
and ``ratio`` (measured / modeled), the link that limits each pair in the
model (``limit``), and ``extra["compare"]["classes"]``, the averages per class.
:func:`compare_with_model` does the same against a modeled result already
written (``fabscope simulate -o``), matching pairs by their hosts.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.result import Result
>>> f = fat_tree(k=2, levels=2)
>>> cap = float(f.link_capacity[0])
>>> meas = Result(meta={"kind": "measure", "test": "random-pairs"}, class_labels=("x",),
...               pairs={"src_host": np.array(["h0000", "h0001"]), "dst_host": np.array(["h0002", "h0003"]),
...                      "cls": np.array([0, 0]), "bytes": np.array([1e6, 1e6]),
...                      "bandwidth": np.array([0.5 * cap, 0.99 * cap]), "scenario": np.array([0, 0])})
>>> c = compare(load_measured([meas], f), routing="dmodk", model="static")
>>> [round(float(x), 2) for x in c.pairs["ratio"]]
[0.5, 1.0]
>>> c.extra["compare"]["classes"][0]["label"], round(c.extra["compare"]["classes"][0]["ratio"], 2)
('Diff Leafs', 0.75)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.units import format_rate, plural
from fabscope.fabric.model import MB
from fabscope.result import Result
from fabscope.diagnose.measured import DiagnoseError, Measured, load_measured, read_source
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.timemodel import MODELS, PHASE_DRAWS, dynamic_bandwidth, model_line

__all__ = ["compare", "compare_with_model", "class_rows", "compare_lines", "load_measured", "model_line"]


def class_rows(labels: tuple[str, ...], cls: np.ndarray, measured: np.ndarray, modeled: np.ndarray) -> list[dict[str, Any]]:
    """Per class present: pairs, measured and modeled averages, their ratio."""
    rows = []
    for c, label in enumerate(labels):
        sel = cls == c
        if sel.any():
            ma, mo = float(measured[sel].mean()), float(modeled[sel].mean())
            rows.append({"label": label, "pairs": int(sel.sum()), "measured_avg": ma, "modeled_avg": mo,
                         "ratio": ma / mo if mo > 0 else float("nan"),
                         "ratio_min": float((measured[sel] / modeled[sel]).min()),
                         "ratio_max": float((measured[sel] / modeled[sel]).max())})
    return rows


def compare(measured: Measured, routing: Any = None, meta: dict[str, Any] | None = None, *,
            model: str = "dynamic", iterations: int | None = None, engine: str = "auto",
            start_offset: float = 0.0, phases: str = "independent", phase_draws: int = PHASE_DRAWS,
            seed: int = 0, ports: Any = None) -> Result:
    """Model ``measured``'s pairs on ``routing`` (default: the fabric's own) and set them side by side.

    ``model="dynamic"`` (the default) runs the program the benchmark ran in time
    (:mod:`.timemodel`); ``"static"`` takes the snapshot, every pair of a concurrent set
    sharing links for the whole run (:mod:`.pairmodel`).  The limiting link named per pair
    is the snapshot's either way.

    ``phases`` (dynamic, ping-pong): ``"independent"`` (the default) draws each pair's phase within
    one measured round trip (its concurrent set's median fastest one), ``phase_draws`` times
    (seeded by ``seed``), and takes the mean; ``"lockstep"`` starts every pair's first ping at once (:func:`.timemodel.dynamic_bandwidth`).
    ``start_offset`` > 0 replaces both by one draw in [0, start_offset) for every pair.

    ``ports`` (hosts with several ports, dynamic model): how ranks use them
    (:mod:`fabscope.fabric.ports`: ``rank``, ``rail``, ``stripe[:THRESHOLD]``).
    """
    if model not in MODELS:
        raise DiagnoseError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
    f = measured.fabric
    if ports is not None:
        from fabscope.fabric.ports import parse_ports

        ports = parse_ports(ports)
        if model != "dynamic" and not f.single_port and ports.name != "rank":
            raise DiagnoseError(f"--ports {ports} is modeled in time: use --model dynamic (the default)")
    pm = PairModel(f, measured.hs, measured.hd, measured.scenario, measured.pingpong, measured.bytes, routing)
    rate = pm.flow_rates()
    modeled = pm.pair_bandwidth(rate)
    limit = pm.limit_names(rate)
    how: dict[str, Any] = {"model": "static", "sharing": "maxmin"}
    if model == "dynamic":
        pred = dynamic_bandwidth(measured, pm.router, iterations=iterations, engine=engine,
                                 start_offset=start_offset, phases=phases, phase_draws=phase_draws, seed=seed,
                                 ports=ports)
        modeled = pred.bandwidth
        how = pred.info
    ratio = measured.bandwidth / modeled
    cls = f.classify(measured.hs, measured.hd)
    names = np.array(f.host_names, dtype=object)
    pairs = {"src": measured.src, "dst": measured.dst, "src_host": names[measured.hs].astype(str),
             "dst_host": names[measured.hd].astype(str), "cls": cls, "bytes": measured.bytes,
             "bandwidth": measured.bandwidth, "time": measured.time, "scenario": measured.scenario,
             "test": measured.test, "measured": measured.bandwidth, "modeled": modeled, "ratio": ratio,
             "limit": limit}
    m = {"kind": "compare", "fabric": f.name, "fabric_params": dict(f.params), "routing": pm.router.name,
         "model": how["model"], "model_info": how, "sources": list(measured.sources),
         "tests": sorted(set(measured.test.tolist())),
         "scenarios": measured.n_scenarios, "concurrent_sets": [list(k) for k in measured.scenario_key],
         **(meta or {})}
    extra = {"compare": {"classes": class_rows(f.class_labels, cls, measured.bandwidth, modeled)}}
    return Result(meta=m, class_labels=f.class_labels, pairs=pairs, extra=extra)


def compare_with_model(sources: list[Any], model: Result, meta: dict[str, Any] | None = None) -> Result:
    """Measured pairs beside a modeled result's pairs of the same hosts (and round, where both have one)."""
    kind = model.meta.get("kind")
    if kind not in ("model", "dynamic"):
        raise DiagnoseError(f"--model needs a modeled result (fabscope simulate -o, with or without --dynamic: "
                            f"kind 'model' or 'dynamic'), got kind {kind!r}")
    mp = model.pairs
    for col in ("src_host", "dst_host"):
        if col not in mp:
            raise DiagnoseError(f"the modeled result has no {col!r} column; write it with 'fabscope simulate -o'")
    # matched by ranks, hosts and round; else hosts and round; else hosts
    key_r: dict[tuple, tuple[float, int]] = {}
    key_bw: dict[tuple, tuple[float, int]] = {}
    key2: dict[tuple, tuple[float, int]] = {}
    scen = mp.get("scenario", np.zeros(model.n_pairs, dtype=np.int64))
    ranks = (np.asarray(mp["src"]).tolist(), np.asarray(mp["dst"]).tolist()) if "src" in mp and "dst" in mp else (
        [None] * model.n_pairs, [None] * model.n_pairs)
    for s, d, sc, bw, c, rs, rd in zip(mp["src_host"].tolist(), mp["dst_host"].tolist(), np.asarray(scen).tolist(),
                                       mp["bandwidth"].tolist(), mp["cls"].tolist(), *ranks):
        for key, table in (((s, d, int(sc), rs, rd), key_r), ((s, d, int(sc)), key_bw), ((s, d), key2)):
            table.setdefault(key, (bw, c))
            rev = (key[1], key[0]) + key[2:3] + ((key[4], key[3]) if len(key) == 5 else ())
            table.setdefault(rev, (bw, c))
    cols: dict[str, list[Any]] = {k: [] for k in ("src", "dst", "src_host", "dst_host", "bytes", "bandwidth",
                                                 "time", "scenario", "test", "modeled", "cls")}
    names = []
    for i, src in enumerate(sources):
        names.append(str(src))
        for test, c, _ in read_source(src):
            for j in range(len(c["src"])):
                s, d, sc = str(c["src_host"][j]), str(c["dst_host"][j]), int(c["scenario"][j])
                hit = (key_r.get((s, d, sc, int(c["src"][j]), int(c["dst"][j]))) or key_bw.get((s, d, sc))
                       or key2.get((s, d)))
                if hit is None:
                    raise DiagnoseError(f"the modeled result has no pair {s} -> {d} (measured in {src}); "
                                        "model the same hosts, or compare with --fabric")
                for k in ("src", "dst", "src_host", "dst_host", "bytes", "bandwidth", "time", "scenario"):
                    cols[k].append(c[k][j])
                cols["test"].append(test)
                cols["modeled"].append(hit[0])
                cols["cls"].append(hit[1])
    if not cols["src"]:
        raise DiagnoseError(f"{', '.join(names)}: no pair measurements")
    arr = {k: np.asarray(v) for k, v in cols.items()}
    arr["src_host"] = arr["src_host"].astype(str)
    arr["dst_host"] = arr["dst_host"].astype(str)
    arr["measured"] = arr["bandwidth"].astype(float)
    arr["modeled"] = arr["modeled"].astype(float)
    arr["ratio"] = arr["measured"] / arr["modeled"]
    how = ({"model": "dynamic", "sharing": "count" if model.meta.get("model") == "congestion" else "maxmin",
            "engine": model.meta.get("engine"), "iterations": [model.meta.get("program_params", {}).get("iterations")]}
           if kind == "dynamic" else {"model": "static", "sharing": model.meta.get("model")})
    m = {"kind": "compare", "fabric": model.meta.get("fabric"), "routing": model.meta.get("routing"),
         "model": how["model"], "model_info": how, "sources": names, "against": "modeled result",
         "tests": sorted(set(arr["test"].tolist())), **(meta or {})}
    extra = {"compare": {"classes": class_rows(model.class_labels, arr["cls"], arr["measured"], arr["modeled"])}}
    return Result(meta=m, class_labels=model.class_labels, pairs=arr, extra=extra)


def compare_lines(result: Result, top: int = 15) -> list[str]:
    """The text ``fabscope compare`` prints: per class, then the pairs furthest from the model."""
    m = result.meta
    p = result.pairs
    out = [f"{m.get('fabric')}, routing {m.get('routing')}: {plural(len(p['ratio']), 'measured pair')}"
           + (f" in {plural(m['scenarios'], 'concurrent set')}" if m.get("scenarios") else "")
           + f" ({', '.join(m.get('tests') or [])})",
           f"model: {model_line(m)}",
           f"{'class':<14}{'pairs':>7}{'measured':>11}{'modeled':>11}{'ratio':>7}{'min':>7}{'max':>7}   [MB/s]"]
    for r in result.extra["compare"]["classes"]:
        out.append(f"{r['label']:<14}{r['pairs']:>7}{r['measured_avg'] / MB:11.1f}{r['modeled_avg'] / MB:11.1f}"
                   f"{r['ratio']:7.2f}{r['ratio_min']:7.2f}{r['ratio_max']:7.2f}")
    ratio = np.asarray(p["ratio"], float)
    far = np.argsort(-np.abs(np.log(ratio)), kind="stable")[:top]
    if top and len(far):
        out.append(f"pairs furthest from the model (of {len(ratio)}):")
        labels = result.class_labels
        for i in far:
            lim = str(p["limit"][i]) if "limit" in p and str(p["limit"][i]) else ""
            out.append(f"  {p['src_host'][i]}:{int(p['src'][i])} -> {p['dst_host'][i]}:{int(p['dst'][i])}  "
                       f"{p['test'][i]} round {int(p['scenario'][i])}"
                       f"  {labels[int(p['cls'][i])]}: measured {format_rate(p['measured'][i])}, modeled "
                       f"{format_rate(p['modeled'][i])}, ratio {ratio[i]:.2f}"
                       + (f"  (model's limit: {lim})" if lim else ""))
    return out
