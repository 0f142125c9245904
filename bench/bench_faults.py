"""Diagnosis of the faults real fabrics have, with an injector and noise of this file's own.

    .venv/bin/python bench/bench_faults.py --trials 30                     # every fabric and setting
    .venv/bin/python bench/bench_faults.py --trials 3 --fabrics ft3,torus --settings oneway,host

Kept apart from the diagnoser: the faults are drawn here and the "measured" pairs are made here, by
this file's own flow model (routes from ``fabscope.routing``, max-min rates from
``fabscope.model.maxmin`` over one row per directed link and round, a ping-pong's time the sum of
its two ways); nothing of ``fabscope.diagnose`` makes a fault or a measurement.  The diagnoser gets
only what fabscope-bench writes (each pair's mean, best, median and worst iteration), through
``fabscope.diagnose.measured.Measured``, and its own plan's pairs (``make_plan``: the documented
loop measures those).

Noise, per pair and iteration (20 timed iterations): a per-pair Student-t factor (3 degrees of
freedom, scale 1.5 %), 2 % per iteration, the first 2 iterations 1.3-2x slower (cold start), and one
pair in ten jittered (its mean cut to 30-80 %, the lost time over a burst of 1-20 iterations).

Settings (faults drawn per trial among the links or hosts some planned pair crosses, and whose
injection moves some pair of the true model by 5 % or more; the rest cannot be seen):

* ``oneway``: one direction of one switch-to-switch cable at x0.5;
* ``host``: one host's cable at x0.6 both ways (a slow host);
* ``two``, ``three``: that many faults at once, each a one-way link or a slow host (x0.5 / x0.6);
* ``mild``: one fault, a one-way link or a slow host, at a factor drawn from x0.85-0.97 and seen by
  some pair by 2 % or more (at this noise, faults at x0.75-0.9 bring 40 nats and more, all named at a
  confidence of 1; these span the evidence from certain to lost in the noise, the middle of the
  confidence scale);
* ``none``: healthy.

A suspect is right if it names a faulty link (a one-way fault: its direction, or the cable both
ways) or a slow host.  With the confirmation round (``--no-confirm`` skips it): new pairs from
``confirm_pairs`` on the diagnosis, measured by this injector with fresh noise, diagnosed together
and held to the round's rules (``settle``); it counts the true suspects dropped and the suspects
added.  The confidence table puts every suspect and candidate after the round in bins, with each
bin's mean confidence beside its fraction right; ``--records FILE`` writes one line per suspect and
candidate (fabric, setting, trial, evidence, the null's Gumbel location and scale, confidence, right,
suspect or candidate, right with its tied cables, how many cables its tie holds) for
``bench/confidence_fit.py``: a cable tied to others (crossed by the same pairs) is named with them, and its
``confidence`` is the chance that one of them is degraded (``confidence_each``, the named one's alone).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from scipy.sparse import csr_matrix

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

FABRICS = {
    "ft3": "fat-tree:k=6,levels=3",              # 3-level fat tree, 216 hosts
    "oversub": "fat-tree:k=12,levels=2,up=3",    # 144 hosts, leaves 3:1 oversubscribed
    "dragonfly": "dragonfly:a=4,p=2,h=2,g=9",    # 72 hosts
    "torus": "torus:6x6x4",                      # 144 hosts, DOR
    "itasca20": "itasca:leaves=20",              # Itasca's design, 20 leaves (320 hosts)
    "itasca": "itasca",                          # Itasca, 1,072 hosts (19-24 CPU s a trial)
}
SETTINGS = {"oneway": (1, 0), "host": (0, 1), "two": (2, None), "three": (3, None), "mild": (1, None),
            "none": (0, 0)}
#: factors of a one-way link fault and of a slow host; ``mild``: drawn per fault from this range
FACTORS = {"link": 0.5, "host": 0.6}
MILD = (0.85, 0.97)
#: a fault is drawn only where some planned pair sees it by this much (the rest cannot be seen); mild: 2 %
SEEN, SEEN_MILD = 0.95, 0.98
ITER = 20
ALPHA = 1.5e-6            # a way's software overhead (s)
BINS = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999, 1.0000001]


def say(*a) -> None:
    print(*a, flush=True)


# ---- this file's own flow model and injector ---------------------------------------------------
class TrueModel:
    """Pairs (ping-pong) in rounds on a fabric: their bandwidth under given link capacities."""

    def __init__(self, f, router, hs, hd, rnd, nbytes: float) -> None:
        self.f, self.hs, self.hd = f, np.asarray(hs), np.asarray(hd)
        n = len(self.hs)
        src, dst = np.r_[self.hs, self.hd], np.r_[self.hd, self.hs]
        self.pair = np.r_[np.arange(n), np.arange(n)]
        r = router.routes(src, dst)
        rows = np.asarray(r.link, np.int64) + np.asarray(rnd)[self.pair[r.flow]] * f.n_links
        used, row = np.unique(rows, return_inverse=True)
        self.A = csr_matrix((r.weight, (row, r.flow)), shape=(len(used), 2 * n))
        self.kind = used % f.n_links
        self.bytes = float(nbytes)
        self.links = r

    def bandwidth(self, cap: np.ndarray) -> np.ndarray:
        from fabscope.model.maxmin import maxmin

        rate = maxmin(self.A, cap[self.kind], np.full(self.A.shape[1], np.inf))
        t = ALPHA + self.bytes / rate
        return 2 * self.bytes / np.bincount(self.pair, weights=t, minlength=len(self.hs))


def capacities(f, faults: dict[int, float]) -> np.ndarray:
    cap = f.link_capacity.astype(float).copy()
    for link, x in faults.items():
        cap[link] *= x
    return cap


def draw_faults(f, tm: TrueModel, n_link: int, n_host: int | None, rng, mild: bool = False) -> dict[int, float]:
    """{directed link: factor}; a slow host is both ways of its cable.  ``n_host`` None: each fault a
    one-way link or a host, at random; ``mild``: each at a factor drawn from :data:`MILD`."""
    base = tm.bandwidth(f.link_capacity.astype(float))
    crossed = np.unique(tm.links.link)
    sw = crossed[(f.link_src[crossed] >= f.n_hosts) & (f.link_dst[crossed] >= f.n_hosts)]
    hosts = np.unique(np.r_[tm.hs, tm.hd])
    out: dict[int, float] = {}
    kinds = (["link"] * n_link + ["host"] * n_host) if n_host is not None else \
        rng.choice(["link", "host"], n_link).tolist()
    for k in kinds:
        for _ in range(200):
            x = float(rng.uniform(*MILD)) if mild else FACTORS[k]
            if k == "link":
                link = int(rng.choice(sw))
                trial = {link: x}
            else:
                h = int(rng.choice(hosts))
                inj = int(np.flatnonzero(f.link_src == h)[0])
                trial = {inj: x, inj ^ 1: x}
            if any(x // 2 in {y // 2 for y in out} for x in trial):
                continue
            bw = tm.bandwidth(capacities(f, trial))
            if np.any(bw < (SEEN_MILD if mild else SEEN) * base):       # some pair sees it
                out.update(trial)
                break
    return out


def draw_iterations(bw: np.ndarray, nbytes: float, rng) -> np.ndarray:
    """Seconds of each pair's timed iterations (pairs x ITER): module docstring."""
    n = len(bw)
    tau = 2.0 * nbytes / bw
    T = tau[:, None] * np.exp(0.015 * rng.standard_t(3, (n, 1)) + rng.normal(0, 0.02, (n, ITER)))
    T[:, :2] *= rng.uniform(1.3, 2.0, (n, 2))
    hit = np.flatnonzero(rng.random(n) < 0.1)
    for p in hit:
        k = int(rng.integers(1, ITER + 1))
        s0 = int(rng.integers(0, ITER - k + 1))
        T[p, s0:s0 + k] += T[p].sum() * (1 / rng.uniform(0.3, 0.8) - 1) / k
    return T


def measured(f, tm: TrueModel, rnd, T: np.ndarray, source: str):
    from fabscope.diagnose.measured import Measured

    n = len(tm.hs)
    mean = T.mean(axis=1)
    nb = np.full(n, tm.bytes)
    sc = np.unique(rnd)
    return Measured(f, np.arange(n), np.arange(n), tm.hs, tm.hd, nb, 2 * nb / mean, mean, np.searchsorted(sc, rnd),
                    np.ones(n, bool), np.full(n, "random-pairs"), (source,),
                    tuple((source, "random-pairs", int(s)) for s in sc), np.full(n, ITER), np.full(n, 2),
                    T.min(axis=1), np.median(T, axis=1), T.max(axis=1))


# ---- scoring -----------------------------------------------------------------------------------
def right(f, s: dict, faults: dict[int, float]) -> bool:
    links = set(s.get("links") or [s["link"]])
    if s.get("direction") == "both":          # a candidate names its cable by one link: it means both
        links |= {x ^ 1 for x in links}
    if s.get("host"):
        return bool(links & set(faults)) or any(f.node_names[f.link_src[x]] == s["host"] for x in faults)
    return bool(links & set(faults))


def right_tied(f, s: dict, faults: dict[int, float], cable_of: dict[str, int]) -> bool:
    """Whether ``s`` or a cable tied to it (crossed by the same pairs: ``s["tied"]``, which the pairs cannot
    tell from it) is degraded: what its ``confidence`` is the chance of (``confidence_each`` is the named
    cable's alone)."""
    return right(f, s, faults) or any({2 * c, 2 * c + 1} & set(faults) for c in map(cable_of.get, s.get("tied") or [])
                                      if c is not None)


def fault_units(f, faults: dict[int, float]) -> list[set[int]]:
    """Each fault as the set of links naming it: a one-way link; a host's two directions."""
    seen, out = set(), []
    for link in faults:
        if link in seen:
            continue
        both = {link, link ^ 1} if link ^ 1 in faults else {link}
        seen |= both
        out.append(both)
    return out


def load(key: str):
    from fabscope.fabric.generators import itasca
    from fabscope.fabric.io import load_fabric

    spec = FABRICS[key]
    if spec.startswith("itasca"):
        return itasca(leaves=int(spec.split("=")[1])) if "=" in spec else itasca()
    return load_fabric(spec)


def main() -> None:
    from fabscope.diagnose.cables import cable_name
    from fabscope.diagnose.confirm import confirm_pairs, pack_rounds
    from fabscope.diagnose.measured import concat
    from fabscope.diagnose.plan import make_plan
    from fabscope.diagnose.settle import settle
    from fabscope.diagnose.tomography import diagnose
    from fabscope.routing import make_routing

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabrics", default="ft3,oversub,dragonfly,torus,itasca20")
    ap.add_argument("--settings", default="oneway,host,two,three,mild,none")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--first-trial", type=int, default=0, help="the first trial's number (its seed)")
    ap.add_argument("--no-confirm", action="store_true")
    ap.add_argument("--records", help="write each suspect and candidate after the round to this file")
    args = ap.parse_args()
    bins = np.zeros((len(BINS) - 1, 3))
    records = open(args.records, "w", buffering=1) if args.records else None
    say("| fabric | setting | trials | recall | precision | trials with a false suspect | confirmed: recall | "
        "confirmed: precision | confirmed: false | true dropped | added | CPU s / wall s per trial |")
    say("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in args.fabrics.split(","):
        f = load(key)
        cable_of = {cable_name(f, c): c for c in range(f.n_links // 2)}      # the diagnosis's names of cables
        router = make_routing(f, None)
        plan = make_plan(f, router)
        hs, hd, rnd = plan.pairs
        tm = TrueModel(f, router, hs, hd, rnd, plan.size)
        for setting in args.settings.split(","):
            n_link, n_host = SETTINGS[setting]
            tot = {k: 0 for k in ("faults", "found", "sus", "right", "false", "c_found", "c_sus", "c_right",
                                  "c_false", "dropped", "added")}
            cpu, wall = 0.0, 0.0
            for t in range(args.first_trial, args.first_trial + args.trials):
                # (a stream of its own for mild: its name is as long as "none"'s and "host"'s)
                rng = np.random.default_rng([t, len(key), len(setting), 37] + ([1] if setting == "mild" else []))
                faults = draw_faults(f, tm, n_link, n_host, rng, mild=setting == "mild")
                bw = tm.bandwidth(capacities(f, faults))
                m = measured(f, tm, rnd, draw_iterations(bw, plan.size, rng), "run")
                c0, w0 = time.process_time(), time.perf_counter()
                d = diagnose(m, router)
                units = fault_units(f, faults)
                ok = [right(f, s, faults) for s in d.suspects]
                tot["faults"] += len(units)
                tot["found"] += sum(any(right(f, s, {x: 1 for x in u}) for s in d.suspects) for u in units)
                tot["sus"] += len(ok)
                tot["right"] += sum(ok)
                tot["false"] += int(not all(ok))
                after = d.suspects
                null_of = {id(s): d.meta["null"] for s in d.suspects}
                if d.suspects and not args.no_confirm:
                    measured_set = {(min(a, b), max(a, b)) for a, b in zip(hs.tolist(), hd.tolist())}
                    cp = confirm_pairs(f, d.suspects, measured_set, router, seed=t)
                    rounds = pack_rounds(cp)
                    h2 = np.array([cp[i][0] for r in rounds for i in r])
                    d2 = np.array([cp[i][1] for r in rounds for i in r])
                    r2 = np.array([k for k, r in enumerate(rounds) for _ in r])
                    tm2 = TrueModel(f, router, h2, d2, r2, plan.size)
                    m2 = measured(f, tm2, r2, draw_iterations(tm2.bandwidth(capacities(f, faults)), plan.size, rng),
                                  "confirm")
                    joint = diagnose(concat([m, m2]), router)
                    before = {s["cable"] for s in d.suspects}
                    settle(joint, d.suspects, 0)
                    after = joint.suspects
                    cands = joint.meta.get("candidates", [])
                    # a suspect kept from the first diagnosis has that diagnosis's confidence
                    null_of = {id(s): d.meta["null"] if s.get("kept") else joint.meta["null"] for s in after}
                    null_of.update({id(s): joint.meta["null"] for s in cands})
                    tot["dropped"] += sum(1 for s in d.suspects if right(f, s, faults)
                                          and s["cable"] not in {x["cable"] for x in after})
                    tot["added"] += sum(1 for s in after if s["cable"] not in before)
                else:
                    cands = d.meta.get("candidates", [])
                    null_of.update({id(s): d.meta["null"] for s in cands})
                cpu += time.process_time() - c0
                wall += time.perf_counter() - w0
                ok2 = [right(f, s, faults) for s in after]
                tot["c_found"] += sum(any(right(f, s, {x: 1 for x in u}) for s in after) for u in units)
                tot["c_sus"] += len(ok2)
                tot["c_right"] += sum(ok2)
                tot["c_false"] += int(not all(ok2))
                for s in list(after) + list(cands):
                    i = int(np.searchsorted(BINS, float(s["confidence"]), side="right") - 1)
                    links = set(s.get("links") or [s["link"]])
                    good = right(f, {**s, "links": sorted(links)}, faults)
                    good_tied = right_tied(f, {**s, "links": sorted(links)}, faults, cable_of)
                    bins[min(i, len(bins) - 1)] += (1, int(good), float(s["confidence"]))
                    if records:
                        nl = null_of[id(s)]
                        records.write(f"{key} {setting} {t} {s['evidence']} {nl['gumbel_loc']} {nl['gumbel_scale']} "
                                      f"{s['confidence']} {int(good)} {'candidate' if s in cands else 'suspect'} "
                                      f"{int(good_tied)} {1 + len(s.get('tied') or [])}\n")
            fr = lambda a, b: f"{a / b:.2f}" if b else "-"  # noqa: E731
            n = max(args.trials, 1)
            say(f"| {key} | {setting} | {args.trials} | {fr(tot['found'], tot['faults'])} | "
                f"{fr(tot['right'], tot['sus'])} | {tot['false']}/{args.trials} | {fr(tot['c_found'], tot['faults'])} | "
                f"{fr(tot['c_right'], tot['c_sus'])} | {tot['c_false']}/{args.trials} | {tot['dropped']} | "
                f"{tot['added']} | {cpu / n:.1f} / {wall / n:.1f} |")
    say("\n| confidence | suspects and candidates | right | mean confidence | fraction right |\n|---|---:|---:|---:|---:|")
    for (lo, hi), (k, r, c) in zip(zip(BINS[:-1], BINS[1:]), bins):
        say(f"| {lo:g} - {min(hi, 1):g} | {k:.0f} | {r:.0f} | {c / k:.3f} | {r / k:.3f} |" if k else
            f"| {lo:g} - {min(hi, 1):g} | 0 | - | - | - |")
    if records:
        records.close()


if __name__ == "__main__":
    main()
