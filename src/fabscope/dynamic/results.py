"""What the benchmarks would print, from a simulated run, in fabscope's result schema.

A ping-pong pair reports what fabscope-bench's pair kernel (csrc/pairs.c)
prints: the lower rank times ``iterations`` round trips after ``warmup``
untimed ones, from the start of iteration ``warmup`` (the end of its previous
receive) to the end of its last receive; bandwidth = 2 x bytes x iterations
/ that time (= bytes / half the mean round trip), time = that time /
iterations (one round trip).  Latency is inside both, as in the real run.

Both carry link loads (:func:`link_loads`): per directed link, the bytes the
run's messages put on it over the run's makespan (a time average: ``load``
bytes/s; ``utilisation`` = load / capacity), in ``links`` and as
``extra["hot_links"]``, as the static model's results carry them.

Any other program reports one row per message: bandwidth = bytes / (end -
post), the time from both ends posting the message to its last byte
(latency included); time = end - post.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> from fabscope.dynamic.programs import pingpong
>>> from fabscope.dynamic.run import run_program_on
>>> f = fat_tree(k=2, levels=2)
>>> run = run_program_on(f, Placement.block(f, 4, ppn=1), pingpong([0], [3], 1e6, 5), latency=False)
>>> r = pingpong_result(f, run)
>>> round(float(r.pairs["bandwidth"][0]) / 1e6, 6), float(f.link_capacity[0]) / 1e6   # alone: the link's rate
(3071.0, 3071.0)
>>> len(r.links["link"]), round(float(r.links["utilisation"].max()), 3)   # 4 links each way, busy half the time
(8, 0.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.dynamic.run import Run
from fabscope.fabric.model import Fabric
from fabscope.result import Result


def _meta(fabric: Fabric, run: Run, **kw: Any) -> dict[str, Any]:
    out = run.outcome
    return {"kind": "dynamic", "fabric": fabric.name, "fabric_params": dict(fabric.params),
            "routing": run.paths.routing, "program": run.program.name,
            "program_params": {k: v for k, v in run.program.params.items() if k != "pairs"},
            "ranks": run.placement.n_ranks, "messages": run.program.n_messages, "engine": run.engine,
            "events": int(out.events), "makespan": float(out.makespan), **kw}


def link_loads(fabric: Fabric, run: Run, top: int = 10) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """Time-averaged load of every directed link a message crossed: (``links`` columns, hot links).

    A message's bytes go over every link of its path (times the path's weight on it, for
    routes split over several links); the sum over messages, divided by the makespan.
    """
    paths = run.paths
    path_bytes = np.bincount(run.msg_path, weights=run.msg_bytes, minlength=paths.n_paths)
    entry_path = np.repeat(np.arange(paths.n_paths), np.diff(paths.indptr))
    on_link = paths.res < paths.n_links
    total = np.bincount(paths.res[on_link], weights=(path_bytes[entry_path] * paths.weight)[on_link],
                        minlength=fabric.n_links)
    span = float(run.outcome.makespan)
    busy = np.flatnonzero(total > 0)
    load = total[busy] / span if span > 0 else np.zeros(len(busy))
    cap = fabric.link_capacity[busy].astype(float)
    util = load / cap
    order = np.argsort(-util, kind="stable")[:top]
    hot = [{"link": int(busy[i]), "name": fabric.link_name(int(busy[i])), "load": float(load[i]),
            "utilisation": float(util[i])} for i in order]
    return {"link": busy, "load": load, "capacity": cap, "bytes": total[busy], "utilisation": util}, hot


def merge_link_loads(results: list[Result], fabric: Fabric, top: int = 10) -> tuple[dict[str, np.ndarray] | None,
                                                                                      list[dict[str, Any]]]:
    """Runs that never overlap (rounds run one after another): each link's busiest run, as the
    static model takes the busiest scenario."""
    load = np.zeros(fabric.n_links)
    total = np.zeros(fabric.n_links)
    for r in results:
        if r.links is None:
            continue
        lid = np.asarray(r.links["link"], np.int64)
        np.maximum.at(load, lid, np.asarray(r.links["load"], float))
        np.add.at(total, lid, np.asarray(r.links.get("bytes", np.zeros(len(lid))), float))
    busy = np.flatnonzero(load > 0)
    if not len(busy):
        return None, []
    cap = fabric.link_capacity[busy].astype(float)
    util = load[busy] / cap
    order = np.argsort(-util, kind="stable")[:top]
    hot = [{"link": int(busy[i]), "name": fabric.link_name(int(busy[i])), "load": float(load[busy][i]),
            "utilisation": float(util[i])} for i in order]
    return {"link": busy, "load": load[busy], "capacity": cap, "bytes": total[busy], "utilisation": util}, hot


def pingpong_result(fabric: Fabric, run: Run, meta: dict[str, Any] | None = None) -> Result:
    """One row per pair, as fabscope-bench's random-pairs / leaf / hops tests print them."""
    prog = run.program
    it, w = int(prog.params["iterations"]), int(prog.params["warmup"])
    size = float(prog.params["size"])
    first = prog.src[prog.step_round[prog.send_step] == 0]      # round 0: lower rank -> upper rank
    second = prog.dst[prog.step_round[prog.send_step] == 0]
    n_rounds = int(prog.step_round.max()) + 1
    keys = prog.step_rank * n_rounds + prog.step_round            # sorted (from_arrays)
    end = run.outcome.step_end

    def step_end(ranks: np.ndarray, rnd: int) -> np.ndarray:
        return end[np.searchsorted(keys, ranks * n_rounds + rnd)]

    t0 = np.zeros(len(first)) if w == 0 else step_end(first, 2 * w - 1)
    t1 = step_end(first, 2 * (w + it) - 1)
    total = t1 - t0
    hs, hd = run.placement.host[first], run.placement.host[second]
    names = np.array(fabric.host_names)        # str already: indexing copies them (astype(str) of objects: 5x the time)
    pairs = {"src": first, "dst": second, "src_host": names[hs], "dst_host": names[hd],
             "cls": fabric.classify(hs, hd), "bytes": np.full(len(first), size),
             "bandwidth": 2.0 * size * it / total, "time": total / it}
    links, hot = link_loads(fabric, run)
    return Result(meta=_meta(fabric, run, benchmark="ping-pong", **(meta or {})),
                  class_labels=fabric.class_labels, pairs=pairs, links=links, extra={"hot_links": hot})


def message_result(fabric: Fabric, run: Run, meta: dict[str, Any] | None = None) -> Result:
    """One row per message; ``extra["dynamic"]`` holds the program's total time."""
    prog, out = run.program, run.outcome
    hs, hd = run.placement.host[prog.src], run.placement.host[prog.dst]
    names = np.array(fabric.host_names)        # str already: indexing copies them (astype(str) of objects: 5x the time)
    took = out.msg_end - out.msg_post
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(took > 0, prog.bytes / np.where(took > 0, took, 1.0), np.inf)
    pairs = {"src": prog.src, "dst": prog.dst, "src_host": names[hs], "dst_host": names[hd],
             "cls": fabric.classify(hs, hd), "bytes": prog.bytes, "bandwidth": bw, "time": took}
    links, hot = link_loads(fabric, run)
    extra = {"dynamic": {"makespan": float(out.makespan), "algorithm": prog.params.get("algorithm"),
                         "rounds": int(prog.step_round.max()) + 1}, "hot_links": hot}
    return Result(meta=_meta(fabric, run, benchmark=prog.name, **(meta or {})),
                  class_labels=fabric.class_labels, pairs=pairs, links=links, extra=extra)
