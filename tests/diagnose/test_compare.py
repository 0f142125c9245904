"""compare: measured pairs of a real run beside the model of the same pairs, same rounds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.diagnose.compare import compare, compare_lines
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
    assert main(["compare", str(real_run), "--fabric", str(fpath), "-o", str(out), "--model", "static"]) == 0
    text = capsys.readouterr().out
    assert "Same Node" in text and "pairs furthest from the model" in text
    assert "model: static: the snapshot" in text
    res = Result.read_json(out)
    assert res.meta["model"] == "static"
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
def test_real_run_compared_in_time_by_default(real_run, tmp_path, capsys):
    """The default model is the program the run ran: its pairs, rounds, size, 20 iterations and
    2 warm-up ones, ping-pong turns; each round as `simulate --dynamic` runs it alone."""
    from fabscope.dynamic.programs import pingpong
    from fabscope.dynamic.results import pingpong_result
    from fabscope.dynamic.run import run_program_on

    run = read_run(real_run)
    fabric = named_fabric(run.ranks["host"][0])
    fpath = tmp_path / "fabric.json"
    write_json(fabric, fpath)
    out = tmp_path / "cmp.json"
    assert main(["compare", str(real_run), "--fabric", str(fpath), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "model: dynamic: the program the benchmark ran, in time (max-min sharing, 20 timed iterations" in text
    res = Result.read_json(out)
    assert res.meta["model"] == "dynamic" and res.meta["model_info"]["iterations"] == [20]
    assert res.meta["model_info"]["warmup"] == [2]
    place = Placement(np.zeros(4, np.int32), np.arange(4, dtype=np.int32))
    for key in set(zip(res.pairs["test"].tolist(), res.pairs["scenario"].tolist())):
        sel = (res.pairs["test"] == key[0]) & (res.pairs["scenario"] == key[1])
        prog = pingpong(res.pairs["src"][sel], res.pairs["dst"][sel], 65536.0, 20, 2, n_ranks=4)
        alone = pingpong_result(fabric, run_program_on(fabric, place, prog, "minhop"))
        got = dict(zip(zip(res.pairs["src"][sel].tolist(), res.pairs["dst"][sel].tolist()),
                       res.pairs["modeled"][sel].tolist()))
        want = dict(zip(zip(alone.pairs["src"].tolist(), alone.pairs["dst"].tolist()),
                        alone.pairs["bandwidth"].tolist()))
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-9)
    # on one host, two ping-pong pairs in lock-step copy one way at a time: the snapshot halves them
    static = compare(load_measured([str(real_run)], fabric), "minhop", model="static")
    rp = res.pairs["test"] == "random-pairs"
    assert np.all(res.pairs["modeled"][rp] > 1.5 * static.pairs["modeled"][rp])


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
    assert res.meta["kind"] == "compare" and res.n_pairs == 8 and res.meta["model"] == "static"
    assert set(res.pairs["modeled"].tolist()) <= set(m.pairs["bandwidth"].tolist())
    # a --dynamic result of the same pairs and rounds (no --seed on either side: the same default; 3 rounds,
    # 20 iterations)
    dyn = tmp_path / "dyn.json"
    assert main(["simulate", "--fabric", str(fpath), "--pattern", "random-pairs:rounds=3",
                 "--ranks", "4", "--ppn", "4", "--size", "65536", "--dynamic", "--iterations", "20",
                 "-o", str(dyn)]) == 0
    capsys.readouterr()
    assert main(["compare", str(real_run), "--model", str(dyn), "-o", str(out)]) == 0
    assert "model: dynamic" in capsys.readouterr().out
    res = Result.read_json(out)
    rp = res.pairs["test"] == "random-pairs"
    d = Result.read_json(dyn)
    want = {(int(s), int(t), int(sc)): bw for s, t, sc, bw in zip(d.pairs["src"], d.pairs["dst"],
                                                                     d.pairs["scenario"], d.pairs["bandwidth"])}
    got = [want[(int(s), int(t), int(sc))] for s, t, sc in zip(res.pairs["src"][rp], res.pairs["dst"][rp],
                                                                 res.pairs["scenario"][rp])]
    np.testing.assert_allclose(res.pairs["modeled"][rp], got)
    assert res.meta["model"] == "dynamic"
    # refused before any work: --model FILE with --fabric, an unknown --model
    for argv, msg in ((["--model", str(dyn), "--fabric", str(fpath)], "not both"),
                      (["--model", "nosuch"], "neither dynamic nor static"),
                      (["--model", "static"], "needs --fabric")):
        assert main(["compare", str(real_run), *argv, "-o", str(tmp_path / "x.json")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], err
        assert not (tmp_path / "x.json").exists()


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

    for model in ("static", "dynamic"):
        together = compare(load_measured([measured([0, 0])], f), model=model)
        apart = compare(load_measured([measured([0, 1])], f), model=model)
        # leaf0 -> spine carries both flows: 0.5 GB/s each when together (hand: 1e9 / 2); in time too,
        # both lower ranks sit on leaf0 and send first, in step
        np.testing.assert_allclose(together.pairs["modeled"], 0.5 * cap, rtol=1e-3)
        np.testing.assert_allclose(apart.pairs["modeled"], cap, rtol=1e-3)
        np.testing.assert_allclose(together.pairs["ratio"], 1.0, rtol=1e-3)
        assert "spine" in together.pairs["limit"][0] and together.class_labels[together.pairs["cls"][0]] == "Far"


def test_ping_pong_turns_decide_sharing_in_time():
    """Two pairs across one spine cable whose lower ranks sit on different leaves: in time they
    send in opposite directions at once and never share; the snapshot halves both."""
    f = named_fabric("a", others=3, capacity=1e9)
    r = Result(meta={"kind": "measure", "test": "random-pairs"}, class_labels=("x",),
               pairs={"src": np.array([0, 1]), "dst": np.array([2, 3]),
                      "src_host": np.array(["a", "n3"]), "dst_host": np.array(["n2", "n1"]),
                      "cls": np.zeros(2), "bytes": np.full(2, 1e7), "bandwidth": np.full(2, 0.9e9),
                      "scenario": np.array([0, 0])})
    m = load_measured([r], f)
    np.testing.assert_allclose(compare(m, model="static").pairs["modeled"], 0.5e9, rtol=1e-3)
    dyn = compare(m, model="dynamic")
    np.testing.assert_allclose(dyn.pairs["modeled"], 1e9, rtol=1e-3)
    assert dyn.meta["model_info"]["iterations"] == [100]       # fabscope-bench's default, no argv given
    assert compare(m, model="dynamic", iterations=3).meta["model_info"]["iterations"] == [3]
    off = compare(m, model="dynamic", iterations=3, start_offset=1e-3)
    assert off.meta["model_info"]["start_offset"] == 1e-3
    assert "pairs started out of phase by up to 1000 us" in "\n".join(compare_lines(off))


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


def _two_pairs_one_cable(iter_min=None):
    """Two ping-pong pairs whose pings share the leaf0 -> spine cable (both lower ranks on leaf0),
    measured at 0.7 of the cable, 10 ms a round trip, 5 timed iterations after 2 warm-up ones."""
    f = named_fabric("a", others=3, capacity=1e9)
    cols = {"src": np.array([0, 1]), "dst": np.array([2, 3]), "src_host": np.array(["a", "n1"]),
            "dst_host": np.array(["n2", "n3"]), "cls": np.zeros(2), "bytes": np.full(2, 1e7),
            "bandwidth": np.full(2, 0.7e9), "time": np.full(2, 2e7 / 0.7e9), "scenario": np.array([0, 0])}
    if iter_min is not None:
        cols["iter_min"] = np.asarray(iter_min, float)
    r = Result(meta={"kind": "measure", "test": "random-pairs",
                     "argv": ["fabscope-bench", "--iterations", "5", "--warmup", "2"]},
               class_labels=("x",), pairs=cols)
    return load_measured([r], f)


def test_independent_phases_are_the_default_seeded_recorded_and_equal_across_runs():
    """compare's default draws each pair's phase within its own measured round trip, averaged over
    seeded draws: recorded in the result, the same figures for the same seed, other figures for
    another seed; lock-step (both pings at once: half the cable each) stays as --phases lockstep."""
    m = _two_pairs_one_cable(iter_min=[0.021, 0.023])
    lock = compare(m, phases="lockstep")
    np.testing.assert_allclose(lock.pairs["modeled"], 0.5e9, rtol=1e-3)
    assert "phases" not in lock.meta["model_info"]
    a, b = compare(m), compare(m)
    info = a.meta["model_info"]
    assert info["phases"] == "independent" and info["phase_draws"] == 8 and info["phase_seed"] == 0
    assert info["phase_spread"] == "fastest measured round trip"
    assert info["phase_spread_s"] == [0.021, 0.022, 0.023]
    np.testing.assert_array_equal(a.pairs["modeled"], b.pairs["modeled"])
    # out of phase the pairs share the cable part of the time only: between half and all of it
    assert np.all(a.pairs["modeled"] > 0.55e9) and np.all(a.pairs["modeled"] < 1e9)
    other = compare(m, seed=5)
    assert other.meta["model_info"]["phase_seed"] == 5
    assert not np.array_equal(other.pairs["modeled"], a.pairs["modeled"])
    assert "pairs' phases independent" in "\n".join(compare_lines(a))
    one = compare(m, phase_draws=1)
    assert one.meta["model_info"]["phase_draws"] == 1
    # no per-iteration figures: the mean measured round trip is the spread
    assert compare(_two_pairs_one_cable()).meta["model_info"]["phase_spread"].startswith("mean measured")


def test_phases_options_from_the_command_line(tmp_path, capsys):
    f = named_fabric("a", others=3, capacity=1e9)
    fpath = tmp_path / "f.json"
    write_json(f, fpath)
    meas = tmp_path / "m.json"
    _two = _two_pairs_one_cable(iter_min=[0.021, 0.023])
    Result(meta={"kind": "measure", "test": "random-pairs",
                 "argv": ["fabscope-bench", "--iterations", "5", "--warmup", "2"]}, class_labels=("x",),
           pairs={"src": _two.src, "dst": _two.dst, "src_host": np.array(["a", "n1"]),
                  "dst_host": np.array(["n2", "n3"]), "cls": np.zeros(2), "bytes": _two.bytes,
                  "bandwidth": _two.bandwidth, "time": _two.time, "scenario": np.zeros(2, np.int64),
                  "iter_min": _two.iter_min}).write_json(meas)
    outs = []
    for i, opts in enumerate((["--seed", "3"], ["--seed", "3"], ["--phases", "lockstep"])):
        out = tmp_path / f"c{i}.json"
        assert main(["compare", str(meas), "--fabric", str(fpath), *opts, "-o", str(out)]) == 0
        outs.append(Result.read_json(out))
    assert outs[0].meta["model_info"]["phase_seed"] == 3
    np.testing.assert_array_equal(outs[0].pairs["modeled"], outs[1].pairs["modeled"])
    assert "phases" not in outs[2].meta["model_info"]
    capsys.readouterr()
    assert main(["compare", str(meas), "--fabric", str(fpath), "--phase-draws", "0"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--phase-draws must be at least 1" in err[0]


def test_independent_phases_without_a_measured_time_are_lock_step():
    """A file with no time per iteration gives nothing to draw the phases within: lock-step, said so."""
    m = _two_pairs_one_cable()
    m = type(m)(**{**m.__dict__, "time": np.zeros(2)})
    c = compare(m)
    assert c.meta["model_info"]["phases"] == "lockstep" and "no measured round trip" in c.meta["model_info"]["phases_why"]
    np.testing.assert_allclose(c.pairs["modeled"], 0.5e9, rtol=1e-3)


def test_compare_models_striping_with_ports_stripe():
    """A pair measured at twice one link between dual-rail hosts (Open MPI's TCP BTL over two
    interfaces): ``ports="stripe"`` models it at 2x one link, the default one port at 1x; a static
    model of striping is refused in one line."""
    from fabscope.fabric.generators import fat_tree

    f = fat_tree(k=2, levels=2, rails=2, rail_optimised=True)
    link = float(f.link_capacity[0])
    r = Result(meta={"kind": "measure", "test": "random-pairs"}, class_labels=("x",),
               pairs={"src": np.array([0]), "dst": np.array([1]), "src_host": np.array(["h0000"]),
                      "dst_host": np.array(["h0001"]), "cls": np.array([0]), "bytes": np.array([4e6]),
                      "bandwidth": np.array([2 * link]), "scenario": np.array([0])})
    m = load_measured([r], f)
    striped = compare(m, "dmodk", ports="stripe", phases="lockstep", iterations=2)
    one = compare(m, "dmodk", phases="lockstep", iterations=2)
    assert striped.pairs["modeled"][0] / one.pairs["modeled"][0] == pytest.approx(2, rel=0.02)
    assert striped.pairs["ratio"][0] == pytest.approx(1, rel=0.03)
    assert striped.meta["model_info"]["ports"] == "stripe:500000"
    with pytest.raises(DiagnoseError, match="modeled in time") as e:
        compare(m, "dmodk", model="static", ports="stripe")
    assert "\n" not in str(e.value)
