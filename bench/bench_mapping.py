"""Mapping quality and time: tori vs Scotch, Itasca tables, and 4K / 64K / 1M ranks.

    python bench/bench_mapping.py            # everything (about two minutes on 2 cores)
    python bench/bench_mapping.py --part torus|itasca|scale [--itasca-nodes 128]

Hops: router hops on tori; links crossed on Itasca (2 same leaf, 4 near set, 6 far).
Max link: bytes on the busiest directed link under the fabric's own routing (1 MB per message).
The per-algorithm tables have the columns and units ``fabscope map`` prints (fabscope.mapping.table).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time

from fabscope.fabric.generators import itasca, torus
from fabscope.mapping.api import map_ranks, metrics_rows
from fabscope.mapping.commgraph import pencils, stencil
from fabscope.mapping.metrics import evaluate
from fabscope.mapping.table import metrics_header, metrics_line
from fabscope.mapping.targets import Target

MB = 1e6


def _scotch_ok() -> bool:
    from fabscope.mapping.algorithms.scotch import available

    return available()


def row(name, m, e):
    (r,) = metrics_rows([(m, e)])
    print("  " + metrics_line({**r, "algorithm": name}))


def header():
    print("  " + metrics_header())


def part_torus() -> None:
    algs = ["topo"] + (["scotch"] if _scotch_ok() else [])
    for dims, tdims, cores in (((16, 16, 16), (16, 16, 16), 1), ((16, 16, 32), (8, 8, 16), 8),
                               ((16, 16, 16), (8, 8, 16), 4), ((64, 64), (16, 16, 16), 1)):
        g = stencil(dims, halo=MB)
        t = Target.whole(torus(tdims, cores=cores), g.n)
        print(f"\n{g.name} ({g.n} ranks) on torus {'x'.join(map(str, tdims))}, {cores} per node")
        header()
        for a in ["block", "random"] + algs:
            with contextlib.redirect_stdout(io.StringIO()):
                m = map_ranks(g, t, a)
            row(m.algorithm, m, evaluate(m, g))


def part_itasca(nodes: list[int]) -> None:
    f = itasca()
    algs = ["block", "cyclic", "random", "hier", "hier+swap+links", "topo"]
    algs += ["scotch", "scotch+swap+links"] if _scotch_ok() else []
    for n_nodes in nodes:
        graphs = [stencil((8, 8, 16), halo=MB), pencils(32, 32, size=MB)] if n_nodes == 128 else \
                 [stencil((16, 16, 32), halo=MB), pencils(64, 128, size=MB)]
        t = Target.whole(f, n_nodes * 8, ppn=8)
        for g in graphs:
            print(f"\nItasca, {n_nodes} nodes x 8 ranks: {g.name}")
            header()
            for a in algs:
                m = map_ranks(g, t, a)
                row(m.algorithm, m, evaluate(m, g))


def part_scale() -> None:
    print("\nscaling: 3D stencil on a torus, 'topo' (fold; refinement skipped when proven optimal)")
    print(f"  {'ranks':>9} {'torus':>10} {'ppn':>4} {'fabric s':>9} {'map s':>7} {'hops/edge':>9} {'eval s':>7}")
    for dims, tdims, cores in (((16, 16, 16), (16, 16, 16), 1), ((32, 32, 64), (16, 16, 32), 8),
                               ((128, 128, 64), (32, 32, 32), 32)):
        t0 = time.perf_counter()
        f = torus(tdims, cores=cores)
        g = stencil(dims, halo=MB)
        t1 = time.perf_counter()
        m = map_ranks(g, Target.whole(f, g.n), "topo")
        t2 = time.perf_counter()
        e = evaluate(m, g, links=False)
        t3 = time.perf_counter()
        print(f"  {g.n:>9} {'x'.join(map(str, tdims)):>10} {cores:>4} {t1 - t0:9.2f} {t2 - t1:7.2f} "
              f"{e.hops_per_edge:9.3f} {t3 - t2:7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("torus", "itasca", "scale", "all"), default="all")
    ap.add_argument("--itasca-nodes", default="128,1024")
    a = ap.parse_args()
    if a.part in ("torus", "all"):
        part_torus()
    if a.part in ("itasca", "all"):
        part_itasca([int(x) for x in a.itasca_nodes.split(",")])
    if a.part in ("scale", "all"):
        part_scale()


if __name__ == "__main__":
    main()
