"""Long dynamic runs: progress from the compiled engine, and Ctrl-C that stops it at once."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fabscope.dynamic import fast
from fabscope.dynamic import programs as pg
from fabscope.dynamic.run import run_program_on
from fabscope.fabric import Placement
from fabscope.fabric.generators import fat_tree

pytestmark = pytest.mark.skipif(not fast.available(), reason=f"no compiled engine: {fast.why_not()}")


def _job():
    f = fat_tree(k=4, levels=2)
    n = f.n_hosts
    perm = np.random.default_rng(1).permutation(n)
    return f, Placement.block(f, n, ppn=1), pg.pingpong(perm[0::2], perm[1::2], 2**20, 30, n_ranks=n)


def test_progress_reports_messages_done_and_time():
    f, pl, prog = _job()
    seen = []
    fast_run = run_program_on(f, pl, prog, progress=lambda done, t: seen.append((done, t)))
    assert len(seen) == 0 or seen == sorted(seen)
    calls = []
    out = fast.run_program(prog, fast_run.paths, fast_run.msg_path, progress=lambda d, t: calls.append((d, t)), every=5)
    assert len(calls) > 10
    done, t = zip(*calls)
    assert list(done) == sorted(done) and list(t) == sorted(t) and done[-1] <= prog.n_messages
    np.testing.assert_array_equal(out.msg_end, fast_run.outcome.msg_end)      # watching changes nothing


def test_exception_in_progress_stops_the_engine():
    f, pl, prog = _job()
    run = run_program_on(f, pl, prog)

    def boom(done, t):
        if done > 50:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fast.run_program(prog, run.paths, run.msg_path, progress=boom, every=5)


def test_sigint_stops_a_long_simulation_promptly(tmp_path):
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "fabscope.cli", "simulate", "--fabric", "itasca", "--ppn", "8", "--pattern",
           "random-pairs", "--dynamic", "--iterations", "50", "-o", str(out)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(8)                                    # routing done, the engine running (the run takes minutes)
    assert p.poll() is None
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert time.monotonic() - t0 < 15
    assert p.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert not out.exists()
