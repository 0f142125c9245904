"""Time and peak memory of the flow model (routing + max-min solve) on its target cases.

Each case runs in a fresh process so that its peak resident memory is its own.
Prints one row per case; ``--largest`` also grows a k-ary 4-tree until 1M endpoints.

    .venv/bin/python bench/bench_flow_model.py [--largest]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

CASES = {
    "itasca-random-pairs-8ppn": ("itasca", "random-pairs", None, 8, 0.3),
    "fat-tree-16384-random-matching": ("fat-tree:k=128,levels=2", "permutation", "dmodk", 1, 0.2),
    "torus-16x16x16-random-matching": ("torus:16x16x16", "permutation", "dor", 1, 2.0),
}


def run_case(fabric_spec: str, pattern: str, routing: str | None, ppn: int) -> dict:
    import numpy as np

    from fabscope.fabric import Placement
    from fabscope.fabric.io import load_fabric
    from fabscope.model.simulate import simulate
    from fabscope.traffic.spec import make_traffic

    import fabscope.routing.dor, fabscope.routing.multipath, fabscope.routing.tables  # noqa: F401  imports are not solve time
    import fabscope.routing.tree  # noqa: F401

    t0 = time.perf_counter()
    f = load_fabric(fabric_spec)
    t1 = time.perf_counter()
    p = Placement.block(f, f.n_hosts * ppn, ppn)
    t = make_traffic(pattern, f, p, 2**20, seed=1)
    t2 = time.perf_counter()
    r = simulate(f, p, t, routing, seed=1)
    t3 = time.perf_counter()
    bw = r.pairs["bandwidth"] / 1e6
    return {"hosts": f.n_hosts, "links": f.n_links, "flows": t.n_flows, "build_s": t1 - t0,
            "pattern_s": t2 - t1, "model_s": t3 - t2, "avg_MBps": float(np.mean(bw)), "min_MBps": float(bw.min()),
            "peak_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=4)
    ap.add_argument("--largest", action="store_true", help="also the 1M-endpoint fat tree")
    a = ap.parse_args()
    if a.child:
        spec, pattern, routing, ppn = a.child
        print(json.dumps(run_case(spec, pattern, None if routing == "-" else routing, int(ppn))))
        return
    rows = [(name, *c) for name, c in CASES.items()]
    if a.largest:
        rows.append(("fat-tree-1M-random-permutation", "fat-tree:k=32,levels=4", "permutation", "dmodk", 1, 60.0))
    print(f"{'case':34} {'hosts':>8} {'flows':>8} {'model s':>8} {'target':>7} {'build s':>8} "
          f"{'peak MiB':>9} {'avg MB/s':>9} {'min MB/s':>9}")
    for name, spec, pattern, routing, ppn, target in rows:
        r = child([spec, pattern, routing or "-", str(ppn)])
        print(f"{name:34} {r['hosts']:>8} {r['flows']:>8} {r['model_s']:>8.3f} {target:>7.1f} "
              f"{r['build_s']:>8.3f} {r['peak_MiB']:>9.0f} {r['avg_MBps']:>9.0f} {r['min_MBps']:>9.0f}")


if __name__ == "__main__":
    main()
