"""Diagnosis under real noise, with an injector of its own; today's diagnoser beside it.

    .venv/bin/python bench/bench_noise.py                       # 4 fabrics, every setting, 3 trials
    .venv/bin/python bench/bench_noise.py --trials 10 --fabrics ft3,oversub --settings heavy-3x0.25
    .venv/bin/python bench/bench_noise.py --no-today            # without the landed diagnoser's run

The injector is this file's own: faults are drawn (a seeded generator per
setting and trial, before anything is diagnosed) among the cables the plan's
pairs cross; the pairs (``make_plan``, budget 10 min, 1 MiB x 20
iterations) get the flow model's bandwidth with the faults in place
(``PairModel.bandwidth``); then every pair's 20 iterations are drawn:

* ``gauss``: a per-pair factor, lognormal 5 %, times a per-iteration one, 2 %;
* ``heavy``: per pair 1.5 % and per iteration 2 % (most pairs within 3 %),
  and one pair in ten hit by jitter: its mean cut to 30-70 % of its value,
  the lost time spread over a burst of 1 to 20 consecutive iterations (so
  the median iteration is hit too when the burst covers more than half).

The diagnoser sees the mean, best, median and worst iteration of each pair
(what fabscope-bench now writes); ``today`` is the landed diagnoser
(/work/main/src, run in a subprocess on the same trials), which sees the
mean only.  With ``--confirm`` (default on), a diagnosis that names
suspects is followed by the confirmation round (``confirm.confirm_pairs``),
drawn by the same injector with fresh noise, and both are diagnosed together.

A suspect is right if its cable, or a cable tied with it, is a fault.  The
calibration table puts every suspect and every candidate left below the
penalty (``extra["candidates"]``) in bins of confidence and counts how
often they were right.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

FABRICS = {
    "ft3": ("fat-tree:k=4,levels=3", "minhop"),          # 3-level fat tree, 64 hosts, min-hop
    "ft3-216": ("fat-tree:k=6,levels=3", "minhop"),      # the same, 216 hosts (slower; not in the default run)
    "oversub": ("fat-tree:k=8,levels=2,up=2", None),     # 64 hosts, leaves 4:1 oversubscribed, D-mod-K
    "dragonfly": ("dragonfly:a=4,p=2,h=2,g=9", "minhop"),  # 72 hosts, min-hop tables
    "torus": ("torus:6x6x4", None),                      # 144 hosts, DOR
}
#: name -> (noise, inner cables, host cables, factor)
SETTINGS = {
    "heavy-none": ("heavy", 0, 0, 1.0),
    "heavy-3x0.25": ("heavy", 3, 0, 0.25),
    "heavy-host0.25": ("heavy", 0, 1, 0.25),
    "heavy-2x0.5": ("heavy", 2, 0, 0.5),
    "heavy-1x0.8": ("heavy", 1, 0, 0.8),
    "gauss-none": ("gauss", 0, 0, 1.0),
    "gauss-3x0.25": ("gauss", 3, 0, 0.25),
    "gauss-2x0.5": ("gauss", 2, 0, 0.5),
    "gauss-1x0.8": ("gauss", 1, 0, 0.8),
}
ITERATIONS = 20


def say(*a) -> None:
    print(*a, flush=True)


# ---- the injector (this file's own) ------------------------------------------------
def draw_faults(f, covered: np.ndarray, n_inner: int, n_host: int, factor: float, seed: int) -> dict[int, float]:
    rng = np.random.default_rng([seed, 24])
    host_c = covered[(f.link_src[2 * covered] < f.n_hosts) | (f.link_dst[2 * covered] < f.n_hosts)]
    inner_c = np.setdiff1d(covered, host_c)
    out = {int(c): factor for c in rng.choice(inner_c, n_inner, replace=False)} if n_inner else {}
    if n_host:
        out.update({int(c): factor for c in rng.choice(host_c, n_host, replace=False)})
    return out


def draw_iterations(bw_true: np.ndarray, nbytes: np.ndarray, kind: str, seed: int) -> np.ndarray:
    """Seconds of each pair's timed iterations: pairs x ITERATIONS."""
    rng = np.random.default_rng([seed, 77])
    n = len(bw_true)
    tau = 2.0 * nbytes / bw_true
    pair_sd, it_sd = (0.05, 0.02) if kind == "gauss" else (0.015, 0.02)
    T = tau[:, None] * np.exp(rng.normal(0, pair_sd, (n, 1)) + rng.normal(0, it_sd, (n, ITERATIONS)))
    if kind == "heavy":
        hit = np.flatnonzero(rng.random(n) < 0.1)
        cut = rng.uniform(0.3, 0.7, len(hit))
        length = rng.integers(1, ITERATIONS + 1, len(hit))
        start = rng.integers(0, ITERATIONS - length + 1)
        for p, c, k, s0 in zip(hit, cut, length, start):
            extra = T[p].sum() * (1 / c - 1)
            T[p, s0:s0 + k] += extra / k
    return T


def measured_from(f, pm, T: np.ndarray, with_iterations: bool, source: str):
    from fabscope.diagnose.measured import Measured

    n = pm.n_pairs
    per = T.sum(axis=1) / ITERATIONS
    bw = 2.0 * pm.bytes / per
    sc = np.unique(pm.scenario)
    args = [f, np.arange(n), np.arange(n), pm.hs, pm.hd, pm.bytes, bw, per, np.searchsorted(sc, pm.scenario),
            pm.pingpong, np.full(n, "random-pairs"), (source,), tuple((source, "random-pairs", int(s)) for s in sc)]
    if with_iterations:
        return Measured(*args, iter_min=T.min(axis=1), iter_median=np.median(T, axis=1), iter_max=T.max(axis=1))
    return Measured(*args)


class Setup:
    """A fabric, its routing, the plan's pairs and their flow model."""

    def __init__(self, key: str) -> None:
        from fabscope.diagnose.pairmodel import PairModel
        from fabscope.diagnose.plan import make_plan
        from fabscope.fabric.io import load_fabric
        from fabscope.routing import make_routing

        spec, routing = FABRICS[key]
        self.key, self.spec = key, spec
        self.f = load_fabric(spec)
        self.router = make_routing(self.f, routing)
        plan = make_plan(self.f, self.router, budget=600)
        hs, hd, r = plan.pairs
        self.pm = PairModel(self.f, hs, hd, r, bytes=np.full(len(hs), float(plan.size)), routing=self.router)
        cov = np.zeros(self.f.n_links // 2, bool)
        cov[self.pm.routes.link // 2] = True
        self.covered = np.flatnonzero(cov)
        self.size = plan.size

    def trial(self, setting: str, t: int):
        kind, n_in, n_h, fac = SETTINGS[setting]
        seed = hash_seed(self.key, setting, t)
        faults = draw_faults(self.f, self.covered, n_in, n_h, fac, seed)
        cap = self.f.link_capacity.copy()
        for c, x in faults.items():
            cap[[2 * c, 2 * c + 1]] *= x
        T = draw_iterations(self.pm.bandwidth(cap), self.pm.bytes, kind, seed)
        return faults, cap, T, kind, seed


def hash_seed(*parts) -> int:
    import zlib

    return zlib.crc32("/".join(map(str, parts)).encode())


# ---- today's diagnoser, in a subprocess on the landed code -------------------------
def today_child(fabrics: list[str], settings: list[str], trials: int) -> None:
    from fabscope.diagnose.tomography import diagnose

    for key in fabrics:
        st = Setup(key)
        for setting in settings:
            for t in range(trials):
                faults, cap, T, kind, seed = st.trial(setting, t)
                m = measured_from(st.f, st.pm, T, False, "today")
                t0 = time.perf_counter()
                d = diagnose(m, st.router)
                sec = time.perf_counter() - t0
                print(json.dumps({"fabric": key, "setting": setting, "trial": t, "seconds": sec,
                                  "suspects": [[s["cable"]] + s["tied"] for s in d.suspects]}), flush=True)


def run_today(fabrics, settings, trials, main_src: str) -> dict:
    env = dict(os.environ, PYTHONPATH=main_src)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--fabrics", ",".join(fabrics), "--settings",
           ",".join(settings), "--trials", str(trials)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        d = json.loads(line)
        res[(d["fabric"], d["setting"], d["trial"])] = d
    return res


# ---- scoring --------------------------------------------------------------------------
def score(f, groups: list[list[str]], faults: dict[int, float]) -> tuple[int, int, int]:
    """(right suspects, false suspects, faults found)."""
    from fabscope.diagnose.tomography import cable_name

    truth = {cable_name(f, c) for c in faults}
    right = sum(1 for g in groups if set(g) & truth)
    found = len(truth & {x for g in groups for x in g})
    return right, len(groups) - right, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabrics", default="ft3,oversub,dragonfly,torus")
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--trials", type=int, default=3, help="trials per setting (the figures in docs/diagnose.md: 30)")
    ap.add_argument("--no-today", action="store_true", help="do not run the landed diagnoser beside")
    ap.add_argument("--no-confirm", action="store_true", help="no confirmation round")
    ap.add_argument("--main-src", default="/work/main/src", help="the landed code (today's diagnoser)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    fabrics, settings = a.fabrics.split(","), a.settings.split(",")
    if a.child:
        today_child(fabrics, settings, a.trials)
        return
    from fabscope.diagnose.confirm import confirm_pairs, pack_rounds
    from fabscope.diagnose.measured import concat
    from fabscope.diagnose.pairmodel import PairModel
    from fabscope.diagnose.tomography import diagnose

    today = {}
    if not a.no_today:
        t0 = time.perf_counter()
        today = run_today(fabrics, settings, a.trials, a.main_src)
        say(f"today's diagnoser ({a.main_src}) on the same trials: {time.perf_counter() - t0:.0f} s")
    calib = []          # (confidence, right)
    say(f"{'fabric':<10} {'setting':<15} {'n':>3} | {'prec':>5} {'false':>6} {'recall':>6} {'s/trial':>7} | "
        f"{'prec':>5} {'false':>6} {'recall':>6} {'s/trial':>7} | {'prec':>5} {'false':>6} {'recall':>6} "
        f"{'s/trial':>7} | {'seen@0.8':>8}")
    say(f"{'':<10} {'':<15} {'':>3} | {'today (mean figure)':^29} | {'new, one run':^29} | "
        f"{'new, after confirmation':^29} |")
    for key in fabrics:
        st = Setup(key)
        f = st.f
        for setting in settings:
            acc = {k: np.zeros(5) for k in ("today", "one", "conf")}   # right, false, found, faults, false-trials
            secs = {k: 0.0 for k in acc}
            seen08 = []
            for t in range(a.trials):
                faults, cap, T, kind, seed = st.trial(setting, t)
                m = measured_from(f, st.pm, T, True, "run")
                t0 = time.perf_counter()
                d = diagnose(m, st.router)
                secs["one"] += time.perf_counter() - t0
                groups = [[s["cable"]] + s["tied"] for s in d.suspects]
                seen08.append(d.meta["detectable"]["share_seen"][3])
                r1 = score(f, groups, faults)
                acc["one"] += [r1[0], r1[1], r1[2], len(faults), r1[1] > 0]
                final, t_conf = d, 0.0
                if d.suspects and not a.no_confirm:
                    t0 = time.perf_counter()
                    measured_pairs = {(min(x, y), max(x, y)) for x, y in zip(st.pm.hs.tolist(), st.pm.hd.tolist())}
                    cp = confirm_pairs(f, d.suspects, measured_pairs, st.router, seed=seed)
                    rounds = pack_rounds(cp)
                    hs = np.array([cp[i][0] for r in rounds for i in r])
                    hd = np.array([cp[i][1] for r in rounds for i in r])
                    sc = np.array([k for k, r in enumerate(rounds) for _ in r])
                    pm2 = PairModel(f, hs, hd, sc, bytes=np.full(len(hs), float(st.size)), routing=st.router)
                    T2 = draw_iterations(pm2.bandwidth(cap), pm2.bytes, kind, seed + 1)
                    both = concat([m, measured_from(f, pm2, T2, True, "confirm")])
                    t_conf = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    final = diagnose(both, st.router)
                    t_conf += time.perf_counter() - t0
                secs["conf"] += secs_one(secs, t_conf, d)
                groups = [[s["cable"]] + s["tied"] for s in final.suspects]
                r2 = score(f, groups, faults)
                acc["conf"] += [r2[0], r2[1], r2[2], len(faults), r2[1] > 0]
                for s in final.suspects:
                    calib.append((s["confidence"], score(f, [[s["cable"]] + s["tied"]], faults)[0]))
                for c in final.meta.get("candidates", []):
                    calib.append((c["confidence"], score(f, [[c["cable"]] + c["tied"]], faults)[0]))
                if today:
                    td = today[(key, setting, t)]
                    r0 = score(f, td["suspects"], faults)
                    acc["today"] += [r0[0], r0[1], r0[2], len(faults), r0[1] > 0]
                    secs["today"] += td["seconds"]
            cols = []
            for k in ("today", "one", "conf"):
                right, false, found, nf, ft = acc[k]
                if k == "today" and not today:
                    cols.append(f"{'-':>5} {'-':>6} {'-':>6} {'-':>7}")
                    continue
                prec = f"{right / (right + false):5.2f}" if right + false else f"{'-':>5}"
                rec = f"{found / nf:6.2f}" if nf else f"{'-':>6}"
                cols.append(f"{prec} {int(ft):>3}/{a.trials:<2} {rec} {secs[k] / a.trials:7.2f}")
            say(f"{key:<10} {setting:<15} {a.trials:>3} | " + " | ".join(cols) + f" | {np.mean(seen08):8.2f}")
    say("\ncalibration (suspects and the candidates left below the penalty, after confirmation):")
    say(f"{'confidence':>14} {'n':>5} {'right':>6} {'fraction right':>15}")
    c = np.array(calib) if calib else np.zeros((0, 2))
    for lo, hi in ((0.0, 0.5), (0.5, 0.9), (0.9, 0.99), (0.99, 0.999), (0.999, 1.0001)):
        sel = (c[:, 0] >= lo) & (c[:, 0] < hi) if len(c) else np.zeros(0, bool)
        n = int(sel.sum())
        say(f"{lo:>6.3f}-{min(hi, 1):<6.3f} {n:>5} {int(c[sel, 1].sum()) if n else 0:>6} "
            f"{(c[sel, 1].mean() if n else float('nan')):>15.3f}")


def secs_one(secs, t_conf: float, d) -> float:
    """Seconds of the diagnosis after confirmation: the first diagnosis plus the joint one."""
    return d.seconds + t_conf


if __name__ == "__main__":
    main()
