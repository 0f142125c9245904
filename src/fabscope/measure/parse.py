"""Reading what fabscope-bench wrote: JSON lines -> :class:`fabscope.result.Result`.

The file is read as far as it is whole: a job killed at its wall time leaves
every finished line and perhaps half of the next, and :func:`read_run` keeps
the former, drops the latter and says so (:meth:`BenchRun.describe`).

>>> import json, os, tempfile
>>> lines = [{"type": "header", "schema": "fabscope.bench", "version": 1, "nranks": 2},
...          {"type": "ranks", "host": ["a", "b"], "core": [0, 0], "socket": [0, 0]},
...          {"type": "test", "test": "random-pairs"},
...          {"type": "pair", "test": "random-pairs", "src": 0, "dst": 1, "bytes": 8,
...           "iters": 1, "time": 1e-6, "bandwidth": 1.6e7, "scenario": 0}]
>>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
>>> with open(path, "w") as fh:
...     _ = fh.write("\\n".join(json.dumps(x) for x in lines) + '\\n{"type": "pa')
>>> run = read_run(path)
>>> run.describe()
'run.jsonl: 1 measurement of 1 test (random-pairs); incomplete: the job stopped during random-pairs, last line cut'
>>> to_result(run).pairs["cls"].tolist(), to_result(run).class_labels
([2], ('Intra-socket', 'Inter-socket', 'Inter-node'))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabscope.errors import MeasureError, SchemaError
from fabscope.fabric.model import Fabric
from fabscope.measure.apps import APP_TESTS, app_runs, check_app, check_traffic
from fabscope.measure.classes import classify
from fabscope.numbers import number, numbers
from fabscope.result import Result
from fabscope.textio import loads_json, read_lines

SCHEMA = "fabscope.bench"
SCHEMA_VERSION = 1
MEASUREMENTS = ("pair", "size", "stream")
PAIR_TESTS = ("random-pairs", "leaf-offset", "leaf-pairs", "all-pairs", "hops")


@dataclass
class BenchRun:
    path: str
    header: dict[str, Any]
    ranks: dict[str, list[Any]]
    records: list[dict[str, Any]] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    status: int | None = None       # from the "end" line; None if the job never got there
    error: str | None = None
    truncated: bool = False          # the last line was cut

    @property
    def complete(self) -> bool:
        return self.status == 0

    def of(self, test: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("test") == test and (kind is None or r["type"] == kind)]

    def describe(self) -> str:
        n = len(self.records)
        what = f"{n} measurement{'s' * (n != 1)} of {len(self.tests)} test{'s' * (len(self.tests) != 1)}"
        if self.tests:
            what += f" ({', '.join(self.tests)})"
        name = os.path.basename(self.path)
        if self.status == 0:
            return f"{name}: {what}; complete"
        if self.status is not None:
            return f"{name}: {what}; the program stopped with status {self.status}: {self.error or 'error'}"
        where = f" during {self.tests[-1]}" if self.tests else ""
        return f"{name}: {what}; incomplete: the job stopped{where}" + (", last line cut" if self.truncated else "")


#: numbers of measurement lines: field -> integer?  (all finite and >= 0; ranks also below nranks)
RECORD_NUMBERS = {"src": True, "dst": True, "bytes": True, "iters": True, "ranks": True, "pairs": True,
                  "node": True, "elements": True, "scenario": True,
                  "time": False, "latency": False, "bandwidth": False}
#: fields every measurement line must have, by type
RECORD_FIELDS = {"pair": ("test", "src", "dst", "bytes"), "size": ("test", "bytes"), "stream": ("test", "bandwidth")}
#: the most ranks a run may declare (a bound on hostile headers, far above any job measured)
MAX_RANKS = 1 << 24
#: the largest count a measurement line may give (bytes, iterations, scenario...): exact as a float
#: and within a 64-bit integer, which the readers' arrays hold
MAX_COUNT = 1 << 53


def read_run(path: str | os.PathLike[str], merge: bool = False) -> BenchRun:
    """Read a fabscope-bench JSON-lines file, as far as it is whole.

    Lines are read bounded and decoded strictly (:mod:`fabscope.textio`); every
    number of a measurement is checked finite and in range, and a missing
    field is named with its line.  A file holding two runs (a second header) is
    refused unless ``merge``: their measurements are then read as one run (of
    as many ranks, on the same hosts).
    """
    path = os.fspath(path)
    docs: list[tuple[int, dict[str, Any]]] = []
    truncated = False
    bad: tuple[int, str] | None = None          # a line that was not JSON: only the last one may be
    for n, line in read_lines(path, "fabscope-bench output", SchemaError):
        if not line.strip():
            continue
        if bad is not None:
            raise SchemaError(f"{path}: line {bad[0]} is not JSON ({bad[1]})")
        try:
            doc = loads_json(line, f"{path}:{n}", "fabscope-bench output", SchemaError)
        except SchemaError as err:
            if "nested deeper" in str(err):
                raise
            bad = (n, str(err).rsplit("(", 1)[-1].rstrip(")"))
            continue
        if not isinstance(doc, dict):
            raise SchemaError(f"{path}:{n}: a JSON {type(doc).__name__}, not a fabscope-bench record")
        docs.append((n, doc))
    truncated = bad is not None
    if not docs or docs[0][1].get("type") != "header":
        raise SchemaError(f"{path}: no fabscope-bench header line; is this a fabscope-bench output file?")
    n0, head = docs[0]
    _check_header(path, n0, head)
    nranks = int(head.get("nranks", 0))
    run = BenchRun(path, head, {}, truncated=truncated)
    for n, d in docs[1:]:
        t = d.get("type")
        where = f"{path}:{n}"
        if t == "header":
            _second_header(path, n, head, d, merge)
            continue
        if t == "ranks":
            ranks = _check_ranks(where, d, nranks)
            if run.ranks and merge and run.ranks.get("host") != ranks.get("host"):
                raise SchemaError(f"{where}: the merged runs ran on different hosts; runs merge only on the same")
            run.ranks = ranks
        elif t == "test":
            run.tests.append(_text(where, d, "test"))
        elif t in MEASUREMENTS:
            run.records.append(_check_record(where, d, t, nranks))
        elif t == "app":        # an application kernel's times (fabscope.measure.apps)
            run.records.append(check_app(d, where, nranks))
        elif t == "app-traffic":
            run.records.append(check_traffic(d, where, nranks))
        elif t == "error":
            run.error = str(d.get("message"))
        elif t == "end":
            run.status = number(d.get("status", 0), f"{where}: 'status'", integer=True)
    if not run.ranks:
        run.ranks = {"host": ["?"] * nranks, "core": [-1] * nranks, "socket": [0] * nranks}
    return run


def _text(where: str, d: dict[str, Any], key: str) -> str:
    if key not in d:
        raise SchemaError(f"{where}: a {d.get('type')!r} line without {key!r}")
    if not isinstance(d[key], str):
        raise SchemaError(f"{where}: {key!r} is {str(d[key])[:30]}, not a name")
    return d[key]


def _check_header(path: str, n: int, head: dict[str, Any]) -> None:
    if head.get("schema") != SCHEMA:
        raise SchemaError(f"{path}: schema {head.get('schema')!r}, expected {SCHEMA!r}")
    if head.get("version") != SCHEMA_VERSION:
        raise SchemaError(f"{path}: fabscope-bench schema version {head.get('version')!r}; "
                          f"this fabscope reads version {SCHEMA_VERSION}")
    head["nranks"] = number(head.get("nranks", 0), f"{path}:{n}: 'nranks'", 1, MAX_RANKS, integer=True)


def _second_header(path: str, n: int, first: dict[str, Any], head: dict[str, Any], merge: bool) -> None:
    """Two runs in one file (two jobs appending to one --out): refused unless asked to merge."""
    _check_header(path, n, head)
    a, b = first.get("mpi_library"), head.get("mpi_library")
    what = (f"a second run, of another MPI ({' '.join(str(b).split())[:40]!r}, the first "
            f"{' '.join(str(a).split())[:40]!r})" if a != b else "a second run")
    if not merge:
        raise SchemaError(f"{path}:{n}: {what} starts here; one run per file (give --merge to read them as one, "
                          "or split the file)")
    if head["nranks"] != first["nranks"]:
        raise SchemaError(f"{path}:{n}: the runs have {first['nranks']} and {head['nranks']} ranks; "
                          "only runs of as many ranks merge")


def _check_ranks(where: str, d: dict[str, Any], nranks: int) -> dict[str, Any]:
    hosts = d.get("host")
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise SchemaError(f"{where}: 'host' of the ranks line is not a list of host names")
    if len(hosts) != nranks:
        raise SchemaError(f"{where}: the ranks line lists {len(hosts)} hosts for {nranks} ranks")
    # every per-rank list fabscope-bench writes, typed here once: its readers (analysis.wait_loop,
    # failures.dead_rank) index and compare them as numbers
    for key, lo, hi in (("core", -1, MAX_RANKS), ("socket", -1, MAX_RANKS), ("pid", 0, 1 << 31),
                        ("cpus", 0, MAX_RANKS), ("host_cpus", 0, MAX_RANKS), ("machine_ranks", 0, MAX_RANKS),
                        ("machine_cpus", 0, MAX_RANKS)):
        if key in d:
            v = d[key]
            if not isinstance(v, list) or len(v) != nranks:
                raise SchemaError(f"{where}: {key!r} of the ranks line is not a list of {nranks} numbers")
            d[key] = [int(x) for x in numbers(v, f"{where}: {key!r}", lo, hi, integer=True).tolist()]
    if "wait" in d:
        w = d["wait"]
        if not isinstance(w, list) or len(w) != nranks or not all(x in ("spin", "yield") for x in w):
            raise SchemaError(f"{where}: 'wait' of the ranks line is not a list of {nranks} 'spin' or 'yield'")
    return d


def _check_record(where: str, d: dict[str, Any], t: str, nranks: int) -> dict[str, Any]:
    for key in RECORD_FIELDS[t]:
        if key not in d:
            raise SchemaError(f"{where}: a {t!r} line without {key!r}")
    _text(where, d, "test")
    for key, integer in RECORD_NUMBERS.items():
        if key in d:
            hi = nranks - 1 if key in ("src", "dst") else MAX_COUNT if integer else None
            d[key] = number(d[key], f"{where}: {key!r}", 0, hi, integer=integer)
    return d


def mpi_record(run: BenchRun) -> dict[str, Any]:
    """The MPI a run used, as its own file records it: name, version, the compiler
    wrapper that built the program, and every rank's wait-loop mode.

    >>> r = BenchRun("x", {"mpi_library": "MPICH Version:      5.0.2", "mpi_version": "5.0",
    ...                    "mpicc": "/v/bin/mpicc", "yield": "spin"}, {"wait": ["spin", "spin"]})
    >>> mpi_record(r)
    {'name': 'mpich', 'version': 'MPICH Version: 5.0.2', 'standard': '5.0', 'mpicc': '/v/bin/mpicc', 'wait': ['spin', 'spin']}
    """
    from fabscope.measure.mpi import vendor_of

    h = run.header
    lib = " ".join(str(h.get("mpi_library") or "unknown").split())
    return {"name": vendor_of(lib), "version": lib, "standard": h.get("mpi_version"),
            "mpicc": h.get("mpicc"), "wait": list(run.ranks.get("wait") or [h.get("yield")])}


def _seconds(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v if np.isfinite(v) and v > 0 else float("nan")


def to_result(run: BenchRun, test: str | None = None, fabric: Fabric | None = None) -> Result:
    """The per-pair table of one test of a run, classified (see :mod:`.classes`)."""
    if test is None:
        measured = [t for t in run.tests if run.of(t)]
        test = next((t for t in measured if t in PAIR_TESTS), measured[0] if measured else None)
    if test is None:
        raise MeasureError(f"{run.describe()}: no measurement to analyze")
    if test in APP_TESTS:
        return _app_result(run, test, fabric)
    recs = [r for r in run.of(test) if r["type"] in ("pair", "size")]
    if not recs:
        raise MeasureError(f"{os.path.basename(run.path)}: no per-pair or per-size measurements of {test!r}")
    src = np.array([int(r.get("src", 0)) for r in recs])
    dst = np.array([int(r.get("dst", min(1, len(run.ranks["host"]) - 1))) for r in recs])
    hosts = np.array(run.ranks["host"], dtype=object)
    cls, labels = classify(run, src, dst, fabric)
    nbytes = np.array([int(r["bytes"]) for r in recs])
    bw = np.array([float(r.get("bandwidth") or 0.0) for r in recs])
    tm = np.array([float(r.get("time", r.get("latency", 0.0))) for r in recs])
    pairs = {"src": src, "dst": dst, "src_host": hosts[src].astype(str), "dst_host": hosts[dst].astype(str),
             "cls": cls, "bytes": nbytes, "bandwidth": bw, "time": tm,
             "scenario": np.array([int(r.get("scenario", 0)) for r in recs])}
    for col in ("iter_min", "iter_median", "iter_max"):   # per-iteration figures of the pair kernel
        if any(col in r for r in recs):
            pairs[col] = np.array([_seconds(r.get(col)) for r in recs])
    h = run.header
    meta = {"kind": "measure", "mpi": mpi_record(run), "test": test, "source": os.path.abspath(run.path),
            "mpi_library": h.get("mpi_library"), "nranks": h.get("nranks"), "nnodes": h.get("nnodes"),
            "seed": h.get("seed"), "yield": h.get("yield"), "argv": h.get("argv"),
            "fabric": fabric.name if fabric is not None else None,
            "complete": run.complete, "status": run.describe()}
    return Result(meta=meta, class_labels=labels, pairs=pairs)


def _app_result(run: BenchRun, test: str, fabric: Fabric | None) -> Result:
    """An application kernel's run as a result: one row per ordered pair that exchanged bytes (bytes
    per iteration, the median time per iteration), the kernel's times and parameters in meta['app']."""
    apps = [a for a in app_runs(run) if a.test == test]
    if not apps:
        raise MeasureError(f"{os.path.basename(run.path)}: {test!r} wrote no traffic line (the run stopped during it?)")
    a = apps[-1]
    coo = a.sent.tocoo()
    src, dst = coo.row.astype(np.int64), coo.col.astype(np.int64)
    hosts = np.array(run.ranks["host"], dtype=object)
    cls, labels = classify(run, src, dst, fabric)
    per_iter = coo.data.astype(float) / a.iterations_counted
    pairs = {"src": src, "dst": dst, "src_host": hosts[src].astype(str), "dst_host": hosts[dst].astype(str),
             "cls": cls, "bytes": per_iter,
             "bandwidth": per_iter / a.t_iter_median if a.t_iter_median > 0 else np.zeros(len(src)),
             "time": np.full(len(src), a.t_iter_median)}
    h = run.header
    meta = {"kind": "measure", "mpi": mpi_record(run), "test": test, "source": os.path.abspath(run.path),
            "mpi_library": h.get("mpi_library"), "nranks": h.get("nranks"), "nnodes": h.get("nnodes"),
            "seed": h.get("seed"), "yield": h.get("yield"), "argv": h.get("argv"),
            "fabric": fabric.name if fabric is not None else None,
            "complete": run.complete, "status": run.describe(),
            "app": {"test": a.test, "ranks": a.ranks, "iterations": a.iterations, "warmup": a.warmup,
                    "size": a.size, "params": a.params, "t_iter": a.t_iter.tolist(),
                    "t_iter_median": a.t_iter_median, "t_iter_mean": a.t_iter_mean, "t_iter_min": a.t_iter_min,
                    "t_iter_max": a.t_iter_max, "iterations_counted": a.iterations_counted,
                    "counted_as": a.counted_as, "bytes_per_iteration": a.bytes_per_iteration}}
    return Result(meta=meta, class_labels=labels, pairs=pairs)
