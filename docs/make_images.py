"""Regenerate the report pictures shown in README.md and docs/report.md (docs/img/*.png).

    .venv/bin/python docs/make_images.py            # model pictures, and a measured run where MPI is found
    .venv/bin/python docs/make_images.py --no-measure

Itasca (seed 000) from the model: leaf pairs, random pairs at 1 and 8 ranks per
node; and a measured run on this host (fabscope measure --np 4: pingpong, bw,
all-pairs).  Each picture is exported with kaleido from the same figure the HTML
report draws; the HTML reports themselves are written to out/docs-*.html.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from fabscope.fabric.generators import itasca
from fabscope.fabric.placement import Placement
from fabscope.model.simulate import simulate
from fabscope.report.build import read_inputs, write_report
from fabscope.report.export import export_images
from fabscope.report.inputs import Run
from fabscope.report.sections import build_sections
from fabscope.traffic import patterns as pt
from fabscope.units import format_size

HERE = os.path.dirname(os.path.abspath(__file__))
IMG = os.path.join(HERE, "img")
OUT = os.path.join(os.path.dirname(HERE), "out")


def pictures(stem: str, runs: list[Run], keep: dict[str, str]) -> None:
    """Write the report of ``runs`` to out/, export the kept pictures to docs/img/ as PNG."""
    secs = build_sections(runs)
    write_report(runs, os.path.join(OUT, f"docs-{stem}.html"), sections=secs)
    pics = {p.name: p for s in secs for p in s.pictures}
    chosen = [pics[k] for k in keep if k in pics]
    with tempfile.TemporaryDirectory() as tmp:
        for path in export_images(chosen, tmp, formats=("png",)):
            name = keep[os.path.basename(path)[:-4]]
            shutil.move(path, os.path.join(IMG, name))
            print("wrote", os.path.relpath(os.path.join(IMG, name)))


def model() -> None:
    f = itasca()
    size = 2**20
    meta = {"size": size, "size_text": format_size(size)}
    p = Placement.block(f, f.n_hosts, 1)
    lp = simulate(f, p, pt.leaf_pairs(f, p, size), meta={**meta, "ppn": 1})
    pictures("itasca-leaf-pairs", [Run("Itasca leaf pairs (model)", lp, fabric=f)],
             {"leaf-matrix": "itasca-leaf-pairs.png", "links": "itasca-leaf-pairs-links.png"})
    for ranks, ppn in ((1024, 1), (256, 8)):
        p = Placement.block(f, ranks, ppn)
        r = simulate(f, p, pt.random_pairs(ranks, size, seed=7), seed=7, meta={**meta, "ppn": ppn})
        pictures(f"itasca-random-pairs-{ppn}ppn", [Run(f"Itasca random pairs, {ranks} ranks at {ppn} per node", r,
                                                      fabric=f)],
                 {"classes": f"itasca-random-pairs-{ppn}ppn.png"})


def measured() -> None:
    from fabscope.cli import main

    jl = os.path.join(OUT, "docs-measured.jsonl")
    rc = main(["measure", "--np", "4", "--out", jl, "pingpong,bw,all-pairs", "--max-size", "4194304",
               "--iterations", "50"])
    if rc:
        print("measure failed: no measured pictures", file=sys.stderr)
        return
    pictures("measured", read_inputs([jl]), {"size-curves": "measured-curves.png", "rank-matrix": "measured-ranks.png",
                                             "classes": "measured-classes.png"})


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-measure", action="store_true")
    a = ap.parse_args()
    os.makedirs(IMG, exist_ok=True)
    os.makedirs(OUT, exist_ok=True)
    model()
    if not a.no_measure:
        measured()
