"""``fabscope compare``: a measured run beside the model of the same pairs; application runs beside
their predicted time per iteration (:mod:`fabscope.diagnose.appcompare`)."""

from __future__ import annotations

import argparse
import os

from fabscope.cli.files import database_file, existing, not_a_file, reads, reads_and_writes, writes
from fabscope.cli.options import add_ports, examples
from fabscope.names import plain
from fabscope.cli.options import resolve_fabric


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="measured pairs beside the model of the same pairs on the same routes",
                       description="Model every measured pair on the fabric's routes, with the pairs that ran "
                                   "at the same time sharing links, and print per class and per pair measured, "
                                   "modeled and their ratio, the pairs furthest from the model first.  Given "
                                   "application kernel runs (halo2d, fft-transpose, ...), model each on the hosts "
                                   "it ran on and print its measured and predicted time per iteration, and the "
                                   "runs' order measured and predicted.",
                       epilog=examples("fabscope compare run.jsonl --fabric itasca",
                                       "fabscope compare run.jsonl --fabric itasca --top 5 -o compared.json",
                                       "fabscope compare halo-block.jsonl halo-random.jsonl halo-map.jsonl "
                                       "--fabric tb1"))
    reads(p.add_argument("files", nargs="+", metavar="MEASURED",
                         help="fabscope-bench output (.jsonl) or a measured result (.json)"))
    reads(p.add_argument("--fabric", help="fabric spec, fabric JSON, or a testbed: tb1 (as built) or tb1:now (with "
                                          "its faults)"), existing)
    reads(p.add_argument("--model", default="dynamic", metavar="dynamic|static|FILE",
                         help="dynamic (default): the program the benchmark ran, in time; static: the snapshot, every "
                              "pair of a round sharing links all the time; FILE: a modeled result of the same hosts "
                              "(fabscope simulate -o, with or without --dynamic)"), existing)
    p.add_argument("--model-iterations", type=int, metavar="N",
                   help="dynamic: model N timed iterations instead of the measured count (faster)")
    p.add_argument("--start-offset", type=float, default=0.0, metavar="SECONDS",
                   help="dynamic: each pair's first ping waits a time drawn uniformly in [0, SECONDS), so the "
                        "modeled pairs start out of phase (default 0: lock-step)")
    p.add_argument("--phases", default="independent", choices=("independent", "lockstep"),
                   help="dynamic, ping-pong: independent (default): each pair starts at a moment drawn within its "
                        "round's median fastest measured round trip, the mean of --phase-draws seeded draws (pairs sharing a link "
                        "do not send in step on the testbed); lockstep: every pair's first ping at once")
    p.add_argument("--phase-draws", type=int, default=8, metavar="N",
                   help="dynamic, --phases independent: draws of the phases averaged per pair (default 8)")
    p.add_argument("--seed", type=int, default=0, help="dynamic: seed of the phases' draws (default 0)")
    not_a_file(p.add_argument("--routing", help="routing engine (default: the fabric's own)"))
    add_ports(p)
    reads(p.add_argument("--host-map", help="lines 'measured-name fabric-host' for hosts named otherwise"))
    p.add_argument("--top", type=int, default=15, help="pairs to list")
    writes(p.add_argument("-o", "--output", help="write the comparison (fabscope.result JSON, kind compare; for "
                                                 "application runs the table as JSON)"))
    writes(p.add_argument("--json", help="write the comparison as JSON (the same as -o)"))
    writes(p.add_argument("--csv", help="write the per-pair table as CSV"))
    reads_and_writes(p.add_argument("--db", help="also add the result to this history (see 'fabscope history')"),
                     database_file)
    p.set_defaults(func=run)


def warn_not_link_bound(files: list[str]) -> None:
    """A testbed run whose links did not set the pace measured the machine's CPUs, not the fabric: say so."""
    import sys

    if not any(f.endswith(".jsonl") for f in files):       # only measured records say it; spare the import
        return
    from fabscope.testbed.linkbound import records

    for f in files:
        for r in records(f) if f.endswith(".jsonl") else []:
            if not r.get("link_bound", True):
                print(f"fabscope: warning: {f} was not link-bound on testbed {r.get('testbed')}: {r.get('why')} "
                      f"(CPUs: {r.get('cpu')}); its pairs measure the machine more than the fabric", file=sys.stderr)
            small, link_from = r.get("smallest_size"), r.get("link_sizes_from")
            if isinstance(small, int) and isinstance(link_from, int) and small < link_from:
                from fabscope.testbed.smallmsg import note

                print(f"fabscope: warning: {f}: {note(str(r.get('testbed')), link_from, small)}", file=sys.stderr)


def load_hostmap(path: str | None):
    if not path:
        return None
    from fabscope.fabric.importers.hostmap import read_hostmap

    return read_hostmap(path)


def check_outputs(*paths: str | None) -> None:
    """Refuse, before any work, an output whose folder does not exist (one that is an input,
    :mod:`fabscope.cli.files` refused before the command ran)."""
    from fabscope.atomic import check_outputs as check_all
    from fabscope.errors import FabscopeError

    for p in paths:
        if p and p != "-" and not os.path.isdir(os.path.dirname(os.path.abspath(p))):
            raise FabscopeError(f"cannot write {p}: no folder {os.path.dirname(os.path.abspath(p))}")
    check_all({f"output {i + 1}" if len(paths) > 1 else "-o/--output": p for i, p in enumerate(paths)})


def model_choice(args: argparse.Namespace) -> str:
    """``--model``: dynamic, static or a file; refused before any work where it cannot be used."""
    from fabscope.diagnose.timemodel import MODELS
    from fabscope.errors import FabscopeError

    model = args.model
    if model in MODELS:
        if not args.fabric:
            raise FabscopeError(f"--model {model} needs --fabric (the fabric to model), or give --model FILE")
    elif not os.path.isfile(model):
        raise FabscopeError(f"--model {model!r}: neither {' nor '.join(MODELS)} nor a readable modeled result")
    off = getattr(args, "start_offset", 0.0)
    if not off >= 0 or off == float("inf"):
        raise FabscopeError(f"--start-offset must be a time >= 0 in seconds, got {off}")
    if getattr(args, "phase_draws", 1) < 1:
        raise FabscopeError(f"--phase-draws must be at least 1, got {args.phase_draws}")
    if getattr(args, "model_iterations", None) is not None and args.model_iterations < 1:
        raise FabscopeError(f"--model-iterations must be at least 1, got {args.model_iterations}")
    return model


def run(args: argparse.Namespace) -> int:
    from fabscope.diagnose.compare import compare, compare_lines, compare_with_model
    from fabscope.diagnose.measured import load_measured
    from fabscope.diagnose.timemodel import MODELS
    from fabscope.errors import FabscopeError
    from fabscope.result import Result

    check_outputs(args.output, args.csv, args.json)
    from fabscope.measure.apps import is_app_run

    if any(is_app_run(f) for f in args.files):
        return run_apps(args)
    if args.db:
        from fabscope.cli.history_db import check_db
        check_db(args.db)
    model = model_choice(args)
    from fabscope.fabric.ports import parse_ports

    ports = parse_ports(args.ports)                 # a bad policy refused before the fabric is built
    fabric = None
    if model not in MODELS:
        if args.fabric:
            raise FabscopeError("give --fabric or --model FILE, not both: a modeled result names its fabric")
        res = compare_with_model(list(args.files), Result.read_json(model))
    else:
        fabric = resolve_fabric(args.fabric)
        measured = load_measured(list(args.files), fabric, load_hostmap(args.host_map))
        res = compare(measured, args.routing, model=model, iterations=args.model_iterations,
                      start_offset=args.start_offset, phases=args.phases, phase_draws=args.phase_draws,
                      seed=args.seed, ports=ports)
    print("\n".join(plain(ln) for ln in compare_lines(res, args.top)))
    warn_not_link_bound(args.files)
    for out in (args.output, args.json):
        if out:
            res.write_json(out)
    if args.csv:
        res.write_csv(args.csv)
    if args.db:
        from fabscope.cli.history_db import store_result
        store_result(args.db, res, fabric, origin=", ".join(args.files))
    return 0


def run_apps(args: argparse.Namespace) -> int:
    """Application runs: measured and predicted time per iteration, refused in one line where the
    options are the pair comparison's only."""
    import json

    from fabscope.atomic import all_or_none, atomic_open
    from fabscope.diagnose.appcompare import MODEL_ITERATIONS, app_compare_lines, compare_apps
    from fabscope.errors import FabscopeError

    if args.model != "dynamic":
        raise FabscopeError(f"application runs are modeled in time only: --model {args.model!r} is for pair runs")
    for opt, given in (("--csv", args.csv), ("--db", args.db), ("--start-offset", args.start_offset)):
        if given:
            raise FabscopeError(f"{opt} is for pair runs, not application runs")
    if not args.fabric:
        raise FabscopeError("application runs need --fabric (the fabric they ran on)")
    if args.model_iterations is not None and args.model_iterations < 1:
        raise FabscopeError(f"--model-iterations must be at least 1, got {args.model_iterations}")
    fabric = resolve_fabric(args.fabric)
    c = compare_apps(list(args.files), fabric, args.routing, load_hostmap(args.host_map),
                     model_iterations=args.model_iterations or MODEL_ITERATIONS)
    print("\n".join(plain(ln) for ln in app_compare_lines(c)))
    with all_or_none():
        for out in (args.output, args.json):
            if out:
                with atomic_open(out) as fh:
                    json.dump(c, fh, indent=1)
    return 0
