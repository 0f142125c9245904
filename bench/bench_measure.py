"""fabscope-bench on 2 ranks: how long the default suite takes, and the
figures to set beside the established micro-benchmarks on the same MPI
(osu_latency / osu_bw): latency and bandwidth at 8 B, 64 KiB, 1 MiB, 4 MiB.

    .venv/bin/python bench/bench_measure.py            # the MPI fabscope finds
    FABSCOPE_MPICC=/usr/bin/mpicc.mpich .venv/bin/python bench/bench_measure.py

Latency is half the ping-pong round trip (osu_latency); bandwidth uses a window
of 64 non-blocking sends and an ack (osu_bw).  Both with OSU's iteration counts.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from fabscope.measure.mpi import find_mpi
from fabscope.measure.runner import measure

SIZES = (8, 64 << 10, 1 << 20, 4 << 20)
AIM_SUITE_S = 60.0


def main() -> int:
    mpi = find_mpi()
    print(f"MPI: {mpi.vendor} {mpi.version} ({mpi.source}: {mpi.mpicc})")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        run = measure(["suite"], np=2, out=Path(d) / "suite.jsonl", mpi=mpi, timeout=600)
        suite_s = time.monotonic() - t0
        print(f"default suite on 2 ranks: {suite_s:.1f} s wall, {len(run.records)} measurements, "
              f"{len(run.tests)} tests (aim: under {AIM_SUITE_S:.0f} s) wait loop: {run.header['yield']}")
        pp = {r["bytes"]: r for r in run.of("pingpong", "size")}
        bw = {r["bytes"]: r for r in run.of("bw", "size")}
    print(f"\n{'size':>9} {'latency [us]':>13} {'bandwidth [MB/s]':>17}")
    for s in SIZES:
        lat = pp[s]["latency"] * 1e6 if s in pp else float("nan")
        b = bw[s]["bandwidth"] / 1e6 if s in bw else float("nan")
        print(f"{s:>9} {lat:13.2f} {b:17.1f}")
    return 0 if suite_s < 2 * AIM_SUITE_S else 1


if __name__ == "__main__":
    sys.exit(main())
