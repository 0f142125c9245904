"""Programs of messages: what each rank sends and receives, in which order.

A :class:`Program` is a set of messages and a set of *steps*.  A step belongs
to one rank; it posts some sends and receives together and ends when all of
them have completed (MPI's ``Isend``/``Irecv`` then ``Waitall``).  A rank's
steps run one after the other: step ``next[s]`` starts ``delay[next[s]]``
seconds after step ``s`` ends; a rank's first step starts at ``delay[s]``.
A message flows once its sender's step and its receiver's step have both
started (MPI's rendezvous protocol, which the large messages of the
benchmarks use) and then pays its path's latency.

Most programs are *rounds*: in round ``k`` some ranks send to others; a rank
takes part in the rounds where it sends or receives, in order, and does not
wait for ranks it does not talk to (no barrier between rounds).

>>> p = Program.from_rounds("ping-pong", 2, [([0], [1], 8.0), ([1], [0], 8.0)])
>>> p.n_messages, p.n_steps, p.step_rank.tolist(), p.step_next.tolist()
(2, 4, [0, 0, 1, 1], [1, -1, 3, -1])
>>> p.send_step.tolist(), p.recv_step.tolist()
([0, 3], [2, 1])
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from fabscope.errors import TrafficError


class DeadlockError(TrafficError):
    """A program whose ranks wait for messages that never come."""


def _unique(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for non-negative integer keys, by counting where
    the keys are dense (at most four times as many possible values as keys: a program's (rank,
    round) pairs mostly are), by sorting elsewhere.  The same arrays either way; counting is
    linear where the sort is not (diagnose's time model builds hundreds of programs).

    >>> u, i = _unique(np.array([5, 2, 5, 0]))
    >>> u.tolist(), i.tolist()
    ([0, 2, 5], [2, 1, 2, 0])
    """
    span = int(keys.max()) + 1 if len(keys) else 0
    if span > 4 * len(keys):
        return np.unique(keys, return_inverse=True)
    present = np.bincount(keys, minlength=span) > 0
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[keys]


@dataclass(frozen=True, eq=False)
class Program:
    name: str
    n_ranks: int
    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    send_step: np.ndarray
    recv_step: np.ndarray
    step_rank: np.ndarray
    step_next: np.ndarray
    step_delay: np.ndarray
    step_round: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        m, s = len(self.src), len(self.step_rank)
        for k in ("dst", "bytes", "send_step", "recv_step"):
            if len(getattr(self, k)) != m:
                raise TrafficError(f"program {self.name!r}: {k} has {len(getattr(self, k))} entries for {m} messages")
        for k in ("step_next", "step_delay", "step_round"):
            if len(getattr(self, k)) != s:
                raise TrafficError(f"program {self.name!r}: {k} has {len(getattr(self, k))} entries for {s} steps")
        if m == 0:
            raise TrafficError(f"program {self.name!r} sends no message")
        for k in ("src", "dst"):
            v = getattr(self, k)
            if v.min() < 0 or v.max() >= self.n_ranks:
                raise TrafficError(f"program {self.name!r} names rank {int(v.max())}; the job has {self.n_ranks} ranks")
        if np.any(self.bytes < 0) or not np.all(np.isfinite(self.bytes)):
            raise TrafficError(f"program {self.name!r} has a message of negative or infinite size")
        if np.any(self.step_rank[self.send_step] != self.src) or np.any(self.step_rank[self.recv_step] != self.dst):
            raise TrafficError(f"program {self.name!r}: a message sits in a step of another rank")

    @property
    def n_messages(self) -> int:
        return len(self.src)

    @property
    def n_steps(self) -> int:
        return len(self.step_rank)

    # ---- constructors -----------------------------------------------------------
    @classmethod
    def from_rounds(cls, name: str, n_ranks: int, rounds: Sequence[tuple[Any, Any, Any]], /,
                    **params: Any) -> "Program":
        """Rounds of ``(src, dst, bytes)`` (arrays, bytes may be a scalar)."""
        srcs, dsts, sizes, rnd = [], [], [], []
        for k, (s, d, b) in enumerate(rounds):
            s = np.atleast_1d(np.asarray(s, dtype=np.int64))
            d = np.atleast_1d(np.asarray(d, dtype=np.int64))
            srcs.append(s)
            dsts.append(d)
            sizes.append(np.broadcast_to(np.asarray(b, dtype=float), s.shape))
            rnd.append(np.full(len(s), k, dtype=np.int64))
        return cls.from_arrays(name, n_ranks, np.concatenate(srcs), np.concatenate(dsts), np.concatenate(sizes),
                               np.concatenate(rnd), **params)

    @classmethod
    def from_arrays(cls, name: str, n_ranks: int, src, dst, size, rnd, /, **params: Any) -> "Program":
        """Messages with their round numbers: a rank's steps are the rounds it takes part in."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        size = np.asarray(size, dtype=float)
        rnd = np.asarray(rnd, dtype=np.int64)
        m = len(src)
        if m == 0:
            raise TrafficError(f"program {name!r} sends no message")
        for v in (src, dst):
            if v.min() < 0 or v.max() >= n_ranks:
                raise TrafficError(f"program {name!r} names rank {int(v.max())}; the job has {n_ranks} ranks")
        if rnd.min() < 0:          # a rank's steps are keyed by rank * rounds + round: none may be negative
            raise TrafficError(f"program {name!r} has round {int(rnd.min())}; rounds count from 0")
        n_rounds = int(rnd.max()) + 1
        keys = np.r_[src * n_rounds + rnd, dst * n_rounds + rnd]
        uniq, inv = _unique(keys)
        step_rank = uniq // n_rounds
        nxt = np.arange(1, len(uniq) + 1, dtype=np.int64)
        nxt[np.r_[step_rank[1:] != step_rank[:-1], True]] = -1
        return cls(name, n_ranks, src, dst, size, inv[:m].astype(np.int64), inv[m:].astype(np.int64),
                   step_rank, nxt, np.zeros(len(uniq)), uniq % n_rounds, dict(params))

    @classmethod
    def from_ops(cls, name: str, ops: Sequence[Sequence[Sequence[tuple]]], /, **params: Any) -> "Program":
        """Per rank, a list of steps; a step is a list of ``("send", peer, bytes[, tag])`` and
        ``("recv", peer[, tag])``.  The k-th send on a channel (source, destination, tag)
        matches the k-th receive on it, as MPI orders messages.  A receive no send
        matches (or a send nobody receives) raises :class:`DeadlockError` naming the ranks.

        >>> p = Program.from_ops("x", [[[("send", 1, 8)], [("recv", 1)]], [[("recv", 0)], [("send", 0, 8)]]])
        >>> p.n_messages
        2
        >>> try:
        ...     Program.from_ops("x", [[[("recv", 1)]], [[("recv", 0)]]])
        ... except DeadlockError as err:
        ...     print(err)
        program 'x' deadlocks: ranks 0, 1 wait for messages nobody sends (rank 0 from 1, rank 1 from 0)
        """
        n = len(ops)
        sends: dict[tuple[int, int, int], list[tuple[int, float]]] = defaultdict(list)
        recvs: dict[tuple[int, int, int], list[int]] = defaultdict(list)
        step_rank, step_next = [], []
        for r, steps in enumerate(ops):
            first = len(step_rank)
            for k, step in enumerate(steps):
                sid = len(step_rank)
                step_rank.append(r)
                step_next.append(sid + 1 if k + 1 < len(steps) else -1)
                for op in step:
                    kind, peer = op[0], int(op[1])
                    if not 0 <= peer < n:
                        raise TrafficError(f"program {name!r}: rank {r} names rank {peer}; the job has {n} ranks")
                    if kind == "send":
                        sends[(r, peer, int(op[3]) if len(op) > 3 else 0)].append((sid, float(op[2])))
                    elif kind == "recv":
                        recvs[(peer, r, int(op[2]) if len(op) > 2 else 0)].append(sid)
                    else:
                        raise TrafficError(f"program {name!r}: rank {r}: unknown operation {kind!r}")
            del first
        src, dst, size, ss, rs = [], [], [], [], []
        waiting: dict[int, set[int]] = defaultdict(set)
        unreceived: dict[int, set[int]] = defaultdict(set)
        for ch in set(sends) | set(recvs):
            s_list, r_list = sends.get(ch, []), recvs.get(ch, [])
            for (sid, b), rid in zip(s_list, r_list):
                src.append(ch[0])
                dst.append(ch[1])
                size.append(b)
                ss.append(sid)
                rs.append(rid)
            if len(r_list) > len(s_list):
                waiting[ch[1]].add(ch[0])
            elif len(s_list) > len(r_list):
                unreceived[ch[0]].add(ch[1])
        if waiting:
            who = sorted(waiting)
            detail = ", ".join(f"rank {r} from {', '.join(map(str, sorted(waiting[r])))}" for r in who[:8])
            raise DeadlockError(f"program {name!r} deadlocks: ranks {_ranks(who)} wait for messages nobody sends ({detail})")
        if unreceived:
            who = sorted(unreceived)
            raise DeadlockError(f"program {name!r} deadlocks: ranks {_ranks(who)} send messages nobody receives "
                                f"(rank {who[0]} to {', '.join(map(str, sorted(unreceived[who[0]])))})")
        order = np.lexsort((np.array(rs), np.array(ss)))
        s_rank = np.array(step_rank, dtype=np.int64)
        rounds = np.zeros(len(step_rank), dtype=np.int64)
        for r in range(n):
            idx = np.flatnonzero(s_rank == r)
            rounds[idx] = np.arange(len(idx))
        return cls(name, n, np.array(src, np.int64)[order], np.array(dst, np.int64)[order],
                   np.array(size, float)[order], np.array(ss, np.int64)[order], np.array(rs, np.int64)[order],
                   s_rank, np.array(step_next, np.int64), np.zeros(len(step_rank)), rounds, dict(params))

    @classmethod
    def timed(cls, name: str, n_ranks: int, time, src, dst, size, /, **params: Any) -> "Program":
        """A trace of timed messages: message ``i`` is posted at ``time[i]`` by both ends,
        independently of the others (a replay of what a tracer recorded)."""
        t = np.asarray(time, dtype=float)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        m = len(src)
        if m == 0:
            raise TrafficError(f"trace {name!r} holds no message")
        if np.any(t < 0) or not np.all(np.isfinite(t)):
            raise TrafficError(f"trace {name!r}: a message has a negative or missing time")
        ids = np.arange(m, dtype=np.int64)
        return cls(name, n_ranks, src, dst, np.asarray(size, dtype=float), ids, m + ids, np.r_[src, dst],
                   np.full(2 * m, -1, dtype=np.int64), np.r_[t, t], np.zeros(2 * m, dtype=np.int64), dict(params))


def _ranks(r: Sequence[int]) -> str:
    s = ", ".join(map(str, r[:16]))
    return s + (f" and {len(r) - 16} more" if len(r) > 16 else "")
