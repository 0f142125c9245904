"""An application's time per iteration on a placement, predicted by running its program in time.

:func:`app_program` picks the program: the kernel's own (:mod:`fabscope.dynamic.apps`) when the run
names a known kernel and its recorded traffic is what that program sends; else the generic one, the
communication graph per iteration (every edge one message, all posted at once, each rank's
iteration ``i + 1`` after its iteration-``i`` messages); :func:`trace_program` replays a trace of
timed messages instead.  :func:`predict_iteration` runs it with the
ranks on given hosts and returns the median and mean of the timed iterations.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.mapping.commgraph import stencil
>>> f = fat_tree(k=4, levels=1)                   # a star of 4 hosts
>>> prog, how = app_program(None, stencil((2, 2), halo=1e6, periodic=False))
>>> how
'generic: the graph stencil2d:2x2 per iteration'
>>> p = predict_iteration(f, np.arange(4), prog, latency=False)
>>> round(p.median * float(f.link_capacity[0]) / 1e6, 6)  # two halos of 1 MB out of each host
2.0
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fabscope.dynamic import apps
from fabscope.dynamic.program import Program
from fabscope.errors import TrafficError
from fabscope.mapping.apprun import HALO_KERNELS, halo_dims, halo_periodic
from fabscope.mapping.commgraph import CommGraph

if TYPE_CHECKING:
    from fabscope.measure.apps import AppRun

__all__ = ["TIE", "Prediction", "app_program", "kernel_program", "order_text", "predict_iteration", "trace_program"]

#: predicted times this close (relative) are a tie
TIE = 1e-6


@dataclass(frozen=True)
class Prediction:
    median: float            # seconds per timed iteration
    mean: float
    iterations: int          # timed iterations simulated
    engine: str


def kernel_program(run: AppRun, iterations: int | None = None, algorithm: str | None = None) -> Program | None:
    """The program of ``run``'s kernel, or None when fabscope has none for its test name.
    ``iterations``: simulate that many timed ones instead of the run's count; ``algorithm``: the
    collective's algorithm (default: ``params.algorithm``, else the kernel's default)."""
    it = int(iterations or run.iterations)
    w = run.warmup
    p = run.params
    compute = float(p.get("compute") or 0.0) if isinstance(p.get("compute", 0), (int, float)) else 0.0
    if run.test in HALO_KERNELS:
        dims = halo_dims(run)
        prog = apps.halo(dims, run.size, halo_periodic(run, len(dims)), it, w, compute, name=run.test)
    elif run.test == "fft-transpose":
        grid = p.get("dims") or apps.dims_create(run.ranks, 2)
        algo = algorithm or (p.get("algorithm") if p.get("algorithm") in apps.ALLTOALL else "pairwise")
        prog = apps.fft_transpose([int(x) for x in grid], run.size, it, w, algo, compute)
    elif run.test == "allreduce-loop":
        algo = algorithm or (p.get("algorithm") if p.get("algorithm") in apps.ALLREDUCE else None)
        prog = apps.allreduce_loop(run.ranks, run.size, it, w, algo, compute)
    else:
        return None
    if prog.n_ranks != run.ranks:
        raise TrafficError(f"{run.test}'s grid {prog.params.get('dims')} has {prog.n_ranks} ranks, "
                           f"the run {run.ranks}")
    return prog


def _algorithms(run: AppRun) -> list[str | None]:
    """The algorithms to try for a run's collective: the one it names, else its default, then the others
    (the one whose traffic the run recorded is taken: a PMPI count assumes a ring allreduce)."""
    if run.test == "allreduce-loop" and run.params.get("algorithm") not in apps.ALLREDUCE:
        return [None, *apps.ALLREDUCE]
    return [None]


def _pairs(n: int, src, dst, w) -> tuple[np.ndarray, np.ndarray]:
    """(keys src * n + dst, summed weights) of the non-zero pairs between two ranks, sorted (sparse:
    a dense matrix of a large run would not fit)."""
    src, dst, w = np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(w, float)
    keep = src != dst
    keys, inv = np.unique(src[keep] * n + dst[keep], return_inverse=True)
    tot = np.bincount(inv, weights=w[keep], minlength=len(keys))
    nz = tot > 0
    return keys[nz], tot[nz]


def _sends_as_counted(prog: Program, run: AppRun) -> bool:
    """Whether one iteration of ``prog`` sends each pair the bytes ``run`` counted per iteration."""
    k = int(prog.params["iterations"]) + int(prog.params["warmup"])
    a_keys, a = _pairs(prog.n_ranks, prog.src, prog.dst, prog.bytes / k)
    coo = run.sent.tocoo()
    b_keys, b = _pairs(prog.n_ranks, coo.row, coo.col, coo.data / run.iterations_counted)
    return np.array_equal(a_keys, b_keys) and np.allclose(a, b, rtol=1e-6, atol=0.5)


def app_program(run: AppRun | None, graph: CommGraph | None, iterations: int | None = None,
                graph_iterations: int = 1) -> tuple[Program, str]:
    """``(program, how)``: the kernel's program for a run (:class:`fabscope.measure.apps.AppRun`) of a
    known kernel whose counted traffic matches it, else ``graph`` (one iteration's bytes: a run's
    :meth:`~fabscope.measure.apps.AppRun.graph`, or a whole run's matrix / ``graph_iterations``) per
    iteration, with ``how`` saying which and why."""
    why = ""
    if run is not None:
        prog, algo = None, None
        for algo in _algorithms(run):
            try:
                prog = kernel_program(run, 1, algo)
            except TrafficError as err:
                prog, why = None, f" ({run.test}'s parameters: {err})"
                break
            if prog is None or _sends_as_counted(prog, run):
                break
            prog, why = None, f" (the run's traffic is not what fabscope's {run.test} program sends)"
        if prog is not None:
            full = kernel_program(run, iterations, algo)
            assert full is not None
            algo = full.params.get("algorithm")
            return full, f"kernel {run.test}" + (f" ({algo})" if algo else "")
        if not why and run.test:
            why = f" (no program for kernel {run.test!r})"
        its, warm, per = int(iterations or run.iterations), run.warmup, 1.0
    else:
        if graph_iterations < 1:
            raise TrafficError(f"the graph holds {graph_iterations} iterations; give at least 1")
        its, warm, per = int(iterations or 1), 0, float(graph_iterations)
    if graph is None:
        graph = run.graph() if run is not None else None
    if graph is None:
        raise TrafficError("no communication graph to model")
    prog = apps.graph_loop(graph.n, graph.src, graph.dst, graph.bytes / per, its, warm, name=graph.name)
    return prog, f"generic: the graph {graph.name} per iteration{why}"


def trace_program(path: str, n_ranks: int, iterations: int = 1) -> Program:
    """A trace of timed messages (``time,src,dst,bytes``, :func:`fabscope.dynamic.programs.replay_trace`)
    of ``iterations`` iterations: each message posted at its time by both ends; the predicted time
    per iteration is its run's whole time / ``iterations``."""
    from dataclasses import replace

    from fabscope.dynamic.programs import replay_trace

    prog = replay_trace(path)
    if prog.n_ranks > n_ranks:
        raise TrafficError(f"{path}: the trace names rank {prog.n_ranks - 1}; the job has {n_ranks} ranks")
    return replace(prog, n_ranks=n_ranks, params={**prog.params, "iterations": int(iterations), "warmup": 0})


def predict_iteration(fabric: Any, host: np.ndarray, prog: Program, routing: Any = None, *,
                      engine: str = "auto", latency: bool = True) -> Prediction:
    """Run ``prog`` with rank ``r`` on fabric host ``host[r]``; median and mean of its timed iterations."""
    from fabscope.dynamic.run import run_program_on
    from fabscope.fabric.placement import Placement

    run = run_program_on(fabric, Placement.from_hosts(fabric, np.asarray(host, dtype=np.int64)), prog, routing,
                         engine=engine, latency=latency)
    if "rounds_per_iteration" not in prog.params:       # a timed trace: its whole time over its iterations
        its = int(prog.params.get("iterations", 1))
        t = np.full(its, run.outcome.makespan / its)
        return Prediction(float(t[0]), float(t[0]), its, run.engine)
    t = apps.iteration_times(prog, run.outcome.step_end)
    return Prediction(float(np.median(t)), float(np.mean(t)), len(t), run.engine)


def order_text(times: dict[str, float]) -> str:
    """Names from the fastest to the slowest, ``=`` between ties.

    >>> order_text({"block": 2.0, "random": 3.0, "tile": 2.0, "hier": 1.0})
    'hier < block = tile < random'
    """
    names = sorted(times, key=lambda k: times[k])
    out = names[:1]
    for a, b in itertools.pairwise(names):
        out += ["=" if times[b] <= times[a] * (1 + TIE) else "<", b]
    return " ".join(out)
