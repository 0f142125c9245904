"""Histories to test on: an SQLite file, and a database of a real PostgreSQL server.

The PostgreSQL server is a throw-away cluster made for the test session in a
temporary folder (:mod:`fabscope.history.throwaway`: ``initdb``, ``pg_ctl``,
run as ``nobody`` when the tests run as root, on a unix socket in that folder
only, no TCP port), stopped and deleted at the end.  Each test gets a database of its own.  Without Debian's
``postgresql`` package the PostgreSQL cases are skipped, with the reason.
"""

from __future__ import annotations

import itertools
import os

import pytest

from fabscope.fabric.generators import fat_tree


@pytest.fixture(scope="session")
def pg_server():
    """A running throw-away PostgreSQL cluster (fabscope.history.throwaway)."""
    from fabscope.history import throwaway

    if throwaway.pg_bindir() is None:
        pytest.skip("PostgreSQL is not installed (Debian package postgresql; .ci/run installs it)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg 3 is not installed (pip install 'psycopg[binary]')")
    try:
        cluster = throwaway.start()
    except RuntimeError as err:
        pytest.fail(str(err))
    try:
        yield cluster
    finally:
        cluster.stop()


_count = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty history database of each kind."""
    if request.param == "sqlite":
        return str(tmp_path / "history.db")
    return request.getfixturevalue("pg_server").create(f"t{os.getpid()}_{next(_count)}")


@pytest.fixture(scope="session")
def small_fabric():
    """16 hosts, 4 leaves, 4 spines."""
    return fat_tree(k=4, levels=2)
