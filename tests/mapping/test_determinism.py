"""The mapper's answer depends only on its inputs and its seed: every loop is bounded by counts (steps,
passes, tries), so a clock that races ahead, or a machine busy with other jobs, changes nothing."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from fabscope.fabric.generators import fat_tree, torus
from fabscope.mapping.api import map_ranks
from fabscope.mapping.commgraph import random_sparse
from fabscope.mapping.targets import Target


def _racing_clock(monkeypatch):
    """Every reading of the clock is an hour after the one before."""
    state = {"t": 0.0}

    def tick(*_a):
        state["t"] += 3600.0
        return state["t"]

    for name in ("perf_counter", "process_time", "monotonic", "time"):
        monkeypatch.setattr(time, name, tick)


@pytest.mark.parametrize("fabric, ppn", [(lambda: torus((4, 4, 4), cores=1), 1),
                                         (lambda: fat_tree(k=4, levels=3), 4)])
@pytest.mark.parametrize("algorithm", ["topo", "hier+swap+links"])
def test_a_racing_clock_gives_the_same_placement(monkeypatch, fabric, ppn, algorithm):
    f = fabric()
    n = 64
    g = random_sparse(n, degree=5, seed=3)
    t = Target.whole(f, n, ppn)
    quiet = map_ranks(g, t, algorithm, seed=1)
    _racing_clock(monkeypatch)
    raced = map_ranks(g, t, algorithm, seed=1)
    monkeypatch.undo()
    assert np.array_equal(quiet.slot, raced.slot)
    assert quiet.algorithm == raced.algorithm


def _busy() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def test_the_command_prints_the_same_bytes_beside_two_cpu_bound_jobs(tmp_path):
    cmd = [sys.executable, "-m", "fabscope.cli", "map", "--fabric", "torus:4x4x4,cores=2", "--ppn", "2",
           "--comm", "random:128,degree=6,seed=2", "--format", "map", "-o"]
    env = dict(os.environ)
    quiet = subprocess.run(cmd + [str(tmp_path / "quiet.txt")], capture_output=True, text=True, env=env, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    jobs = [_busy(), _busy()]
    try:
        busy = subprocess.run(cmd + [str(tmp_path / "busy.txt")], capture_output=True, text=True, env=env,
                              timeout=300)
    finally:
        for j in jobs:
            j.kill()
            j.wait()
    assert busy.returncode == 0, busy.stderr
    a, b = (tmp_path / "quiet.txt").read_bytes(), (tmp_path / "busy.txt").read_bytes()
    assert a and a == b
