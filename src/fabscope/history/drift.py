"""Slow drift: a cable that loses a little every night, against the fabric as built and a long baseline.

``history check`` compares tonight with the 7 runs before it; a cable losing 2 % a night never
moves 10 % within that window, and once its estimate is below ``1 - min_effect`` it is "slow,
already" from the second night on.  So each cable the tomography estimates slow tonight (below
``1 - min_effect`` of its capacity as built) is also tested

* against a **long baseline**: tonight's crossing pairs against those of up to ``long`` runs
  before its slow streak began (:func:`.stats.shift_test`, the same rank test and effect size);
* for a **trend**: Kendall's tau of its estimates over the last ``long`` runs and tonight, and the
  Theil-Sen slope (the median of the slopes between every two nights), per night
  (:mod:`.ranktests`: SciPy's ``kendalltau`` and ``theilslopes`` without importing scipy.stats).

It drifted when its estimate is below ``1 - min_effect`` of its capacity as built tonight and on the
run before (two nights, so a one-night blip is the short test's alone) and either its pairs are lower
than on the long baseline or its estimates are falling (each p below alpha over the tests of the
night).  The loss is the tomography's: the pairs crossing a cable are often held by other links too,
so their shift understates it, and where the cable holds back few of them (a director's internal
cable on Itasca: 157 crossing pairs, their median down 1 % with the cable at x0.5) the rank test
reaches the bar nights after the estimates' trend does.  The alarm is raised on the first night of
its slow streak that this holds, unless the streak's first night was already an alarm (a step);
"drifting, already" after.

>>> import numpy as np
>>> t = trend(np.log(0.98 ** np.r_[np.zeros(20), np.arange(1, 11)]))    # flat, then 2 % a night
>>> round(t.per_night, 3) <= 0, t.p < 1e-3
(True, True)
>>> trend(np.zeros(30)).p
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabscope.history.ranktests import kendall_tau, theil_sen

#: runs before a cable's slow streak that make its long baseline
LONG_BASELINE = 28


@dataclass(frozen=True)
class Trend:
    n: int             # nights in the series
    per_night: float   # Theil-Sen slope of the log estimate: exp() - 1 is the change per night
    p: float           # one-sided Kendall tau p-value (falling)


def trend(log_estimates: np.ndarray) -> Trend:
    """The trend of a cable's log estimates, oldest first (NaN where it was not estimated)."""
    y = np.asarray(log_estimates, float)
    x = np.arange(len(y), dtype=float)
    ok = np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(y) < 3 or np.ptp(y) == 0:
        return Trend(len(y), 0.0, 1.0)
    tau = kendall_tau(x, y, "less")
    return Trend(len(y), theil_sen(y, x).slope, tau.p)
