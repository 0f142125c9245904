"""A report from files, in order: read and check every input, then draw, then write.

Every check that can fail on bad input runs in :func:`read_inputs`, before
anything is drawn; the page is written atomically.

>>> import numpy as np, os, tempfile
>>> from fabscope.result import Result
>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> from fabscope.traffic.patterns import shift
>>> from fabscope.model.simulate import simulate
>>> f = fat_tree(k=4, levels=2)
>>> res = simulate(f, Placement.block(f, 16, ppn=1), shift(16, 1e6, k=4))
>>> d = tempfile.mkdtemp()
>>> res.write_json(os.path.join(d, "run.json"))
>>> runs = read_inputs([os.path.join(d, "run.json")])
>>> size = write_report(runs, os.path.join(d, "r.html"))
>>> size > 4_000_000, [p.name for p in report_sections(runs)[0].pictures]
(True, ['classes', 'leaf-matrix', 'rank-matrix', 'links', 'fabric'])
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

from fabscope.errors import FabscopeError, SchemaError
from fabscope.fabric.model import Fabric
from fabscope.report import html
from fabscope.report.compare import join
from fabscope.report.inputs import Run, attach_fabric, read_input, same_fabric
from fabscope.report.sections import Section, build_sections


def read_inputs(paths: Sequence[str], model: str | None = None, fabric: Fabric | None = None,
                partial: bool = False) -> list[Run]:
    """Read and check every input; with ``model``, each measured run is joined to that model pair by pair."""
    if not paths:
        raise FabscopeError("no input files")
    runs = [read_input(p, partial) for p in paths]
    if model is not None:
        mod = read_input(model, partial)
        if mod.result is None:
            raise SchemaError(f"{model}: not a modeled result")
        joined = []
        for r in runs:
            if r.result is None:
                raise SchemaError(f"{r.path}: no pairs to compare with the model")
            a, b = r.fabric_name, mod.fabric_name
            if a and b and a != b:
                raise SchemaError(f"the measurement is of fabric {a!r} but the model of fabric {b!r}")
        attach_fabric([mod], fabric)
        for r in runs:
            attach_fabric([r], fabric or mod.fabric)
            c = join(r.result, mod.result)
            joined.append(Run(f"{r.label} vs {mod.label}", c, bench=r.bench, fabric=mod.fabric or r.fabric,
                              path=f"{r.path} against {model}"))
        runs = joined
    else:
        attach_fabric(runs, fabric)
    same_fabric(runs)
    return runs


def report_sections(runs: Sequence[Run], progress: Callable[[str], None] | None = None) -> list[Section]:
    return build_sections(runs, progress)


def default_title(runs: Sequence[Run]) -> str:
    if len(runs) == 1:
        r = runs[0].result
        m = r.meta if r is not None else {}
        what = " ".join(str(x) for x in (m.get("fabric"), m.get("pattern") or m.get("test")) if x)
        return f"fabscope report: {runs[0].label}" + (f" ({what})" if what else "")
    return f"fabscope report: {len(runs)} runs"


def write_report(runs: Sequence[Run], path: str | os.PathLike[str], title: str | None = None,
                 sections: Sequence[Section] | None = None,
                 progress: Callable[[str], None] | None = None) -> int:
    """Draw and write the page; returns its size in bytes."""
    secs = list(sections) if sections is not None else report_sections(runs, progress)
    if progress:
        progress("writing the page")
    # the files by name: a folder of the machine that wrote the page says nothing to its reader
    names = [" against ".join(os.path.basename(p) for p in r.path.split(" against ")) if r.path else r.label
             for r in runs]
    return html.write(path, secs, names, title or default_title(runs))
