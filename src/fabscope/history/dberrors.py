"""What a database driver's error means for a history, in one line naming it and what to do.

SQLite, PostgreSQL (psycopg) and DuckDB raise their own errors; :func:`storage_error` turns each
into the one line of a :class:`~fabscope.history.db.HistoryError`, of one of four kinds:

* damaged: a malformed file, text that is not UTF-8, a table missing: restore it from a backup
  (or migrate it, when an older fabscope wrote it);
* full: the disk (or the server's) is full: nothing was added (the transaction rolled back);
* locked: another process writes it and did not finish within :func:`lock_wait` seconds
  (``FABSCOPE_HISTORY_WAIT``, default 30): the processes holding it are named;
* anything else: the driver's first line.

>>> import sqlite3
>>> print(storage_error(sqlite3.DatabaseError("database disk image is malformed"), "h.db"))
history h.db is damaged (database disk image is malformed): restore it from a backup, or start a new one with another --db
>>> print(storage_error(sqlite3.OperationalError("no such table: pairs"), "h.db"))
history h.db is damaged (no table pairs): restore it from a backup, or start a new one with another --db
>>> storage_error(ValueError("x"), "h.db") is None
True
"""

from __future__ import annotations

import os
import re

#: how long a history waits for another process's write, unless FABSCOPE_HISTORY_WAIT says otherwise
DEFAULT_WAIT = 30.0
_DAMAGED = ("malformed", "could not decode", "not a database", "no such table", "no such column", "corrupt", "database disk image",
            "file is encrypted", "unsupported file format", "undefined_table", "undefined_column")


def lock_wait() -> float:
    """Seconds to wait for a locked history: ``FABSCOPE_HISTORY_WAIT`` (0 or more), else 30.

    >>> os.environ["FABSCOPE_HISTORY_WAIT"] = "2.5"; lock_wait()
    2.5
    >>> del os.environ["FABSCOPE_HISTORY_WAIT"]; lock_wait()
    30.0
    """
    text = os.environ.get("FABSCOPE_HISTORY_WAIT", "")
    try:
        v = float(text)
    except ValueError:
        return DEFAULT_WAIT
    return v if 0 <= v < 1e6 else DEFAULT_WAIT


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:200] if text else type(err).__name__


def holders(path: str) -> list[str]:
    """``pid (command)`` of the other processes that have ``path`` open (Linux /proc; best effort)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    found = []
    me = os.getpid()
    for pid in filter(str.isdecimal, os.listdir("/proc")):
        if int(pid) == me:
            continue
        fds = f"/proc/{pid}/fd"
        try:
            for fd in os.listdir(fds):
                try:
                    s = os.stat(os.path.join(fds, fd))
                except OSError:
                    continue
                if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino):
                    try:
                        with open(f"/proc/{pid}/comm") as fh:
                            comm = fh.read().strip()
                    except OSError:
                        comm = "?"
                    found.append(f"{pid} ({comm})")
                    break
        except OSError:       # another user's process, or gone meanwhile
            continue
    return found


def storage_error(err: BaseException, name: str, path: str | None = None,
                  holder: str | None = None) -> str | None:
    """The one line for a driver's ``err`` on history ``name`` (a file ``path`` for SQLite), or None
    when ``err`` is no storage error; ``holder`` names who holds a lock, where the caller knows."""
    kind = type(err).__module__.split(".")[0]
    if isinstance(err, UnicodeDecodeError):
        return (f"history {name} is damaged (text that is not UTF-8): restore it from a backup, "
                "or start a new one with another --db")
    if kind not in ("sqlite3", "psycopg", "duckdb", "_duckdb"):
        return None
    text = _first_line(err)
    low = text.lower()
    state = getattr(err, "sqlstate", None) or ""
    code = getattr(err, "sqlite_errorcode", None)
    if code == 13 or state.startswith("53") or "disk is full" in low or "no space left" in low \
            or "database or disk is full" in low:
        where = f" (in {os.path.dirname(os.path.abspath(path))})" if path else ""
        return (f"history {name}: the disk is full{where}; nothing was added: free some space and "
                "run it again")
    if code in (5, 6) or state == "55P03" or "database is locked" in low or "lock timeout" in low \
            or "could not obtain lock" in low or "database table is locked" in low:
        who = holder if holder is not None else (", ".join(holders(path)) if path else "")
        return (f"history {name} is locked by another process{f' ({who})' if who else ''} "
                f"(waited {lock_wait():g} s): run again when it has finished, or set "
                "FABSCOPE_HISTORY_WAIT to wait longer")
    if state == "42P01" or state == "42703" or state.startswith("XX") or any(w in low for w in _DAMAGED) \
            or code in (11, 26):
        m = re.search(r'no such table: (\w+)|relation "(\w+)" does not exist', text)
        what = f"no table {m.group(1) or m.group(2)}" if m else text
        return (f"history {name} is damaged ({what}): restore it from a backup, or start a new one "
                "with another --db")
    if code == 8 or "readonly" in low or "read-only" in low:
        return f"history {name} cannot be written ({text}): give a --db you may write"
    if state.startswith("08") or ("connection" in low and kind == "psycopg"):
        return f"history {name}: the connection to the server was lost ({text}); run it again"
    return f"history {name}: {text}"
