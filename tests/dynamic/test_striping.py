"""A striped message in time: one flow per port pair, done when the last one is, in both engines."""

import numpy as np
import pytest

from fabscope.dynamic import fast
from fabscope.dynamic.program import Program
from fabscope.dynamic.run import run_program_on
from fabscope.fabric.generators import fat_tree
from fabscope.fabric.placement import Placement

ENGINES = ["python"] + (["c"] if fast.available() else [])


@pytest.mark.parametrize("engine", ENGINES)
def test_striped_message_ends_with_its_last_port_pair(engine):
    """1e6 bytes from h0000 to h0001 over both rails, while 4e5 bytes from h0002 (below the
    threshold: one port, rail 0) share the cable into h0001's first port: the rail-0 half waits,
    the rail-1 half does not, and the message ends with the rail-0 half at 9e5 / C."""
    f = fat_tree(k=4, levels=2, rails=2)
    c = float(f.link_capacity[0])
    prog = Program.from_rounds("two", 3, [([0, 2], [1, 1], np.array([1e6, 4e5]))])
    pl = Placement.from_hostlist(f, ["h0000", "h0001", "h0002"])
    run = run_program_on(f, pl, prog, latency=False, engine=engine, ports="stripe")
    assert run.engine == engine
    assert run.outcome.msg_end.tolist() == pytest.approx([9e5 / c, 8e5 / c], rel=1e-9)
    assert run.outcome.delivered.tolist() == pytest.approx([1e6, 4e5])
    one = run_program_on(f, pl, prog, latency=False, engine=engine, ports="rank")
    assert one.outcome.msg_end.tolist() == pytest.approx([1.4e6 / c, 8e5 / c], rel=1e-9)


def test_python_and_compiled_engines_agree_on_striped_collectives():
    if not fast.available():
        pytest.skip(f"compiled engine: {fast.why_not()}")
    from fabscope.dynamic.programs import allreduce_ring

    f = fat_tree(k=4, levels=2, rails=2, rail_optimised=True)
    pl = Placement.block(f, 32, ppn=2)
    prog = allreduce_ring(32, 4 << 20)
    a = run_program_on(f, pl, prog, engine="python", ports="stripe")
    b = run_program_on(f, pl, prog, engine="c", ports="stripe")
    assert np.allclose(a.outcome.msg_end, b.outcome.msg_end, rtol=1e-9)
    assert a.outcome.makespan == pytest.approx(b.outcome.makespan, rel=1e-9)


def test_striped_messages_end_as_in_simgrid():
    """SimGrid gets one endpoint per (rank, port) so that each port pair has its own route; a
    striped message ends when its last part does, there as here."""
    from fabscope.dynamic import peer

    if peer.why_unavailable() is not None:
        pytest.skip(f"SimGrid unavailable: {peer.why_unavailable()}")
    f = fat_tree(k=4, levels=2, rails=2, rail_optimised=True)
    n = 2 * f.n_hosts
    pl = Placement.block(f, n, ppn=2)
    rng = np.random.default_rng(7)
    perm = rng.permutation(n)
    src, dst = np.r_[perm[0::2], perm[1::2]], np.r_[perm[1::2], perm[0::2]]
    size = 2 * np.round(rng.choice([2e3, 5e4, 1e6, 4e6], len(src)) * rng.uniform(0.5, 2.0, len(src)) / 2)
    prog = Program.from_arrays("matching", n, src, dst, size, np.zeros(len(src), int))
    run = run_program_on(f, pl, prog, latency=False, ports="stripe")
    sub = run.sub
    assert sub is not None and sub.n > len(src)                      # some messages were striped
    nt = f.n_terminals
    ends_s, ends_d = src[sub.flow] * nt + sub.src, dst[sub.flow] * nt + sub.dst
    theirs, _ = peer.run(peer.problem(run.paths, run.msg_path, ends_s, ends_d, sub.bytes, np.repeat(pl.host, nt)))
    np.testing.assert_allclose(run.outcome.msg_end, sub.most(np.asarray(theirs)), rtol=1e-6)
