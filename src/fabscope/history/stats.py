"""The statistics of ``history check``: a rank test and its effect size.

Tonight's values (log ratios of each pair to the model, or log bandwidths)
against the baseline nights' values of the same class, cable or host:

- the one-sided Mann-Whitney U test (tonight lower), normal approximation
  with ties corrected (:func:`.ranktests.mann_whitney`: SciPy's ``mannwhitneyu``
  with ``method="asymptotic"``, without importing scipy.stats), which assumes no
  distribution and shrugs off the odd jittered pair;
- the Hodges-Lehmann estimate of the shift: the median of every difference
  tonight - baseline (of logs: exp of it is tonight's typical factor).

A regression needs both: a p-value below ``alpha`` (divided by the number of
things tested that night, Bonferroni) and a shift at least ``min_effect``
(e.g. 0.10: 10% slower), so a large sample's tiny significant shift is no
alarm and neither is a large shift of two pairs.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> base = np.log(rng.normal(1.0, 0.03, 400))
>>> t = shift_test(np.log(rng.normal(0.5, 0.03, 20)), base)
>>> round(t.factor, 2), t.p < 1e-9
(0.5, True)
>>> t = shift_test(np.log(rng.normal(0.99, 0.03, 2000)), base)
>>> t.factor > 0.9
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.history.ranktests import mann_whitney

#: at most this many values of each side go into the Hodges-Lehmann estimate (a random subset beyond)
HL_MAX = 1000


@dataclass(frozen=True)
class Shift:
    n: int            # tonight's values
    n_base: int       # baseline values
    p: float          # one-sided Mann-Whitney p-value (tonight lower)
    shift: float      # Hodges-Lehmann shift of the logs
    factor: float     # exp(shift): tonight / baseline, typically

    def regressed(self, alpha: float, min_effect: float) -> bool:
        return self.p < alpha and self.factor <= 1.0 - min_effect


def hodges_lehmann(x: np.ndarray, y: np.ndarray, seed: int = 0) -> float:
    """Median of all differences x_i - y_j.

    >>> hodges_lehmann(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0]))
    1.5
    """
    rng = np.random.default_rng(seed)
    if len(x) > HL_MAX:
        x = rng.choice(x, HL_MAX, replace=False)
    if len(y) > HL_MAX:
        y = rng.choice(y, HL_MAX, replace=False)
    return float(np.median(np.subtract.outer(x, y)))


def shift_test(tonight: np.ndarray, baseline: np.ndarray) -> Shift:
    """Mann-Whitney (tonight lower) and the Hodges-Lehmann shift; p = 1 when either side is empty."""
    x = np.asarray(tonight, float)
    y = np.asarray(baseline, float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if not len(x) or not len(y):
        return Shift(len(x), len(y), 1.0, 0.0, 1.0)
    p = mann_whitney(x, y, "less").p
    s = hodges_lehmann(x, y)
    return Shift(len(x), len(y), p, s, float(np.exp(s)))
