"""The application kernels' records: time per iteration and the traffic each run counted.

fabscope-bench's kernels ``halo2d``, ``halo3d``, ``fft-transpose`` and
``allreduce-loop`` (csrc/apps.c) each write two lines: an ``app`` line (the
time of every timed iteration, the slowest rank's, with its median, mean,
minimum and maximum) and an ``app-traffic`` line (the bytes and messages each
rank sent to each other rank over the ``iterations_counted`` iterations it
ran, warm-up included).  :func:`app_runs` pairs them into :class:`AppRun`
objects; :meth:`AppRun.graph` is the communication graph per iteration that
``fabscope map --comm RUN.jsonl`` maps (read by
:func:`fabscope.traffic.commfiles.read_app_comm`).

>>> rec = {"type": "app", "test": "halo2d", "ranks": 4, "iterations": 2, "warmup": 1, "size": 8,
...        "params": {"dims": [2, 2], "periodic": [True, True], "compute": 0},
...        "t_iter": [0.5, 0.25], "t_iter_median": 0.375, "t_iter_mean": 0.375,
...        "t_iter_min": 0.25, "t_iter_max": 0.5}
>>> traffic = {"type": "app-traffic", "test": "halo2d", "ranks": 4, "iterations_counted": 3,
...            "counted_as": "messages", "sent": [[0, 1, 48], [1, 0, 48]], "messages": [[0, 1, 6], [1, 0, 6]]}
>>> app = make_app(check_app(rec, "x:3", 4), check_traffic(traffic, "x:4", 4), ["a", "b", "a", "b"])
>>> app.bytes_per_iteration, app.sent.toarray()[0].tolist()
(32.0, [0, 48, 0, 0])
>>> g = app.graph()
>>> g.n, g.bytes.tolist(), g.msgs.tolist(), g.grid
(4, [16.0, 16.0], [2.0, 2.0], (2, 2))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from fabscope.errors import MeasureError, SchemaError
from fabscope.numbers import number, numbers

if TYPE_CHECKING:
    from scipy.sparse import csr_array

    from fabscope.mapping.commgraph import CommGraph

#: fabscope-bench's application kernels (csrc/apps.c), and the rank grid each takes with --dims
APP_TESTS = {"halo2d": 2, "halo3d": 3, "fft-transpose": 2, "allreduce-loop": 0}
#: how the bytes of an app-traffic line were counted
COUNTED_AS = {"messages": "point-to-point messages as sent",
              "pmpi-pairwise": "MPI_Alltoall as a pairwise exchange (the PMPI profiler's algorithm)",
              "pmpi-ring": "MPI_Allreduce as a ring, reduce-scatter then allgather (the PMPI profiler's algorithm)"}
#: the most timed iterations an app line may hold (a bound on hostile files)
MAX_ITERATIONS = 1 << 24


def check_app_args(args: list[str], ranks: int) -> None:
    """Refuse, before anything is launched, a ``--dims`` grid that does not hold the job's ranks.

    ``args`` is fabscope-bench's command line (TEST first); the program checks the rest itself.

    >>> check_app_args(["halo2d", "--dims", "3x3"], 4)
    Traceback (most recent call last):
    ...
    fabscope.errors.MeasureError: halo2d: --dims 3x3 makes a grid of 9 ranks, the job has 4 (--np)
    >>> check_app_args(["halo2d,fft-transpose", "--dims", "2x2"], 4)
    """
    tests = [t for t in args[0].split(",") if APP_TESTS.get(t)] if args else []
    dims = next((args[i + 1] for i in range(len(args) - 1) if args[i] == "--dims"), None)
    if not tests or dims is None:
        return
    try:
        n = int(np.prod([int(x) for x in dims.replace(",", "x").split("x")]))
    except ValueError:
        return      # not numbers: the program names what is wrong (--check-args)
    if n != ranks:
        raise MeasureError(f"{tests[0]}: --dims {dims} makes a grid of {n} ranks, the job has {ranks} (--np)")


def _field(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise SchemaError(f"{where}: a {d.get('type')!r} line without {key!r}")
    return d[key]


def _test(d: dict[str, Any], where: str) -> str:
    t = _field(d, "test", where)
    if t not in APP_TESTS:
        raise SchemaError(f"{where}: {str(t)[:30]!r} is not an application kernel ({', '.join(APP_TESTS)})")
    return str(t)


def check_app(d: dict[str, Any], where: str, nranks: int) -> dict[str, Any]:
    """An ``app`` line, every number checked (finite, in range, integers where counts).

    >>> check_app({"type": "app", "test": "halo2d", "ranks": 2, "iterations": 1, "warmup": 0, "size": 1,
    ...            "t_iter": [float("nan")], "params": {}}, "run.jsonl:5", 2)
    Traceback (most recent call last):
    ...
    fabscope.errors.SchemaError: run.jsonl:5: 't_iter' entry 1 is nan, not a finite number
    """
    _test(d, where)
    d["ranks"] = number(_field(d, "ranks", where), f"{where}: 'ranks'", nranks, nranks, integer=True)
    d["iterations"] = number(_field(d, "iterations", where), f"{where}: 'iterations'", 1, MAX_ITERATIONS,
                             integer=True)
    d["warmup"] = number(_field(d, "warmup", where), f"{where}: 'warmup'", 0, MAX_ITERATIONS, integer=True)
    d["size"] = number(_field(d, "size", where), f"{where}: 'size'", 0, integer=True)
    t = _field(d, "t_iter", where)
    if not isinstance(t, list) or len(t) != d["iterations"]:
        raise SchemaError(f"{where}: 't_iter' is not a list of {d['iterations']} times (one per timed iteration)")
    d["t_iter"] = numbers(t, f"{where}: 't_iter'", 0).astype(float)
    for key in ("t_iter_median", "t_iter_mean", "t_iter_min", "t_iter_max"):
        d[key] = float(number(_field(d, key, where), f"{where}: {key!r}", 0))
    params = d.get("params", {})
    if not isinstance(params, dict):
        raise SchemaError(f"{where}: 'params' is not an object")
    if "dims" in params:
        dims = params["dims"]
        if not isinstance(dims, list) or not dims or len(dims) > 6:
            raise SchemaError(f"{where}: 'dims' is not a list of up to 6 extents")
        params["dims"] = [int(x) for x in numbers(dims, f"{where}: 'dims'", 1, nranks, integer=True)]
        if int(np.prod(params["dims"])) != nranks:
            raise SchemaError(f"{where}: 'dims' {params['dims']} do not make {nranks} ranks")
    if "periodic" in params:
        per = params["periodic"]
        if not isinstance(per, list) or not all(isinstance(x, bool) for x in per) \
                or len(per) != len(params.get("dims", per)):
            raise SchemaError(f"{where}: 'periodic' is not a list of true/false, one per dimension")
    if "compute" in params:
        params["compute"] = float(number(params["compute"], f"{where}: 'compute'", 0))
    d["params"] = params
    return d


def _pairs(d: dict[str, Any], key: str, where: str, nranks: int) -> np.ndarray:
    v = _field(d, key, where)
    if not isinstance(v, list) or not all(isinstance(x, list) and len(x) == 3 for x in v):
        raise SchemaError(f"{where}: {key!r} is not a list of [src, dst, count] triples")
    a = numbers([x for row in v for x in row], f"{where}: {key!r}", 0, integer=True).reshape(-1, 3) \
        if v else np.zeros((0, 3), np.int64)
    a = a.astype(np.int64)
    bad = np.flatnonzero((a[:, 0] >= nranks) | (a[:, 1] >= nranks) | (a[:, 0] == a[:, 1]))
    if len(bad):
        s, t, _ = a[bad[0]].tolist()
        raise SchemaError(f"{where}: {key!r} entry {bad[0] + 1} is the pair ({s}, {t}); "
                          f"ranks are 0..{nranks - 1} and a pair has two of them")
    if len({(s, t) for s, t in a[:, :2].tolist()}) != len(a):
        raise SchemaError(f"{where}: {key!r} lists a pair twice")
    return a


def check_traffic(d: dict[str, Any], where: str, nranks: int) -> dict[str, Any]:
    """An ``app-traffic`` line: pairs in range, each once, counts non-negative integers."""
    _test(d, where)
    d["ranks"] = number(_field(d, "ranks", where), f"{where}: 'ranks'", nranks, nranks, integer=True)
    d["iterations_counted"] = number(_field(d, "iterations_counted", where), f"{where}: 'iterations_counted'",
                                     1, 2 * MAX_ITERATIONS, integer=True)
    how = d.get("counted_as", "messages")
    if how not in COUNTED_AS:
        raise SchemaError(f"{where}: 'counted_as' {str(how)[:30]!r} is not one of {', '.join(COUNTED_AS)}")
    d["counted_as"] = how
    d["sent"] = _pairs(d, "sent", where, nranks)
    if "messages" in d:
        d["messages"] = _pairs(d, "messages", where, nranks)
    return d


def _matrix(a: np.ndarray, n: int) -> csr_array:
    from scipy.sparse import csr_array      # only an application run's traffic needs it (start-up: docs/startup.md)

    return csr_array((a[:, 2], (a[:, 0], a[:, 1])), shape=(n, n), dtype=np.int64)


@dataclass(eq=False)
class AppRun:
    """One application kernel's run: what ran, its time per iteration, and its traffic."""

    test: str
    ranks: int
    iterations: int                 # timed iterations
    warmup: int
    size: int                       # bytes per message (halo face, alltoall block, allreduce vector)
    params: dict[str, Any]          # dims, periodic, compute, ...
    t_iter: np.ndarray              # seconds of every timed iteration (its slowest rank)
    t_iter_median: float
    t_iter_mean: float
    t_iter_min: float
    t_iter_max: float
    iterations_counted: int         # iterations whose traffic `sent` holds (warm-up included)
    counted_as: str                 # a key of COUNTED_AS
    sent: csr_array                 # sent[i, j]: bytes rank i sent rank j over iterations_counted
    messages: csr_array | None = None
    hosts: list[str] = field(default_factory=list)

    @property
    def bytes_per_iteration(self) -> float:
        """Bytes all ranks sent in one iteration."""
        return float(self.sent.sum()) / self.iterations_counted

    def placement(self) -> str:
        """Where the ranks ran: 'N hosts' or 'N hosts, k ranks each' (from the run's ranks line)."""
        if not self.hosts:
            return "?"
        per = {h: self.hosts.count(h) for h in dict.fromkeys(self.hosts)}
        each = set(per.values())
        return f"{len(per)} host{'s' * (len(per) != 1)}" + (f", {each.pop()} ranks each" if len(each) == 1 else "")

    def graph(self, name: str | None = None) -> CommGraph:
        """The communication graph of one iteration: bytes (and messages) per ordered pair / iterations."""
        from fabscope.mapping.commgraph import CommGraph

        coo = self.sent.tocoo()
        msgs = None
        if self.messages is not None:
            m = self.messages.tocsr()
            msgs = np.asarray(m[coo.row, coo.col]).ravel() / self.iterations_counted
        # the rank grid, as fabscope's own generators record it (stencil2d/3d, pencils: no wrap-around)
        dims = self.params.get("dims")
        grid = tuple(dims) if dims else None
        per = tuple(self.params.get("periodic", [False] * len(dims))) if dims else None
        return CommGraph.from_coo(name or self.test, self.ranks, coo.row, coo.col,
                                  coo.data.astype(float) / self.iterations_counted, msgs,
                                  grid=grid, periodic=per,
                                  params={"test": self.test, "size": self.size, "counted_as": self.counted_as,
                                          "per": "iteration"})


def make_app(app: dict[str, Any], traffic: dict[str, Any], hosts: list[str]) -> AppRun:
    """An :class:`AppRun` from a checked ``app`` line and the ``app-traffic`` line of the same kernel."""
    n = int(app["ranks"])
    msgs = traffic.get("messages")
    return AppRun(test=app["test"], ranks=n, iterations=int(app["iterations"]), warmup=int(app["warmup"]),
                  size=int(app["size"]), params=dict(app["params"]), t_iter=np.asarray(app["t_iter"], float),
                  t_iter_median=app["t_iter_median"], t_iter_mean=app["t_iter_mean"],
                  t_iter_min=app["t_iter_min"], t_iter_max=app["t_iter_max"],
                  iterations_counted=int(traffic["iterations_counted"]), counted_as=traffic["counted_as"],
                  sent=_matrix(traffic["sent"], n), messages=None if msgs is None else _matrix(msgs, n),
                  hosts=list(hosts))


def app_runs(run: Any) -> list[AppRun]:
    """Every kernel of a :class:`fabscope.measure.parse.BenchRun` that wrote both its lines, in the
    run's order (a run cut between the two lines of a kernel has no traffic for it: it is left out)."""
    out: list[AppRun] = []
    pending: dict[str, dict[str, Any]] = {}
    for r in run.records:
        if r["type"] == "app":
            pending[r["test"]] = r
        elif r["type"] == "app-traffic" and r["test"] in pending:
            out.append(make_app(pending.pop(r["test"]), r, list(run.ranks.get("host") or [])))
    return out


def is_app_run(path: str) -> bool:
    """Whether ``path`` is a fabscope-bench output with an ``app`` line (False for anything else; the
    reader says what is wrong with a file that claims to be one).

    A file whose first line is a fabscope-bench header is read through the bounded reader
    (:func:`fabscope.textio.read_lines`): a line longer than :data:`fabscope.textio.MAX_LINE` is refused
    after reading that much, never read whole.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> _ = open(p, "w").write('{"type":"header","format":"fabscope.bench"}\\n' + "x" * (2 << 20) + "\\n")
    >>> is_app_run(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fabscope.errors.SchemaError: ...run.jsonl line 2: longer than 1,048,576 bytes; not a fabscope-bench output
    """
    from fabscope.textio import read_lines

    if not (isinstance(path, str) and os.path.isfile(path)):
        return False
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 16)
    except OSError:
        return False
    if b'"header"' not in first or b"fabscope.bench" not in first:
        return False        # no claim to be one: the caller's own reader reads it
    return any(n > 1 and '"type":"app"' in line.replace(" ", "")
               for n, line in read_lines(path, "fabscope-bench output", SchemaError))


def app_table(apps: list[AppRun]) -> list[str]:
    """``fabscope analyze``'s table of application kernels.

    >>> from scipy.sparse import csr_array
    >>> a = AppRun("halo2d", 16, 50, 5, 65536, {"dims": [4, 4]}, np.array([0.25]), 0.25, 0.25, 0.25, 0.25,
    ...            55, "messages", csr_array(np.full((16, 16), 55 * 4096)), hosts=["h%d" % (i // 4) for i in range(16)])
    >>> print("\\n".join(app_table([a])))
    kernel          ranks  placement               median [s/iter]  bytes/iter  grid   size [B]
    halo2d             16  4 hosts, 4 ranks each           0.25000     1048576  4x4       65536
    """
    lines = [(f"{'kernel':<15} {'ranks':>5}  {'placement':<22} {'median [s/iter]':>16} {'bytes/iter':>11}  "
              f"{'grid':<6} {'size [B]':>8}")]
    for a in apps:
        grid = "x".join(str(d) for d in a.params.get("dims", [])) or "-"
        lines.append(f"{a.test:<15} {a.ranks:>5}  {a.placement():<22} {a.t_iter_median:16.5f} "
                     f"{a.bytes_per_iteration:11.0f}  {grid:<6} {a.size:>8}")
    return lines
