"""Measured application runs beside their predicted time per iteration, and the placements' order.

Each run (an application kernel's fabscope-bench output, :mod:`fabscope.mapping.apprun`) is
modeled on the placement it actually ran with (each rank's host, from its ranks line): its
program (:mod:`fabscope.mapping.predict`) runs in time on the fabric with the dynamic engine.
Every input is read, every host matched and every program built before the first simulation,
so a bad input stops the command in one line before any long work.

>>> import os, tempfile, json
>>> from fabscope.fabric.generators import fat_tree
>>> d = tempfile.mkdtemp()
>>> def run(name, hosts, t):                 # a line of 4 ranks: halos of 1 MB to each neighbour
...     recs = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 4},
...             {"type": "ranks", "host": hosts},
...             {"type": "app", "test": "halo2d", "ranks": 4, "iterations": 3, "warmup": 1, "size": 10**6,
...              "params": {"dims": [4, 1], "periodic": [False, False]}, "t_iter": [t] * 3,
...              "t_iter_median": t, "t_iter_mean": t, "t_iter_min": t, "t_iter_max": t},
...             {"type": "app-traffic", "test": "halo2d", "ranks": 4, "iterations_counted": 4,
...              "sent": [[a, b, 4 * 10**6] for a, b in ((0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2))]}]
...     p = os.path.join(d, name)
...     _ = open(p, "w").write("".join(json.dumps(x) + "\\n" for x in recs))
...     return p
>>> f = fat_tree(k=2, levels=2, up=1)         # 2 leaves of 2 hosts, one up-link each
>>> c = compare_apps([run("block.jsonl", ["h0000", "h0001", "h0002", "h0003"], 1e-3),
...                   run("spread.jsonl", ["h0000", "h0002", "h0001", "h0003"], 2e-3)], f)
>>> [(r["file"], r["program"]) for r in c["rows"]]     # a line of 4 ranks: 1 or 3 halos cross an up-link
[('block.jsonl', 'kernel halo2d'), ('spread.jsonl', 'kernel halo2d')]
>>> c["orders"][0]["measured"], c["orders"][0]["agree"]
(['block.jsonl', 'spread.jsonl'], True)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from fabscope.diagnose.measured import DiagnoseError, host_resolver
from fabscope.fabric.model import Fabric
from fabscope.mapping.predict import TIE, order_text

__all__ = ["SCHEMA", "app_compare_lines", "compare_apps"]

SCHEMA = "fabscope.apps.compare"
#: timed iterations simulated per run unless asked otherwise (the model reaches its steady state in a few)
MODEL_ITERATIONS = 20


def compare_apps(paths: Sequence[str], fabric: Fabric, routing: Any = None, hostmap: Any = None, *,
                 model_iterations: int | None = MODEL_ITERATIONS, engine: str = "auto") -> dict[str, Any]:
    """Rows of measured and predicted time per iteration, one per run, and per kernel the order of
    the runs measured and predicted (see the module docstring)."""
    from fabscope.fabric.placement import Placement
    from fabscope.mapping.apprun import read_app_run
    from fabscope.mapping.predict import app_program, predict_iteration

    if not paths:
        raise DiagnoseError("no application runs to compare")
    resolve = host_resolver(fabric, hostmap)
    todo = []
    for path in paths:
        run = read_app_run(path)
        host = np.array([resolve(h) for h in run.hosts], dtype=np.int64)
        if np.any(host < 0):
            missing = sorted({h for h, i in zip(run.hosts, host.tolist()) if i < 0})
            raise DiagnoseError(f"{path}: fabric {fabric.name!r} has no host {missing[0]!r}"
                                + (f" ({len(missing)} hosts of the run unknown)" if len(missing) > 1 else "")
                                + "; give --host-map measured-name fabric-name lines, or the fabric it ran on")
        Placement.from_hosts(fabric, host)          # more ranks on a host than it has cores: refused here
        its = min(model_iterations, run.iterations) if model_iterations else run.iterations
        prog, how = app_program(run, run.graph(), iterations=its)
        todo.append((path, run, host, prog, how))
    from fabscope.routing import make_routing

    router = make_routing(fabric, routing) if routing is None or isinstance(routing, str) else routing
    rows = []
    for path, run, host, prog, how in todo:
        p = predict_iteration(fabric, host, prog, router, engine=engine)
        rows.append({"file": os.path.basename(path), "path": path, "test": run.test, "ranks": run.ranks,
                     "hosts": len(np.unique(host)), "size": run.size,
                     "measured_median": run.t_iter_median, "measured_min": run.t_iter_min,
                     "measured_max": run.t_iter_max,
                     "measured_iterations": run.iterations, "predicted": p.median, "predicted_mean": p.mean,
                     "ratio": run.t_iter_median / p.median if p.median > 0 else float("nan"),
                     "program": how, "model_iterations": p.iterations, "warmup": run.warmup, "engine": p.engine,
                     "counted_as": run.counted_as})
    return {"schema": SCHEMA, "schema_version": 1, "fabric": fabric.name,
            "routing": router.name, "rows": rows,
            "orders": orders(rows)}


def orders(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kernel (test name) with two or more runs: the runs from fastest to slowest, measured and
    predicted, and whether the two orders agree."""
    out = []
    for test in dict.fromkeys(r["test"] for r in rows):
        mine = [r for r in rows if r["test"] == test]
        if len(mine) < 2:
            continue
        meas = [r["file"] for r in sorted(mine, key=lambda r: r["measured_median"])]
        pred = [r["file"] for r in sorted(mine, key=lambda r: r["predicted"])]
        # agree: every pair the model tells apart is measured in its order (a predicted tie allows either)
        agree = all(a["measured_median"] < b["measured_median"] for a in mine for b in mine
                    if a["predicted"] * (1 + TIE) < b["predicted"])
        out.append({"test": test, "measured": meas, "predicted": pred, "agree": agree,
                    "predicted_text": order_text({r["file"]: r["predicted"] for r in mine})})
    return out


def _ms(x: float) -> str:
    return f"{x * 1e3:.4g}"


def app_compare_lines(c: dict[str, Any]) -> list[str]:
    """The table ``fabscope compare`` prints for application runs (names from files: quote with
    :func:`fabscope.names.plain` before printing)."""
    rows = c["rows"]
    w = max(12, *(len(r["file"]) for r in rows))
    eng = sorted({r["engine"] for r in rows})
    out = [(f"{c['fabric']}, routing {c['routing']}: {len(rows)} application run{'s' * (len(rows) != 1)}, "
           f"each modeled in time on the hosts it ran on ({'/'.join(eng)} engine)"),
           (f"{'run':<{w}} {'test':<14} {'ranks':>5} {'measured ms':>11} {'min-max':>17} {'predicted ms':>12} "
           f"{'meas/pred':>9}  program")]
    for r in rows:
        span = f"{_ms(r['measured_min'])}-{_ms(r['measured_max'])}"
        out.append(f"{r['file']:<{w}} {r['test']:<14} {r['ranks']:>5} {_ms(r['measured_median']):>11} {span:>17} "
                   f"{_ms(r['predicted']):>12} {r['ratio']:>9.2f}  {r['program']} "
                   f"({r['model_iterations']} iterations after {r['warmup']} warm-up)")
    for o in c["orders"]:
        out.append(f"{o['test']}: measured {' < '.join(o['measured'])}; predicted {o['predicted_text']}: "
                   + ("the orders agree" if o["agree"] else "the orders DISAGREE"))
    return out
