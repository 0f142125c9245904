"""The benchmarks a user asks about first, run quickly, in one table: fabscope beside its peer.

    .venv/bin/python bench/run_all.py              # every case (about a minute; SimGrid's torus most of it)
    .venv/bin/python bench/run_all.py --list       # the cases and what each measures
    .venv/bin/python bench/run_all.py --only dynamic-torus
    make bench                                     # the same as the first line

Each row: fabscope's figure, its peer's in the same invocation (or the target where no peer runs
here), the ratio peer / fabscope (above 1: fabscope faster or smaller), and the command that prints
the case in full with its own options.  Times are wall seconds of the work alone (imports and the
compiled engines' builds done first, outside the timings), CPU seconds beside; on a loaded machine
compare the CPU.  docs/benchmarks.md says what each full bench measures, with its figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Callable, NamedTuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)                       # the full benches' helpers: one definition of each case


class Row(NamedTuple):
    figure: float
    cpu: float
    peer: float | None        # the peer's figure in the same unit, or None
    peer_name: str            # who the peer is, or the target
    unit: str


def _timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def flow_model(spec: str, pattern: str, routing: str | None, ppn: int, target: float) -> Row:
    from bench_flow_model import run_case

    run_case(spec, pattern, routing, ppn)                     # imports and first-use set-up outside the timing
    r = run_case(spec, pattern, routing, ppn)
    return Row(r["model_s"], float("nan"), None, f"target {target:g} s (routing + max-min solve, wall)", "s")


def dynamic_torus() -> Row:
    """A random matching of 1 MiB on a 16x16x16 torus under DOR, in time: fabscope's engine, then
    SimGrid's on the same flows and routes (completion times checked equal)."""
    from bench_dynamic import matching

    from fabscope.dynamic import fast, peer
    from fabscope.dynamic.run import run_program_on
    from fabscope.fabric import Placement
    from fabscope.fabric.io import load_fabric

    import fabscope.routing.dor  # noqa: F401  (imports are not run time)

    fast.available()
    f = load_fabric("torus:16x16x16")
    prog = matching(f.n_hosts)
    pl = Placement.block(f, prog.n_ranks, ppn=1)
    run, wall, cpu = _timed(lambda: run_program_on(f, pl, prog, "dor", latency=False))
    why = peer.why_unavailable()
    if why:
        return Row(wall, cpu, None, f"SimGrid: {why}", "s")
    prob = peer.problem(run.paths, run.msg_path, prog.src, prog.dst, prog.bytes, pl.host)
    fin, secs = peer.run(prob, timeout=600)
    agree = float(np.max(np.abs(fin - run.outcome.msg_end) / fin))
    return Row(wall, cpu, secs, f"SimGrid {peer.version()} (times agree to {agree:.0e})", "s")


def dragonfly_whole() -> Row:
    """``fabscope simulate --dynamic`` of the group shift on dragonfly:a=8,p=4,h=4,g=33 as a whole
    process, against SimGrid's whole process on the same flows and routes (CPU, medians of 3)."""
    import bench_dragonfly_simgrid as dg
    from bench_whole import BUILD, ENV, environment, run_case

    from fabscope.dynamic import peer

    here = os.path.normpath(os.path.join(HERE, "..", "src"))
    why = peer.why_unavailable()
    if why:
        return Row(float("nan"), float("nan"), None, f"SimGrid: {why}", "s")
    with tempfile.TemporaryDirectory(prefix="fabscope-bench-pyc-") as cache:
        ENV[here] = environment(here, cache)
        run_case(["-c", BUILD], here)
        r = dg.compare("dragonfly:a=8,p=4,h=4,g=33", "shift:k=32", "1MiB", 3, here)
    return Row(r["cpu"], r["cpu"], r["sg cpu"], f"SimGrid's whole process, CPU s (times agree to {r['agree']:.0e}; "
               f"engines alone {r['engine']:.4f} against {r['sg engine']:.3f} s)", "s")


def result_write() -> Row:
    """The columns of a 16x16x16 torus result written by the compiled column writer, and by the
    reference (``json.dumps`` of each column), which writes the same bytes."""
    from fabscope import jsoncolumns
    from fabscope.fabric import Placement
    from fabscope.fabric.io import load_fabric
    from fabscope.model.simulate import simulate
    from fabscope.traffic.spec import make_traffic

    f = load_fabric("torus:16x16x16")
    p = Placement.block(f, f.n_hosts, 1)
    r = simulate(f, p, make_traffic("permutation", f, p, 2**20, seed=1), "dor")
    cols = [np.asarray(v) for v in (*r.pairs.values(), *r.links.values()) if np.asarray(v).ndim == 1]
    if not jsoncolumns.available():
        return Row(float("nan"), float("nan"), None, f"no compiled writer: {jsoncolumns.why_not()}", "s")

    def write(compiled: bool) -> bytes:
        with tempfile.TemporaryFile() as fh:
            for c in cols:
                jsoncolumns.write_column(fh, c, compiled=compiled)
            fh.seek(0)
            return fh.read()

    write(True)
    mine, wall, cpu = _timed(lambda: write(True))
    ref, ref_wall, _ = _timed(lambda: write(False))
    same = "same bytes" if mine == ref else "BYTES DIFFER"
    return Row(wall, cpu, ref_wall, f"json.dumps reference ({same})", "s")


def hostile_file() -> Row:
    """16 MB of random bytes given as an ibnetdiscover file: refused at line 1, against reading the
    file whole and splitting it (what a reader without a bound does first)."""
    from fabscope.errors import FabscopeError
    from fabscope.fabric.importers.ibnetdiscover import read_ibnetdiscover

    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as fh:
        fh.write(np.random.default_rng(0).bytes(16 << 20))
        path = fh.name
    try:
        def refuse():
            try:
                read_ibnetdiscover(path)
            except FabscopeError:
                return
            raise AssertionError("random bytes were read as a fabric")

        _, wall, cpu = _timed(refuse)
        _, peer, _ = _timed(lambda: open(path, "rb").read().decode("utf-8", "replace").splitlines())
    finally:
        os.unlink(path)
    return Row(wall, cpu, peer, "read whole and split", "s")


def maxmin_solve() -> Row:
    """One max-min solve of the diagnosis's flow model at 2,197 hosts and 109,800 pairs (1 to 4 cables
    cut, as a fit's trial): ``maxmin.c`` against the numpy reference on the same prepared matrix."""
    from bench_maxmin import compare

    r = compare(solves=3)
    same = "same bits" if r["same_bits"] else f"RATES DIFFER by {r['diff']:.0e}"
    if not r["compiled"]:
        return Row(r["c_wall"] / 3, r["c_cpu"] / 3, None, "maxmin.c not built: both runs are numpy", "s")
    return Row(r["c_wall"] / 3, r["c_cpu"] / 3, r["ref_wall"] / 3, f"the numpy reference ({same})", "s")


def help_startup() -> Row:
    """``fabscope --help`` as a process (Python's start-up included), against ``python -c pass``."""
    import subprocess

    src = os.path.join(HERE, "..", "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def proc(argv):
        return min(_timed(lambda: subprocess.run(argv, env=env, capture_output=True, check=True))[1]
                   for _ in range(3))

    mine = proc([sys.executable, "-m", "fabscope.cli", "--help"])
    base = proc([sys.executable, "-c", "pass"])
    return Row(mine, float("nan"), base, "python -c pass (the floor; target 0.3 s)", "s")


#: name -> (what, function, the command that prints the case in full)
CASES: dict[str, tuple[str, Callable[[], Row], str]] = {
    "flow-model-itasca": ("flow model: Itasca, random pairs at 8 ranks per node, min-hop",
                          lambda: flow_model("itasca", "random-pairs", None, 8, 0.3),
                          "python bench/bench_flow_model.py"),
    "flow-model-torus": ("flow model: 16x16x16 torus, random matching, DOR",
                         lambda: flow_model("torus:16x16x16", "permutation", "dor", 1, 2.0),
                         "python bench/bench_flow_model.py"),
    "dynamic-torus": ("in time: 16x16x16 torus, random matching of 1 MiB", dynamic_torus,
                      "python bench/bench_dynamic.py --case torus"),
    "dragonfly-whole": ("in time: dragonfly a=8 group shift, fabscope simulate --dynamic as a whole process, CPU",
                        dragonfly_whole, "python bench/bench_dragonfly_simgrid.py"),
    "result-write": ("writing a torus result's columns", result_write,
                     "python bench/bench_result_write.py"),
    "hostile-file": ("16 MB of random bytes as an ibnetdiscover file", hostile_file,
                     "python bench/bench_junk_input.py"),
    "maxmin-diagnose": ("one max-min solve of the diagnosis's flow model, 109,800 pairs on 2,197 hosts",
                        maxmin_solve, "python bench/bench_maxmin.py"),
    "help": ("fabscope --help, a whole process", help_startup, "python bench/bench_whole.py --case help"),
}


def table(rows: list[tuple[str, Row, str]]) -> list[str]:
    """The one table: case, fabscope (CPU), peer, ratio, command.

    >>> print("\\n".join(table([("x", Row(0.5, 0.4, 2.0, "peer", "s"), "python bench/x.py")])))
    case                    fabscope (cpu)       peer                   ratio  command
    x                       0.500 s (0.400)      2.000 s                4.00x  python bench/x.py
                            peer: peer
    """
    out = [f"{'case':<23} {'fabscope (cpu)':<20} {'peer':<18} {'ratio':>9}  command"]
    for name, r, cmd in rows:
        cpu = f" ({r.cpu:.3f})" if r.cpu == r.cpu else ""
        peer = f"{r.peer:.3f} {r.unit}" if r.peer is not None else "-"
        ratio = f"{r.peer / r.figure:.2f}x" if r.peer is not None and r.figure > 0 else "-"
        out.append(f"{name:<23} {f'{r.figure:.3f} {r.unit}{cpu}':<20} {peer:<18} {ratio:>9}  {cmd}")
        out.append(f"{'':<23} peer: {r.peer_name}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="name the cases and what each measures")
    ap.add_argument("--only", action="append", choices=sorted(CASES), help="run this case (repeatable)")
    a = ap.parse_args()
    if a.list:
        for name, (what, _, cmd) in CASES.items():
            print(f"{name:<20} {what}  [{cmd}]")
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    rows = []
    for name, (what, fn, cmd) in CASES.items():
        if a.only and name not in a.only:
            continue
        rows.append((name, fn(), cmd))
        print(f"  {name}: {what}: done", file=sys.stderr, flush=True)
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
