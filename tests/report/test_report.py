"""The HTML report: rendered for real in headless Chromium, offline; tables; bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.report import compare as cmp
from fabscope.report.build import read_inputs, write_report
from fabscope.report.inputs import Run
from fabscope.report.sections import build_sections
from fabscope.result import Result

from report_pixels import coloured, inked, pixels


def _diagnosed(tree, base: Result) -> Result:
    """A diagnose result with the keys Diagnosis.to_result writes (suspects, explained), made through Result."""
    hot = base.extra["hot_links"]
    sus = [{"link": h["link"], "host": None, "name": h["name"], "capacity": 0.4 * tree.link_capacity[h["link"]],
            "nominal": float(tree.link_capacity[h["link"]]), "confidence": c,
            "pairs": [["h0000", "h0005"], ["h0001", "h0009"]]} for h, c in zip(hot[:3], (0.9, 0.6, 0.3))]
    crit = [{"cable": h["name"], "links": [h["link"]], "lost": 1e8 * (5 - i), "losing_pairs": 5 - i}
            for i, h in enumerate(hot[:5])]
    return Result(meta={**base.meta, "kind": "diagnose"}, class_labels=base.class_labels, pairs=base.pairs,
                  links=base.links, extra={**base.extra, "suspects": sus, "criticality": crit,
                                           "explained": {"pairs": 12, "of": base.n_pairs}})


def test_report_renders_offline_in_chromium(tmp_path, tree, leaf_run, sweep_run, chromium_ok):
    from fabscope.model.simulate import simulate
    from fabscope.fabric.placement import Placement
    from fabscope.report.browser import open_report
    from fabscope.traffic import patterns as pt

    p = Placement.block(tree, 16, ppn=1)
    ecmp = simulate(tree, p, pt.all_to_all(16, 2**20), "ecmp-random", seed=3)    # stands for a measurement
    dmodk = simulate(tree, p, pt.all_to_all(16, 2**20), "dmodk")
    runs = [Run("leaf pairs", leaf_run, fabric=tree), Run("sweep", sweep_run, fabric=tree),
            Run("ECMP vs D-mod-K", cmp.join(ecmp, dmodk), fabric=tree),
            Run("diagnosed", _diagnosed(tree, leaf_run), fabric=tree)]
    out = tmp_path / "r.html"
    size = write_report(runs, out)
    assert size == out.stat().st_size and size < 10e6
    page = open_report(out)
    (tmp_path / "page.png").write_bytes(page.screenshot)
    assert page.errors == []
    assert page.requests == [] and page.failed == []
    assert page.pictures >= 10 and page.drawn == page.pictures
    names = [b["name"] for b in page.boxes]
    for want in ("leaf-matrix", "rank-matrix", "size-curves", "measured-vs-modeled", "suspects", "criticality",
                 "links", "fabric", "runs"):
        assert want in names, names
    box = {b["name"]: b for b in page.boxes}
    heat = pixels(page.screenshot, box["leaf-matrix"])
    assert inked(heat) > 0.25                       # the three matrices are filled, not blank
    curves = pixels(page.screenshot, box["size-curves"])
    assert coloured(curves) > 800                    # the sweep's lines and markers are drawn
    scatter = pixels(page.screenshot, box["measured-vs-modeled"])
    assert coloured(scatter) > 200


def test_the_checks_see_errors_and_requests(tmp_path, chromium_ok):
    """The browser checks can fail: a page that throws and loads from the network is caught."""
    from fabscope.report.browser import open_report

    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><figure class="picture" data-name="x"></figure>'
                   '<img src="http://fabscope.invalid/x.png"><script>throw new Error("boom")</script>'
                   '</body></html>')
    page = open_report(bad, timeout=3)
    assert any("boom" in e for e in page.errors)
    assert page.requests == ["http://fabscope.invalid/x.png"]
    assert page.drawn == 0


def test_leaf_matrix_orders_near_sets_as_blocks(itasca_fabric, tmp_path):
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.report import heatmaps
    from fabscope.traffic import patterns as pt

    f = itasca_fabric
    p = Placement.block(f, f.n_hosts, 1)
    r = simulate(f, p, pt.leaf_pairs(f, p, 2**20))
    pic = heatmaps.leaf_heatmaps(r, f)
    labels = list(pic.fig.data[0].x)
    # a label is the leaf switch and its hosts: 'leaf01 (node0001..node0016)'
    near = [int(f.groups["near"][f.host_index[lab.split("(")[1].split("..")[0]]]) for lab in labels]
    assert labels[0].startswith("leaf01 (node0001..")
    assert near == sorted(near) and len(labels) == 67
    rects = [s for s in pic.fig.layout.shapes if s.xref in ("x", None)]
    outlines = {(s.x0, s.x1, s.y0, s.y1) for s in rects}                   # drawn twice: dark under light
    assert len(outlines) == len(set(near)) - (np.bincount(near) < 2).sum()   # one outline per near set
    # near-set blocks are at least as fast as the far pairs of the same leaves
    z = np.asarray(pic.fig.data[2].z, float)                                # the Min matrix
    same = np.equal.outer(near, near)
    off = ~np.eye(len(near), dtype=bool)
    assert np.nanmean(z[same & off]) > np.nanmean(z[~same])
    out = tmp_path / "itasca.html"
    runs = [Run("itasca leaf pairs", r, fabric=f)]
    assert write_report(runs, out) < 5e6


def test_history_names_the_pairs_that_changed(tree, tmp_path):
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.traffic import patterns as pt

    p = Placement.block(tree, 16, ppn=1)
    leaf_run = simulate(tree, p, pt.all_to_all(16, 2**20), "dmodk")      # yesterday: D-mod-K
    other = simulate(tree, p, pt.all_to_all(16, 2**20), "ecmp-random", seed=3)   # today: random ECMP
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    leaf_run.write_json(a)
    other.write_json(b)
    secs = build_sections(read_inputs([str(a), str(b)]))
    hist = secs[-1]
    assert hist.title == "Runs side by side"
    pairs = next(t for t in hist.tables if t.title.startswith("Pairs that changed most"))
    top = pairs.rows[0]
    i = next(k for k in range(leaf_run.n_pairs) if (str(leaf_run.pairs["src"][k]), str(leaf_run.pairs["dst"][k]))
             == (top[0], top[1]))
    want = other.pairs["bandwidth"][i] / leaf_run.pairs["bandwidth"][i]
    assert float(top[-1]) == pytest.approx(want, rel=1e-3)
    ratios = [abs(np.log(float(r[-1]))) for r in pairs.rows]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] > 0


def test_cli_compare_prints_side_by_side_and_writes(tree, leaf_run, tmp_path, capsys):
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.traffic import patterns as pt

    p = Placement.block(tree, 16, ppn=1)
    meas = simulate(tree, p, pt.leaf_pairs(tree, p, 2**20, nodes_per_leaf=4), model="congestion")
    meas.meta["kind"] = "measure"
    m, mod = tmp_path / "m.json", tmp_path / "mod.json"
    meas.write_json(m)
    leaf_run.write_json(mod)
    out = tmp_path / "cmp.html"
    assert main(["report", str(m), "--model", str(mod), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Measured beside modeled" in text and "measured/modeled" in text and "Pairs furthest" in text
    html = out.read_text()
    assert "Measured against modeled" in html and "<script" in html and "cdn" not in html.lower().split("<script")[0]
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def _bad_inputs(tmp_path, leaf_run, itasca_fabric):
    good = tmp_path / "good.json"
    leaf_run.write_json(good)
    doc = json.loads(good.read_text())
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps({**doc, "version": 2}))
    cut = tmp_path / "cut.json"
    cut.write_text(good.read_text()[: len(good.read_text()) // 2])
    bench = tmp_path / "cut.jsonl"
    bench.write_text("\n".join(json.dumps(x) for x in [
        {"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2},
        {"type": "ranks", "host": ["a", "b"], "core": [0, 0], "socket": [0, 0]},
        {"type": "test", "test": "random-pairs"},
        {"type": "pair", "test": "random-pairs", "src": 0, "dst": 1, "bytes": 8, "iters": 1, "time": 1e-6,
         "bandwidth": 1.6e7, "scenario": 0}]) + '\n{"type": "pa')
    from fabscope.fabric.placement import Placement
    from fabscope.model.simulate import simulate
    from fabscope.traffic import patterns as pt

    p = Placement.block(itasca_fabric, 32, 1)
    ita = tmp_path / "itasca.json"
    simulate(itasca_fabric, p, pt.random_pairs(32, 2**20)).write_json(ita)
    return [([str(v2)], "result schema version 2, this fabscope reads version 1"),
            ([str(cut)], "not valid JSON (truncated?)"),
            ([str(bench)], "last line cut; give --partial"),
            ([str(good), "--model", str(ita)], "the measurement is of fabric 'fat-tree(k=4,levels=2,up=2)' but the model of fabric 'itasca'"),
            ([str(good), str(ita)], "of fabric 'fat-tree(k=4,levels=2,up=2)' but itasca.json of fabric 'itasca'")]


def test_bad_input_one_line_no_report(tmp_path, leaf_run, itasca_fabric, capsys):
    cases = _bad_inputs(tmp_path, leaf_run, itasca_fabric)
    before = sorted(os.listdir(tmp_path))
    for argv, words in cases:
        out = tmp_path / "r.html"
        rc = main(["report", *argv, "-o", str(out)])
        err = capsys.readouterr().err
        assert rc == 1, argv
        assert err.count("\n") == 1 and err.startswith("fabscope: error: ") and words in err, err
        assert sorted(os.listdir(tmp_path)) == before        # no report, no temporary file
    # the truncated bench file is reported as far as it is whole when asked
    assert main(["report", str(tmp_path / "cut.jsonl"), "--partial", "-o", str(tmp_path / "p.html"), "--quiet"]) == 0


def test_simulate_report_flag(tmp_path, capsys):
    out = tmp_path / "ft.html"
    assert main(["simulate", "--fabric", "fat-tree:k=8,levels=2", "--pattern", "leaf-pairs", "--ppn", "1",
                 "--report", str(out)]) == 0
    assert "report: " in capsys.readouterr().out
    html = out.read_text()
    assert "Leaf by leaf" in html and "The fabric, cables coloured by load" in html
    assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2", "--report", str(tmp_path / "no" / "x.html")]) == 1
    assert "no folder" in capsys.readouterr().err


def test_mapping_metrics_are_drawn(tmp_path, capsys):
    js, hosts = tmp_path / "map.json", tmp_path / "hosts"
    hosts.write_text("".join(f"h{i:04d}\n" for i in range(16)))
    assert main(["map", "--fabric", "fat-tree:k=4,levels=2", "--nodes", str(hosts), "--ppn", "1", "--comm", "ring:16",
                 "--compare", "block,random", "--json", str(js)]) == 0
    capsys.readouterr()
    runs = read_inputs([str(js)])
    sec = build_sections(runs)[0]
    assert [p.name for p in sec.pictures] == ["mapping"]
    algs = list(sec.pictures[0].fig.data[0].x)
    assert "block" in algs and "random" in algs


@pytest.mark.slow
def test_static_export_png_and_svg(tmp_path, leaf_run, tree, chromium_ok):
    from fabscope.report import figures as fg
    from fabscope.report import heatmaps
    from fabscope.report.export import export_images

    pics = [heatmaps.leaf_heatmaps(leaf_run, tree), fg.class_boxes(leaf_run)]
    paths = export_images(pics, str(tmp_path / "img"))
    assert sorted(os.path.basename(p) for p in paths) == ["classes.png", "classes.svg", "leaf-matrix.png",
                                                          "leaf-matrix.svg"]
    png = (tmp_path / "img" / "leaf-matrix.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert "<svg" in (tmp_path / "img" / "leaf-matrix.svg").read_text()[:500]
    assert not [f for f in os.listdir(tmp_path / "img") if ".part" in f]


@pytest.mark.mpi
def test_measured_run_reported_with_curves_and_fit(tmp_path, capsys):
    from fabscope.errors import MeasureError
    from fabscope.measure.mpi import find_mpi

    try:
        find_mpi()
    except MeasureError as err:
        pytest.skip(f"no MPI: {err}")
    jl, out = tmp_path / "pp.jsonl", tmp_path / "pp.html"
    assert main(["measure", "--np", "2", "--timeout", "60", "--out", str(jl), "pingpong,random-pairs",
                 "--max-size", "65536", "--iterations", "20"]) == 0
    capsys.readouterr()
    assert main(["report", str(jl), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Fitted latency model" in text and "kinks (protocol switch points)" in text
    html = out.read_text()
    assert 'data-name="size-curves"' in html and 'data-name="classes"' in html
