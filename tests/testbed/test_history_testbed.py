"""The history on real measurements: three healthy nights on an emulated fabric, then one with a cable
degraded; ``history check`` flags that night, names the cable, and nothing before it.

Testbed ``hs1`` (16 hosts, fat-tree k=4 2 levels, D-mod-K, links at 40 Mbit), as test_e2e.py makes its own.
Each night is random pairs and leaf pairs in one fabscope-bench run, added in one call (one tomography).
"""

from __future__ import annotations

import pytest

from fabscope.cli import main
from fabscope.fabric.io import write_json
from fabscope.testbed import state, system
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.names import parse_rate

WHY = system.unavailable_reason()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"testbed: {WHY}"), pytest.mark.testbed,
              pytest.mark.mpi, pytest.mark.slow]

NAME = "hs1"
RATE = "40Mbit"
CABLE = "s1-0000[5]"


def _night(tmp, k: int) -> str:
    out = str(tmp / f"night{k}.jsonl")
    assert main(["measure", "--testbed", NAME, "--timeout", "180", "random-pairs,leaf-pairs", "--size", "512KiB",
                 "--iterations", "2", "--rounds", "4", "--leaf-size", "4", "--out", out]) == 0
    return out


def test_three_healthy_nights_then_a_degraded_cable(work, capsys):
    # the rate this machine forwards now, at most RATE: a fixed rate was refused on a busy machine
    rate = up(NAME, "fat-tree:k=4,levels=2", None, max_rate=parse_rate(RATE)).rate
    try:
        st = state.load(NAME)
        base = work / "fabric.json"
        write_json(st.base_fabric(), base)         # the nominal fabric: the history's
        db = str(work / "history.db")
        for k in (1, 2, 3):
            night = _night(work, k)
            assert main(["history", "add", "--db", db, "--fabric", str(base), night,
                         "--time", f"2026-11-0{k}T02:00Z"]) == 0
            if k > 1:
                assert main(["history", "check", "--db", db]) == 0, capsys.readouterr().out
        assert main(["testbed", "degrade", NAME, CABLE, "--rate", f"{rate / 4 * 8}bit"]) == 0
        night = _night(work, 4)
        assert main(["history", "add", "--db", db, night, "--time", "2026-11-04T02:00Z"]) == 0
        capsys.readouterr()
        assert main(["history", "check", "--db", db]) == 3
        last = capsys.readouterr().out.strip().splitlines()[-1]
        cab = state.cable_of(st.base_fabric(), CABLE)
        from fabscope.diagnose.tomography import cable_name

        assert cable_name(st.base_fabric(), cab) in last, last
        assert main(["history", "show", "--db", db, "--cable", str(cab)]) == 0
        assert "slow since run" in capsys.readouterr().out
    finally:
        down(NAME)
