"""Routing between host ports against routing between one-port hosts of the same tree size.

The GPU pod preset (128 hosts x 8 NICs = 1024 ports on 32 rail leaves and 16
spines) against a one-port tree with as many hosts on as many leaves and
spines (``xgft:m=32x32,w=1x16,links_per_pair=2``): the same number of
random (port, port) pairs routed by each engine, CPU time beside wall, and
the ratio of the two in this invocation.

    .venv/bin/python bench/bench_multiport.py [--pairs 200000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fabscope.fabric.io import load_fabric
from fabscope.routing import make_routing, terminal_routes


def timed(fabric, engine: str, src: np.ndarray, dst: np.ndarray) -> tuple[float, float, int]:
    router = make_routing(fabric, engine)
    w, c = time.perf_counter(), time.process_time()
    r = terminal_routes(router, src, dst)
    return time.perf_counter() - w, time.process_time() - c, len(r.link)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200_000)
    args = ap.parse_args()
    pod = load_fabric("gpu-pod")
    one = load_fabric("xgft:m=32x32,w=1x16,links_per_pair=2,capacity=48e9")
    assert pod.n_terminals == one.n_terminals
    rng = np.random.default_rng(0)
    src = rng.integers(0, pod.n_terminals, args.pairs)
    dst = rng.integers(0, pod.n_terminals, args.pairs)
    # pod: the destination's port of the source's rail (the port policies keep every pair on one rail)
    dst_pod = pod.terminal(pod.terminal_host[dst], pod.terminal_port[src])
    print(f"{args.pairs:,} random pairs of {pod.n_terminals} ports")
    print(f"{'engine':8} {'pod wall s':>10} {'pod cpu s':>10} {'one wall s':>10} {'one cpu s':>10} {'cpu ratio':>9}")
    for engine in ("dmodk", "minhop", "ecmp"):
        pw, pc, _ = timed(pod, engine, src, dst_pod)
        ow, oc, _ = timed(one, engine, src, dst)
        print(f"{engine:8} {pw:10.3f} {pc:10.3f} {ow:10.3f} {oc:10.3f} {pc / max(oc, 1e-9):9.2f}")


if __name__ == "__main__":
    main()
