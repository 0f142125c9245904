"""``fabscope simulate``: a pattern through a fabric's routing and the flow model."""

from __future__ import annotations

import argparse

from fabscope.atomic import all_or_none, check_outputs
from fabscope.cli.names import ENGINES, MODELS, PATTERNS
from fabscope.cli.options import require_positive
from fabscope.errors import PlacementError
from fabscope.seeds import ITASCA_MERGE, seed_table
from fabscope.units import format_size, parse_size


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="predict every pair's bandwidth with the flow model",
                       description="Run a traffic pattern through a fabric's routing and the max-min fair "
                                   "flow model; print Max / Average / Min by class, as the seeds do.")
    p.add_argument("--fabric", default="itasca", help="fabric spec or JSON file (default: itasca)")
    p.add_argument("--pattern", default="random-pairs",
                   help=f"pattern[:key=value,...], one of {', '.join(PATTERNS)} (default: random-pairs)")
    p.add_argument("--ranks", type=int, help="number of ranks (default: every core, or one per node with --ppn 1)")
    p.add_argument("--ppn", type=int, help="ranks per node (default: all cores)")
    p.add_argument("--placement", choices=("block", "cyclic"), default="block")
    p.add_argument("--hostfile", help="place ranks by a host file, one line per rank ($PBS_NODEFILE)")
    p.add_argument("--size", default="1MiB", help="message size (default: 1MiB)")
    p.add_argument("--seed", type=int, default=0, help="seed of random patterns and routing choices")
    p.add_argument("--routing", metavar="ENGINE", help=f"routing engine: {', '.join(ENGINES)}, with options "
                   "such as dor:tie=simgrid or updn:roots=S1+S2 (default: the fabric's own)")
    p.add_argument("--model", choices=MODELS, default="maxmin",
                   help="flow model: maxmin (default), or congestion: capacity / flows on the busiest link "
                        "(ORCS's rule; with --dynamic applied at every event)")
    p.add_argument("--offset", type=int, help="leaf-offset: offset between paired leaves")
    p.add_argument("--hops", type=int, help="partner-hops: hops between partners")
    p.add_argument("-o", "--output", help="write the result as JSON")
    p.add_argument("--csv", help="write the per-pair table as CSV")
    p.add_argument("--report", metavar="HTML", help="also write the one-file HTML report (see 'fabscope report')")
    p.add_argument("--matrix", choices=("min", "avg", "max"), default="min",
                   help="leaf-pairs: which leaf matrix to draw (default: min)")
    from fabscope.cli.dynamic import add_arguments

    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the library is imported here, not at the top: building the parser (--help) loads no numpy
    from fabscope.fabric.io import load_fabric
    from fabscope.fabric.placement import Placement
    from fabscope.report.tables import make_console, print_leaf_matrix

    con = make_console()
    require_positive(args, "ranks", "ppn")
    check_outputs({"-o/--output": args.output, "--csv": args.csv})
    fabric = load_fabric(args.fabric)
    size = parse_size(args.size)
    if args.hostfile:
        try:
            with open(args.hostfile, encoding="utf-8", errors="replace") as fh:
                names = [ln.split()[0] for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
        except OSError as err:
            raise PlacementError(f"--hostfile {args.hostfile}: {err.strerror}") from None
        placement = Placement.from_hostlist(fabric, names)
    else:
        ppn = args.ppn or int(fabric.host_cores.max())
        ranks = args.ranks or ppn * fabric.n_hosts
        build = Placement.block if args.placement == "block" else Placement.cyclic
        placement = build(fabric, ranks, ppn)
    if args.report:
        from fabscope.cli.report import check_output

        check_output(args.report)
    if args.dynamic:
        from fabscope.cli.dynamic import run_dynamic

        return run_dynamic(args, con, fabric, placement, size)
    from fabscope.model.simulate import simulate
    from fabscope.traffic.spec import make_traffic

    extra = {k: v for k, v in (("offset", args.offset), ("hops", args.hops)) if v is not None}
    traffic = make_traffic(args.pattern, fabric, placement, size, seed=args.seed, **extra)
    with con.status(f"routing and solving {traffic.n_flows} flows on {fabric.name} ...",
                    spinner="dots") if con.is_terminal else _nothing():
        result = simulate(fabric, placement, traffic, args.routing, model=args.model, seed=args.seed,
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
        ebb = float(result.pairs["bandwidth"].mean()) / 1e6
        con.print(f"effective bisection bandwidth: {ebb:.1f} MB/s per node pair, mean over "
                  f"{traffic.n_scenarios} random bisections")
    if args.report:
        from fabscope.cli.report import report_results

        report_results([result], args.report, fabric, con)
    return 0


def _nothing():
    import contextlib

    return contextlib.nullcontext()
