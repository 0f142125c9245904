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
