"""Several ranks per emulated host share its cable without the shapers dropping.

Seed 000's table runs 8 ranks per node; on the testbed their TCP connections share the
host's shaped cable.  With 100 ms of queue per shaper (500 KB at 40 Mbit) 8 connections of
1 MiB messages overflowed it (3.6% of the packets dropped, the run not link-bound); the
shapers now hold at least 16 MiB (``fabscope.testbed.commands.QUEUE_BYTES``).  Testbed name
``ac7`` (this part's names: ac1..ac9).
"""

from __future__ import annotations

import json

import pytest

from fabscope.cli import main
from fabscope.testbed import commands, linkbound, system
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.names import parse_rate

WHY = system.unavailable_reason()
pytestmark = [pytest.mark.skipif(WHY is not None, reason=f"testbed: {WHY}"), pytest.mark.testbed,
              pytest.mark.mpi, pytest.mark.slow]


def test_eight_ranks_per_host_share_the_cable_without_drops(tmp_path):
    """4 hosts x 8 ranks of random pairs, 1 MiB: every shaper's queue holds 16 MiB (read back
    from tc), no packet is dropped, and the run's record says link-bound."""
    name = "ac7"
    st = up(name, "xgft:m=2x2,w=1x1", None, max_rate=parse_rate("40Mbit"))
    try:
        host = st.base_fabric().host_names[0]
        out = system.run(["tc", "-n", host, "-j", "qdisc", "show", "dev", "fab0"])
        tbf = [q for q in json.loads(out) if q.get("kind") == "tbf"]
        o = tbf[0]["options"] if tbf else {}
        # tc reports the queue as its latency (us) at the rate: limit = rate x latency + burst
        assert o and o["rate"] * o["lat"] / 1e6 + o["burst"] >= 0.99 * commands.QUEUE_BYTES, tbf
        res = str(tmp_path / "ppn8.jsonl")
        assert main(["measure", "--testbed", name, "--ppn", "8", "--timeout", "600", "random-pairs",
                     "--size", "1MiB", "--iterations", "3", "--out", res]) == 0
        rec = linkbound.records(res)[0]
        assert rec["drops"] == 0, rec
        assert rec["link_bound"], rec
        assert rec["uncontended_pairs"] == 0 or rec["uncontended_ratio"] >= linkbound.UNCONTENDED_MIN, rec
    finally:
        down(name)
