"""Lock-step or not: ping-pong pairs started out of phase (start offset) or delayed before every
ping (jitter), seeded; on an oversubscribed tree leaf pairs in lock-step share every uplink in
the same direction, out of phase they do not."""

from __future__ import annotations

import numpy as np
import pytest

from fabscope.cli import main
from fabscope.dynamic import programs as pg
from fabscope.dynamic.results import pingpong_result
from fabscope.dynamic.run import run_program_on
from fabscope.errors import TrafficError
from fabscope.fabric import Placement
from fabscope.fabric.io import load_fabric
from fabscope.result import Result

SPEC = "fat-tree:k=4,levels=2,up=2"       # 4 hosts per leaf, 2 uplinks: 2:1


def _leaf_round(f):
    """Leaf 0's 4 hosts with leaf 1's 4: 4 pairs over 2 uplinks, the lower ranks all on leaf 0."""
    return np.arange(4), np.arange(4, 8)


def _bw(f, **kw):
    a, b = _leaf_round(f)
    p = pg.pingpong(a, b, float(1 << 20), 50, 2, n_ranks=16, **kw)
    return pingpong_result(f, run_program_on(f, Placement.block(f, 16, 1), p, "dmodk")).pairs["bandwidth"]


def test_lock_step_halves_the_uplinks_and_a_start_offset_breaks_it():
    f = load_fabric(SPEC)
    rate = float(f.link_capacity[0])
    lock = _bw(f)
    np.testing.assert_allclose(lock / rate, 0.5, rtol=0.01)      # all pings leaf0 -> leaf1 at once
    assert np.array_equal(_bw(f, start_offset=0.0), lock)
    off = _bw(f, start_offset=1e-3, seed=3)
    assert off.mean() > 1.15 * lock.mean()                       # pongs now overlap pings: full duplex used
    np.testing.assert_array_equal(off, _bw(f, start_offset=1e-3, seed=3))   # seeded
    assert not np.array_equal(off, _bw(f, start_offset=1e-3, seed=4))


def test_jitter_is_paid_in_every_iteration():
    f = load_fabric(SPEC)
    a, b = np.array([0]), np.array([4])                          # one pair alone: no sharing to escape
    pl = Placement.block(f, 16, 1)
    alone = pingpong_result(f, run_program_on(f, pl, pg.pingpong(a, b, 1e6, 20, 2, 16))).pairs["time"][0]
    p = pg.pingpong(a, b, 1e6, 20, 2, 16, jitter=1e-4, seed=1)
    t = pingpong_result(f, run_program_on(f, pl, p)).pairs["time"][0]
    delays = p.step_delay[p.send_step[(p.step_round[p.send_step] % 2 == 0) & (p.step_round[p.send_step] >= 4)]]
    assert t == pytest.approx(alone + delays.mean(), rel=1e-6)  # each timed round trip waits its draw
    assert p.params["jitter"] == 1e-4 and p.params["phase_seed"] == 1
    with pytest.raises(TrafficError, match="jitter must be a finite time >= 0"):
        pg.pingpong(a, b, 1e6, 2, 0, 16, jitter=-1.0)


def test_simulate_takes_the_option(tmp_path, capsys):
    out = tmp_path / "d.json"
    argv = ["simulate", "--fabric", SPEC, "--ppn", "1", "--pattern", "leaf-pairs:nodes_per_leaf=4", "--size",
            "1MiB", "--dynamic", "--iterations", "20"]
    assert main(argv + ["-o", str(out)]) == 0
    lock = Result.read_json(out).pairs["bandwidth"]
    assert main(argv + ["--start-offset", "1e-3", "-o", str(out)]) == 0
    off = Result.read_json(out)
    assert off.pairs["bandwidth"].mean() > 1.15 * lock.mean()
    assert off.meta["program_params"]["start_offset"] == 1e-3
    assert main(argv + ["--start-offset", "-1"]) == 1
    assert "--start-offset must be a time >= 0" in capsys.readouterr().err
