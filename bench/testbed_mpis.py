"""Open MPI beside the mpich wheel on the same testbed pairs, at one message size.

Brings up a testbed, then runs ``fabscope measure --testbed NAME random-pairs`` (the same seed: the same
pairs) alternately with each MPI, ``--repeats`` times each (A B A B ...: load that drifts during the run
falls on both), and prints every pair's bandwidth with each MPI (median over the repeats) and the ratio
Open MPI / wheel, their median and extremes, each run's wall and CPU time (the measure command's children),
and whether each run was link-bound (the testbed's own verdict).  Then, with NetPIPE built with Open MPI
(Debian's ``netpipe-openmpi``: ``NPopenmpi``) on the testbed's first two hosts, NetPIPE's time for one
message of that size beside fabscope-bench's ``pingpong`` with Open MPI on the same pair.  Takes the
testbed down at the end.

    sudo .venv/bin/python bench/testbed_mpis.py [--fabric fat-tree:k=4,levels=2] [--rate auto:40Mbit]
        [--size 1MiB] [--iterations 10] [--repeats 2] [--name mp1]

Open MPI is Debian's (``mpicc.openmpi``, launched by its ``mpirun``), the wheel's MPICH the environment's
``mpicc``.  Figures are taken on whatever else the machine runs; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from fabscope.testbed.lifecycle import down


def measure(name: str, mpicc: str, args: argparse.Namespace, out: str) -> tuple[dict, float, float, str]:
    """One run: {(src, dst): bandwidth [B/s]}, wall [s], CPU [s] of the run's processes, its link-bound line."""
    env = {**os.environ, "FABSCOPE_MPICC": mpicc}
    env.pop("FABSCOPE_MPIEXEC", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "fabscope.cli", "measure", "--testbed", name, "--timeout", "600",
                        "random-pairs", "--size", args.size, "--iterations", str(args.iterations), "--seed",
                        str(args.seed), "--out", out + ".jsonl", "-o", out], capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"measure with {mpicc} failed: {p.stderr.strip()[-400:]}")
    doc = json.load(open(out))
    pairs = doc["pairs"]
    bw = {(s, d): b for s, d, b in zip(pairs["src_host"], pairs["dst_host"], pairs["bandwidth"])}
    bound = next((ln for ln in p.stdout.splitlines() if ln.startswith(f"testbed {name}:")), "")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"bw": bw, "mpi": doc["meta"]["mpi"]["name"]}, wall, cpu, bound


def netpipe(args: argparse.Namespace, folder: str, ompi: str) -> None:
    """NetPIPE (Open MPI) and fabscope-bench pingpong (Open MPI) on the testbed's first two hosts, one size."""
    from fabscope.units import parse_size

    size = parse_size(args.size)
    hosts = os.path.join(folder, "pair.hosts")
    with open(hosts, "w") as fh:
        fh.write(f"fstb-{args.name}-h0\nfstb-{args.name}-h1\n")
    np_out = os.path.join(folder, "np.out")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "fabscope.cli", "testbed", "run", args.name, "--hostfile", hosts,
                        "--timeout", "600", "--", shutil.which("NPopenmpi"), "-l", str(size), "-u", str(size),
                        "-o", np_out], capture_output=True, text=True)
    wall = time.monotonic() - t0
    rows = [ln.split() for ln in open(np_out)] if p.returncode == 0 and os.path.exists(np_out) else []
    one_way = [float(r[2]) for r in rows if len(r) >= 3 and int(r[0]) == size]
    if not one_way:
        print(f"NetPIPE failed: {p.stderr.strip()[-300:]}")
        return
    out = os.path.join(folder, "pp.json")
    env = {**os.environ, "FABSCOPE_MPICC": ompi}
    q = subprocess.run([sys.executable, "-m", "fabscope.cli", "measure", "--testbed", args.name, "--hostfile", hosts,
                        "pingpong", "--min-size", str(size), "--max-size", str(size), "--iterations",
                        str(args.iterations), "--out", out + "l", "-o", out], capture_output=True, text=True, env=env)
    if q.returncode != 0:
        print(f"pingpong failed: {q.stderr.strip()[-300:]}")
        return
    recs = [json.loads(ln) for ln in open(out + "l") if '"size"' in ln]
    fs = [r["latency"] for r in recs if r.get("type") == "size" and r.get("bytes") == size]
    print(f"\n{args.size} one way, fstb-{args.name}-h0 <-> h1, both Open MPI: NetPIPE {size / one_way[0] / 1e6:.3f} MB/s "
          f"({one_way[0] * 1e3:.1f} ms; NetPIPE's run {wall:.0f} s), fabscope pingpong {size / fs[0] / 1e6:.3f} MB/s "
          f"({fs[0] * 1e3:.1f} ms); fabscope / NetPIPE {one_way[0] / fs[0]:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default="mp1")
    ap.add_argument("--fabric", default="fat-tree:k=4,levels=2")
    ap.add_argument("--rate", default="auto:40Mbit")
    ap.add_argument("--size", default="1MiB")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    wheel = os.path.join(sys.prefix, "bin", "mpicc")
    ompi = shutil.which("mpicc.openmpi")
    if not ompi or not os.access(wheel, os.X_OK):
        raise SystemExit("needs Debian's Open MPI (mpicc.openmpi) and the mpich wheel in this environment")
    mpis = {"wheel": wheel, "openmpi": ompi}
    folder = tempfile.mkdtemp(prefix="fabscope-mpis-")
    try:
        p = subprocess.run([sys.executable, "-m", "fabscope.cli", "testbed", "up", "--name", args.name, "--fabric",
                            args.fabric, "--rate", args.rate], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"testbed up: {p.stderr.strip()}")
        print(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr.strip().splitlines()[-1])
        runs: dict[str, list[dict]] = {k: [] for k in mpis}
        for r in range(args.repeats):
            for key, cc in mpis.items():
                res, wall, cpu, bound = measure(args.name, cc, args, os.path.join(folder, f"{key}{r}.json"))
                runs[key].append(res["bw"])
                print(f"run {r} {key} ({res['mpi']}): {len(res['bw'])} pairs, wall {wall:.1f} s, CPU {cpu:.1f} s; "
                      f"load average {os.getloadavg()[0]:.1f}; {bound}")
        pairs = sorted(runs["wheel"][0])
        ratios = []
        print(f"\npair  wheel MB/s  Open MPI MB/s  Open MPI / wheel   ({args.size}, medians of {args.repeats} runs)")
        for pr in pairs:
            w = statistics.median(run[pr] for run in runs["wheel"] if pr in run) / 1e6
            o = statistics.median(run[pr] for run in runs["openmpi"] if pr in run) / 1e6
            ratios.append(o / w)
            print(f"{pr[0]} -> {pr[1]}  {w:8.3f}  {o:8.3f}  {o / w:6.3f}")
        print(f"\nOpen MPI / wheel over {len(ratios)} pairs: median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}; within 10%: "
              f"{sum(abs(x - 1) <= 0.10 for x in ratios)} of {len(ratios)}")
        if shutil.which("NPopenmpi"):
            netpipe(args, folder, ompi)
        else:
            print("no NPopenmpi (Debian's netpipe-openmpi): NetPIPE not compared")
    finally:
        down(args.name)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
