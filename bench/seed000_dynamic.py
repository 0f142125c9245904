"""Seed 000's random-pairs tables against the static and the dynamic model, over several pattern seeds.

    .venv/bin/python bench/seed000_dynamic.py                 # seeds 1-8, both jobs of the seed
    .venv/bin/python bench/seed000_dynamic.py --seeds 7 --variants

The jobs are the seed's: 256 ranks at 8 per node and 1,024 ranks at 1 per node,
1 MiB messages, 100 timed ping-pong iterations (2 untimed ones first),
Itasca with its default routing, ranks placed in block order.  Per class the
table gives the seed's average, the static snapshot's and the dynamic
simulation's (mean over the pattern seeds, with the range), and the dynamic
mean's deviation from the seed.

Two dynamic columns: ``max-min`` (``simulate --dynamic``, the default) and
``congestion`` (``simulate --dynamic --model congestion``: each message gets
the capacity of its most crowded resource over the messages on it, at every
event; what a message held back elsewhere leaves unused goes to no one).

``--variants`` adds a what-if that fabscope's model does not contain, run on
the same pairs: ``nic``, every inter-node message also crosses one resource
per end node of 5,236 MB/s shared by both directions (seed 001's
bi-directional bandwidth of a Nehalem node with a ConnectX QDR adapter),
shared max-min.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from fabscope.dynamic import programs as pg
from fabscope.dynamic import resources
from fabscope.dynamic import run as dyn_run
from fabscope.dynamic.results import pingpong_result
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric
from fabscope.fabric.model import MB
from fabscope.model.simulate import simulate
from fabscope.seeds import ITASCA_MERGE, ITASCA_RANDOM_PAIRS
from fabscope.traffic.patterns import random_pairs

SIZE = 2.0 ** 20
ITER, WARM = 100, 2
NIC = 5236 * MB          # seed 001: NH-QDR bi-directional bandwidth


def class_avgs(result) -> dict[str, float]:
    return {r.label: r.avg for r in result.summary(merge=ITASCA_MERGE)}


def with_nic(paths: resources.Paths, n_hosts: int) -> resources.Paths:
    """``paths`` with one shared resource per host that every inter-node message crosses at both ends."""
    res, wts, ptr = [], [], [0]
    base = len(paths.capacity)
    for p in range(paths.n_paths):
        r = paths.res[paths.indptr[p]:paths.indptr[p + 1]].tolist()
        w = paths.weight[paths.indptr[p]:paths.indptr[p + 1]].tolist()
        if paths.src_host[p] != paths.dst_host[p]:
            r += [base + int(paths.src_host[p]), base + int(paths.dst_host[p])]
            w += [1.0, 1.0]
        res += r
        wts += w
        ptr.append(len(res))
    return dataclasses.replace(paths, res=np.array(res, np.int64), weight=np.array(wts), indptr=np.array(ptr, np.int64),
                               capacity=np.r_[paths.capacity, np.full(n_hosts, NIC)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1-8", help="pattern seeds: 1-8 or 3,7")
    ap.add_argument("--variants", action="store_true", help="also the nic and count what-ifs (slow)")
    a = ap.parse_args()
    seeds = (list(range(int(a.seeds.split("-")[0]), int(a.seeds.split("-")[1]) + 1)) if "-" in a.seeds
             else [int(s) for s in a.seeds.split(",")])
    f = load_fabric("itasca")
    orig_build = dyn_run.build_paths
    for (ranks, ppn), seed_tab in ITASCA_RANDOM_PAIRS.items():
        pl = Placement.block(f, ranks, ppn=ppn)
        cols: dict[str, dict[str, list[float]]] = {"static": {}, "max-min": {}, "congestion": {}, "nic": {}}
        w0 = time.perf_counter()
        for s in seeds:
            traffic = random_pairs(ranks, SIZE, seed=s)
            m = traffic.n_flows // 2
            prog = pg.pingpong(traffic.src[:m], traffic.dst[:m], SIZE, ITER, WARM, n_ranks=ranks)
            runs = [("static", None, None), ("max-min", orig_build, "maxmin"), ("congestion", orig_build, "count")]
            if a.variants:
                runs.append(("nic", lambda *x, **k: with_nic(orig_build(*x, **k), f.n_hosts), "maxmin"))
            for name, build, sharing in runs:
                if build is None:
                    got = class_avgs(simulate(f, pl, traffic))
                else:
                    dyn_run.build_paths = build
                    try:
                        got = class_avgs(pingpong_result(f, dyn_run.run_program_on(f, pl, prog, sharing=sharing)))
                    finally:
                        dyn_run.build_paths = orig_build
                for k, v in got.items():
                    cols[name].setdefault(k, []).append(v)
        print(f"\n{ranks} ranks, {ppn} per node, seeds {a.seeds}, {ITER} iterations "
              f"({time.perf_counter() - w0:.0f} s); class averages in MB/s (mean over seeds [min-max])")
        names = ["static", "max-min", "congestion"] + (["nic"] if a.variants else [])
        print(f"{'class':11} {'seed':>8} " + " ".join(f"{n:>24}" for n in names) + "  vs seed: max-min, congestion")
        for label, (_, avg, _) in seed_tab.items():
            cells = []
            for n in names:
                v = cols[n].get(label)
                cells.append(f"{np.mean(v):8.0f} [{min(v):5.0f}-{max(v):5.0f}]".rjust(24) if v else " " * 24)
            dev = "  ".join(f"{(np.mean(cols[n][label]) / avg - 1) * 100:+6.1f}%"
                            for n in ("max-min", "congestion") if cols[n].get(label))
            print(f"{label:11} {avg:8.0f} " + " ".join(cells) + f"  {dev}")


if __name__ == "__main__":
    main()
