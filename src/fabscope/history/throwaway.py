"""A throw-away PostgreSQL cluster in a temporary folder, for the tests and the benchmark.

``initdb`` and ``pg_ctl`` of Debian's ``postgresql`` package, run as
``nobody`` when the caller is root (PostgreSQL refuses to run as root),
listening on a unix socket in the cluster's folder only
(``listen_addresses=''``: no TCP port), ``fsync`` off (the data is thrown
away).  :func:`start` returns the cluster; :meth:`Cluster.url` names one of
its databases, :meth:`Cluster.create` makes one, :meth:`Cluster.stop` stops
the server and deletes the folder.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass


def pg_bindir() -> str | None:
    """The folder of initdb and pg_ctl, or None when PostgreSQL is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
                   if p.split("/")[4].isdigit() else 0)
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--"] + cmd if os.geteuid() == 0 else cmd


@dataclass
class Cluster:
    base: str
    bindir: str
    user: str = "fab"

    @property
    def data(self) -> str:
        return os.path.join(self.base, "data")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql:///{dbname}?host={self.base}&user={self.user}"

    def create(self, dbname: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{dbname}"')
        return self.url(dbname)

    def stop(self) -> None:
        subprocess.run(_as_server_user([f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "immediate", "-w",
                                        "stop"]), capture_output=True, timeout=120)
        shutil.rmtree(self.base, ignore_errors=True)


def start() -> Cluster:
    """initdb and start a cluster; raises RuntimeError with the server's last words if it cannot."""
    bindir = pg_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (Debian package postgresql)")
    base = tempfile.mkdtemp(prefix="fabscope-pg-")
    if os.geteuid() == 0:
        shutil.chown(base, "nobody", "nogroup")
    c = Cluster(base, bindir)
    try:
        subprocess.run(_as_server_user([f"{bindir}/initdb", "-D", c.data, "-A", "trust", "-U", c.user,
                                        "--no-sync", "-E", "UTF8"]),
                       check=True, capture_output=True, text=True, timeout=120)
        subprocess.run(_as_server_user([f"{bindir}/pg_ctl", "-D", c.data, "-l", os.path.join(base, "log"), "-w",
                                        "-o", f"-k {base} -c listen_addresses='' -c fsync=off", "start"]),
                       check=True, capture_output=True, text=True, timeout=120)
    except subprocess.CalledProcessError as err:
        c.stop()
        raise RuntimeError(f"could not start PostgreSQL: {(err.stderr or '').strip()[-300:]}") from None
    return c
