"""One small layer over the databases a history lives in: SQLite, DuckDB, PostgreSQL.

A history is named by ``--db``: a file path (SQLite, the default: stdlib, no
server), ``duckdb:PATH`` (DuckDB, when the ``duckdb`` package is installed;
kept for the comparison ``bench/bench_history.py`` prints) or a
``postgresql://`` URL (psycopg 3).  Queries are written once with ``?``
placeholders; the layer turns them into ``%s`` for psycopg.  Bulk rows go
through :meth:`Database.insert_rows`: ``executemany`` on the embedded
SQLite, ``COPY`` on PostgreSQL, and on DuckDB ``COPY`` from a temporary CSV
file (its ``executemany`` goes row by row: 100,000 rows took minutes).
Every driver error is one line (:mod:`.dberrors`): a damaged file, a full disk,
a database another process keeps locked for longer than ``FABSCOPE_HISTORY_WAIT``
seconds (default 30).

>>> import os, tempfile
>>> db = connect(os.path.join(tempfile.mkdtemp(), "h.db"))
>>> db.dialect
'sqlite'
>>> with db.transaction():
...     db.execute("CREATE TABLE t (a INTEGER, b TEXT)")
...     db.insert_rows("t", ("a", "b"), [(1, "x"), (2, "y")])
>>> db.query("SELECT a, b FROM t WHERE a > ? ORDER BY a", (0,))
[(1, 'x'), (2, 'y')]
>>> db.close()
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterable, Iterator, Sequence

from fabscope.errors import FabscopeError
from fabscope.history.dberrors import lock_wait, storage_error


class HistoryError(FabscopeError):
    """A history database that cannot be opened, or input it refuses (other fabric, duplicate run)."""


def describe(url: str) -> str:
    """The database named without any password it carries.

    >>> describe("postgresql://fab:secret@db.example/fab")
    'postgresql://fab:***@db.example/fab'
    >>> describe("nightly.db")
    'nightly.db'
    """
    if "://" in url and "@" in url:
        head, _, tail = url.rpartition("@")
        scheme, _, cred = head.partition("://")
        user = cred.split(":", 1)[0]
        return f"{scheme}://{user}{':***' if ':' in cred else ''}@{tail}"
    return url


class Database:
    """A connection and its dialect; every write inside :meth:`transaction`."""

    def __init__(self, conn: Any, dialect: str, url: str, path: str | None = None) -> None:
        self.conn, self.dialect = conn, dialect
        self.url = describe(url)           # for messages: no password
        self.path = path                   # the file of an embedded database
        self._depth = 0

    @contextlib.contextmanager
    def storage(self) -> Iterator[None]:
        """A driver's error inside (damaged, full, locked, ...) becomes one :class:`HistoryError` line."""
        try:
            yield
        except HistoryError:
            raise
        except Exception as err:
            holder = self._pg_holders() if self.dialect == "postgresql" and "lock" in str(err).lower() else None
            msg = storage_error(err, self.url, self.path, holder)
            if msg is None:
                raise
            raise HistoryError(msg) from None

    def _pg_holders(self) -> str | None:
        """The other sessions at work on this PostgreSQL database (who may hold the lock); best effort."""
        try:
            self.conn.rollback()
            cur = self.conn.cursor()
            cur.execute("SELECT pid, usename, application_name FROM pg_stat_activity WHERE datname = "
                        "current_database() AND pid <> pg_backend_pid() AND state <> 'idle'")
            rows = cur.fetchall()
            cur.close()
            self.conn.rollback()
        except Exception:
            return None
        return ", ".join(f"server process {p} of {u}" + (f" ({a})" if a else "") for p, u, a in rows[:5]) or None

    # ---- statements ------------------------------------------------------------
    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self.storage():
            cur = self.conn.cursor()
            cur.execute(self._sql(sql), tuple(params))
            cur.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.storage():
            cur = self.conn.cursor()
            cur.execute(self._sql(sql), tuple(params))
            rows = [tuple(r) for r in cur.fetchall()]
            cur.close()
        return rows

    def columns(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The query's result by column (one tuple per selected column; empty tuples for no rows), without
        a tuple per row: a night of 100,000 pairs is read several times by one check."""
        with self.storage():
            cur = self.conn.cursor()
            cur.execute(self._sql(sql), tuple(params))
            n = len(cur.description)
            cols = list(zip(*cur.fetchall()))
            cur.close()
        return cols or [()] * n

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self.query(sql, params)
        return rows[0][0] if rows else None

    def insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Many rows at once (``COPY`` on PostgreSQL)."""
        with self.storage():
            self._insert_rows(table, columns, rows)

    def _insert_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        cols = ", ".join(columns)
        if self.dialect == "postgresql":
            cur = self.conn.cursor()
            with cur.copy(f"COPY {table} ({cols}) FROM STDIN") as cp:
                for row in rows:
                    cp.write_row(row)
            cur.close()
            return
        if self.dialect == "duckdb":       # its executemany goes row by row: bulk load through a CSV file
            self._duckdb_copy(table, columns, rows)
            return
        marks = ", ".join("?" * len(columns))
        cur = self.conn.cursor()
        cur.executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(rows))
        cur.close()

    def _duckdb_copy(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        import csv
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".csv", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            n = 0
            for row in rows:
                w.writerow(["\\N" if v is None else v for v in row])
                n += 1
            fh.flush()
            if n:
                self.conn.execute(f"COPY {table} ({', '.join(columns)}) FROM '{fh.name}' "
                                  "(HEADER false, NULL '\\N', QUOTE '\"', ESCAPE '\"')")

    def insert_returning_id(self, table: str, values: dict[str, Any]) -> int:
        cols = ", ".join(values)
        marks = ", ".join("?" * len(values))
        sql = f"INSERT INTO {table} ({cols}) VALUES ({marks})"
        if self.dialect == "sqlite":
            with self.storage():
                cur = self.conn.cursor()
                cur.execute(sql, tuple(values.values()))
                rid = int(cur.lastrowid)
                cur.close()
            return rid
        return int(self.query(sql + " RETURNING id", tuple(values.values()))[0][0])

    def tables(self) -> set[str]:
        if self.dialect == "sqlite":
            rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = self.query("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                              + ("'public'" if self.dialect == "postgresql" else "current_schema()"))
        return {str(r[0]) for r in rows}

    # ---- transactions ----------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator["Database"]:
        """All or nothing: an exception inside rolls every statement back."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        self._depth = 1
        try:
            with self.storage():
                if self.dialect == "sqlite":
                    self.conn.execute("BEGIN IMMEDIATE")
                elif self.dialect == "duckdb":
                    self.conn.execute("BEGIN TRANSACTION")
            try:
                yield self
            except BaseException:
                with contextlib.suppress(Exception):   # a connection lost or a file gone: the error says so
                    self.conn.rollback() if self.dialect != "duckdb" else self.conn.execute("ROLLBACK")
                raise
            else:
                with self.storage():
                    try:
                        self.conn.commit() if self.dialect != "duckdb" else self.conn.execute("COMMIT")
                    except Exception:
                        with contextlib.suppress(Exception):
                            self.conn.rollback() if self.dialect != "duckdb" else self.conn.execute("ROLLBACK")
                        raise
        finally:
            self._depth = 0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


def connect(url: str) -> Database:
    """Open (and, for a file, create) the database ``url`` names; nothing is written yet."""
    url = os.fspath(url)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg
        except ImportError:
            raise HistoryError("--db postgresql://... needs psycopg 3: pip install 'psycopg[binary]'") from None
        try:
            conn = psycopg.connect(url, autocommit=False)
        except psycopg.Error as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise HistoryError(f"cannot connect to {describe(url)}: {first}") from None
        db = Database(conn, "postgresql", url)
        with db.storage():      # a lock held longer than the wait is an error, not a hang
            conn.execute(f"SET lock_timeout = {int(lock_wait() * 1000)}")
            conn.commit()
        return db
    if url.startswith("duckdb:"):
        try:
            import duckdb
        except ImportError:
            raise HistoryError("--db duckdb:PATH needs the duckdb package: pip install duckdb") from None
        path = url[len("duckdb:"):]
        _check_folder(path)
        try:
            conn = duckdb.connect(path)
        except duckdb.Error as err:
            raise HistoryError(f"cannot open {path} as a DuckDB database: {str(err).splitlines()[0]}") from None
        return Database(conn, "duckdb", url)
    import sqlite3

    path = url[len("sqlite:"):] if url.startswith("sqlite:") else url
    _check_folder(path)
    if os.path.isdir(path):
        raise HistoryError(f"--db {path} is a folder; name a database file")
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=lock_wait())
    except sqlite3.Error as err:
        raise HistoryError(f"cannot open history {path}: {err}") from None
    db = Database(conn, "sqlite", url, path)
    try:
        with db.storage():
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except HistoryError:
        db.close()
        raise
    return db


def _check_folder(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise HistoryError(f"cannot open history {path}: no folder {folder}")
