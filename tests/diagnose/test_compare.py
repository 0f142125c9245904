"""compare: measured pairs of a real run beside the model of the same pairs, same rounds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.diagnose.compare import compare
from fabscope.diagnose.measured import DiagnoseError, load_measured
from fabscope.fabric.io import write_json
from fabscope.fabric.placement import Placement
from fabscope.measure.parse import read_run
from fabscope.model.simulate import simulate
from fabscope.result import Result
from fabscope.traffic.flows import Traffic

from .conftest import named_fabric


def _lines(path):
    return [json.loads(x) for x in open(path) if '"type":"pair"' in x.replace(" ", "")]


@pytest.mark.mpi
def test_real_run_compared_round_by_round(real_run, tmp_path, capsys):
    run = read_run(real_run)
    host = run.ranks["host"][0]
    fabric = named_fabric(host)
    fpath = tmp_path / "fabric.json"
    write_json(fabric, fpath)
    out = tmp_path / "cmp.json"
    assert main(["compare", str(real_run), "--fabric", str(fpath), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Same Node" in text and "pairs furthest from the model" in text
    res = Result.read_json(out)
    recs = _lines(real_run)
    assert res.meta["kind"] == "compare" and res.n_pairs == len(recs) == 6 + 2
    assert sorted(res.meta["tests"]) == ["leaf-offset", "random-pairs"]
    # 3 rounds of random pairs + 1 offset round: 4 concurrent sets
    assert res.meta["scenarios"] == 4
    np.testing.assert_allclose(res.pairs["measured"], [r["bandwidth"] for r in recs])
    np.testing.assert_allclose(res.pairs["ratio"], res.pairs["measured"] / res.pairs["modeled"])
    # every pair of a round modeled together with its round, as simulate() models that round alone
    place = Placement(np.zeros(4, np.int32), np.arange(4, dtype=np.int32))
    for key in set(zip(res.pairs["test"].tolist(), res.pairs["scenario"].tolist())):
        sel = (res.pairs["test"] == key[0]) & (res.pairs["scenario"] == key[1])
        t = Traffic.build("round", res.pairs["src"][sel], res.pairs["dst"][sel], res.pairs["bytes"][sel],
                          pingpong=True)
        alone = simulate(fabric, place, t, "minhop")
        model_bw = alone.pairs["bytes"] * 2 / alone.pairs["time"]
        np.testing.assert_allclose(np.sort(res.pairs["modeled"][sel]), np.sort(model_bw), rtol=1e-9)
    cls = res.extra["compare"]["classes"]
    assert [c["label"] for c in cls] == ["Same Node"] and cls[0]["pairs"] == 8
    assert cls[0]["measured_avg"] == pytest.approx(np.mean([r["bandwidth"] for r in recs]))


@pytest.mark.mpi
def test_host_map_and_unknown_hosts(real_run, tmp_path, capsys):
    host = read_run(real_run).ranks["host"][0]
    fabric = named_fabric("node07")
    fpath = tmp_path / "fabric.json"
    write_json(fabric, fpath)
    out = tmp_path / "cmp.json"
    assert main(["compare", str(real_run), "--fabric", str(fpath), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"has no host {host!r}" in err[0] and not out.exists()
    hm = tmp_path / "hosts.map"
    hm.write_text(f"# measured fabric\n{host} node07\n")
    assert main(["compare", str(real_run), "--fabric", str(fpath), "--host-map", str(hm), "-o", str(out)]) == 0
    assert set(Result.read_json(out).pairs["src_host"].tolist()) == {"node07"}


@pytest.mark.mpi
def test_against_a_modeled_result(real_run, tmp_path, capsys):
    host = read_run(real_run).ranks["host"][0]
    fpath = tmp_path / "fabric.json"
    write_json(named_fabric(host), fpath)
    model = tmp_path / "model.json"
    assert main(["simulate", "--fabric", str(fpath), "--pattern", "random-pairs", "--ranks", "4", "--ppn", "4",
                 "-o", str(model)]) == 0
    out = tmp_path / "cmp.json"
    assert main(["compare", str(real_run), "--model", str(model), "-o", str(out)]) == 0
    res = Result.read_json(out)
    m = Result.read_json(model)
    assert res.meta["kind"] == "compare" and res.n_pairs == 8
    assert set(res.pairs["modeled"].tolist()) <= set(m.pairs["bandwidth"].tolist())


def test_concurrency_decides_sharing(tmp_path):
    """Two pairs across one spine cable: in one round they halve it, in two rounds they do not."""
    f = named_fabric("a", others=3, capacity=1e9)       # a, n1 on leaf0; n2, n3 on leaf1
    cap = 1e9

    def measured(scen):
        return Result(meta={"kind": "measure", "test": "random-pairs"}, class_labels=("x",),
                      pairs={"src": np.array([0, 1]), "dst": np.array([2, 3]),
                             "src_host": np.array(["a", "n1"]), "dst_host": np.array(["n2", "n3"]),
                             "cls": np.zeros(2), "bytes": np.full(2, 1e7), "bandwidth": np.full(2, 0.5 * cap),
                             "scenario": np.array(scen)})

    together = compare(load_measured([measured([0, 0])], f))
    apart = compare(load_measured([measured([0, 1])], f))
    # leaf0 -> spine carries both flows: 0.5 GB/s each when together (hand: 1e9 / 2)
    np.testing.assert_allclose(together.pairs["modeled"], 0.5 * cap, rtol=1e-3)
    np.testing.assert_allclose(apart.pairs["modeled"], cap, rtol=1e-3)
    np.testing.assert_allclose(together.pairs["ratio"], 1.0, rtol=1e-3)
    assert "spine" in together.pairs["limit"][0] and together.class_labels[together.pairs["cls"][0]] == "Far"


def test_bad_inputs_one_line_nothing_written(tmp_path, capsys):
    f = named_fabric("a")
    fpath = tmp_path / "f.json"
    write_json(f, fpath)

    def res(fabric_name, hosts=("a", "n2")):
        r = Result(meta={"kind": "measure", "test": "random-pairs", "fabric": fabric_name}, class_labels=("x",),
                   pairs={"src": np.array([0]), "dst": np.array([1]), "src_host": np.array([hosts[0]]),
                          "dst_host": np.array([hosts[1]]), "cls": np.zeros(1), "bytes": np.full(1, 1e6),
                          "bandwidth": np.full(1, 1e9), "scenario": np.zeros(1)})
        return r

    one, two = tmp_path / "one.json", tmp_path / "two.json"
    res("named").write_json(one)
    res("other").write_json(two)
    with pytest.raises(DiagnoseError, match="different fabrics"):
        load_measured([str(one), str(two)], f)
    out = tmp_path / "out.json"
    for argv, msg in ([[str(one), str(two)], "different fabrics"],
                      [[str(fpath)], "not a fabscope result"],
                      [[str(tmp_path / "missing.jsonl")], "cannot read"]):
        assert main(["compare", *argv, "--fabric", str(fpath), "-o", str(out)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], err
        assert not out.exists()
    # a run with no pair test (a ping-pong sweep only)
    bench = tmp_path / "pp.jsonl"
    bench.write_text('{"type":"header","schema":"fabscope.bench","version":1,"nranks":2}\n'
                     '{"type":"ranks","host":["a","n1"],"core":[0,0],"socket":[0,0]}\n'
                     '{"type":"test","test":"pingpong"}\n'
                     '{"type":"size","test":"pingpong","bytes":8,"latency":1e-6,"bandwidth":8e6}\n'
                     '{"type":"end","status":0}\n')
    assert main(["compare", str(bench), "--fabric", str(fpath), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no pair measurements" in err[0] and not out.exists()
