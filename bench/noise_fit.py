"""The noise fit's CPU at a real machine's size: :func:`fabscope.diagnose.noise.fit_noise` on a night's residuals.

    .venv/bin/python bench/noise_fit.py                          # 109,800 residuals, 5 fits
    mkdir -p /tmp/old && git archive 8f415d1 src | tar -x -C /tmp/old
    .venv/bin/python bench/noise_fit.py --against /tmp/old/src   # a peer: another fabscope's, same residuals

The residuals are drawn like a diagnosis's of 109,800 pairs (seeded): nominal pairs at 8.4 %, and a
handful jittered and slow (their share falls to its floor, 1e-4); ``fit_noise`` runs as the diagnosis
calls it (the nominal centre fixed at 0) until it stops, 200 EM iterations at most (where the jitter's
share falls to its floor it takes all 200: the diagnosis's fits after its search do).  Per fit: CPU and
wall, and the model it gives; then the model's likelihood (``NoiseModel.nll``) of 60,000 residuals under
22 factors, as a scan asks.  ``--against SRC``: the same by the fabscope at SRC in a subprocess, one
after the other, and whether the two give the same models and likelihoods to the last bit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def residuals(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = n // 20000
    return np.r_[rng.normal(0.0, 0.084, n - 2 * k), rng.normal(-0.3, 0.2, k), np.log(rng.uniform(0.3, 0.7, k))]


def run(n: int, seed: int, fits: int) -> list[dict]:
    from fabscope.diagnose.noise import fit_noise

    e = residuals(n, seed)
    grid = e[:60_000, None] - np.geomspace(0.01, 2.5, 22)[None, :]      # a scan's residuals under 22 factors
    out = []
    for _ in range(fits):
        c0, w0 = time.process_time(), time.perf_counter()
        nm = fit_noise(e, centre=0.0)
        c1 = time.process_time()
        nll = nm.nll(grid)
        out.append({"cpu": c1 - c0, "wall": time.perf_counter() - w0, "nll_cpu": time.process_time() - c1,
                    "model": [float(v) for v in (nm.mu, nm.sigma, nm.w, nm.mu_j, nm.sigma_j)],
                    "nll_sum": float(np.add.reduce(nll.ravel()))})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=109_800)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fits", type=int, default=5)
    ap.add_argument("--against", metavar="SRC", help="another fabscope's source folder (its src), run as a peer")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)     # the peer's own output
    a = ap.parse_args()
    if a.json:
        print(json.dumps(run(a.pairs, a.seed, a.fits)))
        return 0
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    who = [("this fabscope", here)] + ([("peer " + a.against, a.against)] if a.against else [])
    got = {}
    for name, src in who:
        env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        p = subprocess.run([sys.executable, __file__, "--json", "--pairs", str(a.pairs), "--seed", str(a.seed),
                            "--fits", str(a.fits)], env=env, capture_output=True, text=True, check=True)
        rows = got[name] = json.loads(p.stdout)
        cpu = sorted(r["cpu"] for r in rows)
        print(f"{name}: {a.pairs:,} residuals, {a.fits} fits: CPU s a fit {cpu[0]:.3f} (least), "
              f"{cpu[len(cpu) // 2]:.3f} (median); wall {sorted(r['wall'] for r in rows)[len(rows) // 2]:.3f}; "
              f"model (mu, sigma, w, mu_j, sigma_j) {[round(v, 6) for v in rows[0]['model']]}; its likelihood of "
              f"60,000 x 22 residuals: CPU s {sorted(r['nll_cpu'] for r in rows)[len(rows) // 2]:.3f} (median)",
              flush=True)
    if len(got) > 1:
        a_, b_ = got.values()
        same = [(r["model"], r["nll_sum"]) for r in a_] == [(r["model"], r["nll_sum"]) for r in b_]
        print("the same models and likelihoods to the last bit" if same else "the models or likelihoods differ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
