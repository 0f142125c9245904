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

So the engine refills only the flows at or above ``L`` that are connected to
the changed flows through flows at or above ``L``, with the others' load
subtracted from the capacities.

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
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from fabscope.dynamic.program import DeadlockError, Program

#: events closer than this (relative) happen together
TIME_TOL = 1e-12
#: rates within this (relative) of the threshold are refilled too
RATE_TOL = 1e-9

START, FLOW, FINISH = 0, 1, 2


@dataclass
class Outcome:
    """Times of a run: each message's flow start (after latency) and end, each step's start and end."""

    msg_post: np.ndarray       # both ends posted (before latency)
    msg_start: np.ndarray
    msg_end: np.ndarray
    step_start: np.ndarray
    step_end: np.ndarray
    events: int
    refills: int               # flows refilled, summed over events
    delivered: np.ndarray      # bytes integrated over each message's rate history

    @property
    def makespan(self) -> float:
        return float(np.nanmax(self.step_end))


Observer = Callable[[float, dict], None]


def run_program(program: Program, capacity: np.ndarray, path_res: Sequence[Sequence[int]],
                path_w: Sequence[Sequence[float]], path_cap: Sequence[float], path_lat: Sequence[float],
                msg_path: Sequence[int], observer: Observer | None = None) -> Outcome:
    """Run ``program``; message ``m`` follows path ``msg_path[m]``.

    ``observer(t, rate)`` is called after every refill with the rates of all
    flows in flight (a dict message -> bytes/s): the tests check the
    invariants on it.
    """
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
                    continue
                rt = rate.pop(m)
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
        if not started and not finished:
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
        todo = set(started)
        stack_r = [r for m, _ in finished for r in res_of[mpath[m]]]
        stack_r += [r for m in started for r in res_of[mpath[m]]]
        seen_r = set(stack_r)
        while stack_r:
            r = stack_r.pop()
            for g in on_res[r]:
                if g not in todo and rate[g] >= thr:
                    todo.add(g)
                    for r2 in res_of[mpath[g]]:
                        if r2 not in seen_r:
                            seen_r.add(r2)
                            stack_r.append(r2)
        refills += len(todo)
        new = _refill(todo, rate, mpath, res_of, w_of, pcap, cap_r, load, on_res)
        for g, nr in new.items():
            old = rate[g]
            if nr == old and g not in started:
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
        if observer is not None:
            observer(t, rate)
    if any(p > 0 for p in pending):
        _deadlock(program, np.array(pending), np.array(step_start))
    return Outcome(np.array(msg_post), np.array(msg_start), np.array(msg_end), np.array(step_start),
                   np.array(step_end), events, refills, np.array(delivered))


def _refill(todo: set[int], rate: dict[int, float], mpath: list[int], res_of: list[list[int]],
            w_of: list[list[float]], pcap: list[float], cap_r: list[float], load: list[float],
            on_res: list[dict[int, float]]) -> dict[int, float]:
    """Progressive filling of the flows ``todo``; the other flows keep their rates."""
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
    level = 0.0
    while heap and len(out) < len(todo):
        k, kind, x = heapq.heappop(heap)
        if kind == 0:
            if key.get(x) != k:
                continue
            del key[x]
            level = max(level, k)
            frozen = [g for g in on_res[x] if g in todo and g not in out]
        else:
            if x in out:
                continue
            level = max(level, k)
            frozen = [x]
        for g in frozen:
            out[g] = level
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
    return out


def _deadlock(program: Program, pending: np.ndarray, step_start: np.ndarray) -> None:
    """The steps that started but never ended: their ranks wait for ever."""
    stuck = np.flatnonzero((pending > 0) & ~np.isnan(step_start))
    ranks = sorted(set(program.step_rank[stuck].tolist()))
    from fabscope.dynamic.program import _ranks

    raise DeadlockError(f"program {program.name!r} deadlocks: ranks {_ranks(ranks)} wait for messages that "
                        f"never flow (each end waits for the other to post)")
