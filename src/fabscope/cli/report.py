"""``fabscope report``: one self-contained HTML file (and the same tables in the terminal)."""

from __future__ import annotations

import argparse
import os

from fabscope.cli.files import existing, named_later, reads, writes
from fabscope.cli.options import examples
from fabscope.errors import FabscopeError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write one self-contained HTML report of results (tables and pictures)",
                       description="Read fabscope results (modeled, measured, compared, diagnosed, mapping) or "
                                   "fabscope-bench output, print the tables, and write one HTML file with "
                                   "everything inside it (no network needed to open it). Several runs of one "
                                   "fabric are set side by side with the pairs and classes that changed most.",
                       epilog=examples("fabscope report run.jsonl -o run.html",
                                       "fabscope report run.jsonl --fabric itasca --title 'first run' -o run.html --quiet"))
    reads(p.add_argument("files", nargs="+", metavar="FILE", help="fabscope.result JSON or fabscope-bench JSON lines"))
    writes(p.add_argument("-o", "--output", required=True, help="the HTML file to write"))
    reads(p.add_argument("--model", help="a modeled result of the same pairs: measured beside modeled, pair by pair"))
    reads(p.add_argument("--fabric", help="fabric spec or JSON file the runs are on (default: rebuilt from the "
                                          "result)"), existing)
    writes(p.add_argument("--images", metavar="DIR", help="also write every picture as PNG and SVG into DIR "
                                                          "(kaleido)"), named_later)
    p.add_argument("--title", help="title of the page")
    p.add_argument("--partial", action="store_true", help="report a truncated fabscope-bench file as far as it is whole")
    p.add_argument("--quiet", action="store_true", help="do not print the tables")
    p.set_defaults(func=run)


def _need_libraries() -> None:
    try:
        import jinja2  # noqa: F401
        import plotly  # noqa: F401
    except ImportError as err:
        raise FabscopeError(f"fabscope report needs the 'report' extras ({err.name} is missing): "
                            "pip install 'fabscope[report]'") from err


def check_output(path: str) -> None:
    """Refuse before any work a report that cannot be written (and a missing report library); that it is
    none of the command's inputs, :mod:`fabscope.cli.files` checked already."""
    from fabscope.atomic import check_outputs

    _need_libraries()
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FabscopeError(f"cannot write {path}: no folder {folder}")
    if not os.access(folder, os.W_OK):
        raise FabscopeError(f"cannot write {path}: folder {folder} is not writable")
    check_outputs({"-o/--output": path})


def check_images(folder: str) -> None:
    """``--images DIR``: an existing folder fabscope may write in, or a new one in such a folder
    (created only once every picture is drawn); anything else is refused before any work."""
    from fabscope.atomic import check_output as check_file

    if os.path.islink(folder) or (os.path.exists(folder) and not os.path.isdir(folder)):
        raise FabscopeError(f"--images {folder}: not a folder (give a folder for the pictures)")
    # a file in the folder (or, for a new folder, beside it) can be created: the same checks as any output
    probe = os.path.join(folder, "picture.png") if os.path.isdir(folder) else (folder.rstrip(os.sep) or os.sep)
    check_file(probe, f"--images {folder}:" if os.path.isdir(folder) else "--images")


def report_results(results, output: str, fabric=None, console=None, labels=None) -> int:
    """The report of results in memory (``simulate --report``, ``demo``): the tables were printed already."""
    from fabscope.report.inputs import Run

    labels = labels or [str(r.meta.get("pattern") or r.meta.get("kind") or "run") for r in results]
    runs = [Run(lab, r, fabric=fabric) for lab, r in zip(labels, results)]   # no file: the facts say none
    return write(runs, output, quiet=True, console=console)


def run(args: argparse.Namespace) -> int:
    _need_libraries()
    from fabscope.report.build import read_inputs

    fabric = None
    if args.fabric:
        from fabscope.resolver import resolve_fabric

        fabric = resolve_fabric(args.fabric)
    check_output(args.output)
    if args.images:
        from fabscope.report.export import find_browser

        check_images(args.images)
        if find_browser() is None:
            raise FabscopeError("--images needs Chromium (Debian: apt-get install chromium) or BROWSER_PATH")
    runs = read_inputs(args.files, model=args.model, fabric=fabric, partial=args.partial)
    return write(runs, args.output, title=args.title, images=args.images, quiet=args.quiet)


def write(runs, output: str, title: str | None = None, images: str | None = None, quiet: bool = False,
          console=None) -> int:
    """Draw (with a progress bar on a terminal), print the tables, write the page; also used by demo and simulate."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from fabscope.atomic import all_or_none
    from fabscope.report.build import report_sections, write_report
    from fabscope.report.console import PlainConsole
    from fabscope.report.tables import make_console, print_tables

    con = console or make_console()
    bar_con = con.rich if isinstance(con, PlainConsole) else con    # rich's bar needs rich's console
    steps = len(runs) + 2 + bool(images)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=bar_con, transient=True, disable=not con.is_terminal) as prog:
        task = prog.add_task("report", total=steps)

        def step(what: str) -> None:
            prog.update(task, description=what, advance=1)

        sections = report_sections(runs, step)
        paths = []
        with all_or_none():    # the page lands only once the pictures are written too
            size = write_report(runs, output, title, sections=sections, progress=step)
            if images:
                from fabscope.report.export import export_images

                step(f"exporting pictures to {images}")
                paths = export_images([p for s in sections for p in s.pictures], images)
    if not quiet:
        for s in sections:
            if s.tables:
                print_tables(s.tables, con, s.title)
    con.print(f"report: {output} ({size / 1e6:.1f} MB, {sum(len(s.pictures) for s in sections)} pictures)")
    if images:
        con.print(f"pictures: {len(paths)} files (PNG and SVG) in {images}")
    return 0
