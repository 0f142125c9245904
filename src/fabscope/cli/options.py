"""Options shared by several subcommands: one definition each, and checks run before any work.

Every command that takes ``--size``, ``--ppn``, ``--ranks``, ``--pattern``,
``--routing`` or ``--fabric`` adds it from here, so that its meaning and its
default are the same everywhere; :data:`SHARED` is the table docs/options.md
shows (a test holds the two equal).

>>> import argparse
>>> require_positive(argparse.Namespace(ppn=0, ranks=None), "ppn", "ranks")
Traceback (most recent call last):
...
fabscope.errors.PlacementError: --ppn must be >= 1, got 0
>>> p = argparse.ArgumentParser()
>>> add_job(p); add_size(p)
>>> p.parse_args([])
Namespace(ranks=None, ppn=None, size='1MiB')
"""

from __future__ import annotations

import argparse
import textwrap

from fabscope.errors import PlacementError

#: the default message size everywhere: seed 000's "Message size: 1MB" in the MPI sense of 2**20 bytes
DEFAULT_SIZE = "1MiB"

#: (option, default, meaning): the table of shared options (docs/options.md)
SHARED = [
    ("--fabric", "itasca (where optional)",
     "fabric spec (itasca, fat-tree:k=4,levels=2, torus:8x8x16, ...), fabric JSON file, or a testbed name"),
    ("--size", DEFAULT_SIZE,
     "message size: 8, 64KiB, 1MiB (binary), 4M, 1MB (decimal); 1MiB is seed 000's \"1MB\" message, as MPI "
     "benchmarks count it"),
    ("--ppn", "all cores of a host",
     "ranks per node, as mpirun fills a host's slots; --ppn 1 is seed 000's one-rank-per-node run"),
    ("--ranks", "--ppn x every host", "ranks of the job, placed --ppn at a time on consecutive hosts"),
    ("--pattern", "random-pairs", "traffic pattern, name[:key=value,...] (simulate --help lists them)"),
    ("--routing", "the fabric's own", "routing engine, e.g. minhop, ftree, dor:tie=simgrid, updn:roots=S1+S2"),
    ("--seed", "0", "seed of random patterns and routing choices: the same seed, the same pairs"),
]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Wrapped paragraphs, but lines indented by two spaces (the examples) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for para in text.split("\n"):
            if para.startswith("  ") or not para.strip():
                out.append(indent + para)
            else:
                out.append(textwrap.fill(para, width, initial_indent=indent, subsequent_indent=indent))
        return "\n".join(out)

    def _get_help_string(self, action: argparse.Action) -> str:
        """Add '(default: X)' where the help does not already say its default and there is one to say."""
        h = action.help or ""
        if "default" in h or action.default in (None, False, "", argparse.SUPPRESS) or action.option_strings == []:
            return h
        if isinstance(action.default, list) and not action.default:
            return h
        return h + " (default: %(default)s)"


def examples(*commands: str) -> str:
    """The epilog of a subcommand: commands that run as written (tests/test_docs_commands.py runs them)."""
    return "examples:\n" + "\n".join(f"  {c}" for c in commands)


def add_fabric(p: argparse.ArgumentParser, required: bool = False) -> None:
    what = "fabric spec, fabric JSON file, or a testbed: tb1 (as built) or tb1:now (with its faults)"
    if required:
        p.add_argument("--fabric", required=True, help=f"{what}, e.g. itasca, fat-tree:k=4,levels=2 (required)")
    else:
        p.add_argument("--fabric", default="itasca", help=f"{what} (default: itasca, seed 000's cluster)")


def add_size(p: argparse.ArgumentParser, what: str = "message size") -> None:
    p.add_argument("--size", default=DEFAULT_SIZE,
                   help=f"{what}: 8, 64KiB, 1MiB (binary), 4M, 1MB (decimal) (default: {DEFAULT_SIZE}, "
                        "seed 000's \"1MB\")")


def add_job(p: argparse.ArgumentParser) -> None:
    """``--ranks`` and ``--ppn``, with the defaults :func:`job_shape` gives them."""
    p.add_argument("--ranks", type=int, help="ranks of the job (default: --ppn x every host)")
    p.add_argument("--ppn", type=int, help="ranks per node (default: all cores of a host, as mpirun fills "
                                           "its slots; --ppn 1: one rank per node)")


def job_shape(args: argparse.Namespace, fabric) -> tuple[int, int]:
    """(ranks, ppn) from ``--ranks``/``--ppn`` and their shared defaults."""
    require_positive(args, "ranks", "ppn")
    ppn = args.ppn or int(fabric.host_cores.max())
    return args.ranks or ppn * fabric.n_hosts, ppn


def add_pattern(p: argparse.ArgumentParser, dynamic: bool = False) -> None:
    static = pattern_names()
    only = [n for n in pattern_names(True) if n not in static] if dynamic else []
    p.add_argument("--pattern", default="random-pairs",
                   help="traffic pattern[:key=value,...], one of " + ", ".join(static)
                        + (f"; with --dynamic also {', '.join(only)}" if only else "") + " (default: random-pairs)")


def pattern_names(dynamic: bool = False) -> list[str]:
    """The names ``--pattern`` takes (with ``dynamic``: also those only --dynamic runs); the lists of
    :mod:`fabscope.cli.names`, tested equal to the library's registries (tests/test_cli_startup.py).

    >>> "allreduce:ring" in pattern_names(True), "allreduce:ring" in pattern_names()
    (True, False)
    """
    from fabscope.cli.names import DYNAMIC_PATTERNS, PATTERNS

    return list(PATTERNS) + (list(DYNAMIC_PATTERNS) if dynamic else [])


def library_pattern_names() -> list[str]:
    """What the registries themselves say --dynamic adds to the static patterns (for the test)."""
    from fabscope.cli.names import PROGRAM_ONLY
    from fabscope.dynamic.programs import COLLECTIVES

    names = []
    for name in PROGRAM_ONLY:
        if name in COLLECTIVES:
            names += [f"{name}:{a}" for a in COLLECTIVES[name]]
    return names + [f"{n}:FILE" for n in PROGRAM_ONLY if n not in COLLECTIVES]


def add_routing(p: argparse.ArgumentParser) -> None:
    from fabscope.cli.names import ENGINES

    p.add_argument("--routing", metavar="ENGINE",
                   help=f"routing engine: {', '.join(ENGINES)}, with options such as dor:tie=simgrid or "
                        "updn:roots=S1+S2 (default: the fabric's own)")


def add_ports(p: argparse.ArgumentParser) -> None:
    """``--ports``: how MPI uses hosts with several ports (fabscope.fabric.ports)."""
    p.add_argument("--ports", default="rank", metavar="POLICY",
                   help="how ranks use hosts with several ports: rank (one port per rank, local rank "
                        "round-robin; rank i on NIC i) or stripe[:THRESHOLD] (a message from THRESHOLD bytes, "
                        "default 500000 as IBM HPS, split over all port pairs p->p); one-port hosts: no effect")


def add_seed(p: argparse.ArgumentParser, default: int = 0, what: str = "random patterns and routing choices") -> None:
    p.add_argument("--seed", type=int, default=default,
                   help=f"seed of {what}: the same seed, the same choices (default: {default})")


def require_positive(args: argparse.Namespace, *dests: str) -> None:
    """Refuse zero or a negative count given for any of the options ``dests`` (``None``: not given)."""
    for dest in dests:
        value = getattr(args, dest, None)
        if value is not None and value < 1:
            raise PlacementError(f"--{dest.replace('_', '-')} must be >= 1, got {value}")


def resolve_fabric(spec: str):
    """:func:`fabscope.resolver.resolve_fabric`, imported when a command runs (the parser stays light)."""
    from fabscope.resolver import resolve_fabric as resolve

    return resolve(spec)
