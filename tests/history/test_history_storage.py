"""The history's storage failing: a damaged database, a full disk, a database another process keeps
locked, a first ``add`` ended by SIGTERM.  One line each, naming the database and what to do, and
nothing lost; on SQLite and on a real PostgreSQL server (conftest.db_url)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from history_nights import night

from fabscope.cli import main
from fabscope.history.db import connect, describe
from fabscope.history.store import History


def _fill(db_url, f, nights=3):
    with History(db_url, create=True) as h:
        h.set_fabric(f)
        for n in range(nights):
            h.add(night(f, n, {}), time=f"2026-11-{n + 1:02d}T02:00Z")


def _one_line(capsys, rc):
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "\n" not in err and err.startswith("fabscope: error: "), (rc, err)
    return err


def _runs(db_url):
    db = connect(db_url)
    try:
        return db.query("SELECT id, digest FROM runs ORDER BY id")
    finally:
        db.close()


# ---- damaged ------------------------------------------------------------------------------------
def _drop_pairs(db_url):
    db = connect(db_url)
    with db.transaction():
        db.execute("DROP TABLE pairs")
    db.close()


def _not_utf8(db_url):
    import sqlite3

    c = sqlite3.connect(db_url, isolation_level=None)
    for table, col in (("pairs", "src_host"), ("runs", "time")):
        c.execute(f"UPDATE {table} SET {col} = CAST(CAST({col} AS BLOB) || x'ff' AS TEXT)")
    c.close()


def _torn_page(db_url):
    with open(db_url, "r+b") as fh:
        size = fh.seek(0, 2)
        for page in range(1, size // 4096):
            fh.seek(page * 4096)
            fh.write(b"\xa5" * 4096)


DAMAGES = {"no table pairs": _drop_pairs, "not UTF-8": _not_utf8, "malformed": _torn_page}


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("command", [["list"], ["show", "--host", "h0001"], ["check"]])
def test_a_damaged_history_is_one_line(db_url, small_fabric, capsys, damage, command):
    if db_url.startswith("postgresql") and damage != "no table pairs":
        pytest.skip("a PostgreSQL server keeps its own files whole and its text UTF-8")
    _fill(db_url, small_fabric)
    DAMAGES[damage](db_url)
    before = open(db_url, "rb").read() if "://" not in db_url else None
    capsys.readouterr()
    rc = main(["history", *command, "--db", db_url])
    err = _one_line(capsys, rc)
    assert describe(db_url) in err and "damaged" in err and "restore it from a backup" in err, err
    if before is not None:
        assert open(db_url, "rb").read() == before


# ---- full disk ------------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmpfs):
    """A 1 MB tmpfs (root only): a disk that fills."""
    return tmpfs("1m")


def _fill_disk(folder):
    """Write a filler until the disk is full."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def _nights(tmp_path, capsys, n=2):
    assert main(["history", "example", str(tmp_path / "n"), "--nights", str(n), "--fabric", "fat-tree:k=4,levels=2"]) == 0
    capsys.readouterr()
    return sorted(str(p) for p in (tmp_path / "n").iterdir())


def test_full_disk_on_a_first_add_is_one_line_and_leaves_no_file(small_disk, tmp_path, capsys):
    files = _nights(tmp_path, capsys)
    _fill_disk(small_disk)
    os.unlink(small_disk / "filler")
    with open(small_disk / "filler", "wb") as fh:       # leave 48 kB: the schema fits, the runs do not
        fh.write(b"\0" * (1024 * 1024 - 48 * 1024))
    db = small_disk / "h.db"
    err = _one_line(capsys, main(["history", "add", "--db", str(db), *files]))
    assert "disk is full" in err and str(db) in err, err
    assert sorted(os.listdir(small_disk)) == ["filler"]


def test_full_disk_on_a_later_add_keeps_the_history(small_disk, tmp_path, capsys):
    files = _nights(tmp_path, capsys, 3)
    db = small_disk / "h.db"
    assert main(["history", "add", "--db", str(db), files[0]]) == 0
    before = db.read_bytes()
    _fill_disk(small_disk)
    capsys.readouterr()
    err = _one_line(capsys, main(["history", "add", "--db", str(db), files[1], files[2]]))
    assert "disk is full" in err and "nothing was added" in err, err
    assert db.read_bytes() == before
    os.unlink(small_disk / "filler")
    assert main(["history", "list", "--db", str(db)]) == 0 and "1 runs" in capsys.readouterr().out


@pytest.fixture
def server_disk(tmpfs):
    """A 24 MB tmpfs (a database's first files take 8) the PostgreSQL server, run as nobody, may write in."""
    return tmpfs("24m", 0o755)


def test_full_disk_on_postgresql_is_one_line(pg_server, server_disk, small_fabric, tmp_path, capsys):
    """The server's disk fills: its tables live in a tablespace on the small disk."""
    import psycopg

    small_disk = server_disk
    space = small_disk / "pg"
    space.mkdir()
    shutil.chown(space, "nobody", "nogroup")
    name = f"full{os.getpid()}"
    with psycopg.connect(pg_server.url(), autocommit=True) as c:
        c.execute(f"CREATE TABLESPACE {name} LOCATION '{space}'")
        c.execute(f'CREATE DATABASE "{name}" TABLESPACE {name}')
    url = pg_server.url(name)
    try:
        _fill(url, small_fabric, nights=1)
        before = _runs(url)
        _fill_disk(small_disk)
        files = _nights(tmp_path, capsys, 3)
        err = _one_line(capsys, main(["history", "add", "--db", url, "--no-diagnose", *files]))
        assert "disk is full" in err and describe(url) in err, err
        os.unlink(small_disk / "filler")
        assert _runs(url) == before
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            c.execute(f"DROP TABLESPACE IF EXISTS {name}")


# ---- locked ---------------------------------------------------------------------------------------
def test_a_locked_sqlite_history_waits_then_names_the_holder(tmp_path, small_fabric, capsys, monkeypatch):
    db = str(tmp_path / "h.db")
    _fill(db, small_fabric, nights=1)
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                               f"c = sqlite3.connect({db!r}, isolation_level=None)\n"
                               "c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("FABSCOPE_HISTORY_WAIT", "0.5")
        err = _one_line(capsys, main(["history", "check", "--db", db]))
        assert "is locked" in err and f"{holder.pid} (python" in err and "waited 0.5 s" in err, err
    finally:
        holder.kill()
        holder.wait()
    assert main(["history", "list", "--db", db]) == 0


def test_a_locked_postgresql_history_waits_then_says_so(pg_server, small_fabric, capsys, monkeypatch):
    import psycopg

    url = pg_server.create(f"lock{os.getpid()}")
    _fill(url, small_fabric, nights=1)
    with psycopg.connect(url) as other:
        other.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        pid = other.info.backend_pid
        monkeypatch.setenv("FABSCOPE_HISTORY_WAIT", "0.5")
        t0 = time.monotonic()
        err = _one_line(capsys, main(["history", "list", "--db", url]))
        assert time.monotonic() - t0 < 30
        assert "is locked" in err and f"server process {pid}" in err, err
        other.rollback()
    assert main(["history", "list", "--db", url]) == 0


# ---- a first add that does not finish --------------------------------------------------------------
def _start_first_add(tmp_path):
    """A first ``add`` (made slow: a bigger fabric's tomography), once it is writing its database."""
    fabric = "fat-tree:k=12,levels=2"
    assert main(["history", "example", str(tmp_path / "n"), "--nights", "3", "--fabric", fabric]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-m", "fabscope.cli", "history", "add", "--db", str(tmp_path / "h.db"),
                          "--fabric", fabric, *sorted(str(x) for x in (tmp_path / "n").iterdir())], env=env,
                         stderr=subprocess.PIPE, text=True)
    for _ in range(600):                  # until its database file exists (the schema is written first)
        if [x for x in os.listdir(tmp_path) if x.startswith(("h.db", ".h.db.")) and "lock" not in x] \
                or p.poll() is not None:
            break
        time.sleep(0.05)
    assert p.poll() is None, "the add finished before it could be ended"
    return p


def test_sigterm_of_a_first_add_leaves_no_file(tmp_path, capsys):
    """Ended by SIGTERM: exit 143, no file of it left."""
    p = _start_first_add(tmp_path)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and err.strip().splitlines()[-1] == "fabscope: terminated", (p.returncode, err)
    assert not [x for x in os.listdir(tmp_path) if "h.db" in x], os.listdir(tmp_path)


@pytest.mark.parametrize("when", ["made", "chmod"])
def test_a_signal_as_a_new_history_file_is_made_leaves_nothing(tmp_path, monkeypatch, when):
    """SIGTERM delivered just as the temporary file exists (``made``: it came in while mkstemp ran; the test
    of the real process sends it once the file shows), or an error on the file's mode (``chmod``): the
    History is not made, and neither the temporary nor the lock is left."""
    import tempfile

    from fabscope.history import newfile

    class Ended(KeyboardInterrupt):
        pass

    def ended(num, frame):
        raise Ended()

    real_mkstemp, real_chmod = tempfile.mkstemp, os.chmod

    def mkstemp(*a, **k):
        out = real_mkstemp(*a, **k)
        if when == "made":
            signal.raise_signal(signal.SIGTERM)         # to this thread: handled at the next bytecode, unless held
        return out

    def chmod(path, mode, *a, **k):
        if when == "chmod" and str(path).endswith(".fabscope-tmp"):
            raise PermissionError(1, "Operation not permitted")
        return real_chmod(path, mode, *a, **k)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(newfile.os, "chmod", chmod)
    old = signal.signal(signal.SIGTERM, ended)
    # another thread, as a test session and BLAS have (a process's signal may go to it: the handlers, which run
    # in the main thread, hold it, where a main thread's mask would not)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with pytest.raises(Ended if when == "made" else PermissionError):
            History(str(tmp_path / "h.db"), create=True)
    finally:
        stop.set()
        other.join()
        signal.signal(signal.SIGTERM, old)
    assert os.listdir(tmp_path) == []


def test_sigkill_of_a_first_add_leaves_no_history_and_the_next_add_cleans_up(tmp_path, capsys):
    """SIGKILL runs no handler: the history is built under a temporary name, so no ``h.db`` (empty or half
    filled) is left; the next add removes the temporary and makes the history."""
    p = _start_first_add(tmp_path)
    p.kill()
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    assert not (tmp_path / "h.db").exists(), os.listdir(tmp_path)
    left = [x for x in os.listdir(tmp_path) if x.startswith(".h.db.")]
    assert any(x.endswith(".fabscope-tmp") for x in left), left       # what the next writer must remove
    capsys.readouterr()
    night = sorted(str(x) for x in (tmp_path / "n").iterdir())[0]
    assert main(["history", "add", "--db", str(tmp_path / "h.db"), "--no-diagnose", night]) == 0
    assert [x for x in os.listdir(tmp_path) if "h.db" in x] == ["h.db"], os.listdir(tmp_path)
    assert len(_runs(str(tmp_path / "h.db"))) == 1


def test_a_second_first_add_while_one_builds_is_refused(tmp_path, capsys):
    """Two first adds to one new file: the second is refused at once by the lock, naming the first."""
    p = _start_first_add(tmp_path)
    try:
        capsys.readouterr()
        night = sorted(str(x) for x in (tmp_path / "n").iterdir())[0]
        err = _one_line(capsys, main(["history", "add", "--db", str(tmp_path / "h.db"), "--no-diagnose", night]))
        assert f"another fabscope process {p.pid} is writing it" in err, err
    finally:
        p.kill()
        p.communicate(timeout=60)
