"""``fabscope measure``: build, launch and read fabscope-bench."""

from __future__ import annotations

import argparse
import os

from rich.console import Console

from fabscope.cli.analyze import report
from fabscope.measure.parse import to_result
from fabscope.measure.runner import measure


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("measure", help="run the MPI benchmarks (fabscope-bench) on this job's nodes",
                       description="Build fabscope-bench with the MPI found (see 'fabscope doctor'), launch it, "
                                   "and print the seeds' tables.  Options after TEST go to the program, "
                                   "e.g. 'random-pairs --size 1MiB --iterations 100'.")
    p.add_argument("--np", type=int, default=2, help="number of ranks (default: 2)")
    p.add_argument("--launcher", default="auto", help="mpich (mpiexec), openmpi (mpirun), srun; default: the MPI's own")
    p.add_argument("--hostfile", help="hosts to run on (default: $PBS_NODEFILE, $SLURM_JOB_NODELIST, or this host)")
    p.add_argument("--ppn", type=int, help="ranks per node")
    p.add_argument("--fabric", help="fabric spec or JSON file: class pairs by its groups, pass leaves/coordinates")
    p.add_argument("--out", help="JSON-lines output (default: fabscope-TEST.jsonl)")
    p.add_argument("-o", "--output", help="also write the per-pair result (fabscope.result JSON)")
    p.add_argument("--timeout", type=float, help="stop the job after this many seconds (finished lines are kept)")
    p.add_argument("--launcher-arg", action="append", default=[], help="extra option for the launcher (repeatable)")
    p.add_argument("test", nargs="?", default="suite", help="test or comma-separated tests (default: suite)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="options of fabscope-bench")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabscope.cli.options import require_positive

    require_positive(args, "np", "ppn")
    con = Console(stderr=True)
    fabric = None
    if args.fabric:
        from fabscope.fabric.io import load_fabric
        fabric = load_fabric(args.fabric)
    rest = list(args.bench_args)
    if "--out" in rest[:-1]:  # the program's own --out, given after TEST
        i = rest.index("--out")
        args.out = rest[i + 1]
        del rest[i:i + 2]
    out = args.out or f"fabscope-{args.test.replace(',', '+')}.jsonl"
    with con.status(f"fabscope-bench {args.test} on {args.np} ranks") as status:
        def progress(lines: int, last: str) -> None:
            status.update(f"fabscope-bench {args.test} on {args.np} ranks: {lines} lines in {out}")
        result = measure([args.test, *rest], np=args.np, out=out, timeout=args.timeout,
                         progress=progress if con.is_terminal else None, launcher=args.launcher,
                         hostfile=args.hostfile, ppn=args.ppn, fabric=fabric, launcher_args=args.launcher_arg)
    print("\n".join(report(result, fabric)))
    print(f"\nwrote {os.path.abspath(out)}")
    if args.output:
        to_result(result, None, fabric).write_json(args.output)
    return 0
