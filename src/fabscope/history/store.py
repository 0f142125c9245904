"""A history: one fabric, and every run added to it, in one database.

:class:`History` opens the database (:mod:`.db`), checks or migrates its
schema (:mod:`.schema`), keeps the fabric it describes (its canonical JSON
and fingerprint, :func:`fingerprint`) and adds results: one row in ``runs``
(kind, time, fabric and fingerprint, routing, MPI, hosts, job id, test),
every pair, the per-class summary, and, for measured runs on a known
fabric, each pair's ratio to the flow model and every covered cable's
capacity as the tomography estimates it (:func:`fabscope.diagnose.tomography.diagnose`).
Runs added in one call with the same time (the tests of one fabscope-bench
file, or a night's files) are one night: one tomography of all their pairs,
so a cable one test cannot tell from a host (leaf pairs under destination
routing) is told apart by the other.

Refused with one line and nothing written: a result whose fabric (by name or
fingerprint) or hosts are not the history's; a run already in the history
(same pairs and bandwidths, :func:`digest`); a database of a newer schema.
Several results added in one call go in all together or not at all.

>>> import os, tempfile
>>> from fabscope.diagnose.synthetic import as_result, synthetic
>>> from fabscope.fabric.generators import fat_tree
>>> import numpy as np
>>> f = fat_tree(k=4, levels=2)
>>> rng = np.random.default_rng(1)
>>> hs = np.concatenate([rng.permutation(16) for _ in range(4)])
>>> m = synthetic(f, hs[0::2], hs[1::2], np.repeat(np.arange(4), 8), {}, noise=0.02, routing="dmodk")
>>> h = History(os.path.join(tempfile.mkdtemp(), "h.db"), create=True)
>>> h.set_fabric(f)
>>> rid = h.add(as_result(m), time="2026-11-01T02:00:00Z")
>>> [(r.id, r.kind, r.n_pairs) for r in h.runs()]
[(1, 'measure', 32)]
>>> h.add(as_result(m), time="2026-11-02T02:00:00Z")
Traceback (most recent call last):
...
fabscope.history.db.HistoryError: this run is already in the history as run 1 (same pairs and bandwidths); nothing written
>>> h.close()
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from fabscope.errors import FabscopeError, FabscopeWarning
from fabscope.fabric.model import Fabric
from fabscope.history import schema, sqlite_read
from fabscope.history.db import Database, HistoryError, connect, describe
from fabscope.history.newfile import HeldSignals, NewFile
from fabscope.result import Result

#: result kinds a history keeps
KINDS = ("measure", "measured", "model", "compare", "diagnose")
#: the columns History.pairs reads, all by default
PAIR_COLUMNS = ("src_host", "dst_host", "cls", "bytes", "bandwidth", "scenario", "ratio")


def fingerprint(fabric: Fabric) -> str:
    """sha256 of the fabric's canonical JSON (keys sorted, no spaces): the same cables, capacities,
    hosts and tables give the same fingerprint."""
    from fabscope.fabric.io import to_dict

    return hashlib.sha256(_canonical(to_dict(fabric)).encode()).hexdigest()


def _canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)


def digest(result: Result) -> str:
    """What makes a run the same run: its kind, classes and pair table (every column, in order)."""
    h = hashlib.sha256()
    h.update(_canonical([result.meta.get("kind"), list(result.class_labels)]).encode())
    for k in sorted(result.pairs):
        a = np.asarray(result.pairs[k])
        h.update(k.encode())
        # numbers as float64, text as text: a result read back from its JSON file is the same run
        h.update("\x00".join(a.astype(str).tolist()).encode() if a.dtype.kind in "OUS"
                 else np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()


def parse_time(value: Any) -> str:
    """An ISO time (UTC, seconds) from an ISO string or epoch seconds.

    >>> parse_time(0), parse_time("2026-11-20T02:00+01:00"), parse_time("2026-11-20")
    ('1970-01-01T00:00:00Z', '2026-11-20T01:00:00Z', '2026-11-20T00:00:00Z')
    """
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        t = dt.datetime.fromtimestamp(float(value), dt.timezone.utc)
    else:
        text = str(value).strip()
        try:
            t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise HistoryError(f"cannot read time {text[:40]!r}: write e.g. 2026-11-20T02:00Z") from None
        if t.tzinfo is None:
            t = t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Run:
    id: int
    time: str
    kind: str
    test: str | None
    label: str | None
    n_pairs: int
    n_hosts: int
    job_id: str | None
    routing: str | None
    mpi: str | None
    source: str | None


RUN_COLUMNS = "id, time, kind, test, label, n_pairs, n_hosts, job_id, routing, mpi, source"


class History:
    """A history database (see the module docstring).  ``create``: make the tables if absent."""

    def __init__(self, url: str, create: bool = False) -> None:
        url = os.fspath(url)
        self.url = url
        embedded = "://" not in url
        path = url.split(":", 1)[1] if url.startswith(("duckdb:", "sqlite:")) else url
        new_file = embedded and not os.path.exists(path)
        if new_file and not create:
            raise HistoryError(f"no history at {path} (fabscope history add --db {path} ... makes one)")
        # a new file is built under a temporary name and put in place when its first add commits
        self._new: NewFile | None = None
        # Ctrl-C and SIGTERM are held from before the temporary is made until this object keeps it: one in
        # between (the file made, its name not yet kept) would leave it behind; one that came meanwhile is
        # raised where they are let go, inside the try that removes it
        held = HeldSignals() if new_file else None
        try:
            if new_file:
                self._new = NewFile(path, "duckdb" if url.startswith("duckdb:") else "sqlite")
                held, h = None, held
                h.release()
            self.db: Database = self._connect()
            if create:
                schema.ensure(self.db)
            elif schema.check_readable(self.db) is None:
                raise HistoryError(f"{describe(url)} holds no history yet (fabscope history add makes one)")
            elif schema.version(self.db) < schema.SCHEMA_VERSION:
                raise HistoryError(f"history {describe(url)} has schema version {schema.version(self.db)}; "
                                   "'fabscope history add' or 'history migrate' brings it up to date")
        except BaseException:
            try:
                if "db" in self.__dict__:
                    self.close(failed=True)
                elif self._new is not None:
                    self._new.discard()
            finally:
                if held is not None:
                    held.release()
            raise
        self._fabric: Fabric | None = None
        self._pending: list[tuple[str, str]] = []

    def _connect(self) -> Database:
        if self._new is None:
            return connect(self.url)
        db = connect(("duckdb:" if self.url.startswith("duckdb:") else "") + self._new.tmp)
        db.url = describe(self.url)     # messages name the history, not its temporary file
        return db

    def _publish(self) -> None:
        """A new history's first commit: its file goes in place, and is used from there on."""
        if self._new is not None:
            self.db.close()
            new, self._new = self._new, None
            new.publish()
            self.db = self._connect()

    def close(self, failed: bool = False) -> None:
        """Close; a new history is put in place unless ``failed`` (then nothing of it is left)."""
        try:
            if self._new is not None and not failed:
                self._publish()
            self.db.close()
        finally:
            if self._new is not None:   # a file this call began and could not fill: leave nothing behind
                self._new.discard()
                self._new = None

    def __enter__(self) -> "History":
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        self.close(failed=kind is not None and not self.runs_count())

    def runs_count(self) -> int:
        try:
            return int(self.db.scalar("SELECT count(*) FROM runs") or 0)
        except Exception:
            return 0

    # ---- the fabric --------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        return self.db.scalar("SELECT value FROM history_meta WHERE key = ?", (key,))

    @property
    def fingerprint(self) -> str | None:
        pending = dict(self._pending).get("fabric_fingerprint")
        return pending or self._meta("fabric_fingerprint")

    def fabric(self) -> Fabric | None:
        """The history's fabric, or None when none was given."""
        if self._fabric is None:
            text = self._meta("fabric_json")
            if text is None:
                return None
            from fabscope.fabric.io import from_dict

            self._fabric = from_dict(json.loads(text), f"the fabric of history {describe(self.url)}")
        return self._fabric

    def set_fabric(self, fabric: Fabric, write: bool = True) -> None:
        """Give the history its fabric (first time), or check it is the same one (by fingerprint).

        ``write=False``: keep it in memory; the next :meth:`add_many` writes it with its runs."""
        fp = fingerprint(fabric)
        have = self.fingerprint
        if have is not None:
            if have != fp:
                raise HistoryError(f"fabric {fabric.name!r} (fingerprint {fp[:12]}) is not the history's "
                                   f"fabric {self._meta('fabric_name')!r} (fingerprint {have[:12]}); "
                                   "a changed fabric starts a new history (--db)")
            return
        from fabscope.fabric.io import to_dict

        self._pending = [("fabric_name", fabric.name), ("fabric_fingerprint", fp),
                         ("fabric_json", _canonical(to_dict(fabric)))]
        self._fabric = fabric
        if write:
            self._write_pending()

    def _write_pending(self) -> None:
        if self._pending:
            with self.db.transaction():
                self.db.insert_rows("history_meta", ("key", "value"), self._pending)
            self._pending = []

    # ---- adding runs ---------------------------------------------------------------
    def check_result(self, result: Result, origin: str = "result") -> None:
        """Refuse (one line) a result this history cannot take; nothing is written."""
        kind = result.meta.get("kind")
        if kind not in KINDS:
            raise HistoryError(f"{origin}: a result of kind {kind!r}; a history keeps {', '.join(KINDS)}")
        f = self.fabric()
        if f is None:
            return
        fp = result.meta.get("fabric_fingerprint")
        if fp and fp != self.fingerprint:
            raise HistoryError(f"{origin}: measured on fabric fingerprint {str(fp)[:12]}, the history's is "
                               f"{str(self.fingerprint)[:12]}; nothing written")
        name = result.meta.get("fabric")
        if name and str(name) != f.name:
            raise HistoryError(f"{origin}: a result of fabric {str(name)!r}, the history's fabric is {f.name!r}; "
                               "nothing written")
        for col in ("src_host", "dst_host"):
            if col in result.pairs:
                known = f.host_index
                bad = sorted({str(h) for h in np.unique(result.pairs[col].astype(str))
                              if str(h) not in known and str(h).split(".")[0] not in known})
                if bad:
                    raise HistoryError(f"{origin}: host {bad[0]!r} is not in the history's fabric {f.name!r}"
                                       + (f" ({len(bad)} unknown hosts)" if len(bad) > 1 else "")
                                       + "; nothing written")

    def find_digest(self, d: str) -> int | None:
        rid = self.db.scalar("SELECT id FROM runs WHERE digest = ?", (d,))
        return None if rid is None else int(rid)

    def add(self, result: Result, *, time: Any = None, label: str | None = None, job_id: str | None = None,
            diagnose: bool = True, origin: str = "result", routing: str | None = None) -> int:
        """Add one run; return its id.  See :meth:`add_many` for several at once."""
        return self.add_many([(result, {"time": time, "label": label, "job_id": job_id, "origin": origin})],
                             diagnose=diagnose, routing=routing)[0]

    def add_many(self, items: Sequence[tuple[Result, dict[str, Any]]], *, diagnose: bool = True,
                 routing: str | None = None, progress: Any = None) -> list[int]:
        """Add runs all together or not at all; each item is (result, {time, label, job_id, origin})."""
        prepared = []
        seen: dict[str, str] = {}
        for res, info in items:
            origin = info.get("origin") or "result"
            self.check_result(res, origin)
            d = digest(res)
            old = self.find_digest(d)
            if old is not None:
                raise HistoryError(f"{origin}: this run is already in the history as run {old} "
                                   "(same pairs and bandwidths); nothing written" if origin != "result" else
                                   f"this run is already in the history as run {old} (same pairs and "
                                   "bandwidths); nothing written")
            if d in seen:
                raise HistoryError(f"{origin}: the same run as {seen[d]}; nothing written")
            seen[d] = origin
            when = info.get("time") or res.meta.get("time") or res.meta.get("date")
            if when is None:
                raise HistoryError(f"{origin}: the result says no time; give --time")
            prepared.append((res, {**info, "routing": routing}, d, parse_time(when)))
        # runs added together at the same time are one night: one tomography of all their pairs
        joint: dict[str, list[int]] = {}
        for i, (res, _info, _d, when) in enumerate(prepared):
            if self._diagnosable(res, diagnose):
                joint.setdefault(when, []).append(i)
        diag: dict[int, tuple[np.ndarray, list[tuple]]] = {}
        for k, members in enumerate(joint.values()):   # the slow part, before anything is written
            if progress:
                progress(k, len(joint), prepared[members[0]][1].get("origin") or "result")
            diag.update(zip(members, self._diagnose([prepared[i][0] for i in members],
                                                    routing or prepared[members[0]][0].meta.get("routing"))))
        ids = []
        rows = [self._rows(res, info, d, when, diag.get(i)) for i, (res, info, d, when) in enumerate(prepared)]
        with self.db.transaction():
            self._write_pending()
            for run_row, pair_rows, class_rows, cable_rows in rows:
                rid = self.db.insert_returning_id("runs", run_row)
                self.db.insert_rows("pairs", PAIR_COLS, ((rid, *r) for r in pair_rows))
                self.db.insert_rows("classes", CLASS_COLS, ((rid, *r) for r in class_rows))
                if cable_rows:
                    self.db.insert_rows("cables", CABLE_COLS, ((rid, *r) for r in cable_rows))
                ids.append(rid)
        self._publish()
        return ids

    def _diagnosable(self, res: Result, diagnose: bool) -> bool:
        return (diagnose and self.fabric() is not None and res.meta.get("kind") in ("measure", "measured")
                and "src_host" in res.pairs)

    def _rows(self, res: Result, info: dict[str, Any], d: str, when: str,
              diag: tuple[np.ndarray, list[tuple]] | None) -> tuple[dict[str, Any], list[tuple], list[tuple], list[tuple]]:
        meta, p = res.meta, res.pairs
        n = len(p["bandwidth"])
        labels = np.array(res.class_labels + ("?",), dtype=object)
        cls_idx = np.asarray(p["cls"], dtype=np.int64)
        cls = labels[np.where((cls_idx >= 0) & (cls_idx < len(res.class_labels)), cls_idx, -1)].astype(str)
        src = np.asarray(p.get("src_host", np.full(n, "")), dtype=str)
        dst = np.asarray(p.get("dst_host", np.full(n, "")), dtype=str)
        bw = np.asarray(p["bandwidth"], dtype=float)
        nbytes = np.asarray(p.get("bytes", np.zeros(n)), dtype=float)
        scen = np.asarray(p.get("scenario", np.zeros(n)), dtype=np.int64)
        ratio = np.asarray(p["ratio"], dtype=float) if "ratio" in p else np.full(n, np.nan)
        cables: list[tuple] = []
        f = self.fabric()
        if meta.get("kind") == "diagnose" and res.links is not None and "estimate" in res.links:
            cables = _cable_rows(f, res.links, res.extra.get("suspects") or [])
        elif diag is not None:
            ratio, cables = diag
        mpi = meta.get("mpi")
        mpi_text = (f"{mpi.get('name')} {mpi.get('version')}" if isinstance(mpi, dict) else
                    (str(mpi) if mpi else meta.get("mpi_library")))
        hosts = sorted(set(src.tolist()) | set(dst.tolist()) - {""})
        run_row = {"digest": d, "kind": str(meta.get("kind")), "time": when,
                   "label": info.get("label") or meta.get("label"),
                   "fabric": meta.get("fabric") or (f.name if f is not None else None),
                   "fingerprint": meta.get("fabric_fingerprint") or self.fingerprint,
                   "routing": meta.get("routing") or info.get("routing"), "mpi": mpi_text,
                   "test": meta.get("test") or meta.get("pattern") or ",".join(meta.get("tests") or []) or None,
                   "job_id": info.get("job_id") or meta.get("job_id"),
                   "hosts": json.dumps(hosts), "n_hosts": len(hosts), "n_pairs": n,
                   "source": meta.get("source") if isinstance(meta.get("source"), str) else info.get("origin"),
                   "meta": _canonical({k: v for k, v in meta.items() if k not in ("fabric_params",)})}
        ratio_db = np.where(np.isfinite(ratio), ratio, np.nan)
        pair_rows = list(zip(src.tolist(), dst.tolist(), cls.tolist(), nbytes.tolist(), bw.tolist(),
                             scen.tolist(), [None if np.isnan(x) else x for x in ratio_db.tolist()]))
        class_rows = []
        for c in ["Overall"] + sorted(set(cls.tolist()), key=list(labels).index):
            sel = np.ones(n, bool) if c == "Overall" else cls == c
            v = bw[sel]
            if not len(v):
                continue
            r = ratio_db[sel]
            r = r[np.isfinite(r)]
            class_rows.append((c, int(len(v)), float(v.max()), float(v.mean()), float(v.min()),
                               float(np.median(v)), float(np.median(r)) if len(r) else None))
        return run_row, pair_rows, class_rows, cables

    def _diagnose(self, results: list[Result], routing: str | None) -> list[tuple[np.ndarray, list[tuple]]]:
        """Per result: each pair's ratio to the model, and the cables' estimates, from one tomography of
        all ``results`` together (their rounds stay apart: each is modeled alone)."""
        from fabscope.diagnose.measured import load_measured
        from fabscope.diagnose.tomography import diagnose

        f = self.fabric()
        sizes = [len(r.pairs["bandwidth"]) for r in results]
        ratio = np.full(sum(sizes), np.nan)
        try:
            m = load_measured(list(results), f)
            d = diagnose(m, routing)
        except FabscopeError as err:
            warnings.warn(f"no cable estimates for this run: {err}", FabscopeWarning, stacklevel=2)
            return [(np.full(n, np.nan), []) for n in sizes]
        dr = d.to_result()
        ratio[np.flatnonzero(m.inter)] = dr.pairs["ratio"]
        cables = _cable_rows(f, dr.links, dr.extra.get("suspects") or [])
        cut = np.cumsum([0] + sizes)
        return [(ratio[a:b], cables) for a, b in zip(cut[:-1], cut[1:])]

    # ---- reading -------------------------------------------------------------------
    def runs(self, since: str | None = None, until: str | None = None) -> list[Run]:
        sql = f"SELECT {RUN_COLUMNS} FROM runs"
        cond, params = [], []
        if since:
            cond.append("time >= ?")
            params.append(parse_time(since))
        if until:
            cond.append("time <= ?")
            params.append(parse_time(until))
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        return [Run(int(r[0]), *r[1:5], int(r[5] or 0), int(r[6] or 0), *r[7:]) for r in
                self.db.query(sql + " ORDER BY time, id", params)]

    def run(self, rid: int) -> Run:
        for r in self.runs():
            if r.id == rid:
                return r
        raise HistoryError(f"no run {rid} in history {describe(self.url)}")

    def pairs(self, rid: int, columns: Sequence[str] = PAIR_COLUMNS) -> dict[str, np.ndarray]:
        """Run ``rid``'s pairs, the named ``columns`` (of :data:`PAIR_COLUMNS`) only: a check reads a
        night of 100,000 pairs several times over."""
        bad = sorted(set(columns) - set(PAIR_COLUMNS))
        if bad:
            raise ValueError(f"no pair column {bad[0]!r}: choose among {', '.join(PAIR_COLUMNS)}")
        if self.db.dialect == "sqlite" and "scenario" not in columns:
            fast = self._pairs_sqlite(rid, columns)
            if fast is not None:
                return fast
        cols = dict(zip(columns, self.db.columns(f"SELECT {', '.join(columns)} FROM pairs WHERE run_id = ?",
                                                 (rid,))))
        text = lambda v: np.array(v, dtype=object).astype(str)  # noqa: E731
        conv = {"src_host": text, "dst_host": text, "cls": text,
                "bytes": lambda v: np.array(v, dtype=float), "bandwidth": lambda v: np.array(v, dtype=float),
                "scenario": lambda v: np.array([-1 if x is None else x for x in v], dtype=np.int64),
                "ratio": lambda v: np.array(v, dtype=float)}       # None reads as NaN
        return {c: conv[c](cols[c]) for c in columns}

    def same_pairs(self, rid: int, other: int, n: int | None = None) -> bool:
        """Whether run ``other`` holds the same pairs as run ``rid`` (hosts and class, row by row, in the
        order :meth:`pairs` reads them): the nights of one plan do.  :meth:`numbers_if_same` answers it.

        >>> import tempfile, os
        >>> from fabscope.fabric.generators import fat_tree
        >>> from fabscope.diagnose.synthetic import as_result, synthetic
        >>> f = fat_tree(k=4, levels=2)
        >>> pairs = (np.arange(8), np.arange(8, 16), np.zeros(8, int))
        >>> night = lambda seed: as_result(synthetic(f, *pairs, {}, 0.02, seed=seed))
        >>> with History(os.path.join(tempfile.mkdtemp(), "h.db"), create=True) as h:
        ...     h.set_fabric(f)
        ...     a, b = h.add(night(1), time="2026-01-01"), h.add(night(2), time="2026-01-02")
        ...     h.same_pairs(a, b), h.same_pairs(a, a), h.numbers_if_same(a, b, ("ratio",))["ratio"].shape
        (True, True, (8,))
        """
        return self.numbers_if_same(rid, other, (), n) is not None

    def numbers_if_same(self, rid: int, other: int, columns: Sequence[str] = ("ratio",),
                        n: int | None = None) -> dict[str, np.ndarray] | None:
        """Run ``other``'s number ``columns`` where it holds the same pairs as run ``rid``, place by place;
        else None (:func:`fabscope.history.sqlite_read.numbers_if_same`; None on PostgreSQL)."""
        bad = sorted(set(columns) - {"bytes", "bandwidth", "ratio"})
        if bad:
            raise ValueError(f"no number column {bad[0]!r}: choose among bytes, bandwidth, ratio")
        if self.db.dialect != "sqlite":
            return None
        return sqlite_read.numbers_if_same(self.db, rid, other, columns, n)

    def _pairs_sqlite(self, rid: int, columns: Sequence[str]) -> dict[str, np.ndarray] | None:
        """:meth:`pairs` on SQLite by column (:func:`fabscope.history.sqlite_read.pairs_by_column`)."""
        return sqlite_read.pairs_by_column(self.db, rid, columns)

    def prune(self, keep_last: int | None = None, before: str | None = None) -> list[int]:
        """Delete runs older than ``before`` and/or all but the ``keep_last`` newest; return their ids."""
        runs = self.runs()
        drop = set()
        if before:
            t = parse_time(before)
            drop |= {r.id for r in runs if r.time < t}
        if keep_last is not None:
            drop |= {r.id for r in runs[:max(len(runs) - keep_last, 0)]}
        ids = sorted(drop)
        with self.db.transaction():
            for table, col in (("pairs", "run_id"), ("classes", "run_id"), ("cables", "run_id"), ("runs", "id")):
                for i in range(0, len(ids), 500):
                    chunk = ids[i:i + 500]
                    self.db.execute(f"DELETE FROM {table} WHERE {col} IN ({', '.join('?' * len(chunk))})", chunk)
        return ids


PAIR_COLS = ("run_id", "src_host", "dst_host", "cls", "bytes", "bandwidth", "scenario", "ratio")
CLASS_COLS = ("run_id", "cls", "n", "bw_max", "bw_avg", "bw_min", "bw_median", "ratio_median")
CABLE_COLS = ("run_id", "cable", "name", "host", "capacity", "estimate", "pairs", "suspect")


def _cable_rows(f: Fabric | None, links: Any, suspects: list[dict[str, Any]]) -> list[tuple]:
    from fabscope.diagnose.tomography import cable_host, cable_name

    sus = {str(s.get("cable")) for s in suspects}
    out = []
    for c, cap, est, n in zip(np.asarray(links["cable"]).tolist(), np.asarray(links["capacity"]).tolist(),
                              np.asarray(links["estimate"]).tolist(), np.asarray(links["pairs"]).tolist()):
        name = cable_name(f, int(c)) if f is not None else f"cable {int(c)}"
        host = cable_host(f, int(c)) if f is not None else None
        out.append((int(c), name, host, float(cap), float(est), int(n), int(name in sus)))
    return out
