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


def test_place_at_testbed_rates_reads_in_kb_s(capsys):
    """A 4 Mbit fabric (0.5 MB/s links): the table takes kB/s, not a column of 0 MB/s."""
    assert main(["place", "--fabric", "fat-tree:k=4,levels=2,capacity=5e5", "--nodes", "h[0000-0007]"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, ln in enumerate(lines) if "bandwidth per node" in ln)
    assert "[kB/s]" in lines[head]
    cells = [ln.split()[-2:] for ln in lines[head + 1:] if ln.strip() and not ln.startswith("warning")]
    assert cells and all(float(c) > 0 for row in cells for c in row), cells
