"""Traffic: a set of flows between ranks.

Flows that share a ``pair`` id are the directions of one ping-pong (seed 000:
a pair's bandwidth is the data it moved over the time it took, so its
directions add their times).  ``scenario`` separates sub-runs that do not
run at the same time (each leaf pair of the all-pairs test): flows of
different scenarios never share a resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabscope.errors import TrafficError


@dataclass(frozen=True, eq=False)
class Traffic:
    name: str
    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    pair: np.ndarray
    scenario: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.src)
        for k in ("dst", "bytes", "pair", "scenario"):
            if len(getattr(self, k)) != n:
                raise TrafficError(f"traffic {self.name!r}: {k} has {len(getattr(self, k))} entries for {n} flows")
        if n == 0:
            raise TrafficError(f"pattern {self.name!r} makes no flows for this job")

    @property
    def n_flows(self) -> int:
        return len(self.src)

    @property
    def n_scenarios(self) -> int:
        return int(self.scenario.max()) + 1

    @classmethod
    def build(cls, name: str, src, dst, size, *, pair=None, scenario=None, pingpong: bool = False,
              **params: Any) -> "Traffic":
        """Flows ``src[i] -> dst[i]``; with ``pingpong`` each pair also gets its reverse flow."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n = len(src)
        size_arr = np.broadcast_to(np.asarray(size, dtype=np.float64), (n,)).copy()
        pair = np.arange(n, dtype=np.int64) if pair is None else np.asarray(pair, dtype=np.int64)
        scenario = np.zeros(n, dtype=np.int64) if scenario is None else np.asarray(scenario, dtype=np.int64)
        if pingpong:
            src, dst = np.r_[src, dst], np.r_[dst, src]
            size_arr, pair, scenario = np.r_[size_arr, size_arr], np.r_[pair, pair], np.r_[scenario, scenario]
        return cls(name, src, dst, size_arr, pair, scenario, dict(params))
