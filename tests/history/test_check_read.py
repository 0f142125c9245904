"""How ``history check`` reads its nights: the SQLite read by column gives what the row-by-row read
gives (the same arrays, dtypes and order), and the nights of one plan are read for their ratios only
(``History.numbers_if_same``), with the same findings as when every night is read whole."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from history_nights import night

from fabscope.diagnose.synthetic import as_result, synthetic
from fabscope.fabric.generators import fat_tree
from fabscope.history import check as check_mod
from fabscope.history.check import check
from fabscope.history.store import PAIR_COLUMNS, History

COLUMN_SETS = [("src_host", "dst_host", "cls", "ratio"), ("ratio", "cls"), ("bandwidth",),
               ("bytes", "bandwidth", "ratio"), ("cls",), ("dst_host", "ratio", "src_host")]


def _row_by_row(h: History, rid: int, cols) -> dict[str, np.ndarray]:
    fast = h._pairs_sqlite
    h._pairs_sqlite = lambda *a: None
    try:
        return h.pairs(rid, cols)
    finally:
        h._pairs_sqlite = fast


def _same(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(
        a[c].dtype == b[c].dtype and np.array_equal(a[c], b[c], equal_nan=a[c].dtype.kind == "f") for c in a)


def _plan_nights(db, n: int, same: bool = True) -> None:
    """``n`` nights of one plan's pairs (or of a new draw each night), a cable at 1/2 from the last two."""
    f = fat_tree(k=4, levels=2)
    plan = night(f, 7)
    hs = np.array([f.host_index[x] for x in plan.pairs["src_host"]])
    hd = np.array([f.host_index[x] for x in plan.pairs["dst_host"]])
    with History(str(db), create=True) as h:
        h.set_fabric(f)
        for i in range(n):
            faults = {20: 0.5} if i >= n - 2 else {}
            r = (as_result(synthetic(f, hs, hd, np.asarray(plan.pairs["scenario"]), faults, 0.02, seed=100 + i,
                                     routing="dmodk")) if same else night(f, 100 + i, faults))
            h.add(r, time=f"2026-09-{i + 1:02d}T02:00Z")


def test_the_read_by_column_is_the_row_by_row_read(tmp_path):
    db = tmp_path / "h.db"
    _plan_nights(db, 4, same=False)
    with History(str(db)) as h:
        h.prune(keep_last=3)                     # rowids of a deleted run before the others
        for r in h.runs():
            for cols in COLUMN_SETS:
                got = h.pairs(r.id, cols)
                assert h._pairs_sqlite(r.id, cols) is not None
                assert _same(got, _row_by_row(h, r.id, cols)), cols
    # a NULL ratio reads as NaN; a NULL host (a damaged history) falls back to the row-by-row read
    con = sqlite3.connect(db)
    rid = con.execute("SELECT max(run_id) FROM pairs").fetchone()[0]
    con.execute("UPDATE pairs SET ratio = NULL WHERE rowid = (SELECT min(rowid) FROM pairs WHERE run_id = ?)", (rid,))
    con.commit()
    with History(str(db)) as h:
        got = h.pairs(rid, ("cls", "ratio"))
        assert np.isnan(got["ratio"][0]) and _same(got, _row_by_row(h, rid, ("cls", "ratio")))
    con.execute("UPDATE pairs SET src_host = NULL WHERE rowid = (SELECT max(rowid) FROM pairs WHERE run_id = ?)",
                (rid,))
    con.commit()
    con.close()
    with History(str(db)) as h:
        assert h._pairs_sqlite(rid, ("src_host", "ratio")) is None
        assert _same(h.pairs(rid, ("src_host", "ratio")), _row_by_row(h, rid, ("src_host", "ratio")))
        assert h.pairs(rid, ("src_host",))["src_host"][-1] == "None"       # as the row-by-row read has it


def test_same_pairs(tmp_path):
    _plan_nights(tmp_path / "plan.db", 3)
    _plan_nights(tmp_path / "draws.db", 3, same=False)
    with History(str(tmp_path / "plan.db")) as h:
        a, b, c = (r.id for r in h.runs())
        assert h.same_pairs(c, a) and h.same_pairs(a, c, n=len(h.pairs(a, ("ratio",))["ratio"]))
        assert not h.same_pairs(c, a, n=5)                       # not the number of its pairs
        h.db.execute("UPDATE pairs SET cls = 'other' WHERE rowid = (SELECT max(rowid) FROM pairs WHERE run_id = ?)",
                     (b,))
        assert not h.same_pairs(c, b) and h.same_pairs(c, a)     # one class differs
        got = h.numbers_if_same(c, a, ("ratio", "bandwidth"))
        assert _same(got, h.pairs(a, ("ratio", "bandwidth")))
        assert h.numbers_if_same(c, b, ("ratio",)) is None
    with History(str(tmp_path / "draws.db")) as h:
        a, b, c = (r.id for r in h.runs())
        assert not h.same_pairs(c, a) and not h.same_pairs(c, b)


@pytest.mark.parametrize("same", [True, False])
def test_a_check_of_one_plans_nights_is_the_check_reading_each_night_whole(tmp_path, monkeypatch, same):
    db = tmp_path / "h.db"
    _plan_nights(db, 10, same)
    calls = []
    with History(str(db)) as h:
        real = h.numbers_if_same
        monkeypatch.setattr(h, "numbers_if_same", lambda *a: calls.append(real(*a)) or calls[-1])
        fast = [check(h, r.id) for r in h.runs()[1:]]
        monkeypatch.setattr(h, "numbers_if_same", lambda *a: None)
        whole = [check(h, r.id) for r in h.runs()[1:]]
    assert [x.lines(verbose=True) for x in fast] == [x.lines(verbose=True) for x in whole]
    assert [x.to_dict() for x in fast] == [x.to_dict() for x in whole]
    assert any(x.alarms for x in fast)                  # the cable, on the night it fell
    got = [c is not None for c in calls]
    assert got and all(got) == same and any(got) == same         # a plan's nights: their ratios only
    assert set(check_mod.CHECK_COLUMNS) <= set(PAIR_COLUMNS)
