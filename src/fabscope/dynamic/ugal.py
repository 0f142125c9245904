"""UGAL in time: each message chooses minimal or Valiant when it starts, from the loads then.

The static ``ugal-l`` / ``ugal-g`` engines (:mod:`fabscope.routing.dragonfly`) choose once per
flow, the flows placed in a seeded order.  Here the choice is the dynamic engine's: when both
ends of a message have posted it, its path is its minimal one (UGAL's minimal side: over every
cable between the two groups where they share several) or its Valiant one (spread evenly over
every intermediate group, as the static ``valiant``), minimal when
``q_min * H_min <= q_val * H_val``, where a link's load ``q`` is the weight of the flows in
flight on it then (and of those chosen but still in their latency: in their source's queues
already), plus this message (whole), over its capacity (``ugal-l``: the busiest of each path's
links up to its first global cable, the queues its source router's outputs show through credit
flow control, as the static rule sees; ``ugal-g``: its busiest link; for each side the mean over
its sub-paths).  The static rule differs in the queue: there a link's queue is only what it is
offered beyond its capacity (the flow model has no queues of its own); in time the flows in
flight are the queue.  A message between two routers of one group goes minimally.  The
compiled engine (flowsim.c) makes the choice itself from :class:`UgalRule`'s arrays; the
reference (Python) engine calls :meth:`UgalRule.chooser` back per message: the same sums in
the same order, so both choose alike.

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
from typing import Callable

import numpy as np

from fabscope.dynamic.outcome import Outcome
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths, build_paths
from fabscope.errors import FabscopeError, RoutingError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.model.latency import DEFAULT_ALPHA
from fabscope.routing.dragonfly import DragonflyRouting, is_dragonfly


#: Valiant only when clearly better (flowsim.c's CHOICE_TOL): loads summed in another order
#: differ in their last bits, and a tie goes minimal
CHOICE_TOL = 1e-9


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
    #: the engine that ran: "c" (compiled) or "python" (the reference)
    engine: str = "python"

    def as_run(self, placement: Placement):
        """The :class:`~fabscope.dynamic.run.Run` the results of ``simulate --dynamic`` are read from."""
        from fabscope.dynamic.run import Run

        return Run(self.program, placement, self.paths, self.msg_path, self.outcome, self.engine)

    @property
    def makespan(self) -> float:
        return self.outcome.makespan


def run_ugal(fabric: Fabric, placement: Placement, program: Program, mode: str = "ugal-g", *, seed: int = 0,
             alpha: float = DEFAULT_ALPHA, latency: bool = True, engine: str = "auto",
             progress: Callable[[int, float], None] | None = None, cables: str = "all") -> UgalRun:
    """Run ``program`` with every message choosing its path when it is posted (see the module);
    ``simulate --dynamic --routing ugal-g:when=posted`` from the command line.

    ``engine``: ``"c"`` the compiled engine (``"auto"``: it where it builds), ``"python"`` the
    reference; both choose alike and give the same times (tests/dynamic/test_ugal.py).
    ``cables``: the minimal side over every cable between two groups ("all") or on ``minimal``'s one
    ("tables"; ``ugal-g:cables=tables,when=posted``), as the static engines take it.
    ``progress(messages done, simulated seconds)``: called now and then by the compiled engine."""
    if mode not in ("ugal-l", "ugal-g"):
        raise RoutingError(f"UGAL in time is ugal-l or ugal-g, not {mode!r}")
    if not is_dragonfly(fabric):
        raise RoutingError(f"UGAL routes dragonflies; {fabric.name!r} is not one")
    if engine not in ("auto", "c", "python"):
        raise FabscopeError(f"unknown engine {engine!r}; choose from auto, python, c")
    n_h = fabric.n_hosts
    hs = placement.host[program.src].astype(np.int64)
    hd = placement.host[program.dst].astype(np.int64)
    uniq, msg_pair = np.unique(hs * n_h + hd, return_inverse=True)
    src, dst = uniq // n_h, uniq % n_h
    k = len(uniq)
    DragonflyRouting(fabric, mode, cables=cables)            # a bad value named before any work
    short = build_paths(fabric, DragonflyRouting(fabric, "minimal", cables=cables), src, dst, alpha=alpha,
                        latency=latency)
    far = build_paths(fabric, DragonflyRouting(fabric, "valiant", seed), src, dst, alpha=alpha, latency=latency)
    paths = _stack(short, far, f"{mode}:when=posted")
    rule = UgalRule(fabric, src, dst, mode, seed, msg_pair, cables)
    from fabscope.dynamic import fast

    use = fast.pick(engine)
    if use == "c":
        chosen = np.array(msg_pair, np.int64)
        out = fast.run_program(program, paths, msg_pair, choice=rule, chosen=chosen, progress=progress)
    else:
        from fabscope.dynamic.engine import run_program

        res = [paths.res[paths.indptr[p]:paths.indptr[p + 1]].tolist() for p in range(paths.n_paths)]
        wts = [paths.weight[paths.indptr[p]:paths.indptr[p + 1]].tolist() for p in range(paths.n_paths)]
        chosen = np.array(msg_pair, np.int64)
        out = run_program(program, paths.capacity, res, wts, paths.cap, paths.latency, msg_pair.tolist(),
                          choose=rule.chooser(res, wts, paths.latency.tolist(), chosen))
    return UgalRun(program, out, chosen >= k, mode, paths, chosen, use)


class UgalRule:
    """Each pair's minimal and Valiant router-to-router links, and the rule that picks between them.

    Held as arrays (CSR) that the compiled engine reads as its ``choice_t`` (flowsim.c), and as
    lists for :meth:`chooser`, the reference's callback: the same sums in the same order, so the
    two engines choose alike.  Message ``m`` is of pair ``pair[m]``; pair ``i``'s paths are ``i``
    (minimal) and ``n_pairs + i`` (Valiant)."""

    def __init__(self, fabric: Fabric, src: np.ndarray, dst: np.ndarray, mode: str, seed: int,
                 pair: np.ndarray, cables: str = "all") -> None:
        (mown, mw, short), owner, mid, w, val = DragonflyRouting(fabric, mode, seed, cables=cables).candidates(src, dst)
        n = len(src)
        self.n_pairs, self.n_links, self.local = n, fabric.n_links, mode == "ugal-l"
        self.pair = np.asarray(pair, np.int64)
        self.cost = 1.0 / fabric.link_capacity.astype(float)
        # the minimal sub-paths (one a pair but where groups share several cables), pair by pair
        self.sh_sub = np.r_[0, np.cumsum(np.bincount(mown, minlength=n))].astype(np.int64)
        self.sh_w = np.asarray(mw, float)
        ok = short.T >= 0                                  # sub-path by hop: each one's links in hop order
        self.sh_ptr = np.r_[0, np.cumsum(ok.sum(axis=1))].astype(np.int64)
        self.sh_link = short.T[ok].astype(np.int64)
        # the links a choice reads of each sub-path: ugal-l those up to its first global cable (rows 0-1:
        # a full buffer downstream stops its upstream link, as the static rule sees), ugal-g every one
        self.sh_seen = (ok[:, :2] if self.local else ok).sum(axis=1).astype(np.int64)
        order = np.argsort(owner, kind="stable")           # each pair's sub-paths, in the order drawn
        self.between = (np.bincount(owner, weights=mid >= 0, minlength=n) > 0).astype(np.int8)
        self.sub_ptr = np.r_[0, np.cumsum(np.bincount(owner, minlength=n))].astype(np.int64)
        self.sub_w = np.asarray(w, float)[order]
        sq = val.T[order]
        ok = sq >= 0
        self.sq_ptr = np.r_[0, np.cumsum(ok.sum(axis=1))].astype(np.int64)
        self.sq_link = sq[ok].astype(np.int64)
        self.sq_seen = (ok[:, :2] if self.local else ok).sum(axis=1).astype(np.int64)

    def _lists(self):
        cut = lambda a, ptr: [a[ptr[i]:ptr[i + 1]].tolist() for i in range(len(ptr) - 1)]  # noqa: E731
        subs = list(zip(self.sub_w.tolist(), cut(self.sq_link, self.sq_ptr), self.sq_seen.tolist()))
        mins = list(zip(self.sh_w.tolist(), cut(self.sh_link, self.sh_ptr), self.sh_seen.tolist()))
        return ([mins[self.sh_sub[i]:self.sh_sub[i + 1]] for i in range(self.n_pairs)],
                [subs[self.sub_ptr[i]:self.sub_ptr[i + 1]] for i in range(self.n_pairs)])

    def chooser(self, res: list[list[int]], wts: list[list[float]], lat: list[float], chosen: np.ndarray):
        """The reference engine's ``choose(t, m, weight)``: message ``m``'s path at time ``t`` (written
        into ``chosen[m]``), ``weight`` the weight in flight on every resource; ``res``/``wts``/``lat``
        every path's resources, weights and latency."""
        short, subs = self._lists()
        c = self.cost.tolist()
        between = self.between.astype(bool).tolist()
        pair = self.pair.tolist()
        k, n_l = self.n_pairs, self.n_links
        # messages chosen but not flowing yet (in their latency) are in their source's queues already
        pending: list[tuple[float, int]] = []
        ahead = [0.0] * n_l

        def load(x: list[int], n: int, weight: list[float]) -> float:
            if not n:
                return 0.0
            return max((weight[r] + ahead[r] + 1.0) * c[r] for r in x[:n])

        def choose(t: float, m: int, weight: list[float]) -> int:
            while pending and pending[0][0] <= t:
                _, p = heapq.heappop(pending)
                for r, w in zip(res[p], wts[p]):
                    if r < n_l:
                        ahead[r] -= w
            i = pair[m]
            p = i
            if between[i]:
                qm = hm = qv = hv = 0.0
                for ws, q, n in short[i]:
                    qm += ws * load(q, n, weight)
                for ws, q, _ in short[i]:
                    hm += ws * len(q)
                for ws, q, n in subs[i]:
                    qv += ws * load(q, n, weight)
                for ws, q, _ in subs[i]:
                    hv += ws * len(q)
                if qm * hm > qv * hv * (1 + CHOICE_TOL):
                    p = k + i
            chosen[m] = p
            heapq.heappush(pending, (t + lat[p], p))
            for r, w in zip(res[p], wts[p]):
                if r < n_l:
                    ahead[r] += w
            return p
        return choose


def _stack(a: Paths, b: Paths, name: str) -> Paths:
    """Paths ``a`` then ``b`` (the same fabric's resources)."""
    return Paths(np.r_[a.src_host, b.src_host], np.r_[a.dst_host, b.dst_host],
                 np.r_[a.indptr, a.indptr[-1] + b.indptr[1:]], np.r_[a.res, b.res], np.r_[a.weight, b.weight],
                 np.r_[a.cap, b.cap], np.r_[a.latency, b.latency], np.r_[a.hops, b.hops], a.capacity, a.n_links,
                 name)
