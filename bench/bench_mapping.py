"""Mapping quality and time: topo against an honest Scotch, the busiest-link guard, 4K / 1M ranks.

    python bench/bench_mapping.py                       # every part (several minutes on 2 cores)
    python bench/bench_mapping.py --part quality|objective|speed|anneal|scale [--scotch-seeds 5] [--case I2]

quality:   case x algorithm: hop-bytes, max link MB, seconds, Scotch's seed and strategy; then topo
           against Scotch per case (goal: 20 % lower hop-bytes or max link, never worse on both).
objective: the busiest-link case, pencils 64x64 on a 16x16x16 torus: fold, fold+swap without and with the
           busiest-link guard, and topo under each objective.
speed:     topo on 4,096 ranks of a torus (pencils, a halo and an all-to-all), seconds per stage.
anneal:    the +anneal loop in C against its Python reference (steps per CPU second, same mapping).
scale:     3D stencils to 1,048,576 ranks.

Columns are `fabscope map`'s: hop-bytes in bytes (hops: router hops on tori, links crossed on trees),
max link MB = bytes on the busiest directed link under the fabric's own routing / 1e6.  Every case
is one `fabscope map` command (printed above its table) with the CLI's default message sizes.
"""

from __future__ import annotations

import argparse
import time

from fabscope.fabric.io import load_fabric
from fabscope.mapping.api import map_ranks
from fabscope.mapping.bounds import bounds
from fabscope.mapping.commspec import load_comm
from fabscope.mapping.metrics import evaluate
from fabscope.mapping.table import metrics_header, metrics_line
from fabscope.mapping.targets import Target

MESH = "bench/data/mesh1024.mtx"
# id, --comm, --fabric, --ppn (None: one rank per host)
CASES = [
    ("T1", "stencil3d:32x32x4", "torus:16x16x16,cores=1", None),
    ("T2", "stencil2d:64x64", "torus:16x16x16,cores=1", None),
    ("T3", "pencils:64x64", "torus:16x16x16,cores=1", None),
    ("T4", MESH, "torus:8x8x16,cores=1", None),
    ("T5", "stencil2d:32x32", "torus:4x4x8,cores=8", 8),
    ("T6", MESH, "torus:4x4x8,cores=8", 8),
    ("I1", "stencil3d:8x8x16", "itasca", 8),
    ("I2", "pencils:32x32", "itasca", 8),
    ("I3", MESH, "itasca", 8),
    ("F1", "stencil3d:8x8x16", "fat-tree:k=8,levels=3", 8),
    ("F2", "pencils:32x32", "fat-tree:k=8,levels=3", 8),
    ("F3", MESH, "fat-tree:k=8,levels=3", 8),
]


def _scotch_ok() -> bool:
    from fabscope.mapping.algorithms.scotch import available

    return available()


def header(extra: str = "") -> None:
    print(metrics_header() + extra)


def row(m, e, extra: str = "") -> None:
    """One line in the columns and units ``fabscope map`` prints (fabscope.mapping.table)."""
    print(metrics_line({"algorithm": m.algorithm, "hop_bytes": e.hop_bytes, "hops_per_byte": e.hops_per_byte,
                        "hops_per_edge": e.hops_per_edge, "max_dilation": e.max_dilation,
                        "max_link_load": e.max_link_load, "seconds": m.seconds}) + extra)


def _setup(comm: str, fabric: str, ppn: int | None):
    f = load_fabric(fabric)
    g = load_comm(comm)
    return f, g, Target.whole(f, g.n, ppn)


def part_quality(seeds: int, only: str | None) -> list[tuple]:
    algs = ["block", "topo"] + (["scotch"] if _scotch_ok() else [])
    summary = []
    for cid, comm, fabric, ppn in CASES:
        if only and cid not in only.split(","):
            continue
        f, g, t = _setup(comm, fabric, ppn)
        cmd = f"fabscope map --fabric {fabric}{f' --ppn {ppn}' if ppn else ''} --comm {comm} " \
              f"--compare block,scotch --scotch-seeds {seeds}"
        print(f"\n{cid}: {g.name} ({g.n} ranks) on {f.name}, {t.n_nodes} nodes x {int(t.slots_per_node[0])}\n  $ {cmd}")
        header(f"  {'scotch seed / strategy / target'}")
        res = {}
        for a in algs:
            m = map_ranks(g, t, a, scotch_seeds=seeds)
            e = evaluate(m, g)
            res[a] = e
            note = ""
            if a == "scotch":
                note = f"  seed {m.info['seed']} / {m.info['strategy']} / {m.info['target']}"
            elif a == "topo":
                note = f"  (topo chose {m.algorithm})"
            row(m, e, note)
        if "scotch" in res:
            s, tp = res["scotch"], res["topo"]
            dh = 100 * (tp.hop_bytes / s.hop_bytes - 1)
            dl = 100 * (tp.max_link_load / s.max_link_load - 1)
            met = "met" if min(dh, dl) <= -20 else ("not met" if not (dh > 1e-9 and dl > 1e-9) else "WORSE on both")
            if met == "not met":
                b = bounds(g, t)            # no mapping goes below these: 20 % under Scotch may be out of reach
                if b.hop_bytes > 0.8 * s.hop_bytes and b.busiest_host_link > 0.8 * s.max_link_load:
                    met = "not met: impossible (bounds)"
            summary.append((cid, g.name, f.name, dh, dl, met))
    if summary:
        print("\ntopo against Scotch (negative: topo lower); goal: -20 % on hop-bytes or max link, never worse on both;"
              "\n\"impossible (bounds)\": fabscope.mapping.bounds puts both metrics above 0.8 x Scotch for every mapping")
        print(f"{'case':<5} {'graph':<20} {'fabric':<24} {'hop-bytes':>10} {'max link':>9}  goal")
        for cid, gn, fn, dh, dl, met in summary:
            print(f"{cid:<5} {gn:<20} {fn:<24} {dh:>+9.1f}% {dl:>+8.1f}%  {met}")
    return summary


def part_objective() -> None:
    from fabscope.mapping.algorithms.refine import refine_hops

    f, g, t = _setup("pencils:64x64", "torus:16x16x16,cores=1", None)
    print(f"\nobjective: {g.name} on {f.name} (the busiest-link case)\n"
          f"  $ fabscope map --fabric torus:16x16x16,cores=1 --comm pencils:64x64 --compare fold,fold+swap")
    header()
    fold = map_ranks(g, t, "fold")
    row(fold, evaluate(fold, g))
    t0 = time.perf_counter()
    loose = refine_hops(fold, g, link_tolerance=None, min_keep_gain=0.0)
    loose = type(loose)(loose.target, loose.slot, "fold+swap (unguarded)", time.perf_counter() - t0 + fold.seconds)
    row(loose, evaluate(loose, g))
    guarded = refine_hops(fold, g, min_keep_gain=0.0)
    row(type(guarded)(guarded.target, guarded.slot, "fold+swap (1 % guard)", guarded.seconds), evaluate(guarded, g))
    for obj in ("hop-bytes", "busiest-link", "time"):
        m = map_ranks(g, t, "topo", objective=obj)
        e = evaluate(m, g)
        row(type(m)(m.target, m.slot, f"topo [{obj}]", m.seconds), e, f"  chose {m.algorithm}")


def part_speed() -> None:
    print("\nspeed: topo (objective busiest-link) on 4,096 ranks of a 16x16x16 torus, 1 per node; "
          "Scotch best of 1 seed for scale")
    print("(wall seconds, and the CPU seconds of this process: on a shared machine the second is the fairer)")
    print(f"{'graph':<20} {'topo s':>7} {'topo cpu':>8} {'chose':<14} {'scotch(1) s':>11} {'cpu':>6}")
    map_ranks(load_comm("stencil3d:4x4x4"), Target.whole(load_fabric("torus:4x4x4,cores=1"), 64), "topo")  # warm
    import fabscope.routing.distances, fabscope.routing.dor  # noqa: F401  (imports are not run time)
    for comm in ("stencil3d:32x32x4", "stencil2d:64x64", "pencils:64x64"):
        f, g, t = _setup(comm, "torus:16x16x16,cores=1", None)
        c0 = time.process_time()
        m = map_ranks(g, t, "topo")
        c1 = time.process_time()
        sc = f"{'-':>11} {'-':>6}"
        if _scotch_ok():
            s = map_ranks(g, t, "scotch", scotch_seeds=1)
            sc = f"{s.seconds:>11.2f} {time.process_time() - c1:>6.2f}"
        print(f"{g.name:<20} {m.seconds:>7.2f} {c1 - c0:>8.2f} {m.algorithm:<14} {sc}")


def part_anneal(steps_py: int = 200_000) -> None:
    """The annealing loop, compiled against its Python reference on T4's mesh (same start, same seed)."""
    from fabscope.mapping.algorithms.anneal import T_END, T_START, _compiled, _Problem, anneal_reference

    f, g, t = _setup(MESH, "torus:8x8x16,cores=1", None)
    m = map_ranks(g, t, "hier")
    p = _Problem(m, g)
    print("\nanneal: steps per second of the loop on T4 (mesh1024 on an 8x8x16 torus, 1 per node), from hier")
    print(f"{'engine':<8} {'steps':>11} {'CPU s':>7} {'steps/s':>11} {'hop-bytes':>10}")
    out = {}
    for engine, steps in (("c", 20_000 * g.n), ("c", steps_py), ("python", steps_py)):
        c0 = time.process_time()
        if engine == "c":
            hb, slot, done = _compiled(p, m.slot, T_START * p.unit, T_END * p.unit, steps, 0, 0.0)
        else:
            hb, slot = anneal_reference(p, m.slot, T_START * p.unit, T_END * p.unit, steps, 0)
        cpu = time.process_time() - c0
        out[(engine, steps)] = (cpu, slot)
        print(f"{engine:<8} {steps:>11,} {cpu:>7.2f} {steps / cpu:>11,.0f} {hb:>10.4g}")
    (cc, sc), (cp, sp) = out[("c", steps_py)], out[("python", steps_py)]
    print(f"compiled / Python on {steps_py:,} steps: {cp / cc:,.0f}x faster, same mapping: {bool((sc == sp).all())}")


def part_scale() -> None:
    print("\nscaling: 3D stencil on a torus, 'topo' (fold; refinement skipped when proven optimal)")
    print(f"  {'ranks':>9} {'torus':>10} {'ppn':>4} {'fabric s':>9} {'map s':>7} {'map cpu':>7} {'hops/edge':>9} {'eval s':>7}")
    for comm, tdims, cores in (("stencil3d:16x16x16", "16x16x16", 1), ("stencil3d:32x32x64", "16x16x32", 8),
                               ("stencil3d:128x128x64", "32x32x32", 32)):
        t0 = time.perf_counter()
        f = load_fabric(f"torus:{tdims},cores={cores}")
        g = load_comm(comm)
        t1 = time.perf_counter()
        c1 = time.process_time()
        m = map_ranks(g, Target.whole(f, g.n), "topo")
        t2 = time.perf_counter()
        cpu = time.process_time() - c1
        e = evaluate(m, g, links=False)
        t3 = time.perf_counter()
        print(f"  {g.n:>9} {tdims:>10} {cores:>4} {t1 - t0:9.2f} {t2 - t1:7.2f} {cpu:7.2f} {e.hops_per_edge:9.3f} {t3 - t2:7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("quality", "objective", "speed", "anneal", "scale", "all"), default="all")
    ap.add_argument("--scotch-seeds", type=int, default=5)
    ap.add_argument("--case", help="comma-separated case ids of the quality part (T1..T6, I1..I3, F1..F3)")
    a = ap.parse_args()
    if a.part in ("quality", "all"):
        part_quality(a.scotch_seeds, a.case)
    if a.part in ("objective", "all"):
        part_objective()
    if a.part in ("speed", "all"):
        part_speed()
    if a.part in ("anneal", "all"):
        part_anneal()
    if a.part in ("scale", "all"):
        part_scale()


if __name__ == "__main__":
    main()
