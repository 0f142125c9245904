"""Histories to test on: an SQLite file, and a database of a real PostgreSQL server.

The PostgreSQL server is a throw-away cluster made for the test session in a
temporary folder (``initdb``, ``pg_ctl``), run as ``nobody`` when the tests
run as root (PostgreSQL refuses root), listening on a unix socket in that
folder only (``listen_addresses=''``: no TCP port at all), and stopped and
deleted at the end.  Each test gets a database of its own.  Without Debian's
``postgresql`` package the PostgreSQL cases are skipped, with the reason.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from fabscope.diagnose.synthetic import as_result, synthetic
from fabscope.fabric.generators import fat_tree


def _pg_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--"] + cmd if os.geteuid() == 0 else cmd


@pytest.fixture(scope="session")
def pg_server():
    """(socket folder, superuser) of a running throw-away PostgreSQL cluster."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (Debian package postgresql; .ci/run installs it)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg 3 is not installed (pip install 'psycopg[binary]')")
    base = tempfile.mkdtemp(prefix="fabscope-pg-")
    data = os.path.join(base, "data")
    if os.geteuid() == 0:
        shutil.chown(base, "nobody", "nogroup")
    try:
        subprocess.run(_as_server_user([f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "fab",
                                        "--no-sync", "-E", "UTF8"]),
                       check=True, capture_output=True, text=True, timeout=120)
        subprocess.run(_as_server_user([f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(base, "log"), "-w",
                                        "-o", f"-k {base} -c listen_addresses='' -c fsync=off", "start"]),
                       check=True, capture_output=True, text=True, timeout=120)
    except subprocess.CalledProcessError as err:
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {err.stderr.strip()[-300:]}")
    try:
        yield base, "fab"
    finally:
        subprocess.run(_as_server_user([f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"]),
                       capture_output=True, timeout=120)
        shutil.rmtree(base, ignore_errors=True)


_count = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty history database of each kind."""
    if request.param == "sqlite":
        return str(tmp_path / "history.db")
    import psycopg

    sock, user = request.getfixturevalue("pg_server")
    name = f"t{os.getpid()}_{next(_count)}"
    with psycopg.connect(f"postgresql:///postgres?host={sock}&user={user}", autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return f"postgresql:///{name}?host={sock}&user={user}"


@pytest.fixture(scope="session")
def small_fabric():
    """16 hosts, 4 leaves, 4 spines."""
    return fat_tree(k=4, levels=2)


def night(f, seed: int, faults: dict[int, float] | None = None, noise: float = 0.02, rounds: int = 12):
    """One night's random pairs on ``f`` (rounds of 8 pairs), as a measured result."""
    rng = np.random.default_rng(seed)
    hs, hd, sc = [], [], []
    for r in range(rounds):
        p = rng.permutation(f.n_hosts)
        hs += p[0::2].tolist()
        hd += p[1::2].tolist()
        sc += [r] * (f.n_hosts // 2)
    m = synthetic(f, np.array(hs), np.array(hd), np.array(sc), faults or {}, noise, seed=seed, routing="dmodk")
    return as_result(m)
