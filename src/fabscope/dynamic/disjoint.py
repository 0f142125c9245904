"""Several runs as one: each program on its own copy of the resources, in one engine run.

Runs that share no resource do not interact: a flow's rate depends only on the flows it
shares a resource with, and a step only on its own rank's messages.  :func:`union` lays
several (program, paths) runs side by side, each run's ranks, steps, paths and resources
renumbered after the previous run's, so one call of the engine does the work of many and pays
its fixed cost (argument checks, arrays handed to C, a few hundred microseconds) once.  Each run's
times are those it has alone, but for events of two runs that fall within the engine's time
tolerance (1e-12 relative) of each other: they are taken together, at the earlier time.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.dynamic.program import Program
>>> from fabscope.dynamic.resources import build_paths
>>> from fabscope.dynamic.fast import run_program                      # the compiled engine
>>> f = fat_tree(k=2, levels=2)
>>> prog = Program.from_rounds("two", 4, [([0, 1], [3, 3], 1e6)])        # two flows into host 3
>>> paths = build_paths(f, None, [0, 1], [3, 3])
>>> msg_path = np.array([0, 1])
>>> alone = run_program(prog, paths, msg_path)
>>> u = union([(prog, paths, msg_path)] * 3)                            # three copies, one run
>>> both = run_program(u.program, u.paths, u.msg_path)
>>> u.program.n_messages, len(u.paths.capacity) == 3 * len(paths.capacity)
(6, True)
>>> [bool(np.array_equal(both.step_end[u.steps(k)], alone.step_end)) for k in range(3)]
[True, True, True]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths


@dataclass(frozen=True, eq=False)
class Union:
    """The runs laid side by side: run ``k``'s steps are ``step_at[k]:step_at[k + 1]`` of ``program``,
    its messages ``msg_at[k]:msg_at[k + 1]``."""

    program: Program
    paths: Paths
    msg_path: np.ndarray
    step_at: np.ndarray
    msg_at: np.ndarray

    def steps(self, k: int) -> slice:
        return slice(int(self.step_at[k]), int(self.step_at[k + 1]))

    def messages(self, k: int) -> slice:
        return slice(int(self.msg_at[k]), int(self.msg_at[k + 1]))


def _offsets(counts: Sequence[int]) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def union(runs: Sequence[tuple[Program, Paths, np.ndarray]], delays: Sequence[np.ndarray] | None = None) -> Union:
    """``runs`` (program, its paths, each message's path) as one program on disjoint resources;
    ``delays``: each run's step delays in place of its program's (draws of one program's start).

    The paths keep no names: resource ``r`` of run ``k`` is resource ``r`` plus the resources of
    the runs before it, and ``n_links`` is the first run's (for the engine only).
    """
    progs = [r[0] for r in runs]
    paths = [r[1] for r in runs]
    delays = [p.step_delay for p in progs] if delays is None else delays
    rank_at = _offsets([p.n_ranks for p in progs])
    step_at = _offsets([p.n_steps for p in progs])
    msg_at = _offsets([p.n_messages for p in progs])
    path_at = _offsets([p.n_paths for p in paths])
    res_at = _offsets([len(p.capacity) for p in paths])
    entry_at = _offsets([len(p.res) for p in paths])

    def cat(arrays, shift=None):
        if shift is None:
            return np.concatenate(arrays)
        return np.concatenate([np.asarray(a) + s for a, s in zip(arrays, shift)])

    nxt = np.concatenate([np.where(p.step_next >= 0, p.step_next + s, -1) for p, s in zip(progs, step_at)])
    prog = Program(progs[0].name, int(rank_at[-1]), cat([p.src for p in progs], rank_at),
                   cat([p.dst for p in progs], rank_at), cat([p.bytes for p in progs]),
                   cat([p.send_step for p in progs], step_at), cat([p.recv_step for p in progs], step_at),
                   cat([p.step_rank for p in progs], rank_at), nxt, cat([np.asarray(d, float) for d in delays]),
                   cat([p.step_round for p in progs]), dict(progs[0].params))
    indptr = np.concatenate([np.zeros(1, np.int64), *(p.indptr[1:] + e for p, e in zip(paths, entry_at))])
    u = Paths(cat([p.src_host for p in paths]), cat([p.dst_host for p in paths]), indptr,
              cat([p.res for p in paths], res_at), cat([p.weight for p in paths]), cat([p.cap for p in paths]),
              cat([p.latency for p in paths]), cat([p.hops for p in paths]), cat([p.capacity for p in paths]),
              paths[0].n_links, paths[0].routing)
    msg_path = cat([np.asarray(r[2], np.int64) for r in runs], path_at)
    return Union(prog, u, msg_path, step_at, msg_at)
