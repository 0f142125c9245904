"""``fabscope demo``: the quick start's main job on the embedded default.

The bundled Itasca model runs the seed's random-pairs tests (8 and 1 ranks per
node) and the leaf-to-leaf offsets, with the seed's own figures beside the
model's, then the same random pairs in time (docs/dynamic.md); then, where MPI
is found, a short random-pairs measurement on this host.
"""

from __future__ import annotations

import argparse

from typing import TYPE_CHECKING

from fabscope.seeds import ITASCA_MERGE, seed_table
from fabscope.units import format_size

if TYPE_CHECKING:
    from rich.console import Console

OFFSETS = (1, 2, 4, 8, 16, 32)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the quick start: Itasca's seed tables from the model, and a run on this host")
    p.add_argument("--seed", type=int, default=7, help="seed of the random pairs (default: 7)")
    p.add_argument("--no-measure", action="store_true", help="skip the MPI run on this host")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from fabscope.fabric.generators import itasca
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.report.tables import make_console, print_result
    from fabscope.traffic import patterns as pt

    con = make_console()
    f = itasca()
    size = 2**20
    done = []
    con.rule("[bold]Model: Itasca (seed 000), QDR fat tree under two 324-port directors, min-hop static routing")
    for ranks, ppn in ((256, 8), (1024, 1)):
        p = Placement.block(f, ranks, ppn)
        r = simulate(f, p, pt.random_pairs(ranks, size, seed=args.seed), seed=args.seed,
                     meta={"ppn": ppn, "size": size, "size_text": format_size(size)})
        print_result(r, con, merge=ITASCA_MERGE, seed=seed_table(r.meta), limits=1)
        done.append((f"random pairs, {ranks} ranks at {ppn} per node", r))
        con.print()
    p = Placement.block(f, f.n_hosts, 1)
    t = Table(title="leaf-to-leaf offset test (8 nodes per leaf, 1 rank per node) [MB/sec]",
              title_justify="left", box=None)
    for col in ("offset", "Max", "Average", "Min", "near-set pairs", "far pairs"):
        t.add_column(col, justify="right")
    for off in OFFSETS:
        r = simulate(f, p, pt.leaf_offset(f, p, off, size))
        s = r.summary()[0]
        cls = r.pairs["cls"]
        near = int((cls == f.class_labels.index("Near Set")).sum())
        far = int((cls == f.class_labels.index("Far Leafs")).sum())
        t.add_row(str(off), f"{s.max:.0f}", f"{s.avg:.0f}", f"{s.min:.0f}", str(near), str(far))
    con.print(t)
    con.print("[cyan]seed 000: near sets of 9 leaves at about 3000 MB/s; far leaves down to 1826 MB/s "
              "(\"fat tree is not the same as full crossbar\")[/cyan]\n")
    _in_time(con, f, size, args.seed, done)
    _report(con, f, done)
    if args.no_measure:
        return 0
    return _measure_here(con)


def _in_time(con: Console, f, size: float, seed: int, done) -> None:
    """The two random-pairs jobs as ping-pong loops in time, under both sharings, beside the snapshot."""
    from fabscope.dynamic import programs as pg
    from fabscope.dynamic.results import pingpong_result
    from fabscope.dynamic.run import run_program_on
    from fabscope.fabric.placement import Placement
    from fabscope.traffic import patterns as pt
    from rich.table import Table

    t = Table(title="the same random pairs in time: 100 ping-pong iterations per pair, class averages [MB/sec]",
              title_justify="left", box=None)
    for col in ("job", "class", "seed", "snapshot", "max-min in time", "congestion in time"):
        t.add_column(col, justify="right")
    for (ranks, ppn), (_, static) in zip(((256, 8), (1024, 1)), list(done)):
        p = Placement.block(f, ranks, ppn)
        traffic = pt.random_pairs(ranks, size, seed=seed)
        m = traffic.n_flows // 2
        prog = pg.pingpong(traffic.src[:m], traffic.dst[:m], size, 100, n_ranks=ranks)
        timed = [pingpong_result(f, run_program_on(f, p, prog, seed=seed, sharing=sh),
                                 {"pattern": "random-pairs", "ppn": ppn, "size": size, "model": model})
                 for sh, model in (("maxmin", "maxmin"), ("count", "congestion"))]
        for r, model in zip(timed, ("max-min", "congestion")):
            done.append((f"random pairs, {ranks} ranks at {ppn} per node, in time ({model})", r))
        avg = [{row.label: row.avg for row in r.summary(merge=ITASCA_MERGE)} for r in [static] + timed]
        for label, (_, seed_avg, _) in seed_table({"fabric": "itasca", "pattern": "random-pairs", "ranks": ranks,
                                                   "ppn": ppn}).items():
            if label == "Overall" or label not in avg[0]:
                continue
            t.add_row(f"{ranks} x {ppn} ppn", label, f"{seed_avg:.0f}",
                      *[f"{a[label]:.0f} ({100 * (a[label] / seed_avg - 1):+.0f}%)" for a in avg])
    con.print(t)
    con.print("[cyan]the seed lies between the snapshot (every message always in flight) and max-min sharing in "
              "time; counted sharing in time comes within 15% (docs/dynamic.md)[/cyan]\n")


def _report(con: Console, fabric, done) -> None:
    """The report of the model's runs (needs the 'report' extras, which `make setup` installs)."""
    import os

    from fabscope.cli.report import report_results
    from fabscope.errors import FabscopeError

    os.makedirs("out", exist_ok=True)
    try:
        report_results([r for _, r in done], os.path.join("out", "demo-report.html"), fabric, con,
                       labels=[lab for lab, _ in done])
    except FabscopeError as err:
        con.print(f"[dim]no report: {err}[/dim]")


def _measure_here(con: Console) -> int:
    import os

    from fabscope.cli import main

    con.rule("[bold]Measured: random-pairs ping-pong on this host")

    os.makedirs("out", exist_ok=True)
    return main(["measure", "--np", "2", "--out", os.path.join("out", "demo-random-pairs.jsonl"),
                 "random-pairs", "--size", "1MiB", "--iterations", "20"])
