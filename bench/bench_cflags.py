"""fabscope's C libraries built with other compiler flags: CPU under each, alternating, and the same bits.

    .venv/bin/python bench/bench_cflags.py                      # -O2 against CFLAGS (-O3): the engine on a torus
    .venv/bin/python bench/bench_cflags.py --fabric fat-tree:k=13,levels=3 --rounds 40 --reps 8
    .venv/bin/python bench/bench_cflags.py --flags=-O2 --flags="-O3 -march=native"
    .venv/bin/python bench/bench_cflags.py --reps 3 --diagnose NIGHT.json --fabric torus:dims=13x13x13

The dynamic engine (``flowsim.c``) runs the lock-step ping-pong of fabscope-bench's random pairs, ``--rounds``
rounds (seed 1), ``--iterations`` timed iterations and 2 warm-up, each round a whole set, as the nightly
diagnosis's model does within its budget.  ``--diagnose NIGHT``: the whole diagnosis of that result with
the default model instead (the engine, the max-min solves, the null's loop: every C library it loads),
in this process.  Each variant's libraries are built into a temporary cache folder of this process (so
nothing a user's fabscope loads is touched), the variants run in turn, the order reversed every other
repetition, and the figures each gives are compared with the first variant's: a build that changed a
bit is reported (-ffast-math would; a -march with FMA does unless -ffp-contract=off).  Prints each
variant's CPU seconds per repetition, their median, and the ratio of the medians to the first's.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from fabscope import cbuild, sparse
from fabscope.diagnose import unitgains
from fabscope.dynamic import fast
from fabscope.fabric.io import load_fabric
from fabscope.model import maxmin


def _use(flags: tuple[str, ...]) -> None:
    """Every library loaded from now on is the build with ``flags``."""
    cbuild.CFLAGS = flags
    for mod in (fast, maxmin, unitgains, sparse):
        mod._load.cache_clear()


def engine_rounds(spec: str, rounds: int, iterations: int):
    """A function running the engine on ``rounds`` rounds of random pairs of ``spec``: the pairs' seconds."""
    import dataclasses

    from fabscope.diagnose.plan import bench_random_pairs
    from fabscope.diagnose.synthetic import synthetic
    from fabscope.diagnose.timemodel import dynamic_bandwidth

    f = load_fabric(spec)
    s, d, r = bench_random_pairs(f.n_hosts, 1, rounds)
    shape = synthetic(f, s, d, r, {}, 0.0, size=1 << 20)
    shape = dataclasses.replace(shape, iters=np.full(shape.n_pairs, 100), warmup=np.full(shape.n_pairs, 2))
    return lambda: dynamic_bandwidth(shape, iterations=iterations, fast=False).bandwidth


def whole_diagnosis(spec: str, night: str):
    """A function diagnosing ``night`` with the default model: its factors and modeled figures."""
    from fabscope.diagnose.measured import load_measured
    from fabscope.diagnose.withmodel import diagnose_with_model

    m = load_measured([night], load_fabric(spec))

    def run():
        d = diagnose_with_model(m)
        return np.r_[d.factor, d.modeled, d.fitted, d.sigma, d.search["lam"]]
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="torus:dims=13x13x13")
    ap.add_argument("--rounds", type=int, default=40, help="rounds of random pairs (seed 1)")
    ap.add_argument("--iterations", type=int, default=4, help="timed iterations modeled (the budget's at 109,800 pairs)")
    ap.add_argument("--reps", type=int, default=8, help="repetitions of each variant")
    ap.add_argument("--flags", action="append", metavar="FLAGS",
                    help="a variant's compiler flags, space-separated (repeat; default: -O2 and CFLAGS)")
    ap.add_argument("--diagnose", metavar="NIGHT", help="time the whole diagnosis of this result instead")
    a = ap.parse_args()
    variants = [tuple(v.split()) for v in (a.flags or ["-O2", " ".join(cbuild.CFLAGS)])]
    if len(variants) < 2 or len(set(variants)) < len(variants):
        ap.error("--flags: two different variants at least")
    if a.reps < 1:
        ap.error("--reps: one at least")
    work = tempfile.mkdtemp(prefix="bench-cflags-")
    os.environ["XDG_CACHE_HOME"] = work
    run = whole_diagnosis(a.fabric, a.diagnose) if a.diagnose else engine_rounds(a.fabric, a.rounds, a.iterations)
    for v in variants:                     # built before any timing (a build is CPU of the compiler's)
        _use(v)
        if not fast.available():
            raise SystemExit(f"{' '.join(v)}: the engine did not build: {fast.why_not()}")
        maxmin.available(), unitgains._load(), sparse._load()
    what = f"the diagnosis of {a.diagnose}" if a.diagnose else \
        f"the engine, {a.rounds} rounds of random pairs, {a.iterations} + 2 iterations"
    print(f"{what} on {a.fabric}; load average {os.getloadavg()[0]:.1f}")
    cpu: dict[tuple, list[float]] = {v: [] for v in variants}
    first = None
    same = {v: True for v in variants}
    for rep in range(a.reps):
        for v in (variants if rep % 2 == 0 else variants[::-1]):
            _use(v)
            c = time.process_time()
            out = run()
            cpu[v].append(time.process_time() - c)
            if first is None:
                first = out
            same[v] &= bool(np.array_equal(out, first, equal_nan=True))
    base = float(np.median(cpu[variants[0]]))
    for v in variants:
        med = float(np.median(cpu[v]))
        print(f"  {' '.join(v):<28} median {med:7.2f} CPU s  x{med / base:.3f}  "
              f"{'the same bits' if same[v] else 'OTHER FIGURES'}  [{', '.join(f'{x:.2f}' for x in cpu[v])}]")
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
