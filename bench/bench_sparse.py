"""The diagnosis's sparse matrices at a real machine's size: the compiled entry order against numpy's sort.

    .venv/bin/python bench/bench_sparse.py                                   # a 13x13x13 torus, 109,800 pairs
    .venv/bin/python bench/bench_sparse.py --fabric fat-tree:k=13,levels=3 --reps 5

fabscope-bench's random pairs (seeds 1 and 2, ``--rounds`` rounds each) on ``--fabric``, as
``fabscope diagnose`` builds their matrices: the snapshot's resources x flows (:class:`PairModel`, its
resources numbered by counting), the pairs x links, the fit's pairs x units turned into columns (the
largest: 4.9 million entries on the torus), the pairs x cables from the pairs x units.  Each step runs
with the compiled order (:func:`fabscope.sparse.line_order_compiled`, from
:data:`fabscope.sparse.COMPILED_FROM` entries) and with numpy's packed sort (the threshold raised past
every matrix), in turn, the order reversed every other repetition; the two must give the same arrays.
Prints each step's median CPU seconds both ways and their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fabscope import sparse
from fabscope.diagnose.cables import pair_cables
from fabscope.diagnose.fit import pair_units
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.plan import bench_random_pairs
from fabscope.fabric.io import load_fabric


def _arrays(m) -> list[np.ndarray]:
    return [m.indptr, m.indices, m.data]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabric", default="torus:dims=13x13x13")
    ap.add_argument("--rounds", type=int, default=50, help="rounds of random pairs for each of 2 seeds")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    f = load_fabric(a.fabric)
    s, d, _ = bench_random_pairs(f.n_hosts, 1, a.rounds)
    s2, d2, _ = bench_random_pairs(f.n_hosts, 2, a.rounds)
    hs, hd = np.r_[s, s2], np.r_[d, d2]
    sc = np.repeat(np.arange(2 * a.rounds), len(s) // a.rounds)
    pm0 = PairModel(f, hs, hd, sc)
    pu0 = pair_units(pm0)
    print(f"{len(hs):,} pairs on {f.n_hosts:,} hosts ({a.fabric}): {pm0.A.nnz:,} path entries, "
          f"pairs x units {pu0.nnz:,} entries", flush=True)
    steps = {
        "the snapshot's resources x flows (PairModel)": lambda: PairModel(f, hs, hd, sc).A,
        "pairs x links": lambda: PairModel.pair_links.func(pm0),
        "pairs x units, as columns": lambda: pu0.tocsc(),
        "pairs x cables, sorted (no pairs x units)": lambda: pair_cables(pm0, f.n_links // 2),
        "pairs x cables, from the pairs x units": lambda: pair_cables(pm0, f.n_links // 2, pu0),
    }
    ways = {"compiled": 0, "numpy": 1 << 62}
    times: dict[tuple[str, str], list[float]] = {}
    for name, fn in steps.items():
        got = {}
        for r in range(a.reps):
            for way in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
                sparse.COMPILED_FROM = ways[way]
                c0 = time.process_time()
                got[way] = fn()
                times.setdefault((name, way), []).append(time.process_time() - c0)
        same = all(np.array_equal(x, y) and x.dtype == y.dtype
                   for x, y in zip(_arrays(got["compiled"]), _arrays(got["numpy"])))
        tc, tn = (float(np.median(times[(name, w)])) for w in ways)
        print(f"  {name}: compiled {tc:.3f} CPU s, numpy {tn:.3f} (x{tc / tn:.2f}); "
              f"{'the same arrays' if same else 'ARRAYS DIFFER'}", flush=True)
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
