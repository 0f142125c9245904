"""What the report's pictures show, read from the pixels of a headless Chromium screenshot:
tick labels on the leaf heatmaps, near-set outlines visible on sparse matrices, colours that mean what the
legend says, wide tables that scroll, and a ping-pong sweep drawn as curves (no box plot of "pairs")."""

from __future__ import annotations

import io

import numpy as np
import pytest

from fabscope.report.build import write_report
from fabscope.report.inputs import Run

from report_pixels import pixels


def _shot(path):
    from PIL import Image

    from fabscope.report.browser import open_report

    page = open_report(path)
    assert page.errors == [] and page.drawn == page.pictures
    img = np.asarray(Image.open(io.BytesIO(page.screenshot)).convert("RGB")).astype(int)
    return page, img


def _viridis(px: np.ndarray) -> np.ndarray:
    """Pixels of the heatmaps' colour scale (saturated, not the orange outline, not grey text)."""
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    sat = px.max(axis=2) - px.min(axis=2) > 60
    orange = (r > 200) & (g > 90) & (g < 170) & (b < 80)
    return sat & ~orange


@pytest.fixture(scope="module")
def sparse_leaf_report(tmp_path_factory, chromium_ok):
    """Itasca's 1,024 random pairs at 1 rank per node: a sparse leaf matrix (most leaf pairs have no pair)."""
    from fabscope.fabric.generators import itasca
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.traffic import patterns as pt

    f = itasca()
    p = Placement.block(f, 1024, 1)
    r = simulate(f, p, pt.random_pairs(1024, 2**20, seed=7), seed=7)
    out = tmp_path_factory.mktemp("leaf") / "sparse.html"
    write_report([Run("random pairs", r, fabric=f)], out)
    page, img = _shot(out)
    box = next(b for b in page.boxes if b["name"] == "leaf-matrix")
    return pixels_of(img, box)


def pixels_of(img: np.ndarray, box: dict) -> np.ndarray:
    x, y, w, h = (int(round(box[k])) for k in ("x", "y", "width", "height"))
    return img[y:y + h, x:x + w]


def test_leaf_heatmaps_have_tick_labels(sparse_leaf_report):
    px = sparse_leaf_report
    heat = _viridis(px)
    cols = np.flatnonzero(heat.sum(axis=0) > 5)
    rows = np.flatnonzero(heat.sum(axis=1) > 5)
    x0, y0, y1 = cols[0], rows[0], rows[-1]
    # left of the first matrix, clear of the axis and its tick marks: the leaves' names, dark text
    band = px[y0:y1, max(0, x0 - 42):x0 - 8]
    text = (band.max(axis=2) < 140).sum()
    assert text > 300, f"no tick labels left of the leaf matrix ({text} dark pixels)"
    # and under it, the destination leaves' names (rotated)
    under = px[y1 + 8:y1 + 40, x0:x0 + 300]
    assert (under.max(axis=2) < 140).sum() > 300


def test_near_set_outlines_are_visible_on_a_sparse_matrix(sparse_leaf_report):
    px = sparse_leaf_report
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    orange = (r > 200) & (g > 90) & (g < 170) & (b < 80)
    assert orange.sum() > 1000, f"near-set outlines not drawn in a visible colour ({orange.sum()} px)"
    # the outline is seen where it crosses empty (white) cells too: dark and orange next to white
    white = px.min(axis=2) > 245
    edge = orange & (np.roll(white, 3, axis=0) | np.roll(white, -3, axis=0) | np.roll(white, 3, axis=1))
    assert edge.sum() > 100


def test_loaded_links_are_coloured_by_link_level_not_by_class(tmp_path, chromium_ok):
    from fabscope.fabric.generators import itasca
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.report import figures as fg, picture
    from fabscope.traffic import patterns as pt

    f = itasca()
    p = Placement.block(f, 256, 8)
    r = simulate(f, p, pt.random_pairs(256, 2**20, seed=7), seed=7)
    pic = fg.hot_links(r, f)
    left = [t for t in pic.fig.data if t.xaxis in (None, "x")]
    right = [t for t in pic.fig.data if t.xaxis == "x2"]
    assert {t.name for t in left} >= {"link: host - leaf", "link: leaf - level 2"}
    class_colours = {picture.color(i) for i in range(len(r.class_labels))}
    assert not {t.marker.color for t in left} & class_colours        # a level never wears a class's colour
    for t in right:                                                    # a class wears its own colour
        label = t.name.removeprefix("class: ")
        assert t.marker.color == picture.color(r.class_labels.index(label))
    # in the picture: no bar of the left panel is drawn in the class colours
    out = tmp_path / "links.html"
    write_report([Run("random pairs", r, fabric=f)], out)
    page, img = _shot(out)
    box = next(b for b in page.boxes if b["name"] == "links")
    px = pixels_of(img, box)
    half = px[:, : px.shape[1] // 2]
    blue = (abs(half - np.array([0x1f, 0x77, 0xb4])).sum(axis=2) < 30).sum()
    assert blue < 50, f"{blue} pixels of the left panel in Same Leaf's blue"


def test_wide_tables_scroll_instead_of_widening_the_page(tmp_path, tree, chromium_ok):
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.traffic import patterns as pt

    p = Placement.block(tree, 16, ppn=1)
    runs = [Run(f"random pairs of seed {s}, a long label as the demo writes them, run {s}",
                simulate(tree, p, pt.random_pairs(16, 2**20, seed=s)), fabric=tree) for s in range(6)]
    out = tmp_path / "wide.html"
    write_report(runs, out)
    page, img = _shot(out)
    assert img.shape[1] <= 1600, f"the page is {img.shape[1]} px wide: a table was cut instead of scrolled"


@pytest.mark.mpi
def test_a_pingpong_sweep_is_drawn_as_curves_not_as_a_box_of_pairs(tmp_path, capsys, chromium_ok):
    from fabscope.cli import main
    from fabscope.errors import MeasureError
    from fabscope.measure.mpi import find_mpi
    from report_pixels import coloured

    try:
        find_mpi()
    except MeasureError as err:
        pytest.skip(f"no MPI: {err}")
    jl, out = tmp_path / "pp.jsonl", tmp_path / "pp.html"
    assert main(["measure", "--np", "2", "--timeout", "60", "--out", str(jl), "pingpong", "--max-size", "65536",
                 "--iterations", "10"]) == 0
    capsys.readouterr()
    assert main(["report", str(jl), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "by class" not in text and " pairs" not in text
    page, img = _shot(out)
    names = [b["name"] for b in page.boxes]
    assert names == ["size-curves"], names                   # no box plot of sizes, no rank matrix
    curves = pixels(page.screenshot, page.boxes[0])
    assert coloured(curves) > 800
    html = out.read_text()
    assert "message sizes</dt><dd>18" in html.replace("\n", "") or "message sizes" in html


def test_a_one_pair_matrix_gets_a_colour_bar_from_zero(tree):
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.report import heatmaps
    from fabscope.traffic import patterns as pt

    r = simulate(tree, Placement.block(tree, 2, ppn=1), pt.random_pairs(2, 2**20, seed=0))
    pic = heatmaps.rank_heatmap(r)
    bw = float(np.nanmax(r.pairs["bandwidth"])) / 1e6
    z = pic.fig.data[0]
    assert z.zmin == 0 and z.zmax == pytest.approx(bw, rel=1e-6)      # not a bar under 1 MB/s wide
