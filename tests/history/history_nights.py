"""Synthetic nights for the history tests (a module of its own: conftest names clash across folders)."""

from __future__ import annotations

import numpy as np

from fabscope.diagnose.synthetic import as_result, synthetic


def night(f, seed: int, faults: dict[int, float] | None = None, noise: float = 0.02, rounds: int = 12):
    """One night's random pairs on ``f`` (rounds of 8 pairs), as a measured result."""
    rng = np.random.default_rng(seed)
    hs, hd, sc = [], [], []
    for r in range(rounds):
        p = rng.permutation(f.n_hosts)
        hs += p[0::2].tolist()
        hd += p[1::2].tolist()
        sc += [r] * (f.n_hosts // 2)
    m = synthetic(f, np.array(hs), np.array(hd), np.array(sc), faults or {}, noise, seed=seed, routing="dmodk")
    return as_result(m)
