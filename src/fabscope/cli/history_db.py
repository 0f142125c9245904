"""Adding to a history from the commands that write results: ``history add``, and ``--db`` of
``measure``, ``compare`` and ``diagnose`` (a module of its own, so that those import no other command)."""

from __future__ import annotations

import os
import sys
from typing import Any


def _read(path: str, fabric: Any) -> list[tuple[Any, dict[str, Any]]]:
    """The results in one file: a fabscope.result JSON, or each pair test of a fabscope-bench run."""
    from fabscope.errors import FabscopeError
    from fabscope.result import Result
    from fabscope.textio import MAX_LINE, loads_json

    try:
        with open(path, "rb") as fh:
            first = fh.readline(MAX_LINE + 1)     # a header line is short; a longer one is no header
    except OSError as err:
        raise FabscopeError(f"cannot read {path}: {err.strerror}") from None
    try:
        # through the bounded, depth-checked reader: a first line nested 1,000 deep is no header
        # (Result.read_json then says what the file is)
        head = loads_json(first, path) if len(first) <= MAX_LINE else None
    except FabscopeError:
        head = None
    if isinstance(head, dict) and head.get("type") == "header":
        from fabscope.measure.parse import PAIR_TESTS, read_run, to_result

        run = read_run(path)
        tests = [t for t in run.tests if t in PAIR_TESTS and run.of(t, "pair")]
        if not tests:
            raise FabscopeError(f"{path}: no pair measurements to keep (tests {', '.join(PAIR_TESTS)})")
        out = []
        for t in tests:
            res = to_result(run, t, fabric)
            out.append((res, {"time": head.get("time"), "origin": f"{path} ({t})"}))
        return out
    res = Result.read_json(path)
    return [(res, {"time": res.meta.get("time") or os.path.getmtime(path), "origin": path})]


def add_files(db: str, files: list[str], fabric: Any = None, *, time: str | None = None, label: str | None = None,
              job_id: str | None = None, routing: str | None = None, diagnose: bool = True) -> list[int]:
    """Add result files and fabscope-bench runs to history ``db`` (all or none); print one line per run."""
    from fabscope.history.store import History

    job = job_id or os.environ.get("SLURM_JOB_ID") or os.environ.get("PBS_JOBID")
    with History(db, create=True) as h:
        if fabric is not None:
            h.set_fabric(fabric, write=False)
        # a later night added without --fabric is classified by the history's own fabric, so that its
        # classes are the ones its baseline nights were given (not socket/node classes)
        items = []
        for path in files:
            items += _read(path, fabric if fabric is not None else h.fabric())
        for res, info in items:
            if time:
                info["time"] = time
            info["label"] = label
            info["job_id"] = job if job_id else (res.meta.get("job_id") or job)
        for res, info in items:       # every refusal before any slow work
            h.check_result(res, info["origin"])

        def progress(i: int, n: int, origin: str) -> None:
            if n > 1 and sys.stderr.isatty():
                print(f"\r{i + 1}/{n} {origin[-50:]}", end="", file=sys.stderr)

        ids = h.add_many(items, diagnose=diagnose, routing=routing, progress=progress)
        runs = {r.id: r for r in h.runs()}
        for rid, (res, info) in zip(ids, items):
            r = runs[rid]
            n_sus = int(h.db.scalar("SELECT count(*) FROM cables WHERE run_id = ? AND suspect = 1", (rid,)) or 0)
            n_cab = int(h.db.scalar("SELECT count(*) FROM cables WHERE run_id = ?", (rid,)) or 0)
            cab = f", {n_cab} cables estimated, {n_sus} suspect" if n_cab else ""
            print(f"run {rid}: {r.time} {r.kind} {r.test or ''} {r.n_pairs} pairs{cab} <- {info['origin']}")
    return ids


def check_db(db: str | None) -> None:
    """Before any work (``--db`` of measure, compare, diagnose): an embedded history's folder exists; an
    existing history (or a server) can be reached and is of a schema this fabscope writes."""
    if not db:
        return
    from fabscope.history import schema
    from fabscope.history.db import HistoryError, connect

    if "://" not in db:
        path = db.split(":", 1)[1] if db.startswith(("duckdb:", "sqlite:")) else db
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise HistoryError(f"--db {db}: no folder {folder}")
        if os.path.isdir(path):
            raise HistoryError(f"--db {db} is a folder; name a database file")
        if not os.path.exists(path):
            return
    conn = connect(db)
    try:
        schema.check_readable(conn)
    finally:
        conn.close()


def store_result(db: str, result: Any, fabric: Any = None, origin: str = "result") -> None:
    """What ``compare``/``diagnose --db`` call after writing: add ``result`` to history ``db``."""
    import datetime as dt

    from fabscope.history.store import History

    with History(db, create=True) as h:
        if fabric is not None:
            h.set_fabric(fabric, write=False)
        when = result.meta.get("time") or dt.datetime.now(dt.timezone.utc).isoformat()
        rid = h.add(result, time=when, origin=origin,
                    job_id=os.environ.get("SLURM_JOB_ID") or os.environ.get("PBS_JOBID"))
    from fabscope.history.db import describe

    print(f"stored as run {rid} in {describe(db)}")
