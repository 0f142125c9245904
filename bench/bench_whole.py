"""The dynamic engine's whole-process figures, this tree beside the landed code and SimGrid.

    .venv/bin/python bench/bench_whole.py                      # every case but the 1M-host tree, 3 runs each
    .venv/bin/python bench/bench_whole.py --case torus --repeat 5
    .venv/bin/python bench/bench_whole.py --case fat-tree-1m --repeat 1
    .venv/bin/python bench/bench_whole.py --other /work/main/src   # the landed code to compare with
    .venv/bin/python bench/bench_whole.py --split --case itasca-20 --repeat 1     # stage by stage
    .venv/bin/python bench/bench_whole.py --split --case itasca-100 --repeat 1 --other none

Every figure is a whole process, started fresh: Python's start, the imports,
the fabric, the routing, the program, the engine, the output; the compiled
engines (and the result file's column writer) are built before the timings.
"wall s" is the median of the runs' wall clock, "cpu s" the median of their
user + system CPU time (this machine
is shared: wall time includes waiting for a core), "MB" the largest peak
resident set of the runs.  Each case runs here (this tree's ``src``, first on
``PYTHONPATH``) and in ``--other`` (default ``/work/main/src``, the landed
code), alternately, so that both see the same load.

Bytecode: an installed fabscope has its modules compiled (pip writes the
``.pyc`` files); a process started with ``PYTHONDONTWRITEBYTECODE`` set and no
cache compiles every module of ``src`` again, about 0.08 CPU s of the torus
case.  Each side therefore gets its own cache folder (``PYTHONPYCACHEPREFIX``
in a temporary folder, nothing written into either tree) and one untimed run
of every case fills it; ``--cold-bytecode`` times the compiling runs instead.
The load average is printed with every case (this machine is shared).

SimGrid (Debian's python3-simgrid in the system Python) runs the torus
matching as a whole process too: ``/usr/bin/python3 simgrid_peer.py
problem.json`` on the same flows and routes (a Full zone, latency 0), the
problem file written beforehand from fabscope's routes: its median wall and
CPU time beside this tree's ("x": how many times longer).  Its completion
times are compared with fabscope's ("agree": the largest relative
difference).  The ``torus-1blas`` row divides the same SimGrid runs by its
own times (the same flows, with one OpenBLAS thread) when the torus case ran
first; so do the ``python`` and ``numpy-floor`` rows (the interpreter alone, and
with NumPy and ``numpy.random`` imported: what any NumPy process pays before
fabscope does anything), and a line after them says how much of 40x SimGrid's
time the floor leaves.  The Itasca ping-pong cases are not run in SimGrid: two
iterations did not finish in 600 s (docs/dynamic.md).

``--split``: a CLI case (torus-cli, itasca-20, itasca-100, fat-tree-1m-cli)
stage by stage instead.  The child first imports every module a small run of
the same command loaded (one iteration; the 1M-host tree's fabric replaced by
a small one): "imports"; then runs ``fabscope.cli.main`` with the library's
stage functions wrapped (fabric, placement, pattern, ping-pong program,
routing tables, routes into paths, the messages' grouping by path, the
compiled engine, result rows and link loads, the ``-o`` file, the table),
each stage's CPU seconds without the stages it calls; the rest is "CLI:
parser, checks, glue", and "exit" is the process's CPU time as the parent
sees it less the child's own count when ``simulate`` calls ``os._exit``.
Medians of ``--repeat`` runs per side; ``--other none``: this tree alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

#: a random matching (each rank sends 1 MiB to its partner, both ways at once) through the API
MATCHING = """
import sys, numpy as np
from fabscope.dynamic.program import Program
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric
f = load_fabric(sys.argv[1])
n = f.n_hosts
perm = np.random.default_rng(1).permutation(n)
a, b = perm[0::2], perm[1::2]
prog = Program.from_arrays("matching", n, np.r_[a, b], np.r_[b, a], np.full(n - n % 2, 2.0**20),
                           np.zeros(n - n % 2, dtype=np.int64))
run = run_program_on(f, Placement.block(f, n, ppn=1), prog, sys.argv[2], latency=False)
if len(sys.argv) > 3:
    np.save(sys.argv[3], run.outcome.msg_end)
    if len(sys.argv) > 4:
        from fabscope.dynamic import peer
        with open(sys.argv[4], "w") as fh:
            import json
            json.dump(peer.problem(run.paths, run.msg_path, prog.src, prog.dst, prog.bytes,
                                   Placement.block(f, n, ppn=1).host), fh)
print(f"makespan {run.outcome.makespan!r} events {run.outcome.events}")
"""


def cases():
    """(key, what, argv after the interpreter, target wall s)"""
    fab = ["-m", "fabscope.cli"]
    yield ("help", "fabscope --help", fab + ["--help"], 0.3)
    yield ("simulate-help", "fabscope simulate --help", fab + ["simulate", "--help"], 0.3)
    yield ("torus", "16x16x16 torus, DOR, one random matching of 1 MiB (API script)",
           ["-c", MATCHING, "torus:16x16x16", "dor"], 0.5)
    yield ("torus-1blas", "the same API script with OPENBLAS_NUM_THREADS=1 in the environment (as simulate sets it)",
           ["-c", "import os\nos.environ['OPENBLAS_NUM_THREADS'] = '1'\n" + MATCHING, "torus:16x16x16", "dor"], 0.5)
    # what any process that uses NumPy pays before fabscope does anything (the floor under the target of 40x SimGrid on the torus)
    yield ("python", "the interpreter alone: python -c pass", ["-c", "pass"], None)
    yield ("numpy-floor", "Python with NumPy and numpy.random imported, one OpenBLAS thread: the torus's floor",
           ["-c", "import os\nos.environ['OPENBLAS_NUM_THREADS'] = '1'\nimport numpy, numpy.random"], None)
    yield ("torus-cli", "the CLI: a random permutation on the 16x16x16 torus, DOR, 1 MiB, result written (-o)",
           fab + ["simulate", "--fabric", "torus:16x16x16", "--routing", "dor", "--ppn", "1", "--pattern",
                  "permutation", "--dynamic", "-o", "{tmp}/out.json"], 0.5)
    yield ("itasca-20", "Itasca, random pairs at 8 ppn (8,576 ranks), 20 ping-pong iterations, max-min",
           fab + ["simulate", "--fabric", "itasca", "--ppn", "8", "--pattern", "random-pairs", "--seed", "7",
                  "--dynamic", "--iterations", "20"], 10.0)
    yield ("itasca-100", "the same, 100 iterations (latencies as always in the CLI)",
           fab + ["simulate", "--fabric", "itasca", "--ppn", "8", "--pattern", "random-pairs", "--seed", "7",
                  "--dynamic", "--iterations", "100"], 30.0)
    yield ("fat-tree-1m", "1,048,576-host fat tree (k=32, 4 levels), D-mod-K, one random matching (API script)",
           ["-c", MATCHING, "fat-tree:k=32,levels=4", "dmodk"], 30.0)
    yield ("fat-tree-1m-cli", "the CLI on it: a random permutation, D-mod-K, 1 MiB, result written (-o)",
           fab + ["simulate", "--fabric", "fat-tree:k=32,levels=4", "--routing", "dmodk", "--ppn", "1", "--pattern",
                  "permutation", "--dynamic", "-o", "{tmp}/out.json"], 30.0)


DEFAULT = ("help", "simulate-help", "torus", "torus-1blas", "python", "numpy-floor", "torus-cli", "itasca-20",
           "itasca-100")

#: ``--split``: the fabric of the untimed run that lists the modules
SMALL = {"fat-tree:k=32,levels=4": "fat-tree:k=4,levels=4"}

#: ``--split``: the CLI run in a child that times its stages (CPU s, each exclusive of the stages it calls)
SPLIT = r"""
import json, os, resource, sys, time
T0 = time.process_time()
MODULES, OUT = json.loads(sys.argv[1]), sys.argv[2]
STAGE = {"python start": T0}
STACK = [["CLI: parser, checks, glue", time.process_time()]]

def add(name, t):
    STAGE[name] = STAGE.get(name, 0.0) + t

def timed(name, fn):
    def wrapper(*a, **kw):
        now = time.process_time()
        add(STACK[-1][0], now - STACK[-1][1])
        STACK.append([name, now])
        try:
            return fn(*a, **kw)
        finally:
            now = time.process_time()
            add(name, now - STACK.pop()[1])
            STACK[-1][1] = now
    return wrapper

import importlib
t = time.process_time()
for m in MODULES:                  # everything the run imports, here, as one stage
    try:
        importlib.import_module(m)
    except Exception:
        pass
STAGE["imports"] = time.process_time() - t
STACK[-1][1] = time.process_time()

import fabscope.resolver as rv, fabscope.traffic.spec as ts, fabscope.dynamic.programs as pg
import fabscope.dynamic.resources as rs, fabscope.dynamic.run as rn, fabscope.dynamic.fast as fast
import fabscope.dynamic.results as res, fabscope.report.tables as tb, fabscope.result as rt
from fabscope.fabric.placement import Placement
rv.resolve_fabric = timed("fabric", rv.resolve_fabric)
Placement.block = classmethod(timed("placement", Placement.block.__func__))
ts.make_traffic = timed("pattern (pair drawing)", ts.make_traffic)
pg.pingpong = timed("program", pg.pingpong)
rs.make_routing = timed("routing tables", rs.make_routing)
rn.build_paths = timed("routes into paths", rn.build_paths)
rn.run_program_on = timed("run: messages to paths", rn.run_program_on)
fast.run_program = timed("engine (compiled)", fast.run_program)
res.pingpong_result = timed("results (rows, link loads)", res.pingpong_result)
res.message_result = timed("results (rows, link loads)", res.message_result)
rt.Result.write_json = timed("result file (-o)", rt.Result.write_json)
tb.print_result = timed("table printed", tb.print_result)
real_exit = os._exit

def leave(code):
    now = time.process_time()
    add(STACK[-1][0], now - STACK[-1][1])
    with open(OUT, "w") as fh:
        json.dump({"stages": STAGE, "cpu": now, "mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                   "modules": sorted(sys.modules)}, fh)
    real_exit(code)

os._exit = leave
sys.argv = ["fabscope", *sys.argv[3:]]
from fabscope.cli import main
leave(main())
"""


#: the compiled engine and (where the tree has it) the result file's column writer, built before the timings
BUILD = """
from fabscope.dynamic import fast
assert fast.available(), fast.why_not()
try:
    from fabscope import jsoncolumns
except ImportError:
    pass
else:
    assert jsoncolumns.available(), jsoncolumns.why_not()
"""


#: per code tree: the environment its processes run in (set in main)
ENV: dict[str, dict[str, str]] = {}


def environment(src: str, cache: str | None) -> dict[str, str]:
    """The process environment for ``src``: first on PYTHONPATH, bytecode cached under ``cache`` (None: not cached)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = src
    if cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = cache
    return env


def run_case(argv: list[str], src: str, extra: list[str] = ()) -> tuple[float, float, float, str]:
    """Wall s, CPU s (user + system) and peak resident MB of one fresh process (os.wait4's usage)."""
    env = ENV.get(src) or {**os.environ, "PYTHONPATH": src}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, *argv, *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        tail = err.decode(errors="replace").strip().splitlines()[-1:]
        raise SystemExit(f"{' '.join(argv[:4])} ... failed with {src} on PYTHONPATH: {tail}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out.decode(errors="replace")


def simgrid_whole(problem: str) -> tuple[float, float] | None:
    """Wall s and CPU s of SimGrid's whole process on ``problem`` (None where SimGrid is not installed)."""
    from fabscope.dynamic import peer

    if peer.why_unavailable():
        return None
    t0 = time.perf_counter()
    with open(problem + ".out", "w") as out:
        p = subprocess.Popen([peer.SYSTEM_PYTHON, peer.PEER, problem], stdout=out, stderr=subprocess.PIPE)
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"SimGrid failed: {err.decode(errors='replace').strip().splitlines()[-1:]}")
    return wall, ru.ru_utime + ru.ru_stime


def split(key: str, sides: list[tuple[str, str]], repeat: int) -> None:
    """The CLI case ``key`` stage by stage (CPU s, medians of ``repeat`` runs), for each side."""
    argv = dict((k, a) for k, _, a, _ in cases())[key]
    if argv[:2] != ["-m", "fabscope.cli"] or "--help" in argv:
        raise SystemExit(f"--split takes a CLI case that runs a simulation, not {key!r}")
    got: dict[str, list[dict]] = {name: [] for name, _ in sides}
    with tempfile.TemporaryDirectory(prefix="fabscope-bench-") as tmp:
        marks = os.path.join(tmp, "marks.json")
        args = [x.replace("{tmp}", tmp) for x in argv[2:]]
        modules = {}
        short = [SMALL.get(x, x) for x in args]    # the same modules, from a small run
        if "--iterations" in short:
            short[short.index("--iterations") + 1] = "1"
        for name, src in sides:                    # untimed: the bytecode cache and the modules the run imports
            run_case(["-c", SPLIT, "[]", marks, *short], src)
            with open(marks) as fh:
                modules[name] = [m for m in json.load(fh)["modules"] if "." in m or m in ("numpy", "scipy", "rich")]
        for _ in range(repeat):
            for name, src in sides:
                wall, cpu, mb, _ = run_case(["-c", SPLIT, json.dumps(modules[name]), marks, *args], src)
                with open(marks) as fh:
                    m = json.load(fh)
                st = m["stages"]
                st["exit (teardown)"] = cpu - m["cpu"]
                st["whole process"] = cpu
                st["wall"] = wall
                st["peak MB"] = mb
                got[name].append(st)
    stages = list(dict.fromkeys(k for rs in got.values() for r in rs for k in r))
    print(f"{key}: CPU s by stage, median of {repeat} (load {os.getloadavg()[0]:.1f}); "
          f"{' '.join(argv[2:])}")
    print(f"  {'stage':34}" + "".join(f" {name:>12}" for name, _ in sides))
    for k in stages:
        vals = [statistics.median(r.get(k, 0.0) for r in got[name]) for name, _ in sides]
        print(f"  {k:34}" + "".join(f" {v:>12.3f}" for v in vals), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append",
                    help="one of help, simulate-help, torus, torus-1blas, python, numpy-floor, torus-cli, itasca-20, "
                         "itasca-100, fat-tree-1m, fat-tree-1m-cli (default: all but the fat-tree-1m ones)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--other", default="/work/main/src", help="the code to compare with (default: the landed main; --split: 'none' for this tree alone)")
    ap.add_argument("--no-simgrid", action="store_true")
    ap.add_argument("--cold-bytecode", action="store_true",
                    help="time processes that compile every module (no bytecode cache), as last session's figures")
    ap.add_argument("--split", action="store_true",
                    help="the --case CLI runs stage by stage instead (imports, fabric, pattern, program, routing, "
                         "paths, engine, results, table, exit)")
    a = ap.parse_args()
    here = os.path.normpath(HERE)
    if a.other == "none" and not a.split:
        raise SystemExit("--other none: with --split only (the table compares two trees)")
    sides = [("this tree", here)] + ([("other", a.other)] if a.other != "none" else [])
    caches = tempfile.TemporaryDirectory(prefix="fabscope-bench-pyc-")
    for i, (_, src) in enumerate(sides):
        ENV[src] = environment(src, None if a.cold_bytecode else os.path.join(caches.name, str(i)))
    for _, src in sides:                           # build each side's compiled engine outside the timings
        run_case(["-c", BUILD], src)
        if not a.cold_bytecode:                    # the big case's modules into the bytecode cache, untimed
            run_case(["-c", MATCHING, "fat-tree:k=2,levels=2", "dmodk"], src)
    if a.split:
        for key in a.case or ("itasca-20",):
            split(key, sides, a.repeat)
        return
    import numpy as np

    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {a.repeat} runs each, "
          f"medians; other = {a.other}; bytecode {'not cached' if a.cold_bytecode else 'cached (one untimed run)'}")
    print(f"{'case':14} {'wall s':>8} {'cpu s':>7} {'MB':>6} | {'other wall':>10} {'cpu':>7} {'MB':>6} | "
          f"{'x wall':>6} {'x cpu':>6} | {'target':>6} | {'SimGrid s':>9} {'x':>6} {'its cpu':>9} {'x':>6} {'agree':>7}"
          f" | {'load':>9}")
    torus_sg = None
    for key, what, argv, target in cases():
        if (a.case and key not in a.case) or (not a.case and key not in DEFAULT):
            continue
        res = {name: [] for name, _ in sides}
        load0 = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="fabscope-bench-") as tmp:
            argv = [x.replace("{tmp}", tmp) for x in argv]
            if not a.cold_bytecode and not key.startswith("fat-tree-1m"):
                for _, src in sides:                   # fills the bytecode cache
                    run_case(argv, src)
            for i in range(a.repeat):
                for name, src in sides:
                    res[name].append(run_case(argv, src))
            sg = agree = None
            if key == "torus" and not a.no_simgrid:
                ends, prob = os.path.join(tmp, "ends.npy"), os.path.join(tmp, "problem.json")
                run_case(argv, here, [ends, prob])
                runs = [r for r in (simgrid_whole(prob) for _ in range(a.repeat)) if r is not None]
                if runs:
                    sg = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
                    with open(prob + ".out") as fh:
                        theirs = np.array(json.load(fh)["finish"])
                    ours = np.load(ends)
                    agree = float(np.max(np.abs(theirs - ours) / theirs))
                    torus_sg = (sg, agree)
            elif key in ("torus-1blas", "python", "numpy-floor") and torus_sg is not None:
                sg, agree = torus_sg           # SimGrid's runs of the torus case, ratios to this row's times
        med = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs),
                      max(r[2] for r in rs)) for name, rs in res.items()}
        (w, c, m), (ow, oc, om) = med["this tree"], med["other"]
        agrees = f"{agree:>7.0e}" if key in ("torus", "torus-1blas") else ""     # the floor rows ran no flows
        sgs = (f"{sg[0]:>9.2f} {sg[0] / w:>5.0f}x {sg[1]:>9.2f} {sg[1] / c:>5.0f}x {agrees:>7}" if sg is not None
               else f"{'':>9} {'':>6} {'':>9} {'':>6} {'':>7}")
        tgt = "" if target is None else f"{target:.1f}"
        print(f"{key:14} {w:>8.3f} {c:>7.3f} {m:>6.0f} | {ow:>10.3f} {oc:>7.3f} {om:>6.0f} | "
              f"{ow / w:>5.1f}x {oc / c:>5.1f}x | {tgt:>6} | {sgs} | {load0:>4.1f}-{os.getloadavg()[0]:<4.1f}  {what}",
              flush=True)
        if key == "numpy-floor" and torus_sg is not None:
            print(f"{'':14} 40x SimGrid's {torus_sg[0][0]:.2f} s wall is {torus_sg[0][0] / 40:.3f} s; this floor "
                  f"takes {w:.3f} s of it, leaving {torus_sg[0][0] / 40 - w:.3f} s for fabscope's imports and work",
                  flush=True)


if __name__ == "__main__":
    main()
