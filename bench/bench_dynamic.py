"""Speed of the dynamic simulation on the issue's cases, with SimGrid's time in the same run.

    .venv/bin/python bench/bench_dynamic.py                 # every case; SimGrid where it is installed
    .venv/bin/python bench/bench_dynamic.py --no-simgrid    # fabscope only
    .venv/bin/python bench/bench_dynamic.py --case torus    # one case (torus, fat-tree, itasca-pingpong,
                                                            #  itasca-pingpong-count, itasca-seed-job,
                                                            #  allreduce, alltoall)
    .venv/bin/python bench/bench_dynamic.py --case itasca-pingpong --iterations 2   # fewer timed iterations

"fabscope s" is routing + resources + the engine, run to completion (fabric
build, imports and the engine's one-time compilation excluded), wall clock;
"cpu s" is the same as CPU time of this process (the machines these figures
come from are shared: wall time includes waiting for a core).  SimGrid's time
is its engine's run (platform built, Python actors), in the system Python,
on the same flows and routes at latency 0 (the torus: a Full zone with
fabscope's routes; the fat tree: SimGrid's own fat-tree zone and its D-mod-K
routes); "agree" is the largest relative difference of completion times
between the two.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fabscope.dynamic import fast, peer
from fabscope.dynamic import programs as pg
from fabscope.dynamic.program import Program
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric
from fabscope.traffic.patterns import random_pairs

MiB = 2**20


def matching(n: int, seed: int = 1) -> Program:
    """A random matching: ranks paired at random, each sends 1 MiB to its partner (both ways)."""
    perm = np.random.default_rng(seed).permutation(n)
    a, b = perm[0::2], perm[1::2]
    return Program.from_arrays("matching", n, np.r_[a, b], np.r_[b, a], np.full(n - n % 2, float(MiB)),
                               np.zeros(n - n % 2, dtype=np.int64))


def cases(iterations: int = 20):
    yield "torus", "16x16x16 torus, DOR, random matching 1 MiB", "torus:16x16x16", "dor", 1, \
        lambda n: matching(n), 2.0, True
    yield "fat-tree", "16,384-host two-level fat tree, D-mod-K, random matching 1 MiB", \
        "fat-tree:k=128,levels=2", "dmodk", 1, lambda n: matching(n), 1.0, True

    def pp(n):
        t = random_pairs(n, MiB, seed=7)
        m = t.n_flows // 2
        return pg.pingpong(t.src[:m], t.dst[:m], MiB, iterations, n_ranks=n)
    yield "itasca-pingpong", f"Itasca random pairs, 8 ppn (8,576 ranks), {iterations} ping-pong iterations", \
        "itasca", None, 8, \
        pp, 10.0, False
    yield "itasca-pingpong-count", "the same, congestion sharing (--model congestion)", "itasca", None, 8, \
        pp, 10.0, False
    yield "itasca-seed-job", \
        f"Itasca random pairs, seed 000's 8 ppn job (256 ranks), {iterations} ping-pong iterations", \
        "itasca", None, 8, lambda n: pp(256), 10.0, False
    yield "allreduce", "Itasca 1,024 ranks (8 ppn) allreduce 1 MiB, ring and recursive doubling", "itasca", None, 8, \
        lambda n: [pg.allreduce_ring(1024, MiB), pg.allreduce_recursive_doubling(1024, MiB)], 5.0, False
    yield "alltoall", "Itasca 1,024 ranks (8 ppn) all-to-all 1 KiB per pair, Bruck and pairwise", "itasca", None, 8, \
        lambda n: [pg.alltoall_bruck(1024, 1024.0), pg.alltoall_pairwise(1024, 1024.0)], 5.0, False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-simgrid", action="store_true")
    ap.add_argument("--case", action="append")
    ap.add_argument("--engine", default="auto", choices=("auto", "python", "c"))
    ap.add_argument("--iterations", type=int, default=20, help="timed ping-pong iterations of the Itasca cases")
    a = ap.parse_args()
    import fabscope.routing.dor, fabscope.routing.tables, fabscope.routing.tree  # noqa: F401  (imports are not run time)

    fast.available()                                  # compile once, outside the timings
    why = None if a.no_simgrid else peer.why_unavailable()
    if not a.no_simgrid:
        print(f"SimGrid: {why or peer.version()}")
    print(f"{'case':17} {'messages':>9} {'events':>10} {'fabscope s':>10} {'cpu s':>7} {'target':>6} "
          f"{'simgrid s':>9} {'agree':>8}  what")
    for key, what, spec, routing, ppn, make, target, comparable in cases(a.iterations):
        if a.case and key not in a.case:
            continue
        f = load_fabric(spec)
        n = f.n_hosts * ppn
        made = make(n)
        progs = made if isinstance(made, list) else [made]
        pl = Placement.block(f, max(p.n_ranks for p in progs), ppn=ppn)
        for prog in progs:
            w0, c0 = time.perf_counter(), time.process_time()
            run = run_program_on(f, pl, prog, routing, engine=a.engine, latency=not comparable,
                                 sharing="count" if key.endswith("-count") else "maxmin")
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            sg, agree = "-", "-"
            if comparable and not a.no_simgrid and why is None:
                if key == "fat-tree":      # SimGrid's own fat-tree zone: a Full zone of 16,384 hosts takes hours
                    prob = peer.fat_tree_problem(f, pl.host[prog.src], pl.host[prog.dst], prog.bytes)
                else:
                    prob = peer.problem(run.paths, run.msg_path, prog.src, prog.dst, prog.bytes, pl.host)
                fin, secs = peer.run(prob, timeout=3600)
                sg = f"{secs:.2f}"
                agree = f"{np.max(np.abs(fin - run.outcome.msg_end) / fin):.0e}"
            algo = prog.params.get("algorithm")
            label = f"{key}" + (f" {algo}" if algo else "")
            print(f"{label:17} {prog.n_messages:>9,} {run.outcome.events:>10,} {wall:>10.3f} {cpu:>7.3f} "
                  f"{target:>6.1f} {sg:>9} {agree:>8}  {what}; engine {run.engine}; "
                  f"simulated {run.outcome.makespan * 1e3:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
