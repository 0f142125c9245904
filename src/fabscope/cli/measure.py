"""``fabscope measure``: build, launch and read fabscope-bench."""

from __future__ import annotations

import argparse
import os
import warnings

from fabscope.cli.analyze import report
from fabscope.atomic import check_outputs
from fabscope.cli.options import examples
from fabscope.errors import FabscopeWarning, MeasureError
from fabscope.measure.benchhelp import help_of_test, options_help, tests_help
from fabscope.cli.names import OVERSUBSCRIBE_FACTOR
from fabscope.names import plain


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
    p.add_argument("--db", default=d(None), help="also add the run to this history (see 'fabscope history')")
    p.add_argument("--testbed", metavar="NAME", default=d(None),
                   help="run on testbed NAME (see 'fabscope testbed'): its hosts (or --hostfile's, named as on "
                        "the testbed), its fabric, --ppn ranks per host, launched into its namespaces")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("measure", help="run the MPI benchmarks (fabscope-bench) on this job's nodes",
                       description="Build fabscope-bench with the MPI found (see 'fabscope doctor'), launch it, "
                                   "and print the seeds' tables.  fabscope's own options (below) may come before "
                                   "or after TEST; other options after TEST go to the program, "
                                   "e.g. 'random-pairs --size 1MiB --iterations 100'.  Every option is checked "
                                   "before anything is launched.  'fabscope measure TEST --help' explains a test.",
                       epilog=tests_help() + "\n\n" + options_help() + "\n\n" + examples(
                           "fabscope measure --np 2 pingpong --max-size 64KiB --iterations 10",
                           "fabscope measure --np 2 random-pairs --size 1MiB --iterations 20 --out rp.jsonl",
                           "fabscope measure random-pairs --help"))
    _own_options(p)
    p.add_argument("test", nargs="?", default="suite",
                   help="test or comma-separated tests, listed below (default: suite)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="OPTION",
                   help="options of fabscope-bench, listed below ('measure TEST --help': the test's help)")
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


#: a run expected to take longer than this says so before it starts (seconds)
ESTIMATE_ABOVE = 60.0


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from fabscope.cli.options import require_positive
    from fabscope.measure.launchers import get_launcher
    from fabscope.measure.mpi import describe
    from fabscope.measure.parse import to_result
    from fabscope.measure.runner import execute, plan

    require_positive(args, "np", "ppn")
    con = Console(stderr=True, emoji=False)      # an MPI's ':fire:' printed as written, as report.tables' consoles
    rest = split_args(args)
    if "--help" in rest or "-h" in rest:
        # the test's help, from the program's sources: nothing is built, launched or written
        print(help_of_test(args.test))
        return 0
    if any(w == "--list-pairs" or w.startswith("--list-pairs=") for w in rest):
        # the program prints the schedule and exits without MPI; run as a job, it wrote no run to read
        raise MeasureError("--list-pairs runs no job: give it to the program itself, 'fabscope-bench TEST "
                           "--list-pairs N' (fabscope doctor prints its path), or model the draws with "
                           "'fabscope simulate --pattern random-pairs:rounds=R --seed S'")
    if args.timeout is not None and not args.timeout > 0:
        raise MeasureError(f"--timeout must be positive, got {args.timeout:g}")
    out = args.out or f"fabscope-{args.test.replace(',', '+')}.jsonl"
    # -o and --out checked first (folders, links, each other, the inputs): nothing is built or launched before
    check_outputs({"--out": out, "-o": args.output},
                  inputs=[args.hostfile, args.fabric if args.fabric and os.path.exists(args.fabric) else None])
    if args.db:
        from fabscope.cli.history_db import check_db
        check_db(args.db)
    fabric = None
    if args.fabric:
        from fabscope.resolver import resolve_fabric
        fabric = resolve_fabric(args.fabric)
    launcher, hostfile, launcher_args, oversubscribe = args.launcher, args.hostfile, list(args.launcher_arg), args.oversubscribe
    srun = launcher != "auto" and get_launcher(launcher).name == "srun"
    if args.testbed and srun:
        # inside an allocation of the testbed's Slurm: its nodes, launched by srun, ranks over fab0
        from fabscope.measure.build import bench_binary
        from fabscope.measure.mpi import find_mpi, program_mpi
        from fabscope.measure.runner import usable_cpus
        from fabscope.testbed import state as tb_state
        from fabscope.testbed.launch import mpi_env, ompi_env

        if args.fabric:
            con.print("fabscope: note: --testbed gives the fabric (as built); --fabric ignored")
        fabric = tb_state.load_fabric(args.testbed)
        bench_mpi = program_mpi(str(bench_binary(find_mpi())[0]))
        os.environ.update(ompi_env(None, args.np or 2, usable_cpus()) if bench_mpi.family == "openmpi"
                          else mpi_env(bench_mpi.netmod or "ofi"))
    elif args.testbed:
        from fabscope.measure.build import bench_binary
        from fabscope.measure.mpi import find_mpi, program_mpi
        from fabscope.testbed.launch import job as testbed_job, ready

        if args.fabric:
            con.print("fabscope: note: --testbed gives the fabric (as built); --fabric ignored")
        ready(args.testbed)
        # launched as the benchmark's MPI launches: Hydra (OFI, or UCX for a UCX build) or Open MPI's mpirun
        bench_mpi = program_mpi(str(bench_binary(find_mpi())[0]))
        fabric, hostfile, launcher, tb_args, np_all = testbed_job(args.testbed, out, args.ppn, args.hostfile,
                                                                  bench_mpi.family, bench_mpi.netmod)
        launcher_args = tb_args + launcher_args
        args.np = args.np or np_all
        oversubscribe = True  # every emulated host is a namespace of this machine; its ranks wait on shaped links
    args.np = args.np or 2
    ppn = None if args.testbed and launcher == "openmpi" else args.ppn    # its host file has a line per rank
    with warnings.catch_warnings():
        if args.testbed:        # the testbed's machine file lists a host once per run of ranks, in rank order
            warnings.filterwarnings("ignore", message=".*is listed again", category=FabscopeWarning)
        job = plan([args.test, *rest], np=args.np, out=out, launcher=launcher, hostfile=hostfile,
                   ppn=ppn, fabric=fabric, launcher_args=launcher_args, oversubscribe=oversubscribe)
    con.print(describe(job.mpi), highlight=False, markup=False, soft_wrap=True)
    if fabric is not None:      # the sweeps' time at the host links' rate, before a long run starts
        from fabscope.measure.estimate import FABRIC_LATENCY, TESTBED_LATENCY, estimate_line

        rate = float(fabric.link_capacity[fabric.link_src < fabric.n_hosts].min())
        where = f"testbed {args.testbed}'s host links" if args.testbed else f"{fabric.name}'s host links"
        line = estimate_line(args.test.split(","), rest, rate, TESTBED_LATENCY if args.testbed else FABRIC_LATENCY,
                             where, min_seconds=ESTIMATE_ABOVE)
        if line:
            con.print(plain(f"fabscope: {line}"), highlight=False, markup=False, soft_wrap=True)
    watch = None
    if args.testbed:
        from fabscope.testbed.linkbound import Watch

        watch = Watch.start(args.testbed)  # the shapers' counters and the CPUs around the run
    with con.status(f"fabscope-bench {args.test} on {args.np} ranks") as status:
        def progress(lines: int, last: str) -> None:
            status.update(f"fabscope-bench {args.test} on {args.np} ranks: {lines} lines in {out}")
        result = execute(job, timeout=args.timeout, progress=progress if con.is_terminal else None)
    link_from = None
    if args.testbed:
        from fabscope.testbed import state as tb_state
        from fabscope.testbed.smallmsg import link_size

        link_from = link_size(tb_state.load(args.testbed).rate)
    print("\n".join(plain(ln) for ln in report(result, fabric, link_from=link_from)))
    slurm_rec = None
    if os.environ.get("SLURM_JOB_ID"):
        from fabscope.testbed.linkbound import append as append_record

        rec = slurm_rec = slurm_record(os.environ, launcher)
        append_record(out, rec)
        print(plain(f"slurm job {rec['job_id']} on {rec['nodelist']} (launcher {rec['launcher']})"))
    if watch is not None:
        from fabscope.testbed.linkbound import append

        from fabscope.testbed.smallmsg import note

        rec = watch.finish(out)
        sizes = [int(x["bytes"]) for x in result.records if isinstance(x.get("bytes"), (int, float))]
        rec |= {"link_sizes_from": link_from, "smallest_size": min(sizes) if sizes else None}
        append(out, rec)
        print(f"testbed {args.testbed}: {'link-bound' if rec['link_bound'] else 'NOT LINK-BOUND'}: {rec['why']} "
              f"(CPUs: {rec['cpu']}; load average {rec['loadavg']:.1f} on {rec['cores']} cores)")
        if sizes and min(sizes) < link_from:
            print(note(args.testbed, link_from, min(sizes)))
    print(f"\nwrote {os.path.abspath(out)}")
    if args.output:
        res = to_result(result, None, fabric)
        if slurm_rec is not None:
            res.meta["slurm"] = {k: v for k, v in slurm_rec.items() if k != "type"}
        res.write_json(args.output)
    if args.db:
        from fabscope.cli.history_db import add_files
        add_files(args.db, [out], fabric)
    return 0


def slurm_record(env: "os._Environ[str] | dict[str, str]", launcher: str) -> dict:
    """The allocation a run inside Slurm measured in: a ``slurm`` line of its JSON-lines output.

    >>> slurm_record({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_PARTITION": "p"}, "srun")
    {'type': 'slurm', 'job_id': '7', 'nodelist': 'n[1-2]', 'nodes': ['n1', 'n2'], 'partition': 'p', 'launcher': 'srun'}
    """
    from fabscope.measure.hostlists import expand_nodelist

    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
    return {"type": "slurm", "job_id": env.get("SLURM_JOB_ID", ""), "nodelist": nodelist,
            "nodes": expand_nodelist(nodelist) if nodelist else [],
            "partition": env.get("SLURM_JOB_PARTITION", ""), "launcher": launcher}
