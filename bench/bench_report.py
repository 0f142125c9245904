"""Size and speed of the HTML report (size and time targets), with Plotly's own export as the peer.

    python bench/bench_report.py            # both cases (a minute or two on 2 idle cores)
    python bench/bench_report.py --part matrix|itasca

matrix: a 1,024 x 1,024 pair matrix (every ordered pair of 1,024 ranks, one shift per
        round as fabscope-bench's all-pairs test runs them) on a 1,024-host fat tree,
        modeled; target: renders in a browser in < 3 s, file < 10 MB.
itasca: the 1,072-node Itasca leaf-pairs model (seed 000); target: file < 5 MB.

"render" is headless Chromium's time from navigation to every picture drawn
(fabscope.report.browser), so it includes parsing Plotly's 4.8 MB of JavaScript.
The peer is the same heatmap written by Plotly alone (plotly.express.imshow(...).write_html,
float64 data, its default template), timed and sized the same way.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from fabscope.fabric.generators import fat_tree, itasca
from fabscope.fabric.placement import Placement
from fabscope.model.simulate import simulate
from fabscope.report.browser import open_report
from fabscope.report.build import write_report
from fabscope.report.inputs import Run
from fabscope.report.sections import build_sections
from fabscope.traffic import patterns as pt
from fabscope.traffic.flows import Traffic


def all_pairs(n: int, size: float) -> Traffic:
    """Every ordered pair once: round k pairs i with i + k (mod n), rounds never share a link."""
    k = np.repeat(np.arange(1, n), n)
    src = np.tile(np.arange(n), n - 1)
    dst = (src + k) % n
    m = len(src)
    return Traffic("all-pairs", src, dst, np.full(m, float(size)), np.arange(m), k - 1)


def measure(name: str, runs: list[Run], folder: str) -> None:
    t0 = time.perf_counter()
    secs = build_sections(runs)
    path = os.path.join(folder, f"{name}.html")
    size = write_report(runs, path, sections=secs)
    build = time.perf_counter() - t0
    from fabscope.report.html import picture_html

    parts = ", ".join(f"{p.name} {len(picture_html(p, 'x')) / 1e6:.2f}" for s in secs for p in s.pictures)
    print(f"{name:<8} pictures [MB]: {parts}")
    page = open_report(path, screenshot=False, timeout=120)
    ok = "ok" if not page.errors and not page.requests and page.drawn == page.pictures else "PROBLEM"
    print(f"{name:<8} fabscope report: {size / 1e6:6.2f} MB, built in {build:5.2f} s, rendered in "
          f"{page.render_seconds:5.2f} s ({page.drawn}/{page.pictures} pictures, {len(page.errors)} JS errors, "
          f"{len(page.requests)} requests: {ok})")
    pics = sorted((p for s in secs for p in s.pictures if p.name in ("rank-matrix", "leaf-matrix")),
                  key=lambda p: p.name != "rank-matrix")
    if pics:
        import plotly.express as px

        z = np.asarray(pics[0].fig.data[0].z, float)
        peer = os.path.join(folder, f"{name}-plotly.html")
        t0 = time.perf_counter()
        px.imshow(z).write_html(peer, include_plotlyjs=True)
        build = time.perf_counter() - t0
        # the peer page has no <figure class="picture">: count its plot as the one picture
        with open(peer) as fh:
            text = fh.read().replace('<div id="', '<figure class="picture" data-name="peer"></figure><div id="', 1)
        with open(peer, "w") as fh:
            fh.write(text)
        pp = open_report(peer, screenshot=False, timeout=120)
        print(f"{'':<8} peer, Plotly alone ({z.shape[0]}x{z.shape[1]} heatmap only): {os.path.getsize(peer) / 1e6:6.2f} MB, "
              f"written in {build:5.2f} s, rendered in {pp.render_seconds:5.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("matrix", "itasca"))
    args = ap.parse_args()
    print(f"machine load (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as folder:
        if args.part in (None, "matrix"):
            f = fat_tree(k=32, levels=2)
            p = Placement.block(f, 1024, ppn=1)
            t0 = time.perf_counter()
            r = simulate(f, p, all_pairs(1024, 2**20))
            print(f"matrix   model of {r.n_pairs:,} pairs on {f.name}: {time.perf_counter() - t0:.1f} s")
            measure("matrix", [Run("all pairs, 1024 ranks", r, fabric=f)], folder)
        if args.part in (None, "itasca"):
            f = itasca()
            p = Placement.block(f, f.n_hosts, 1)
            r = simulate(f, p, pt.leaf_pairs(f, p, 2**20))
            measure("itasca", [Run("itasca leaf pairs", r, fabric=f)], folder)


if __name__ == "__main__":
    main()
