"""Speed of the dynamic simulation on its target cases, with SimGrid's time in the same run.

    .venv/bin/python bench/bench_dynamic.py                 # every case; SimGrid where it is installed
    .venv/bin/python bench/bench_dynamic.py --no-simgrid    # fabscope only
    .venv/bin/python bench/bench_dynamic.py --case torus    # one case (torus, fat-tree, itasca-pingpong,
                                                            #  itasca-pingpong-count, itasca-seed-job,
                                                            #  allreduce, alltoall)
    .venv/bin/python bench/bench_dynamic.py --case itasca-pingpong --iterations 2   # fewer timed iterations
    .venv/bin/python bench/bench_dynamic.py --case itasca-pingpong --iterations 1 --no-simgrid \
        --against /work/main/src/fabscope/dynamic/flowsim.c --repeat 3   # the engine alone beside another
    .venv/bin/python bench/bench_dynamic.py --whole itasca-20 --repeat 3   # whole processes beside /work/main
    .venv/bin/python bench/bench_dynamic.py --diagnose-model --other /work/main/src --repeat 3
    .venv/bin/python bench/bench_dynamic.py --diagnose-model --against /work/main/src/fabscope/dynamic/flowsim.c \
        --repeat 2                                          # diagnose's time model with each engine

"fabscope s" is routing + resources + the engine, run to completion (fabric
build, imports and the engine's one-time compilation excluded), wall clock;
"cpu s" is the same as CPU time of this process (the machines these figures
come from are shared: wall time includes waiting for a core).  SimGrid's time
is its engine's run (platform built, Python actors), in the system Python,
on the same flows and routes at latency 0 (the torus: a Full zone with
fabscope's routes; the fat tree: SimGrid's own fat-tree zone and its D-mod-K
routes); "agree" is the largest relative difference of completion times
between the two.

``--against FILE.c``: after each case, the compiled engine alone is run again
``--repeat`` times on the same program and routes, alternately with this
tree's ``flowsim.c`` and with ``FILE.c`` (another version of it, e.g. the
landed one, built with the ``ugal_choice.c`` and ``flowsim.h`` beside it where they are), and the median CPU time of each is printed with the ratio; the
completion times of the two are compared ("agree").  The compiled engine's lines also print the flows its refills
took in (summed over the run) and by which path: at a resource about to fill below their rate, at
the check when the level reached their rate; and the checks that kept a flow as it was.

``--diagnose-model``: the time model of ``bench/bench_diagnose.py --parts nominal --nominal
fast1`` (109,800 pairs in 100 rounds on the 3-level fat tree k=13, 20 + 2 iterations; its sets
split into components, shapes already run reused, one process), without the fit that follows it
there.  With ``--against FILE.c``: this tree's ``flowsim.c`` and that one run alternately
``--repeat`` times in this process, the median CPU and wall time of each and how far their
modeled times are apart.  Without: this tree's ``src`` and ``--other``'s, alternately, a fresh
process per run (after one untimed set in it: imports), each run's CPU seconds in all, in the
compiled engine and outside it (the Python around the engine), and whether the modeled times are
the same bit for bit.

``--whole CASE``: whole-process figures.  ``itasca-20`` is
``fabscope simulate --fabric itasca --ppn 8 --pattern random-pairs --seed 7
--dynamic --iterations 20`` (max-min, latencies, the CLI's whole work: Python,
imports, fabric, routing, program, engine, output), ``itasca-100`` the same
with 100 iterations.  Each run is a fresh process, alternately with this
tree's ``src`` and ``--other`` (default ``/work/main/src``, the landed code)
first on ``PYTHONPATH``, so that both see the same load; printed: each run's
wall and CPU (user + system) seconds and peak resident MB, the medians, the
ratios, and the spread of the simulated times the runs printed (long
ping-pong runs are chaotic: rounding differences between two versions of the
engine move the finish times, by up to 1e-2 on seed 000's job at 20
iterations between the landed engine and the Python reference).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
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
HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
WHOLE = {it: ["-m", "fabscope.cli", "simulate", "--fabric", "itasca", "--ppn", "8", "--pattern", "random-pairs",
              "--seed", "7", "--dynamic", "--iterations", str(it)] for it in (1, 2, 20, 100)}
TARGET = {20: 10.0, 100: 30.0}


def whole(key: str, repeat: int, other: str) -> None:
    """The whole-process case ``key`` (itasca-N), this tree beside ``other``, alternately."""
    it = int(key.split("-")[1])
    argv = WHOLE[it]
    sides = [("this tree", HERE), ("other", other)]
    for _, src in sides:                               # each side's compiled engine built outside the timings
        subprocess.run([sys.executable, "-c", "from fabscope.dynamic import fast; assert fast.available()"],
                       env={**os.environ, "PYTHONPATH": src}, check=True)
    print(f"whole process: fabscope {' '.join(argv[2:])}; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores; other = {other}", flush=True)
    got: dict[str, list] = {name: [] for name, _ in sides}
    for i in range(repeat):
        for name, src in sides:
            usage0 = os.times()
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, *argv], env={**os.environ, "PYTHONPATH": src}, capture_output=True, check=False)
            wall = time.perf_counter() - t0
            usage1 = os.times()
            if p.returncode:
                raise SystemExit(f"failed with {src}: {p.stderr.decode(errors='replace').strip()[-300:]}")
            cpu = (usage1.children_user - usage0.children_user) + (usage1.children_system - usage0.children_system)
            sim = re.search(r"done at ([0-9.]+) ms simulated", p.stdout.decode(errors="replace"))
            got[name].append((wall, cpu, sim.group(1) if sim else "?"))
            print(f"  run {i + 1} {name:9}: wall {wall:8.2f} s  cpu {cpu:8.2f} s  simulated {got[name][-1][2]} ms  "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    med = {n: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v)) for n, v in got.items()}
    sims = [float(x[2]) for v in got.values() for x in v if x[2] != "?"]
    spread = (max(sims) - min(sims)) / min(sims) if sims else float("nan")
    (tw, tc), (ow, oc) = med["this tree"], med["other"]
    print(f"{key}: median of {repeat}: this tree wall {tw:.2f} s cpu {tc:.2f} s | other wall {ow:.2f} s "
          f"cpu {oc:.2f} s | other/this: wall {ow / tw:.2f}x cpu {oc / tc:.2f}x | target {TARGET.get(it, '-')} s "
          f"wall | simulated {min(sims):.3f} to {max(sims):.3f} ms (relative spread {spread:.0e})", flush=True)


@contextlib.contextmanager
def engine_from(source: str):
    """The compiled engine built from ``source`` (a flowsim.c) inside the block, this tree's after it."""
    saved = fast.SOURCE
    fast.SOURCE = source
    fast._load.cache_clear()
    try:
        if not fast.available():
            raise SystemExit(f"cannot build {source}: {fast.why_not()}")
        yield
    finally:
        fast.SOURCE = saved
        fast._load.cache_clear()


def against(prog: Program, run, source: str, repeat: int) -> None:
    """The compiled engine alone on ``run``'s program and routes: this tree's flowsim.c beside ``source``."""
    cpu: dict[str, list[float]] = {"this tree": [], "other": []}
    ends = {}
    for _ in range(repeat):
        for name, src in (("this tree", fast.SOURCE), ("other", source)):
            with engine_from(src):
                c0 = time.process_time()
                out = fast.run_program(prog, run.paths, run.msg_path)
                cpu[name].append(time.process_time() - c0)
                ends[name] = out.msg_end
    a, b = statistics.median(cpu["this tree"]), statistics.median(cpu["other"])
    agree = np.max(np.abs(ends["this tree"] - ends["other"]) / ends["other"])
    print(f"  engine alone, median of {repeat}: this tree {a:.3f} cpu s, {source} {b:.3f} cpu s, "
          f"{b / a:.2f}x; completion times agree to {agree:.0e}", flush=True)


def _diagnose_case():
    """bench_diagnose's nominal case (fast1): 109,800 measured pairs in 100 rounds, 20 + 2 iterations."""
    from fabscope.diagnose.measured import Measured
    from fabscope.diagnose.plan import bench_random_pairs
    from fabscope.diagnose.synthetic import random_faults, synthetic

    f = load_fabric("fat-tree:k=13,levels=3")
    n_rounds, iters, seed = 50, 20, 3
    s, dd, r = bench_random_pairs(f.n_hosts, 1, n_rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, n_rounds)
    faults = random_faults(f, 3, 1, seed=seed)
    syn = synthetic(f, np.r_[s, s2], np.r_[dd, d2], np.r_[r, r2 + n_rounds], faults, 0.05, seed=seed)
    return Measured(f, syn.src, syn.dst, syn.hs, syn.hd, syn.bytes, syn.bandwidth, syn.time, syn.scenario,
                    syn.pingpong, syn.test, syn.sources, syn.scenario_key, np.full(syn.n_pairs, iters),
                    np.full(syn.n_pairs, 2))


def diagnose_child() -> None:
    """One run of the case's time model in this process (after one untimed run: imports, the
    engine's build), printed as one JSON line: CPU in all, in the compiled engine, outside it."""
    import hashlib
    import json

    from fabscope.diagnose.nominal import nominal_model

    m = _diagnose_case()
    nominal_model(m.subset(np.flatnonzero(m.scenario == 0)), workers=1, events=0)
    engine = [0.0]
    run = fast.run_program

    def timed(*args, **kw):
        c0 = time.process_time()
        try:
            return run(*args, **kw)
        finally:
            engine[0] += time.process_time() - c0

    fast.run_program = timed
    w0, c0 = time.perf_counter(), time.process_time()
    bw, info = nominal_model(m, workers=1, events=0)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(json.dumps({"cpu": cpu, "wall": wall, "engine": engine[0], "events": info["events"],
                      "modeled": hashlib.sha256(np.ascontiguousarray(bw).tobytes()).hexdigest()[:16]}))


def diagnose_trees(other: str, repeat: int) -> None:
    """The case's time model in fresh processes, this tree's ``src`` and ``other`` alternately: the
    Python around the engine as well as the engine."""
    import json

    sides = [("this tree", HERE), ("other", other)]
    print(f"diagnose's time model, whole (bench_diagnose's nominal case, fast1), a process per run, this tree "
          f"beside {other}; load average {os.getloadavg()[0]:.1f}", flush=True)
    got: dict[str, list] = {name: [] for name, _ in sides}
    for i in range(repeat):
        for name, src in sides:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--diagnose-child"],
                               env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True, check=False)
            if p.returncode:
                raise SystemExit(f"failed with {src}: {p.stderr.strip()[-300:]}")
            r = json.loads(p.stdout.strip().splitlines()[-1])
            got[name].append(r)
            print(f"  run {i + 1} {name:9}: cpu {r['cpu']:6.2f} s  engine {r['engine']:6.2f}  outside "
                  f"{r['cpu'] - r['engine']:5.2f}  {r['events']:,} events  modeled times {r['modeled']} "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    med = {n: {k: statistics.median(r[k] if k != "outside" else r["cpu"] - r["engine"] for r in v)
               for k in ("cpu", "engine", "outside")} for n, v in got.items()}
    same = len({r["modeled"] for v in got.values() for r in v}) == 1
    t, o = med["this tree"], med["other"]
    print(f"  median of {repeat}: this tree cpu {t['cpu']:.2f} s (engine {t['engine']:.2f}, outside "
          f"{t['outside']:.2f}) | other cpu {o['cpu']:.2f} s (engine {o['engine']:.2f}, outside {o['outside']:.2f}) "
          f"| other/this: cpu {o['cpu'] / t['cpu']:.2f}x, outside {o['outside'] / t['outside']:.2f}x | modeled "
          f"times {'equal bit for bit' if same else 'DIFFER'}", flush=True)


def diagnose_model(source: str, repeat: int) -> None:
    """diagnose's time model (bench_diagnose's nominal case, fast1) with this tree's engine and ``source``'s."""
    from fabscope.diagnose.nominal import nominal_model

    m = _diagnose_case()
    print(f"diagnose's time model: {m.n_pairs:,} pairs in {m.n_scenarios} rounds on {m.fabric.name}, 20 + 2 "
          f"iterations, one process; load average {os.getloadavg()[0]:.1f}", flush=True)
    got: dict[str, list] = {"this tree": [], "other": []}
    noms = {}
    for i in range(repeat):
        for name, src in (("this tree", fast.SOURCE), ("other", source)):
            with engine_from(src):
                w0, c0 = time.perf_counter(), time.process_time()
                noms[name], info = nominal_model(m, workers=1, events=0)
                got[name].append((time.perf_counter() - w0, time.process_time() - c0))
            print(f"  run {i + 1} {name:9}: wall {got[name][-1][0]:7.2f} s  cpu {got[name][-1][1]:7.2f} s  "
                  f"{info['events']:,} events (load {os.getloadavg()[0]:.1f})", flush=True)
    med = {n: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for n, v in got.items()}
    (tw, tc), (ow, oc) = med["this tree"], med["other"]
    e = np.abs(np.log(noms["this tree"] / noms["other"]))
    print(f"  median of {repeat}: this tree wall {tw:.2f} s cpu {tc:.2f} s | {source} wall {ow:.2f} s cpu {oc:.2f} s | "
          f"other/this cpu {oc / tc:.2f}x; modeled times apart by at most {np.nanmax(e):.0e} (log ratio)", flush=True)


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
    ap.add_argument("--against", metavar="FILE.c", help="also run the engine alone with this flowsim.c, alternately")
    ap.add_argument("--repeat", type=int, default=3, help="runs of --against and --whole (medians)")
    ap.add_argument("--whole", action="append", choices=("itasca-1", "itasca-2", "itasca-20", "itasca-100"),
                    help="whole processes of the CLI, this tree beside --other")
    ap.add_argument("--other", default="/work/main/src", help="--whole: the code to compare with (the landed main)")
    ap.add_argument("--diagnose-model", action="store_true",
                    help="diagnose's time model (bench_diagnose --parts nominal --nominal fast1): with --against, "
                         "this tree's engine and --against's in one process; without, this tree's src and --other's, "
                         "a process per run")
    ap.add_argument("--diagnose-child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.diagnose_child:
        diagnose_child()
        return
    if a.diagnose_model:
        if a.against:
            diagnose_model(a.against, a.repeat)
        else:
            diagnose_trees(a.other, a.repeat)
        return
    if a.whole:
        for key in a.whole:
            whole(key, a.repeat, a.other)
        return
    # imported here, not in the timings (make_routing imports the engine it builds)
    import fabscope.routing.dor
    import fabscope.routing.tables
    import fabscope.routing.tree  # noqa: F401

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
            j = run.outcome.joins
            paths = (f"; {run.outcome.refills:,} flows refilled (joined at a filling resource {j['at fill']:,}, at "
                     f"their check {j['at check']:,}; checks kept {j['kept']:,})") if j and key != "itasca-pingpong-count" else ""
            print(f"{label:17} {prog.n_messages:>9,} {run.outcome.events:>10,} {wall:>10.3f} {cpu:>7.3f} "
                  f"{target:>6.1f} {sg:>9} {agree:>8}  {what}; engine {run.engine}; "
                  f"simulated {run.outcome.makespan * 1e3:.3f} ms{paths}", flush=True)
            if a.against and run.engine == "c":
                against(prog, run, a.against, a.repeat)


if __name__ == "__main__":
    main()
