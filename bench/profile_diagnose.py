"""Where the diagnosis spends its time at a real machine's size: cProfile of one ``diagnose``.

    .venv/bin/python bench/profile_diagnose.py 10      # 2 x 10 rounds of random pairs: 21,960 pairs
    .venv/bin/python bench/profile_diagnose.py 50      # 109,800 pairs (the speed case of docs/diagnose.md)

The 2,197-host 3-level fat tree (k=13), fabscope-bench's random pairs (seeds 1 and 2), 3 cables and
1 host degraded (``random_faults``, seed 3), 5 % lognormal noise; the static model.  Prints CPU
beside wall seconds, the faults found, the peak memory, the null calibration, and the 12 functions
with the most time of their own.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def main() -> None:
    from fabscope.diagnose.plan import bench_random_pairs
    from fabscope.diagnose.synthetic import random_faults, synthetic
    from fabscope.diagnose.tomography import diagnose
    from fabscope.fabric.io import load_fabric

    n_rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    f = load_fabric("fat-tree:k=13,levels=3")
    s, dd, r = bench_random_pairs(f.n_hosts, 1, n_rounds)
    s2, d2, r2 = bench_random_pairs(f.n_hosts, 2, n_rounds)
    hs, hd, rr = np.r_[s, s2], np.r_[dd, d2], np.r_[r, r2 + n_rounds]
    faults = random_faults(f, 3, 1, seed=3)
    m = synthetic(f, hs, hd, rr, faults, 0.05, seed=3)
    c0, w0 = time.process_time(), time.perf_counter()
    pr = cProfile.Profile(time.process_time)      # CPU: the machine is shared, wall follows the load
    pr.enable()
    d = diagnose(m)
    pr.disable()
    found = {x["link"] // 2 for x in d.suspects}
    print(f"{m.n_pairs} pairs on {f.n_hosts} hosts: diagnose CPU {time.process_time() - c0:.1f} s, wall "
          f"{time.perf_counter() - w0:.1f} s (load average {os.getloadavg()[0]:.1f}); {len(found & set(faults))} of "
          f"{len(faults)} faults found, {len(found - set(faults))} false; peak memory "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB; null {d.meta['null']}")
    st = pstats.Stats(pr)
    st.sort_stats("tottime").print_stats(12)
    st.sort_stats("cumulative").print_callers(r"\((effects|flow_rates|null_calibration|scan_best|fit_noise|unit_minima)\)")


if __name__ == "__main__":
    main()
