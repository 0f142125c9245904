"""Regenerate the report pictures shown in README.md and docs/report.md (docs/img/*.png).

    .venv/bin/python docs/make_images.py            # model pictures, and a measured run where MPI is found
    .venv/bin/python docs/make_images.py --no-measure

Itasca (seed 000) from the model: leaf pairs, random pairs at 1 and 8 ranks per
node; and a measured run on this host (fabscope measure --np 4: pingpong, bw,
all-pairs).  Each picture is exported with kaleido from the same figure the HTML
report draws; the HTML reports themselves are written to out/docs-*.html.

Screenshots of whole reports as headless Chromium shows them (the top of the
page, 1600 px wide): the demo's report (``fabscope demo --no-measure``), a
diagnosis (``report-diagnose.png``: the flow model's pairs of the diagnose plan
on fat-tree:k=4,levels=2 with a cable at 40 % and host h0009's cable at 50 %,
3 % noise, diagnosed as ``fabscope diagnose`` does; tests/diagnose makes the same
input), and a measured ping-pong sweep (``fabscope measure --np 2 pingpong``).
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


def screenshot(html: str, name: str, height: int = 2400) -> None:
    """The top of a report as headless Chromium draws it, into docs/img/NAME."""
    import io

    from PIL import Image

    from fabscope.report.browser import open_report

    page = open_report(html)
    if page.errors or page.drawn != page.pictures:
        print(f"{html}: {page.drawn} of {page.pictures} pictures drawn, errors {page.errors}", file=sys.stderr)
    img = Image.open(io.BytesIO(page.screenshot))
    img.crop((0, 0, img.width, min(height, img.height))).save(os.path.join(IMG, name), optimize=True)
    print("wrote", os.path.relpath(os.path.join(IMG, name)), f"({img.width} x {min(height, img.height)} of "
          f"{img.height} px)")


def screenshots(measure: bool) -> None:
    import numpy as np

    from fabscope.cli import main
    from fabscope.diagnose.plan import make_plan
    from fabscope.diagnose.synthetic import synthetic
    from fabscope.diagnose.tomography import diagnose
    from fabscope.fabric.io import load_fabric

    here = os.getcwd()
    os.chdir(os.path.dirname(OUT))          # demo writes out/demo-report.html
    try:
        main(["demo", "--no-measure"])
    finally:
        os.chdir(here)
    screenshot(os.path.join(OUT, "demo-report.html"), "report-demo.png")
    f = load_fabric("fat-tree:k=4,levels=2")
    plan = make_plan(f)
    inner = int(np.flatnonzero((f.link_src[0::2] >= f.n_hosts) & (f.link_dst[0::2] >= f.n_hosts))[3])
    slow = int(np.flatnonzero(f.link_src == f.host_index["h0009"])[0]) // 2
    diag = diagnose(synthetic(f, *plan.pairs, {inner: 0.4, slow: 0.5}, noise=0.03, seed=1)).to_result()
    diag.write_json(os.path.join(OUT, "docs-diagnose.json"))
    html = os.path.join(OUT, "docs-diagnose.html")
    write_report(read_inputs([os.path.join(OUT, "docs-diagnose.json")], fabric=f), html)
    screenshot(html, "report-diagnose.png", 2200)
    if measure:
        jl = os.path.join(OUT, "docs-pingpong.jsonl")
        if main(["measure", "--np", "2", "--out", jl, "pingpong", "--iterations", "50"]) == 0:
            html = os.path.join(OUT, "docs-pingpong.html")
            write_report(read_inputs([jl]), html)
            screenshot(html, "report-pingpong.png", 1200)


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
    screenshots(not a.no_measure)
