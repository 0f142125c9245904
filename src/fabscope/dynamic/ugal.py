"""UGAL in time: each message chooses minimal or Valiant when it starts, from the loads then.

The static ``ugal-l`` / ``ugal-g`` engines (:mod:`fabscope.routing.dragonfly`) choose once per
flow, the flows placed in a seeded order.  Here the choice is the dynamic engine's: when both
ends of a message have posted it, its path is its minimal one or its Valiant one (spread
evenly over every intermediate group, as the static ``valiant``), by the same rule, minimal
when ``q_min * H_min <= q_val * H_val``, where a link's load ``q`` is the weight of the flows
in flight on it then (and of those chosen but still in their latency: in their source's
queues already), plus this message (whole), over its capacity (``ugal-l``: the first
router-to-router link of each path; ``ugal-g``: its busiest; for Valiant the mean over its
intermediate groups).  A message between two routers of one group goes minimally.  The
choice needs a callback per message: the reference (Python) engine runs it.

>>> from fabscope.fabric.generators import dragonfly
>>> from fabscope.fabric import Placement
>>> from fabscope.dynamic.program import Program
>>> f = dragonfly(a=4, p=2, h=2, g=9)
>>> one = Program.from_rounds("one", 72, [([0], [8], 1e6)])        # alone on an idle fabric: minimal
>>> run_ugal(f, Placement.block(f, 72, ppn=1), one).took_valiant.tolist()
[False]
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from fabscope.dynamic.outcome import Outcome
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths, build_paths
from fabscope.errors import RoutingError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.model.latency import DEFAULT_ALPHA
from fabscope.routing.dragonfly import DragonflyRouting, is_dragonfly


@dataclass
class UgalRun:
    program: Program
    outcome: Outcome
    #: per message: whether it took its Valiant paths
    took_valiant: np.ndarray
    mode: str
    #: every pair's minimal paths, then its Valiant ones, and the one each message took
    paths: Paths
    msg_path: np.ndarray

    def as_run(self, placement: Placement):
        """The :class:`~fabscope.dynamic.run.Run` the results of ``simulate --dynamic`` are read from."""
        from fabscope.dynamic.run import Run

        return Run(self.program, placement, self.paths, self.msg_path, self.outcome, "python")

    @property
    def makespan(self) -> float:
        return self.outcome.makespan


def run_ugal(fabric: Fabric, placement: Placement, program: Program, mode: str = "ugal-g", *, seed: int = 0,
             alpha: float = DEFAULT_ALPHA, latency: bool = True) -> UgalRun:
    """Run ``program`` with every message choosing its path when it is posted (see the module);
    ``simulate --dynamic --routing ugal-g:when=posted`` from the command line."""
    if mode not in ("ugal-l", "ugal-g"):
        raise RoutingError(f"UGAL in time is ugal-l or ugal-g, not {mode!r}")
    if not is_dragonfly(fabric):
        raise RoutingError(f"UGAL routes dragonflies; {fabric.name!r} is not one")
    n_h = fabric.n_hosts
    hs = placement.host[program.src].astype(np.int64)
    hd = placement.host[program.dst].astype(np.int64)
    uniq, msg_pair = np.unique(hs * n_h + hd, return_inverse=True)
    src, dst = uniq // n_h, uniq % n_h
    k = len(uniq)
    short = build_paths(fabric, DragonflyRouting(fabric, "minimal"), src, dst, alpha=alpha, latency=latency)
    far = build_paths(fabric, DragonflyRouting(fabric, "valiant", seed), src, dst, alpha=alpha, latency=latency)
    paths = _stack(short, far, f"{mode}:when=posted")
    choices = _Choices(fabric, src, dst, mode, seed)
    took = np.zeros(program.n_messages, bool)
    res = [paths.res[paths.indptr[p]:paths.indptr[p + 1]].tolist() for p in range(paths.n_paths)]
    wts = [paths.weight[paths.indptr[p]:paths.indptr[p + 1]].tolist() for p in range(paths.n_paths)]

    # messages chosen but not flowing yet (in their latency) are in their source's queues already
    pending: list[tuple[float, int]] = []
    ahead = [0.0] * fabric.n_links

    def choose(t: float, m: int, weight: list[float]) -> int:
        while pending and pending[0][0] <= t:
            _, p = heapq.heappop(pending)
            for r, w in zip(res[p], wts[p]):
                if r < len(ahead):
                    ahead[r] -= w
        i = int(msg_pair[m])
        p = k + i if choices.valiant(i, weight, ahead) else i
        took[m] = p >= k
        heapq.heappush(pending, (t + float(paths.latency[p]), p))
        for r, w in zip(res[p], wts[p]):
            if r < len(ahead):
                ahead[r] += w
        return p

    from fabscope.dynamic.engine import run_program

    out = run_program(program, paths.capacity, res, wts, paths.cap, paths.latency, msg_pair.tolist(),
                      choose=choose)
    return UgalRun(program, out, took, mode, paths, np.where(took, msg_pair + k, msg_pair))


class _Choices:
    """Each pair's minimal and Valiant router-to-router links, and the rule that picks between them."""

    def __init__(self, fabric: Fabric, src: np.ndarray, dst: np.ndarray, mode: str, seed: int) -> None:
        short, owner, mid, w, val = DragonflyRouting(fabric, "valiant", seed).candidates(src, dst)
        self.cost = (1.0 / fabric.link_capacity).tolist()
        self.local = mode == "ugal-l"
        self.short = [[int(x) for x in short[:, i] if x >= 0] for i in range(len(src))]
        self.between = np.bincount(owner, weights=mid >= 0, minlength=len(src)) > 0
        self.subs: list[list[tuple[float, list[int]]]] = [[] for _ in range(len(src))]
        for j in range(len(owner)):
            self.subs[int(owner[j])].append((float(w[j]), [int(x) for x in val[:, j] if x >= 0]))

    def valiant(self, i: int, weight: list[float], ahead: list[float]) -> bool:
        """Whether pair ``i`` goes by Valiant, with ``weight`` flowing and ``ahead`` about to on each link."""
        if not self.between[i]:
            return False
        c = self.cost
        p = self.short[i]
        if self.local:
            qm = (weight[p[0]] + ahead[p[0]] + 1.0) * c[p[0]]
            qv = sum(ws * (weight[q[0]] + ahead[q[0]] + 1.0) * c[q[0]] for ws, q in self.subs[i])
        else:
            qm = max((weight[x] + ahead[x] + 1.0) * c[x] for x in p)
            qv = sum(ws * max((weight[x] + ahead[x] + 1.0) * c[x] for x in q) for ws, q in self.subs[i])
        hv = sum(ws * len(q) for ws, q in self.subs[i])
        return qm * len(p) > qv * hv


def _stack(a: Paths, b: Paths, name: str) -> Paths:
    """Paths ``a`` then ``b`` (the same fabric's resources)."""
    return Paths(np.r_[a.src_host, b.src_host], np.r_[a.dst_host, b.dst_host],
                 np.r_[a.indptr, a.indptr[-1] + b.indptr[1:]], np.r_[a.res, b.res], np.r_[a.weight, b.weight],
                 np.r_[a.cap, b.cap], np.r_[a.latency, b.latency], np.r_[a.hops, b.hops], a.capacity, a.n_links,
                 name)
