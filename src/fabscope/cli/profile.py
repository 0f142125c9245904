"""``fabscope profile``: run an MPI program under the PMPI library and write its communication matrix."""

from __future__ import annotations

import argparse
import sys

from fabscope.cli.files import not_a_file, reads, writes
from fabscope.cli.options import examples


def _matrices(value: object, args: argparse.Namespace) -> list[str]:
    """The two files ``-o`` names: the bytes matrix and the message counts beside it."""
    from fabscope.profiler import matrices

    return list(matrices(str(value))) if value else []


def _options(p: argparse.ArgumentParser, default: object = None) -> None:
    def d(x: object) -> object:
        return x if default is None else default
    writes(p.add_argument("-o", "--output", default=d("fabscope-comm.mtx"),
                          help="the bytes matrix (Matrix Market; message counts beside it as .msgs.mtx); default "
                               "fabscope-comm.mtx"), _matrices)
    not_a_file(p.add_argument("--testbed", metavar="NAME", default=d(None),
                              help="run on testbed NAME as 'testbed run' does (--hostfile, --placement, --ppn as there)"))
    p.add_argument("--np", type=int, default=d(None), help="ranks (default: 2 here; on a testbed, every slot)")
    reads(p.add_argument("--hostfile", default=d(None), help="hosts to run on"))
    reads(p.add_argument("--placement", default=d(None), help="on a testbed: a placement as 'fabscope map -o' writes it"))
    p.add_argument("--ppn", type=int, default=d(None), help="on a testbed: ranks per host")
    p.add_argument("--timeout", type=float, default=d(None), help="stop every rank after this many seconds (exit 124)")
    p.add_argument("--mpi", default=d(None), choices=("openmpi", "mpich", "mpich-ofi", "mpich-ucx"),
                   help="the program's MPI, where its ELF dependencies do not say (the library is still "
                        "built against the MPI library the program loads)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="run an MPI program under the PMPI profiler: the matrix 'map --comm' takes",
                       description="Read the program's MPI from its ELF dependencies, build the PMPI library "
                                   "(csrc/pmpi) against that MPI, run the program with the library preloaded in "
                                   "its ranks (Hydra -genv, Open MPI -x), on a testbed or with the MPI's own "
                                   "launcher here, and write the bytes (and message counts) every rank sent to "
                                   "every other.",
                       epilog=examples("fabscope profile --np 4 -o app.mtx -- ./app",
                                       "sudo fabscope profile --testbed tb1 -o lmp.mtx -- lmp -in in.lj"))
    _options(p)
    p.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabscope.cli.options import require_positive
    from fabscope.errors import MeasureError
    from fabscope.profiler import profile

    rest = list(args.program)   # options given after PROGRAM's '--' belong to the program
    if rest and rest[0].startswith("-") and rest[0] != "--" and "--" in rest:
        cut = rest.index("--")
        again = argparse.ArgumentParser(prog="fabscope profile", add_help=False, allow_abbrev=False)
        _options(again, default=argparse.SUPPRESS)
        for k, v in vars(again.parse_args(rest[:cut])).items():
            setattr(args, k, v)
        rest = rest[cut:]
    rest = rest[1:] if rest[:1] == ["--"] else rest
    require_positive(args, "np", "ppn")
    if not args.testbed and (args.placement or args.ppn):
        raise MeasureError("--placement and --ppn go with --testbed")
    if not rest:
        raise MeasureError("no program to profile: fabscope profile [options] -- PROGRAM [ARGS...]")
    return profile(rest, args.output, testbed=args.testbed, np=args.np, hostfile=args.hostfile,
                   placement=args.placement, ppn=args.ppn, timeout=args.timeout, mpi=args.mpi,
                   say=lambda m: print(m, file=sys.stderr))
