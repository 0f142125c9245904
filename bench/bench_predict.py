"""Predicted time per iteration of the application kernels under block, random and fabscope's mapping,
and how long the prediction takes (``fabscope map --predict``'s work, without the CLI).

    python bench/bench_predict.py                       # 16 and 64 hosts, every kernel
    python bench/bench_predict.py --fabric fat-tree:k=4,levels=2,up=1 --kernel halo2d --iterations 20

Per fabric and kernel: for each placement the predicted ms per iteration (median of the timed
iterations, the kernel's own program in the dynamic engine), the speed-up of the mapping over block
(block / map), the seconds to map and to simulate, and the messages simulated.  One rank a host; 64 KiB
messages (the allreduce: 1 MiB); 2 warm-up iterations.
"""

from __future__ import annotations

import argparse
import time

from fabscope.dynamic import apps
from fabscope.mapping.api import map_ranks
from fabscope.mapping.commgraph import CommGraph
from fabscope.mapping.predict import order_text, predict_iteration
from fabscope.mapping.targets import Target
from fabscope.resolver import resolve_fabric

FABRICS = ["fat-tree:k=4,levels=2,up=1", "fat-tree:k=8,levels=2,up=1", "fat-tree:k=4,levels=3,up=2",
           "fat-tree:k=8,levels=2,up=4"]
KERNELS = ["halo2d", "halo3d", "fft-transpose", "allreduce-loop"]


def kernel(name: str, n: int, iterations: int) -> tuple:
    if name == "halo2d":
        dims = apps.dims_create(n, 2)
        return apps.halo(dims, 65536, False, iterations, 2), tuple(dims), (False,) * 2
    if name == "halo3d":
        dims = apps.dims_create(n, 3)
        return apps.halo(dims, 65536, False, iterations, 2), tuple(dims), (False,) * 3
    if name == "fft-transpose":
        dims = apps.dims_create(n, 2)
        return apps.fft_transpose(dims, 65536, iterations, 2), tuple(dims), (False, False)
    return apps.allreduce_loop(n, 1 << 20, iterations, 2), None, None


def graph_of(prog, grid, periodic) -> CommGraph:
    return CommGraph.from_coo(prog.name, prog.n_ranks, prog.src, prog.dst, prog.bytes, grid=grid, periodic=periodic)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabric", action="append", help="fabric spec (repeatable; default: four trees)")
    ap.add_argument("--kernel", action="append", choices=KERNELS)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(f"{'fabric':<28} {'kernel':<15} {'placement':<14} {'ms/iter':>9} {'map s':>6} {'sim s':>6} "
          f"{'messages':>9}")
    for spec in a.fabric or FABRICS:
        f = resolve_fabric(spec)
        n = f.n_hosts
        target = Target.whole(f, n, 1)
        for name in a.kernel or KERNELS:
            prog, grid, per = kernel(name, n, a.iterations)
            g = graph_of(prog, grid, per)
            t = {}
            for alg in ("block", "random", "topo"):
                t0 = time.perf_counter()
                m = map_ranks(g, target, alg, seed=a.seed)
                t1 = time.perf_counter()
                p = predict_iteration(f, m.host, prog)
                t2 = time.perf_counter()
                label = alg if alg != "topo" else "map"
                t[label] = p.median
                print(f"{spec:<28} {name:<15} {label if alg != 'topo' else 'map:' + m.algorithm:<14} "
                      f"{p.median * 1e3:>9.4f} {t1 - t0:>6.2f} {t2 - t1:>6.2f} {prog.n_messages:>9,}")
            print(f"{'':<28} {name:<15} speed-up of map over block {t['block'] / t['map']:.2f}, "
                  f"over random {t['random'] / t['map']:.2f}; predicted order "
                  + order_text(t))


if __name__ == "__main__":
    main()
