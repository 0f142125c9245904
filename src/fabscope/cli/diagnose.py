"""``fabscope diagnose``: suspects from measured pairs, or a plan of what to measure."""

from __future__ import annotations

import argparse
import re

from fabscope.cli.compare import check_outputs, load_hostmap
from fabscope.cli.files import database_file, existing, not_a_file, reads, reads_and_writes, writes
from fabscope.cli.options import DEFAULT_SIZE, add_size, examples
from fabscope.diagnose.budget import MIN_BUDGET_ITERATIONS, MODEL_EVENTS
from fabscope.names import plain, shell_word
from fabscope.cli.options import resolve_fabric
from fabscope.units import plural


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagnose", help="which cables or hosts lose bandwidth, from measured pairs; or --plan",
                       description="Model the measured pairs on the same routes with the same concurrency, label "
                                   "the pairs the model explains (contention, oversubscription), and infer from all "
                                   "pairs at once which cables and host NICs deliver less than the fabric says. "
                                   "With --plan: which measurements to run so that every cable is covered.",
                       epilog=examples("fabscope diagnose rp.jsonl --fabric tb1   # runs on a testbed (docs/diagnose.md)",
                                       "fabscope diagnose --plan --fabric fat-tree:k=4,levels=2 --budget 5min",
                                       "fabscope diagnose --plan --fabric fat-tree:k=4,levels=2 -o plan.sh"))
    reads(p.add_argument("files", nargs="*", metavar="MEASURED",
                         help="fabscope-bench output (.jsonl) or measured results (.json); several runs are combined"))
    reads(p.add_argument("--fabric", required=True, help="fabric spec, fabric JSON, or a testbed (tb1: as built, the "
                                                          "nominal fabric a fault is found against)"), existing)
    not_a_file(p.add_argument("--routing", help="routing engine (default: the fabric's own)"))
    p.add_argument("--model", choices=("dynamic", "static"), default="dynamic",
                   help="the healthy fabric's prediction: dynamic (default), the program the benchmark ran in "
                        "time; static, the snapshot (the capacities are fitted on the snapshot either way)")
    p.add_argument("--model-iterations", type=int, metavar="N",
                   help="dynamic: model N timed iterations instead of the measured count (faster)")
    p.add_argument("--model-events", type=int, metavar="N", default=MODEL_EVENTS,
                   help=f"dynamic: where the measured iterations would take more engine events than N, model "
                        f"the timed iterations that fit, at least {MIN_BUDGET_ITERATIONS} (default {MODEL_EVENTS:,}, "
                        f"a few CPU s; 0: the measured count whatever it costs)")
    reads(p.add_argument("--model-from", metavar="DIAGNOSIS",
                         help="dynamic: take the healthy fabric's model from an earlier diagnosis of the same "
                              "pairs (diagnose -o; a nightly job's last night) instead of running it: made once "
                              "with --model-events 0, every measured iteration, and carried from night to night; "
                              "the program runs again, within --model-events, only where suspects are found"))
    p.add_argument("--no-refine", action="store_true",
                   help="dynamic: fit once (default: where suspects are found, run the program in time again "
                        "with their estimated capacities and estimate them a second time)")
    reads(p.add_argument("--host-map", help="lines 'measured-name fabric-host' for hosts named otherwise"))
    p.add_argument("--sigmas", type=float, default=3.0, help="a pair is slow below this many noise sigmas")
    p.add_argument("--penalty", type=float, help="evidence a suspect must bring, in nats of log-likelihood "
                                                 "(default: what noise alone exceeds with chance --false-alarm)")
    p.add_argument("--no-calibrate", action="store_true",
                   help="take the model's rates as they are (default: scale by the median measured/modeled)")
    p.add_argument("--top", type=int, default=10, help="suspects and pairs to list")
    writes(p.add_argument("-o", "--output", help="write the diagnosis (fabscope.result JSON, kind diagnose); with "
                                                 "--plan the script and its JSON summary beside"), written_by)
    p.add_argument("--exit-status", action="store_true",
                   help="exit 3 when a suspect is found, 0 when none (for cron, scrontab or a monitoring system)")
    p.add_argument("--plan", action="store_true", help="print a plan of measurements instead of diagnosing")
    p.add_argument("--sbatch", action="store_true",
                   help="with --plan: a Slurm batch script (a health check): one node per host, srun launches, "
                        "the diagnosis stored as PREFIX-diagnosis.json, exit 3 when a suspect is found")
    p.add_argument("--budget", default="10min", help="time the plan may take: 600, 600s, 10min, 1h")
    add_size(p, "message size of the planned runs (with --confirm: the diagnosed run's)")
    p.set_defaults(size=None)       # unset: --plan takes the default, --confirm the diagnosed run's
    p.add_argument("--iterations", type=int,
                   help="ping-pongs per pair and round (default 20; with --confirm: the diagnosed run's)")
    p.add_argument("--seed", type=int, default=1, help="seed of the planned random-pairs rounds")
    where = p.add_mutually_exclusive_group()
    not_a_file(where.add_argument("--testbed", metavar="NAME", help="the plan's script measures on testbed NAME (default, when "
                                                         "--fabric names a testbed: that one)"))
    not_a_file(where.add_argument("--launcher", help="the plan's script launches with this (mpiexec, mpich, openmpi, "
                                                     "srun; default: the MPI's own) on the host files it writes"))
    reads_and_writes(p.add_argument("--db", help="also add the result to this history (see 'fabscope history')"),
                     database_file)
    reads(p.add_argument("--confirm", metavar="RESULT",
                   help="with --plan: the follow-up run of a diagnosis (diagnose -o RESULT): new pairs across each "
                        "suspect and pairs beside it, and the joint diagnosis of both runs"))
    p.add_argument("--false-alarm", type=float, default=0.01,
                   help="chance that noise alone names a suspect in one diagnosis; sets the default penalty "
                        "from the noise model fitted to the pairs (default 0.01)")
    p.add_argument("--figure", choices=("robust", "mean"), default="robust",
                   help="per-pair figure: robust = the median iteration where the run timed each one, else the "
                        "mean (default); mean = the mean over the iterations")
    p.set_defaults(func=run)


def plan_outputs(output: str) -> tuple[str, str]:
    """Where ``--plan -o OUTPUT`` writes the script and its JSON summary.

    >>> plan_outputs("plan.sh"), plan_outputs("plan.json")
    (('plan.sh', 'plan.sh.json'), ('plan.sh', 'plan.json'))
    """
    if output.endswith(".json"):        # a JSON name gets the JSON; the script goes beside it as .sh
        return output[:-len(".json")] + ".sh", output
    return output, output + ".json"


def written_by(output: str | None, args: argparse.Namespace) -> list[str]:
    """The files ``-o OUTPUT`` stands for: with ``--plan``, the script and the JSON summary beside it."""
    if not output:
        return []
    return list(plan_outputs(output)) if getattr(args, "plan", False) else [output]


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

    if not args.plan:
        check_outputs(args.output)
    if not 0 < args.false_alarm < 1:
        raise FabscopeError(f"--false-alarm {args.false_alarm:g}: give a chance between 0 and 1, e.g. 0.01")
    if args.confirm and not args.plan:
        raise FabscopeError("--confirm RESULT goes with --plan (it writes the follow-up run); to diagnose both "
                            "runs, give the result and the new runs as MEASURED files")
    if args.sbatch and not args.plan:
        raise FabscopeError("--sbatch writes a plan's batch script: give it with --plan")
    if args.db:
        from fabscope.cli.history_db import check_db
        check_db(args.db)
    if args.plan and args.confirm:
        return _confirm(args)
    if args.plan:
        return _plan(args)
    if not args.files:
        raise FabscopeError("diagnose needs measured runs (MEASURED files), or --plan")
    from fabscope.diagnose.measured import load_measured
    from fabscope.diagnose.report import diagnosis_lines
    from fabscope.diagnose.withmodel import diagnose_with_model
    from fabscope.limits import keep_freed_memory

    keep_freed_memory()          # its arrays' pages reused, not zeroed again by the kernel

    if args.model_iterations is not None and args.model_iterations < 1:
        raise FabscopeError(f"--model-iterations must be at least 1, got {args.model_iterations}")
    if args.model_events < 0:
        raise FabscopeError(f"--model-events must be 0 (no limit) or more, got {args.model_events}")
    if args.model_from and args.model != "dynamic":
        raise FabscopeError("--model-from takes the model in time of an earlier diagnosis: not with --model static")
    fabric = resolve_fabric(args.fabric)
    read: dict = {}         # the result files read, by path: a diagnosis among them is not read twice
    measured = load_measured(list(args.files), fabric, load_hostmap(args.host_map), results=read)
    taken = _taken_model(args.model_from, measured, args.routing, read) if args.model_from else None
    d = diagnose_with_model(measured, args.routing, args.model, iterations=args.model_iterations, taken=taken,
                            events=args.model_events, refine=not args.no_refine, sigmas=args.sigmas,
                            penalty=args.penalty, calibrate=not args.no_calibrate, false_alarm=args.false_alarm,
                            figure=args.figure)
    first = _confirmed(args.files, read)
    if first is not None:     # a diagnosis and its confirmation round: clear, keep, never add
        from fabscope.diagnose.settle import settle

        settle(d, first[1], first[0])
    res = d.to_result()
    print("\n".join(plain(ln) for ln in diagnosis_lines(res, args.top)))
    if args.output:
        res.write_json(args.output)
    if args.db:
        from fabscope.cli.history_db import store_result
        store_result(args.db, res, fabric, origin=", ".join(args.files))
    if args.exit_status and res.extra.get("suspects"):
        return 3
    return 0


def _taken_model(path: str, measured, routing: str | None, read: dict):
    """The healthy model :func:`fabscope.diagnose.nominal.nominal_from` takes from the diagnosis at ``path``
    (read once, where it is also an input), checked against these pairs before any work."""
    from fabscope.diagnose.nominal import nominal_from
    from fabscope.result import Result
    from fabscope.routing import make_routing

    earlier = read.get(path) or Result.read_json(path)
    return nominal_from(earlier, measured, make_routing(measured.fabric, routing).name, path)


def _confirmed(files: list[str], read: dict | None = None) -> tuple[int, list] | None:
    """(input index, suspects) of the diagnosis among several inputs (the first one with suspects), which
    the others confirm; None where no input is a diagnosis."""
    from fabscope.errors import FabscopeError
    from fabscope.result import Result

    if len(files) < 2:
        return None
    for i, path in enumerate(files):
        try:
            res = (read or {}).get(path) or Result.read_json(path)
        except (FabscopeError, OSError, ValueError, KeyError, TypeError):
            continue
        if res.meta.get("kind") == "diagnose" and res.extra.get("suspects"):
            return i, list(res.extra["suspects"])
    return None


def _plan(args: argparse.Namespace) -> int:
    import json

    from fabscope.atomic import all_or_none, atomic_open, check_outputs
    from fabscope.diagnose.plan import make_plan
    from fabscope.units import parse_size

    script_path, summary_path = plan_outputs(args.output) if args.output else (None, None)
    check_outputs({"-o (script)": script_path, "-o (summary)": summary_path})
    budget = parse_duration(args.budget)
    nominal, testbed = _where(args)
    fabric = resolve_fabric(nominal)
    plan = make_plan(fabric, args.routing, budget=budget, size=int(parse_size(args.size or DEFAULT_SIZE)),
                     iterations=args.iterations or 20, seed=args.seed)
    script = plan.script(nominal, testbed=testbed, launcher=args.launcher, sbatch=args.sbatch)
    s = plan.summary()
    info = [f"# plan: {plural(s['jobs'], 'job')}, {plural(s['rounds'], 'round')}, {plural(s['pairs'], 'pair')}, about {s['estimated_seconds']} s "
            f"of a {budget:.0f} s budget",
            f"# every routed cable crossed by >= {s['cover_min']} planned pairs; "
            f"{s['unrouted_cables']} cables no route of this routing crosses (no measurement can see them); "
            f"{s['never_at_line_rate']} routed cables never full in a planned round; "
            f"{len(s['unidentifiable'])} groups of cables crossed by the same pairs; "
            f"{s['directions_not_told_apart']} switch cables whose two directions the pairs do not tell apart"]
    if script_path and summary_path:
        with all_or_none():
            with atomic_open(script_path) as fh:
                fh.write(script)
            with atomic_open(summary_path) as fh:
                json.dump(s, fh, indent=1)
                fh.write("\n")
        run = "sbatch" if args.sbatch else "sh"
        print("\n".join(info + [f"wrote {script_path} and {summary_path}: run it with: {run} {shell_word(script_path)}"]))
    else:
        print("\n".join(info) + "\n" + script, end="")
    return 0


def _where(args: argparse.Namespace) -> tuple[str, str | None]:
    """The fabric a plan is made on and diagnosed against (as built), and the testbed its script measures on."""
    from fabscope.errors import FabscopeError
    from fabscope.measure.launchers import get_launcher
    from fabscope.resolver import named_testbed

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
    return (ref[0] if ref else (testbed if testbed else args.fabric)), testbed


def _confirm(args: argparse.Namespace) -> int:
    import json

    from fabscope.atomic import all_or_none, atomic_open, check_outputs
    from fabscope.diagnose.confirm import confirm_plan
    from fabscope.errors import SchemaError
    from fabscope.result import Result
    from fabscope.units import parse_size

    script_path, summary_path = plan_outputs(args.output) if args.output else (None, None)
    check_outputs({"-o (script)": script_path, "-o (summary)": summary_path})
    try:
        res = Result.read_json(args.confirm)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SchemaError(f"--confirm {args.confirm}: not a fabscope result ({err})") from None
    nominal, testbed = _where(args)
    fabric = resolve_fabric(nominal)
    plan = confirm_plan(res, fabric, args.routing, size=int(parse_size(args.size)) if args.size else None,
                        iterations=args.iterations, seed=args.seed)
    if not plan.suspects:
        print(f"# {args.confirm}: no suspect to confirm; nothing to run")
        return 0
    roles = [r for _, _, r, _ in plan.pairs]
    info = [f"# confirmation of {len(plan.suspects)} suspects: {roles.count('cross')} new pairs across them, "
            f"{roles.count('repeat')} repeated, {roles.count('control')} beside them; {len(plan.jobs)} jobs of one "
            f"round, one after another"]
    script = plan.script(args.confirm, nominal, testbed=testbed, launcher=args.launcher)
    if script_path and summary_path:
        with all_or_none():
            with atomic_open(script_path) as fh:
                fh.write(script)
            with atomic_open(summary_path) as fh:
                json.dump(plan.summary(), fh, indent=1)
                fh.write("\n")
        print("\n".join(info + [f"wrote {script_path} and {summary_path}: run it with: sh {shell_word(script_path)}"]))
    else:
        print("\n".join(info) + "\n" + script, end="")
    return 0
