"""Run a program on a fabric: place its ranks, route its messages, run the engine.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> from fabscope.dynamic.program import Program
>>> f = fat_tree(k=2, levels=2)
>>> prog = Program.from_rounds("one", 4, [([0], [3], 1e6)])
>>> run = run_program_on(f, Placement.block(f, 4, ppn=1), prog, latency=False)
>>> float(run.outcome.msg_end[0]) == 1e6 / float(f.link_capacity[0])
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from fabscope.dynamic.outcome import Observer, Outcome
from fabscope.dynamic.program import Program
from fabscope.dynamic.resources import Paths, build_paths
from fabscope.dynamic.sizes import (BYTES_PER_HOP, BYTES_PER_MESSAGE, BYTES_PER_STEP,  # noqa: F401 (theirs)
                                    SimulationTooLarge, available_memory, check_counts, run_bytes)
from fabscope.errors import FabscopeError, TrafficError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.fabric.ports import PortPolicy, SubFlows, rail_class, split_flows
from fabscope.model.latency import DEFAULT_ALPHA
from fabscope.routing import Routing

ENGINES = ("auto", "python", "c")
#: how messages in flight share resources (see engine.run_program)
SHARINGS = ("maxmin", "count")

@dataclass
class Run:
    program: Program
    placement: Placement
    paths: Paths
    msg_path: np.ndarray
    outcome: Outcome
    engine: str
    #: the messages' sub-flows where a port policy split some over several port pairs
    #: (``msg_path`` then has one entry per sub-flow); None: one flow per message
    sub: SubFlows | None = None
    #: hosts with several ports: per message 0 same rail, 1 cross rail, 2 on one host
    #: (:func:`fabscope.fabric.ports.rail_class`); None where every host has one port
    rail: np.ndarray | None = None

    @property
    def msg_bytes(self) -> np.ndarray:
        """Bytes of each entry of ``msg_path``."""
        return self.program.bytes if self.sub is None else self.sub.bytes


def split_program(program: Program, sub: SubFlows) -> Program:
    """``program`` with message ``m`` replaced by its sub-flows, each in ``m``'s steps: a step
    ends when all of them have, as a striped message ends with its last port pair."""
    f = sub.flow
    return Program(program.name, program.n_ranks, program.src[f], program.dst[f], sub.bytes,
                   program.send_step[f], program.recv_step[f], program.step_rank, program.step_next,
                   program.step_delay, program.step_round, program.params)


def join_outcome(out: Outcome, sub: SubFlows) -> Outcome:
    """Per message of the unsplit program: first post and start, last end, bytes summed."""
    return Outcome(sub.least(out.msg_post), sub.least(out.msg_start), sub.most(out.msg_end), out.step_start,
                   out.step_end, out.events, out.refills, sub.total(out.delivered), out.joins)


def memory_estimate(program: Program, mean_hops: float = 8.0) -> int:
    """Bytes a run of ``program`` needs, about (checked before any work)."""
    return run_bytes(program.n_messages, program.n_steps, program.n_ranks, mean_hops)


def check_memory(program: Program, limit: int | None = None) -> int:
    return check_counts(program.name, program.n_messages, program.n_steps, program.n_ranks, limit)


def run_program_on(fabric: Fabric, placement: Placement, program: Program, routing: Routing | str | None = None,
                   *, seed: int = 0, alpha: float = DEFAULT_ALPHA, latency: bool = True, engine: str = "auto",
                   observer: Observer | None = None, memory_limit: int | None = None, sharing: str = "maxmin",
                   progress: Callable[[int, float], None] | None = None, ports: PortPolicy | str | None = None) -> Run:
    """Simulate ``program`` with its ranks on ``placement``; every message's times are in ``outcome``.

    ``ports``: how messages use hosts' ports (:mod:`fabscope.fabric.ports`; default ``rank``);
    a striped message runs as one flow per port pair and ends when the last one ends.

    ``sharing="count"`` runs the static ``--model congestion`` rule in time.
    ``progress(messages done, simulated seconds)`` is called now and then by
    the compiled engine (Ctrl-C then stops it cleanly); the Python engine does not call it.
    """
    if engine not in ENGINES:
        raise FabscopeError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    if sharing not in SHARINGS:
        raise FabscopeError(f"unknown sharing {sharing!r}; choose from {', '.join(SHARINGS)}")
    if program.n_ranks > placement.n_ranks:
        raise TrafficError(f"program {program.name!r} has {program.n_ranks} ranks, the job {placement.n_ranks}")
    check_memory(program, memory_limit)
    sub = split_flows(fabric, placement, program.src, program.dst, program.bytes, ports)
    full = program
    if not sub.identity:
        program = split_program(program, sub)
    n_t = fabric.n_terminals
    key = sub.src * n_t + sub.dst
    uniq, msg_path = np.unique(key, return_inverse=True)
    paths = build_paths(fabric, routing, uniq // n_t, uniq % n_t, seed=seed, alpha=alpha, latency=latency,
                        terminals=True)
    if observer is not None and engine == "c":
        raise FabscopeError("the compiled engine takes no observer; use engine='python'")
    from fabscope.dynamic import fast

    use = "python" if observer is not None else fast.pick(engine)
    if use == "c":
        outcome = fast.run_program(program, paths, msg_path, sharing, progress=progress)
    else:
        from fabscope.dynamic.engine import run_program   # the reference: not imported where the compiled engine runs

        res = [paths.res[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
        wts = [paths.weight[paths.indptr[p]:paths.indptr[p + 1]] for p in range(paths.n_paths)]
        outcome = run_program(program, paths.capacity, res, wts, paths.cap, paths.latency, msg_path.tolist(),
                              observer=observer, sharing=sharing)
    rail = None if fabric.single_port else rail_class(fabric, sub)
    if sub.identity:
        return Run(program, placement, paths, msg_path, outcome, use, rail=rail)
    return Run(full, placement, paths, msg_path, join_outcome(outcome, sub), use, sub, rail)


