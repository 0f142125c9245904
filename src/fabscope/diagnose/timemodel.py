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
its own, and the sets can run in several processes.  Within a lock-step
ping-pong set, pairs that share no resource and no rank do not interact, so
each connected component runs alone and a component shaped like one already
run is reused (exact; ``fast=False`` runs each set whole, the reference).
Where a set's ranks are inconsistent (a rank on two hosts, a pair of
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

from fabscope.arrays import median, unique
from fabscope.diagnose.benchprogram import bench_program, pair_ranks, timed_seconds
from fabscope.diagnose.components import fast_set
from fabscope.diagnose.measured import Measured, run_iterations
from fabscope.dynamic.program import Program
from fabscope.dynamic.programs import with_jitter
from fabscope.dynamic.run import run_program_on
from fabscope.fabric.placement import Placement
from fabscope.routing import make_routing
from fabscope.units import plural

#: the models compare and diagnose can use; the first is the default
MODELS = ("dynamic", "static")

#: how ping-pong pairs' phases are modeled: ``independent`` (compare's default) or ``lockstep``
PHASES = ("independent", "lockstep")
#: seeded draws of the phases whose per-pair times are averaged (compare's default)
PHASE_DRAWS = 8


def phase_spread(m: Measured) -> tuple[np.ndarray, str]:
    """Per pair, the time over which its phase is drawn: its fastest measured round trip
    (``iter_min``), else its mean one (``time``: files without per-iteration figures); and which.

    Measured from the run's own samples, so nothing here is tuned per fabric: on the testbed
    pairs that share a link send independently of each other (bench/testbed_phase.py), so a
    pair's phase is anywhere in its round trip, and the fastest round trip is the least the
    contention left it.

    >>> from fabscope.fabric.generators import fat_tree
    >>> one = lambda x: np.array([x, x])
    >>> m = Measured(fat_tree(k=2, levels=2), one(0), one(1), one(0), one(2), one(1e6), one(1e8),
    ...              one(0.02), one(0), one(True), one("random-pairs"), iter_min=np.array([0.015, np.nan]))
    >>> s, how = phase_spread(m)
    >>> s.tolist(), how
    ([0.015, 0.02], 'fastest measured round trip of 1 of 2 pairs, mean round trip elsewhere')
    """
    mean = np.asarray(m.time, float)
    best = np.full(m.n_pairs, np.nan) if m.iter_min is None else np.asarray(m.iter_min, float)
    ok = np.isfinite(best) & (best > 0)
    spread = np.where(ok, best, mean)
    n = int(ok.sum())
    how = ("mean measured round trip (no per-iteration figures)" if n == 0 else
           "fastest measured round trip" if n == m.n_pairs else
           f"fastest measured round trip of {n} of {m.n_pairs} pairs, mean round trip elsewhere")
    return np.where(np.isfinite(spread) & (spread > 0), spread, 0.0), how


@dataclass
class TimePrediction:
    bandwidth: np.ndarray                        # bytes/s per measured pair
    info: dict[str, Any] = field(default_factory=dict)


def _run_sets(m: Measured, sets: list[int], routing: Any, iterations: int | None, engine: str, sharing: str,
              seed: int, start_offset: float, fast: bool, phases: str = "lockstep",
              draws: int = 1, ports: Any = None, reuse: dict | None = None
              ) -> tuple[np.ndarray, dict[str, Any], list]:
    """The concurrent sets ``sets`` of ``m``: bandwidth per pair (0 outside them), what it took, and
    the components' figures it added to ``reuse`` (:func:`dynamic_bandwidth`)."""
    f = m.fabric
    batch = fast                                           # independent draws: one engine run (exact)
    fast = fast and (f.single_port or ports is None)       # the components' shortcut routes host pairs
    bw = np.zeros(m.n_pairs)
    router = make_routing(f, routing, seed=seed) if routing is None or isinstance(routing, str) else routing
    cache: dict = {} if reuse is None else reuse
    known = len(cache)
    stats: dict[str, Any] = {"components": 0, "cached": 0, "events": 0, "engines": set(), "its": set(),
                             "warms": set()}
    later: list[_Drawn] = []                 # independent sets, run together at the end
    for s in sets:
        sel = np.flatnonzero(m.scenario == s)
        test = str(m.test[sel[0]])
        dflt_it, dflt_w = run_iterations(test, None)
        it = int(m.iters[sel[0]]) if m.iters is not None else dflt_it
        w = int(m.warmup[sel[0]]) if m.warmup is not None else dflt_w
        if iterations is not None:
            it = iterations
        stats["its"].add(it)
        stats["warms"].add(w)
        pingpong = bool(m.pingpong[sel[0]])
        a, b, host = pair_ranks(m.src[sel], m.dst[sel], m.hs[sel], m.hd[sel])
        independent = pingpong and phases == "independent" and start_offset <= 0
        if independent:
            # one spread for the set, the median of its pairs': a pair's own fastest round trip carries
            # its own measurement's luck (and its contention), which the model should not copy
            spread = median(phase_spread(m)[0][sel])
            independent = spread > 0            # no measured time: nothing to draw within (lock-step)
        if fast and pingpong and start_offset <= 0 and not independent:
            t = fast_set(f, router, m.hs[sel], m.hd[sel], m.bytes[sel], a, b, host, it, w, engine, sharing,
                          cache, stats)
            bw[sel] = 2.0 * m.bytes[sel] * it / t
            continue
        # the ranks sat where they were measured: no check against the fabric's cores per host
        pl = Placement(host=host.astype(np.int32), core=np.zeros(len(host), np.int32))
        if independent:
            at = np.arange(len(sel))
            if fast:                    # a pair alone on its resources and ranks: the same time at any phase
                t = fast_set(f, router, m.hs[sel], m.hd[sel], m.bytes[sel], a, b, host, it, w, engine, sharing,
                             cache, stats, alone_only=True)
                bw[sel] = 2.0 * m.bytes[sel] * it / t
                at = np.flatnonzero(np.isnan(t))
                if not len(at):
                    continue
            prog = bench_program(a[at], b[at], m.bytes[sel[at]], it, w, pingpong, len(host))
            job = _Drawn(sel[at], pl, prog, a[at], b[at], np.full(len(at), spread), it, w, s, len(sel), at)
            if batch:
                later.append(job)
            else:
                bw[job.sel] = 2.0 * m.bytes[job.sel] * it / _independent_times(f, job, router, engine, sharing,
                                                                                seed, draws, stats, ports)
            continue
        prog = bench_program(a, b, m.bytes[sel], it, w, pingpong, len(host))
        if start_offset > 0 and pingpong:
            prog = with_jitter(prog, start_offset, seed + 7919 * s, prog.step_round[prog.send_step] == 0)
        run = run_program_on(f, pl, prog, router, seed=seed, engine=engine, sharing=sharing, ports=ports)
        stats["events"] += int(run.outcome.events)
        stats["engines"].add(run.engine)
        if pingpong:
            first = np.minimum(a, b)
            t = timed_seconds(prog, run.outcome.step_end, first, 2 * (w + it) - 1, 2 * w - 1)
            bw[sel] = 2.0 * m.bytes[sel] * it / t
        else:
            t = timed_seconds(prog, run.outcome.step_end, a, w + it - 1, w - 1)
            bw[sel] = m.bytes[sel] * it / t
    for job, t in zip(later, _drawn_together(f, later, router, engine, sharing, seed, draws, stats, ports)):
        bw[job.sel] = 2.0 * m.bytes[job.sel] * job.it / t
    return bw, stats, list(cache.items())[known:] if reuse is not None else []


@dataclass
class _Drawn:
    """Pairs of a ping-pong set whose phases are drawn: the pairs ``sel`` of the measured result, its
    ranks' hosts, the program they ran, their two ranks, the spread of each pair's phase, the
    timed and warm-up iterations, the set's number (the draws' seed), its count of pairs and the
    places of ``sel`` among them (the pairs alone in the set take the same time at any phase and
    are left out; the others draw the waits they draw among all of the set's)."""

    sel: np.ndarray
    pl: Placement
    prog: Program
    a: np.ndarray
    b: np.ndarray
    spread: np.ndarray
    it: int
    w: int
    s: int
    n_set: int
    at: np.ndarray

    def waits(self, seed: int, d: int) -> np.ndarray:
        """Each pair's wait before its first ping in draw ``d``: uniform in [0, its spread), seeded by
        ``seed``, the set and the draw (so the figures do not depend on how the sets are shared among
        processes or runs)."""
        return np.random.default_rng([seed, self.s, d]).uniform(0.0, 1.0, self.n_set)[self.at] * self.spread

    def delays(self, wait: np.ndarray) -> np.ndarray:
        """The program's step delays with each pair's first ping (round 0, in pair order) waiting ``wait``."""
        delay = np.array(self.prog.step_delay, dtype=float)
        delay[self.prog.send_step[:len(self.a)]] += wait
        return delay

    def seconds(self, step_end: np.ndarray, wait: np.ndarray) -> np.ndarray:
        """Timed seconds per pair from one draw's step ends: the sender's, from the end of the warm-up
        (without one, from its start: the wait is not the benchmark's time)."""
        t = timed_seconds(self.prog, step_end, np.minimum(self.a, self.b), 2 * (self.w + self.it) - 1,
                          2 * self.w - 1)
        return t - (wait if self.w == 0 else 0.0)


def _independent_times(f, job: _Drawn, router, engine: str, sharing: str, seed: int, draws: int,
                       stats: dict, ports: Any = None) -> np.ndarray:
    """Timed seconds per pair of one ping-pong set, its pairs' phases independent: in each of
    ``draws`` runs every pair's first ping waits a time drawn uniformly in [0, its spread)
    (:meth:`_Drawn.waits`); the mean of the runs' times.  The fluid engine keeps the phases
    the start gives the pairs, as long as nothing else moves them.  One engine run per draw: the
    reference :func:`_drawn_together` is held to."""
    from dataclasses import replace

    total = np.zeros(len(job.a))
    for d in range(draws):
        wait = job.waits(seed, d)
        run = run_program_on(f, job.pl, replace(job.prog, step_delay=job.delays(wait)), router, seed=seed,
                             engine=engine, sharing=sharing, ports=ports)
        stats["events"] += int(run.outcome.events)
        stats["engines"].add(run.engine)
        total += job.seconds(run.outcome.step_end, wait)
    return total / draws


#: messages of one batched engine run of drawn sets (a larger set runs alone: its fixed cost is small beside
#: it).  Larger batches hold more flows in flight at once and each event costs more: diagnose's plan on a
#: 4x4x4 torus took 0.7 CPU s at 4,096 and 1.3 s at 131,072 messages a run
BATCH_MESSAGES = 1 << 12


def _drawn_together(f, jobs: list[_Drawn], router, engine: str, sharing: str, seed: int, draws: int,
                    stats: dict, ports: Any = None) -> list[np.ndarray]:
    """What :func:`_independent_times` gives each of ``jobs``, from few engine runs: every draw of
    every set is a copy of its set's program on its own copy of the resources
    (:func:`fabscope.dynamic.disjoint.union`), up to :data:`BATCH_MESSAGES` messages a run.  A set
    is routed once (the routes every draw's run would take: the same host pairs); the engine's
    fixed cost, a few hundred microseconds, was most of a small set's time, paid per draw.

    Sets with several sub-flows a message (ports striped), and the Python engine, run draw by draw."""
    from fabscope.dynamic import fast
    from fabscope.dynamic.disjoint import union
    from fabscope.dynamic.resources import build_paths
    from fabscope.dynamic.sizes import check_counts
    from fabscope.fabric.ports import split_flows

    out: list[np.ndarray | None] = [None] * len(jobs)
    if not jobs:
        return []
    if fast.pick(engine) != "c":
        return [_independent_times(f, job, router, engine, sharing, seed, draws, stats, ports) for job in jobs]
    copies: list[tuple[int, np.ndarray, tuple]] = []          # (job, wait, (program, paths, msg_path))
    n_t = f.n_terminals
    for j, job in enumerate(jobs):
        sub = split_flows(f, job.pl, job.prog.src, job.prog.dst, job.prog.bytes, ports)
        if not sub.identity:
            out[j] = _independent_times(f, job, router, engine, sharing, seed, draws, stats, ports)
            continue
        uniq, msg_path = np.unique(sub.src * n_t + sub.dst, return_inverse=True)
        paths = build_paths(f, router, uniq // n_t, uniq % n_t, seed=seed, terminals=True)
        copies += [(j, job.waits(seed, d), (job.prog, paths, msg_path)) for d in range(draws)]
    batches, k = [], 0
    while k < len(copies):
        n, e = copies[k][2][0].n_messages, k + 1
        while e < len(copies) and n + copies[e][2][0].n_messages <= BATCH_MESSAGES:
            n += copies[e][2][0].n_messages
            e += 1
        batches.append((k, e, n))
        k = e
    if batches:                                 # the largest batch checked, before any runs
        k, e, n = max(batches, key=lambda x: x[2])
        check_counts(jobs[0].prog.name, n, sum(c[2][0].n_steps for c in copies[k:e]),
                     sum(c[2][0].n_ranks for c in copies[k:e]))
    total = [np.zeros(len(job.a)) for job in jobs]
    for k, e, _ in batches:
        u = union([c[2] for c in copies[k:e]], [jobs[j].delays(wait) for j, wait, _ in copies[k:e]])
        outcome = fast.run_program(u.program, u.paths, u.msg_path, sharing)
        stats["events"] += int(outcome.events)
        stats["engines"].add("c")
        for i, (j, wait, _) in enumerate(copies[k:e]):
            total[j] += jobs[j].seconds(outcome.step_end[u.steps(i)], wait)
    return [o if o is not None else total[j] / draws for j, o in enumerate(out)]


def default_workers() -> int:
    """Processes for the sets: the cores this process may use (the sets are independent)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def dynamic_bandwidth(measured: Measured, routing: Any = None, *, iterations: int | None = None,
                      engine: str = "auto", sharing: str = "maxmin", seed: int = 0,
                      start_offset: float = 0.0, fast: bool = True, workers: int = 1,
                      phases: str = "lockstep", phase_draws: int = PHASE_DRAWS, ports: Any = None,
                      reuse: dict | None = None) -> TimePrediction:
    """Every measured pair's bandwidth in the dynamic model of the program it ran (module docstring).

    ``iterations`` replaces the measured count of timed iterations (fewer is faster; the warm-up
    stays as measured).  ``start_offset`` (seconds): each ping-pong pair's first ping waits a time
    drawn uniformly in [0, start_offset) (seeded by ``seed`` and the set), so the pairs start out
    of phase (:func:`fabscope.dynamic.programs.pingpong`); 0: lock-step.

    ``fast`` (lock-step ping-pong sets only; others run whole): each set is split into the
    components of its graph "shares a resource or a rank" (they do not interact: exact), each
    component runs on its own, and a component of the same shape as one already run is not run
    again.  ``fast=False``: the whole set as one program, the reference.

    ``phases="independent"`` (ping-pong sets, no ``start_offset``): the pairs' phases are
    independent of each other, as measured on the testbed: each pair's first ping waits a time
    drawn uniformly within one round trip (the median over its concurrent set of
    :func:`phase_spread`, from the run's samples), and
    each pair's time is the mean over ``phase_draws`` seeded draws (one draw's pair figures
    carry the draw's luck; the mean is the expectation the measurement estimates).  ``workers`` > 1: the
    sets (independent) are shared among that many processes, where ``routing`` is a name (a
    routing object stays in this process); the figures are the same.

    ``ports``: how ranks use hosts with several ports (:mod:`fabscope.fabric.ports`; ``stripe``: a
    message over all of them, as Open MPI's TCP BTL over several interfaces).

    ``reuse`` (``fast`` only): a dict of components' figures that this call reads and adds to.  Given
    to a later call on the same pairs (diagnose's second model: the fabric with some capacities
    changed), it runs only the components whose key changed: a key holds everything a component's
    run depends on (:mod:`.components`), so the figures are those of a run without it, bit for bit.
    """
    t_start = time.perf_counter()
    m = measured
    sets = unique(m.scenario).tolist()
    if phases not in PHASES:
        from fabscope.diagnose.measured import DiagnoseError

        raise DiagnoseError(f"unknown phases {phases!r}; choose from {', '.join(PHASES)}")
    if int(phase_draws) < 1:
        from fabscope.diagnose.measured import DiagnoseError

        raise DiagnoseError(f"phase draws must be at least 1, got {phase_draws}")
    args = (routing, iterations, engine, sharing, seed, start_offset, fast, phases, int(phase_draws), ports, reuse)
    workers = min(int(workers), len(sets))
    if workers > 1 and (routing is None or isinstance(routing, str)):
        from concurrent.futures import ProcessPoolExecutor

        # deal the sets out largest first, each to the least loaded worker
        size = np.bincount(m.scenario)
        load, share = np.zeros(workers), [[] for _ in range(workers)]
        for s in sorted(sets, key=lambda s: -size[s]):
            k = int(np.argmin(load))
            share[k].append(s)
            load[k] += size[s]
        with ProcessPoolExecutor(workers) as ex:
            parts = list(ex.map(_run_sets, [m] * workers, share, *[[x] * workers for x in args]))
        if reuse is not None:           # each process filled a copy of it
            for p in parts:
                reuse.update(p[2])
    else:
        workers = 1
        parts = [_run_sets(m, sets, *args)]
    bw = np.sum([p[0] for p in parts], axis=0)
    stats = {k: (set().union(*(p[1][k] for p in parts)) if isinstance(v, set) else sum(p[1][k] for p in parts))
             for k, v in parts[0][1].items()}
    info = {"model": "dynamic", "sharing": sharing, "engine": "+".join(sorted(stats["engines"])),
            "iterations": sorted(stats["its"]), "warmup": sorted(stats["warms"]), "events": stats["events"],
            **({"components": stats["components"], "components_reused": stats["cached"]}
               if stats["components"] else {}),
            "concurrent_sets": len(sets), "workers": workers,
            **({} if m.fabric.single_port or ports is None else {"ports": str(ports)}),
            **({"start_offset": start_offset, "phase_seed": seed} if start_offset > 0 else {}),
            **(_phase_info(m, seed, int(phase_draws)) if phases == "independent" and start_offset <= 0
               and m.pingpong.any() else {}),
            "seconds": round(time.perf_counter() - t_start, 3)}
    return TimePrediction(bw, info)


def _phase_info(m: Measured, seed: int, draws: int) -> dict[str, Any]:
    spread, how = phase_spread(m.subset(m.pingpong))
    if not spread.max() > 0:
        return {"phases": "lockstep", "phases_why": "no measured round trip to draw the phases within"}
    return {"phases": "independent", "phase_seed": seed, "phase_draws": draws, "phase_spread": how,
            "phase_spread_s": [float(spread.min()), median(spread), float(spread.max())]}


def _its(v: Any) -> str:
    """A model's iteration counts (one per test) as ``100`` or ``20/100``."""
    return "/".join(str(i) for i in v if i is not None) if isinstance(v, list) else str(v)[:20]


def model_line(meta: dict[str, Any]) -> str:
    """Which model the modeled figures come from, in words.

    >>> model_line({"model": "dynamic", "model_info": {"sharing": "maxmin", "iterations": [20], "engine": "c"}})
    'dynamic: the program the benchmark ran, in time (max-min sharing, 20 timed iterations, engine c)'
    >>> model_line({"model": "dynamic", "model_info": {"iterations": [4], "iterations_measured": [100],
    ...             "events_budget": 6_000_000, "events_estimated": 89_596_800, "engine": "c"}})[66:]
    '4 timed iterations of the measured 100, to keep within 6,000,000 engine events (the measured count: about 89,596,800; --model-events 0 models them all), engine c)'
    >>> model_line({"model": "dynamic", "model_info": {"iterations": [100], "taken_from": "night1.json",
    ...             "refined": True, "rerun_iterations": [4]}})[66:]
    '100 timed iterations; taken from night1.json, not run again; the suspects estimated again with the program rerun at 4 timed iterations, healthy and under their estimates, the model taken times the ratio)'
    >>> model_line({"model": "dynamic", "model_info": {"iterations": [100], "taken_from": "night2.json",
    ...             "refined": True, "rerun_iterations": [4], "budget_taken": True}})[161:]
    'the program rerun at 4 timed iterations under their estimates, the model taken times the ratio to the healthy run at those iterations that an earlier night made)'
    >>> model_line({"model": "dynamic", "model_info": {"iterations": [4], "refined": True,
    ...             "second_model_without": ["s1-0003[5] -- s2-0001[2]"]}})[66:]
    '4 timed iterations; the suspects estimated again with it rerun under their estimates; rerun without the 1 suspect the first fit was unsure of (s1-0003[5] -- s2-0001[2]), each tested against the program without its cut)'
    >>> model_line({"model": "static"})
    'static: the snapshot, every pair of a concurrent set sharing links all the time (max-min sharing)'
    """
    info = meta.get("model_info") or {}
    share = {"count": "congestion-count sharing", "congestion": "congestion-count sharing"}.get(
        str(info.get("sharing")), "max-min sharing")
    if meta.get("model") == "dynamic":
        its, was = _its(info.get("iterations") or []), _its(info.get("iterations_measured") or [])
        return (f"dynamic: the program the benchmark ran, in time ({share}"
                + (f", {its} timed iterations" if its else "")
                + (f" of the measured {was}, to keep within {info['events_budget']:,} engine events (the "
                   f"measured count: about {info['events_estimated']:,}; --model-events 0 models them all)"
                   if was and info.get("events_budget") else "")
                + (f", engine {info['engine']}" if info.get("engine") else "")
                + (f", ports {info['ports']}" if info.get("ports") else "")
                + (f", pairs started out of phase by up to {info['start_offset'] * 1e6:.0f} us"
                   if info.get("start_offset") else "")
                + (f", pairs' phases independent: each starts at a moment drawn within its round's median "
                   f"{info['phase_spread']} (median {info['phase_spread_s'][1] * 1e3:.3g} ms), mean of "
                   f"{info['phase_draws']} draws, seed {info['phase_seed']}"
                   if info.get("phases") == "independent" else "")
                + (f"; taken from {str(info['taken_from'])[:200]}, not run again" if info.get("taken_from") else "")
                + ("; the suspects estimated again with it rerun under their estimates" if info.get("refined")
                   and not info.get("rerun_iterations") else "")
                + (f"; the suspects estimated again with the program rerun at {_its(info['rerun_iterations'])} "
                   + ("timed iterations under their estimates, the model taken times the ratio to the healthy run "
                      "at those iterations that an earlier night made" if info.get("budget_taken") else
                      "timed iterations, healthy and under their estimates, the model taken times the ratio")
                   if info.get("refined") and info.get("rerun_iterations") else "")
                + (f"; rerun without the {plural(len(info['second_model_without']), 'suspect')} the first fit was "
                   f"unsure of ({', '.join(map(str, info['second_model_without'][:3]))[:200]}), each tested against "
                   "the program without its cut" if info.get("refined") and info.get("second_model_without") else "")
                + ")")
    return f"static: the snapshot, every pair of a concurrent set sharing links all the time ({share})"
