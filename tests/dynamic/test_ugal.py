"""UGAL in time: each message chooses minimal or Valiant when it starts, from the loads then."""

import numpy as np
import pytest

from fabscope.dynamic.engine import run_program
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import build_paths
from fabscope.dynamic.run import run_program_on
from fabscope.dynamic.ugal import run_ugal
from fabscope.errors import RoutingError
from fabscope.fabric import Placement
from fabscope.fabric.generators import dragonfly, fat_tree

F = dragonfly(a=4, p=2, h=2, g=9)
PL = Placement.block(F, 72, ppn=1)


def _shift(size=1e6):
    r = np.arange(72)
    return Program.from_rounds("shift", 72, [(r, (r + 8) % 72, size)])


def test_worst_case_goes_non_minimal_and_finishes_sooner():
    prog = _shift()
    minimal = run_program_on(F, PL, prog, "minimal").outcome.makespan
    link = 1e6 / F.link_capacity[0]
    assert minimal == pytest.approx(8 * link, rel=0.01)        # 8 flows on the one cable to the next group
    took = {}
    for mode in ("ugal-l", "ugal-g"):
        run = run_ugal(F, PL, prog, mode)
        took[mode] = run.took_valiant.sum()
        assert 0 < took[mode] < 72                              # the first go minimally, the rest around
        # ugal-l too: its source router's queue to the cable's router fills behind the cable (credit
        # flow control), so it sees the cable's load as ugal-g does (it once read the local link alone:
        # 0.87 of minimal's time, most of the group on the one cable)
        assert run.makespan < 0.7 * minimal, mode


def test_messages_one_after_another_all_go_minimally():
    """A message alone on the fabric finds every path idle and takes the shortest."""
    r = np.arange(0, 64, 8)
    rounds = [([int(a)], [int((a + 8) % 72)], 1e5) for a in r]      # one message a round, each after the last
    prog = Program.from_rounds("chain", 72, rounds)
    run = run_ugal(F, PL, prog, "ugal-g")
    assert not run.took_valiant.any()


def test_a_choice_that_keeps_the_path_changes_nothing():
    prog = _shift(3e5)
    hs, hd = PL.host[prog.src], PL.host[prog.dst]
    paths = build_paths(F, "minimal", hs, hd)
    res = [paths.res[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
    wts = [paths.weight[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
    args = (prog, paths.capacity, res, wts, paths.cap, paths.latency, list(range(prog.n_messages)))
    a = run_program(*args)
    b = run_program(*args, choose=lambda t, m, weight: m)
    assert np.array_equal(a.msg_end, b.msg_end)


def test_refused_where_it_does_not_apply():
    with pytest.raises(RoutingError, match="ugal-l or ugal-g"):
        run_ugal(F, PL, _shift(), "valiant")
    f = fat_tree(k=2, levels=2)
    with pytest.raises(RoutingError, match="not one"):
        run_ugal(f, Placement.block(f, 4, ppn=1), Program.from_rounds("x", 4, [([0], [3], 8.0)]))


def test_simulate_dynamic_chooses_when_posted_and_static_refuses_it(capsys):
    from fabscope.cli import main

    argv = ["simulate", "--fabric", "dragonfly:a=4,p=2,h=2,g=9", "--ppn", "1", "--pattern", "shift:k=8",
            "--size", "1MB", "--routing", "ugal-g:when=posted"]
    assert main(argv + ["--dynamic"]) == 0
    out = capsys.readouterr().out
    want = run_ugal(F, PL, _shift()).makespan
    assert f"done at {want * 1e3:.3f} ms simulated" in out and "engine c" in out     # compiled by default
    assert main(argv + ["--dynamic", "--engine", "python"]) == 0
    out = capsys.readouterr().out
    assert f"done at {want * 1e3:.3f} ms simulated" in out and "engine python" in out
    assert main(argv) == 1
    assert "only in time" in capsys.readouterr().err
    assert main(argv + ["--dynamic", "--model", "congestion"]) == 1
    assert "max-min sharing only" in capsys.readouterr().err


def _cases():
    from fabscope.dynamic.programs import collective

    for a, p, h, g in ((4, 2, 2, 9), (6, 3, 3, 19), (8, 4, 7, 9)):     # the last: 7 cables between two groups
        f = dragonfly(a=a, p=p, h=h, g=g)
        n = f.n_hosts
        r = np.arange(n)
        rng = np.random.default_rng(a)
        yield f, Program.from_rounds("shift", n, [(r, (r + a * p) % n, 1e6)])
        # two rounds of random matchings: the second posts as the first's messages end, at tied times
        yield f, Program.from_rounds("perm", n, [(r, rng.permutation(n), 1e6), (r, rng.permutation(n), 3e5)])
    # a ring allreduce, step after step
    yield F, collective("allreduce", "ring", 72, 4e5)


@pytest.mark.parametrize("mode", ["ugal-l", "ugal-g"])
def test_compiled_engine_chooses_as_the_reference_does(mode):
    """The compiled engine makes each choice itself (flowsim.c) from the same loads: the same
    messages go Valiant and every time agrees with the reference engine's."""
    for f, prog in _cases():
        pl = Placement.block(f, f.n_hosts, ppn=1)
        c = run_ugal(f, pl, prog, mode, seed=3, engine="c")
        py = run_ugal(f, pl, prog, mode, seed=3, engine="python")
        assert (c.engine, py.engine) == ("c", "python")
        assert 0 < py.took_valiant.sum() < prog.n_messages, (prog.name, mode)   # both kinds of choice made
        assert np.array_equal(c.took_valiant, py.took_valiant), (prog.name, mode)
        assert np.array_equal(c.msg_path, py.msg_path)
        for t in ("msg_post", "msg_start", "msg_end"):
            np.testing.assert_allclose(getattr(c.outcome, t), getattr(py.outcome, t), rtol=1e-9, err_msg=t)


@pytest.mark.parametrize("engine", ["python", "c"])
def test_messages_posted_together_choose_in_message_order(engine):
    """Eight messages of one group to the next, posted at one time, listed from rank 7 down: message 0
    (rank 7 -> 15), the first to choose, finds the fabric idle and goes minimally, though its step
    (rank 15's) starts last (its choice once came last, and went around)."""
    src = [7, 6, 5, 4, 3, 2, 1, 0]
    prog = Program.from_rounds("group to group", 72, [(src, [s + 8 for s in src], 1e6)])
    took = run_ugal(F, PL, prog, "ugal-g", engine=engine).took_valiant
    assert not took[0] and took.sum() >= 4


def test_the_minimal_side_spreads_over_the_cables_between_two_groups():
    """Where two groups share 7 cables, a message's minimal path in time is UGAL's minimal side, an
    even share on each cable (as the static UGAL's); between groups joined by one, the one path."""
    def cables(f, run):
        p = int(run.msg_path[0])
        links = run.paths.res[run.paths.indptr[p]:run.paths.indptr[p + 1]]
        w = run.paths.weight[run.paths.indptr[p]:run.paths.indptr[p + 1]]
        sw_group = np.zeros(f.n_nodes, int)
        sw_group[f.host_switch] = f.groups["group"]
        a, b = f.link_src[links], f.link_dst[links]
        between = (a >= f.n_hosts) & (b >= f.n_hosts) & (sw_group[a] != sw_group[b])
        return w[between]

    f = dragonfly(a=8, p=4, h=7, g=9)
    run = run_ugal(f, Placement.block(f, f.n_hosts, ppn=1), Program.from_rounds("one", f.n_hosts, [([0], [32], 1e6)]))
    assert not run.took_valiant[0] and np.allclose(cables(f, run), 1 / 7) and len(cables(f, run)) == 7
    one = run_ugal(F, PL, Program.from_rounds("one", 72, [([0], [8], 1e6)]))
    assert not one.took_valiant[0] and cables(F, one).tolist() == [1.0]


@pytest.mark.parametrize("engine", ["python", "c"])
def test_ugal_l_sees_the_cable_behind_its_local_link(engine):
    """Three routers of group 0 (hosts 2, 4, 6), none holding the cable to group 1 (router 0 does),
    each send one message there at once: each one's minimal path starts on its own idle local link
    to router 0, but the queue behind it on the cable fills that link (credit flow control), so after
    the first, ugal-l goes around as ugal-g does (reading the local link alone, all three stayed on
    the one cable)."""
    src = [2, 4, 6]
    prog = Program.from_rounds("three routers to the next group", 72, [(src, [s + 8 for s in src], 1e6)])
    for mode in ("ugal-l", "ugal-g"):
        assert run_ugal(F, PL, prog, mode, engine=engine).took_valiant.tolist() == [False, True, True], mode


@pytest.mark.parametrize("engine", ["python", "c"])
def test_minimal_side_on_one_cable_when_asked(engine):
    """``cables="tables"`` (``ugal-g:cables=tables,when=posted``) puts the minimal side on minimal's one
    cable a destination, as the static ``ugal-g:cables=tables`` does; both engines choose alike."""
    f = dragonfly(a=8, p=4, h=7, g=9)
    n = f.n_hosts
    pl = Placement.block(f, n, ppn=1)
    r = np.arange(n)
    prog = Program.from_rounds("shift", n, [(r, (r + 32) % n, 1e6)])
    sw_group = np.zeros(f.n_nodes, int)
    sw_group[f.host_switch] = f.groups["group"]

    def cables(run, p):
        links = run.paths.res[run.paths.indptr[p]:run.paths.indptr[p + 1]]
        a, b = f.link_src[links], f.link_dst[links]
        return np.count_nonzero((a >= f.n_hosts) & (b >= f.n_hosts) & (sw_group[a] != sw_group[b]))

    one = run_ugal(f, pl, prog, "ugal-g", cables="tables", engine=engine)
    spread = run_ugal(f, pl, prog, "ugal-g", engine=engine)
    assert [cables(one, p) for p in range(n)] == [1] * n           # paths 0..n-1: each pair's minimal
    assert [cables(spread, p) for p in range(n)] == [7] * n
    ref = run_ugal(f, pl, prog, "ugal-g", cables="tables", engine="python")
    assert np.array_equal(one.took_valiant, ref.took_valiant)
    assert spread.makespan < one.makespan                          # over all 7 cables it finishes sooner
    with pytest.raises(RoutingError, match="cables must be tables or all"):
        run_ugal(f, pl, prog, "ugal-g", cables="one")


def test_in_time_refuses_the_static_options(capsys):
    from fabscope.cli import main

    argv = ["simulate", "--fabric", "dragonfly:a=4,p=2,h=2,g=9", "--ppn", "1", "--pattern", "shift:k=8",
            "--dynamic", "--routing"]
    assert main(argv + ["ugal-g:parts=8,when=posted"]) == 1
    err = capsys.readouterr().err.strip()
    assert "in time (when=posted) UGAL takes cables= alone, not parts=" in err and "\n" not in err
    assert main(argv + ["ugal-g:cables=tables,when=posted"]) == 0
