"""Where a whole ``fabscope`` process's time and memory go, stage by stage.

    .venv/bin/python bench/profile_whole.py                                  # 16x16x16 torus, DOR
    .venv/bin/python bench/profile_whole.py --fabric fat-tree:k=32,levels=4 --routing dmodk
    .venv/bin/python bench/profile_whole.py --other /work/main/src          # the landed code beside it
    .venv/bin/python bench/profile_whole.py --fabric fat-tree:k=32,levels=4 --routing dmodk --no-result --other /work/main/src
    .venv/bin/python bench/profile_whole.py --other /work/main/src --repeat 11 --one-blas-thread
    .venv/bin/python bench/profile_whole.py --other /work/main/src --repeat 9 --imports

One random matching (each host sends 1 MiB to its partner, both ways at
once, latency 0: bench_whole.py's case), run as a fresh process whose stages
are timed in it: Python's start and numpy's import, fabscope's imports, the
fabric, the program, the routing tables, the routes grouped into paths, the
engine (the compiled one), the result (one row per message and the links'
loads, written as JSON through fabscope.atomic into a temporary folder), and
the teardown (the process's CPU time as the parent sees it, less what the
child had used when it printed its last stage).  Each stage: CPU seconds
(``time.process_time``) and the peak resident set at its end.  The bytecode
of both trees is cached (a ``PYTHONPYCACHEPREFIX`` per tree, filled by one
untimed run), as an installed fabscope has it.

CPU seconds are the whole process's (``time.process_time``): with NumPy's
default OpenBLAS threads they include the workers spinning on the other cores
for a while after ``import numpy``, which lands in whatever stages run then;
``--one-blas-thread`` sets ``OPENBLAS_NUM_THREADS=1`` in the children so that
each stage counts its own work.  ``--repeat``: the median of that many runs
per side (alternately), per stage.

``--imports``: instead, what bench_whole.py's API script (``MATCHING``)
imports beyond ``import numpy, numpy.random`` (which the script needs
itself): the modules, and the sum of their own times as ``python -X
importtime`` reports them (median of ``--repeat`` runs; importtime's own
overhead included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

CHILD = r"""
import resource, sys, time, json
def mark(stage):
    MARKS.append((stage, time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
MARKS = []
mark("python start")
import numpy as np
mark("numpy import")
from fabscope.dynamic import fast
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import build_paths
from fabscope.dynamic.run import Run
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric
from fabscope.routing import make_routing
assert fast.available(), fast.why_not()
mark("fabscope imports")
f = load_fabric(sys.argv[1])
mark("fabric")
n = f.n_hosts
perm = np.random.default_rng(1).permutation(n)
a, b = perm[0::2], perm[1::2]
prog = Program.from_arrays("matching", n, np.r_[a, b], np.r_[b, a], np.full(n - n % 2, 2.0**20),
                           np.zeros(n - n % 2, dtype=np.int64))
place = Placement.block(f, n, ppn=1)
hs, hd = place.host[prog.src].astype(np.int64), place.host[prog.dst].astype(np.int64)
uniq, msg_path = np.unique(hs * n + hd, return_inverse=True)
mark("program and placement")
router = make_routing(f, sys.argv[2])
mark("routing tables")
paths = build_paths(f, router, uniq // n, uniq % n, latency=False)
mark("routes into paths")
out = fast.run_program(prog, paths, msg_path, "maxmin")
mark("engine")
if sys.argv[3] != "-":
    from fabscope.dynamic.results import message_result    # the API's run does not import it
    r = message_result(f, Run(prog, place, paths, msg_path, out, "c"), {"pattern": "matching"})
    r.write_json(sys.argv[3])
    mark("result (its imports, rows, links, JSON)")
print(json.dumps({"marks": MARKS, "makespan": out.makespan}), flush=True)
"""


#: set by main: one OpenBLAS thread in the children
ONE_BLAS_THREAD = [False]


def child_env(src: str, cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=src, PYTHONPYCACHEPREFIX=cache)
    if ONE_BLAS_THREAD[0]:
        env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def profile(src: str, cache: str, fabric: str, routing: str, out: str) -> tuple[list, float, float, float]:
    """(stages, the process's CPU s, its peak MB, makespan) of one child on ``src``."""
    p = subprocess.Popen([sys.executable, "-c", CHILD, fabric, routing, out], env=child_env(src, cache),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = p.stdout.read(), p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"the profile failed with {src}: {stderr.decode(errors='replace').strip()[-400:]}")
    doc = json.loads(stdout.decode().strip().splitlines()[-1])
    return doc["marks"], ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, doc["makespan"]


def _importtime(argv: list[str], env: dict[str, str]) -> dict[str, int]:
    """{module: its own microseconds} of one ``python -X importtime`` run."""
    err = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, capture_output=True, text=True).stderr
    out = {}
    for line in err.splitlines():
        if line.startswith("import time:") and not line.startswith("import time: self"):
            own, _, name = line[len("import time:"):].split("|")
            out[name.strip()] = int(own)
    return out


def imports(name: str, src: str, fabric: str, routing: str, repeat: int) -> None:
    """Print what the API script imports beyond numpy and numpy.random, and how long that takes."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_whole import MATCHING

    with tempfile.TemporaryDirectory(prefix="fabscope-profile-") as tmp:
        env = {**child_env(src, tmp), "OPENBLAS_NUM_THREADS": "1"}
        subprocess.run([sys.executable, "-c", MATCHING, fabric, routing], env=env, capture_output=True)  # bytecode
        base = set(_importtime(["-c", "import numpy, numpy.random"], env))
        runs = [{k: v for k, v in _importtime(["-c", MATCHING, fabric, routing], env).items() if k not in base}
                for _ in range(repeat)]
    total = statistics.median(sum(r.values()) for r in runs) / 1e3
    own = statistics.median(sum(v for k, v in r.items() if k.startswith("fabscope")) for r in runs) / 1e3
    print(f"{name} ({src}): {len(runs[-1])} modules beyond numpy and numpy.random, {total:.1f} ms "
          f"(fabscope's own {own:.1f}; median of {repeat}, load {os.getloadavg()[0]:.1f}); not fabscope's: "
          + ", ".join(sorted(k for k in runs[-1] if not k.startswith("fabscope"))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="torus:16x16x16")
    ap.add_argument("--routing", default="dor")
    ap.add_argument("--other", help="another code tree to profile beside this one (e.g. /work/main/src)")
    ap.add_argument("--no-result", action="store_true",
                    help="stop after the engine (the landed code checks a million links' result item by item: "
                         "minutes)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per side; each stage's median is shown")
    ap.add_argument("--one-blas-thread", action="store_true",
                    help="OPENBLAS_NUM_THREADS=1 in the children (no spinning worker in the stages' CPU time)")
    ap.add_argument("--imports", action="store_true",
                    help="the modules bench_whole.py's API script imports beyond numpy's, and their import time")
    a = ap.parse_args()
    ONE_BLAS_THREAD[0] = a.one_blas_thread
    if a.imports:
        for name, src in [("this tree", HERE)] + ([("other", a.other)] if a.other else []):
            imports(name, src, a.fabric, a.routing, a.repeat)
        return
    sides = [("this tree", HERE)] + ([("other", a.other)] if a.other else [])
    with tempfile.TemporaryDirectory(prefix="fabscope-profile-") as tmp:
        for i, (_, src) in enumerate(sides):       # fill the bytecode caches, untimed
            profile(src, os.path.join(tmp, f"pyc{i}"), "fat-tree:k=2,levels=2", "dmodk", os.path.join(tmp, "o.json"))
        runs: dict[str, list] = {name: [] for name, _ in sides}
        for _ in range(a.repeat):
            for i, (name, src) in enumerate(sides):
                load = os.getloadavg()[0]
                marks, cpu, peak, makespan = profile(src, os.path.join(tmp, f"pyc{i}"), a.fabric, a.routing,
                                                     "-" if a.no_result else os.path.join(tmp, "out.json"))
                stages, prev = [], 0.0
                for stage, t, mb in marks:
                    stages.append((stage, t - prev, mb))
                    prev = t
                stages.append(("teardown (exit)", cpu - prev, peak))
                runs[name].append((stages, cpu, peak, makespan, load))
        rows = {}
        for name, rs in runs.items():              # per stage: the median CPU s, the largest peak
            stages = [(st, statistics.median(r[0][j][1] for r in rs), max(r[0][j][2] for r in rs))
                      for j, (st, _, _) in enumerate(rs[0][0])]
            rows[name] = (stages, statistics.median(r[1] for r in rs), max(r[2] for r in rs), rs[0][3],
                          rs[0][4])
    print(f"{a.fabric}, routing {a.routing}, one random matching of 1 MiB; CPU s per stage and peak MB at its end "
          f"({os.cpu_count()} cores; median of {a.repeat}; "
          f"{'one OpenBLAS thread' if a.one_blas_thread else 'OpenBLAS threads as the environment has them'})")
    names = list(rows)
    print(f"{'stage':28}" + "".join(f" | {n + ' cpu s':>16} {'MB':>6}" for n in names))
    for j, (stage, _, _) in enumerate(rows[names[0]][0]):
        print(f"{stage:28}" + "".join(f" | {rows[n][0][j][1]:>16.3f} {rows[n][0][j][2]:>6.0f}" for n in names))
    print(f"{'whole process':28}" + "".join(f" | {rows[n][1]:>16.3f} {rows[n][2]:>6.0f}" for n in names))
    for n in names:
        print(f"{n}: makespan {rows[n][3]!r}, load average {rows[n][4]:.1f} when it started")


if __name__ == "__main__":
    main()
