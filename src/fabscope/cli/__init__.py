"""The ``fabscope`` command: a thin front end over the library.

Each subcommand lives in its own module here and exposes ``register(sub)``,
which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code.  The library never imports this package.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from fabscope import __version__
from fabscope.errors import FabscopeError, FabscopeWarning

# Modules of this package that add a subcommand, in the order ``--help`` lists them.
COMMAND_MODULES = [
    "demo",
    "simulate",
    "fabric_cmd",
    "measure",
    "analyze",
    "doctor",
    "mapping",
    "report",
    "compare",
    "testbed",
    "diagnose",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fabscope",
        description="Measure, model and map HPC interconnects.",
    )
    parser.add_argument("--version", action="version", version=f"fabscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(f"fabscope.cli.{name}").register(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
    """fabscope's own warnings as one line; others as Python prints them."""
    if issubclass(category, FabscopeWarning):
        print(f"fabscope: warning: {message}", file=sys.stderr)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except FabscopeError as err:
        print(f"fabscope: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fabscope: interrupted", file=sys.stderr)
        if argv is None:
            # run as the program: leave at once; the interpreter's teardown of a large
            # simulation's memory takes seconds on a busy machine, and nothing is left to write
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
