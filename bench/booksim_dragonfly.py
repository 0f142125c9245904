"""The classic dragonfly table beside a packet-level simulator (BookSim2) and the published analysis.

BookSim2 (github.com/booksim/booksim2, built from its source: ``make`` in ``src/``, it needs
flex and bison; not a dependency of fabscope) simulates the balanced dragonfly ``dragonflynew``
(``k`` = p = h, a = 2p, g = a p + 1) flit by flit, with minimal routing (``min``) and UGAL
(``ugal``: its source router compares its minimal and non-minimal output queues,
``q_min <= 2 q_nm + 30``, through a random intermediate node: UGAL with local information),
under ``uniform`` traffic and ``bad_dragon`` (every packet to a random host of the next group:
the worst case).  Its saturation throughput is found by bisection on the offered load (packets
of one flit, per host and cycle): the largest load whose accepted rate is within 3% of it.
Two router configurations:

* **as shipped**: its ``runfiles/dragonflyconfig``: input-queued routers, 3 virtual channels
  of 256 flits, iSLIP allocation (4 iterations), internal speedup 1.7; a run whose mean
  latency passes 500 cycles (BookSim's ``latency_thres``) counts as unstable;
* **near-ideal**: the same with ``internal_speedup=4.0`` (the crossbar four times the link rate:
  head-of-line blocking all but gone, output buffers unbounded, ``output_buffer_size=-1``),
  ``vc_buf_size=1024`` and ``latency_thres=1000000.0`` (saturation by accepted rate alone).
  Virtual channels cannot be added: ``ugal`` requires exactly 3 and ``min`` uses 2.

Beside them, fabscope's model on the same dragonfly and traffic (uniform as every host to every
other, ``bad_dragon`` as every host to every host of the next group, each flow its share): the
*average* (the mean max-min share, flows offered in full) and the *saturation*, found as BookSim
finds it: the largest offered share of injection every flow is carried at (UGAL choosing at that
offered load, ``load=``, in ``parts`` parts a flow).  ``ugal`` is compared with ``ugal-l``.  The
published column is the papers' analysis (Kim, Dally, Scott, Abts, ISCA 2008; Jiang, Kim, Dally,
ISCA 2009); the ratio is the model's saturation over near-ideal BookSim's, "yes" within 15%.

    python bench/booksim_dragonfly.py --booksim /path/to/booksim2              # k = 2 and k = 3 (~25 CPU min)
    python bench/booksim_dragonfly.py --booksim /path/to/booksim2 --k 2        # 72 hosts (~8 CPU min)
    python bench/booksim_dragonfly.py --booksim PATH --save runs.json          # keep BookSim's answers
    python bench/booksim_dragonfly.py --load runs.json                         # the table again, model re-run
    python bench/booksim_dragonfly.py --booksim PATH --k 3 --traffic bad_dragon --routing ugal \
        --config near-ideal --bracket 0.3 0.45 --steps 3                       # one row, one router, 3 runs

BookSim has no Valiant routing for its dragonfly.  ``--nonmin PATH``: a second build of BookSim2
whose ``ugal_dragonflynew`` always takes its non-minimal branch (its one comparison of queue
lengths replaced by "false"; a local change for this check, not shipped): the *nonmin* row is its
saturation, beside the model's ``valiant`` (its intermediate group neither of the flow's own) and
``valiant:via=all`` (drawn among all groups, the flow's own two routing minimally, as BookSim draws
its intermediate node among all hosts): whether BookSim's routers carry its non-minimal paths,
apart from its UGAL's choice of them.

BookSim runs under ``nice -n 10`` with a timeout each (``--timeout``); CPU seconds of BookSim beside
the model's for each row.  ``uniform`` at k = 3 is left out unless asked (``--traffic uniform
--k 3``): a bisection there takes over six CPU minutes per configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dragonfly_routing import published, saturation  # noqa: E402  (the bench folder is no package)

from fabscope.fabric.generators import dragonfly  # noqa: E402

#: (traffic, BookSim routing, fabscope routing)
ROWS = [("uniform", "min", "minimal"), ("uniform", "ugal", "ugal-l"), ("uniform", "nonmin", "valiant"),
        ("uniform", "nonmin", "valiant:via=all"), ("bad_dragon", "min", "minimal"),
        ("bad_dragon", "ugal", "ugal-l"), ("bad_dragon", "nonmin", "valiant"),
        ("bad_dragon", "nonmin", "valiant:via=all")]
#: BookSim has no Valiant routing for its dragonfly: the "nonmin" row runs ``ugal`` in a second build
#: (``--nonmin PATH``) whose choice always takes the non-minimal path (see the module)
NONMIN = "nonmin"
CONFIGS = {"as shipped": [],
           "near-ideal": ["internal_speedup=4.0", "vc_buf_size=1024", "latency_thres=1000000.0"]}
#: parts a UGAL flow is placed in for the saturation (towards per-packet; see dragonfly_routing.py)
PARTS = 8


def booksim_stable(binary: str, config: str, k: int, traffic: str, routing: str, rate: float,
                   extra: list[str], timeout: float) -> bool:
    try:
        out = subprocess.run(["nice", "-n", "10", binary, config, f"k={k}", f"injection_rate={rate}",
                              f"traffic={traffic}", f"routing_function={routing}", *extra],
                             capture_output=True, text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return False
    if "unstable" in out:
        return False
    acc = re.findall(r"Accepted packet rate average = ([0-9.]+) \(", out)
    return bool(acc) and float(acc[-1]) >= 0.97 * rate


def booksim_saturation(binary: str, config: str, k: int, traffic: str, routing: str, extra: list[str],
                       steps: int, timeout: float, bracket: tuple[float, float] = (0.0, 1.0)) -> float:
    """The largest offered load found stable by bisection within ``bracket`` (its low end taken as
    stable, its high end as not: ``--bracket`` where earlier runs bound the answer)."""
    lo, hi = bracket
    for _ in range(steps):
        mid = (lo + hi) / 2
        if booksim_stable(binary, config, k, traffic, routing, mid, extra, timeout):
            lo = mid
        else:
            hi = mid
    return lo


def flows(f, a: int, p: int, traffic: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(sources, destinations, flows a host) of ``traffic`` as flows."""
    n = f.n_hosts
    i = np.arange(n)
    if traffic == "uniform":
        s, d = np.meshgrid(i, i, indexing="ij")
        return s[s != d], d[s != d], n - 1
    grp = a * p                                   # every host to every host of the next group
    s = np.repeat(i, grp)
    d = ((i // grp + 1) % (n // grp) * grp)[s] + np.tile(np.arange(grp), n)
    return s, d, grp


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--booksim", help="BookSim2's source folder (with src/booksim built)")
    ap.add_argument("--k", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--steps", type=int, default=7, help="bisection steps on the offered load")
    ap.add_argument("--traffic", nargs="+", choices=["uniform", "bad_dragon"])
    ap.add_argument("--timeout", type=float, default=600, help="seconds a BookSim run may take")
    ap.add_argument("--save", help="write BookSim's saturations to this JSON file")
    ap.add_argument("--load", help="take BookSim's saturations from this JSON file (no BookSim run)")
    ap.add_argument("--routing", nargs="+", choices=["min", "ugal", NONMIN], default=["min", "ugal", NONMIN],
                    help="BookSim routings (rows) to run (nonmin: only with --nonmin)")
    ap.add_argument("--nonmin", help="a second BookSim2 source folder whose ugal always routes non-minimally: "
                    "then the Valiant row beside the model's valiant")
    ap.add_argument("--config", nargs="+", choices=list(CONFIGS), default=list(CONFIGS),
                    help="router configurations to run BookSim in (the others print -)")
    ap.add_argument("--bracket", nargs=2, type=float, default=[0.0, 1.0], metavar=("LO", "HI"),
                    help="bisect BookSim's offered load between these (LO taken as stable, HI as not)")
    ap.add_argument("--no-model", action="store_true", help="BookSim's columns alone (the model's printed as -)")
    args = ap.parse_args(argv)
    if not args.booksim and not args.load:
        ap.error("give --booksim PATH (BookSim2's source folder) or --load FILE")
    known = {}
    if args.load:
        with open(args.load) as fh:
            known = json.load(fh)
    if args.booksim:
        binary = os.path.join(args.booksim, "src", "booksim")
        config = os.path.join(args.booksim, "runfiles", "dragonflyconfig")
        if not os.access(binary, os.X_OK):
            ap.error(f"--booksim: no BookSim2 binary at {binary} (make in its src/ first)")
    print("| dragonfly | traffic | routing (BookSim / fabscope) | model average | model saturation "
          "| BookSim as shipped | BookSim near-ideal | published | ratio | within 15% | BookSim CPU s | model CPU s |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
    for k in args.k:
        a, p, h = 2 * k, k, k
        g = a * h + 1
        f = dragonfly(a=a, p=p, h=h, g=g)
        traffics = args.traffic or (["uniform", "bad_dragon"] if k <= 2 else ["bad_dragon"])
        for traffic, bs_routing, engine in [r for r in ROWS if r[0] in traffics and r[1] in args.routing
                                            and (r[1] != NONMIN or args.nonmin or f"k={k} {r[0]} {r[1]}" in known)]:
            key = f"k={k} {traffic} {bs_routing}"
            c0 = children_cpu()
            bs = known.get(key)
            if bs is None and args.booksim and (bs_routing != NONMIN or args.nonmin):
                run = (os.path.join(args.nonmin, "src", "booksim"), "ugal") if bs_routing == NONMIN else \
                    (binary, bs_routing)
                bs = {name: booksim_saturation(run[0], config, k, traffic, run[1], extra, args.steps,
                                               args.timeout, tuple(args.bracket))
                      for name, extra in CONFIGS.items() if name in args.config}
                bs["CPU s"] = children_cpu() - c0
                known[key] = bs
                if args.save:
                    with open(args.save, "w") as fh:
                        json.dump(known, fh, indent=1)
            t0 = time.process_time()
            if args.no_model:
                avg = sat = float("nan")
            else:
                s, d, per_host = flows(f, a, p, traffic)
                avg, sat = saturation(f, s, d, engine, per_host, parts=PARTS)
            t1 = time.process_time()
            shipped = f"{bs['as shipped']:.3f}" if bs and "as shipped" in bs else "-"
            ideal = bs.get("near-ideal", 0.0) if bs else 0.0
            ratio = f"{sat / ideal:.2f}" if ideal > 0 and not args.no_model else "-"
            within = "-" if not ideal or args.no_model else ("yes" if abs(sat / ideal - 1) <= 0.15 else "no")
            name = f"{engine}:parts={PARTS}" if engine.startswith("ugal") else engine
            near = f"{ideal:.3f}" if ideal else "-"
            cpu = f"{bs['CPU s']:.1f}" if bs and "CPU s" in bs else "-"
            model = "- | - " if args.no_model else f"{avg:.3f} | {sat:.3f} "
            print(f"| a={a},p={p},h={h},g={g} | {traffic} | {bs_routing} / {name} | {model}| "
                  f"{shipped} | {near} | {published(a, p, h, g, traffic, engine)} | {ratio} | {within} | "
                  f"{cpu} | {'-' if args.no_model else f'{t1 - t0:.2f}'} |", flush=True)


if __name__ == "__main__":
    main()
