"""``fabscope compare``: a measured run beside the model of the same pairs."""

from __future__ import annotations

import argparse
import os
from typing import Sequence

from fabscope.names import plain


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="measured pairs beside the model of the same pairs on the same routes",
                       description="Model every measured pair on the fabric's routes, with the pairs that ran "
                                   "at the same time sharing links, and print per class and per pair measured, "
                                   "modeled and their ratio, the pairs furthest from the model first.")
    p.add_argument("files", nargs="+", metavar="MEASURED",
                   help="fabscope-bench output (.jsonl) or a measured result (.json)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--fabric", help="fabric spec, fabric JSON, or a testbed name")
    src.add_argument("--model", help="a modeled result (fabscope simulate -o) of the same hosts")
    p.add_argument("--routing", help="routing engine (default: the fabric's own)")
    p.add_argument("--host-map", help="lines 'measured-name fabric-host' for hosts named otherwise")
    p.add_argument("--top", type=int, default=15, help="pairs to list (default 15)")
    p.add_argument("-o", "--output", help="write the comparison (fabscope.result JSON, kind compare)")
    p.add_argument("--csv", help="write the per-pair table as CSV")
    p.set_defaults(func=run)


def resolve_fabric(spec: str):
    """A fabric spec or file, else the fabric of a testbed of that name (when fabscope.testbed exists)."""
    from fabscope.errors import FabricError
    from fabscope.fabric.io import load_fabric

    try:
        return load_fabric(spec)
    except FabricError as err:
        try:
            from fabscope.testbed.state import load_fabric as testbed_fabric  # type: ignore[import-not-found]
        except ImportError:
            raise err from None
        try:
            return testbed_fabric(spec)
        except Exception:
            raise err from None


def load_hostmap(path: str | None):
    if not path:
        return None
    from fabscope.fabric.importers.hostmap import read_hostmap

    return read_hostmap(path)


def check_outputs(*paths: str | None, inputs: Sequence[str | None] = ()) -> None:
    """Refuse, before any work, an output whose folder does not exist, or that is one of ``inputs``."""
    from fabscope.atomic import check_outputs as check_all
    from fabscope.errors import FabscopeError

    for p in paths:
        if p and p != "-" and not os.path.isdir(os.path.dirname(os.path.abspath(p))):
            raise FabscopeError(f"cannot write {p}: no folder {os.path.dirname(os.path.abspath(p))}")
    check_all({f"output {i + 1}" if len(paths) > 1 else "-o/--output": p for i, p in enumerate(paths)}, inputs=inputs)


def run(args: argparse.Namespace) -> int:
    from fabscope.diagnose.compare import compare, compare_lines, compare_with_model
    from fabscope.diagnose.measured import load_measured
    from fabscope.result import Result

    check_outputs(args.output, args.csv, inputs=[*args.files, getattr(args, "model", None)])
    if args.model:
        res = compare_with_model(list(args.files), Result.read_json(args.model))
    else:
        fabric = resolve_fabric(args.fabric)
        measured = load_measured(list(args.files), fabric, load_hostmap(args.host_map))
        res = compare(measured, args.routing)
    print("\n".join(plain(ln) for ln in compare_lines(res, args.top)))
    if args.output:
        res.write_json(args.output)
    if args.csv:
        res.write_csv(args.csv)
    return 0
