"""``fabscope diagnose``: suspects from measured pairs, or a plan of what to measure."""

from __future__ import annotations

import argparse
import re

from fabscope.cli.compare import check_outputs, load_hostmap
from fabscope.resolver import resolve_fabric


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagnose", help="which cables or hosts lose bandwidth, from measured pairs; or --plan",
                       description="Model the measured pairs on the same routes with the same concurrency, label "
                                   "the pairs the model explains (contention, oversubscription), and infer from all "
                                   "pairs at once which cables and host NICs deliver less than the fabric says. "
                                   "With --plan: which measurements to run so that every cable is covered.")
    p.add_argument("files", nargs="*", metavar="MEASURED",
                   help="fabscope-bench output (.jsonl) or measured results (.json); several runs are combined")
    p.add_argument("--fabric", required=True, help="fabric spec, fabric JSON, or a testbed (tb1: as built, the "
                                                    "nominal fabric a fault is found against)")
    p.add_argument("--routing", help="routing engine (default: the fabric's own)")
    p.add_argument("--host-map", help="lines 'measured-name fabric-host' for hosts named otherwise")
    p.add_argument("--sigmas", type=float, default=3.0, help="a pair is slow below this many noise sigmas (default 3)")
    p.add_argument("--penalty", type=float, help="evidence a suspect must bring, in noise variances (default: "
                                                 "max(25, 2 ln pairs + 10))")
    p.add_argument("--no-calibrate", action="store_true",
                   help="take the model's rates as they are (default: scale by the median measured/modeled)")
    p.add_argument("--top", type=int, default=10, help="suspects and pairs to list (default 10)")
    p.add_argument("-o", "--output", help="write the diagnosis (fabscope.result JSON, kind diagnose)")
    p.add_argument("--exit-status", action="store_true",
                   help="exit 3 when a suspect is found, 0 when none (for cron, scrontab or a monitoring system)")
    p.add_argument("--plan", action="store_true", help="print a plan of measurements instead of diagnosing")
    p.add_argument("--sbatch", action="store_true",
                   help="with --plan: a Slurm batch script (a health check): one node per host, srun launches, "
                        "the diagnosis stored as PREFIX-diagnosis.json, exit 3 when a suspect is found")
    p.add_argument("--budget", default="10min", help="time the plan may take: 600, 600s, 10min, 1h (default 10min)")
    p.add_argument("--size", default="1MiB", help="message size of the planned runs (default 1MiB)")
    p.add_argument("--iterations", type=int, default=20, help="ping-pongs per pair and round (default 20)")
    p.add_argument("--seed", type=int, default=1, help="seed of the planned random-pairs rounds (default 1)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--testbed", metavar="NAME", help="the plan's script measures on testbed NAME (default, when "
                                                         "--fabric names a testbed: that one)")
    where.add_argument("--launcher", help="the plan's script launches with this (mpiexec, mpich, openmpi, srun; "
                                          "default: the MPI's own) on the host files it writes")
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
    if args.sbatch and not args.plan:
        raise FabscopeError("--sbatch writes a plan's batch script: give it with --plan")
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
                 calibrate=not args.no_calibrate)
    res = d.to_result()
    print("\n".join(diagnosis_lines(res, args.top)))
    if args.output:
        res.write_json(args.output)
    if args.exit_status and res.extra.get("suspects"):
        return 3
    return 0


def _plan(args: argparse.Namespace) -> int:
    import json

    from fabscope.atomic import atomic_open
    from fabscope.diagnose.plan import make_plan
    from fabscope.units import parse_size

    from fabscope.errors import FabscopeError
    from fabscope.resolver import named_testbed
    from fabscope.measure.launchers import get_launcher

    budget = parse_duration(args.budget)
    ref = named_testbed(args.fabric)
    testbed = args.testbed or (ref[0] if ref and not args.launcher else None)
    if args.launcher:
        get_launcher(args.launcher)  # an unknown launcher is refused before the plan is made
    if args.sbatch and args.launcher and get_launcher(args.launcher).name != "srun":
        raise FabscopeError(f"--sbatch launches with srun; --launcher {args.launcher} does not go with it")
    if args.sbatch and not args.testbed and ref:
        testbed = ref[0]  # srun on the testbed's Slurm, the testbed's fabric and ranks' environment
    if testbed and ref and ref[0] != testbed:
        raise FabscopeError(f"--testbed {testbed} but --fabric {args.fabric} names testbed {ref[0]}")
    # planned on the fabric as built, and diagnosed against it: a fault must not be in the model
    nominal = ref[0] if ref else (testbed if testbed else args.fabric)
    fabric = resolve_fabric(nominal)
    plan = make_plan(fabric, args.routing, budget=budget, size=int(parse_size(args.size)),
                     iterations=args.iterations, seed=args.seed)
    script = plan.script(nominal, testbed=testbed, launcher=args.launcher, sbatch=args.sbatch)
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
        run = f"sbatch {args.output}" if args.sbatch else f"sh {args.output}"
        print("\n".join(info + [f"wrote {args.output}: run it with '{run}'"]))
        with atomic_open(args.output + ".json") as fh:
            json.dump(s, fh, indent=1)
            fh.write("\n")
    else:
        print("\n".join(info) + "\n" + script, end="")
    return 0
