"""Dynamic results carry link loads (time-averaged, per directed link), and the report draws them."""

from __future__ import annotations

import numpy as np

from fabscope.cli import main
from fabscope.dynamic.programs import pingpong
from fabscope.dynamic.results import pingpong_result
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree
from fabscope.fabric.io import load_fabric
from fabscope.report import figures as fg
from fabscope.result import Result


def test_loads_by_hand_on_a_two_level_tree():
    """One pair across the tree: each of its links carries (warm-up + iterations) x bytes each way,
    over the makespan; links it does not cross carry nothing."""
    f = fat_tree(k=4, levels=2)
    run = run_program_on(f, Placement.block(f, 16, ppn=1), pingpong([0], [15], 1e6, 4, 1), "dmodk")
    r = pingpong_result(f, run)
    lk = np.asarray(r.links["link"])
    assert len(lk) == 8                                   # 4 links up and 4 back: host-leaf-spine-leaf-host
    np.testing.assert_allclose(r.links["bytes"], 5 * 1e6)
    span = run.outcome.makespan
    np.testing.assert_allclose(r.links["load"], 5e6 / span)
    np.testing.assert_allclose(r.links["utilisation"], r.links["load"] / f.link_capacity[lk])
    # a ping-pong uses each direction about half the time
    assert np.all((r.links["utilisation"] > 0.45) & (r.links["utilisation"] < 0.5))
    assert r.extra["hot_links"][0]["name"] == f.link_name(int(r.extra["hot_links"][0]["link"]))


def test_dynamic_result_written_read_and_drawn_with_busy_cables(tmp_path, capsys):
    out, html = tmp_path / "d.json", tmp_path / "d.html"
    assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2", "--ranks", "16", "--ppn", "1",
                 "--pattern", "random-pairs:rounds=2", "--seed", "3", "--dynamic", "--iterations", "3",
                 "-o", str(out), "--report", str(html)]) == 0
    capsys.readouterr()
    r = Result.read_json(out)
    assert r.meta["kind"] == "dynamic" and r.links is not None
    assert len(r.links["link"]) > 0 and np.all(np.asarray(r.links["utilisation"]) > 0)
    assert np.all(np.asarray(r.links["utilisation"]) <= 1 + 1e-9)
    f = load_fabric("fat-tree:k=4,levels=2")
    pic = fg.fabric_drawing(f, r)
    names = [t.name for t in pic.fig.data]
    assert any(n.startswith("cable load") and n != "cable load idle" for n in names), names
    assert fg.hot_links(r) is not None
    text = html.read_text()
    assert "cable load &lt; 50 %" in text or "cable load < 50 %" in text or "cable load \\u003c 50 %" in text
