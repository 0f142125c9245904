"""The measured program in time: what fabscope-bench ran, through the dynamic engine.

The static snapshot (:mod:`.pairmodel`) shares every link among all the
flows of a concurrent set for the whole run.  The benchmark does not run
that way: a ping-pong pair sends one way, then the other, and pairs drift in
and out of each other's way.  :func:`dynamic_bandwidth` rebuilds, for every
concurrent set of a :class:`~.measured.Measured`, the program the benchmark
ran (csrc/pairs.c): the same pairs on the same hosts, the lower rank sending
first, ``warmup`` untimed then ``iters`` timed round trips of the measured
size (``all-pairs``: one-way sends and receives together per iteration), runs
it with :func:`fabscope.dynamic.run.run_program_on` and reports each pair as
the benchmark reports it: data over the time from the end of the warm-up to
the end of the last timed iteration, as the lower rank (the sender) times it.

Concurrent sets never overlap in time (:mod:`.measured`), so each is a run of
its own.  Where a set's ranks are inconsistent (a rank on two hosts, a pair of
one rank with itself: synthetic inputs) each pair gets two ranks of its own.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.diagnose.measured import Measured
>>> f = fat_tree(k=4, levels=2)                   # 2:1 nowhere: full bisection
>>> m = Measured(f, np.array([0, 2]), np.array([1, 3]), np.array([0, 1]), np.array([4, 5]), np.full(2, 1e6),
...              np.full(2, 1e9), np.zeros(2), np.zeros(2, np.int64), np.ones(2, bool),
...              np.full(2, "random-pairs"), (), (("x", "random-pairs", 0),), np.full(2, 5), np.full(2, 1))
>>> d = dynamic_bandwidth(m, "dmodk")
>>> [round(float(x / f.link_capacity[0]), 2) for x in d.bandwidth]      # latency and overhead included
[0.99, 0.99]
>>> d.info["iterations"], d.info["engine"] in ("c", "python")
([5], True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabscope.diagnose.measured import Measured, run_iterations
from fabscope.dynamic.program import Program
from fabscope.dynamic.programs import with_jitter
from fabscope.dynamic.run import run_program_on
from fabscope.fabric.placement import Placement

#: the models compare and diagnose can use; the first is the default
MODELS = ("dynamic", "static")


@dataclass
class TimePrediction:
    bandwidth: np.ndarray                        # bytes/s per measured pair
    info: dict[str, Any] = field(default_factory=dict)


def _ranks(src: np.ndarray, dst: np.ndarray, hs: np.ndarray, hd: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local ranks of the pairs' two ends and the host of each local rank."""
    ranks = np.r_[src, dst]
    hosts = np.r_[hs, hd]
    uniq, inv = np.unique(ranks, return_inverse=True)
    host = np.full(len(uniq), -1, dtype=np.int64)
    host[inv] = hosts
    n = len(src)
    consistent = (np.all(src != dst) and np.array_equal(host[inv], hosts)
                  and len(np.unique(src)) == n and len(np.unique(dst)) == n)
    if consistent:
        return inv[:n], inv[n:], host
    return np.arange(n) * 2, np.arange(n) * 2 + 1, np.ravel(np.c_[hs, hd])


def _program(a: np.ndarray, b: np.ndarray, size: np.ndarray, it: int, w: int, pingpong: bool,
             n_ranks: int) -> Program:
    """fabscope-bench's pair kernel (ping-pong, the lower rank first) or all-pairs' one-way shift."""
    first, second = np.minimum(a, b), np.maximum(a, b)
    if pingpong:
        k = 2 * (it + w)
        rnd = np.repeat(np.arange(k), len(a))
        odd = (rnd % 2).astype(bool)
        f, s = np.tile(first, k), np.tile(second, k)
        return Program.from_arrays("ping-pong", n_ranks, np.where(odd, s, f), np.where(odd, f, s),
                                   np.tile(size, k), rnd, iterations=it, warmup=w)
    k = it + w
    rnd = np.repeat(np.arange(k), len(a))
    return Program.from_arrays("one-way", n_ranks, np.tile(a, k), np.tile(b, k), np.tile(size, k), rnd,
                               iterations=it, warmup=w)


def _timed(prog: Program, end: np.ndarray, ranks: np.ndarray, last_round: int, warm_round: int) -> np.ndarray:
    """Each rank's time from the end of ``warm_round`` (0 if negative) to the end of ``last_round``."""
    n_rounds = int(prog.step_round.max()) + 1
    keys = prog.step_rank * n_rounds + prog.step_round
    t1 = end[np.searchsorted(keys, ranks * n_rounds + last_round)]
    t0 = np.zeros(len(ranks)) if warm_round < 0 else end[np.searchsorted(keys, ranks * n_rounds + warm_round)]
    return t1 - t0


def dynamic_bandwidth(measured: Measured, routing: Any = None, *, iterations: int | None = None,
                      engine: str = "auto", sharing: str = "maxmin", seed: int = 0,
                      start_offset: float = 0.0) -> TimePrediction:
    """Every measured pair's bandwidth in the dynamic model of the program it ran (module docstring).

    ``iterations`` replaces the measured count of timed iterations (fewer is faster; the warm-up
    stays as measured).  ``start_offset`` (seconds): each ping-pong pair's first ping waits a time
    drawn uniformly in [0, start_offset) (seeded by ``seed`` and the set), so the pairs start out
    of phase (:func:`fabscope.dynamic.programs.pingpong`); 0: lock-step.
    """
    t_start = time.perf_counter()
    m = measured
    f = m.fabric
    n = m.n_pairs
    bw = np.zeros(n)
    events = 0
    engines = set()
    its, warms = set(), set()
    for s in np.unique(m.scenario).tolist():
        sel = np.flatnonzero(m.scenario == s)
        test = str(m.test[sel[0]])
        dflt_it, dflt_w = run_iterations(test, None)
        it = int(m.iters[sel[0]]) if m.iters is not None else dflt_it
        w = int(m.warmup[sel[0]]) if m.warmup is not None else dflt_w
        if iterations is not None:
            it = iterations
        its.add(it)
        warms.add(w)
        pingpong = bool(m.pingpong[sel[0]])
        a, b, host = _ranks(m.src[sel], m.dst[sel], m.hs[sel], m.hd[sel])
        prog = _program(a, b, m.bytes[sel], it, w, pingpong, len(host))
        if start_offset > 0 and pingpong:
            prog = with_jitter(prog, start_offset, seed + 7919 * s, prog.step_round[prog.send_step] == 0)
        # the ranks sat where they were measured: no check against the fabric's cores per host
        pl = Placement(host=host.astype(np.int32), core=np.zeros(len(host), np.int32))
        run = run_program_on(f, pl, prog, routing, seed=seed, engine=engine, sharing=sharing)
        events += int(run.outcome.events)
        engines.add(run.engine)
        if pingpong:
            first = np.minimum(a, b)
            t = _timed(prog, run.outcome.step_end, first, 2 * (w + it) - 1, 2 * w - 1)
            bw[sel] = 2.0 * m.bytes[sel] * it / t
        else:
            t = _timed(prog, run.outcome.step_end, a, w + it - 1, w - 1)
            bw[sel] = m.bytes[sel] * it / t
    info = {"model": "dynamic", "sharing": sharing, "engine": "+".join(sorted(engines)),
            "iterations": sorted(its), "warmup": sorted(warms), "events": events,
            "concurrent_sets": int(len(np.unique(m.scenario))),
            **({"start_offset": start_offset, "phase_seed": seed} if start_offset > 0 else {}),
            "seconds": round(time.perf_counter() - t_start, 3)}
    return TimePrediction(bw, info)


def model_line(meta: dict[str, Any]) -> str:
    """Which model the modeled figures come from, in words.

    >>> model_line({"model": "dynamic", "model_info": {"sharing": "maxmin", "iterations": [20], "engine": "c"}})
    'dynamic: the program the benchmark ran, in time (max-min sharing, 20 timed iterations, engine c)'
    >>> model_line({"model": "static"})
    'static: the snapshot, every pair of a concurrent set sharing links all the time (max-min sharing)'
    """
    info = meta.get("model_info") or {}
    share = {"count": "congestion-count sharing", "congestion": "congestion-count sharing"}.get(
        str(info.get("sharing")), "max-min sharing")
    if meta.get("model") == "dynamic":
        its = [str(i) for i in info.get("iterations") or [] if i is not None]
        return (f"dynamic: the program the benchmark ran, in time ({share}"
                + (f", {'/'.join(its)} timed iterations" if its else "")
                + (f", engine {info['engine']}" if info.get("engine") else "")
                + (f", pairs started out of phase by up to {info['start_offset'] * 1e6:.0f} us"
                   if info.get("start_offset") else "")
                + ("; fitted again with it rerun under the suspects' estimates" if info.get("refined") else "")
                + ")")
    return f"static: the snapshot, every pair of a concurrent set sharing links all the time ({share})"


def nominal_model(measured: Measured, routing: Any = None, model: str = "dynamic", *,
                  iterations: int | None = None, engine: str = "auto") -> tuple[np.ndarray | None, dict[str, Any]]:
    """What diagnose takes as the healthy fabric's prediction: the program in time (the per-pair
    figures and how they were made), or ``None`` for the snapshot."""
    from fabscope.diagnose.measured import DiagnoseError

    if model not in MODELS:
        raise DiagnoseError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
    if model == "static":
        return None, {"model": "static", "sharing": "maxmin"}
    sel = measured.inter
    pred = dynamic_bandwidth(measured.subset(sel) if not sel.all() else measured, routing,
                             iterations=iterations, engine=engine)
    bw = np.full(measured.n_pairs, np.nan)
    bw[sel] = pred.bandwidth
    return bw, pred.info


def refined_nominal(measured: Measured, factor: np.ndarray, routing: Any = None, *,
                    iterations: int | None = None, engine: str = "auto") -> np.ndarray:
    """The nominal prediction for a second fit: the snapshot of the healthy fabric times each pair's
    ratio in time / snapshot on the fabric with the first fit's capacity ``factor`` per cable.

    The first fit holds each pair's in-time ratio at its healthy value; a slow cable changes how
    pairs crossing it overlap in time, so the ratio is taken again where the faults are.
    """
    import dataclasses

    from fabscope.diagnose.pairmodel import PairModel

    sel = measured.inter
    m = measured.subset(sel) if not sel.all() else measured
    f = m.fabric
    cap = f.link_capacity * np.repeat(np.asarray(factor, float), 2)
    faulty = dataclasses.replace(m, fabric=dataclasses.replace(f, link_capacity=cap))
    dyn = dynamic_bandwidth(faulty, routing, iterations=iterations, engine=engine).bandwidth
    pm = PairModel(f, m.hs, m.hd, m.scenario, m.pingpong, m.bytes, routing)
    out = np.full(measured.n_pairs, np.nan)
    out[sel] = pm.bandwidth() * dyn / pm.bandwidth(cap)
    return out
