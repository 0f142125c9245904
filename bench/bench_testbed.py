"""Testbed figures: time to bring one up and down, and measured / modeled per class.

Needs root.  Runs, in order:

1. the forwarding rate of this machine: a 4-host tree with unshaped (40 Gbit) links,
   two pairs of the real benchmark across the spines (CPU-bound: what the cores move
   through veths), against the per-core budget ``up`` plans with;
2. for fat trees of growing size (k=4: 16 hosts, then k=6, 8, ...) at ``--rate``:
   ``up`` and ``down`` times, random pairs + all leaf pairs measured with the real
   benchmark, ``compare`` per class, the whole machine's CPU busy share and the
   shapers' drops, until a size is not link-bound any more (a class more than 15% off
   the model) or ``up`` refuses it as too big.

    sudo .venv/bin/python bench/bench_testbed.py [--rate 40Mbit] [--sizes SPEC ...]

3. with ``--shapes``, instead: on fabrics the tests do not use (a 3-level tree, a 2:1
   oversubscribed tree, a torus, a fabric imported with OpenSM's tables), random pairs
   and leaf pairs measured, then ``fabscope compare`` (as it is) of each: measured vs
   modeled per class, the worst pair, and whether the run was link-bound.

    sudo .venv/bin/python bench/bench_testbed.py --shapes [--rate auto:40Mbit] [--repeat 3] [--fifo]

   ``--fifo``: every emulated link a tbf alone, serving packets first come, first served, instead of round-robin among the hosts whose routes cross it.

   ``--repeat N`` measures each test N times, the same pairs in the same rounds, and compares
   them together: the classes pool N times the measurements, and a pair's figure is the
   geometric mean of its N ratios (a run of 2-3 iterations is one or two TCP exchanges per
   pair: the same pair measures 0.81-1.28 of itself from one run to the next).  The worst
   single measurement is printed too.

Figures are taken on whatever else the machine is running; say so when quoting them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time

import numpy as np

from fabscope.cli import main
from fabscope.result import Result
from fabscope.testbed import counters, system
from fabscope.testbed.lifecycle import CORE_RATE, down, up
from fabscope.testbed.names import TestbedError, parse_rate


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def measure(name: str, tmp: str, test: str, *opts: str) -> str:
    out = os.path.join(tmp, f"{name}-{test}.jsonl")
    if quiet(["measure", "--testbed", name, "--timeout", "600", test, *opts, "--out", out]) != 0:
        raise SystemExit(f"measure {test} on {name} failed")
    return out


def forwarding_rate(tmp: str) -> None:
    name = "bfwd"
    os.environ["FABSCOPE_TESTBED_CORE_RATE"] = "1e15"
    try:
        up(name, "fat-tree:k=2,levels=2", parse_rate("40Gbit"), calibrate=False)
        out = measure(name, tmp, "random-pairs", "--size", "8MiB", "--iterations", "10")
        res = os.path.join(tmp, "fwd.json")
        quiet(["compare", out, "--fabric", name, "-o", res])
        r = Result.read_json(res)
        bw = r.pairs["measured"]
        cores = os.cpu_count() or 1
        hops = 4  # host -> leaf -> spine -> leaf -> host
        print(f"unshaped: {len(bw)} pairs of ping-pong, {bw.mean() / 1e6:.0f} MB/s each, "
              f"{bw.sum() * hops / 1e6:.0f} MB/s x hop in all on {cores} cores "
              f"({bw.sum() * hops / cores / 1e6:.0f} per core); up plans with {CORE_RATE / 1e6:.0f} per core")
    finally:
        os.environ.pop("FABSCOPE_TESTBED_CORE_RATE", None)
        down(name)


SIZES = ["xgft:m=4x4,w=1x4", "xgft:m=4x6,w=1x4", "xgft:m=4x8,w=1x4", "xgft:m=4x12,w=1x4", "xgft:m=4x16,w=1x4"]


def one_size(i: int, spec: str, rate: float, tmp: str) -> tuple[bool, int]:
    name = f"b{i}"
    t0 = time.monotonic()
    try:
        # --ignore-budget: past both the fixed budget and the calibration at up (to check them)
        st = up(name, spec, rate, calibrate="FABSCOPE_TESTBED_CORE_RATE" not in os.environ)
    except TestbedError as err:
        print(f"{spec}: {err}")
        return False, 0
    f = st.base_fabric()
    hosts = f.n_hosts
    leaf = str(int(np.bincount(f.groups["leaf"]).max())) if "leaf" in f.groups else "1"
    t_up = time.monotonic() - t0
    try:
        c0, cpu0, t1 = counters.snapshot(name), counters.cpu_stat(), time.monotonic()
        rp = measure(name, tmp, "random-pairs", "--size", "512KiB", "--iterations", "3", "--rounds", "2")
        lp = measure(name, tmp, "leaf-pairs", "--size", "512KiB", "--iterations", "2", "--leaf-size", leaf)
        t_meas = time.monotonic() - t1
        d, busy = counters.snapshot(name) - c0, counters.cpu_split(cpu0, counters.cpu_stat())
        res = os.path.join(tmp, f"{name}.json")
        quiet(["compare", rp, lp, "--fabric", name, "-o", res])
        classes = Result.read_json(res).extra["compare"]["classes"]
    finally:
        t2 = time.monotonic()
        down(name)
        t_down = time.monotonic() - t2
    print(f"{spec}: {hosts} hosts, up {t_up:.1f} s, down {t_down:.1f} s, measuring {t_meas:.0f} s; "
          f"shapers: {int(d.drops.sum())} of {int(d.packets.sum())} packets dropped, "
          f"{int(d.overlimits.sum())} held back; CPU (whole machine) {busy}")
    ok = True
    for c in classes:
        print(f"    {c['label']:<12} {c['pairs']:>4} pairs  measured {c['measured_avg'] / 1e6:6.2f}  "
              f"modeled {c['modeled_avg'] / 1e6:6.2f} MB/s  ratio {c['ratio']:.2f}")
        ok &= abs(c["ratio"] - 1) <= 0.15
    return ok, hosts


#: (label, fabric spec or "opensm", hosts per leaf for leaf-pairs)
SHAPES = [("3-level tree", "xgft:m=4x2x2,w=1x2x2", 4), ("2:1 oversubscribed tree", "fat-tree:k=4,levels=2,up=2", 4),
          ("torus 4x4 (DOR)", "torus:4x4", 4), ("OpenSM tables (fabric example)", "opensm", 4)]


def opensm_fabric(tmp: str) -> str:
    """The sample fabric of 'fabscope fabric example' (ibsim's OpenSM output), imported with its tables."""
    d = os.path.join(tmp, "samples")
    out = os.path.join(tmp, "opensm.json")
    if quiet(["fabric", "example", d]) != 0 or quiet(["fabric", "import", "--ibnetdiscover",
                                                      os.path.join(d, "ibnetdiscover.txt"), "--lfts",
                                                      os.path.join(d, "opensm-lfts.dump"), "-o", out]) != 0:
        raise SystemExit("cannot import the sample fabric")
    return out


def compare_classes(name: str, tmp: str, tag: str, *files: str, extra: tuple[str, ...] = ()) -> tuple[list[dict], dict]:
    """``fabscope compare FILES --fabric NAME`` (the default model of this branch): classes and the worst pair
    (by the geometric mean of its ratios where the files measured it several times; the worst single
    measurement beside it)."""
    res = os.path.join(tmp, f"{name}-{tag}.json")
    if quiet(["compare", *files, "--fabric", name, *extra, "-o", res]) != 0:
        raise SystemExit(f"compare {tag} on {name} failed")
    r = Result.read_json(res)
    p = r.pairs
    ratio = np.asarray(p["ratio"], float)
    local = [int(k[2]) for k in r.meta["concurrent_sets"]]     # (file, test, round in that file) per set
    key = [f"{a} -> {b} round {local[int(c)]}" for a, b, c in
           zip(p["src_host"].tolist(), p["dst_host"].tolist(), np.asarray(p["scenario"]))]
    groups: dict[str, list[int]] = {}
    for i, k in enumerate(key):
        groups.setdefault(k, []).append(i)
    mean = {k: float(np.exp(np.mean(np.log(ratio[ix])))) for k, ix in groups.items()}
    wk = max(mean, key=lambda k: abs(np.log(mean[k])))
    ix = groups[wk]
    one = int(np.argmax(np.abs(np.log(ratio))))
    worst = {"ratio": mean[wk], "pair": wk, "runs": len(ix),
             "measured": float(np.mean(np.asarray(p["measured"], float)[ix])),
             "modeled": float(np.mean(np.asarray(p["modeled"], float)[ix])),
             "single": float(ratio[one]), "model": r.meta.get("model") or r.meta.get("kind")}
    return r.extra["compare"]["classes"], worst



def one_shape(i: int, label: str, spec: str, leaf: int, rate: float | None, tmp: str, cap: float,
              variants: tuple[str, ...] = (), repeat: int = 1, fair: bool = True) -> None:
    from fabscope.testbed.linkbound import records

    name = f"ac{i + 1}"  # ac1..ac9: this bench's names, apart from the tests' and other benches'
    if spec == "opensm":
        spec = opensm_fabric(tmp)
    try:
        st = up(name, spec, rate, max_rate=cap, fair=fair)
    except TestbedError as err:
        print(f"{label}: {err}")
        return
    try:
        f = st.base_fabric()
        print(f"{label}: {os.path.basename(st.spec)}, {f.n_hosts} hosts, {f.n_switches} switches, routing "
              f"{st.routing}, {st.rate * 8 / 1e6:g}Mbit; this machine forwarded "
              f"{st.calibration.get('forwarding', 0) / 1e6:.0f} MB/s x hop at up; links shared "
              f"{'round-robin per source host' if fair else 'first come, first served (--fifo)'}")
        opts = {"random-pairs": ("--size", "512KiB", "--iterations", "3", "--rounds", "3", "--seed", str(7 + i)),
                "leaf-pairs": ("--size", "512KiB", "--iterations", "2", "--leaf-size", str(leaf))}
        runs = []
        for test, o in opts.items():
            paths = []
            for k in range(repeat):
                path = measure(name, tmp, test, *o)
                final = path.replace(".jsonl", f"-{k}.jsonl")
                os.replace(path, final)
                paths.append(final)
            runs.append((test, paths))
        for (test, paths), extra in ((r, v) for r in runs for v in ("", *variants)):
            classes, worst = compare_classes(name, tmp, test, *paths, extra=tuple(extra.split()))
            recs = [(records(path) or [{}])[0] for path in paths]
            bound = sum(bool(r.get("link_bound")) for r in recs)
            print(f"  {test}{' compare ' + extra if extra else ''}: "
                  f"{bound} of {len(recs)} runs link-bound ({'; '.join(sorted({str(r.get('why')) for r in recs}))})")
            for c in classes:
                print(f"    {c['label']:<12} {c['pairs']:>4} pairs  measured {c['measured_avg'] / 1e6:6.2f}  "
                      f"modeled {c['modeled_avg'] / 1e6:6.2f} MB/s  ratio {c['ratio']:.2f} "
                      f"(pairs {c['ratio_min']:.2f}-{c['ratio_max']:.2f})")
            print(f"    worst pair {worst['pair']}: measured {worst['measured'] / 1e6:.2f}, "
                  f"modeled {worst['modeled'] / 1e6:.2f} MB/s, ratio {worst['ratio']:.2f}"
                  + (f" (geometric mean of {worst['runs']} runs; worst single measurement {worst['single']:.2f})"
                     if worst["runs"] > 1 else ""))
    finally:
        down(name)


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="40Mbit")
    ap.add_argument("--sizes", nargs="+", default=SIZES, help="fabric specs to try, in order")
    ap.add_argument("--skip-forwarding", action="store_true")
    ap.add_argument("--shapes", action="store_true", help="measured vs modeled on shapes the tests do not use")
    ap.add_argument("--compare", action="append", default=[], metavar="OPTIONS",
                    help="with --shapes: also compare with these options (e.g. '--model static'); repeatable")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="with --shapes: measure each test N times (the same pairs and rounds) and compare them together")
    ap.add_argument("--only", metavar="WORD", help="with --shapes: only the shapes whose label or spec contains "
                                                   "WORD (e.g. torus: to redo a run that was not link-bound)")
    ap.add_argument("--fifo", action="store_true", help="with --shapes: links a tbf alone, first come first "
                                                        "served, not shared round-robin")
    ap.add_argument("--ignore-budget", action="store_true", help="let up run sizes its CPU budget refuses "
                                                                 "(to check the budget)")
    a = ap.parse_args()
    why = system.unavailable_reason()
    if why:
        print(f"bench_testbed: {why}", file=sys.stderr)
        return 1
    auto = a.rate.startswith("auto:")  # the rate this machine forwards now, at most the one given
    rate = parse_rate(a.rate[5:] if auto else a.rate)
    print(f"fabscope testbed bench, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start, "
          f"links shaped to {a.rate}")
    with tempfile.TemporaryDirectory(prefix="bench-testbed-") as tmp:
        os.environ["FABSCOPE_TESTBED_DIR"] = os.path.join(tmp, "state")
        if a.shapes:
            for i, (label, spec, leaf) in enumerate(SHAPES):
                if a.only and a.only not in label and a.only not in spec:
                    continue
                one_shape(i, label, spec, leaf, None if auto else rate, tmp, rate, tuple(a.compare), a.repeat,
                          fair=not a.fifo)
            return 0
        if not a.skip_forwarding:
            forwarding_rate(tmp)
        if a.ignore_budget:
            os.environ["FABSCOPE_TESTBED_CORE_RATE"] = "1e15"
        largest = None
        for i, spec in enumerate(a.sizes):
            ok, hosts = one_size(i, spec, rate, tmp)
            if not ok:
                print(f"{spec}: not link-bound (or refused); the largest link-bound size here: "
                      f"{largest if largest else 'none'} hosts")
                break
            largest = hosts
        else:
            print(f"all sizes link-bound; largest tried: {largest} hosts")
    return 0


if __name__ == "__main__":
    sys.exit(run())
