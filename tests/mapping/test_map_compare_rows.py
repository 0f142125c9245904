"""``fabscope map --compare``: one row per algorithm asked for, each saying whose row it is."""

from __future__ import annotations

import io
import json

from fabscope.cli import main


def test_compare_with_topo_lists_each_algorithm_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))          # no host list on standard input
    out = tmp_path / "m.json"
    assert main(["map", "--fabric", "torus:4x4x4,cores=1", "--comm", "stencil3d:4x4x4",
                 "--compare", "block,fold,topo", "--json", str(out)]) == 0
    table = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()[2:] if ln and not ln.startswith("#")]
    names = [r["algorithm"] for r in json.loads(out.read_text())["rows"]]
    assert names == ["block", "fold", "topo: fold"]
    assert table == ["block", "fold", "topo:"]


def test_chosen_algorithm_not_in_compare_is_the_last_row(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    out = tmp_path / "m.json"
    assert main(["map", "--fabric", "torus:4x4x4,cores=1", "--comm", "stencil3d:4x4x4", "--algorithm", "block",
                 "--compare", "random", "--json", str(out)]) == 0
    assert [r["algorithm"] for r in json.loads(out.read_text())["rows"]] == ["random", "block"]
