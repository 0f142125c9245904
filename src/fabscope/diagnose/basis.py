"""What a diagnosis computes of the measured pairs before it reads their figures, kept for a second
diagnosis of the same pairs.

``fabscope diagnose`` with its default model fits twice: against the program in time on the healthy
fabric, then against it rerun on the fabric with the first fit's suspects (docs/diagnose.md); only
the nominal prediction differs between the two.  The snapshot of the pairs (routes, concurrent sets,
max-min rates), the fit's matrices, the units the null calibration scans and what each grid factor
of each does to its pairs and the ties depend on neither the measured figures nor the nominal
prediction, so the second diagnosis takes the first's objects as they are
(the same answers: ``tests/diagnose/test_diagnose.py`` holds a diagnosis given a :class:`Basis` to
one without).

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.diagnose.synthetic import synthetic
>>> f = fat_tree(k=4, levels=2)
>>> m = synthetic(f, np.arange(8), np.arange(8, 16), np.zeros(8, np.int64), {}, 0.0)
>>> b = Basis()
>>> pm = b.of(m, "dmodk").pm
>>> b.of(m, "dmodk").pm is pm, pm.n_pairs                      # made once for these pairs and routing
(True, 8)
>>> b.of(m.subset(np.arange(4)), "dmodk").pm.n_pairs           # other pairs: made again
4
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabscope.diagnose.cables import pair_cables, tied_directions, ties
from fabscope.diagnose.calibration import detect_effects, null_effects
from fabscope.diagnose.fit import Fit
from fabscope.diagnose.measured import Measured
from fabscope.diagnose.pairmodel import PairModel
from fabscope.diagnose.unitgains import NullEffects


class Basis:
    """The figure-independent part of a diagnosis of one :class:`Measured` (``m``: its inter-node
    pairs) under one routing, made at the first :meth:`of` and kept while the measured pairs and the
    routing are the same objects (a routing name: the same name).  ``fit`` is a skeleton:
    :meth:`Fit.for_figures` gives each diagnosis its own."""

    def __init__(self) -> None:
        self.measured: Measured | None = None
        self.routing: Any = None
        self._effects: NullEffects | None = None
        self._detect: list | None = None
        self._limits: np.ndarray | None = None

    def of(self, measured: Measured, routing: Any) -> Basis:
        if self.measured is measured and (self.routing is routing or
                                          (isinstance(routing, str) and self.routing == routing)):
            return self
        self.measured, self.routing, self._effects, self._detect, self._limits = measured, routing, None, None, None
        self.tied_names: dict[int, list[str]] = {}      # per unit: the cables crossed by the same pairs
        inter = measured.inter
        m = self.m = measured.subset(inter) if not inter.all() else measured
        pm = self.pm = PairModel(m.fabric, m.hs, m.hd, m.scenario, m.pingpong, m.bytes, routing)
        self.rate0 = pm.flow_rates()
        self.bw0 = pm.pair_bandwidth(self.rate0)
        self.ideal = _ideal_bandwidth(pm)
        self.fit = fit = Fit(pm, np.zeros(pm.n_pairs), 0.0, None)
        fit.known(np.ones(fit.n_links), self.rate0, self.bw0)      # where each search starts
        L = fit.n_links
        self.covered_u = np.flatnonzero(np.asarray(fit.pair_unit.sum(axis=0)).ravel() > 0)
        # the null takes the units the search can name: not a direction crossed by the same pairs as its
        # reverse (the search names its cable instead), a fifth of the null's work on a tree of hosts
        tied = self.tied = tied_directions(fit.pair_unit_csc, L)
        self.null_u = self.covered_u[(self.covered_u >= L) | ~tied[np.minimum(self.covered_u, L - 1)]]
        self.pair_cable = pair_cables(pm, fit.n_cables, fit.pair_unit)
        self.groups, self.uncovered = ties(self.pair_cable)
        return self

    @property
    def null_effects(self) -> NullEffects:
        """:func:`~fabscope.diagnose.calibration.null_effects` of the null's units on the healthy fabric
        (made at the first call)."""
        if self._effects is None:
            self._effects = null_effects(self.fit, self.null_u, np.ones(self.fit.n_links), self.rate0, self.bw0)
        return self._effects


    @property
    def detect_effects(self) -> list:
        """:func:`~fabscope.diagnose.calibration.detect_effects` of every covered cable on the healthy
        fabric (made at the first call)."""
        if self._detect is None:
            covered = np.flatnonzero(np.asarray(self.pair_cable.sum(axis=0)).ravel() > 0)
            self._detect = detect_effects(self.fit, self.fit.n_links + covered, self.rate0, self.bw0)
        return self._detect

    @property
    def limits(self) -> np.ndarray:
        """Per pair, the name of what limits it on the healthy fabric (:meth:`.PairModel.limit_names`)."""
        if self._limits is None:
            self._limits = self.pm.limit_names(self.rate0)
        return self._limits


def _ideal_bandwidth(pm: PairModel) -> np.ndarray:
    """Each pair's bandwidth with its path to itself (the slowest link of each direction)."""
    f = pm.fabric
    cap = np.full(len(pm.flow_pair), np.inf)
    np.minimum.at(cap, pm.routes.flow, f.link_capacity[pm.routes.link] / np.maximum(pm.routes.weight, 1e-12))
    cap = np.minimum(cap, pm.flow_cap)
    return pm.pair_bandwidth(cap)
