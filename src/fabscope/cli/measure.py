"""``fabscope measure``: build, launch and read fabscope-bench."""

from __future__ import annotations

import argparse
import os

from fabscope.cli.analyze import report
from fabscope.cli.names import OVERSUBSCRIBE_FACTOR
from fabscope.errors import MeasureError


def _own_options(p: argparse.ArgumentParser, default: object = None) -> None:
    """fabscope's options of ``measure``; accepted before and after TEST."""
    def d(x: object) -> object:
        return x if default is None else default
    p.add_argument("--np", type=int, default=d(None), help="number of ranks (default: 2; on a testbed, its hosts x --ppn)")
    p.add_argument("--launcher", default=d("auto"), help="mpich (mpiexec), openmpi (mpirun), srun; default: the MPI's own")
    p.add_argument("--hostfile", default=d(None), help="hosts to run on (default: $PBS_NODEFILE, $SLURM_JOB_NODELIST, or this host)")
    p.add_argument("--ppn", type=int, default=d(None), help="ranks per node")
    p.add_argument("--fabric", default=d(None), help="fabric spec or JSON file: class pairs by its groups, pass leaves/coordinates")
    p.add_argument("--out", default=d(None), help="JSON-lines output (default: fabscope-TEST.jsonl)")
    p.add_argument("-o", "--output", default=d(None), help="also write the per-pair result (fabscope.result JSON)")
    p.add_argument("--timeout", type=float, default=d(None),
                   help="stop the job after this many seconds (finished lines are kept)")
    p.add_argument("--oversubscribe", action="store_true", default=d(False),
                   help=f"run more than {OVERSUBSCRIBE_FACTOR} ranks per CPU this job may use on this host")
    p.add_argument("--launcher-arg", action="append", default=d([]), help="extra option for the launcher (repeatable)")
    p.add_argument("--testbed", metavar="NAME", default=d(None),
                   help="run on testbed NAME (see 'fabscope testbed'): its hosts, its fabric, ranks launched "
                        "into its namespaces")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("measure", help="run the MPI benchmarks (fabscope-bench) on this job's nodes",
                       description="Build fabscope-bench with the MPI found (see 'fabscope doctor'), launch it, "
                                   "and print the seeds' tables.  fabscope's own options (below) may come before "
                                   "or after TEST; other options after TEST go to the program, "
                                   "e.g. 'random-pairs --size 1MiB --iterations 100'.  Every option is checked "
                                   "before anything is launched.")
    _own_options(p)
    p.add_argument("test", nargs="?", default="suite", help="test or comma-separated tests (default: suite)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="options of fabscope-bench")
    p.set_defaults(func=run)


def split_args(args: argparse.Namespace) -> list[str]:
    """Take fabscope's own options out of what followed TEST; return the program's options.

    >>> ns = argparse.Namespace(np=2, output=None, timeout=None, out=None, launcher_arg=[],
    ...                         bench_args=["--size", "8", "-o", "x.json", "--np", "4", "--iterations", "3"])
    >>> split_args(ns), ns.np, ns.output
    (['--size', '8', '--iterations', '3'], 4, 'x.json')
    """
    again = argparse.ArgumentParser(prog="fabscope measure", allow_abbrev=False, add_help=False)
    _own_options(again, default=argparse.SUPPRESS)
    given, rest = again.parse_known_args(list(args.bench_args))
    for k, v in vars(given).items():
        if k == "launcher_arg":
            v = list(getattr(args, k) or []) + v
        setattr(args, k, v)
    return rest


def _check_output(path: str, what: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise MeasureError(f"{what} {path} is a directory")
    if not os.path.isdir(d):
        raise MeasureError(f"{what} {path}: directory {d} does not exist")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from fabscope.cli.options import require_positive
    from fabscope.measure.mpi import describe
    from fabscope.measure.parse import to_result
    from fabscope.measure.runner import execute, plan

    require_positive(args, "np", "ppn")
    con = Console(stderr=True)
    rest = split_args(args)
    if args.timeout is not None and not args.timeout > 0:
        raise MeasureError(f"--timeout must be positive, got {args.timeout:g}")
    if args.output:
        _check_output(args.output, "-o")
    fabric = None
    if args.fabric:
        from fabscope.fabric.io import load_fabric
        fabric = load_fabric(args.fabric)
    out = args.out or f"fabscope-{args.test.replace(',', '+')}.jsonl"
    launcher, hostfile, launcher_args, oversubscribe = args.launcher, args.hostfile, list(args.launcher_arg), args.oversubscribe
    if args.testbed:
        from fabscope.testbed.launch import job as testbed_job

        if args.fabric or args.hostfile:
            con.print("fabscope: note: --testbed gives the fabric and hosts; --fabric/--hostfile ignored")
        fabric, hostfile, tb_args, np_all = testbed_job(args.testbed, out, args.ppn)
        launcher, launcher_args = "mpich", tb_args + launcher_args
        args.np = args.np or np_all
        oversubscribe = True  # every emulated host is a namespace of this machine; its ranks wait on shaped links
    args.np = args.np or 2
    job = plan([args.test, *rest], np=args.np, out=out, launcher=launcher, hostfile=hostfile,
               ppn=args.ppn, fabric=fabric, launcher_args=launcher_args, oversubscribe=oversubscribe)
    con.print(describe(job.mpi), highlight=False, markup=False, soft_wrap=True)
    with con.status(f"fabscope-bench {args.test} on {args.np} ranks") as status:
        def progress(lines: int, last: str) -> None:
            status.update(f"fabscope-bench {args.test} on {args.np} ranks: {lines} lines in {out}")
        result = execute(job, timeout=args.timeout, progress=progress if con.is_terminal else None)
    print("\n".join(report(result, fabric)))
    print(f"\nwrote {os.path.abspath(out)}")
    if args.output:
        to_result(result, None, fabric).write_json(args.output)
    return 0
