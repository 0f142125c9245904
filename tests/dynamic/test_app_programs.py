"""Application programs (dynamic/apps.py): times worked out by hand on a star, both engines equal."""

import numpy as np
import pytest

from fabscope.dynamic import apps, fast
from fabscope.dynamic.run import run_program_on
from fabscope.errors import TrafficError
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree
from fabscope.mapping.commgraph import pencils, stencil

ENGINES = ["python"] + (["c"] if fast.available() else [])
S = 1e6


@pytest.fixture(scope="module")
def star():
    f = fat_tree(k=4, levels=1)          # one switch, 4 hosts
    return f, float(f.link_capacity[0])


def _iters(f, prog, engine, host=None, latency=False):
    pl = Placement.block(f, prog.n_ranks, ppn=1) if host is None else Placement.from_hosts(f, host)
    run = run_program_on(f, pl, prog, latency=latency, engine=engine)
    assert run.engine == engine
    return apps.iteration_times(prog, run.outcome.step_end)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("periodic,messages", [(False, 2), (True, 4)])
def test_halo_2x2_on_a_star_by_hand(star, engine, periodic, messages):
    """2x2 grid, one rank a host: each host sends ``messages`` halos of S at once over its link (and
    receives as many): an iteration takes messages * S / C.  Periodic on an axis of 2: both neighbours
    are the same rank, two messages to it."""
    f, cap = star
    prog = apps.halo((2, 2), S, periodic=periodic, iterations=3, warmup=2)
    assert prog.n_messages == 5 * 4 * messages
    t = _iters(f, prog, engine)
    assert len(t) == 3
    np.testing.assert_allclose(t, messages * S / cap, rtol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_halo_compute_and_latency_add_per_iteration(star, engine):
    f, cap = star
    prog = apps.halo((2, 2), S, periodic=False, iterations=2, warmup=1, compute=1e-3)
    t = _iters(f, prog, engine)
    np.testing.assert_allclose(t, 2 * S / cap + 1e-3, rtol=1e-9)
    lat = _iters(f, apps.halo((2, 2), S, periodic=False, iterations=2, warmup=1), engine, latency=True)
    assert np.all(lat > 2 * S / cap)


@pytest.mark.parametrize("engine", ENGINES)
def test_fft_transpose_pairwise_on_a_star_by_hand(star, engine):
    """2x2 grid: row all-to-all (one round: 1 message each way per pair), then the column one: each
    host sends one S at a time, two rounds: 2 S / C per iteration; scattered: the same here."""
    f, cap = star
    for algo in ("pairwise", "scattered"):
        prog = apps.fft_transpose((2, 2), S, iterations=2, warmup=1, algorithm=algo)
        np.testing.assert_allclose(_iters(f, prog, engine), 2 * S / cap, rtol=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_allreduce_loop_ring_on_a_star_by_hand(star, engine):
    """Ring of 4: 2 (n - 1) = 6 rounds of S / 4 to the right, one message a link: 6 S / (4 C)."""
    f, cap = star
    prog = apps.allreduce_loop(4, S, iterations=2, warmup=1, algorithm="ring")
    np.testing.assert_allclose(_iters(f, prog, engine), 6 * S / 4 / cap, rtol=1e-9)
    rd = apps.allreduce_loop(4, S, iterations=2, warmup=1, algorithm="recursive-doubling")
    np.testing.assert_allclose(_iters(f, rd, engine), 2 * S / cap, rtol=1e-9)    # log2 4 rounds of S


@pytest.mark.parametrize("engine", ENGINES)
def test_graph_loop_by_hand(star, engine):
    """Rank 0 sends S to 1, 2 and 3 each iteration: its link carries 3 S."""
    f, cap = star
    prog = apps.graph_loop(4, [0, 0, 0], [1, 2, 3], [S, S, S], iterations=3, warmup=0)
    np.testing.assert_allclose(_iters(f, prog, engine), 3 * S / cap, rtol=1e-9)


@pytest.mark.skipif(not fast.available(), reason="no compiled engine")
def test_python_and_compiled_engines_agree_on_every_kernel():
    f = fat_tree(k=4, levels=2, up=1)
    host = np.random.default_rng(3).permutation(16)
    for prog in (apps.halo((4, 4), 65536, iterations=4, warmup=1), apps.halo((4, 2, 2), 4096, periodic=False,
                                                                              iterations=3, warmup=1),
                 apps.fft_transpose((4, 4), 32768, iterations=3, warmup=1),
                 apps.allreduce_loop(16, 1 << 20, iterations=3, warmup=1),
                 apps.allreduce_loop(12, 1024, iterations=3, warmup=1)):
        py = run_program_on(f, Placement.from_hosts(f, host[:prog.n_ranks]), prog, engine="python").outcome
        c = run_program_on(f, Placement.from_hosts(f, host[:prog.n_ranks]), prog, engine="c").outcome
        np.testing.assert_allclose(c.step_end, py.step_end, rtol=1e-9, err_msg=prog.name)


def _matrix(prog):
    m = np.zeros((prog.n_ranks, prog.n_ranks))
    np.add.at(m, (prog.src, prog.dst), prog.bytes)
    return m


def test_kernels_send_what_the_mapping_graphs_say():
    """The halo's and the transpose's bytes per iteration are the stencil's and the pencils' graphs
    (same rank numbering as MPI_Cart_create and the row/column split)."""
    for prog, g in ((apps.halo((4, 4), 100.0), stencil((4, 4), halo=100.0)),
                    (apps.halo((3, 4, 2), 10.0, periodic=False), stencil((3, 4, 2), halo=10.0, periodic=False)),
                    (apps.fft_transpose((3, 4), 7.0), pencils(3, 4, size=7.0))):
        want = np.zeros((g.n, g.n))
        want[g.src, g.dst] = g.bytes
        np.testing.assert_array_equal(_matrix(prog), want, err_msg=prog.name)


def test_bad_parameters_are_refused():
    with pytest.raises(TrafficError, match="iterations"):
        apps.halo((2, 2), 1.0, iterations=0)
    with pytest.raises(TrafficError, match="all-to-all algorithm"):
        apps.fft_transpose((2, 2), 1.0, algorithm="bruck")
    with pytest.raises(TrafficError, match="no rank sends"):
        apps.halo((1,), 1.0)
