"""Reading a night of 100,000 pairs from SQLite fast: by column, and against another night of one plan.

A check reads several nights of 100,000 pairs.  Row by row, SQLite hands
Python a tuple per row; here the text columns come as one string and the
numbers as one flat stream, and a night with the same pairs as tonight (the
nights of one plan) is read for its numbers only, through a join that says
whether the pairs are the same.  Both answer None where they cannot say, and
the caller reads row by row (:meth:`fabscope.history.store.History.pairs`).

>>> import os, tempfile
>>> from fabscope.history.db import connect
>>> db = connect(os.path.join(tempfile.mkdtemp(), "h.db"))
>>> _ = db.conn.execute("CREATE TABLE pairs (run_id, src_host, dst_host, cls, bytes, bandwidth, ratio)")
>>> rows = [(r, "a", h, "leaf", 1e6, 1e9, x) for r, x in ((1, 0.9), (2, 0.8)) for h in ("b", "c")]
>>> _ = db.conn.executemany("INSERT INTO pairs VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
>>> got = pairs_by_column(db, 1, ("dst_host", "ratio"))
>>> got["dst_host"].tolist(), got["ratio"].tolist()
(['b', 'c'], [0.9, 0.9])
>>> numbers_if_same(db, 1, 2, ("ratio",))["ratio"].tolist()
[0.8, 0.8]
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from fabscope.history.db import Database


def numbers_if_same(db: Database, rid: int, other: int, columns: Sequence[str],
                    n: int | None = None) -> dict[str, np.ndarray] | None:
    """Run ``other``'s number ``columns`` (of bytes, bandwidth, ratio; NULL as NaN) where it holds the
    same pairs as run ``rid`` (hosts and class, place by place), else None.  Where each run's rows are
    one block of rowids, the join of the two blocks place by place yields ``other``'s numbers where
    the pairs match: all n of them when they are the same pairs.  None where the places do not say.
    ``n``: the number of ``rid``'s pairs, when the caller has it."""
    first, last = "SELECT min(rowid) FROM pairs WHERE run_id = ?", "SELECT max(rowid) FROM pairs WHERE run_id = ?"
    lo, hi, lo2, hi2 = (db.scalar(q, (r,)) for r in (rid, other) for q in (first, last))
    if lo is None or lo2 is None or hi - lo != hi2 - lo2:
        return None
    if n is None:
        n = db.scalar("SELECT count(*) FROM pairs WHERE run_id = ?", (rid,))
    if n != hi - lo + 1:            # rows of other runs among its own: the places do not say
        return None
    # the n rows of ``rid``, each with its equal at the same place among the n places of ``other``'s
    sel = ", ".join(f"coalesce(b.{c}, 'nan')" for c in columns) or "1"
    with db.storage():
        cur = db.conn.execute(
            f"SELECT {sel} FROM pairs a, pairs b WHERE a.run_id = ? AND b.rowid = a.rowid + ? AND b.run_id = ? "
            "AND a.src_host = b.src_host AND a.dst_host = b.dst_host AND a.cls IS b.cls ORDER BY a.rowid",
            (rid, lo2 - lo, other))
        flat = np.fromiter(itertools.chain.from_iterable(cur), float)
    k = max(len(columns), 1)
    if len(flat) != n * k:
        return None
    flat = flat.reshape(n, k)
    return {c: np.ascontiguousarray(flat[:, j]) for j, c in enumerate(columns)}


def pairs_by_column(db: Database, rid: int, columns: Sequence[str]) -> dict[str, np.ndarray] | None:
    """Run ``rid``'s pair ``columns`` without a Python tuple per row for the text columns: each comes as
    one string (``group_concat``, split at the tabs and line breaks no name holds), the numbers as one
    flat iterator (NULL as NaN).  Both read the run's rows through its index, in rowid order (the
    order of the row-by-row read; ``tests/history/test_check_read.py``).  None (read them row by row)
    where a text is NULL or holds a line break: a damaged history, which the row-by-row read reports."""
    text = [c for c in columns if c in ("src_host", "dst_host", "cls")]
    nums = [c for c in columns if c not in text]
    out: dict[str, np.ndarray] = {}
    with db.storage():
        if text:
            # one string: a row's texts joined by tabs, the rows by line breaks (no name holds either);
            # a row with a NULL is left out by group_concat, which the count shows
            n, joined = db.conn.execute(
                f"SELECT count(*), group_concat({' || char(9) || '.join(text)}, char(10)) FROM pairs "
                "WHERE run_id = ?", (rid,)).fetchone()
            parts = joined.replace("\t", "\n").split("\n") if joined is not None else []
            if len(parts) != n * len(text):
                return None
            for k, c in enumerate(text):
                out[c] = np.array(parts[k::len(text)], dtype=str)
        if nums:
            sel = ", ".join(f"coalesce({c}, 'nan')" for c in nums)
            cur = db.conn.execute(f"SELECT {sel} FROM pairs WHERE run_id = ? ORDER BY rowid", (rid,))
            flat = np.fromiter(itertools.chain.from_iterable(cur), float).reshape(-1, len(nums))
            for k, c in enumerate(nums):
                out[c] = np.ascontiguousarray(flat[:, k])
    if text and nums and len(out[nums[0]]) != len(out[text[0]]):
        return None
    return {c: out[c] for c in columns}
