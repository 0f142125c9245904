"""Two cables degraded at once on the emulated fabric: named by the diagnosis, kept by the confirmation round?

Per trial, on a testbed of ``--fabric`` shaped at up to ``--rate``: two leaf-to-spine cables on different
leaves, drawn by the trial's seed (``numpy.random.default_rng(seed + trial)``, not by anything in the
diagnoser), are degraded to ``--factor`` of their rate in both directions (``testbed degrade``, tc: the
injector is the kernel's shaper).  Then, as the nightly loop does it:

1. ``measure --testbed`` random-pairs (``--rounds`` rounds of one message size, 10 iterations);
2. ``diagnose`` of that run (``-o first.json``);
3. ``diagnose --plan --confirm first.json``: the confirmation script, run end to end (its jobs measure on
   the testbed with their own host files; its last line, the joint diagnosis, is run again with ``-o``).

It prints, per trial, the true cables, what the first diagnosis named, what the joint diagnosis named, and
whether both true cables are among the joint suspects (recall) with nothing else named (precision); then
the totals, the machine's load average before and after, and the CPU and wall time.

    sudo .venv/bin/python bench/testbed_two_faults.py [--trials 3] [--seed 1] [--rate 40Mbit]
         [--fabric fat-tree:k=4,levels=2] [--factor 0.25] [--rounds 8] [--size 256KiB] [--keep DIR]

Needs root (network namespaces).  Testbed name ``ac8``.  Figures are taken on whatever else the machine
runs; the load average printed says how busy it was.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import fabscope as fabscope_pkg
from fabscope.fabric.io import write_json
from fabscope.testbed import state, system
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.names import parse_rate

NAME = "ac8"
FABSCOPE = [sys.executable, "-m", "fabscope.cli"]
# the commands run in each trial's folder: the fabscope this script imported first on their path (a
# relative PYTHONPATH=src would find an installed one from there)
os.environ["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(fabscope_pkg.__file__))),
                                            *os.environ.get("PYTHONPATH", "").split(os.pathsep)]).rstrip(os.pathsep)


def fabscope(*args: str, cwd: Path, out: Path | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run([*FABSCOPE, *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode not in (0, 3):
        raise SystemExit(f"fabscope {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return p


def uplinks(f) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """(cable, leaf) of every cable from a leaf (a switch with hosts) up to another switch."""
    leaves = set(int(s) for s in f.host_switch)
    out = []
    for link in range(0, f.n_links, 2):
        a, b = int(f.link_src[link]), int(f.link_dst[link])
        for lo, hi in ((a, b), (b, a)):
            if lo in leaves and hi >= f.n_hosts and hi not in leaves:
                out.append((link // 2, lo))
    return out


def port_name(f, cable: int, leaf: int) -> str:  # type: ignore[no-untyped-def]
    link = 2 * cable if int(f.link_src[2 * cable]) == leaf else 2 * cable + 1
    return f"{f.node_names[leaf]}[{int(f.link_src_port[link])}]"


def named_cables(result: Path) -> list[str]:
    sus = json.loads(result.read_text())["extra"]["suspects"]
    return [(f"host {s['host']}" if s["host"] else str(s["cable"])) for s in sus]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabric", default="fat-tree:k=4,levels=2")
    ap.add_argument("--rate", default="40Mbit")
    ap.add_argument("--factor", type=float, default=0.25)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--size", default="256KiB")
    ap.add_argument("--keep", metavar="DIR", help="keep each trial's files in DIR/trial-N (default: removed), with the fabric as built")
    a = ap.parse_args()
    why = system.unavailable_reason()
    if why:
        print(f"testbed: {why}", file=sys.stderr)
        return 2
    load0 = os.getloadavg()
    t0, c0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    st = up(NAME, a.fabric, None, max_rate=parse_rate(a.rate))
    rate = st.rate
    hits = clean = 0
    try:
        f = st.base_fabric()
        ups = uplinks(f)
        print(f"{a.fabric} at {rate * 8 / 1e6:g} Mbit, {len(ups)} leaf uplinks; two at x{a.factor} per trial, "
              f"random-pairs {a.rounds} rounds of {a.size}")
        for trial in range(a.trials):
            rng = np.random.default_rng(a.seed + trial)
            first = ups[int(rng.integers(len(ups)))]
            others = [u for u in ups if u[1] != first[1]]
            second = others[int(rng.integers(len(others)))]
            truth = [port_name(f, c, leaf) for c, leaf in (first, second)]
            for spec in truth:
                assert subprocess.run([*FABSCOPE, "testbed", "degrade", NAME, spec, "--rate",
                                       f"{rate * a.factor * 8:.0f}bit"], capture_output=True).returncode == 0
            with tempfile.TemporaryDirectory(prefix="fabscope-two-faults-") as tmp:
                w = Path(a.keep) / f"trial-{trial}" if a.keep else Path(tmp)
                w.mkdir(parents=True, exist_ok=True)
                if a.keep:  # the fabric as built, so that kept runs can be diagnosed again without the testbed
                    write_json(f, w / "fabric.json")
                fabscope("measure", "--testbed", NAME, "--timeout", "600", "random-pairs", "--size", a.size,
                         "--iterations", "10", "--rounds", str(a.rounds), "--seed", str(a.seed + trial),
                         "--out", "first.jsonl", cwd=w)
                (w / "first.txt").write_text(fabscope("diagnose", "first.jsonl", "--fabric", NAME, "-o", "first.json",
                                                      cwd=w).stdout)
                fabscope("diagnose", "--plan", "--confirm", "first.json", "--fabric", NAME, "-o", "confirm.sh",
                         cwd=w)
                before = named_cables(w / "first.json")
                if not (w / "confirm.sh").exists():  # no suspect: nothing to confirm
                    print(f"trial {trial}: degraded {', '.join(truth)}; first named nothing: no confirmation "
                          f"round; both named NO")
                    clean += 1
                    assert subprocess.run([*FABSCOPE, "testbed", "restore", NAME], capture_output=True).returncode == 0
                    continue
                env = dict(os.environ, FABSCOPE=" ".join(shlex.quote(x) for x in FABSCOPE))
                p = subprocess.run(["sh", "confirm.sh"], cwd=w, env=env, capture_output=True, text=True)
                if p.returncode not in (0, 3):
                    raise SystemExit(f"confirm.sh: exit {p.returncode}: {p.stderr.strip()[-400:]}")
                last = shlex.split(Path(w / "confirm.sh").read_text().strip().splitlines()[-1])
                fabscope(*last[1:], "-o", "joint.json", cwd=w)
                after = named_cables(w / "joint.json")
                cables = {state.cable_of(f, s) for s in truth}
                joint = json.loads((w / "joint.json").read_text())["extra"]["suspects"]
                got = {int(link) // 2 for s in joint if not s["host"] for link in s["links"]}
                both = cables <= got
                extra = [s for s in joint if s["host"] or not {int(link) // 2 for link in s["links"]} <= cables]
                hits += both
                clean += not extra
                print(f"trial {trial}: degraded {', '.join(truth)}; first named {before or 'nothing'}; "
                      f"after confirmation {after or 'nothing'}: both named {'yes' if both else 'NO'}, "
                      f"{len(extra)} other suspect(s)")
            assert subprocess.run([*FABSCOPE, "testbed", "restore", NAME], capture_output=True).returncode == 0
    finally:
        down(NAME)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"both true cables named after confirmation in {hits} of {a.trials} trials; no other suspect in "
          f"{clean} of {a.trials}")
    print(f"load average {load0[0]:.1f} before, {os.getloadavg()[0]:.1f} after; "
          f"{time.time() - t0:.0f} s wall, {c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime:.0f} CPU s "
          f"(children)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
