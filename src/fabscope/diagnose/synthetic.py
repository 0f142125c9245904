"""Synthetic measurements for checking the diagnosis: the model with injected faults, times noise.

Used by ``bench/bench_diagnose.py`` and the tests; never by the diagnosis
itself.  A fault scales a cable's capacity (both directions); a slow host
scales its NIC, i.e. its cable(s), the same unknown for the diagnosis.

>>> from fabscope.fabric.generators import fat_tree
>>> f = fat_tree(k=4, levels=2)
>>> faults = random_faults(f, n_cables=2, n_hosts=1, seed=3)
>>> len(faults), all(0.25 <= x <= 0.6 for x in faults.values())
(3, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.fabric.model import Fabric
from fabscope.diagnose.measured import Measured
from fabscope.diagnose.pairmodel import PairModel


def random_faults(fabric: Fabric, n_cables: int, n_hosts: int = 0, seed: int = 0, low: float = 0.25,
                  high: float = 0.6, candidates: np.ndarray | None = None) -> dict[int, float]:
    """Cable -> capacity factor: ``n_cables`` among all cables (host cables included), then the
    cable of each of ``n_hosts`` slow hosts (distinct from those)."""
    rng = np.random.default_rng(seed)
    n_c = fabric.n_links // 2
    pool = np.arange(n_c) if candidates is None else np.asarray(candidates)
    cab = rng.choice(pool, n_cables, replace=False) if n_cables else np.zeros(0, np.int64)
    out = {int(c): float(rng.uniform(low, high)) for c in cab}
    host_cable = np.flatnonzero(fabric.link_src[0::2] < fabric.n_hosts)
    host_cable = host_cable[np.isin(host_cable, pool) & ~np.isin(host_cable, cab)]
    for c in rng.choice(host_cable, n_hosts, replace=False) if n_hosts else []:
        out[int(c)] = float(rng.uniform(low, high))
    return out


def synthetic(fabric: Fabric, hs: np.ndarray, hd: np.ndarray, scenario: np.ndarray, faults: dict[int, float],
              noise: float, seed: int = 0, routing: Any = None, model: PairModel | None = None,
              size: float = 1 << 20) -> Measured:
    """Measured pairs as the flow model gives them with ``faults``, times lognormal noise of ``noise``."""
    pm = model or PairModel(fabric, hs, hd, scenario, routing=routing, bytes=np.full(len(hs), float(size)))
    cap = fabric.link_capacity.copy()
    for c, x in faults.items():
        cap[[2 * c, 2 * c + 1]] *= x
    bw = pm.bandwidth(cap) * np.exp(np.random.default_rng(seed).normal(0.0, noise, pm.n_pairs))
    n = pm.n_pairs
    sc = np.unique(pm.scenario)
    return Measured(fabric, np.arange(n), np.arange(n), pm.hs, pm.hd, pm.bytes, bw, pm.bytes * 2 / bw,
                    np.searchsorted(sc, pm.scenario), pm.pingpong, np.full(n, "random-pairs"),
                    ("synthetic",), tuple(("synthetic", "random-pairs", int(s)) for s in sc))


def as_result(measured: Measured) -> "Result":
    """Measured pairs as a measured result (kind ``measure``), the file ``fabscope analyze -o`` writes."""
    from fabscope.result import Result

    f = measured.fabric
    names = np.array(f.host_names, dtype=object)
    tests = sorted(set(measured.test.tolist()))
    pairs = {"src": measured.src, "dst": measured.dst, "src_host": names[measured.hs].astype(str),
             "dst_host": names[measured.hd].astype(str), "cls": f.classify(measured.hs, measured.hd),
             "bytes": measured.bytes, "bandwidth": measured.bandwidth, "time": measured.time,
             "scenario": measured.scenario}
    return Result(meta={"kind": "measure", "test": tests[0], "fabric": f.name, "source": "synthetic"},
                  class_labels=f.class_labels, pairs=pairs)
