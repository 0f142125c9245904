"""A cable drifting slower night after night: when does ``history check`` flag it, and is it named?

    .venv/bin/python bench/bench_drift.py                                   # every fabric, 2 trials each
    .venv/bin/python bench/bench_drift.py --fabrics oversub --trials 1 --first-trial 5

Per fabric and trial, two histories are built night by night, as the nightly loop builds them
(``History.add`` with its diagnosis, then ``check`` of that night against its baselines):

* **drift**: ``--nights`` nights (60) of the plan's pairs (``make_plan``: what the documented loop
  measures each night); from night ``--start`` (30) one switch-to-switch cable, drawn by the trial's
  seed among the cables some planned pair sees at x0.8, runs at ``--rate`` ** (night - start + 1) of its
  capacity both ways (0.98: 2 % a night);
* **healthy**: ``--healthy`` nights (56) of the same pairs, no fault, noise of other seeds.

The nights are "measured" by bench/bench_faults.py's own flow model and noise (heavy-tailed per pair,
one pair in ten jittered, cold first iterations): nothing of ``fabscope.diagnose`` or ``fabscope.history``
makes a fault or a measurement.  Printed per trial: the night and the cable's factor when the first
alarm came, whether that alarm names the drifting cable, the alarms before the drift began, those naming
the cable again after the first and those naming anything else, and the healthy nights with an alarm;
then the CPU of an add and of a check.  ``--start 10 --rate 0.5 --nights 13 --healthy 0``: a step (the
cable at x0.5 from night 11, halved again each night), one alarm on its first night.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from bench_faults import FABRICS, TrueModel, capacities, draw_iterations, load, measured  # noqa: E402


def say(*a) -> None:
    print(*a, flush=True)


def draw_cable(f, tm: TrueModel, rng) -> int:
    """A switch-to-switch cable some planned pair sees by 5 % or more at x0.8 both ways."""
    base = tm.bandwidth(f.link_capacity.astype(float))
    crossed = np.unique(tm.links.link)
    sw = np.unique(crossed[(f.link_src[crossed] >= f.n_hosts) & (f.link_dst[crossed] >= f.n_hosts)] // 2)
    for c in rng.permutation(sw):
        if np.any(tm.bandwidth(capacities(f, {2 * int(c): 0.8, 2 * int(c) + 1: 0.8})) < 0.95 * base):
            return int(c)
    raise SystemExit("no cable that a planned pair sees")


def nights(f, tm, rnd, size, n: int, factor_of, seed: int, path: str) -> tuple[list, float, float]:
    """Build a history of ``n`` nights at ``path``; per night the check's alarms (what, cable) and the
    cable's factor that night; CPU of the adds and of the checks."""
    from fabscope.diagnose.synthetic import as_result
    from fabscope.history.check import check
    from fabscope.history.store import History

    out, t_add, t_check = [], 0.0, 0.0
    with History(path, create=True) as h:
        h.set_fabric(f)
        for i in range(n):
            rng = np.random.default_rng([seed, i, 41])
            faults = factor_of(i)
            bw = tm.bandwidth(capacities(f, faults))
            res = as_result(measured(f, tm, rnd, draw_iterations(bw, size, rng), f"night{i}"))
            c0 = time.process_time()
            rid = h.add(res, time=f"2026-{1 + i // 28:02d}-{i % 28 + 1:02d}T02:00Z")
            c1 = time.process_time()
            alarms = check(h, rid).alarms if i else []
            t_add += c1 - c0
            t_check += time.process_time() - c1
            out.append([(a.what, a.cable or a.name) for a in alarms])
    return out, t_add / n, t_check / max(n - 1, 1)


def main() -> int:
    from fabscope.diagnose.cables import cable_name
    from fabscope.diagnose.plan import make_plan
    from fabscope.routing import make_routing

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabrics", default="ft3,oversub,dragonfly,torus,itasca20")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--first-trial", type=int, default=0, help="the first trial's number (its seed)")
    ap.add_argument("--nights", type=int, default=60)
    ap.add_argument("--start", type=int, default=30, help="the first night of the drift (0-based)")
    ap.add_argument("--rate", type=float, default=0.98, help="the cable's factor a night")
    ap.add_argument("--healthy", type=int, default=56, help="healthy nights (0: none)")
    a = ap.parse_args()
    say(f"| fabric | trial | drifting cable | first alarm: night, factor | names it | alarms before the drift | "
        f"alarms naming it again | alarms naming another | healthy nights with an alarm (of {a.healthy}) | "
        f"CPU s: an add, a check |")
    say("|---|---:|---|---|---|---:|---:|---:|---:|---|")
    work = tempfile.mkdtemp(prefix="bench-drift-")
    for key in a.fabrics.split(","):
        if key not in FABRICS:
            raise SystemExit(f"--fabrics: no fabric {key!r} (one of {', '.join(FABRICS)})")
        f = load(key)
        router = make_routing(f, None)
        plan = make_plan(f, router)
        hs, hd, rnd = plan.pairs
        tm = TrueModel(f, router, hs, hd, rnd, plan.size)
        for t in range(a.first_trial, a.first_trial + a.trials):
            c = draw_cable(f, tm, np.random.default_rng([t, len(key), 43]))
            name = cable_name(f, c)
            x_of = lambda i: a.rate ** (i - a.start + 1) if i >= a.start else 1.0  # noqa: E731
            drift, t_add, t_check = nights(f, tm, rnd, plan.size, a.nights,
                                           lambda i: {2 * c: x_of(i), 2 * c + 1: x_of(i)} if i >= a.start else {},
                                           1000 * t + 1, os.path.join(work, f"{key}-{t}-drift.db"))
            first = next((i for i in range(a.start, a.nights) if drift[i]), None)
            before = sum(len(x) for x in drift[:a.start])
            other = sum(1 for x in drift[a.start:] for what, cab in x if cab != name)
            again = 0 if first is None else sum(1 for x in drift[first + 1:] for what, cab in x if cab == name)
            healthy = "-"
            if a.healthy:
                hn, _, _ = nights(f, tm, rnd, plan.size, a.healthy, lambda i: {}, 1000 * t + 2,
                                  os.path.join(work, f"{key}-{t}-healthy.db"))
                healthy = str(sum(1 for x in hn if x))
            when = f"{first + 1}, x{x_of(first):.3f}" if first is not None else "never"
            names = "-" if first is None else ("yes" if any(cab == name for _, cab in drift[first]) else
                                               f"no: {drift[first]}")
            say(f"| {key} | {t} | {name} | {when} | {names} | {before} | {again} | {other} | {healthy} | "
                f"{t_add:.2f}, {t_check:.2f} |")
    say(f"(nights counted from 1: the drift's first night is {a.start + 1}; the histories are in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
