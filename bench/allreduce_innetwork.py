"""Allreduce time against rank count: ring, recursive doubling, and reduced in the switches (SHARP-style).

One rank per node, ranks in block order, on a 3-level fat tree (8 hosts a leaf, 64 a pod):
the in-network time is flat in the rank count while the reduction tree keeps its depth
(1 switch level up to 8 ranks, 2 up to 64, 3 beyond) and rises by one switch hop each way at each
new level; ring and recursive doubling grow with the rank count (latency) and with the bytes each
rank moves (ring 2 (n-1)/n of the vector, recursive doubling log2 n vectors).  Times in
microseconds, simulated by the dynamic engine; CPU seconds of the whole table at the end, beside
the time of the ring runs alone.

    python bench/allreduce_innetwork.py                     # 8 B and 1 MiB, 2..256 ranks (~10 s)
    python bench/allreduce_innetwork.py --fabric fat-tree:k=4,levels=3 --sizes 8,65536
"""

from __future__ import annotations

import argparse
import time

from fabscope.dynamic.innetwork import allreduce_sharp
from fabscope.dynamic.programs import collective
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="fat-tree:k=8,levels=3")
    ap.add_argument("--sizes", default="8,1048576", help="bytes, comma-separated")
    ap.add_argument("--max-ranks", type=int, default=256)
    args = ap.parse_args()
    f = load_fabric(args.fabric)
    sizes = [float(s) for s in args.sizes.split(",")]
    counts = [n for n in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if n <= min(args.max_ranks, f.n_hosts)]
    cpu0, ring_cpu = time.process_time(), 0.0
    for size in sizes:
        print(f"\n{f.name}, allreduce of {size:g} B, one rank per node; times in us")
        print("| ranks | tree depth | sharp | ring | recursive doubling |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for n in counts:
            pl = Placement.block(f, n, ppn=1)
            sharp = allreduce_sharp(f, pl, size)
            t = time.process_time()
            ring = run_program_on(f, pl, collective("allreduce", "ring", n, size)).outcome.makespan
            ring_cpu += time.process_time() - t
            rd = run_program_on(f, pl, collective("allreduce", "recursive-doubling", n, size)).outcome.makespan
            print(f"| {n} | {sharp.depth} | {sharp.makespan * 1e6:.2f} | {ring * 1e6:.2f} | {rd * 1e6:.2f} |",
                  flush=True)
    print(f"\nCPU {time.process_time() - cpu0:.2f} s in all; the ring runs alone {ring_cpu:.2f} s")


if __name__ == "__main__":
    main()
