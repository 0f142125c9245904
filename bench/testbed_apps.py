"""Real applications on a testbed: Debian's LAMMPS and GROMACS (Open MPI), profiled, mapped and run under placements.

Needs root (the testbed) and the application's Debian package: ``lammps`` (``lmp``) or ``gromacs``
(``gmx_mpi``, and ``gmx`` to prepare its input), both built with Open MPI and written by nobody here.
Steps, for ``--app lammps`` (Lennard-Jones melt) or ``--app gromacs`` (a box of SPC/E water, reaction field,
no PME: domain decomposition's halo exchange):

1. ``fabscope testbed up`` of ``--fabric`` (default ``fat-tree:k=4,levels=2,up=1``: 16 hosts, one up-link per
   leaf) at ``--rate``; the job's node list is the testbed's hosts in a seeded random order (a fragmented
   allocation);
2. ``fabscope profile --testbed NAME --hostfile NODES -- PROGRAM ARGS``: the PMPI library built against the
   application's Open MPI, the matrix of the whole run;
3. ``fabscope map --fabric NAME --nodes NODES --comm app.mtx --compare block,random --predict
   --iterations STEPS --format hostfile -o map.txt``: map's placement and the predicted time per
   iteration of each placement;
4. ``fabscope testbed run NAME --placement P -- PROGRAM ARGS`` for block (the node list's order), random
   (``map --algorithm random --seed 1``) and map's placement, each application's own time of its steps
   (LAMMPS's "Loop time", GROMACS's "Wall t"), and whether the links set the pace: the shapers' counters
   around the run (every sending host's shaper held packets back), and the *CPU floor*: the same run with
   every rank on one host, where no message crosses a shaped cable (TCP on the host itself), on the same
   CPUs in the same minutes.  With 16 ranks on 2 cores a rank waiting for a message leaves the CPUs to
   the others, so a run takes about the longer of its links' time and its CPUs' time, not their sum: a
   placement measured at least :data:`OVER_FLOOR` times the floor was paced by its links; one nearer the
   floor by the CPUs (the bench says CPU-BOUND: its speed-up over another placement is then a lower
   bound of what the links would give).  The floor is no exact CPU time: GROMACS's 16 ranks on one host
   took longer than its map placement on 16 hosts at 20 and 40 Mbit (docs/mapping.md), so a placement
   measured *below* the floor is said to be so, not judged.

Every placement, the floor included, runs ``--repeats`` times, each round in the reverse order of the one
before; the fastest run of each counts (other work on the machine only adds time).  Printed: per
placement the measured time (fastest, and slowest), the predicted time (per step x steps),
measured/predicted, measured/floor, link-bound or not and why, the load average around every run, and the order of the placements measured and predicted.

    sudo .venv/bin/python bench/testbed_apps.py [--app lammps|gromacs] [--rate auto:20Mbit] [--steps N]
                                                [--box N] [--repeats 2] [--name lm1]

Figures are taken on whatever else the machine runs (the load average is printed); say so when quoting them.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: a placement is link-bound when measured at least this many times the CPU floor
OVER_FLOOR = 1.2

LAMMPS_INPUT = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 {box} 0 {box} 0 {box}
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
thermo {steps}
run {steps}
"""

GROMACS_TOP = """#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spce.itp"

[ system ]
water

[ molecules ]
"""

#: reaction field, no PME: every step's traffic is the domain decomposition's halo (coordinates out,
#: forces back) and the neighbour search's redistribution; no output during the run
GROMACS_MDP = """integrator = md
dt = 0.002
nsteps = {steps}
cutoff-scheme = Verlet
coulombtype = Reaction-Field
rcoulomb = 1.0
rvdw = 1.0
epsilon-rf = 0
tcoupl = no
pcoupl = no
constraints = h-bonds
nstxout = 0
nstvout = 0
nstfout = 0
nstlog = 0
nstenergy = 0
nstcalcenergy = {steps}
gen-vel = yes
gen-temp = 300
gen-seed = 1
"""


@dataclass(frozen=True)
class App:
    """An application: its program, how its input is made, its arguments for a run, and how long its
    steps took by its own account."""

    program: str
    package: str
    #: the links' default rate: slow enough that every placement is link-bound on 2 shared cores
    rate: str
    steps: int
    box: int
    box_help: str
    #: (folder, box, steps) -> the files the runs read; the arguments of a run named label
    prepare: Callable[[str, int, int], None]
    args: Callable[[str, str], list[str]]
    #: (stdout, folder, label) -> seconds of the application's steps, None if it did not say
    seconds: Callable[[str, str, str], float | None]


def lammps_prepare(folder: str, box: int, steps: int) -> None:
    with open(os.path.join(folder, "in.lj"), "w") as fh:
        fh.write(LAMMPS_INPUT.format(box=box, steps=steps))


def lammps_seconds(out: str, folder: str, label: str) -> float | None:
    m = re.search(r"Loop time of ([\d.eE+-]+) on (\d+) procs for (\d+) steps", out)
    return float(m.group(1)) if m else None


def gromacs_prepare(folder: str, box: int, steps: int) -> None:
    """A cubic box of ``box`` nm of SPC/E water (``gmx solvate``), made into md.tpr (``gmx grompp``)."""
    with open(os.path.join(folder, "topol.top"), "w") as fh:
        fh.write(GROMACS_TOP)
    with open(os.path.join(folder, "md.mdp"), "w") as fh:
        fh.write(GROMACS_MDP.format(steps=steps))
    for argv in (["gmx", "-quiet", "solvate", "-cs", "spc216.gro", "-box", str(box), str(box), str(box),
                  "-o", "conf.gro", "-p", "topol.top"],
                 ["gmx", "-quiet", "grompp", "-f", "md.mdp", "-c", "conf.gro", "-p", "topol.top", "-o", "md.tpr"]):
        p = subprocess.run(argv, cwd=folder, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:3])}: {p.stderr.strip()[-500:]}")


def gromacs_seconds(out: str, folder: str, label: str) -> float | None:
    """The "Wall t" of the log's "Time:" line: the run's steps, from the first to the last."""
    try:
        with open(os.path.join(folder, label + ".log")) as fh:
            m = re.search(r"^\s*Time:\s+[\d.]+\s+([\d.]+)", fh.read(), re.M)
    except OSError:
        return None
    return float(m.group(1)) if m else None


APPS = {
    "lammps": App("lmp", "lammps", "auto:20Mbit", 20, 20, "lattice cells per side (20: 32,000 atoms)", lammps_prepare,
                  lambda folder, label: ["-in", os.path.join(folder, "in.lj"), "-log", "none"], lammps_seconds),
    # one thread per rank, no pinning (2 cores for 16 ranks), no dynamic load balancing (its cells would follow
    # the CPUs' load, not the placement), no file at the end
    "gromacs": App("gmx_mpi", "gromacs", "auto:10Mbit", 100, 6, "edge of the water box in nm (6: 21,000 atoms)", gromacs_prepare,
                   lambda folder, label: ["mdrun", "-s", os.path.join(folder, "md.tpr"), "-deffnm", os.path.join(folder, label),
                                          "-ntomp", "1", "-pin", "off", "-dlb", "no", "-noconfout"],
                   gromacs_seconds),
}


def fabscope(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    """A fabscope command; in ``cwd`` with this fabscope (a relative $PYTHONPATH made absolute first)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in
                                                        os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)}
    return subprocess.run([sys.executable, "-m", "fabscope.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env)


def linkbound(name: str, before, after) -> tuple[bool, str]:  # type: ignore[no-untyped-def]
    from fabscope.testbed import state
    from fabscope.testbed.linkbound import SENT_BYTES, verdict

    d = after - before
    f = state.load(name).base_fabric()
    host_links = np.flatnonzero(f.link_src < f.n_hosts)
    sent = host_links[d.bytes[host_links] >= SENT_BYTES]
    return verdict(len(sent), int(np.sum(d.overlimits[sent] > 0)), int(d.drops.sum()), int(d.packets.sum()), app=True)


def predicted_seconds(metrics_json: str, steps: int) -> dict[str, float]:
    """Predicted seconds of the whole run per placement from ``map --predict --json``'s rows (the predicted
    time per iteration, x steps; the last row is map's own placement, whatever stage topo chose)."""
    import json

    with open(metrics_json) as fh:
        rows = json.load(fh)["rows"]
    out = {r["algorithm"]: float(r["predicted_iteration"]) * steps for r in rows[:-1]}
    out["map"] = float(rows[-1]["predicted_iteration"]) * steps
    return out


def judge(t: float, floor: float | None, shapers: tuple[bool, str]) -> tuple[str, str]:
    """("link-bound" | "NOT LINK-BOUND" | "not judged", why) of a placement measured ``t`` s against the CPU
    floor and the shapers' verdict of its run.

    >>> judge(10.4, 7.6, (True, "16 of 16 held"))
    ('link-bound', '16 of 16 held')
    >>> judge(2.3, 2.2, (True, "16 of 16 held"))[0]
    'NOT LINK-BOUND'
    >>> judge(6.3, 7.6, (True, "16 of 16 held"))[0]
    'not judged'
    """
    ok, why = shapers
    if floor is not None and t < floor:
        return "not judged", (f"measured below the CPU floor ({floor:.2f} s), which is then no floor for it; "
                              f"the shapers alone: {why}")
    if floor is not None and t < OVER_FLOOR * floor:
        return "NOT LINK-BOUND", (f"CPU-BOUND: {t / floor:.2f} times the CPU floor ({floor:.2f} s), less than "
                                  f"{OVER_FLOOR}: the CPUs, not the links, set its pace")
    return ("link-bound" if ok else "NOT LINK-BOUND"), why


def main() -> int:
    from fabscope.testbed.counters import snapshot
    from fabscope.testbed.lifecycle import down

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", choices=sorted(APPS), default="lammps")
    ap.add_argument("--name", default="lm1")
    ap.add_argument("--fabric", default="fat-tree:k=4,levels=2,up=1")
    ap.add_argument("--rate", help="the links' rate (lammps auto:20Mbit, gromacs auto:10Mbit)")
    ap.add_argument("--steps", type=int, help="steps of the run (lammps 20, gromacs 100)")
    ap.add_argument("--box", type=int, help="; ".join(f"{k}: {a.box_help}" for k, a in APPS.items()))
    ap.add_argument("--seed", type=int, default=3, help="the node list's order")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--repeats", type=int, default=2, help="runs of every placement (the fastest counts)")
    args = ap.parse_args()
    # a SIGTERM (an outer timeout) ends through the finally below: the testbed is taken down
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    app = APPS[args.app]
    steps, box, rate = args.steps or app.steps, args.box or app.box, args.rate or app.rate
    exe = shutil.which(app.program)
    if not exe:
        raise SystemExit(f"needs Debian's {app.package} ({app.program})")
    folder = tempfile.mkdtemp(prefix=f"fabscope-{args.app}-")
    try:
        app.prepare(folder, box, steps)
        p = fabscope("testbed", "up", "--name", args.name, "--fabric", args.fabric, "--rate", rate)
        if p.returncode != 0:
            raise SystemExit(f"testbed up: {p.stderr.strip()}")
        print(" ".join((p.stdout + p.stderr).split("\n")[-2:]).strip())
        from fabscope.testbed import state

        hosts = list(state.load_fabric(args.name).host_names)
        random.Random(args.seed).shuffle(hosts)
        nodes = os.path.join(folder, "nodes.txt")
        with open(nodes, "w") as fh:
            fh.write("".join(h + "\n" for h in hosts))
        mtx = os.path.join(folder, "app.mtx")
        t0 = time.monotonic()
        p = fabscope("profile", "--testbed", args.name, "--hostfile", nodes, "--timeout", str(args.timeout), "-o", mtx,
                     "--", exe, *app.args(folder, "profile"), cwd=folder)
        if p.returncode != 0:
            raise SystemExit(f"profile: {p.stderr.strip()[-500:]}")
        print(f"profiled {args.app} ({len(hosts)} ranks, {steps} steps) in {time.monotonic() - t0:.1f} s: {mtx}")
        placements = {"block": nodes}
        metrics = os.path.join(folder, "map.json")
        p = fabscope("map", "--fabric", args.name, "--nodes", nodes, "--comm", mtx, "--compare", "block,random",
                     "--predict", "--iterations", str(steps), "--format", "hostfile", "-o",
                     os.path.join(folder, "map.txt"), "--json", metrics, "--program", exe)
        if p.returncode != 0:
            raise SystemExit(f"map: {p.stderr.strip()[-500:]}")
        print(p.stdout.rstrip())
        predicted = predicted_seconds(metrics, steps)
        placements["map"] = os.path.join(folder, "map.txt")
        p = fabscope("map", "--fabric", args.name, "--nodes", nodes, "--comm", mtx, "--algorithm", "random", "--seed",
                     "1", "--format", "hostfile", "-o", os.path.join(folder, "random.txt"))
        if p.returncode != 0:
            raise SystemExit(f"map --algorithm random: {p.stderr.strip()[-500:]}")
        placements["random"] = os.path.join(folder, "random.txt")
        # the CPU floor: every rank on one host, no message on a shaped cable, the same CPUs
        placements["one host"] = os.path.join(folder, "one-host.txt")
        with open(placements["one host"], "w") as fh:
            fh.write((hosts[0] + "\n") * len(hosts))
        times: dict[str, list[float]] = {label: [] for label in placements}
        held: dict[str, list[tuple[bool, str]]] = {label: [] for label in placements}
        order = list(placements)
        for rnd in range(args.repeats):
            # every round runs every placement, in the reverse order of the round before: a change of the
            # machine's load falls on all of them, not on the last
            for label in order if rnd % 2 == 0 else order[::-1]:
                before = snapshot(args.name)
                t0, load0 = time.monotonic(), os.getloadavg()[0]
                tag = f"{label.replace(' ', '-')}-{rnd}"
                p = fabscope("testbed", "run", args.name, "--placement", placements[label], "--timeout",
                             str(args.timeout), "--", exe, *app.args(folder, tag), cwd=folder)
                wall = time.monotonic() - t0
                t = app.seconds(p.stdout, folder, tag)
                if p.returncode != 0 or t is None:
                    print(f"{label}: failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
                    continue
                times[label].append(t)
                held[label].append(linkbound(args.name, before, snapshot(args.name)))
                print(f"{label}: {args.app}'s own time of its {steps} steps {t:.2f} s (wall {wall:.1f} s; load "
                      f"average {load0:.1f} before, {os.getloadavg()[0]:.1f} after)")
        # the least disturbed run of each placement: other work on the machine only ever adds time
        results = {label: min(ts) for label, ts in times.items() if ts}
        floor = results.pop("one host", None)
        print(f"\nCPU floor (all {len(hosts)} ranks on one host, no shaped cable; fastest of "
              f"{len(times['one host'])}): " + (f"{floor:.2f} s" if floor is not None else "not measured"))
        print(f"placement  measured s (fastest of {args.repeats}, slowest)  predicted s  measured/predicted  "
              "measured/floor  verdict")
        for label, t in results.items():
            over = t / floor if floor is not None else None
            verdict, why = judge(t, floor, held[label][int(np.argmin(times[label]))])
            print(f"{label:9} {t:11.2f} ({max(times[label]):.2f}) {predicted[label]:12.2f} "
                  f"{t / predicted[label]:12.2f} {'' if over is None else format(over, '.2f'):>15}  {verdict}: {why}")
        print("measured order (fastest first):  " + " < ".join(sorted(results, key=results.get)))
        print("predicted order (fastest first): " + " < ".join(sorted(predicted, key=predicted.get)))
        if "map" in results and "block" in results:
            print(f"block / map: measured {results['block'] / results['map']:.2f}, "
                  f"predicted {predicted['block'] / predicted['map']:.2f}")
    finally:
        down(args.name)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
