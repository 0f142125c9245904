"""What compare's independent phases cost: the program in time with lock-step and independent phases.

For each fabric, fabscope-bench's random pairs (``--seed 1``) at one rank per host, 4 rounds,
1 MiB, 20 timed iterations after 2 warm-up ones, modeled by
:func:`fabscope.diagnose.timemodel.dynamic_bandwidth` in one process: lock-step (the
components of each set run alone, shapes reused) and independent phases (each set whole,
``--phase-draws`` times; compare's default is 8).  Prints seconds and events of each.

    python bench/bench_phases.py [--draws 8] [--fabrics fat-tree:k=4,levels=2,up=2 itasca]

Figures are taken on whatever else the machine is running; say so when quoting them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from fabscope.diagnose.measured import Measured
from fabscope.diagnose.timemodel import dynamic_bandwidth
from fabscope.fabric.io import load_fabric
from fabscope.traffic.draws import random_pairs_rounds

FABRICS = ["fat-tree:k=4,levels=2,up=2", "fat-tree:k=8,levels=2", "itasca"]


def bench_sets(spec: str, rounds: int = 4, iters: int = 20) -> Measured:
    """fabscope-bench's random pairs of ``spec``'s hosts as a measured run (the figures unused)."""
    f = load_fabric(spec)
    hs, hd, sc = [], [], []
    for r, (a, b) in enumerate(random_pairs_rounds(f.n_hosts, 1, rounds)):
        hs += a.tolist()
        hd += b.tolist()
        sc += [r] * len(a)
    hs, hd, sc = np.array(hs), np.array(hd), np.array(sc)
    k = len(hs)
    round_trip = 2 * float(1 << 20) / float(f.link_capacity.min())
    return Measured(f, hs, hd, hs, hd, np.full(k, float(1 << 20)), np.ones(k), np.full(k, round_trip), sc,
                    np.ones(k, bool), np.full(k, "random-pairs"), ("bench",),
                    tuple(("bench", "random-pairs", r) for r in range(rounds)), np.full(k, iters), np.full(k, 2))


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--fabrics", nargs="+", default=FABRICS)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at start, {os.cpu_count()} cores")
    for spec in a.fabrics:
        m = bench_sets(spec)
        row = []
        for phases in ("lockstep", "independent"):
            t = time.perf_counter()
            d = dynamic_bandwidth(m, phases=phases, phase_draws=a.draws)
            row.append(f"{phases} {time.perf_counter() - t:.2f} s ({d.info['events']} events)")
        print(f"{spec}: {m.n_pairs} pairs in 4 rounds: " + ", ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(run())
