"""Criticality: every cable cut (or degraded) in turn, ranked by the bandwidth a pattern loses.

For each cable, :func:`criticality` reroutes as the fabric's routing would
(the what-if module's :func:`cut_cables` and :func:`~fabscope.whatif.cuts.reroute`:
the same engine on the cut fabric; for imported tables the engine that
reproduces them, else min-hop; D-mod-K, which cannot route a cut tree, hands
over to OpenSM's ftree, which falls back to min-hop; each row says which),
reruns the flow model and records the aggregate bandwidth the pattern's
pairs lose and how many pairs lose, twice: with the whole fabric rerouted
(``lost``), and with only the flows that crossed the cut cable moved to
their new paths, every other flow on its old route (``lost_own``: the
cable's own loss, apart from what rerouting everyone else does).  Cutting a
host's only cable disconnects the host: its pairs lose everything and the
others keep their routes.  With ``mode="degrade"`` the cable keeps its
routes (static routing does not see a slower cable) at ``factor`` of its
capacity.

The cables are independent flow-model runs: they go to a Dask cluster, by
default a ``LocalCluster`` of one process per core; :func:`jobqueue_cluster`
builds a dask-jobqueue cluster (Slurm, PBS, ...) from a YAML file instead.
``workers=0`` runs them here, one after the other.

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.fabric import Placement
>>> from fabscope.traffic.patterns import shift
>>> f = fat_tree(k=2, levels=2)
>>> r = criticality(f, Placement.block(f, 4, ppn=1), shift(4, 1e6, k=2), "dmodk", workers=0)
>>> rows = {x["cable"]: x for x in r.extra["criticality"]}
>>> len(rows), rows["h0000[1] -- s1-0000[1]"]["losing_pairs"]  # host 0 cut off: its 2 flows lose all
(8, 2)
>>> round(rows["s1-0000[3] -- s2-0000[1]"]["lost_fraction"], 2)  # one of 2 uplinks: 4 flows at half rate
0.5
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Any, Iterator, Sequence

import numpy as np

from fabscope.errors import FabscopeError
from fabscope.fabric.model import Fabric
from fabscope.fabric.placement import Placement
from fabscope.result import Result
from fabscope.traffic.flows import Traffic

from fabscope.whatif import cut_cables


def _cable_spec(f: Fabric, c: int) -> str:
    i = 2 * c
    s = int(f.link_src[i])
    if s < f.n_hosts:      # name the switch end: hosts are cut by their port too, but switches always have ports
        i, s = i + 1, int(f.link_src[i + 1])
    return f"{f.node_names[s]}[{int(f.link_src_port[i])}]"


def _pair_bandwidth(fabric: Fabric, placement: Placement, traffic: Traffic, router: Any) -> np.ndarray:
    from fabscope.model.simulate import simulate

    return np.asarray(simulate(fabric, placement, traffic, router).pairs["bandwidth"], float)


def sweep_chunk(fabric: Fabric, placement: Placement, traffic: Traffic, routing: str, mode: str, factor: float,
                cables: Sequence[int], before: np.ndarray, reroute_engine: str | None = None
                ) -> list[tuple[int, float, int, float, float, str]]:
    """(cable, bandwidth lost, pairs losing, worst pair's loss, bandwidth lost with only the cut cable's
    flows moved, which engine rerouted) for each cable: one worker's share.

    ``reroute_engine``: the engine that routes the cut fabric (default ``routing``; for imported
    tables, the engine that reproduces them).
    """
    from fabscope.routing import make_routing
    from fabscope.whatif.cuts import KeptRoutes, link_map, reroute

    out = []
    pid, first = np.unique(traffic.pair, return_index=True)
    hs = placement.host[traffic.src[first]]
    hd = placement.host[traffic.dst[first]]
    check = (placement.host[traffic.src].astype(np.int64), placement.host[traffic.dst].astype(np.int64))
    host_only = np.bincount(fabric.link_src[fabric.link_src < fabric.n_hosts], minlength=fabric.n_hosts) == 1
    router = make_routing(fabric, routing)
    engine = reroute_engine or routing
    for c in cables:
        c = int(c)
        ends = (int(fabric.link_src[2 * c]), int(fabric.link_dst[2 * c]))
        host = next((e for e in ends if e < fabric.n_hosts), -1)
        label = ""
        if mode == "cut" and host >= 0 and host_only[host]:
            after = own = np.where((hs == host) | (hd == host), 0.0, before)
            label = "none (the host is cut off)"
        elif mode == "cut":
            g, _ = cut_cables(fabric, [_cable_spec(fabric, c)])
            try:
                new, label = reroute(g, engine, check)
                after = _pair_bandwidth(g, placement, traffic, new)
                own = _pair_bandwidth(g, placement, traffic, KeptRoutes(router, new, link_map(fabric, g)))
            except FabscopeError as err:    # no route left for some pair: the pattern loses everything
                after = own = np.zeros_like(before)
                label = f"none ({err})"
        else:
            cap = fabric.link_capacity.copy()
            cap[[2 * c, 2 * c + 1]] *= factor
            from dataclasses import replace

            g = replace(fabric, link_capacity=cap)
            after = own = _pair_bandwidth(g, placement, traffic, router)
            label = "none (a degraded cable keeps its routes)"
        loss = np.maximum(before - after, 0.0)
        rel = np.where(before > 0, loss / before, 0.0)
        out.append((c, float(before.sum() - after.sum()), int(np.sum(rel > 1e-6)), float(rel.max(initial=0.0)),
                    float(before.sum() - own.sum()), label))
    return out


def jobqueue_cluster(path: str) -> tuple[Any, int]:
    """A dask-jobqueue cluster from a YAML file, and how many jobs to start.

    The file names the batch system and the options of its dask-jobqueue
    cluster class, e.g.::

        jobqueue: slurm          # slurm, pbs, sge, lsf, oar, htcondor, moab
        jobs: 4                  # batch jobs to start (each with its workers)
        cores: 8
        memory: 16GB
        walltime: "01:00:00"
        queue: batch

    or dask-jobqueue's own layout, ``jobqueue: {slurm: {cores: 8, ...}}``.
    """
    try:
        import yaml
        import dask_jobqueue
    except ImportError as err:
        raise FabscopeError(f"--scheduler needs dask-jobqueue (pip install 'fabscope[dask]'): {err}") from None
    try:
        with open(path) as fh:
            doc = yaml.safe_load(fh)
    except OSError as err:
        raise FabscopeError(f"cannot read scheduler file {path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise FabscopeError(f"{path}: not valid YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(doc, dict) or "jobqueue" not in doc:
        raise FabscopeError(f"{path}: expected a mapping with 'jobqueue: slurm' (or pbs, sge, lsf, ...)")
    doc = dict(doc)
    kind = doc.pop("jobqueue")
    if isinstance(kind, dict):
        if len(kind) != 1:
            raise FabscopeError(f"{path}: 'jobqueue' should name one batch system, got {sorted(kind)}")
        kind, opts = next(iter(kind.items()))
        doc = {**doc, **(opts or {})}
    classes = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "sge": "SGECluster", "lsf": "LSFCluster",
               "oar": "OARCluster", "htcondor": "HTCondorCluster", "moab": "MoabCluster"}
    if str(kind).lower() not in classes:
        raise FabscopeError(f"{path}: unknown batch system {kind!r}; choose from {', '.join(classes)}")
    jobs = doc.pop("jobs", 1)
    if not isinstance(jobs, int) or jobs < 1:
        raise FabscopeError(f"{path}: 'jobs' must be a positive integer, got {jobs!r}")
    cls = getattr(dask_jobqueue, classes[str(kind).lower()])
    try:
        cluster = cls(**doc)
    except (TypeError, ValueError) as err:
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise FabscopeError(f"{path}: {classes[str(kind).lower()]} refused the options: {first}") from None
    return cluster, jobs


def criticality(fabric: Fabric, placement: Placement, traffic: Traffic, routing: str | None = None, *,
                mode: str = "cut", factor: float = 0.5, cables: Sequence[int] | None = None,
                workers: int | None = None, cluster: Any = None, jobs: int = 1, chunks: int | None = None,
                top: int | None = None) -> Result:
    """Rank cables by the bandwidth ``traffic`` loses when each is cut (or degraded); see the module docstring."""
    from fabscope.routing import default_engine, make_routing

    if mode not in ("cut", "degrade"):
        raise FabscopeError(f"unknown mode {mode!r}; choose cut or degrade")
    if mode == "degrade" and not 0 < factor < 1:
        raise FabscopeError(f"a degraded cable keeps a factor in (0, 1) of its capacity, got {factor}")
    check_workers(workers, cluster)
    t0 = time.perf_counter()
    name = routing or default_engine(fabric)
    from fabscope.model.simulate import simulate

    todo = np.arange(fabric.n_links // 2) if cables is None else np.asarray(cables, dtype=np.int64)
    if len(todo) == 0 or todo.min() < 0 or todo.max() >= fabric.n_links // 2:
        raise FabscopeError(f"cables to sweep must be among 0..{fabric.n_links // 2 - 1} of {fabric.name!r}")
    base = simulate(fabric, placement, traffic, make_routing(fabric, name))
    before = np.asarray(base.pairs["bandwidth"], float)
    engine = name
    if name.split(":")[0] == "tables":
        from fabscope.whatif.cuts import tables_engine

        engine = tables_engine(fabric) or "minhop"     # the subnet manager reruns its own engine
    if workers == 0 and cluster is None:
        rows = sweep_chunk(fabric, placement, traffic, name, mode, factor, todo, before, engine)
        used, ran = "serial", []
    else:
        rows, used, ran = _on_dask(fabric, placement, traffic, name, mode, factor, todo, before, workers, cluster,
                                   jobs, chunks, engine)
    rows.sort(key=lambda r: (-r[1], r[0]))
    total = float(before.sum())
    table = [{"cable": _name(fabric, c), "links": [2 * c, 2 * c + 1], "lost": lost, "losing_pairs": n,
              "lost_fraction": lost / total if total else 0.0, "worst_pair_loss": worst,
              "lost_own": own, "lost_own_fraction": own / total if total else 0.0, "rerouted_by": label}
             for c, lost, n, worst, own, label in rows[:top]]
    from fabscope.whatif.cuts import short_label

    labels: dict[str, int] = {}
    for r in rows:
        labels[short_label(r[5])] = labels.get(short_label(r[5]), 0) + 1
    meta = {**base.meta, "kind": "critical", "mode": mode, "factor": factor if mode == "degrade" else 0.0,
            "cables": int(len(todo)), "executor": used, "sweep_seconds": round(time.perf_counter() - t0, 3),
            "rerouted_by": labels}
    if ran:
        meta["workers_used"] = ran  # where the chunks ran: the Dask workers' addresses
    return Result(meta=meta, class_labels=base.class_labels, pairs=base.pairs, links=base.links,
                  extra={"criticality": table, "aggregate_before": total})


def check_workers(workers: int | None, cluster: Any = None) -> None:
    """Local workers are processes of this machine: no more of them than it has cores (checked before any start).

    >>> check_workers(100000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fabscope.errors.FabscopeError: --workers 100000: this machine has ... cores; a local sweep takes at most one worker a core (0: serial; a batch cluster: --scheduler)
    """
    cores = os.cpu_count() or 1
    if cluster is None and workers is not None and (workers < 0 or workers > cores):
        raise FabscopeError(f"--workers {workers}: this machine has {cores} cores; a local sweep takes at most "
                            "one worker a core (0: serial; a batch cluster: --scheduler)")


def _name(f: Fabric, c: int) -> str:
    from fabscope.diagnose.tomography import cable_name

    return cable_name(f, c)


#: seconds the workers of a batch cluster's jobs may take to start
WORKER_WAIT = 600.0
#: the loggers Dask's event loop reports a failed job submission through (it is not raised to the caller)
JOB_LOGGERS = ("tornado.application", "asyncio", "distributed.deploy.spec", "distributed.deploy.cluster")


class JobFailures(logging.Handler):
    """The batch system's refusals of the workers' jobs (``sbatch`` exiting 1), logged inside Dask's event
    loop as tracebacks: kept here to be said in one line."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        text = str(exc) if exc is not None else record.getMessage()
        if "exit code" in text.lower():
            self.errors.append(text)

    def line(self) -> str | None:
        """The submission's own error line (its stderr), or the first line of the error."""
        if not self.errors:
            return None
        text = self.errors[0].replace("\\n", "\n")
        after = text.split("stderr:", 1)[1] if "stderr:" in text else text
        lines = [ln.strip(" '\")>") for ln in after.splitlines() if ln.strip(" '\")>")]
        return lines[0][:300] if lines else text.splitlines()[0][:300]


@contextlib.contextmanager
def job_failures() -> Iterator[JobFailures]:
    """While inside, a failed job submission is recorded in the handler, not printed as a traceback."""
    h = JobFailures()
    loggers = [logging.getLogger(n) for n in JOB_LOGGERS]
    before = [(lg.handlers, lg.propagate) for lg in loggers]
    for lg in loggers:       # Dask gives some of them a handler to the terminal of their own: ours only
        lg.handlers = [h]
        lg.propagate = False
    try:
        yield h
    finally:
        for lg, (handlers, prop) in zip(loggers, before):
            lg.handlers = handlers
            lg.propagate = prop


def _wait_for_jobs(client: Any, jobs: int, failures: JobFailures, wait: float = WORKER_WAIT) -> None:
    """One worker of each job, or one line: the batch system refused the job, or none started in time."""
    deadline = time.monotonic() + wait
    while True:
        try:
            client.wait_for_workers(jobs, timeout=1.0)
            return
        except (TimeoutError, OSError):
            pass
        line = failures.line()
        if line is not None:
            raise FabscopeError(f"--scheduler: the batch system did not take the workers' job ({line}); "
                                "nothing ran")
        if time.monotonic() > deadline:
            raise FabscopeError(f"--scheduler: no worker of the {jobs} job{'s' * (jobs != 1)} started within "
                                f"{wait:.0f} s (queued? see the batch system's queue); nothing ran")


def _on_dask(fabric, placement, traffic, name, mode, factor, todo, before, workers, cluster, jobs, chunks,
             engine=None):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as err:
        raise FabscopeError(f"parallel sweeps need dask.distributed (pip install 'fabscope[dask]'), or give "
                            f"--workers 0: {err}") from None
    own = cluster is None
    n = workers or os.cpu_count() or 1
    # a job the batch system refuses is logged from Dask's event loop as it is submitted: caught from here on
    with job_failures() as failures:
        if own:
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
            used = f"dask LocalCluster, {n} workers"
        else:
            cluster.scale(jobs=jobs)
            used = f"dask {type(cluster).__name__}, {jobs} jobs"
        try:
            with Client(cluster) as client:
                if not own:  # one worker of each job at least: the sweep is spread over every job asked for
                    _wait_for_jobs(client, jobs, failures)
                n_chunks = chunks or max(1, 4 * len(client.scheduler_info()["workers"]))
                parts = [p for p in np.array_split(todo, min(n_chunks, len(todo))) if len(p)]
                args = client.scatter([fabric, placement, traffic, before], broadcast=True)
                futs = [client.submit(sweep_chunk, args[0], args[1], args[2], name, mode, factor, p, args[3],
                                      engine, pure=False) for p in parts]
                rows = [r for fut in client.gather(futs) for r in fut]
                ran = sorted({w for ws in client.who_has(futs).values() for w in ws})
        finally:
            if own:
                cluster.close()
    return rows, used, ran


def critical_lines(result: Result, top: int = 15) -> list[str]:
    m = result.meta
    rows = result.extra["criticality"]
    what = "cut" if m.get("mode") == "cut" else f"degraded to {m.get('factor')}"
    out = [f"{m.get('fabric')}, routing {m.get('routing')}, {m.get('pattern')}: {m.get('cables')} cables {what} "
           f"in turn ({m.get('executor')}, {m.get('sweep_seconds')} s)",
           f"aggregate before: {result.extra['aggregate_before'] / 1e9:.1f} GB/s"]
    for label, n in sorted((m.get("rerouted_by") or {}).items(), key=lambda x: -x[1]):
        out.append(f"rerouted by {label}: {n} cables")
    out.append("lost %: the whole fabric rerouted after the cut; own %: only the cut cable's flows moved to "
               "their new paths, the rest kept")
    out.append(f"{'rank':>4}  {'cable':<40}{'lost GB/s':>10}{'lost %':>8}{'own %':>8}{'pairs':>7}{'worst':>7}")
    for i, r in enumerate(rows[:top], 1):
        own = r.get("lost_own_fraction")
        out.append(f"{i:>4}  {r['cable']:<40}{r['lost'] / 1e9:10.2f}{100 * r['lost_fraction']:8.2f}"
                   + (f"{100 * own:8.2f}" if own is not None else f"{'':8}")
                   + f"{r['losing_pairs']:>7}{100 * r['worst_pair_loss']:6.0f}%")
    return out
