"""Diagnosis under real jitter on the emulated fabric: a CPU-hungry job beside the measurement.

Not run by the noise branch itself (the testbed was being changed in parallel); written for the lead to
run after merging: ``pytest tests/testbed/test_noise.py -m testbed``.

16 hosts on a 2-level fat tree shaped at 40 Mbit.  Busy loops, one per core, run in the root namespace for
the whole measurement: the ranks lose the CPU at random, the jitter real runs see.  No cable degraded: the
diagnosis names no suspect.  Then one leaf uplink degraded to a quarter: the first run names it (or leaves
it for confirmation), ``diagnose --plan --confirm`` writes the follow-up, whose pairs are measured under
the same load, and the joint diagnosis names the degraded cable first.  (The confirmation jobs of the
script order their host files; ``measure --testbed`` runs on all the testbed's hosts in its own order, so
here the confirmation round is a second run with another seed.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fabscope.cli import main
from fabscope.result import Result
from fabscope.testbed import state, system
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.names import parse_rate

WHY = system.unavailable_reason()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"testbed: {WHY}"), pytest.mark.testbed,
              pytest.mark.mpi, pytest.mark.slow]

NAME = "nz1"
FABRIC = "fat-tree:k=4,levels=2"
RATE = "40Mbit"
SIZE = "256KiB"


class CpuHog:
    """One busy Python loop per core, for at most ``seconds``; stopped by its own pids."""

    def __init__(self, seconds: float = 600.0) -> None:
        code = f"import time\nt = time.time() + {seconds}\nwhile time.time() < t:\n    pass\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(os.cpu_count() or 2)]

    def __enter__(self) -> "CpuHog":
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def measure(tmp, tag: str, *opts: str) -> str:
    out = str(tmp / f"{tag}.jsonl")
    assert main(["measure", "--testbed", NAME, "--timeout", "300", "random-pairs", "--size", SIZE,
                 "--iterations", "10", *opts, "--out", out]) == 0
    return out


def diagnose(tmp, tag: str, *files: str) -> Result:
    out = str(tmp / f"{tag}-diagnose.json")
    assert main(["diagnose", *files, "--fabric", NAME, "-o", out]) == 0
    return Result.read_json(out)


def test_jitter_alone_names_nothing_and_a_degraded_cable_is_named_after_confirmation(work):
    # the rate this machine forwards now, at most RATE: a fixed rate was refused on a busy machine
    rate = up(NAME, FABRIC, None, max_rate=parse_rate(RATE)).rate
    try:
        with CpuHog():
            healthy = diagnose(work, "healthy", measure(work, "healthy", "--rounds", "8"))
        assert healthy.meta["figure"].startswith("median iteration"), healthy.meta["figure"]
        assert healthy.extra["suspects"] == [], healthy.extra["suspects"]

        link = "s1-0000[5]"
        st = state.load(NAME)
        assert main(["testbed", "degrade", NAME, link, "--rate", f"{rate / 4 * 8}bit"]) == 0
        cab = state.cable_of(st.base_fabric(), link)
        with CpuHog():
            first = measure(work, "sick", "--rounds", "8")
        res = str(work / "sick-diagnose.json")
        assert main(["diagnose", first, "--fabric", NAME, "-o", res]) == 0
        sus = Result.read_json(res).extra["suspects"]
        if not sus:
            pytest.fail("the degraded cable brought no suspect to confirm")
        script = work / "confirm.sh"
        assert main(["diagnose", "--plan", "--confirm", res, "--fabric", NAME, "--size", SIZE,
                     "--iterations", "10", "-o", str(script)]) == 0
        plan = json.loads((work / "confirm.sh.json").read_text())
        assert any(p["role"] == "cross" for p in plan["pairs"])
        # fabscope measure --testbed runs on all of the testbed's hosts in its own order (no host file), so
        # the confirmation round here is a second random-pairs run with another seed: new pairs across the
        # suspect and beside it, under the same load
        with CpuHog():
            outs = [measure(work, "confirm", "--rounds", "8", "--seed", "2")]
        assert main(["testbed", "restore", NAME]) == 0
        joint = diagnose(work, "joint", res, *outs)
        named = joint.extra["suspects"]
        assert named and named[0]["links"] == [2 * cab, 2 * cab + 1], named[:3]
        assert len(joint.meta["sources"]) == 1 + len(outs)
    finally:
        down(NAME)

