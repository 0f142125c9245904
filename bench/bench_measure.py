"""fabscope-bench on 2 ranks: how long the default suite takes, and the
figures to set beside the established micro-benchmarks on the same MPI
(osu_latency / osu_bw): latency and bandwidth at 8 B, 64 KiB, 1 MiB, 4 MiB.

    .venv/bin/python bench/bench_measure.py            # the MPI fabscope finds
    FABSCOPE_MPICC=/usr/bin/mpicc.mpich .venv/bin/python bench/bench_measure.py
    .venv/bin/python bench/bench_measure.py --osu DIR  # and osu_latency/osu_bw from DIR, same MPI

``--osu`` takes a folder holding ``osu_latency`` and ``osu_bw`` that you built
against the same MPI (fabscope neither ships nor builds them); both peers then
run in the same job settings and the table gains their figures and the ratios.

Latency is half the ping-pong round trip (osu_latency); bandwidth uses a window
of 64 non-blocking sends and an ack (osu_bw).  Both with OSU's iteration counts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fabscope.measure.analysis import wait_loop
from fabscope.measure.mpi import find_mpi
from fabscope.measure.runner import measure

SIZES = (8, 64 << 10, 1 << 20, 4 << 20)
AIM_SUITE_S = 60.0


def osu(mpiexec: str, binary: str) -> dict[int, float]:
    """Run one OSU binary on 2 ranks of this host; its table as {size: value}."""
    out = subprocess.run([mpiexec, "-n", "2", binary, "-m", f"1:{max(SIZES)}"], capture_output=True,
                         text=True, timeout=600, check=True).stdout
    vals = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            vals[int(parts[0])] = float(parts[1])
    return vals


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--osu", help="folder with osu_latency and osu_bw built against the same MPI")
    args = ap.parse_args()
    mpi = find_mpi()
    print(f"MPI: {mpi.vendor} {mpi.version} ({mpi.source}: {mpi.mpicc})")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        run = measure(["suite"], np=2, out=Path(d) / "suite.jsonl", mpi=mpi, timeout=600)
        suite_s = time.monotonic() - t0
        print(f"default suite on 2 ranks: {suite_s:.1f} s wall, {len(run.records)} measurements, "
              f"{len(run.tests)} tests (aim: under {AIM_SUITE_S:.0f} s); {wait_loop(run)}")
        pp = {r["bytes"]: r for r in run.of("pingpong", "size")}
        bw = {r["bytes"]: r for r in run.of("bw", "size")}
    peer_lat = peer_bw = {}
    if args.osu:
        peer_lat = osu(mpi.mpiexec, os.path.join(args.osu, "osu_latency"))
        peer_bw = osu(mpi.mpiexec, os.path.join(args.osu, "osu_bw"))
    head = f"\n{'size':>9} {'latency [us]':>13} {'bandwidth [MB/s]':>17}"
    if args.osu:
        head += f" {'osu_latency':>12} {'ratio':>6} {'osu_bw':>10} {'ratio':>6}"
    print(head)
    for s in SIZES:
        lat = pp[s]["latency"] * 1e6 if s in pp else float("nan")
        b = bw[s]["bandwidth"] / 1e6 if s in bw else float("nan")
        row = f"{s:>9} {lat:13.2f} {b:17.1f}"
        if args.osu:
            ol, ob = peer_lat.get(s, float("nan")), peer_bw.get(s, float("nan"))
            row += f" {ol:12.2f} {lat / ol:6.2f} {ob:10.1f} {b / ob:6.2f}"
        print(row)
    return 0 if suite_s < 2 * AIM_SUITE_S else 1


if __name__ == "__main__":
    sys.exit(main())
