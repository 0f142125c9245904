"""``fabscope compare`` on application runs: measured beside predicted time per iteration, and the order."""

import json

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.diagnose.appcompare import app_compare_lines, compare_apps
from fabscope.fabric.generators import fat_tree

from .apprun_files import write_run

TREE = "fat-tree:k=4,levels=2,up=1"
HOSTS = [f"h{i:04d}" for i in range(16)]
GRID = {"dims": [4, 4], "periodic": [False, False], "compute": 0}
S = float(1 << 20)
#: rank -> host of 2x2 tiles a leaf (leaf = 4 consecutive hosts)
TILES = [HOSTS[h] for h in np.argsort([0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15])]
RANDOM = [HOSTS[i] for i in np.random.default_rng(0).permutation(16)]


def _runs(tmp_path, times=(0.46, 0.65, 0.25)):
    return [write_run(tmp_path / f"halo-{name}.jsonl", "halo2d", hosts, [t] * 6, size=S, warmup=1, params=GRID)
            for name, hosts, t in zip(("block", "random", "map"), (HOSTS, RANDOM, TILES), times)]


def test_table_by_hand_and_orders_agree(tmp_path, capsys):
    """Block (a grid row a leaf): the middle leaves send 8 halos over their one up-link, 8 S / C an
    iteration; tiles: 4 a leaf, 4 S / C.  Measured 0.46 / 0.65 / 0.25 s: the same order."""
    out = tmp_path / "c.json"
    rc = main(["compare", *_runs(tmp_path), "--fabric", TREE, "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    c = json.loads(out.read_text())
    cap = float(fat_tree(k=4, levels=2, up=1).link_capacity[0])
    row = {r["file"]: r for r in c["rows"]}
    for f, k in (("halo-block.jsonl", 8), ("halo-map.jsonl", 4)):     # plus a path's latency, a few us
        assert k * S / cap < row[f]["predicted"] < k * S / cap + 5e-6
    assert row["halo-random.jsonl"]["predicted"] > row["halo-block.jsonl"]["predicted"]
    assert row["halo-map.jsonl"]["ratio"] == pytest.approx(0.25 / row["halo-map.jsonl"]["predicted"], rel=1e-12)
    assert row["halo-map.jsonl"]["program"] == "kernel halo2d" and row["halo-map.jsonl"]["model_iterations"] == 6
    assert c["orders"] == [{"test": "halo2d", "measured": ["halo-map.jsonl", "halo-block.jsonl", "halo-random.jsonl"],
                            "predicted": ["halo-map.jsonl", "halo-block.jsonl", "halo-random.jsonl"], "agree": True,
                            "predicted_text": "halo-map.jsonl < halo-block.jsonl < halo-random.jsonl"}]
    assert "the orders agree" in text and "halo-block.jsonl" in text
    assert text.splitlines() == app_compare_lines(c)


def test_orders_that_disagree_are_said(tmp_path):
    c = compare_apps(_runs(tmp_path, times=(0.2, 0.65, 0.25)), fat_tree(k=4, levels=2, up=1))
    assert c["orders"][0]["agree"] is False
    assert any("DISAGREE" in ln for ln in app_compare_lines(c))


def test_a_predicted_tie_agrees_with_either_measured_order(tmp_path):
    a = write_run(tmp_path / "a.jsonl", "halo2d", HOSTS, [2e-3] * 2, params=GRID)
    b = write_run(tmp_path / "b.jsonl", "halo2d", HOSTS, [1e-3] * 2, params=GRID)     # the same hosts
    o = compare_apps([a, b], fat_tree(k=4, levels=2, up=1))["orders"][0]
    assert o["agree"] is True and o["predicted_text"] == "a.jsonl = b.jsonl"


def test_fft_transpose_and_minmax(tmp_path):
    run = write_run(tmp_path / "fft.jsonl", "fft-transpose", HOSTS, [3e-3, 1e-3, 2e-3], size=4096, warmup=0,
                    params={"dims": [4, 4]})
    c = compare_apps([run], fat_tree(k=4, levels=2, up=1))
    r = c["rows"][0]
    assert r["program"] == "kernel fft-transpose (pairwise)" and c["orders"] == []
    assert (r["measured_median"], r["measured_min"], r["measured_max"]) == (2e-3, 1e-3, 3e-3)


def test_untrusted_names_are_printed_plain(tmp_path, capsys):
    name = tmp_path / "evil\x1b[31m.jsonl"
    write_run(name, "halo2d", HOSTS, [1e-3] * 2, params=GRID)
    assert main(["compare", str(name), "--fabric", TREE]) == 0
    assert "\x1b" not in capsys.readouterr().out


@pytest.mark.parametrize("bad,msg", [
    (lambda p: write_run(p, "halo2d", HOSTS, [1e-3], app=False, traffic=False), "no application record"),
    (lambda p: write_run(p, "halo2d", HOSTS[:15] + ["nowhere"], [1e-3], params=GRID), "has no host 'nowhere'"),
    (lambda p: write_run(p, "halo2d", HOSTS[:15] + ["h0000"] * 1, [1e-3], params=GRID, sent=[[0, 99, 1]]),
     "is the pair (0, 99)"),
])
def test_bad_input_one_line_before_any_simulation(tmp_path, capsys, monkeypatch, bad, msg):
    """The bad run comes last: the good ones before it are not simulated either."""
    from fabscope.mapping import predict

    def never(*a, **k):
        raise AssertionError("simulated before every input was checked")

    monkeypatch.setattr(predict, "predict_iteration", never)
    files = [*_runs(tmp_path)[:2], bad(str(tmp_path / "bad.jsonl"))]
    out = tmp_path / "c.json"
    rc = main(["compare", *files, "--fabric", TREE, "--json", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and msg in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("extra,msg", [(["--model", "static"], "modeled in time only"),
                                       (["--csv", "x.csv"], "--csv is for pair runs"),
                                       (["--model-iterations", "0"], "--model-iterations must be at least 1")])
def test_pair_options_refused_for_applications(tmp_path, capsys, extra, msg):
    rc = main(["compare", *_runs(tmp_path)[:1], "--fabric", TREE, *extra])
    err = capsys.readouterr().err
    assert rc == 1 and msg in err and len(err.strip().splitlines()) == 1


def test_hosts_named_otherwise_go_through_a_host_map(tmp_path, capsys):
    """A testbed's or cluster's own host names, matched to the fabric's by --host-map lines."""
    run = write_run(tmp_path / "b.jsonl", "halo2d", [f"node{i:02d}.cluster" for i in range(16)], [1e-3] * 2,
                    params=GRID)
    hm = tmp_path / "hosts.map"
    hm.write_text("".join(f"node{i:02d} {h}\n" for i, h in enumerate(HOSTS)))
    out = tmp_path / "c.json"
    assert main(["compare", run, "--fabric", TREE, "--host-map", str(hm), "--json", str(out)]) == 0
    capsys.readouterr()
    same = write_run(tmp_path / "a.jsonl", "halo2d", HOSTS, [1e-3] * 2, params=GRID)
    want = compare_apps([same], fat_tree(k=4, levels=2, up=1))["rows"][0]["predicted"]
    assert json.loads(out.read_text())["rows"][0]["predicted"] == want
