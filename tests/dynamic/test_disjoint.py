"""fabscope.dynamic.disjoint: runs laid side by side on disjoint resources give each run's own times."""

from __future__ import annotations

import numpy as np

from fabscope.diagnose.benchprogram import bench_program
from fabscope.dynamic.disjoint import union
from fabscope.dynamic.fast import run_program
from fabscope.dynamic.resources import build_paths
from fabscope.fabric.io import load_fabric


def _run(f, rng, n_pairs):
    """A ping-pong set of random host pairs, each pair's first ping delayed at random, with its paths."""
    hosts = rng.permutation(f.n_hosts)[:2 * n_pairs]
    a, b = np.arange(n_pairs) * 2, np.arange(n_pairs) * 2 + 1
    prog = bench_program(a, b, rng.choice([1e5, 1e6], n_pairs), 20, 2, True, 2 * n_pairs)
    delay = prog.step_delay.copy()
    delay[prog.send_step[:n_pairs]] += rng.uniform(0, 1e-3, n_pairs)
    key = hosts[prog.src] * f.n_hosts + hosts[prog.dst]
    uniq, msg_path = np.unique(key, return_inverse=True)
    return prog, build_paths(f, None, uniq // f.n_hosts, uniq % f.n_hosts), msg_path, delay


def test_runs_together_give_each_runs_times_alone():
    """Sets of different sizes on a torus and an oversubscribed tree, each with its own delays: every
    message's and step's times in the one run are those of its run alone, bit for bit."""
    rng = np.random.default_rng(3)
    for spec in ("torus:4x4", "fat-tree:k=4,levels=2,up=2"):
        f = load_fabric(spec)
        runs = [_run(f, rng, k) for k in (2, 5, 3, 6)]
        u = union([r[:3] for r in runs], [r[3] for r in runs])
        both = run_program(u.program, u.paths, u.msg_path)
        events = 0
        for k, (prog, paths, msg_path, delay) in enumerate(runs):
            from dataclasses import replace

            alone = run_program(replace(prog, step_delay=delay), paths, msg_path)
            events += alone.events
            assert np.array_equal(both.step_end[u.steps(k)], alone.step_end)
            assert np.array_equal(both.msg_end[u.messages(k)], alone.msg_end)
        assert both.events == events
        assert not np.array_equal(both.step_end[u.steps(0)][:10], both.step_end[u.steps(1)][:10])
