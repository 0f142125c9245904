"""Measured runs as pairs of fabric hosts, grouped by what ran at the same time.

fabscope-bench runs its pair tests in rounds: every pair of one round
ping-pongs at the same time (``random-pairs`` round r, ``leaf-offset`` and
``leaf-pairs`` offset K, ``hops``), and ``all-pairs`` sends one way per
shift k.  The ``scenario`` column of each pair line says which round it ran
in; rounds of one test, tests of one run and separate runs never overlap.
:func:`load_measured` numbers every such concurrent set once (``scenario``
here is that global number), so the model shares links exactly among the
pairs that shared them.

Host names are matched to the fabric's host names: as given, then without
the domain (``n1.cluster`` -> ``n1``), then through a host map
(:mod:`fabscope.fabric.importers.hostmap`: ``measured-name fabric-name``).

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.result import Result
>>> f = fat_tree(k=2, levels=2)
>>> r = Result(meta={"kind": "measure", "test": "random-pairs"}, class_labels=("x",),
...            pairs={"src": np.array([0, 2]), "dst": np.array([1, 3]), "src_host": np.array(["h0000", "h0002"]),
...                   "dst_host": np.array(["h0003", "h0001"]), "cls": np.array([0, 0]),
...                   "bytes": np.array([1e6, 1e6]), "bandwidth": np.array([1e9, 2e9]),
...                   "scenario": np.array([0, 1])})
>>> m = load_measured([r], f)
>>> m.hs.tolist(), m.hd.tolist(), m.scenario.tolist(), m.pingpong.tolist()
([0, 2], [3, 1], [0, 1], [True, True])
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from fabscope.errors import FabscopeError, MeasureError, SchemaError
from fabscope.fabric.model import Fabric
from fabscope.result import Result

#: pair tests of fabscope-bench; all-pairs sends one way, the others ping-pong
PAIR_TESTS = ("random-pairs", "leaf-offset", "leaf-pairs", "all-pairs", "hops")
ONE_WAY_TESTS = ("all-pairs",)


#: per-pair figures of the timed iterations (seconds), written by fabscope-bench's pair kernel
ITER_COLUMNS = ("iter_min", "iter_median", "iter_max")


def _number(x: Any) -> float:
    """A per-iteration figure from a file: a positive finite number, else NaN (absent or junk)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v if np.isfinite(v) and v > 0 else float("nan")


class DiagnoseError(FabscopeError):
    """Measured input that cannot be compared with or diagnosed against a fabric."""


@dataclass(frozen=True, eq=False)
class Measured:
    """Measured pairs, their hosts in a fabric, and the concurrent set each ran in."""

    fabric: Fabric
    src: np.ndarray          # ranks as the run numbered them
    dst: np.ndarray
    hs: np.ndarray           # host index in the fabric
    hd: np.ndarray
    bytes: np.ndarray
    bandwidth: np.ndarray    # bytes/s as measured
    time: np.ndarray         # seconds per iteration as measured
    scenario: np.ndarray     # global concurrent-set number 0..S-1
    pingpong: np.ndarray     # bool: both directions (ping-pong) or one way
    test: np.ndarray         # test name of each pair
    sources: tuple[str, ...] = ()
    #: (source index, test, scenario in that test) of each global scenario
    scenario_key: tuple[tuple[int, str, int], ...] = field(default=())
    #: timed iterations and untimed warm-up ones each pair ran (None: not known; the model of the
    #: program in time then takes fabscope-bench's defaults)
    iters: np.ndarray | None = None
    warmup: np.ndarray | None = None
    #: seconds of the best, median and worst timed iteration of each pair (NaN where the file has only
    #: the mean: fabscope-bench before per-iteration figures, all-pairs, results of other tools)
    iter_min: np.ndarray | None = None
    iter_median: np.ndarray | None = None
    iter_max: np.ndarray | None = None

    def _iter(self, col: np.ndarray | None) -> np.ndarray:
        return np.full(self.n_pairs, np.nan) if col is None else np.asarray(col, dtype=float)

    def robust(self) -> tuple[np.ndarray, np.ndarray, str]:
        """Per pair: the bandwidth of its median iteration where the run timed each iteration (a
        jittered iteration is an outlier of its own series and moves the median little), else its mean
        bandwidth; the spread of its iterations ((worst - best) / median, NaN where unknown); and a
        phrase saying which figure was used.

        >>> from fabscope.fabric.generators import fat_tree
        >>> one = lambda x: np.array([x])
        >>> m = Measured(fat_tree(k=2, levels=2), one(0), one(1), one(0), one(2), one(1e6), one(1e8),
        ...              one(0.02), one(0), one(True), one("random-pairs"), iter_min=one(0.0095),
        ...              iter_median=one(0.01), iter_max=one(0.2))   # one iteration hit by jitter
        >>> bw, spread, figure = m.robust()
        >>> float(bw[0]), round(float(spread[0]), 2), figure
        (200000000.0, 19.05, 'median iteration (1 of 1 pairs; mean elsewhere)')
        """
        med, lo, hi = self._iter(self.iter_median), self._iter(self.iter_min), self._iter(self.iter_max)
        ok = np.isfinite(med) & (med > 0)
        per_iter = np.where(self.pingpong, 2.0, 1.0) * self.bytes
        with np.errstate(divide="ignore", invalid="ignore"):
            bw = np.where(ok, per_iter / np.where(ok, med, 1.0), self.bandwidth)
            spread = np.where(ok, (hi - lo) / med, np.nan)
        n = int(ok.sum())
        figure = ("mean over the iterations (the input has no per-iteration figures)" if n == 0 else
                  f"median iteration ({n} of {self.n_pairs} pairs; mean elsewhere)")
        return bw, spread, figure

    @property
    def n_pairs(self) -> int:
        return len(self.hs)

    @property
    def n_scenarios(self) -> int:
        return len(self.scenario_key)

    @property
    def inter(self) -> np.ndarray:
        """Pairs whose two ranks sit on different hosts."""
        return self.hs != self.hd

    def subset(self, keep: np.ndarray) -> "Measured":
        """The pairs ``keep`` selects (bool mask or indices); scenarios renumbered."""
        idx = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        used, scen = np.unique(self.scenario[idx], return_inverse=True)
        return Measured(self.fabric, self.src[idx], self.dst[idx], self.hs[idx], self.hd[idx], self.bytes[idx],
                        self.bandwidth[idx], self.time[idx], scen.astype(np.int64), self.pingpong[idx],
                        self.test[idx], self.sources, tuple(self.scenario_key[i] for i in used),
                        None if self.iters is None else self.iters[idx],
                        None if self.warmup is None else self.warmup[idx],
                        *(None if x is None else np.asarray(x)[idx]
                          for x in (self.iter_min, self.iter_median, self.iter_max)))


def concat(parts: Sequence[Measured]) -> Measured:
    """Several measured runs of one fabric as one: their concurrent sets kept apart (runs never overlap).

    >>> from fabscope.fabric.generators import fat_tree
    >>> one = lambda x: np.array([x])
    >>> a = Measured(fat_tree(k=2, levels=2), one(0), one(1), one(0), one(2), one(1e6), one(1e8),
    ...              one(0.02), one(0), one(True), one("random-pairs"), ("a",), ((0, "random-pairs", 0),))
    >>> m = concat([a, a])
    >>> m.scenario.tolist(), m.sources, m.scenario_key
    ([0, 1], ('a', 'a'), ((0, 'random-pairs', 0), (1, 'random-pairs', 0)))
    """
    if len({id(p.fabric) for p in parts}) > 1 and len({p.fabric.name for p in parts}) > 1:
        raise DiagnoseError("cannot combine measurements of different fabrics")
    off_s, off_src, keys, cols = 0, 0, [], {k: [] for k in ("src", "dst", "hs", "hd", "bytes", "bandwidth",
                                                             "time", "scenario", "pingpong", "test",
                                                             "iters", "warmup", *ITER_COLUMNS)}
    for p in parts:
        for k in cols:
            v = _run_counts(p, k) if k in ("iters", "warmup") else getattr(p, k)
            cols[k].append(p._iter(v) if k in ITER_COLUMNS else v + off_s if k == "scenario" else v)
        local: dict[Any, int] = {}     # a part's own source keys (indices, or names) -> global index
        keys += [(off_src + local.setdefault(i, len(local)), t, s) for i, t, s in p.scenario_key] or \
            [(off_src, "random-pairs", int(s)) for s in range(int(p.scenario.max()) + 1)]
        off_s += max(p.n_scenarios, int(p.scenario.max()) + 1)
        off_src += max(len(p.sources), len(local), 1)
    cat = {k: np.concatenate(v) for k, v in cols.items()}
    return Measured(parts[0].fabric, cat["src"], cat["dst"], cat["hs"], cat["hd"], cat["bytes"], cat["bandwidth"],
                    cat["time"], cat["scenario"], cat["pingpong"].astype(bool), cat["test"].astype(str),
                    tuple(x for p in parts for x in (p.sources or ("input",))), tuple(keys),
                    cat["iters"].astype(np.int64), cat["warmup"].astype(np.int64),
                    *(cat[k] for k in ITER_COLUMNS))


def _run_counts(m: Measured, what: str) -> np.ndarray:
    """``m.iters`` or ``m.warmup``; where not known, fabscope-bench's defaults for each pair's test."""
    v = getattr(m, what)
    if v is not None:
        return np.asarray(v, dtype=np.int64)
    return np.array([run_iterations(str(t), None)[0 if what == "iters" else 1] for t in m.test], dtype=np.int64)


def host_resolver(fabric: Fabric, hostmap: Any = None):
    """A function: measured host name -> fabric host index, or -1 when the fabric lacks it."""
    idx = fabric.host_index

    def resolve(name: str) -> int:
        name = str(name)
        if name in idx:
            return idx[name]
        short = name.split(".")[0]
        if short in idx:
            return idx[short]
        if hostmap is not None:
            for key in (name, short):
                mapped = hostmap.lookup(0, 0, key)
                if mapped is not None:
                    mapped = str(mapped)
                    return idx.get(mapped, idx.get(mapped.split(".")[0], -1))
        return -1

    return resolve


def run_iterations(test: str, argv: Any) -> tuple[int, int]:
    """Timed and warm-up iterations of a pair test, from the run's command line (csrc/pairs.c's
    defaults where it gives none: 100 and 2, all-pairs 20 and 2).

    >>> run_iterations("random-pairs", ["fabscope-bench", "random-pairs", "--iterations", "20"])
    (20, 2)
    >>> run_iterations("all-pairs", None)
    (20, 2)
    """
    it, w = (20 if test == "all-pairs" else 100), 2
    args = [str(a) for a in argv] if isinstance(argv, list) else []
    for i, a in enumerate(args[:-1]):
        try:
            if a == "--iterations":
                it = max(int(args[i + 1]), 1)
            elif a == "--warmup":
                w = max(int(args[i + 1]), 0)
        except ValueError:
            pass
    return it, w


def _from_bench(path: str) -> list[tuple[str, dict[str, np.ndarray], str | None]]:
    """Per pair test of a fabscope-bench file: (test, columns, fabric named in the header)."""
    from fabscope.measure.parse import read_run

    run = read_run(path)
    hosts = np.array([str(h) for h in run.ranks["host"]], dtype=object)
    out = []
    for test in run.tests:
        recs = [r for r in run.of(test, "pair")]
        if test not in PAIR_TESTS or not recs:
            continue
        src = np.array([int(r["src"]) for r in recs], dtype=np.int64)
        dst = np.array([int(r["dst"]) for r in recs], dtype=np.int64)
        if max(src.max(), dst.max()) >= len(hosts):
            raise SchemaError(f"{path}: a pair names rank {int(max(src.max(), dst.max()))}, the run lists "
                              f"{len(hosts)} ranks")
        cols = {"src": src, "dst": dst, "src_host": hosts[src], "dst_host": hosts[dst],
                "bytes": np.array([float(r["bytes"]) for r in recs]),
                "bandwidth": np.array([float(r.get("bandwidth") or 0.0) for r in recs]),
                "time": np.array([float(r.get("time") or 0.0) for r in recs]),
                "scenario": np.array([int(r.get("scenario", 0)) for r in recs], dtype=np.int64)}
        it, w = run_iterations(test, run.header.get("argv"))
        cols["iters"] = np.array([int(r.get("iters") or it) for r in recs], dtype=np.int64)
        cols["warmup"] = np.full(len(recs), w, dtype=np.int64)
        for col in ITER_COLUMNS:   # per-iteration figures, where this fabscope-bench wrote them
            cols[col] = np.array([_number(r.get(col)) for r in recs])
        out.append((test, cols, run.header.get("fabric") or run.header.get("testbed")))
    return out


def _from_result(res: Result, origin: str) -> list[tuple[str, dict[str, np.ndarray], str | None]]:
    kind = res.meta.get("kind")
    if kind not in ("measure", "measured", "diagnose"):
        raise DiagnoseError(f"{origin}: a result of kind {kind!r}; compare and diagnose read measured runs "
                            "(or a diagnosis, whose pairs are read again)")
    p = res.pairs
    for col in ("src_host", "dst_host", "bandwidth"):
        if col not in p:
            raise SchemaError(f"{origin}: measured result without a {col!r} column")
    n = len(p["bandwidth"])
    test = str(res.meta.get("test") or "random-pairs")
    cols = {"src": np.asarray(p.get("src", np.arange(n)), dtype=np.int64),
            "dst": np.asarray(p.get("dst", np.arange(n)), dtype=np.int64),
            "src_host": np.asarray(p["src_host"], dtype=object), "dst_host": np.asarray(p["dst_host"], dtype=object),
            "bytes": np.asarray(p.get("bytes", np.full(n, 1e6)), dtype=float),
            "bandwidth": np.asarray(p["bandwidth"], dtype=float),
            "time": np.asarray(p.get("time", np.zeros(n)), dtype=float),
            "scenario": np.asarray(p.get("scenario", np.zeros(n)), dtype=np.int64)}
    it, w = run_iterations(test, res.meta.get("argv"))
    cols["iters"] = np.asarray(p.get("iters", np.full(n, it)), dtype=np.int64)
    cols["warmup"] = np.full(n, w, dtype=np.int64)
    for col in ITER_COLUMNS:
        cols[col] = np.array([_number(x) for x in p[col]]) if col in p else np.full(n, np.nan)
    if kind == "diagnose" and "test" in p:
        # a diagnosis keeps each pair's test (its concurrent sets are numbered across tests already)
        tests = np.asarray(p["test"]).astype(str)
        return [(str(t), {k: v[tests == t] for k, v in cols.items()}, res.meta.get("fabric"))
                for t in sorted(set(tests.tolist()))]
    return [(test, cols, res.meta.get("fabric"))]


def read_source(src: str | Result, results: dict[str, Result] | None = None
                ) -> list[tuple[str, dict[str, np.ndarray], str | None]]:
    """One measured input (a fabscope-bench JSON-lines file, a measured result JSON, or a Result).
    ``results``: where given, a result file read here is kept in it by path (a caller that looks at
    the same files again, as ``diagnose`` does for a diagnosis among its inputs, need not parse a
    result of tens of megabytes twice)."""
    if isinstance(src, Result):
        return _from_result(src, "result")
    from fabscope.textio import first_line

    path = os.fspath(src)
    # fabscope-bench's header is a short first line; a result is one JSON line of any length, read
    # whole and bounded by its size (fabscope.textio.load_json)
    first = first_line(path, "measured run", MeasureError)
    try:
        doc = json.loads(first) if first is not None else None
    except (json.JSONDecodeError, RecursionError):
        doc = None
    if isinstance(doc, dict) and doc.get("type") == "header":
        return _from_bench(path)
    res = Result.read_json(path)
    if results is not None:
        results[path] = res
    return _from_result(res, path)


def load_measured(sources: Sequence[str | Result], fabric: Fabric, hostmap: Any = None,
                  results: dict[str, Result] | None = None) -> Measured:
    """Every pair test of every source, hosts matched to ``fabric`` (see the module docstring).
    ``results``: :func:`read_source`'s.

    Raises :class:`DiagnoseError` naming the fault: no pairs, a host the fabric
    lacks, inputs measured on different fabrics.
    """
    resolve = host_resolver(fabric, hostmap)
    blocks = []
    named: dict[str, str] = {}
    names = []
    for i, s in enumerate(sources):
        origin = s if isinstance(s, str) else f"input {i + 1}"
        names.append(str(origin))
        for test, cols, fab in read_source(s, results):
            if fab:
                named.setdefault(str(fab), str(origin))
            blocks.append((i, test, cols))
    if len(named) > 1:
        (a, fa), (b, fb) = list(named.items())[:2]
        raise DiagnoseError(f"the inputs were measured on different fabrics: {fa} on {a!r}, {fb} on {b!r}")
    if not blocks:
        raise DiagnoseError(f"{', '.join(names)}: no pair measurements (tests {', '.join(PAIR_TESTS)})")
    cols_all: dict[str, list[np.ndarray]] = {k: [] for k in ("src", "dst", "hs", "hd", "bytes", "bandwidth",
                                                             "time", "scenario", "pingpong", "test", "iters",
                                                             "warmup", *ITER_COLUMNS)}
    keys: dict[tuple[int, str, int], int] = {}
    cache: dict[str, int] = {}
    for i, test, c in blocks:
        for col in ("src_host", "dst_host"):
            for h in set(c[col].tolist()):
                if h not in cache:
                    cache[h] = resolve(h)
        missing = sorted({h for h in np.r_[c["src_host"], c["dst_host"]].tolist() if cache[h] < 0})
        if missing:
            raise DiagnoseError(f"{names[i]}: fabric {fabric.name!r} has no host {missing[0]!r}"
                                + (f" ({len(missing)} measured hosts unknown)" if len(missing) > 1 else "")
                                + "; give --host-map measured-name fabric-name lines, or the fabric they ran on")
        n = len(c["src"])
        sc = [keys.setdefault((i, test, int(s)), len(keys)) for s in c["scenario"].tolist()]
        cols_all["src"].append(c["src"])
        cols_all["dst"].append(c["dst"])
        cols_all["hs"].append(np.array([cache[h] for h in c["src_host"].tolist()], dtype=np.int64))
        cols_all["hd"].append(np.array([cache[h] for h in c["dst_host"].tolist()], dtype=np.int64))
        cols_all["bytes"].append(c["bytes"])
        cols_all["bandwidth"].append(c["bandwidth"])
        cols_all["time"].append(c["time"])
        cols_all["scenario"].append(np.array(sc, dtype=np.int64))
        cols_all["pingpong"].append(np.full(n, test not in ONE_WAY_TESTS))
        cols_all["test"].append(np.full(n, test, dtype=object))
        cols_all["iters"].append(c["iters"])
        cols_all["warmup"].append(c["warmup"])
        for col in ITER_COLUMNS:
            cols_all[col].append(np.asarray(c.get(col, np.full(n, np.nan)), dtype=float))
    cat = {k: np.concatenate(v) for k, v in cols_all.items()}
    bad = np.flatnonzero(~(cat["bandwidth"] > 0))
    if len(bad):
        j = int(bad[0])
        raise DiagnoseError(f"measured pair {int(cat['src'][j])} -> {int(cat['dst'][j])} has bandwidth "
                            f"{cat['bandwidth'][j]}; every measured pair needs a positive bandwidth")
    return Measured(fabric, cat["src"], cat["dst"], cat["hs"], cat["hd"], cat["bytes"], cat["bandwidth"],
                    cat["time"], cat["scenario"], cat["pingpong"].astype(bool), cat["test"].astype(str),
                    tuple(names), tuple(sorted(keys, key=keys.get)), cat["iters"].astype(np.int64),
                    cat["warmup"].astype(np.int64), *(cat[col] for col in ITER_COLUMNS))
