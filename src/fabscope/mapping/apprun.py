"""An application kernel's run as fabscope-bench writes it: its iteration times, its traffic, its hosts.

Beside the header and ranks lines (each rank's host), an application run holds::

    {"type": "app", "test": "halo2d", "ranks": 16, "iterations": 50, "warmup": 5, "size": 65536,
     "params": {"dims": [4, 4], "periodic": [true, true], "compute": 0},
     "t_iter": [...], "t_iter_median": ..., "t_iter_min": ..., "t_iter_max": ..., "t_iter_mean": ...}
    {"type": "app-traffic", "test": "halo2d", "ranks": 16, "iterations_counted": 55,
     "sent": [[src, dst, bytes], ...]}

:func:`read_app_run` reads the first ``app`` line (and the ``app-traffic`` line of the same test);
every number is checked where it is read, and a file with no ``app`` line is refused in one line.

>>> import json, os, tempfile
>>> lines = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2},
...          {"type": "ranks", "host": ["a", "b"]},
...          {"type": "app", "test": "halo2d", "ranks": 2, "iterations": 4, "warmup": 1, "size": 8,
...           "params": {"dims": [2, 1], "periodic": [False, False]}, "t_iter": [1e-3, 2e-3, 1e-3, 1e-3]},
...          {"type": "app-traffic", "test": "halo2d", "ranks": 2, "iterations_counted": 5,
...           "sent": [[0, 1, 40], [1, 0, 40]]}]
>>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
>>> _ = open(path, "w").write("".join(json.dumps(x) + "\\n" for x in lines))
>>> run = read_app_run(path)
>>> run.test, run.hosts, run.t_median, run.t_min, run.t_max
('halo2d', ['a', 'b'], 0.001, 0.001, 0.002)
>>> g = run.graph()
>>> g.grid, g.src.tolist(), g.bytes.tolist()
((2, 1), [0, 1], [40.0, 40.0])
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabscope.errors import SchemaError
from fabscope.mapping.commgraph import CommGraph
from fabscope.numbers import number, numbers

__all__ = ["HALO_KERNELS", "AppRun", "is_app_run", "read_app_run"]

HALO_KERNELS = {"halo2d": 2, "halo3d": 3}


@dataclass(frozen=True, eq=False)
class AppRun:
    """One application kernel's run (see the module docstring)."""

    path: str
    test: str
    n_ranks: int
    iterations: int
    warmup: int
    size: float
    params: dict[str, Any]
    t_iter: np.ndarray                  # seconds per timed iteration (max over ranks)
    hosts: list[str]                    # host of each rank, as the run named it (untrusted)
    sent: np.ndarray | None = None      # (k, 3): src, dst, bytes over iterations_counted iterations
    iterations_counted: int = 0
    stats: dict[str, float] = field(default_factory=dict)

    def _stat(self, key: str, fn) -> float:
        if key in self.stats:
            return self.stats[key]
        return float(fn(self.t_iter)) if len(self.t_iter) else float("nan")

    @property
    def t_median(self) -> float:
        return self._stat("t_iter_median", np.median)

    @property
    def t_min(self) -> float:
        return self._stat("t_iter_min", np.min)

    @property
    def t_max(self) -> float:
        return self._stat("t_iter_max", np.max)

    def graph(self) -> CommGraph:
        """The bytes each rank sent to each other over the run (the ``app-traffic`` line), with the
        process grid of a halo kernel (so ``map`` can tile it).  No traffic line: refused."""
        if self.sent is None or len(self.sent) == 0:
            raise SchemaError(f"{self.path}: the {self.test} run has no 'app-traffic' line (bytes per rank pair)")
        s = self.sent
        grid = periodic = None
        if self.test in HALO_KERNELS:
            grid = tuple(halo_dims(self))
            periodic = tuple(halo_periodic(self, len(grid)))
        return CommGraph.from_coo(self.test, self.n_ranks, s[:, 0].astype(np.int64), s[:, 1].astype(np.int64),
                                  s[:, 2], grid=grid, periodic=periodic,
                                  params={"file": self.path, "app": self.test, "iterations": self.iterations_counted})


def halo_dims(run: AppRun) -> list[int]:
    """The run's grid: ``params.dims`` where given, else MPI_Dims_create's."""
    from fabscope.dynamic.apps import dims_create

    nd = HALO_KERNELS.get(run.test, 2)
    dims = run.params.get("dims")
    if dims is None:
        return dims_create(run.n_ranks, nd)
    d = numbers(dims, f"{run.path}: params.dims", 1, run.n_ranks, integer=True).tolist()
    if int(np.prod(d)) != run.n_ranks:
        raise SchemaError(f"{run.path}: params.dims {d} make {int(np.prod(d))} ranks, the run has {run.n_ranks}")
    return d


def halo_periodic(run: AppRun, nd: int) -> list[bool]:
    p = run.params.get("periodic", True)
    if isinstance(p, bool):
        return [p] * nd
    if not isinstance(p, list) or len(p) != nd or not all(isinstance(x, bool) for x in p):
        raise SchemaError(f"{run.path}: params.periodic is not {nd} true/false flags")
    return list(p)


def _lines(path: str):
    from fabscope.textio import loads_json, read_lines

    for n, line in read_lines(path, "fabscope-bench output", SchemaError):
        if line.strip():
            try:
                doc = loads_json(line, f"{path}:{n}", "fabscope-bench output", SchemaError)
            except SchemaError:
                continue                   # a cut last line (read_run has said what is wrong with others)
            if isinstance(doc, dict):
                yield n, doc


def is_app_run(path: str) -> bool:
    """Whether ``path`` is a fabscope-bench output holding an ``app`` line (False for anything else)."""
    if not (isinstance(path, str) and os.path.isfile(path)):
        return False
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 16)
        if b'"header"' not in first or b"fabscope.bench" not in first:
            return False
        return any(d.get("type") == "app" for _, d in _lines(path))
    except Exception:   # noqa: BLE001 - not readable as one: the caller's own reader says why
        return False


def read_app_run(path: str) -> AppRun:
    """The first application kernel run of a fabscope-bench output (see the module docstring)."""
    from fabscope.measure.parse import read_run

    bench = read_run(path)              # header and ranks lines, checked
    nranks = int(bench.header["nranks"])
    app: tuple[int, dict[str, Any]] | None = None
    traffic: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, d in _lines(path):
        if d.get("type") == "app" and app is None:
            app = (n, d)
        elif d.get("type") == "app-traffic":
            traffic.setdefault(str(d.get("test")), (n, d))
    if app is None:
        raise SchemaError(f"{path}: no application record (a 'type': 'app' line); is this an application "
                          "kernel's run (halo2d, halo3d, fft-transpose, allreduce-loop)?")
    n, d = app
    where = f"{path}:{n}"
    test = d.get("test")
    if not isinstance(test, str) or not test:
        raise SchemaError(f"{where}: the 'app' line has no test name")
    from fabscope.names import plain

    if plain(test) != test or len(test) > 64:       # printed as the graph's name: a plain short name only
        raise SchemaError(f"{where}: test name {plain(test[:64])!r} is not a plain name")
    ranks = number(d.get("ranks", nranks), f"{where}: 'ranks'", 1, nranks, integer=True)
    if "host" not in bench.ranks or list(bench.ranks["host"]) == ["?"] * nranks:
        raise SchemaError(f"{path}: no 'ranks' line naming each rank's host")
    params = d.get("params") or {}
    if not isinstance(params, dict):
        raise SchemaError(f"{where}: 'params' is not an object")
    t = d.get("t_iter")
    t_iter = numbers(t if isinstance(t, list) else [], f"{where}: 't_iter'", 0, lo_open=True)
    stats = {k: float(number(d[k], f"{where}: {k!r}", 0, lo_open=True))
             for k in ("t_iter_median", "t_iter_min", "t_iter_max", "t_iter_mean") if d.get(k) is not None}
    if not len(t_iter) and "t_iter_median" not in stats:
        raise SchemaError(f"{where}: the 'app' line has no iteration times ('t_iter')")
    sent, counted = None, 0
    if test in traffic:
        tn, td = traffic[test]
        tw = f"{path}:{tn}"
        counted = number(td.get("iterations_counted", 1), f"{tw}: 'iterations_counted'", 1, integer=True)
        rows = td.get("sent")
        if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == 3 for r in rows):
            raise SchemaError(f"{tw}: 'sent' is not a list of [src, dst, bytes]")
        a = numbers([x for r in rows for x in r], f"{tw}: 'sent'", 0).reshape(-1, 3)
        if len(a) and (a[:, :2].max() >= ranks or np.any(a[:, :2] != np.round(a[:, :2]))):
            raise SchemaError(f"{tw}: 'sent' names rank {a[:, :2].max():g}; the run has {ranks} ranks")
        sent = a
    return AppRun(path, test, int(ranks),
                  number(d.get("iterations", max(len(t_iter), 1)), f"{where}: 'iterations'", 1, integer=True),
                  number(d.get("warmup", 0), f"{where}: 'warmup'", 0, integer=True),
                  float(number(d.get("size", 0), f"{where}: 'size'", 0)), params, t_iter,
                  [str(h) for h in bench.ranks["host"][:ranks]], sent, int(counted), stats)
