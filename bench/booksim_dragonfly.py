"""The dragonfly table beside a packet-level simulator: BookSim2's saturation throughput.

BookSim2 (github.com/booksim/booksim2, built from its source: ``make`` in ``src/``, it needs
flex and bison) simulates the balanced dragonfly ``dragonflynew`` (``k`` = p = h, a = 2p,
g = a p + 1) flit by flit, with minimal routing (``min``) and UGAL (``ugal``: its source router
compares its minimal and non-minimal output queues, ``q_min <= 2 q_nm + 30``, through a random
intermediate node), under ``uniform`` traffic and ``bad_dragon`` (every packet to a random host
of the next group: the group shift).  Its saturation throughput is found by bisection on the
offered load (packets of one flit, per node and cycle): the largest load it runs stable at.
Beside it, fabscope's saturation (the share every flow reaches at once) on the same dragonfly
and traffic: uniform as every host to every other, the worst case as each host to the same
host of the next group; ``ugal`` beside fabscope's ``ugal-l`` (BookSim's is local).

    python bench/booksim_dragonfly.py --booksim /path/to/booksim2       # k = 2 (72 hosts), ~2 min
    python bench/booksim_dragonfly.py --booksim /path/to/booksim2 --k 3 --traffic bad_dragon   # 342 hosts

CPU seconds of each BookSim bisection beside fabscope's for the same row.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import time

import numpy as np

from fabscope.fabric.generators import dragonfly
from fabscope.model.maxmin import maxmin
from fabscope.routing import make_routing

ROWS = [("uniform", "min", "minimal"), ("uniform", "ugal", "ugal-l"),
        ("bad_dragon", "min", "minimal"), ("bad_dragon", "ugal", "ugal-l")]


def booksim_stable(binary: str, config: str, k: int, traffic: str, routing: str, rate: float) -> bool:
    out = subprocess.run([binary, config, f"k={k}", f"injection_rate={rate}", f"traffic={traffic}",
                          f"routing_function={routing}"], capture_output=True, text=True, timeout=1800).stdout
    if "unstable" in out:
        return False
    acc = re.findall(r"Accepted packet rate average = ([0-9.]+) \(", out)
    return bool(acc) and float(acc[-1]) >= 0.97 * rate


def booksim_saturation(binary: str, config: str, k: int, traffic: str, routing: str, steps: int) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        if booksim_stable(binary, config, k, traffic, routing, mid):
            lo = mid
        else:
            hi = mid
    return lo


def fabscope_saturation(k: int, traffic: str, engine: str) -> float:
    a, p, h = 2 * k, k, k
    f = dragonfly(a=a, p=p, h=h, g=a * h + 1)
    n = f.n_hosts
    i = np.arange(n)
    if traffic == "uniform":
        s, d = np.meshgrid(i, i, indexing="ij")
        s, d = s[s != d], d[s != d]
    else:
        s, d = i, (i + a * p) % n
    rate = maxmin(make_routing(f, engine).routes(s, d).matrix(f.n_links), f.link_capacity)
    return float(rate.min() * len(s) / n / f.link_capacity[0])


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--booksim", required=True, help="BookSim2's source folder (with src/booksim built)")
    ap.add_argument("--k", type=int, nargs="+", default=[2])
    ap.add_argument("--steps", type=int, default=7, help="bisection steps on the offered load")
    ap.add_argument("--traffic", nargs="+", default=["uniform", "bad_dragon"], choices=["uniform", "bad_dragon"])
    args = ap.parse_args()
    binary = os.path.join(args.booksim, "src", "booksim")
    config = os.path.join(args.booksim, "runfiles", "dragonflyconfig")
    print("| dragonfly | traffic | BookSim routing | BookSim saturation | fabscope routing | fabscope saturation "
          "| ratio | BookSim CPU s | fabscope CPU s |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for k in args.k:
        for traffic, bs_routing, engine in [r for r in ROWS if r[0] in args.traffic]:
            c0 = children_cpu()
            bs = booksim_saturation(binary, config, k, traffic, bs_routing, args.steps)
            c1 = children_cpu()
            t0 = time.process_time()
            fs = fabscope_saturation(k, traffic, engine)
            t1 = time.process_time()
            ratio = f"{fs / bs:.2f}" if bs > 0 else "-"
            print(f"| a={2 * k},p={k},h={k},g={2 * k * k + 1} | {traffic} | {bs_routing} | {bs:.3f} | {engine} | "
                  f"{fs:.3f} | {ratio} | {c1 - c0:.1f} | {t1 - t0:.2f} |", flush=True)


if __name__ == "__main__":
    main()
