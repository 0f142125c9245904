"""``fabscope analyze``: classify and summarize fabscope-bench output afterwards."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from fabscope.cli.files import existing, not_a_file, reads, writes
from fabscope.cli.options import examples
from fabscope.names import plain
from fabscope.units import format_rate, plural

if TYPE_CHECKING:
    from fabscope.measure.parse import BenchRun

HEADLINE = {"bw": "bandwidth", "bibw": "bandwidth", "mbw": "bandwidth", "random-msg": "bandwidth",
            "bucket-brigade": "bandwidth", "ring": "bandwidth", "random-ring": "bandwidth",
            "multi-lat": "latency", "alltoall": "latency", "allreduce": "latency"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="classify and summarize fabscope-bench results (JSON lines)",
                       description="Read fabscope-bench output (also a truncated file), class every pair by "
                                   "the fabric or by socket and node, print the seeds' tables, the latency "
                                   "model with its kinks, balance ratios; with an intra-node and an "
                                   "inter-node run, the Communication Balance Ratios.",
                       epilog=examples("fabscope analyze run.jsonl",
                                       "fabscope analyze run.jsonl --fabric itasca --csv pairs.csv",
                                       "fabscope analyze run.jsonl --fabric itasca -o pairs.json"))
    reads(p.add_argument("files", nargs="+", metavar="FILE", help="fabscope-bench output (.jsonl)"))
    reads(p.add_argument("--fabric", help="fabric spec or JSON file to class pairs by (default: socket/node)"), existing)
    reads(p.add_argument("--host-map", help="file of 'job-host fabric-host' lines: how this job's host names are "
                                            "named in --fabric (e.g. \"$(hostname) node0001\")"))
    not_a_file(p.add_argument("--test", help="test whose pairs to tabulate and write (default: the first pair test)"))
    writes(p.add_argument("-o", "--output", help="write the per-pair result (fabscope.result JSON)"))
    writes(p.add_argument("--csv", help="write the per-pair table as CSV"))
    p.add_argument("--merge", action="store_true",
                   help="read a file holding several runs (several headers) as one run (refused otherwise)")
    p.add_argument("--peak-gflops", type=float, help="peak GFLOPS of one core (default: clock x --flops-per-cycle)")
    p.add_argument("--flops-per-cycle", type=float, default=16.0, help="double FLOPs per cycle per core")
    p.set_defaults(func=run)


def report(run: BenchRun, fabric: Any = None, peak: float | None = None, fpc: float = 16.0,
           link_from: int | None = None) -> list[str]:
    """The text fabscope prints for one run (also used by ``fabscope measure``); ``link_from``: the smallest
    size whose figures are the links' (a testbed's, :mod:`fabscope.testbed.smallmsg`), where the latency
    model starts."""
    from fabscope.fabric.model import MB
    from fabscope.measure import analysis as an
    from fabscope.measure.parse import PAIR_TESTS, to_result

    h = run.header
    out = [run.describe(), f"MPI: {h.get('mpi_library')}" + (f", built with {h['mpicc']}" if h.get("mpicc") else ""),
           an.wait_loop(run)]
    for test in run.tests:
        recs = run.of(test)
        if not recs:
            continue
        if test in PAIR_TESTS:
            r = to_result(run, test, fabric)
            # one line per element: the terminal writer shows a newline inside a line as "\\n"
            out += ["", *an.seed_table(r, f"{test}: {plural(r.n_pairs, 'pair')}, {recs[0]['bytes']} B x "
                                          f"{recs[0]['iters']}").split("\n")]
            if test == "leaf-pairs" and fabric is not None and "leaf" in fabric.groups:
                out += _leaf_blocks(r, fabric)
        elif test == "pingpong":
            out += ["", f"pingpong ({an.pair_kind(run)}): size [B], latency [us], bandwidth [MB/s]"]
            out += [f"{x['bytes']:>10} {x['latency'] * 1e6:10.3f} {x['bandwidth'] / MB:10.1f}" for x in recs]
            fitted = [x for x in recs if link_from is None or x["bytes"] >= link_from]
            if len(fitted) >= 2:
                fit = an.fit_latency_model([x["bytes"] for x in fitted], [x["latency"] for x in fitted])
                over = f" (sizes from {link_from} B: the links' own)" if len(fitted) < len(recs) else ""
                out += [f"latency model alpha + m/beta per regime{over}:", *an.format_model(fit).split("\n")]
            elif link_from is not None and len(recs) >= 2:
                out.append(f"no latency model: fewer than two sizes from {link_from} B, the first the links' own")
        elif test == "stream":
            for x in recs:
                out.append(f"stream {x['mode']:>6} {x['host']}: {x['ranks']} ranks, {format_rate(x['bandwidth'])}")
        elif test in HEADLINE:
            key = HEADLINE[test]
            pts = ", ".join(f"{x['bytes']} B{'/' + str(x['ranks']) + 'r' if 'ranks' in x and test in ('alltoall', 'allreduce') else ''}: "
                            + (f"{x[key] * 1e6:.2f} us" if key == "latency" else format_rate(x[key]))
                            for x in recs[:: max(1, len(recs) // 6)])
            out.append(f"{test}: {pts}")
    from fabscope.measure.apps import app_runs, app_table
    apps = app_runs(run)
    if apps:     # application kernels: time per iteration and the traffic they counted
        out += ["", *app_table(apps)]
    bal = an.balance(run, peak, fpc)
    if bal:
        out.append("bytes/FLOP (seed 004): " + ", ".join(f"{k} {v:.3g}" for k, v in bal.items()))
    return out


def link_sizes_from(path: str) -> int | None:
    """The smallest size whose figures are the links', as ``measure --testbed`` recorded it in the run's
    testbed line (:mod:`fabscope.testbed.smallmsg`); None for a run off a testbed."""
    from fabscope.testbed.linkbound import records

    sizes = [r.get("link_sizes_from") for r in records(path)] if path.endswith(".jsonl") else []
    return max((s for s in sizes if isinstance(s, int)), default=None)


def _leaf_blocks(result: Any, fabric: Any) -> list[str]:
    """Seed 000's all-pairs summary: the per-leaf-pair minima over near-set and far pairs, and the map."""
    from fabscope.report.leafmatrix import leaf_matrix

    m = leaf_matrix(result, fabric)
    out = ["leaf pairs, min of the node pairs between two leaves [MB/sec]:"]
    out += [f"{mx:8.0f} {av:10.0f} {mn:10.0f}  {label}" for label, (mx, av, mn) in m.block_summary("min").items()]
    return out + [m.render("min")]


def run(args: argparse.Namespace) -> int:
    from fabscope.atomic import all_or_none, check_outputs
    from fabscope.measure import analysis as an
    from fabscope.measure.parse import read_run, to_result

    check_outputs({"-o/--output": args.output, "--csv": args.csv})
    fabric = None
    if args.fabric:
        from fabscope.resolver import resolve_fabric
        fabric = resolve_fabric(args.fabric)
    runs = [read_run(f, merge=args.merge) for f in args.files]
    if args.host_map:
        from fabscope.fabric.importers.hostmap import read_hostmap

        hm = read_hostmap(args.host_map)
        for r in runs:
            r.ranks["host"] = [hm.lookup(-1, -1, h) or h for h in r.ranks["host"]]
    for i, r in enumerate(runs):
        print(("\n" if i else "") + "\n".join(plain(ln) for ln in report(r, fabric, args.peak_gflops,
                                                                         args.flops_per_cycle, link_sizes_from(r.path))))
    kinds = {an.pair_kind(r): r for r in runs if r.of("pingpong")}
    sides = an.cbr_sides(runs)               # mbw may sit in files of its own, beside the pingpong ones
    if "pingpong" in sides.get("intra", {}) and "pingpong" in sides.get("inter", {}):
        print("\nCommunication Balance Ratios (intra / inter, seed 001):")
        for metric, by_size in an.cbr(sides["intra"], sides["inter"]).items():
            print(f"  CBR-{metric}: " + ", ".join(f"{s} B {v:.2f}" for s, v in list(by_size.items())[::4]))
    else:
        print("\n" + an.cbr_missing(list(kinds)))
    if args.output or args.csv:
        res = to_result(runs[0], args.test, fabric)
        with all_or_none():
            if args.output:
                res.write_json(args.output)
            if args.csv:
                res.write_csv(args.csv)
    return 0
