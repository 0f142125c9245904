"""The max-min solve of the diagnosis at a real machine's size: ``maxmin.c`` against the numpy reference.

    .venv/bin/python bench/bench_maxmin.py                 # 10 solves each, the speed case
    .venv/bin/python bench/bench_maxmin.py --every-link --solves 1   # every link its own factor (slow: ~45 s)
    .venv/bin/python bench/bench_maxmin.py --solves 3 --rounds 10

The flow model the diagnosis fits: fat-tree:k=13,levels=3 (2,197 hosts), the pairs of fabscope-bench's
``random-pairs`` with seeds 1 and 2, 50 rounds each (109,800 pairs, the round as the concurrent set), each
ping-pong pair two flows.  Each solve cuts 1 to 4 random cables (both links) to 0.25..0.6 of their
rate, as the fit's trials do (its calls there cut 1 to 4 cables, at 0.28..0.45); ``--every-link``
gives every link its own factor in [0.3, 1] instead, so that nearly every flow freezes at its own
level (the reference's worst case: a scan of every resource per level).  The same capacities go to both solvers, on the matrix converted once
(:func:`fabscope.model.maxmin.prepare`, as ``PairModel.flow_rates`` does) and, once, on the raw matrix
(what each call of ``PairModel.flow_rates`` cost before: the conversion done again).  Prints CPU beside wall per solve, the ratio
reference / compiled, and the largest relative difference of the rates (0 when they are the same bits).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def pair_model(rounds: int = 50):
    """The diagnosis's PairModel of the speed case (``bench_diagnose.py --parts speed``)."""
    from fabscope.diagnose.pairmodel import PairModel
    from fabscope.diagnose.plan import bench_random_pairs
    from fabscope.fabric.io import load_fabric

    f = load_fabric("fat-tree:k=13,levels=3")
    s, d, r = bench_random_pairs(f.n_hosts, 1, rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, rounds)
    return PairModel(f, np.r_[s, s2], np.r_[d, d2], np.r_[r, r2 + rounds])


def factors(n_links: int, rng: np.random.Generator, every_link: bool) -> np.ndarray:
    """One trial's capacity factors: 1 to 4 cables (links 2c, 2c + 1) cut, or every link its own."""
    if every_link:
        return rng.uniform(0.3, 1.0, n_links)
    fac = np.ones(n_links)
    cut = rng.choice(n_links // 2, int(rng.integers(1, 5)), replace=False)
    fac[np.r_[2 * cut, 2 * cut + 1]] = np.tile(rng.uniform(0.25, 0.6, len(cut)), 2)
    return fac


def compare(solves: int = 10, rounds: int = 50, seed: int = 0, every_link: bool = False) -> dict[str, float]:
    """Times (wall, CPU: totals over the solves) of both solvers and the largest relative difference."""
    from fabscope.model import maxmin as mm

    pm = pair_model(rounds)
    f = pm.fabric
    m = pm.solver_matrix
    m.arrays                                                     # converted once, outside the timings
    rng = np.random.default_rng(seed)
    caps = [np.r_[f.link_capacity * factors(f.n_links, rng, every_link), f.host_memory_bw][pm.res_kind]
            for _ in range(solves)]
    out = {"pairs": pm.n_pairs, "flows": pm.A.shape[1], "resources": pm.A.shape[0], "nnz": pm.A.nnz,
           "compiled": mm.available(), "c_wall": 0.0, "c_cpu": 0.0, "ref_wall": 0.0, "ref_cpu": 0.0, "diff": 0.0}
    for cap in caps:
        a, w, c = _timed(lambda: mm.maxmin(m, cap, pm.flow_cap))
        b, rw, rc = _timed(lambda: mm.maxmin_reference(m, cap, pm.flow_cap))
        out["c_wall"] += w
        out["c_cpu"] += c
        out["ref_wall"] += rw
        out["ref_cpu"] += rc
        with np.errstate(invalid="ignore"):
            rel = np.where(a == b, 0.0, np.abs(a - b) / np.abs(b))
        out["diff"] = max(out["diff"], float(rel.max(initial=0.0)))
        out["same_bits"] = out.get("same_bits", True) and bool(np.array_equal(a, b))
        _, rw, rc = _timed(lambda: mm.maxmin_reference(pm.A, cap, pm.flow_cap))
        out["raw_wall"] = out.get("raw_wall", 0.0) + rw
        out["raw_cpu"] = out.get("raw_cpu", 0.0) + rc
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solves", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=50, help="rounds per seed (50: 109,800 pairs)")
    ap.add_argument("--every-link", action="store_true", help="every link its own random factor")
    a = ap.parse_args()
    r = compare(a.solves, a.rounds, every_link=a.every_link)
    n = a.solves
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{r['pairs']:,} pairs, {r['flows']:,} flows, {r['resources']:,} resources, {r['nnz']:,} entries; "
          f"{n} solves, {'every link its own factor' if a.every_link else '1 to 4 cables cut'}; compiled solver {'loaded' if r['compiled'] else 'NOT available (both are numpy)'}")
    print(f"  numpy reference, matrix converted once   wall {r['ref_wall'] / n:.3f} s, CPU {r['ref_cpu'] / n:.3f} s a solve")
    print(f"  maxmin.c, matrix converted once          wall {r['c_wall'] / n:.3f} s, CPU {r['c_cpu'] / n:.3f} s a solve")
    print(f"  numpy reference, converting each call    wall {r['raw_wall'] / n:.3f} s, CPU {r['raw_cpu'] / n:.3f} s a solve")
    print(f"  ratio reference / compiled: {r['ref_cpu'] / max(r['c_cpu'], 1e-9):.1f}x CPU, "
          f"{r['ref_wall'] / max(r['c_wall'], 1e-9):.1f}x wall; max |relative difference| of the rates "
          f"{r['diff']:.1e} ({'the same bits' if r['same_bits'] else 'NOT the same bits'})")


if __name__ == "__main__":
    main()
