"""What a run of the dynamic engine gives back, whichever engine ran: the times (:class:`Outcome`),
the observer's type, and the error of a program that deadlocks.

Kept apart from the Python engine (engine.py) so that a run in the compiled
engine does not import the reference it does not use.

>>> import numpy as np
>>> Outcome(*[np.zeros(1)] * 3, np.zeros(2), np.array([1.0, 2.5]), 3, 4, np.zeros(1)).makespan
2.5
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from fabscope.dynamic.program import DeadlockError, Program, _ranks


@dataclass
class Outcome:
    """Times of a run: each message's flow start (after latency) and end, each step's start and end."""

    msg_post: np.ndarray       # both ends posted (before latency)
    msg_start: np.ndarray
    msg_end: np.ndarray
    step_start: np.ndarray
    step_end: np.ndarray
    events: int                # events processed (a flow's stale finish events not counted)
    refills: int               # flows refilled, summed over events
    delivered: np.ndarray      # bytes integrated over each message's rate history
    #: the compiled engine's refill paths, summed over the run: flows that joined a refill when a
    #: resource they cross was about to fill ("at fill"), or when the level reached their rate and
    #: their bottleneck no longer held them ("at check"); checks that left the flow as it was ("kept")
    joins: dict | None = None

    @property
    def makespan(self) -> float:
        return float(np.nanmax(self.step_end))


Observer = Callable[[float, dict], None]


def _deadlock(program: Program, pending: np.ndarray, step_start: np.ndarray) -> None:
    """The steps that started but never ended: their ranks wait for ever."""
    stuck = np.flatnonzero((pending > 0) & ~np.isnan(step_start))
    ranks = sorted(set(program.step_rank[stuck].tolist()))
    raise DeadlockError(f"program {program.name!r} deadlocks: ranks {_ranks(ranks)} wait for messages that "
                        f"never flow (each end waits for the other to post)")
