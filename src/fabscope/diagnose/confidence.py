"""A suspect's confidence: the chance that it is right, from its evidence in the null's units.

A unit's evidence g (nats: how much its degradation raises the likelihood of all pairs) is read
against the null calibration of the same diagnosis (:mod:`.calibration`: loc and scale of the
Gumbel law of the largest gain that noise alone gives), z = (g - loc) / scale.  The chance of being
right is a logistic in z, 1 / (1 + exp(-(a + b z))), with a and b (:data:`LOGIT`) fitted by maximum
likelihood to the suspects and candidates of the fault bench on one fabric (its 3:1 tree) and checked,
bin by bin, on three others (``bench/confidence_fit.py``; docs/diagnose.md, *Calibrated confidence*).

The Bayes form it replaces (noise at the Gumbel tail's density, a degraded cable's evidence equally
likely anywhere up to 100 nats, one degraded cable as the prior) is a logistic in z too, of slope 1
and intercept ln(scale / 100); fitted, the slope is 0.91 and a unit at the penalty (z about 4.6) is
right about 0.4 of the time, not 0.5.

>>> [round(confidence(z), 3) for z in (0.0, 5.0, 10.0, 20.0)]
[0.009, 0.467, 0.988, 1.0]
"""

from __future__ import annotations

import math

#: (a, b) of the logistic in z: fitted on the 3:1 tree of bench/bench_faults.py (2,317 suspects and
#: candidates after the round: its 180 trials of every setting and 200 of ``mild``)
LOGIT = (-4.668, 0.907)


def confidence(z: float) -> float:
    """The chance that a unit whose evidence is ``z`` null scales above the null's location is degraded."""
    t = LOGIT[0] + LOGIT[1] * float(z)
    return 1.0 / (1.0 + math.exp(-t)) if t > -700 else 0.0
