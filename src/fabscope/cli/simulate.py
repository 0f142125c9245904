"""``fabscope simulate``: a pattern through a fabric's routing and the flow model."""

from __future__ import annotations

import argparse
import os

from fabscope.atomic import all_or_none, check_outputs
from fabscope.cli.options import (add_fabric, add_job, add_pattern, add_ports, add_routing, add_seed, add_size, examples,
                                  job_shape, require_positive)
from fabscope.errors import PlacementError
from fabscope.cli.names import MODELS
from fabscope.seeds import ITASCA_MERGE, seed_table
from fabscope.units import format_size, parse_size


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="predict every pair's bandwidth with the flow model",
                       description="Run a traffic pattern through a fabric's routing and the max-min fair "
                                   "flow model; print Max / Average / Min by class, as the seeds do (seed 000: "
                                   "the Itasca cluster's talk, whose tables fabscope reproduces; see README).",
                       epilog=examples(
                           "fabscope simulate --fabric itasca --pattern random-pairs --ppn 1 --seed 7",
                           "fabscope simulate --fabric fat-tree:k=4,levels=3 --pattern shift:k=5 --size 64KiB",
                           "fabscope simulate --fabric itasca --ranks 64 --ppn 8 --pattern allreduce:ring --dynamic"))
    add_fabric(p)
    add_pattern(p, dynamic=True)
    add_job(p)
    p.add_argument("--placement", choices=("block", "cyclic"), default="block",
                   help="block: --ppn ranks on one host, then the next; cyclic: one rank per host in turn")
    p.add_argument("--hostfile", help="place ranks by a host file, one line per rank ($PBS_NODEFILE)")
    add_size(p)
    add_seed(p)
    add_routing(p)
    add_ports(p)
    p.add_argument("--model", choices=MODELS, default="maxmin",
                   help="flow model: maxmin, or congestion: capacity / flows on the busiest link "
                        "(ORCS's rule; with --dynamic applied at every event)")
    p.add_argument("--offset", type=int, help="leaf-offset: offset between paired leaves (default: 1)")
    p.add_argument("--hops", type=int, help="partner-hops: hops between partners (default: 1)")
    p.add_argument("-o", "--output", help="write the result as JSON")
    p.add_argument("--csv", help="write the per-pair table as CSV")
    p.add_argument("--report", metavar="HTML", help="also write the one-file HTML report (see 'fabscope report')")
    p.add_argument("--matrix", choices=("min", "avg", "max"), default="min",
                   help="leaf-pairs: which leaf matrix to draw")
    from fabscope.cli.dynamic import add_arguments

    add_arguments(p)
    p.set_defaults(func=run, exit_at_once=True)      # cli.main: no teardown once the outputs are written


def run(args: argparse.Namespace) -> int:
    # the library is imported here, not at the top: building the parser (--help) loads no numpy
    from fabscope.fabric.placement import Placement
    from fabscope.report.tables import make_console, print_leaf_matrix

    con = make_console()
    require_positive(args, "ranks", "ppn")
    if args.report:
        from fabscope.cli.report import check_output

        check_output(args.report)
    check_outputs({"-o/--output": args.output, "--csv": args.csv, "--report": args.report},
                  inputs=[args.fabric if os.path.exists(args.fabric) else None, args.hostfile])
    from fabscope.resolver import resolve_fabric

    from fabscope.fabric.ports import parse_ports

    args.ports = parse_ports(args.ports)          # a bad policy refused before the fabric is built
    fabric = resolve_fabric(args.fabric)
    size = parse_size(args.size)
    if args.hostfile:
        from fabscope.textio import read_lines

        names = [ln.split()[0] for _, ln in read_lines(args.hostfile, "host file", PlacementError)
                 if ln.strip() and not ln.lstrip().startswith("#")]
        placement = Placement.from_hostlist(fabric, names)
    else:
        ranks, ppn = job_shape(args, fabric)
        build = Placement.block if args.placement == "block" else Placement.cyclic
        placement = build(fabric, ranks, ppn)
    if args.dynamic:
        from fabscope.cli.dynamic import run_dynamic

        return run_dynamic(args, con, fabric, placement, size)
    from fabscope.model.simulate import simulate
    from fabscope.traffic.spec import make_traffic

    extra = {k: v for k, v in (("offset", args.offset), ("hops", args.hops)) if v is not None}
    traffic = make_traffic(args.pattern, fabric, placement, size, seed=args.seed, **extra)
    with con.status(f"routing and solving {traffic.n_flows} flows on {fabric.name} ...",
                    spinner="dots") if con.is_terminal else _nothing():
        result = simulate(fabric, placement, traffic, args.routing, model=args.model, seed=args.seed, ports=args.ports,
                          meta={"ppn": args.ppn or None, "size": size, "size_text": format_size(size),
                                "placement": "hostfile" if args.hostfile else args.placement})
    with all_or_none():
        if args.output:
            result.write_json(args.output)
        if args.csv:
            result.write_csv(args.csv)
    merge = ITASCA_MERGE if fabric.params.get("generator") == "itasca" else None
    from fabscope.report.tables import print_result

    print_result(result, con, merge=merge, seed=seed_table(result.meta))
    if traffic.name == "leaf-pairs":
        print_leaf_matrix(con, result, fabric, args.matrix)
    if traffic.name == "bisection":
        from fabscope.units import format_rate

        ebb = float(result.pairs["bandwidth"].mean())
        con.print(f"effective bisection bandwidth: {format_rate(ebb)} per node pair, mean over "
                  f"{traffic.n_scenarios} random bisections")
    if args.report:
        from fabscope.cli.report import report_results

        report_results([result], args.report, fabric, con)
    return 0


def _nothing():
    import contextlib

    return contextlib.nullcontext()
