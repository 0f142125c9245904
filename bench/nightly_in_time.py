"""The nightly diagnosis with the CLI's default model, the program in time, at a real machine's size.

    .venv/bin/python bench/nightly_in_time.py                                   # 2,197 hosts, 109,800 pairs
    .venv/bin/python bench/nightly_in_time.py --fabric fat-tree:k=4,levels=3 --rounds 4   # a quick look

``bench_diagnose.py --parts nightly`` "measures" its pairs with the snapshot and so diagnoses with
``--model static``.  Here the pairs are "measured" by the program in time itself
(:func:`fabscope.diagnose.timemodel.dynamic_bandwidth` on the fabric with the faults: 3 cables and 1
host at x0.25..0.6, fixed seed), times 5% lognormal noise, and ``fabscope diagnose`` runs as a user
runs it, with its default model: the nominal program in time, the fit, and where it finds suspects
the program in time again on the fabric with them and a second fit.  CPU (this process and the
worker processes it waited for) beside wall, against the goal of under 30 CPU s.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
import time

import numpy as np

from fabscope.diagnose.plan import bench_random_pairs
from fabscope.diagnose.synthetic import as_result, random_faults, synthetic
from fabscope.diagnose.timemodel import dynamic_bandwidth
from fabscope.fabric.io import load_fabric


def _cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def measured_in_time(spec: str, rounds: int, seed: int, noise: float):
    """(fabric, faults, Measured): fabscope-bench's random pairs (seeds 1 and 2, ``rounds`` rounds each)
    as the program in time gives them on the fabric with the faults, times lognormal noise."""
    f = load_fabric(spec)
    s, d, r = bench_random_pairs(f.n_hosts, 1, rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, rounds)
    hs, hd, rr = np.r_[s, s2], np.r_[d, d2], np.r_[r, r2 + rounds]
    faults = random_faults(f, 3, 1, seed=seed)
    shape = synthetic(f, hs, hd, rr, {}, 0.0)          # the pairs as a Measured (its figures replaced below)
    cap = f.link_capacity.copy()
    for c, x in faults.items():
        cap[[2 * c, 2 * c + 1]] *= x
    faulty = dataclasses.replace(shape, fabric=dataclasses.replace(f, link_capacity=cap))
    bw = dynamic_bandwidth(faulty).bandwidth * np.exp(np.random.default_rng(seed).normal(0.0, noise, shape.n_pairs))
    return f, faults, dataclasses.replace(shape, bandwidth=bw, time=shape.bytes * 2 / bw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="fat-tree:k=13,levels=3")
    ap.add_argument("--rounds", type=int, default=50, help="rounds of random pairs for each of 2 seeds")
    ap.add_argument("--seed", type=int, default=3, help="the faults' and the noise's seed")
    ap.add_argument("--noise", type=float, default=0.05)
    a = ap.parse_args()
    from fabscope.cli import main as cli

    c0, w0 = _cpu(), time.perf_counter()
    f, faults, m = measured_in_time(a.fabric, a.rounds, a.seed, a.noise)
    print(f"{m.n_pairs} pairs on {f.n_hosts} hosts ({a.fabric}), faults "
          f"{', '.join(f'{c}: x{x:.2f}' for c, x in faults.items())}; made in time in "
          f"{_cpu() - c0:.1f} CPU s, {time.perf_counter() - w0:.1f} s wall", flush=True)
    work = tempfile.mkdtemp(prefix="bench-in-time-")
    run, out = os.path.join(work, "night.json"), os.path.join(work, "diag.json")
    as_result(m).write_json(run)
    c0, w0 = _cpu(), time.perf_counter()
    rc = cli(["diagnose", run, "--fabric", a.fabric, "-o", out, "--top", "0"])
    cpu, wall = _cpu() - c0, time.perf_counter() - w0
    d = json.load(open(out))
    found = {x["link"] // 2 for x in d["extra"]["suspects"]}
    print(f"diagnose (default model: {d['meta'].get('model', '?')}): rc {rc}, {len(found & set(faults))} of "
          f"{len(faults)} faults named, {len(found - set(faults))} false; CPU {cpu:.1f} s, wall {wall:.1f} s "
          f"(load average {os.getloadavg()[0]:.1f}); goal under 30 CPU s: {'met' if cpu < 30 else 'NOT met'}; "
          f"files in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
