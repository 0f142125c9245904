"""The history on SQLite and on a real PostgreSQL server: the same tests on both (conftest.db_url)."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest
from history_nights import night

from fabscope.cli import main
from fabscope.fabric.generators import fat_tree
from fabscope.history import schema
from fabscope.history.check import check
from fabscope.history.db import HistoryError, connect
from fabscope.history.series import became_slow, cable_series, find_cable
from fabscope.history.store import History, fingerprint

BAD_CABLE = 20   # a leaf-spine cable of fat_tree(k=4, levels=2)


def _fill(db_url, f, nights=10, bad_from=7, slow_host_night=None):
    with History(db_url, create=True) as h:
        h.set_fabric(f)
        for n in range(nights):
            faults = {BAD_CABLE: 0.5} if n >= bad_from else {}
            if n == slow_host_night:
                faults[3] = 0.5           # host h0003's own cable (cable 3)
            h.add(night(f, n, faults), time=f"2026-11-{n + 1:02d}T02:00Z")


def _snapshot(db_url):
    """Everything a database holds, to show that nothing was written."""
    db = connect(db_url)
    try:
        out = {}
        for t in sorted(db.tables()):
            out[t] = sorted(map(repr, db.query(f"SELECT * FROM {t}")))
        return out
    finally:
        db.close()


def test_add_list_show_round_trip(db_url, small_fabric, capsys):
    _fill(db_url, small_fabric, nights=3, bad_from=99)
    with History(db_url) as h:
        runs = h.runs()
        assert [r.time for r in runs] == [f"2026-11-0{i}T02:00:00Z" for i in (1, 2, 3)]
        assert [r.n_pairs for r in runs] == [96, 96, 96]
        p = h.pairs(runs[0].id)
        res = night(small_fabric, 0)
        assert np.allclose(np.sort(p["bandwidth"]), np.sort(res.pairs["bandwidth"]))
        assert np.nanmedian(p["ratio"]) == pytest.approx(1.0, abs=0.02)   # synthetic = model x noise
        assert h.fingerprint == fingerprint(small_fabric)
        assert h.fabric().n_links == small_fabric.n_links
    assert main(["history", "list", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "3 runs of fabric" in out and "random-pairs" in out
    label = small_fabric.class_labels[-1]
    assert main(["history", "show", "--db", db_url, "--class", label]) == 0
    assert len([ln for ln in capsys.readouterr().out.splitlines() if "2026-11-0" in ln]) == 3


def test_check_flags_the_night_a_cable_degrades_and_not_after(db_url, small_fabric):
    _fill(db_url, small_fabric, nights=10, bad_from=7)
    with History(db_url) as h:
        runs = h.runs()
        alarms = {r.id: [(a.what, a.cable) for a in check(h, r.id).alarms] for r in runs[1:]}
        bad = runs[7].id
        name = find_cable(h, str(BAD_CABLE))[1]
        assert alarms[bad] == [("cable", name)]
        assert all(not v for k, v in alarms.items() if k != bad), alarms
        later = check(h, runs[9].id)
        slow = [f for f in later.findings if f.cable == name]
        assert slow and slow[0].first_run == bad and not slow[0].alarm
        assert became_slow(cable_series(h, BAD_CABLE))[0] == bad


def test_check_names_a_host_slow_one_night(db_url, small_fabric, capsys):
    _fill(db_url, small_fabric, nights=9, bad_from=99, slow_host_night=7)
    with History(db_url) as h:
        runs = h.runs()
        rep = check(h, runs[7].id)
        assert [(a.what, a.name) for a in rep.alarms] == [("host", "h0003")]
        assert not check(h, runs[8].id).alarms
    # the command: exit 3 and the suspect named, on the night; 0 the night after
    assert main(["history", "check", "--db", db_url, "--run", str(runs[7].id)]) == 3
    assert "host h0003" in capsys.readouterr().out.splitlines()[-1]
    assert main(["history", "check", "--db", db_url]) == 0
    assert main(["history", "show", "--db", db_url, "--cable", "h0003"]) == 0
    out = capsys.readouterr().out
    assert "not slow in the last run" in out


def test_noise_and_jitter_are_no_alarm(db_url, small_fabric):
    """Nights with 5% noise and a few pairs jittered to a third: no alarm on any."""
    with History(db_url, create=True) as h:
        h.set_fabric(small_fabric)
        for n in range(8):
            res = night(small_fabric, 100 + n, noise=0.05)
            rng = np.random.default_rng(n)
            j = rng.choice(len(res.pairs["bandwidth"]), 3, replace=False)
            res.pairs["bandwidth"][j] *= rng.uniform(0.3, 0.8, 3)
            h.add(res, time=f"2026-10-{n + 1:02d}T02:00Z")
        assert all(not check(h, r.id).alarms for r in h.runs()[2:])


def test_prune(db_url, small_fabric, capsys):
    _fill(db_url, small_fabric, nights=4, bad_from=99)
    assert main(["history", "prune", "--db", db_url, "--keep-last", "2"]) == 0
    with History(db_url) as h:
        left = h.runs()
        assert [r.time[:10] for r in left] == ["2026-11-03", "2026-11-04"]
        assert h.db.scalar("SELECT count(DISTINCT run_id) FROM pairs") == 2
        assert h.db.scalar("SELECT count(DISTINCT run_id) FROM cables") == 2
    assert main(["history", "prune", "--db", db_url, "--before", "2026-11-04"]) == 0
    with History(db_url) as h:
        assert len(h.runs()) == 1


# ---- refusals: one line, nothing written ------------------------------------------------
def test_duplicate_run_refused(db_url, small_fabric, tmp_path, capsys):
    _fill(db_url, small_fabric, nights=2, bad_from=99)
    path = tmp_path / "night0.json"
    night(small_fabric, 0).write_json(path)
    other = tmp_path / "night5.json"
    night(small_fabric, 5).write_json(other)
    before = _snapshot(db_url)
    # a new run and a duplicate in one call: neither is added
    assert main(["history", "add", "--db", db_url, str(other), str(path), "--time", "2026-11-09"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already in the history as run 1" in err[0] and "nothing written" in err[0]
    assert _snapshot(db_url) == before


def test_other_fabric_refused(db_url, small_fabric, tmp_path, capsys):
    _fill(db_url, small_fabric, nights=1, bad_from=99)
    before = _snapshot(db_url)
    other = fat_tree(k=4, levels=2, capacity=1e9) if "capacity" in fat_tree.__code__.co_varnames else \
        fat_tree(k=6, levels=2)
    path = tmp_path / "other.json"
    night(other, 1).write_json(path)
    other_json = tmp_path / "other-fabric.json"
    from fabscope.fabric.io import write_json
    write_json(other, other_json)
    # the result names a host the history's fabric does not have, or a fabric of another fingerprint
    assert main(["history", "add", "--db", db_url, str(path), "--fabric", str(other_json)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not the history's fabric" in err[0]
    assert _snapshot(db_url) == before
    res = night(small_fabric, 1)
    res.meta["fabric"] = "somewhere-else"
    res.write_json(path)
    assert main(["history", "add", "--db", db_url, str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'somewhere-else'" in err[0] and "nothing written" in err[0]
    assert _snapshot(db_url) == before


def test_unknown_host_refused(db_url, small_fabric, tmp_path, capsys):
    _fill(db_url, small_fabric, nights=1, bad_from=99)
    before = _snapshot(db_url)
    res = night(small_fabric, 1)
    res.pairs["src_host"] = res.pairs["src_host"].astype(object)
    res.pairs["src_host"][0] = "stranger01"
    res.meta.pop("fabric")
    path = tmp_path / "x.json"
    res.write_json(path)
    assert main(["history", "add", "--db", db_url, str(path)]) == 1
    assert "host 'stranger01' is not in the history's fabric" in capsys.readouterr().err
    assert _snapshot(db_url) == before


def test_newer_schema_refused(db_url, small_fabric, tmp_path, capsys):
    _fill(db_url, small_fabric, nights=1, bad_from=99)
    db = connect(db_url)
    with db.transaction():
        db.execute("UPDATE history_meta SET value = ? WHERE key = 'schema_version'", (str(schema.SCHEMA_VERSION + 1),))
    db.close()
    before = _snapshot(db_url)
    file_bytes = _file_hash(db_url)
    path = tmp_path / "n.json"
    night(small_fabric, 3).write_json(path)
    for argv in (["history", "add", "--db", db_url, str(path)], ["history", "list", "--db", db_url],
                 ["history", "check", "--db", db_url]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"schema version {schema.SCHEMA_VERSION + 1}, newer than" in err[0], err
    assert _snapshot(db_url) == before
    assert _file_hash(db_url) == file_bytes


def _file_hash(db_url):
    if "://" in db_url:
        return None
    return hashlib.sha256(open(db_url, "rb").read()).hexdigest()


def test_migration_from_version_1(db_url, small_fabric):
    """A database made with version 1's tables, with a run in it, migrates and keeps its run."""
    db = connect(db_url)
    schema.create(db, at=1)
    with db.transaction():
        rid = db.insert_returning_id("runs", {"digest": "d1", "kind": "measure", "time": "2026-10-01T02:00:00Z",
                                              "test": "random-pairs", "n_pairs": 1, "n_hosts": 2})
        db.insert_rows("pairs", ("run_id", "src_host", "dst_host", "cls", "bytes", "bandwidth"),
                       [(rid, "h0000", "h0005", "x", 1e6, 2.5e9)])
    db.close()
    with pytest.raises(HistoryError, match="schema version 1;"):
        History(db_url)                       # reading does not migrate behind one's back
    assert main(["history", "migrate", "--db", db_url]) == 0
    with History(db_url) as h:
        assert schema.version(h.db) == schema.SCHEMA_VERSION
        p = h.pairs(rid)
        assert p["bandwidth"].tolist() == [2.5e9] and np.isnan(p["ratio"]).all()
        h.set_fabric(small_fabric)
        h.add(night(small_fabric, 0), time="2026-10-02")
        assert [r.id for r in h.runs()][0] == rid and len(h.runs()) == 2


def test_missing_history_is_one_line(tmp_path, capsys):
    path = tmp_path / "none.db"
    assert main(["history", "list", "--db", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no history at" in err[0]
    assert not path.exists()


def test_failed_first_add_leaves_no_file(tmp_path, capsys):
    path = tmp_path / "new.db"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "fabscope.result", "version": 1, "meta": {"kind": "mapping"},
                               "class_labels": [], "pairs": {"cls": [], "bandwidth": []}}))
    assert main(["history", "add", "--db", str(path), str(bad), "--time", "2026-11-01"]) == 1
    assert "a history keeps" in capsys.readouterr().err
    assert not os.path.exists(path)


# ---- --db on the commands that write results -------------------------------------------------
def test_diagnose_and_compare_store_with_db(db_url, small_fabric, tmp_path, capsys):
    from fabscope.fabric.io import write_json

    fab = tmp_path / "fabric.json"
    write_json(small_fabric, fab)
    meas = tmp_path / "night.json"
    night(small_fabric, 3, {BAD_CABLE: 0.4}).write_json(meas)
    assert main(["diagnose", str(meas), "--fabric", str(fab), "--routing", "dmodk", "--db", db_url]) == 0
    assert "stored as run 1" in capsys.readouterr().out
    assert main(["compare", str(meas), "--fabric", str(fab), "--routing", "dmodk", "--db", db_url]) == 0
    assert "stored as run 2" in capsys.readouterr().out
    with History(db_url) as h:
        assert [r.kind for r in h.runs()] == ["diagnose", "compare"]
        rows = h.db.query("SELECT cable, estimate / capacity, suspect FROM cables WHERE run_id = 1 AND suspect = 1")
        assert [(c, round(x, 1)) for c, x, _ in rows] == [(BAD_CABLE, 0.4)]
        assert np.isfinite(h.pairs(2)["ratio"]).all()
    # the same diagnosis again is the same run: refused, one line
    assert main(["diagnose", str(meas), "--fabric", str(fab), "--routing", "dmodk", "--db", db_url]) == 1
    assert "already in the history" in capsys.readouterr().err


@pytest.mark.mpi
def test_measure_stores_with_db(tmp_path, capsys):
    from fabscope.errors import MeasureError
    from fabscope.measure.mpi import find_mpi

    try:
        find_mpi()
    except MeasureError as err:
        pytest.skip(f"no MPI: {err}")
    db = tmp_path / "h.db"
    out = tmp_path / "rp.jsonl"
    assert main(["measure", "--np", "2", "--db", str(db), "--out", str(out), "random-pairs", "--size", "4096",
                 "--iterations", "5", "--rounds", "2"]) == 0
    assert "random-pairs 2 pairs" in capsys.readouterr().out
    with History(str(db)) as h:
        (r,) = h.runs()
        assert r.kind == "measure" and r.test == "random-pairs" and r.n_pairs == 2
        assert (h.pairs(r.id)["bandwidth"] > 0).all()
    # the refusal comes before the job runs: a folder that does not exist
    assert main(["measure", "--np", "2", "--db", str(tmp_path / "no" / "h.db"), "random-pairs"]) == 1
    assert "no folder" in capsys.readouterr().err


def test_without_a_fabric_hosts_are_tested_on_their_pairs(db_url, small_fabric, capsys):
    """No fabric given: no model ratios, no tomography; a slow host is found by the pairs that touch it."""
    with History(db_url, create=True) as h:
        for n in range(8):
            res = night(small_fabric, n, {3: 0.5} if n == 7 else {})
            res.meta.pop("fabric")
            h.add(res, time=f"2026-11-{n + 1:02d}T02:00Z")
        assert h.fabric() is None
        rep = check(h)
        assert rep.values == "bandwidth"
        assert [(a.what, a.name) for a in rep.alarms] == [("host", "h0003")]
        assert not check(h, h.runs()[6].id).alarms
        p = h.pairs(h.runs()[0].id)
        a, b = str(p["src_host"][0]), str(p["dst_host"][0])
    assert main(["history", "show", "--db", db_url, "--pair", b, a]) == 0       # either way round
    assert sum("2026-11-01" in ln for ln in capsys.readouterr().out.splitlines()) == 1
    assert main(["history", "show", "--db", db_url, "--pair", "h0003", "nowhere"]) == 1
    assert "no pair h0003 - nowhere" in capsys.readouterr().err
    assert main(["history", "show", "--db", db_url, "--host", "h0003"]) == 0
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if "2026-11-" in ln]
    mbs = [float(r[3]) for r in rows[-8:]]
    assert mbs[-1] < 0.8 * min(mbs[:-1])        # the host's median, night by night: the last night low


def test_unreachable_server_and_newer_schema_before_the_job(db_url, small_fabric, tmp_path, capsys):
    """--db is checked before a measurement starts: a server that is not there, a newer schema."""
    sock = tmp_path / "nothing-here"
    sock.mkdir()
    url = f"postgresql:///fab?host={sock}&user=fab&connect_timeout=3"
    assert main(["history", "list", "--db", url]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fabscope: error: cannot connect to postgresql:///fab"), err
    secret = f"postgresql://fab:s3cret-pw@/fab?host={sock}&connect_timeout=3"
    assert main(["history", "check", "--db", secret]) == 1
    err = capsys.readouterr().err
    assert "s3cret-pw" not in err and "fab:***@" in err
    _fill(db_url, small_fabric, nights=1, bad_from=99)
    db = connect(db_url)
    with db.transaction():
        db.execute("UPDATE history_meta SET value = '99' WHERE key = 'schema_version'")
    db.close()
    # no MPI job is started: the refusal comes first (and no output file is made)
    out = tmp_path / "never.jsonl"
    assert main(["measure", "--np", "2", "--db", db_url, "--out", str(out), "random-pairs"]) == 1
    assert "schema version 99, newer than" in capsys.readouterr().err
    assert not out.exists()


def test_check_writes_its_findings(db_url, small_fabric, tmp_path):
    _fill(db_url, small_fabric, nights=9, bad_from=8)
    out = tmp_path / "check.json"
    assert main(["history", "check", "--db", db_url, "--run", "9", "-o", str(out)]) == 3
    doc = json.loads(out.read_text())
    assert doc["run"] == 9 and doc["alarms"] == 1 and doc["baseline"] == [2, 3, 4, 5, 6, 7, 8]
    (alarm,) = [f for f in doc["findings"] if f["alarm"]]
    assert alarm["what"] == "cable" and alarm["first_run"] == 9 and alarm["factor"] < 0.9


@pytest.mark.mpi
def test_a_later_night_without_fabric_gets_the_historys_classes(tmp_path, capsys):
    """``history add`` of a fabscope-bench run without ``--fabric``: its pairs are classed by the history's
    fabric, as its first night was (before, they got socket/node classes: "Inter-node" against a baseline
    of leaf classes, and the class test compared 32 pairs with none)."""
    from fabscope.errors import MeasureError
    from fabscope.fabric.io import write_json
    from fabscope.measure.mpi import find_mpi

    try:
        find_mpi()
    except MeasureError as err:
        pytest.skip(f"no MPI: {err}")
    out = tmp_path / "rp.jsonl"
    assert main(["measure", "--np", "4", "--out", str(out), "random-pairs", "--size", "4096",
                 "--iterations", "5", "--rounds", "2"]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    for rec in lines:                 # the four ranks on four hosts of the fabric, two per leaf
        if rec["type"] == "ranks":
            rec["host"] = ["h0000", "h0001", "h0002", "h0003"]
    nights = []
    for n in range(2):
        for rec in lines:
            if rec["type"] == "pair":
                rec["bandwidth"] *= 1.01      # another night: other bandwidths, another digest
        p = tmp_path / f"night{n}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in lines))
        nights.append(p)
    fab = tmp_path / "fabric.json"
    f = fat_tree(k=4, levels=2)
    write_json(f, fab)
    db = str(tmp_path / "h.db")
    assert main(["history", "add", "--db", db, "--fabric", str(fab), str(nights[0]), "--time", "2026-11-01"]) == 0
    assert main(["history", "add", "--db", db, str(nights[1]), "--time", "2026-11-02"]) == 0
    capsys.readouterr()
    with History(db) as h:
        first, second = h.runs()
        c1, c2 = (sorted(set(h.pairs(r.id)["cls"].tolist())) for r in (first, second))
    assert c1 == c2, (c1, c2)
    assert set(c1) <= set(f.class_labels)
