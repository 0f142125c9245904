"""Fit the diagnosis's confidence on the fault bench's trials of some fabrics; check it on others.

    .venv/bin/python bench/bench_faults.py --trials 30 --fabrics oversub,dragonfly --records fit.txt
    .venv/bin/python bench/bench_faults.py --trials 30 --fabrics ft3,torus --records check.txt
    .venv/bin/python bench/confidence_fit.py fit.txt check.txt --fit oversub,dragonfly
    .venv/bin/python bench/confidence_fit.py fit.txt check.txt --fit oversub --with-scale   # tried, not used

Each record is one suspect or candidate after the confirmation round (``bench_faults.py --records``):
its evidence g (nats), the Gumbel location and scale of the null calibration of the diagnosis that
named it, the confidence it was given, and whether it is right.  The score is the evidence in the
null's units, z = (g - loc) / scale; the fit is a logistic P(right) = 1 / (1 + exp(-(a + b z))) by
maximum likelihood on the ``--fit`` fabrics' records (the constants
:data:`fabscope.diagnose.confidence.LOGIT` holds).  Printed: a and b, and for the fitting fabrics and
for the others apart, a table by bin of the Bayes form the fit replaced (1 / (1 + 100 exp(-z) /
scale)), of the fitted logistic and of the confidence the diagnosis gave (its record): count, mean
confidence, fraction right.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.optimize import minimize

BINS = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999, 1.0000001]


def read(paths: list[str]) -> dict[str, np.ndarray]:
    rows = [(p, line.split()) for p in paths for line in open(p) if line.strip()]
    return {"fabric": np.array([r[0] for _, r in rows]), "setting": np.array([r[1] for _, r in rows]),
            "trial": np.array([f"{p}:{r[0]}:{r[1]}:{r[2]}" for p, r in rows]),     # a trial: file, fabric, setting, number
            "g": np.array([float(r[3]) for _, r in rows]), "loc": np.array([float(r[4]) for _, r in rows]),
            "scale": np.array([float(r[5]) for _, r in rows]), "conf": np.array([float(r[6]) for _, r in rows]),
            "right": np.array([int(r[7]) for _, r in rows]), "kind": np.array([r[8] for _, r in rows])}


def fit_logit(z: np.ndarray, y: np.ndarray, *more: np.ndarray) -> tuple[float, ...]:
    """(a, b, ...) of P(right) = 1 / (1 + exp(-(a + b z + c more[0] ...))) by maximum likelihood (the
    negative log-likelihood is convex: BFGS with its gradient).

    >>> z = np.r_[np.zeros(50), np.full(50, 4.0)]
    >>> y = np.r_[np.zeros(45), np.ones(5), np.zeros(5), np.ones(45)]     # 10% right at 0, 90% at 4
    >>> [round(x, 3) for x in fit_logit(z, y)]
    [-2.197, 1.099]
    """
    X = np.c_[np.ones_like(z), z, *more]

    def nll(p):
        t = X @ p
        return float(np.sum(np.logaddexp(0.0, t) - y * t)), X.T @ (0.5 * (1.0 + np.tanh(0.5 * t)) - y)
    p0 = np.zeros(X.shape[1])
    res = minimize(nll, p0, jac=True, method="BFGS", options={"gtol": 1e-9, "maxiter": 10000})
    return tuple(float(x) for x in res.x)


def mix(r: dict[str, np.ndarray], m: np.ndarray) -> str:
    """The trials behind the records ``m``, by setting: the prior the confidence is calibrated to."""
    trials = {}
    for t, st in zip(r["trial"][m], r["setting"][m]):
        trials.setdefault(st, set()).add(t)
    return ", ".join(f"{k} {len(v)}" for k, v in sorted(trials.items()))


def noise_candidates(r: dict[str, np.ndarray], m: np.ndarray) -> str:
    """Candidates at a confidence of 0.1 or more per trial, in trials whose diagnosis named a suspect and in
    those that named none, and how many of them were right: where the middle's records come from."""
    named = set(r["trial"][m & (r["kind"] == "suspect")])
    trials = set(r["trial"][m])
    out = []
    for label, inside in (("naming a suspect", True), ("naming none", False)):
        ts = {t for t in trials if (t in named) == inside}
        c = m & (r["kind"] == "candidate") & (r["conf"] >= 0.1) & np.isin(r["trial"], list(ts))
        out.append(f"{label}: {len(ts)} trials, {c.sum()} candidates ({c.sum() / max(len(ts), 1):.3f} a trial), "
                   f"{r['right'][c].sum()} right")
    return "; ".join(out)


def wilson(k: int, n: int, zq: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of a fraction right of k in n: where the bin's true fraction may lie.

    >>> [round(x, 3) for x in wilson(9, 37)]
    [0.134, 0.401]
    """
    p, d = k / n, 1.0 + zq * zq / n
    mid, half = (p + zq * zq / (2 * n)) / d, zq * math.sqrt(p * (1 - p) / n + zq * zq / (4 * n * n)) / d
    return max(0.0, float(mid - half)), min(1.0, float(mid + half))


def table(conf: np.ndarray, right: np.ndarray) -> list[str]:
    out = ["| confidence | n | mean confidence | fraction right | its 95% interval | off by |",
           "|---|---:|---:|---:|---|---:|"]
    i = np.clip(np.searchsorted(BINS, conf, side="right") - 1, 0, len(BINS) - 2)
    for k, (lo, hi) in enumerate(zip(BINS[:-1], BINS[1:])):
        m = i == k
        if not m.any():
            out.append(f"| {lo:g} - {min(hi, 1):g} | 0 | - | - | - | - |")
            continue
        mc, fr = conf[m].mean(), right[m].mean()
        w = wilson(int(right[m].sum()), int(m.sum()))
        out.append(f"| {lo:g} - {min(hi, 1):g} | {m.sum()} | {mc:.3f} | {fr:.3f} | {w[0]:.3f} - {w[1]:.3f} "
                   f"| {fr - mc:+.3f} |")
    m = (conf >= 0.1) & (conf < 0.9)        # the middle, which few suspects reach: its bins together
    if m.any():
        mc, fr = conf[m].mean(), right[m].mean()
        w = wilson(int(right[m].sum()), int(m.sum()))
        out.append(f"| 0.1 - 0.9 together | {m.sum()} | {mc:.3f} | {fr:.3f} | {w[0]:.3f} - {w[1]:.3f} | {fr - mc:+.3f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--fit", required=True, help="fabrics whose records fit the logistic")
    ap.add_argument("--each", action="store_true", help="also each fabric's table apart (the confidence as given)")
    ap.add_argument("--with-scale", action="store_true", help="a third parameter, c ln(scale) in the logistic "
                    "(the Bayes form's intercept holds ln(scale)): tried, not what the diagnosis uses")
    args = ap.parse_args()
    r = read(args.records)
    z = (r["g"] - r["loc"]) / r["scale"]
    use = np.isin(r["fabric"], args.fit.split(","))
    more = [np.log(r["scale"])] if args.with_scale else []
    p = fit_logit(z[use], r["right"][use], *[x[use] for x in more])
    names = ", ".join(f"{k} = {v:.4f}" for k, v in zip("abc", p))
    print(f"fitted on {args.fit} ({use.sum()} records, {r['right'][use].sum()} right): {names}"
          + (f"; ln(scale) from {np.log(r['scale']).min():.2f} to {np.log(r['scale']).max():.2f}" if more else ""))
    t = p[0] + p[1] * z + sum(c * x for c, x in zip(p[2:], more))
    fitted = 1.0 / (1.0 + np.exp(-np.clip(t, -700, 700)))
    bayes = 1.0 / (1.0 + 100.0 * np.exp(-np.clip(z, -700, 700)) / r["scale"])
    groups = [("fitting fabrics", use), ("other fabrics: " + ",".join(sorted(set(r["fabric"][~use]))), ~use)]
    for name, m in groups:
        if not m.any():
            continue
        print(f"\n{name}, {m.sum()} records; trials by setting: {mix(r, m)}")
        print(f"candidates at 0.1 or more, in trials {noise_candidates(r, m)}")
        print("\nthe Bayes form (slope 1, a flat 100-nat prior):")
        print("\n".join(table(bayes[m], r["right"][m])))
        print("\nthe fitted logistic:")
        print("\n".join(table(fitted[m], r["right"][m])))
        print("\nthe confidence as the diagnosis gave it (fabscope.diagnose.confidence.LOGIT):")
        print("\n".join(table(r["conf"][m], r["right"][m])))
        sus = m & (r["kind"] == "suspect")
        print(f"\nits suspects alone ({sus.sum()}), the confidence as given:")
        print("\n".join(table(r["conf"][sus], r["right"][sus])))
    if args.each:
        for fab in sorted(set(r["fabric"])):
            m = r["fabric"] == fab
            print(f"\n{fab}, {m.sum()} records, the confidence as given; trials by setting: {mix(r, m)}")
            print("\n".join(table(r["conf"][m], r["right"][m])))


if __name__ == "__main__":
    main()
