"""``fabscope place`` on the smallest jobs and fabrics: what it says instead of figures that mean nothing."""

from __future__ import annotations

import json

from fabscope.cli import main
from fabscope.fabric.generators import fat_tree
from fabscope.mapping.report import placement_report


def test_one_node_job_says_no_fabric_traffic_not_0_mb_s(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["place", "--fabric", "itasca", "--nodes", "node[0001-0001]", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "no fabric traffic" in text
    assert not any(ln.split()[:1] == ["Overall"] for ln in text.splitlines())
    assert json.loads(out.read_text())["overall_mb_s"] == [None, None]


def test_one_switch_tree_labels_its_pairs_same_switch():
    f = fat_tree(k=4, levels=1)
    assert f.class_labels == ("Same Node", "Same Switch")
    r = placement_report(f, range(4))
    assert list(r.bandwidth) == ["Same Switch"] and r.overall[0] > 0
