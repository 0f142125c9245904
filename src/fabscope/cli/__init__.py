"""The ``fabscope`` command: a thin front end over the library.

Each subcommand lives in its own module here and exposes ``register(sub)``,
which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code.  The library never imports this package.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_quietly(num: int, frame: object) -> None:
    """Ctrl-C while the program starts (its imports): one line, exit 130, no traceback."""
    os.write(2, b"fabscope: interrupted\n")
    os._exit(130)


def _as_program() -> bool:
    """Run as the ``fabscope`` command or ``python -m fabscope.cli`` (not imported by a library or tests)."""
    arg0 = sys.argv[0] if sys.argv else ""
    return os.path.basename(arg0) == "fabscope" or arg0 == "-m" or arg0.endswith(os.path.join("cli", "__main__.py"))


# first, before the slower imports: a Ctrl-C during start-up ends the program in one line
if _as_program() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_quietly)

#: commands whose work has no dense linear algebra beyond short vectors (sparse and integer arrays, the
#: compiled engine, diagnose's noise fit, which history add runs on each night): OpenBLAS's idle workers
#: cost compare, diagnose and analyze 0.03 CPU s of 0.17-0.25 on a small input (docs/startup.md); their
#: results are the same bits
ONE_BLAS_THREAD = ("simulate", "compare", "diagnose", "analyze", "history")
#: what OpenBLAS (NumPy's wheels) reads for its thread count, in its order
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _one_blas_thread(argv: list[str]) -> bool:
    """Ask OpenBLAS for one thread, before NumPy is imported, when the command is one of
    ``ONE_BLAS_THREAD`` and the user set no thread count: at its load OpenBLAS starts a worker
    per core, which spin a while (0.03-0.08 CPU s of a process that calls no BLAS routine, here
    on 2 cores: docs/benchmarks.md); results do not change (tests/test_cli_startup.py)."""
    if argv[1:2] and argv[1] in ONE_BLAS_THREAD and not any(v in os.environ for v in BLAS_THREAD_VARIABLES) \
            and "numpy" not in sys.modules:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        return True
    return False


if _as_program():
    _one_blas_thread(sys.argv)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import warnings  # noqa: E402

from fabscope import __version__  # noqa: E402
from fabscope.atomic import hold_output_locks  # noqa: E402
from fabscope.errors import FabscopeError, FabscopeWarning  # noqa: E402
from fabscope.names import plain  # noqa: E402

#: each command word and the module of this package that adds it, in the order ``--help`` lists
#: them (tests/test_cli_one_command.py holds this table to what the modules register)
COMMANDS = {"demo": "demo", "simulate": "simulate", "fabric": "fabric_cmd", "measure": "measure",
            "analyze": "analyze", "doctor": "doctor", "map": "mapping", "permute": "mapping", "place": "mapping",
            "report": "report", "compare": "compare", "testbed": "testbed", "diagnose": "diagnose",
            "history": "history", "profile": "profile"}
#: the modules that add a subcommand, once each, in that order
COMMAND_MODULES = list(dict.fromkeys(COMMANDS.values()))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``fabscope`` parser.  Given the ``command`` a run names, only the module that adds
    that command registers: the others' imports and parsers were 20-45 CPU ms of every run
    (measure's alone 13-20), and parsing that command's arguments does not need them."""
    from fabscope.cli.options import examples

    parser = argparse.ArgumentParser(
        prog="fabscope",
        description="Measure, model and map HPC interconnects.  'fabscope COMMAND --help' explains a command and "
                    "ends with examples; options several commands share: docs/options.md.",
        epilog=examples("fabscope demo --no-measure", "fabscope doctor --no-run",
                        "fabscope measure random-pairs --help"),
    )
    parser.add_argument("--version", action="version", version=f"fabscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES:
        importlib.import_module(f"fabscope.cli.{name}").register(sub)
    from fabscope.cli.options import HelpFormatter

    for _, p in walk_parsers(parser):
        p.formatter_class = HelpFormatter
    return parser


def walk_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command words, parser) of ``parser`` and every subcommand under it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from walk_parsers(child, path + (name,))


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, a batch system ending the job): unwound as Ctrl-C is, so that locks, ``.part`` and
    temporary files and a history's first file are removed on the way out; exit 143 (128 + 15)."""


def _terminated(num: int, frame: object) -> None:
    raise Terminated()


def _show_warning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
    """fabscope's own warnings as one line; others as Python prints them."""
    if issubclass(category, FabscopeWarning):
        print(f"fabscope: warning: {plain(message)}", file=sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(*words[:1])     # the command named, if any; Ctrl-C here ends quietly too
        args = parser.parse_args(words)
        if signal.getsignal(signal.SIGINT) is _interrupted_quietly:
            # from here Ctrl-C is KeyboardInterrupt: a running job is stopped and its files settled first
            signal.signal(signal.SIGINT, signal.default_int_handler)
        from fabscope.cli.files import check as check_files

        check_files(parser, args)       # an output that is an input, by any name: refused before any work
        with hold_output_locks(), _sigterm_unwinds():   # outputs checked stay locked until the command ends
            code = int(args.func(args) or 0)
        if argv is None and getattr(args, "exit_at_once", False):
            # run as the program, outputs written (fabscope.atomic: renamed into place) and their
            # locks released: leave without the interpreter's teardown of the run's memory
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except FabscopeError as err:
        print(f"fabscope: error: {plain(err)}", file=sys.stderr)   # a name's escape sequence shown, not run
        return 1
    except KeyboardInterrupt as err:
        terminated = isinstance(err, Terminated)
        print(f"fabscope: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        code = 143 if terminated else 130
        if argv is None:
            # run as the program: leave at once; the interpreter's teardown of a large
            # simulation's memory takes seconds on a busy machine, and nothing is left to write
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    except BrokenPipeError:
        return 0


@contextlib.contextmanager
def _sigterm_unwinds():
    """While a command runs, SIGTERM raises :class:`Terminated` (where nothing else handles it: measure
    installs its own for its job), and the default comes back after."""
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
