"""``fabscope diagnose``: suspects from measured pairs, or a plan of what to measure."""

from __future__ import annotations

import argparse
import re

from fabscope.cli.compare import check_outputs, load_hostmap, resolve_fabric


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagnose", help="which cables or hosts lose bandwidth, from measured pairs; or --plan",
                       description="Model the measured pairs on the same routes with the same concurrency, label "
                                   "the pairs the model explains (contention, oversubscription), and infer from all "
                                   "pairs at once which cables and host NICs deliver less than the fabric says. "
                                   "With --plan: which measurements to run so that every cable is covered.")
    p.add_argument("files", nargs="*", metavar="MEASURED",
                   help="fabscope-bench output (.jsonl) or measured results (.json); several runs are combined")
    p.add_argument("--fabric", required=True, help="fabric spec, fabric JSON, or a testbed name")
    p.add_argument("--routing", help="routing engine (default: the fabric's own)")
    p.add_argument("--host-map", help="lines 'measured-name fabric-host' for hosts named otherwise")
    p.add_argument("--sigmas", type=float, default=3.0, help="a pair is slow below this many noise sigmas (default 3)")
    p.add_argument("--penalty", type=float, help="evidence a suspect must bring, in nats of log-likelihood "
                                                 "(default: what noise alone exceeds with chance --false-alarm)")
    p.add_argument("--no-calibrate", action="store_true",
                   help="take the model's rates as they are (default: scale by the median measured/modeled)")
    p.add_argument("--top", type=int, default=10, help="suspects and pairs to list (default 10)")
    p.add_argument("-o", "--output", help="write the diagnosis (fabscope.result JSON, kind diagnose)")
    p.add_argument("--plan", action="store_true", help="print a plan of measurements instead of diagnosing")
    p.add_argument("--budget", default="10min", help="time the plan may take: 600, 600s, 10min, 1h (default 10min)")
    p.add_argument("--size", default="1MiB", help="message size of the planned runs (default 1MiB)")
    p.add_argument("--iterations", type=int, default=20, help="ping-pongs per pair and round (default 20)")
    p.add_argument("--seed", type=int, default=1, help="seed of the planned random-pairs rounds (default 1)")
    p.add_argument("--confirm", metavar="RESULT",
                   help="with --plan: the follow-up run of a diagnosis (diagnose -o RESULT): new pairs across each "
                        "suspect and pairs beside it, and the joint diagnosis of both runs")
    p.add_argument("--false-alarm", type=float, default=0.01,
                   help="chance that noise alone names a suspect in one diagnosis; sets the default penalty "
                        "from the noise model fitted to the pairs (default 0.01)")
    p.add_argument("--figure", choices=("robust", "mean"), default="robust",
                   help="per-pair figure: robust = the median iteration where the run timed each one, else the "
                        "mean (default); mean = the mean over the iterations")
    p.set_defaults(func=run)


def parse_duration(text: str) -> float:
    """``600``, ``600s``, ``10min``, ``1h`` -> seconds.

    >>> parse_duration("10min"), parse_duration("90"), parse_duration("1.5h")
    (600.0, 90.0, 5400.0)
    """
    from fabscope.errors import FabscopeError

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|sec|m|min|h|hour)?\s*", text)
    if not m:
        raise FabscopeError(f"cannot read duration {text!r}: write e.g. 600, 600s, 10min or 1h")
    return float(m.group(1)) * {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600}[m.group(2)]


def run(args: argparse.Namespace) -> int:
    from fabscope.errors import FabscopeError

    check_outputs(args.output)
    if not 0 < args.false_alarm < 1:
        raise FabscopeError(f"--false-alarm {args.false_alarm:g}: give a chance between 0 and 1, e.g. 0.01")
    if args.confirm and not args.plan:
        raise FabscopeError("--confirm RESULT goes with --plan (it writes the follow-up run); to diagnose both "
                            "runs, give the result and the new runs as MEASURED files")
    if args.plan and args.confirm:
        return _confirm(args)
    if args.plan:
        return _plan(args)
    if not args.files:
        raise FabscopeError("diagnose needs measured runs (MEASURED files), or --plan")
    from fabscope.diagnose.measured import load_measured
    from fabscope.diagnose.report import diagnosis_lines
    from fabscope.diagnose.tomography import diagnose

    fabric = resolve_fabric(args.fabric)
    measured = load_measured(list(args.files), fabric, load_hostmap(args.host_map))
    d = diagnose(measured, args.routing, sigmas=args.sigmas, penalty=args.penalty,
                 calibrate=not args.no_calibrate, false_alarm=args.false_alarm, figure=args.figure)
    res = d.to_result()
    print("\n".join(diagnosis_lines(res, args.top)))
    if args.output:
        res.write_json(args.output)
    return 0


def _plan(args: argparse.Namespace) -> int:
    import json

    from fabscope.atomic import atomic_open
    from fabscope.diagnose.plan import make_plan
    from fabscope.units import parse_size

    budget = parse_duration(args.budget)
    fabric = resolve_fabric(args.fabric)
    plan = make_plan(fabric, args.routing, budget=budget, size=int(parse_size(args.size)),
                     iterations=args.iterations, seed=args.seed)
    script = plan.script(args.fabric)
    s = plan.summary()
    info = [f"# plan: {s['jobs']} jobs, {s['rounds']} rounds, {s['pairs']} pairs, about {s['estimated_seconds']} s "
            f"of a {budget:.0f} s budget",
            f"# every routed cable crossed by >= {s['cover_min']} planned pairs; "
            f"{s['unrouted_cables']} cables no route of this routing crosses (no measurement can see them); "
            f"{s['never_at_line_rate']} routed cables never full in a planned round; "
            f"{len(s['unidentifiable'])} groups of cables crossed by the same pairs"]
    if args.output:
        with atomic_open(args.output) as fh:
            fh.write(script)
        print("\n".join(info + [f"wrote {args.output}: run it with 'sh {args.output}'"]))
        with atomic_open(args.output + ".json") as fh:
            json.dump(s, fh, indent=1)
            fh.write("\n")
    else:
        print("\n".join(info) + "\n" + script, end="")
    return 0


def _confirm(args: argparse.Namespace) -> int:
    import json

    from fabscope.atomic import atomic_open
    from fabscope.diagnose.confirm import confirm_plan
    from fabscope.errors import SchemaError
    from fabscope.result import Result
    from fabscope.units import parse_size

    try:
        res = Result.read_json(args.confirm)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SchemaError(f"--confirm {args.confirm}: not a fabscope result ({err})") from None
    fabric = resolve_fabric(args.fabric)
    plan = confirm_plan(res, fabric, args.routing, size=int(parse_size(args.size)), iterations=args.iterations,
                        seed=args.seed)
    if not plan.suspects:
        print(f"# {args.confirm}: no suspect to confirm; nothing to run")
        return 0
    roles = [r for _, _, r, _ in plan.pairs]
    info = [f"# confirmation of {len(plan.suspects)} suspects: {roles.count('cross')} new pairs across them, "
            f"{roles.count('repeat')} repeated, {roles.count('control')} beside them; {len(plan.jobs)} jobs of one "
            f"round, one after another"]
    script = plan.script(args.confirm, args.fabric)
    if args.output:
        with atomic_open(args.output) as fh:
            fh.write(script)
        with atomic_open(args.output + ".json") as fh:
            json.dump(plan.summary(), fh, indent=1)
            fh.write("\n")
        print("\n".join(info + [f"wrote {args.output}: run it with 'sh {args.output}'"]))
    else:
        print("\n".join(info) + "\n" + script, end="")
    return 0
