"""Applications on emulated fabrics: each kernel under block, random and `fabscope map` placements.

Needs root (the testbed).  For each fabric shape: `fabscope testbed up` (at `--rate`, default
`auto:40Mbit`: 40 Mbit or what this machine forwards now), then for each application kernel of
fabscope-bench:

1. a run under block: `fabscope measure KERNEL --testbed NAME --hostfile NODES`, rank i on the
   i-th host of the job's node list (the testbed's hosts in order, or `--order shuffled`: in a
   seeded random order, as a fragmented allocation gives them);
2. `fabscope map --fabric NAME --nodes NODES --comm BLOCK-RUN` (topo, the run's own traffic) and
   `--algorithm random --seed 1`, each run with `measure --testbed --hostfile`;
3. `fabscope compare` of the three runs on the testbed's fabric: measured (median of the timed
   iterations) and predicted time per iteration.

Printed per shape and kernel: measured and predicted ms per iteration of each placement,
measured/predicted, whether each run recorded itself link-bound, and the speed-up of map's
placement over block, measured and predicted (block / map).

    sudo .venv/bin/python bench/bench_apps.py                       # the 16-host shapes
    sudo .venv/bin/python bench/bench_apps.py --shapes 64 --rate auto:30Mbit   # the 64-host shapes (40 Mbit
                                                                   # is past up's budget for 64 hosts on 2 cores)
    sudo .venv/bin/python bench/bench_apps.py --shapes tree16-up1 --order shuffled

Figures are taken on whatever else the machine runs (the load average is printed); say so
when quoting them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from fabscope.testbed import linkbound, state
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.names import parse_rate

#: name: (fabric, what it is)
SHAPES = {
    "tree16-up1": ("fat-tree:k=4,levels=2,up=1", "16 hosts, 2-level tree, 4 leaves of 4, one up-link per leaf (4:1)"),
    "tree16": ("fat-tree:k=4,levels=2", "16 hosts, 2-level tree, 4 leaves of 4, 4 up-links per leaf (1:1)"),
    "tree16-3l": ("xgft:m=4x2x2,w=1x2x2", "16 hosts, 3-level tree, 4 leaves of 4 in 2 pods"),
    "tree64-up2": ("xgft:m=8x8,w=1x2", "64 hosts, 2-level tree, 8 leaves of 8, two up-links per leaf (4:1)"),
    "tree64-3l": ("xgft:m=4x4x4,w=1x2x2", "64 hosts, 3-level tree, 16 leaves of 4 in 4 pods"),
}
GROUPS = {"16": ["tree16-up1", "tree16", "tree16-3l"], "64": ["tree64-up2", "tree64-3l"]}
#: kernel: options (sizes per message: a face, a block, the vector)
KERNELS = {
    "halo2d": ["--size", "64KiB", "--periodic", "no"],
    "halo3d": ["--size", "32KiB", "--periodic", "no"],
    "fft-transpose": ["--size", "32KiB"],
    "allreduce-loop": ["--size", "256KiB"],
}
PLACEMENTS = ("block", "random", "map")


def fabscope(*args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "fabscope.cli", *args], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise SystemExit(f"fabscope {' '.join(args)} failed:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def run_kernel(name: str, kernel: str, nodes: str, work: str, loop: list[str]) -> dict[str, dict]:
    """The three runs of ``kernel`` and their measured / predicted figures, from ``compare --json``."""
    files = {p: os.path.join(work, f"{kernel}-{p}.jsonl") for p in PLACEMENTS}
    opts = [*KERNELS[kernel], *loop]
    fabscope("measure", "--testbed", name, "--hostfile", nodes, "--timeout", "900", kernel, *opts,
             "--out", files["block"])
    for p, alg in (("random", ["--algorithm", "random", "--seed", "1"]), ("map", ["--algorithm", "topo"])):
        hosts = os.path.join(work, f"{kernel}-{p}.hosts")
        fabscope("map", "--fabric", name, "--nodes", nodes, "--comm", files["block"], *alg, "-o", hosts)
        fabscope("measure", "--testbed", name, "--hostfile", hosts, "--timeout", "900", kernel, *opts,
                 "--out", files[p])
    out = os.path.join(work, f"{kernel}-compare.json")
    fabscope("compare", *files.values(), "--fabric", name, "--json", out)
    with open(out) as fh:
        rows = {r["path"]: r for r in json.load(fh)["rows"]}
    res = {}
    for p, f in files.items():
        rec = linkbound.records(f)
        res[p] = {"measured": rows[f]["measured_median"], "predicted": rows[f]["predicted"],
                  "link_bound": bool(rec and rec[-1]["link_bound"]),
                  "drops": rec[-1]["drops"] / max(rec[-1]["packets"], 1) if rec else float("nan")}
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", nargs="+", default=["16"],
                    help=f"shapes or groups ({', '.join(GROUPS)}; shapes: {', '.join(SHAPES)}); default: 16")
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    ap.add_argument("--rate", default="auto:40Mbit", help="testbed rate (default auto:40Mbit)")
    ap.add_argument("--order", choices=("inorder", "shuffled"), default="inorder",
                    help="the job's node list: the testbed's hosts in order, or shuffled (seed 21)")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--name", default="ap3", help="testbed name (default ap3)")
    a = ap.parse_args()
    shapes = [s for x in a.shapes for s in GROUPS.get(x, [x])]
    for s in shapes:
        if s not in SHAPES:
            raise SystemExit(f"unknown shape {s!r}")
    text = a.rate.strip().lower()
    rate = None if text.startswith("auto") else parse_rate(a.rate)
    cap = parse_rate(text[5:]) if text.startswith("auto:") else parse_rate("100Mbit")
    loop = ["--iterations", str(a.iterations), "--warmup", "1"]
    print(f"# bench_apps: order {a.order}, {a.iterations} iterations after 1 warm-up; median per run")
    print("shape       rate    kernel          placement  meas ms  pred ms  meas/pred  link-bound drops | "
          "map speed-up over block: measured predicted")
    for s in shapes:
        spec, what = SHAPES[s]
        t0 = time.monotonic()
        down(a.name)
        st = up(a.name, spec, rate, max_rate=cap)
        hosts = list(state.load_fabric(a.name).host_names)
        if a.order == "shuffled":
            random.Random(21).shuffle(hosts)
        work = tempfile.mkdtemp(prefix="fabscope-bench-apps-")
        nodes = os.path.join(work, "nodes.txt")
        with open(nodes, "w") as fh:
            fh.write("".join(h + "\n" for h in hosts))
        print(f"# {s}: {spec}: {what}; {st.rate * 8 / 1e6:g} Mbit; load average {os.getloadavg()[0]:.1f} at up")
        try:
            for k in a.kernels:
                r = run_kernel(a.name, k, nodes, work, loop)
                for p in PLACEMENTS:
                    x = r[p]
                    tail = ""
                    if p == "map":
                        tail = (f" | {r['block']['measured'] / x['measured']:.2f}x "
                                f"{r['block']['predicted'] / x['predicted']:.2f}x")
                    print(f"{s:<11} {st.rate * 8 / 1e6:>4g}Mb  {k:<15} {p:<9} {x['measured'] * 1e3:>8.1f} "
                          f"{x['predicted'] * 1e3:>8.1f} {x['measured'] / x['predicted']:>9.2f}  "
                          f"{'yes' if x['link_bound'] else 'NO':<10} {100 * x['drops']:4.1f}%{tail}", flush=True)
        finally:
            down(a.name)
        print(f"# {s}: {time.monotonic() - t0:.0f} s, load average {os.getloadavg()[0]:.1f} at the end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
