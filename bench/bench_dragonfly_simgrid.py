"""``fabscope simulate --dynamic`` on a dragonfly beside SimGrid's process on the same flows: whole processes.

    python bench/bench_dragonfly_simgrid.py                  # a=8,p=4,h=4,g=33: group shift, random permutation
    python bench/bench_dragonfly_simgrid.py --repeat 9 --pattern shift:k=32
    python bench/bench_dragonfly_simgrid.py --fabric dragonfly:a=4,p=2,h=2,g=9 --pattern shift:k=8
    python bench/bench_dragonfly_simgrid.py --stages --repeat 7    # fabscope's process stage by stage

Each pattern is one round of 1 MiB messages, every rank at once (``--ppn 1``), under the
dragonfly's default routing (``minimal``: local-global-local).  fabscope's side is the command a
user types, a fresh process each run::

    fabscope simulate --fabric F --ppn 1 --pattern P --dynamic

(Python's start, the imports, the fabric, the routing, the program, the compiled engine, the
table).  SimGrid's side is its whole process too: ``/usr/bin/python3 simgrid_peer.py
problem.json`` (Debian's python3-simgrid; a Full zone, one link per directed fabric link, CM02
max-min, latency 0) on the same flows and the same routes, written beforehand from fabscope's own
run of the same command's program at latency 0 (``--latency 0`` is not a CLI option: the CLI pays
the latencies, which change the times but not the work).  The runs alternate, fabscope then SimGrid,
so that both see the same load; printed: the median wall and CPU (user + system) seconds of each
and their ratio ("x": SimGrid's over fabscope's, above 1 where fabscope is faster), fabscope's peak MB,
the largest relative difference of completion times ("agree": SimGrid against fabscope at
latency 0), and the engines alone: fabscope's compiled engine (CPU s, in the problem's process)
and SimGrid's ``Engine.run`` (wall s, as its peer measures it).

``--stages``: where fabscope's process spends its CPU, median of ``--repeat`` fresh processes of
the first pattern: Python's start, ``import numpy`` (one OpenBLAS thread, as ``simulate`` asks),
``rich`` (the console and table the result is printed with), the rest of the modules the command
loads, and the command's own work (``fabscope.cli.main``: parser, fabric, routing, engine, table).

Bytecode is cached for fabscope's processes (as an installed package has it: one untimed run
fills a temporary cache, ``PYTHONPYCACHEPREFIX``), and the compiled engine built before the
timings; Debian's SimGrid modules are compiled already.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_whole import BUILD, ENV, HERE, environment, run_case, simgrid_whole  # noqa: E402

#: the same command's program, run at latency 0 through the API: the problem SimGrid reads, the
#: completion times, and the compiled engine's own CPU time
PROBLEM = """
import json, sys, time
import numpy as np
from fabscope.cli import build_parser
from fabscope.cli.dynamic import _program
from fabscope.dynamic import fast, peer
from fabscope.dynamic.run import run_program_on
from fabscope.fabric.placement import Placement
from fabscope.resolver import resolve_fabric
from fabscope.units import parse_size
prob, ends = sys.argv[1], sys.argv[2]
args = build_parser().parse_args(sys.argv[3:])
fabric = resolve_fabric(args.fabric)
placement = Placement.block(fabric, fabric.n_hosts, 1)
size = parse_size(args.size)
((prog, _),), _ = _program(args, fabric, placement, size)
spent = []
engine = fast.run_program
def timed(*a, **kw):
    t = time.process_time()
    try:
        return engine(*a, **kw)
    finally:
        spent.append(time.process_time() - t)
fast.run_program = timed
t = time.process_time()
run = run_program_on(fabric, placement, prog, args.routing, seed=args.seed, latency=False, engine="c")
whole = time.process_time() - t
np.save(ends, run.outcome.msg_end)
with open(prob, "w") as fh:
    json.dump(peer.problem(run.paths, run.msg_path, prog.src, prog.dst, prog.bytes, placement.host), fh)
print(json.dumps({"engine": spent[0], "routes and engine": whole, "messages": int(prog.n_messages)}))
"""


#: ``--stages``: the command's CPU seconds by stage, in a fresh process (one OpenBLAS thread, as simulate sets)
STAGES = """
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
T = [time.process_time()]
import numpy, numpy.random  # noqa: E401
T.append(time.process_time())
import rich.console, rich.table, rich.text  # noqa: E401
T.append(time.process_time())
for m in sys.argv[1].split():
    __import__(m)
T.append(time.process_time())
sys.argv = ["fabscope", *sys.argv[2:]]
real = os._exit
def leave(code):
    T.append(time.process_time())
    sys.stderr.write(json.dumps(T) + "\\n")
    real(code)
os._exit = leave
from fabscope.cli import main
leave(main())
"""

#: ``--stages``: the modules the command loads (printed by a first, untimed run)
MODULES = """
import os, sys
sys.argv = ["fabscope", *sys.argv[1:]]
real = os._exit
def leave(code):
    sys.stderr.write(" ".join(sorted(m for m in sys.modules if m.startswith("fabscope"))) + "\\n")
    real(code)
os._exit = leave
from fabscope.cli import main
leave(main())
"""


def stages(cli: list[str], here: str, repeat: int) -> None:
    """``--stages``: median CPU s of each stage of the command's process."""
    import subprocess

    env = ENV[here]
    got = subprocess.run([sys.executable, "-c", MODULES, *cli[2:]], env=env, capture_output=True, text=True)
    mods = got.stderr.strip().splitlines()[-1]
    rows = []
    for _ in range(repeat):
        got = subprocess.run([sys.executable, "-c", STAGES, mods, *cli[2:]], env=env, capture_output=True, text=True)
        t = json.loads(got.stderr.strip().splitlines()[-1])
        rows.append([t[0], t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[4]])
    names = ("Python's start", "import numpy, numpy.random", "import rich (console, table)",
             "fabscope's modules and the rest they load", "the command's work (cli.main)", "in all")
    print(f"fabscope's process by stage, CPU s, median of {repeat}: {' '.join(cli[2:])}")
    for i, name in enumerate(names):
        print(f"  {name:44} {statistics.median(r[i] for r in rows):.3f}")


def simgrid_run(prob: str) -> tuple[float, float, float]:
    """Wall s and CPU s of SimGrid's whole process, and its engine's own run (wall s)."""
    got = simgrid_whole(prob)
    if got is None:
        raise SystemExit("SimGrid is not installed (Debian's python3-simgrid, for /usr/bin/python3)")
    with open(prob + ".out") as fh:
        return got[0], got[1], float(json.load(fh)["seconds"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="dragonfly:a=8,p=4,h=4,g=33")
    ap.add_argument("--pattern", action="append", help="default: shift:k=a*p (the group shift) and permutation")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--size", default="1MiB")
    ap.add_argument("--stages", action="store_true", help="fabscope's process by stage instead (first pattern)")
    a = ap.parse_args()
    here = os.path.normpath(HERE)
    from fabscope.resolver import resolve_fabric

    params = resolve_fabric(a.fabric).params
    patterns = a.pattern or [f"shift:k={int(params['a']) * int(params['p'])}", "permutation"]
    caches = tempfile.TemporaryDirectory(prefix="fabscope-bench-pyc-")
    ENV[here] = environment(here, caches.name)
    run_case(["-c", BUILD], here)
    if a.stages:
        cli = ["-m", "fabscope.cli", "simulate", "--fabric", a.fabric, "--ppn", "1", "--pattern", patterns[0],
               "--size", a.size, "--dynamic"]
        run_case(cli, here)                                # untimed: fills the bytecode cache
        stages(cli, here, a.repeat)
        return
    print(f"{a.fabric}, --ppn 1, {a.size} messages, one round; medians of {a.repeat} whole processes each, "
          f"alternately (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print("| pattern | messages | fabscope wall s | cpu s | MB | SimGrid wall s | cpu s | x wall | x cpu "
          "| agree | fabscope engine cpu s | routes + engine | SimGrid engine s | load |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for pattern in patterns:
        load0 = os.getloadavg()[0]
        r = compare(a.fabric, pattern, a.size, a.repeat, here)
        print(f"| {pattern} | {r['messages']:,} | {r['wall']:.3f} | {r['cpu']:.3f} | {r['mb']:.0f} | "
              f"{r['sg wall']:.3f} | {r['sg cpu']:.3f} | {r['sg wall'] / r['wall']:.2f} | {r['sg cpu'] / r['cpu']:.2f} | "
              f"{r['agree']:.0e} | {r['engine']:.4f} | {r['routes and engine']:.4f} | {r['sg engine']:.4f} | "
              f"{load0:.1f}-{os.getloadavg()[0]:.1f} |", flush=True)


def compare(fabric: str, pattern: str, size: str, repeat: int, here: str) -> dict:
    """fabscope's and SimGrid's whole processes on one pattern, alternately ``repeat`` times each:
    medians (wall, cpu; SimGrid's too, and its engine's run), fabscope's peak MB, the agreement
    of completion times, and fabscope's engine alone (ENV[here] set up, the engine built)."""
    cli = ["-m", "fabscope.cli", "simulate", "--fabric", fabric, "--ppn", "1", "--pattern", pattern,
           "--size", size, "--dynamic"]
    with tempfile.TemporaryDirectory(prefix="fabscope-bench-") as tmp:
        prob, ends = os.path.join(tmp, "problem.json"), os.path.join(tmp, "ends.npy")
        out = run_case(["-c", PROBLEM, prob, ends, *cli[2:]], here)[3]
        info = json.loads(out.strip().splitlines()[-1])
        run_case(cli, here)                            # untimed: fills the bytecode cache
        ours, theirs, peak = [], [], 0.0
        for _ in range(repeat):
            wall, cpu, mb, _ = run_case(cli, here)
            ours.append((wall, cpu))
            peak = max(peak, mb)
            theirs.append(simgrid_run(prob))
        with open(prob + ".out") as fh:
            finish = np.array(json.load(fh)["finish"], dtype=float)
        agree = float(np.max(np.abs(finish - np.load(ends)) / finish))
    med = lambda rows, i: statistics.median(x[i] for x in rows)  # noqa: E731
    return {**info, "wall": med(ours, 0), "cpu": med(ours, 1), "mb": peak, "sg wall": med(theirs, 0),
            "sg cpu": med(theirs, 1), "sg engine": med(theirs, 2), "agree": agree}

if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.1f} s wall in all")
