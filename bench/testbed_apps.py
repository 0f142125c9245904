"""A real application on a testbed: Debian's LAMMPS (Open MPI), profiled, mapped and run under three placements.

Needs root (the testbed) and Debian's ``lammps`` (``lmp``, built with Open MPI).  Steps:

1. ``fabscope testbed up`` of ``--fabric`` (default ``fat-tree:k=4,levels=2,up=1``: 16 hosts, one up-link per
   leaf) at ``--rate``; the job's node list is the testbed's hosts in a seeded random order (a fragmented
   allocation);
2. ``fabscope profile --testbed NAME --hostfile NODES -- lmp -in in.lj``: the PMPI library built against
   LAMMPS's Open MPI, the matrix of the whole run;
3. ``fabscope map --fabric NAME --nodes NODES --comm lmp.mtx --compare block,random --predict
   --iterations STEPS --format hostfile -o map.txt``: map's placement and the predicted time per
   iteration of each placement;
4. ``fabscope testbed run NAME --placement P -- lmp -in in.lj`` for block (the node list's order), random
   (``map --algorithm random --seed 1``) and map's placement, LAMMPS's own "Loop time" of each, and whether
   the links set the pace (the shapers' counters around the run: every sending host's shaper held packets
   back).

Printed: per placement the measured loop time, the predicted time (per step x steps), measured/predicted,
link-bound or not and why, and the order of the placements measured and predicted.

    sudo .venv/bin/python bench/testbed_lammps.py [--rate auto:40Mbit] [--steps 20] [--box 20] [--name lm1]

Figures are taken on whatever else the machine runs (the load average is printed); say so when quoting them.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

INPUT = """units lj
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


def predicted_seconds(map_out: str, steps: int) -> dict[str, float]:
    """Predicted seconds of the whole run per placement from ``map --predict``'s table (its ``iter ms`` column;
    the last row is map's own placement)."""
    lines = map_out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("algorithm"))
    rows = []
    for ln in lines[head + 1:]:
        if ln.startswith("#") or not ln.strip():
            break
        rows.append(ln.split())
    ncols = len(lines[head].replace("max link MB", "maxlinkMB").replace("iter ms", "iterms").split())  # 'iter ms': 2nd last
    out = {r[0]: float(r[ncols - 2]) * steps / 1e3 for r in rows[:-1]}
    out["map"] = float(rows[-1][ncols - 2]) * steps / 1e3      # map's own algorithm (topo chose hier, tile, ...)
    return out


def main() -> int:
    from fabscope.testbed.counters import snapshot
    from fabscope.testbed.lifecycle import down

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="lm1")
    ap.add_argument("--fabric", default="fat-tree:k=4,levels=2,up=1")
    ap.add_argument("--rate", default="auto:40Mbit")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--box", type=int, default=20, help="lattice cells per side (20: 32,000 atoms)")
    ap.add_argument("--seed", type=int, default=3, help="the node list's order")
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()
    lmp = shutil.which("lmp")
    if not lmp:
        raise SystemExit("needs Debian's lammps (lmp)")
    folder = tempfile.mkdtemp(prefix="fabscope-lammps-")
    try:
        p = fabscope("testbed", "up", "--name", args.name, "--fabric", args.fabric, "--rate", args.rate)
        if p.returncode != 0:
            raise SystemExit(f"testbed up: {p.stderr.strip()}")
        print(" ".join((p.stdout + p.stderr).split("\n")[-2:]).strip())
        from fabscope.testbed import state

        hosts = list(state.load_fabric(args.name).host_names)
        random.Random(args.seed).shuffle(hosts)
        nodes = os.path.join(folder, "nodes.txt")
        with open(nodes, "w") as fh:
            fh.write("".join(h + "\n" for h in hosts))
        inp = os.path.join(folder, "in.lj")
        with open(inp, "w") as fh:
            fh.write(INPUT.format(box=args.box, steps=args.steps))
        lmp_args = ["-in", inp, "-log", "none", "-screen", "none"]
        mtx = os.path.join(folder, "lmp.mtx")
        t0 = time.monotonic()
        p = fabscope("profile", "--testbed", args.name, "--hostfile", nodes, "--timeout", str(args.timeout), "-o", mtx,
                     "--", lmp, *lmp_args, cwd=folder)
        if p.returncode != 0:
            raise SystemExit(f"profile: {p.stderr.strip()[-500:]}")
        print(f"profiled in {time.monotonic() - t0:.1f} s: {mtx}")
        placements = {"block": nodes}
        p = fabscope("map", "--fabric", args.name, "--nodes", nodes, "--comm", mtx, "--compare", "block,random",
                     "--predict", "--iterations", str(args.steps), "--format", "hostfile", "-o",
                     os.path.join(folder, "map.txt"))
        if p.returncode != 0:
            raise SystemExit(f"map: {p.stderr.strip()[-500:]}")
        print(p.stdout.rstrip())
        predicted = predicted_seconds(p.stdout, args.steps)
        placements["map"] = os.path.join(folder, "map.txt")
        p = fabscope("map", "--fabric", args.name, "--nodes", nodes, "--comm", mtx, "--algorithm", "random", "--seed",
                     "1", "--format", "hostfile", "-o", os.path.join(folder, "random.txt"))
        if p.returncode != 0:
            raise SystemExit(f"map --algorithm random: {p.stderr.strip()[-500:]}")
        placements["random"] = os.path.join(folder, "random.txt")
        results = {}
        for label, placement in placements.items():
            before = snapshot(args.name)
            t0 = time.monotonic()
            p = fabscope("testbed", "run", args.name, "--placement", placement, "--timeout", str(args.timeout),
                         "--", lmp, *lmp_args[:2], "-log", "none", cwd=folder)
            wall = time.monotonic() - t0
            ok, why = linkbound(args.name, before, snapshot(args.name))
            m = re.search(r"Loop time of ([\d.eE+-]+) on (\d+) procs for (\d+) steps", p.stdout)
            if p.returncode != 0 or not m:
                print(f"{label}: failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
                continue
            results[label] = float(m.group(1))
            print(f"{label}: LAMMPS loop time {float(m.group(1)):.2f} s on {m.group(2)} procs for {m.group(3)} steps "
                  f"(wall {wall:.1f} s; load average {os.getloadavg()[0]:.1f}); "
                  f"{'link-bound' if ok else 'NOT LINK-BOUND'}: {why}")
        print("\nplacement  measured s  predicted s  measured/predicted")
        for label, t in results.items():
            print(f"{label:9} {t:11.2f} {predicted[label]:12.2f} {t / predicted[label]:10.2f}")
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
