"""Seed 000's random pairs at 8 ranks per node, run for real on the testbed at scaled rates.

Seed 000's main table: 256 ranks, 8 per node (32 nodes), random pairs, 1 MB ping-pong,
on Itasca's 16-node leaves with 8 QDR uplinks each (2:1).  Here: the same shape as a
testbed (``xgft:m=16x2,w=1x8``: 2 leaves of 16 hosts, 8 spines), every cable scaled by
one factor, 8 ranks per emulated host sharing its cable (``measure --testbed --ppn 8``),
then ``fabscope compare`` (its default, and each ``--compare OPTIONS`` given).  Printed per class: measured,
modeled, and the seed's figures scaled by the same factor (MB/s x testbed host cable /
Itasca host cable).  Same Node pairs talk over TCP loopback on the testbed (MPICH may not
use shared memory between namespaces), so that class is not emulated.

    sudo .venv/bin/python bench/testbed_seed000.py [--rate auto:40Mbit] [--iterations 5] [--compare "--phases lockstep"]

Figures are taken on whatever else the machine is running; say so when quoting them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time

import numpy as np

from fabscope.cli import main
from fabscope.diagnose.timemodel import model_line
from fabscope.fabric.io import load_fabric
from fabscope.result import Result
from fabscope.seeds import ITASCA_RANDOM_PAIRS
from fabscope.testbed import system
from fabscope.testbed.lifecycle import down, up
from fabscope.testbed.linkbound import records
from fabscope.testbed.names import parse_rate


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="xgft:m=16x2,w=1x8", help="default: two Itasca leaves (16 hosts, 8 uplinks)")
    ap.add_argument("--rate", default="auto:40Mbit")
    ap.add_argument("--ppn", type=int, default=8)
    ap.add_argument("--iterations", default="5")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--compare", action="append", default=[], metavar="OPTIONS",
                    help="also compare with these options (e.g. '--model static'); repeatable")
    a = ap.parse_args()
    why = system.unavailable_reason()
    if why:
        print(f"testbed_seed000: {why}", file=sys.stderr)
        return 1
    auto = a.rate.startswith("auto:")
    rate = parse_rate(a.rate[5:] if auto else a.rate)
    itasca = load_fabric("itasca")
    it_host = float(itasca.link_capacity[itasca.link_src < itasca.n_hosts].max())
    name = "ac6"
    with tempfile.TemporaryDirectory(prefix="bench-seed000-") as tmp:
        os.environ["FABSCOPE_TESTBED_DIR"] = os.path.join(tmp, "state")
        st = up(name, a.fabric, None if auto else rate, max_rate=rate)
        try:
            f = st.base_fabric()
            host = float(f.link_capacity[f.link_src < f.n_hosts].max())
            k = host / it_host
            ranks = f.n_hosts * a.ppn
            print(f"{a.fabric}: {f.n_hosts} hosts x {a.ppn} ranks = {ranks} ranks, cables {st.rate * 8 / 1e6:g}Mbit "
                  f"({host / 1e6:.2f} MB/s of payload per host cable = {k:.2e} x Itasca's {it_host / 1e6:.0f}); "
                  f"load average {os.getloadavg()[0]:.1f}")
            out = os.path.join(tmp, "rp.jsonl")
            t0 = time.monotonic()
            if quiet(["measure", "--testbed", name, "--ppn", str(a.ppn), "--timeout", "1200", "random-pairs",
                      "--size", "1MiB", "--iterations", a.iterations, "--seed", a.seed, "--out", out]) != 0:
                raise SystemExit("measure failed")
            rec = (records(out) or [{}])[0]
            print(f"measured in {time.monotonic() - t0:.0f} s; {'link-bound' if rec.get('link_bound') else 'NOT link-bound'}"
                  f" ({rec.get('why')}); shapers dropped {rec.get('drops')} of {rec.get('packets')} packets; "
                  f"sending hosts' cables busy {rec.get('host_cables_busy')} of the job's time (median); "
                  f"CPUs {rec.get('cpu')}, load average {rec.get('loadavg', 0):.0f}")
            for extra in ("", *a.compare):
                res = os.path.join(tmp, "rp.json")
                if quiet(["compare", out, "--fabric", name, *extra.split(), "-o", res]) != 0:
                    raise SystemExit(f"compare {extra} failed")
                r = Result.read_json(res)
                if not extra:
                    print(f"host cables in the timed iterations, from the measured pairs: {cable_load(r, host)}")
                table(r, k, extra)
        finally:
            down(name)
    return 0


def cable_load(r: Result, cable: float) -> str:
    """How much of its cable's payload rate each host sent, summed over its ranks' pairs: a ping-pong
    end sends ``bytes x iterations`` in the pair's timed time, half its measured (two-way) figure.
    Near 1 when the cables set the pace (several ranks per host keep them busy); pairs of one
    host (loopback) are left out."""
    p = r.pairs
    out: dict[str, float] = {}
    for a, b, bw in zip(p["src_host"].tolist(), p["dst_host"].tolist(), np.asarray(p["measured"], float).tolist()):
        if a != b:
            for h in (a, b):
                out[h] = out.get(h, 0.0) + bw / 2
    x = np.array(list(out.values())) / cable
    return f"median {np.median(x):.2f} of the rate (range {x.min():.2f}-{x.max():.2f}, {len(x)} hosts)"


def table(r: Result, k: float, extra: str) -> None:
    """Per class: measured, modeled (``compare EXTRA``) and the seed's figures times ``k``."""
    print(f"compare {extra or '(default)'}: {model_line(r.meta)}")
    seed = ITASCA_RANDOM_PAIRS[(256, 8)]
    print(f"{'class':<12}{'pairs':>6}  {'measured max/avg/min':>24}  {'modeled avg':>11}  {'ratio':>5}  "
          f"{'seed 000 x scale max/avg/min':>30}   [MB/s]")
    meas = np.asarray(r.pairs["measured"], float)
    cls = np.asarray(r.pairs["cls"])
    for c in r.extra["compare"]["classes"]:
        pick = cls == r.class_labels.index(c["label"])
        sd = seed.get(c["label"])
        sd_txt = "/".join(f"{x * k:.2f}" for x in sd) if sd else "-"
        print(f"{c['label']:<12}{c['pairs']:>6}  {meas[pick].max() / 1e6:8.2f}/{meas[pick].mean() / 1e6:.2f}/"
              f"{meas[pick].min() / 1e6:.2f}  {c['modeled_avg'] / 1e6:11.2f}  {c['ratio']:5.2f}  {sd_txt:>30}")


if __name__ == "__main__":
    sys.exit(run())
