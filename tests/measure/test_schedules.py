"""One pair generator: fabscope-bench's random schedules (csrc/draws.c) and the
Python side's (fabscope.traffic.draws) are the same, on every test that draws
at random, over seeds, rank counts and rounds; and `measure random-pairs --seed S`
lists the pairs `simulate --pattern random-pairs --seed S` models."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.dynamic import programs as pg
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree
from fabscope.measure.parse import read_run
from fabscope.result import Result
from fabscope.traffic import draws
from fabscope.traffic import patterns as pt

pytestmark = pytest.mark.mpi

SEEDS = (0, 1, 7, 123456789, 2**62 + 11)   # the last overflows seed * 1000003: wraps alike
RANKS = (2, 3, 4, 9, 16, 33, 100)


def listed(binary, n: int, *args: str) -> list[dict]:
    """What the real program says it would run on n ranks (no MPI job: --list-pairs)."""
    p = subprocess.run([str(binary), *args, "--list-pairs", str(n)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return [json.loads(ln) for ln in p.stdout.splitlines()]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_pairs_rounds_equal_c(binary, seed):
    for n in RANKS:
        lines = listed(binary, n, "random-pairs", "--seed", str(seed), "--rounds", "4")
        c = [(ln["scenario"], ln["src"], ln["dst"]) for ln in lines]
        t = pt.random_pairs(n, 1e6, seed=seed, rounds=4)
        half = t.n_flows // 2
        py = list(zip(t.scenario[:half].tolist(), t.src[:half].tolist(), t.dst[:half].tolist()))
        assert c == py, (n, seed)
        assert len(c) == 4 * (n // 2)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_ring_and_random_msg_equal_c(binary, seed):
    for n in RANKS:
        (ring,) = listed(binary, n, "random-ring", "--seed", str(seed))
        assert ring["order"] == draws.ring_order(n, seed).tolist()
        t = pt.ring(n, 1e6, "random", seed)
        assert t.src[:n].tolist() == ring["order"]
        lines = listed(binary, n, "random-msg", "--seed", str(seed), "--iterations", "3", "--warmup", "2")
        assert [ln["warmup"] for ln in lines] == [True, True, False, False, False]
        prog = pg.random_messaging(n, 3, seed=seed, warmup=2)
        for i, ln in enumerate(lines):
            sel = prog.step_round[prog.send_step] == i
            sent = dict(zip(prog.src[sel].tolist(), zip(prog.dst[sel].tolist(), prog.bytes[sel].tolist())))
            o, b = ln["order"], ln["bytes"]
            assert sent == {o[k]: (o[(k + 1) % n], float(b[k])) for k in range(n)}, (n, seed, i)
            assert all(100 <= x <= 1000 for x in b)
        first = pt.random_messaging(n, seed)                   # the static snapshot: iteration 0
        assert first.src.tolist() == lines[0]["order"] and first.bytes.tolist() == lines[0]["bytes"]


def test_list_pairs_refuses_tests_that_draw_nothing(binary):
    p = subprocess.run([str(binary), "pingpong", "--list-pairs", "4"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr.strip() == ("fabscope-bench: error: --list-pairs: test 'pingpong' draws nothing at random "
                                "(random-pairs, random-ring, random-msg do)")


def test_listed_pairs_are_the_pairs_a_real_run_measures(bench):
    p, out = bench.run(4, "random-pairs,random-ring", "--size", "4096", "--iterations", "2", "--rounds", "3",
                       "--seed", "42")
    assert p.returncode == 0, p.stderr
    run = read_run(out)
    measured = [(r["scenario"], r["src"], r["dst"]) for r in run.of("random-pairs", "pair")]
    c = [(ln["scenario"], ln["src"], ln["dst"]) for ln in listed(bench.binary, 4, "random-pairs", "--seed", "42",
                                                                   "--rounds", "3")]
    assert measured == c
    assert len({tuple(sorted((s, d))) for _, s, d in measured}) > 1   # the rounds differ


@pytest.mark.parametrize("np_,ppn,seed", [(4, 1, 5), (4, 2, 11), (3, 1, 2), (3, 3, 9), (6, 2, None)])
def test_measure_and_simulate_list_the_same_pairs(tmp_path, mpi, capsys, np_, ppn, seed):
    """`fabscope measure random-pairs --seed S --rounds R` beside `fabscope simulate --pattern
    random-pairs:rounds=R --seed S` (static and --dynamic): the same pairs in the same rounds; and with no
    ``--seed`` on either side (seed None), the same defaults."""
    out, sim, dyn = tmp_path / "m.jsonl", tmp_path / "s.json", tmp_path / "d.json"
    seed_arg = [] if seed is None else ["--seed", str(seed)]
    assert main(["measure", "--np", str(np_), "--timeout", "60", "random-pairs", "--size", "4096", "--iterations",
                 "2", *seed_arg, "--rounds", "3", "--out", str(out)]) == 0
    measured = [(r["scenario"], r["src"], r["dst"]) for r in read_run(out).of("random-pairs", "pair")]
    common = ["--fabric", "fat-tree:k=4,levels=2", "--ranks", str(np_), "--ppn", str(ppn), *seed_arg,
              "--pattern", "random-pairs:rounds=3", "--size", "4096"]
    assert main(["simulate", *common, "-o", str(sim)]) == 0
    assert main(["simulate", *common, "--dynamic", "--iterations", "2", "-o", str(dyn)]) == 0
    capsys.readouterr()
    for path in (sim, dyn):
        r = Result.read_json(path)
        p = r.pairs
        keep = np.asarray(p["src"]) < np.asarray(p["dst"])           # the static result lists both directions
        got = sorted(zip(np.asarray(p["scenario"])[keep].tolist(), np.asarray(p["src"])[keep].tolist(),
                         np.asarray(p["dst"])[keep].tolist()))
        assert got == sorted(measured), path
        assert len(got) == 3 * (np_ // 2)
    # and the ranks sit where --ppn puts them
    f = fat_tree(k=4, levels=2)
    pl = Placement.block(f, np_, ppn)
    assert len(set(pl.host.tolist())) == np_ // ppn


@pytest.mark.parametrize("dims,spec,hops", [("2x2", "torus:2x2", 1), ("2x2", "torus:2x2", 2),
                                            ("4", "torus:4", 2), ("4", "mesh:4", 3)])
def test_partner_hops_in_bench_order_are_the_pairs_hops_ran(bench, dims, spec, hops):
    """fabscope-bench's hops test pairs deterministically (csrc/pairs.c); partner-hops:order=bench
    makes the same pairs on the fabric its --dims describe (ranks laid out row-major, as the
    fabrics number their hosts)."""
    from fabscope.fabric.io import load_fabric
    from fabscope.traffic.spec import make_traffic

    args = ["hops", "--size", "4096", "--iterations", "2", "--per-rank", "--dims", dims, "--hops", str(hops)]
    if spec.startswith("mesh"):
        args.append("--mesh")
    p, out = bench.run(4, *args)
    assert p.returncode == 0, p.stderr
    measured = sorted((r["src"], r["dst"]) for r in read_run(out).of("hops", "pair"))
    f = load_fabric(spec)
    t = make_traffic(f"partner-hops:hops={hops},order=bench", f, Placement.block(f, 4, 1), 4096.0)
    half = t.n_flows // 2
    assert sorted(zip(t.src[:half].tolist(), t.dst[:half].tolist())) == measured
    assert measured


@pytest.mark.parametrize("how", [["--list-pairs", "4"], ["--list-pairs=4"]])
def test_measure_refuses_list_pairs_before_any_job(how, tmp_path, capsys):
    """``--list-pairs`` is the program's own (it prints and exits, no MPI): through ``fabscope measure`` it
    was launched as a job, printed no run, and the output was refused as 'no fabscope-bench header
    line'.  Now one line says where the option goes, and nothing is written."""
    out = tmp_path / "rp.jsonl"
    assert main(["measure", "--np", "2", "random-pairs", *how, "--out", str(out)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--list-pairs runs no job" in err[0] and "fabscope-bench TEST --list-pairs N" in err[0]
    assert list(tmp_path.iterdir()) == []
