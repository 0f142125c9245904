"""The event-driven flow engine (pure Python: the reference implementation).

Messages become flows after their path's latency, share resources max-min
fairly, and finish; steps of a :class:`~fabscope.dynamic.program.Program`
end when their messages have, and start the rank's next step.

At each event only the rates that can change are recomputed.  Two facts of
progressive filling bound that set (both proved in docs/dynamic.md):

* flows that share no resource, transitively, with a flow that started or
  finished keep their rates;
* flows whose rate is below a threshold ``L`` keep theirs too, where ``L`` is
  the smallest of the finished flows' rates and of the started flows' lower
  bounds ``min over their resources of capacity / total weight``: below level
  ``L`` progressive filling runs the same with or without those flows.

Within that set most rates do not move either (a flow held back elsewhere
stays held back), so the engine starts small: the started flows and the flows
at or above ``L`` on the changed flows' resources.  It refills them with the
others' load subtracted from the capacities, then checks the max-min
certificate (every flow has a full resource where its rate is the largest, or
its cap) on every resource it touched, and adds the flows that fail it, until
none does.  Allocations that pass the certificate are the max-min fair one,
so the result is exact; the set grows to the whole component only when the
change really spreads that far.

The compiled engine (``flowsim.c``) reaches the same rates in one filling per
event: a fixed flow joins when a resource it crosses would fill below its
rate, or when the level reaches its rate and its bottleneck no longer holds it
(docs/dynamic.md, "The refill"); this module stays the reference.

>>> import numpy as np
>>> from fabscope.dynamic.program import Program
>>> # two messages of 10 bytes on one resource of capacity 10: both at 5 B/s, done at 2 s
>>> prog = Program.from_rounds("x", 3, [([0, 1], [2, 2], 10.0)])
>>> out = run_program(prog, np.array([10.0]), [[0], [0]], [[1.0], [1.0]], [np.inf, np.inf], [0.0, 0.0], [0, 1])
>>> out.msg_end.tolist()
[2.0, 2.0]
"""

from __future__ import annotations

import heapq
import math
from typing import Callable, Sequence

import numpy as np

from fabscope.dynamic.outcome import Observer, Outcome, _deadlock
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import check_capacity

#: events closer than this (relative) happen together
TIME_TOL = 1e-12
#: rates within this (relative) of the threshold are refilled too
RATE_TOL = 1e-9
#: a refill that moves a rate by less than this (relative) leaves it alone: float noise
SAME_RATE = 1e-12

START, FLOW, FINISH = 0, 1, 2


def run_program(program: Program, capacity: np.ndarray, path_res: Sequence[Sequence[int]],
                path_w: Sequence[Sequence[float]], path_cap: Sequence[float], path_lat: Sequence[float],
                msg_path: Sequence[int], observer: Observer | None = None, sharing: str = "maxmin",
                choose: Callable[[float, int, list[float]], int] | None = None) -> Outcome:
    """Run ``program``; message ``m`` follows path ``msg_path[m]``.

    ``choose(t, m, weights)``, when given, picks message ``m``'s path at time ``t``, when both its
    ends have posted it, from the weight of the flows in flight on every resource then (adaptive
    routing in time).  Messages posted at one time choose after every event at that time, in
    message order (not in the order their steps started, which ties between equal times decide).

    ``sharing``: ``"maxmin"`` (max-min fair rates), or ``"count"``: each flow
    gets the capacity of its most crowded resource over the flows' total
    weight there, as the static ``--model congestion`` (ORCS's rule): what a
    flow held back elsewhere leaves unused goes to no one.

    ``observer(t, rate)`` is called after every refill with the rates of all
    flows in flight (a dict message -> bytes/s): the tests check the
    invariants on it.
    """
    if sharing not in ("maxmin", "count"):
        raise ValueError(f"unknown sharing {sharing!r}; choose from maxmin, count")
    check_capacity(capacity)
    cap_r = [float(c) for c in capacity]
    n_res = len(cap_r)
    m_total = program.n_messages
    n_steps = program.n_steps
    size = program.bytes.tolist()
    mpath = [int(p) for p in msg_path]
    res_of = [list(map(int, r)) for r in path_res]
    w_of = [list(map(float, w)) for w in path_w]
    pcap = [float(c) for c in path_cap]
    plat = [float(x) for x in path_lat]
    # step -> the messages it posts or receives (a message appears once per role)
    roles = np.r_[program.send_step, program.recv_step]
    order = np.argsort(roles, kind="stable")
    step_ptr = np.r_[0, np.cumsum(np.bincount(roles, minlength=n_steps))].tolist()
    step_msg = (order % m_total).tolist()
    pending = np.bincount(roles, minlength=n_steps).tolist()
    step_next = program.step_next.tolist()
    step_delay = program.step_delay.tolist()
    send_step = program.send_step.tolist()
    recv_step = program.recv_step.tolist()
    need = [2] * m_total
    has_prev = np.zeros(n_steps, bool)
    nx = program.step_next[program.step_next >= 0]
    has_prev[nx] = True

    msg_post = [math.nan] * m_total
    msg_start = [math.nan] * m_total
    msg_end = [math.nan] * m_total
    step_start = [math.nan] * n_steps
    step_end = [math.nan] * n_steps
    delivered = [0.0] * m_total

    rate: dict[int, float] = {}          # flows in flight
    t_last: dict[int, float] = {}
    remaining: dict[int, float] = {}
    version = [0] * m_total
    on_res: list[dict[int, float]] = [dict() for _ in range(n_res)]   # flow -> weight
    wsum = [0.0] * n_res                                             # weight of flows in flight
    load = [0.0] * n_res                                             # rate * weight of flows in flight
    bneck: dict[int, int] = {}           # a resource where the flow's rate is the largest and that is full; -1: cap

    heap: list[tuple[float, int, int, int, int]] = []
    seq = 0
    for s in np.flatnonzero(~has_prev).tolist():
        heapq.heappush(heap, (step_delay[s], seq, START, s, 0))
        seq += 1
    events = refills = 0

    while heap:
        t = heap[0][0]
        horizon = t + abs(t) * TIME_TOL
        started: list[int] = []
        finished: list[tuple[int, float]] = []
        posted: list[int] = []
        while heap and heap[0][0] <= horizon:
            _, _, kind, a, ver = heapq.heappop(heap)
            events += 1
            done_msgs: list[int] = []
            if kind == START:
                step_start[a] = t
                for i in range(step_ptr[a], step_ptr[a + 1]):
                    m = step_msg[i]
                    need[m] -= 1
                    if need[m] == 0:
                        msg_post[m] = t
                        if choose is not None:
                            posted.append(m)
                            continue
                        heapq.heappush(heap, (t + plat[mpath[m]], seq, FLOW, m, 0))
                        seq += 1
                if pending[a] == 0:
                    step_end[a] = t
                    nxt = step_next[a]
                    if nxt >= 0:
                        heapq.heappush(heap, (t + step_delay[nxt], seq, START, nxt, 0))
                        seq += 1
                continue
            if kind == FLOW:
                m = a
                msg_start[m] = t
                p = mpath[m]
                if size[m] <= 0 or (not res_of[p] and not math.isfinite(pcap[p])):
                    done_msgs.append(m)
                else:
                    rate[m] = 0.0
                    t_last[m] = t
                    remaining[m] = size[m]
                    for r, w in zip(res_of[p], w_of[p]):
                        on_res[r][m] = w
                        wsum[r] += w
                    started.append(m)
            else:  # FINISH
                m = a
                if ver != version[m] or m not in rate:
                    events -= 1            # a stale finish event (the rate changed since): not counted
                    continue
                rt = rate.pop(m)
                bneck.pop(m, None)
                delivered[m] += rt * (t - t_last.pop(m))
                remaining.pop(m)
                p = mpath[m]
                for r, w in zip(res_of[p], w_of[p]):
                    del on_res[r][m]
                    wsum[r] -= w
                    load[r] -= rt * w
                    if not on_res[r]:
                        wsum[r] = 0.0
                        load[r] = 0.0
                finished.append((m, rt))
                done_msgs.append(m)
            for m in done_msgs:
                msg_end[m] = t
                for s in (send_step[m], recv_step[m]):
                    pending[s] -= 1
                    if pending[s] == 0 and not math.isnan(step_start[s]):
                        step_end[s] = t
                        nxt = step_next[s]
                        if nxt >= 0:
                            heapq.heappush(heap, (t + step_delay[nxt], seq, START, nxt, 0))
                            seq += 1
        for m in sorted(posted):
            mpath[m] = choose(t, m, wsum)
            heapq.heappush(heap, (t + plat[mpath[m]], seq, FLOW, m, 0))
            seq += 1
        if not started and not finished:
            continue
        if sharing == "count":
            new = _count_rates(started, finished, mpath, res_of, pcap, cap_r, wsum, on_res)
            refills += len(new)
            _apply(new, started, t, rate, t_last, delivered, remaining, mpath, res_of, w_of, load, version, heap, seq)
            seq += len(new)
            if observer is not None:
                observer(t, rate)
            continue
        # ---- which flows to refill --------------------------------------------------
        thr = math.inf
        for _, rt in finished:
            thr = min(thr, rt)
        for m in started:
            p = mpath[m]
            lb = pcap[p]
            for r in res_of[p]:
                lb = min(lb, cap_r[r] / wsum[r])
            thr = min(thr, lb)
        thr *= 1 - RATE_TOL
        # start from the flows at or above the threshold on the changed flows' resources,
        # refill them with the others fixed, and add flows while the certificate fails
        todo = set(started)
        fin_res = {r for m, _ in finished for r in res_of[mpath[m]]}
        for r in fin_res | {r for m in started for r in res_of[mpath[m]]}:
            for g in on_res[r]:
                if g not in todo and rate[g] >= thr:
                    todo.add(g)
        while True:
            new, bn = _refill(todo, rate, mpath, res_of, w_of, pcap, cap_r, load, on_res)
            add = _uncertified(todo, new, bn, fin_res, rate, bneck, mpath, res_of, pcap, cap_r, on_res)
            if not add:
                break
            todo |= add
        refills += len(todo)
        bneck.update(bn)
        _apply(new, started, t, rate, t_last, delivered, remaining, mpath, res_of, w_of, load, version, heap, seq)
        seq += len(new)
        if observer is not None:
            observer(t, rate)
    if any(p > 0 for p in pending):
        _deadlock(program, np.array(pending), np.array(step_start))
    return Outcome(np.array(msg_post), np.array(msg_start), np.array(msg_end), np.array(step_start),
                   np.array(step_end), events, refills, np.array(delivered))


def _apply(new: dict[int, float], started: list[int], t: float, rate: dict[int, float], t_last: dict[int, float],
           delivered: list[float], remaining: dict[int, float], mpath: list[int], res_of: list[list[int]],
           w_of: list[list[float]], load: list[float], version: list[int], heap: list, seq: int) -> None:
    """Set the new rates (bytes so far booked at the old ones) and push each changed flow's finish event."""
    start = set(started)
    for g, nr in new.items():
        old = rate[g]
        if g not in start and abs(nr - old) <= SAME_RATE * old:
            continue
        dt = t - t_last[g]
        if dt > 0:
            delivered[g] += old * dt
            remaining[g] -= old * dt
            t_last[g] = t
        p = mpath[g]
        for r, w in zip(res_of[p], w_of[p]):
            load[r] += (nr - old) * w
        rate[g] = nr
        version[g] += 1
        heapq.heappush(heap, (t + max(remaining[g], 0.0) / nr, seq, FINISH, g, version[g]))
        seq += 1


def _count_rates(started: list[int], finished: list[tuple[int, float]], mpath: list[int], res_of: list[list[int]],
                 pcap: list[float], cap_r: list[float], wsum: list[float],
                 on_res: list[dict[int, float]]) -> dict[int, float]:
    """``sharing="count"``: new rates of the flows on a resource whose count changed (the others keep theirs)."""
    changed = {r for m in started for r in res_of[mpath[m]]} | {r for m, _ in finished for r in res_of[mpath[m]]}
    flows = set(started)
    for r in changed:
        flows.update(on_res[r])
    return {g: min([pcap[mpath[g]]] + [cap_r[r] / wsum[r] for r in res_of[mpath[g]]]) for g in flows}


def _refill(todo: set[int], rate: dict[int, float], mpath: list[int], res_of: list[list[int]],
            w_of: list[list[float]], pcap: list[float], cap_r: list[float], load: list[float],
            on_res: list[dict[int, float]]) -> tuple[dict[int, float], dict[int, int]]:
    """Progressive filling of the flows ``todo``; the other flows keep their rates.
    Returns the new rates and where each flow froze (a resource, or -1 at its cap)."""
    resid: dict[int, float] = {}
    live_w: dict[int, float] = {}
    for g in todo:
        p = mpath[g]
        rg = rate[g]
        for r, w in zip(res_of[p], w_of[p]):
            if r not in resid:
                resid[r] = cap_r[r] - load[r]
                live_w[r] = 0.0
            resid[r] += rg * w
            live_w[r] += w
    heap: list[tuple[float, int, int]] = []
    key: dict[int, float] = {}
    for r, lw in live_w.items():
        k = max(resid[r], 0.0) / lw
        key[r] = k
        heap.append((k, 0, r))
    for g in todo:
        c = pcap[mpath[g]]
        if math.isfinite(c):
            heap.append((c, 1, g))
    heapq.heapify(heap)
    out: dict[int, float] = {}
    where: dict[int, int] = {}
    level = 0.0
    while heap and len(out) < len(todo):
        k, kind, x = heapq.heappop(heap)
        if kind == 0:
            if key.get(x) != k:
                continue
            del key[x]
            level = max(level, k)
            frozen = [g for g in on_res[x] if g in todo and g not in out]
            at = x
        else:
            if x in out:
                continue
            level = max(level, k)
            frozen = [x]
            at = -1
        for g in frozen:
            out[g] = level
            where[g] = at
            p = mpath[g]
            for r, w in zip(res_of[p], w_of[p]):
                resid[r] -= w * level
                live_w[r] -= w
                if r in key:
                    if live_w[r] > 1e-12:
                        nk = max(resid[r], 0.0) / live_w[r]
                        key[r] = nk
                        heapq.heappush(heap, (nk, 0, r))
                    else:
                        del key[r]
    return out, where


def _uncertified(todo: set[int], new: dict[int, float], where: dict[int, int], fin_res: set[int],
                 rate: dict[int, float], bneck: dict[int, int], mpath: list[int], res_of: list[list[int]],
                 pcap: list[float], cap_r: list[float], on_res: list[dict[int, float]]) -> set[int]:
    """Flows to add to ``todo`` because the tentative rates are not max-min fair yet.

    Rates are max-min fair when every flow has a bottleneck: a full resource on
    which its rate is the largest (or its cap).  A refilled flow froze on a full
    resource, but a fixed flow there may be faster: that one must give way.  A
    fixed flow keeps its bottleneck unless the resource was touched (crossed by
    a refilled or finished flow); then it needs another, or joins the refill.
    """
    stats: dict[int, tuple[bool, float]] = {}

    def stat(q: int) -> tuple[bool, float]:
        if q not in stats:
            ld = mx = 0.0
            for h, w in on_res[q].items():
                rh = new[h] if h in todo else rate[h]
                ld += rh * w
                mx = max(mx, rh)
            stats[q] = (ld >= cap_r[q] * (1 - RATE_TOL), mx)
        return stats[q]

    add: set[int] = set()
    for g in todo:
        b = where[g]
        if b >= 0 and new[g] < stat(b)[1] * (1 - RATE_TOL):
            for h in on_res[b]:
                if h not in todo and rate[h] > new[g]:
                    add.add(h)
    touched = {r for g in todo for r in res_of[mpath[g]]} | fin_res
    for r in touched:
        for h in on_res[r]:
            if h in todo or h in add or bneck.get(h) != r:
                continue
            rh = rate[h]
            full, mx = stat(r)
            if full and rh >= mx * (1 - RATE_TOL):
                continue
            found = -2
            for q in res_of[mpath[h]]:
                f2, m2 = stat(q)
                if f2 and rh >= m2 * (1 - RATE_TOL):
                    found = q
                    break
            if found == -2 and rh >= pcap[mpath[h]] * (1 - RATE_TOL):
                found = -1
            if found == -2:
                add.add(h)
            else:
                bneck[h] = found
    return add
