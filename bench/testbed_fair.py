"""Do TCP flows that meet on one emulated link get equal shares?  Measured, before and after.

With ``--fifo`` every emulated link is a ``tbf`` alone: packets served first come,
first served.  By default (``fabscope.testbed.commands.shaper``) an ``htb`` under it serves
the hosts whose routes cross the link round-robin.  This script ups the same testbed
both ways (``--fifo`` / fair, testbed name ac1) and runs, each ``--repeat`` times:

- 2 and 3 senders into one host (the leaf's cable to that host is the bottleneck),
- 2 senders on one leaf whose routes share one of its uplinks to hosts on two other
  leaves (the uplink is the only link they share).

Each case runs twice: bulk flows (each sender sends for ``--seconds``), and ``--rounds`` rounds
in which every sender sends one ``--messages`` message at the same moment, as ping-pong
turns that meet on the link.  For the messages it prints, per round, the bytes each flow
delivered until the first message was complete, slowest over fastest: 1 when the link
serves them round-robin, near 0 when it serves one message after the other.  Each
message case runs twice: as TCP does by default (slow start after each pause) and with the
senders' windows kept (``tcp_slow_start_after_idle`` 0: each message enters the network at
once, so the link alone orders them).
For the bulk flows it prints each flow's rate as a share of the bottleneck's payload rate, the slowest
flow over the fastest (1 = equal shares), and the flows' sum over the link's rate
with the bottleneck tbf's overlimits (link-bound when the sum is near 1 and the tbf
held packets back).

    sudo .venv/bin/python bench/testbed_fair.py [--fabric fat-tree:k=4,levels=2,up=2] [--rate 40Mbit] [--mode fair|fifo|both]
    sudo .venv/bin/python bench/testbed_fair.py --up-times SPEC ... [--rate 10Mbit]     # up/down times both ways

Figures are taken on whatever else the machine is running; say so when quoting them.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from fabscope.testbed import shares, state
from fabscope.testbed.counters import plan_of
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.names import parse_rate
from fabscope.units import parse_size

NAME = "ac1"


def path(f, lft, s: int, d: int) -> list[int]:  # type: ignore[no-untyped-def]
    """Directed links from host ``s`` to host ``d`` by the forwarding tables."""
    out = [int(np.flatnonzero(f.link_src == s)[0])]
    while int(f.link_dst[out[-1]]) != d:
        out.append(int(lft[int(f.link_dst[out[-1]]) - f.n_hosts, d]))
    return out


def cases(f, lft) -> list[tuple[str, list[tuple[int, int]], int]]:  # type: ignore[no-untyped-def]
    """(label, flows as (source host, destination host), bottleneck link)."""
    leaf = {h: int(f.link_dst[np.flatnonzero(f.link_src == h)[0]]) for h in range(f.n_hosts)}
    far = [h for h in range(f.n_hosts) if leaf[h] != leaf[0]]
    near = [h for h in range(1, f.n_hosts) if leaf[h] == leaf[0]]
    into = path(f, lft, far[0], 0)[-1]
    out = [("2 senders into one host", [(far[0], 0), (far[-1], 0)], into),
           ("3 senders into one host", [(near[0], 0), (far[0], 0), (far[-1], 0)], into)]
    # two hosts of leaf 0 whose routes to hosts of two other leaves share one uplink and nothing else
    for up_link in np.flatnonzero(f.link_src == leaf[0]):
        if int(f.link_dst[up_link]) < f.n_hosts:
            continue
        flows, used_dst_leaves = [], set()
        for s in [0, *near]:
            for d in far:
                p = path(f, lft, s, d)
                if int(up_link) in p and leaf[d] not in used_dst_leaves:
                    flows.append((s, d))
                    used_dst_leaves.add(leaf[d])
                    break
            if len(flows) == 2:
                break
        if len(flows) == 2:
            a, b = (set(path(f, lft, s, d)) for s, d in flows)
            if a & b == {int(up_link)}:
                out.append(("2 senders through one leaf uplink", flows, int(up_link)))
                break
    return out


def run_mode(spec: str, rate: float, fair: bool, repeat: int, seconds: float, messages: int, rounds: int) -> None:
    down(NAME)
    st = up(NAME, spec, None, max_rate=rate, fair=fair, say=lambda m: print("  " + m, flush=True))
    try:
        p = plan_of(st)
        f = p.fabric
        _, lft = state.forwarding_now(st)
        for label, flows, link in cases(f, lft):
            cap = float(f.link_capacity[link])
            ns, dev = p.netns(int(f.link_src[link])), p.ifname(link)
            for r in range(repeat):
                ol0, dr0 = shares.hold_back(ns, dev)
                rates = shares.measure([(p.netns(s), p.host_ip(s), p.netns(d), p.host_ip(d)) for s, d in flows],
                                       seconds=seconds)
                ol1, dr1 = shares.hold_back(ns, dev)
                for warm in (False, True):
                    got = shares.measure_messages([(p.netns(s), p.host_ip(s), p.netns(d), p.host_ip(d))
                                                   for s, d in flows], size=messages, count=rounds,
                                                  period=len(flows) * messages / cap + 0.5, warm=warm)
                    msg = [shares.spread(g) for g in got]
                    dev = [shares.deviation(g) for g in got]
                    print(f"  {'fair' if fair else 'fifo'}  {label:34s} run {r + 1}: {rounds} rounds of "
                          f"{messages >> 10} KiB messages sent at once{' (warm windows)' if warm else ''}: "
                          f"slowest/fastest at the first one's end, median "
                          f"{np.median(msg):.2f} (rounds {min(msg):.2f}-{max(msg):.2f}); largest departure from "
                          f"the mean share, median {np.median(dev):.2f}", flush=True)
                print(f"  {'fair' if fair else 'fifo'}  {label:34s} run {r + 1}: bulk flows' shares "
                      + " ".join(f"{x / cap:.2f}" for x in rates)
                      + f"  slowest/fastest {shares.spread(rates):.2f}  sum {sum(rates) / cap:.2f} of the link"
                      + f"  overlimits {ol1 - ol0} drops {dr1 - dr0}  load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        down(NAME)


def up_times(specs: list[str], rate: float) -> None:
    """``up`` and ``down`` of each fabric both ways (calibration off: the time is the building's), with the
    number of tc lines each builds."""
    import time

    from fabscope.testbed import commands
    from fabscope.testbed.lifecycle import prepare

    for spec in specs:
        plan, lft, _ = prepare(NAME, spec, rate)
        src = commands.link_sources(plan, lft)
        for fair in (False, True):
            lines = sum(len(commands.shaper_lines(plan, v, src, fair)) for v in range(plan.fabric.n_nodes))
            down(NAME)
            t0 = time.monotonic()
            up(NAME, spec, rate, calibrate=False, fair=fair)
            t1 = time.monotonic()
            down(NAME)
            print(f"  {spec}: {plan.fabric.n_hosts} hosts, {'fair' if fair else 'fifo'}: {lines} tc lines, up "
                  f"{t1 - t0:.1f} s, down {time.monotonic() - t1:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="fat-tree:k=4,levels=2,up=2")
    ap.add_argument("--rate", default="40Mbit", help="at most (--rate auto: what this machine forwards now)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--messages", default="1MiB", help="size of the messages sent at once (default 1MiB)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--up-times", nargs="+", metavar="SPEC", help="instead: time up and down of these fabrics "
                                                                 "both ways (at --rate, not calibrated)")
    ap.add_argument("--mode", choices=("both", "fair", "fifo"), default="both")
    a = ap.parse_args()
    rate = parse_rate(a.rate)
    print(f"testbed_fair: {a.fabric} at {a.rate}, {a.seconds:g} s per run, load {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    if a.up_times:
        up_times(a.up_times, rate)
        return 0
    for fair in ((False, True) if a.mode == "both" else (a.mode == "fair",)):
        run_mode(a.fabric, rate, fair, a.repeat, a.seconds, parse_size(a.messages), a.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
