"""The CLI in-process: tables, files, and one clear line on bad input."""

import json
import re

import pytest

from fabscope.cli import main


def test_simulate_prints_seed_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "run.json"
    rc = main(["simulate", "--fabric", "itasca", "--pattern", "random-pairs", "--ranks", "1024", "--ppn", "1",
               "--size", "1MiB", "--seed", "7", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "Same Leaf" in text and "Far Leafs" in text and "3077.87" in text   # seed's figure beside
    doc = json.loads(out.read_text())
    assert doc["meta"]["ranks"] == 1024 and doc["meta"]["pattern"] == "random-pairs"
    assert len(doc["pairs"]["bandwidth"]) == 512


@pytest.mark.parametrize("argv", [
    ["simulate", "--fabric", "fat-tree:k=4,levels=3", "--pattern", "shift:k=5", "--ppn", "1"],
    ["simulate", "--fabric", "torus:4x4x4", "--pattern", "partner-hops:2", "--ppn", "1"],
    ["simulate", "--fabric", "dragonfly:a=4,p=2,h=2,g=9", "--pattern", "bisection:samples=3", "--ppn", "1"],
    ["simulate", "--fabric", "itasca", "--pattern", "leaf-offset", "--offset", "4", "--ppn", "1"],
])
def test_other_fabrics_and_patterns(argv, capsys):
    assert main(argv) == 0
    assert "Overall" in capsys.readouterr().out


@pytest.mark.parametrize("argv,words", [
    (["simulate", "--fabric", "nosuch"], "unknown fabric 'nosuch'"),
    (["simulate", "--fabric", "torus:8xQ"], "is not a list like 8x8x16"),
    (["simulate", "--ranks", "99999", "--ppn", "8"], "99999 ranks at 8 per node need 12500 hosts"),
    (["simulate", "--ppn", "9"], "9 ranks per node, but hosts of 'itasca' have 8 cores"),
    (["simulate", "--fabric", "torus:4x4", "--pattern", "leaf-pairs"], "needs a fabric with leaf switches"),
    (["simulate", "--fabric", "fat-tree:k=4,levels=2", "--pattern", "leaf-pairs", "--ppn", "1"],
     "the second fullest leaf has 4: try leaf-pairs:nodes_per_leaf=4"),
    (["simulate", "--size", "12parsecs"], "size '12parsecs' does not parse"),
])
def test_bad_input_one_line_nonzero_no_file(argv, words, tmp_path, capsys):
    out = tmp_path / "never.json"
    assert main(argv + ["-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert words in err and err.count("\n") == 0
    assert not out.exists() and not list(tmp_path.iterdir())


def test_bad_fabric_file(tmp_path, capsys):
    f = tmp_path / "fabric.json"
    f.write_text(json.dumps({"schema": "fabscope.fabric", "version": 7}))
    assert main(["simulate", "--fabric", str(f)]) == 1
    assert "fabric schema version 7, this fabscope reads version 1" in capsys.readouterr().err


def test_demo_model_part(capsys):
    assert main(["demo", "--no-measure"]) == 0
    text = capsys.readouterr().out
    assert "3426.51" in text and "leaf-to-leaf offset" in text
    assert "max-min in time" in text and "congestion in time" in text and "Diff Leafs" in text
    # the closing claim holds for the table one screen up: each row's last figure is counted sharing's
    rows = [re.findall(r"\(([+-]\d+)%\)", ln) for ln in text.splitlines() if " ppn " in ln]
    worst = max(abs(int(r[-1])) for r in rows if len(r) == 3)
    claim = int(re.search(r"counted sharing in time comes within (\d+)%", " ".join(text.split())).group(1))
    assert claim >= worst
