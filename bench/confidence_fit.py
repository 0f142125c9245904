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

import numpy as np
from scipy.optimize import minimize

BINS = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999, 1.0000001]


def read(paths: list[str]) -> dict[str, np.ndarray]:
    rows = [line.split() for p in paths for line in open(p) if line.strip()]
    return {"fabric": np.array([r[0] for r in rows]), "setting": np.array([r[1] for r in rows]),
            "g": np.array([float(r[3]) for r in rows]), "loc": np.array([float(r[4]) for r in rows]),
            "scale": np.array([float(r[5]) for r in rows]), "conf": np.array([float(r[6]) for r in rows]),
            "right": np.array([int(r[7]) for r in rows])}


def fit_logit(z: np.ndarray, y: np.ndarray, *more: np.ndarray) -> tuple[float, ...]:
    """(a, b, ...) of P(right) = 1 / (1 + exp(-(a + b z + c more[0] ...))) by maximum likelihood."""
    X = np.c_[np.ones_like(z), z, *more]

    def nll(p):
        t = X @ p
        return float(np.sum(np.logaddexp(0.0, t) - y * t))
    p0 = np.zeros(X.shape[1])
    p0[1] = 1.0
    res = minimize(nll, p0, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 4000 * len(p0)})
    return tuple(float(x) for x in res.x)


def table(conf: np.ndarray, right: np.ndarray) -> list[str]:
    out = ["| confidence | n | mean confidence | fraction right | off by |", "|---|---:|---:|---:|---:|"]
    i = np.clip(np.searchsorted(BINS, conf, side="right") - 1, 0, len(BINS) - 2)
    for k, (lo, hi) in enumerate(zip(BINS[:-1], BINS[1:])):
        m = i == k
        if not m.any():
            out.append(f"| {lo:g} - {min(hi, 1):g} | 0 | - | - | - |")
            continue
        mc, fr = conf[m].mean(), right[m].mean()
        out.append(f"| {lo:g} - {min(hi, 1):g} | {m.sum()} | {mc:.3f} | {fr:.3f} | {fr - mc:+.3f} |")
    m = (conf >= 0.1) & (conf < 0.9)        # the middle, which few suspects reach: its bins together
    if m.any():
        mc, fr = conf[m].mean(), right[m].mean()
        out.append(f"| 0.1 - 0.9 together | {m.sum()} | {mc:.3f} | {fr:.3f} | {fr - mc:+.3f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--fit", required=True, help="fabrics whose records fit the logistic")
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
    for name, m in (("fitting fabrics", use), ("other fabrics: " + ",".join(sorted(set(r["fabric"][~use]))), ~use)):
        if not m.any():
            continue
        print(f"\n{name}, {m.sum()} records\n\nthe Bayes form (slope 1, a flat 100-nat prior):")
        print("\n".join(table(bayes[m], r["right"][m])))
        print("\nthe fitted logistic:")
        print("\n".join(table(fitted[m], r["right"][m])))
        print("\nthe confidence as the diagnosis gave it (fabscope.diagnose.confidence.LOGIT):")
        print("\n".join(table(r["conf"][m], r["right"][m])))


if __name__ == "__main__":
    main()
