"""``fabscope demo``: the quick start's main job on the embedded default.

>>> busy_note(loadavg=0.1, cpus=2, ranks=2)
('this host: load average 0.10 on 2 CPUs as the job started, for its 2 ranks', False)
>>> busy_note(loadavg=2.5, cpus=2, ranks=2)[1], busy_note(loadavg=1.2, cpus=4, ranks=2)[1]
(True, False)

The bundled Itasca model runs the seed's random-pairs tests (8 and 1 ranks per
node) and the leaf-to-leaf offsets, with the seed's own figures beside the
model's, then the same random pairs in time (docs/dynamic.md); then, where MPI
is found, a short random-pairs measurement on this host.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from fabscope.cli.options import examples
from fabscope.seeds import ITASCA_MERGE, seed_table
from fabscope.units import format_size, plural

if TYPE_CHECKING:
    from rich.console import Console

OFFSETS = (1, 2, 4, 8, 16, 32)

#: what a user meets first: the seeds are talks, the pattern seed is a random seed
SEEDS_NOTE = ("[cyan]seed 000[/cyan] is the first of the five talks fabscope implements (README, 'The seeds'): "
              "Itasca, University of Minnesota's 1074-node QDR InfiniBand cluster (2009), whose measured tables "
              "stand in cyan beside the model's.  A [bold]pattern seed[/bold] (--seed, here "
              "{seed}) is something else: the random seed that picks which ranks pair up.")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the quick start: Itasca's seed tables from the model, and a run on this host",
                       description="Model the Itasca cluster of seed 000 (the first of the five talks fabscope "
                                   "implements: University of Minnesota, 2009, a 1074-node QDR InfiniBand fat tree) "
                                   "and print its random-pairs and leaf-to-leaf tables beside the talk's measured "
                                   "figures, then the same pairs in time; write out/demo-report.html; then, where "
                                   "MPI is found, measure random pairs on this host.",
                       epilog=examples("fabscope demo --no-measure", "fabscope demo --seed 3 --no-measure",
                                       "fabscope demo"))
    p.add_argument("--seed", type=int, default=7,
                   help="pattern seed: which random pairs the model draws (not a seed talk; those are numbered 000-004)")
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
    con.print(SEEDS_NOTE.format(seed=args.seed) + "\n")
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
    con.print("[cyan]seed 000 (measured): near sets of 9 leaves at about 3000 MB/s; far leaves down to 1826 MB/s "
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
    for col in ("job", "class", "seed 000 (measured)", "snapshot", "max-min in time", "congestion in time"):
        t.add_column(col, justify="right")
    worst = 0               # the congestion column's largest distance from the seed, as the table prints it
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
        counted = []
        for label, (_, seed_avg, _) in seed_table({"fabric": "itasca", "pattern": "random-pairs", "ranks": ranks,
                                                   "ppn": ppn}).items():
            if label == "Overall" or label not in avg[0]:
                continue
            t.add_row(f"{ranks} x {ppn} ppn", label, f"{seed_avg:.0f}",
                      *[f"{a[label]:.0f} ({100 * (a[label] / seed_avg - 1):+.0f}%)" for a in avg])
            counted.append(round(abs(100 * (avg[2][label] / seed_avg - 1))))
        worst = max(worst, *counted) if counted else worst
    con.print(t)
    con.print("[cyan]the seed lies between the snapshot (every message always in flight) and max-min sharing in "
              f"time; counted sharing in time comes within {worst}% of every class on this pattern seed (within 15% "
              "on the mean over 8 pattern seeds: docs/dynamic.md)[/cyan]\n")


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
    from fabscope.measure.parse import read_run
    from fabscope.measure.runner import usable_cpus

    con.rule("[bold]Measured: random-pairs ping-pong on this host")
    os.makedirs("out", exist_ok=True)
    out = os.path.join("out", "demo-random-pairs.jsonl")
    rc = main(["measure", "--np", "2", "--out", out, "random-pairs", "--size", "1MiB", "--iterations", "20"])
    if rc == 0:
        load = read_run(out).header.get("loadavg")
        text, busy = busy_note(float(load) if load is not None else os.getloadavg()[0], usable_cpus(), 2)
        con.print(f"[yellow]warning: {text}: the machine was busy, so the figure above is lower and less steady "
                  "than the fabric's; run again on an idle machine[/yellow]" if busy else f"[dim]{text}[/dim]")
    return rc


def busy_note(loadavg: float, cpus: int, ranks: int) -> tuple[str, bool]:
    """The load the job met, and whether other processes held CPUs its ranks needed.

    ``loadavg`` is the 1-minute load average fabscope-bench records as the job starts: mostly other
    processes, as the average lags the ranks just started.  Busy: it leaves fewer idle CPUs than ranks
    (a CPU time against wall time share says less: a short job's wall time is mostly the launcher's).
    """
    text = f"this host: load average {loadavg:.2f} on {plural(cpus, 'CPU')} as the job started, for its {plural(ranks, 'rank')}"
    return text, loadavg > cpus - ranks + 0.5
