"""A suspect's confidence: the chance that it is right, from its evidence in the null's units.

A unit's evidence g (nats: how much its degradation raises the likelihood of all pairs) is read
against the null calibration of the same diagnosis (:mod:`.calibration`: loc and scale of the
Gumbel law of the largest gain that noise alone gives), z = (g - loc) / scale.  The chance of being
right is a logistic in z, 1 / (1 + exp(-(a + b z))), with a and b (:data:`LOGIT`) fitted by maximum
likelihood to the suspects and candidates of the fault bench on one fabric (its 3:1 tree), its six
settings in equal numbers, and checked, bin by bin, on its other fabrics (``bench/confidence_fit.py``;
docs/diagnose.md, *Calibrated confidence*).

It is a reading for the user: no step of the diagnosis depends on it (the second model's choice is
made on z itself, :data:`fabscope.diagnose.withmodel.SECOND_MODEL_Z`).  Between the ends it is the
bench's prior: how often a fault too weak to name lies at a given z beside how often noise does, which
depends on the faults drawn and the fabric (docs/diagnose.md gives the dragonfly's middle beside the
tree's).

>>> [round(confidence(z), 3) for z in (0.0, 5.0, 10.0, 20.0)]
[0.003, 0.127, 0.891, 1.0]
"""

from __future__ import annotations

import math

#: (a, b) of the logistic in z: fitted on the 3:1 tree of bench/bench_faults.py, 1,000 trials of each of
#: its six settings (37,947 suspects and candidates after the round)
LOGIT = (-5.952, 0.805)


def confidence(z: float) -> float:
    """The chance that a unit whose evidence is ``z`` null scales above the null's location is degraded."""
    t = LOGIT[0] + LOGIT[1] * float(z)
    return 1.0 / (1.0 + math.exp(-t)) if t > -700 else 0.0
