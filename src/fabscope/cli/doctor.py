"""``fabscope doctor``: which MPI fabscope found, and whether a 2-rank job runs."""

from __future__ import annotations

import argparse

from fabscope.cli.options import examples
import os
import tempfile

from fabscope.errors import FabscopeError
from fabscope.measure.mpi import SOURCES, WHEEL_NOTE, candidates, find_mpi


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="show the MPI found, build fabscope-bench, run a 2-rank job",
                       description=f"MPI is looked for in this order: {', '.join(SOURCES)} "
                                   "(see fabscope.measure.mpi); set FABSCOPE_MPICC=/path/to/mpicc to pin one.",
                       epilog=examples("fabscope doctor --no-run", "fabscope doctor"))
    p.add_argument("--no-run", action="store_true", help="do not launch the 2-rank test job")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabscope.measure import launchers
    from fabscope.measure.analysis import wait_loop
    from fabscope.measure.build import bench_binary, source_dir
    from fabscope.measure.hostlists import job_hosts
    from fabscope.measure.runner import OVERSUBSCRIBE_FACTOR, measure, usable_cpus

    seen = candidates()
    print(f"candidates   in order ({', '.join(SOURCES)}); the first that finds an mpicc is used:")
    for c in seen:
        print(f"  {c.source:<14} {c.path or '-':<40} {c.note}")
    mpi = find_mpi()
    why = ("$FABSCOPE_MPICC pins it" if mpi.source == "FABSCOPE_MPICC"
           else f"the first rule that found one; set FABSCOPE_MPICC=/path/to/mpicc to pin a choice")
    print(f"picked       {mpi.mpicc} ({mpi.source}: {why})")
    print(f"MPI          {mpi.vendor}: {mpi.version}")
    print(f"mpicc        {mpi.mpicc}\nlauncher     {mpi.mpiexec}")
    print(f"launchers    {', '.join(launchers.names())}")
    hosts = job_hosts()
    print(f"job hosts    {f'{len(hosts[0])} from {hosts[1]}' if hosts else 'none (not in a PBS/Slurm job): this host'}")
    if mpi.is_wheel:
        print(f"note         {WHEEL_NOTE}")
    cpus = usable_cpus()
    print(f"CPUs         {cpus} in this process's affinity set (of {os.cpu_count()} online); "
          f"measure refuses more than {OVERSUBSCRIBE_FACTOR * cpus} ranks here without --oversubscribe")
    print("wait loop    --yield auto: every rank spins when no host runs more ranks than CPUs in the union "
          "of its ranks' affinity sets, and all yield otherwise (agreed by all ranks; the load average is not used)")
    exe, built = bench_binary(mpi)
    print(f"program      {exe} ({'built now' if built else 'cached'}; sources {source_dir()})")
    if args.no_run:
        return 0
    with tempfile.TemporaryDirectory() as d:
        try:
            r = measure(["pingpong", "--size", "8", "--iterations", "2000"], np=2,
                        out=os.path.join(d, "doctor.jsonl"), timeout=60, mpi=mpi)
        except FabscopeError as err:
            print(f"2-rank job   FAILED: {err}")
            return 1
    rec = r.of("pingpong", "size")[0]
    print(f"2-rank job   ok: 8 B ping-pong latency {rec['latency'] * 1e6:.2f} us; {wait_loop(r)}")
    return 0
