"""Starting MPI ranks inside a testbed's host namespaces.

MPICH's Hydra starts one proxy per host through the program given as its
ssh launcher (``-launcher ssh -launcher-exec PROG``), calling it as
``PROG [options] HOST "proxy command"``.  PROG here is a small script that
enters the host's network namespace and a fresh UTS namespace named after
the host (so each host has its own host name, as MPI reports it) and runs
the command.  The proxies reach mpiexec over the management bridge
(``-iface``); the ranks talk over ``fab0`` only: ``MPIR_CVAR_NOLOCAL=1``
forbids the shared-memory shortcut between ranks that share a kernel, and
the OFI netmod with its TCP provider bound to ``fab0`` carries the data.

>>> print(launcher_script("tb1").splitlines()[4])
case "$host" in fstb-tb1-h[0-9]*) ;; *) echo "fabscope testbed tb1: no host $host" >&2; exit 1;; esac
>>> mpi_env()["FI_TCP_IFACE"]
'fab0'
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from fabscope.atomic import atomic_open
from fabscope.fabric.model import Fabric
from fabscope.testbed import names, state
from fabscope.testbed.names import TestbedError


def launcher_script(name: str) -> str:
    return f"""#!/bin/sh
# Hydra's ssh launcher for fabscope testbed {name}: $0 [options] HOST "command"
while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done
host="$1"; shift
case "$host" in {names.NETNS_PREFIX}{name}-h[0-9]*) ;; *) echo "fabscope testbed {name}: no host $host" >&2; exit 1;; esac
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
"""


def mpi_env() -> dict[str, str]:
    """What every rank gets: no shared memory between namespaces, TCP over ``fab0``."""
    return {"MPIR_CVAR_NOLOCAL": "1", "MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": names.HOST_IF}


def write_launcher(name: str) -> Path:
    """The launcher script of testbed ``name``, in the state folder (executable, owner only)."""
    from fabscope.testbed.lifecycle import launcher_path

    p = launcher_path(name)
    text = launcher_script(name)
    with contextlib.suppress(OSError):
        if p.read_text() == text:
            return p
    # not through atomic_open: that holds a lock for the whole command, and measures that run side by side
    # on one testbed (a plan's leaf jobs) all write this same text; a temporary file renamed over it
    # replaces the file (or a link there) whole, whichever writer is last
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, stat.S_IRWXU)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, stat.S_IRWXU)
    os.replace(tmp, p)
    return p


def hydra_args(name: str) -> list[str]:
    """mpiexec (Hydra) options that launch into testbed ``name``."""
    args = ["-launcher", "ssh", "-launcher-exec", str(write_launcher(name)), "-iface", names.bridge(name)]
    for k, v in mpi_env().items():
        args += ["-genv", k, v]
    return args


def ready(name: str) -> tuple[state.State, Fabric]:
    """Testbed ``name``'s state and fabric (as built), once checked up and whole and the MPI found MPICH
    (Hydra: the launcher that enters its namespaces); :class:`TestbedError` in one line otherwise."""
    from fabscope.measure.mpi import find_mpi
    from fabscope.testbed.lifecycle import existing

    st = state.load(name)
    fabric = state.load_fabric(name)
    ex = existing(name)
    have = len(ex[0].netns) if ex else 0
    if have != fabric.n_nodes:
        raise TestbedError(f"testbed {name} is incomplete ({have} of {fabric.n_nodes} namespaces); "
                           f"bring it up again ('fabscope testbed up --name {name} --fabric {st.spec}')")
    mpi = find_mpi()
    if mpi.vendor != "mpich":
        raise TestbedError(f"running on a testbed needs MPICH's Hydra launcher; the MPI found is {mpi.vendor} "
                           f"({mpi.mpiexec}); install the mpich wheel or set $FABSCOPE_MPICC")
    return st, fabric


def host_on_testbed(name: str, fabric: Fabric, host: str, where: str) -> str:
    """``host`` as named on testbed ``name`` (``fstb-NAME-h<i>``), given so or as in the fabric it was built
    from; :class:`TestbedError` naming ``where`` if the testbed has no such host."""
    if host in fabric.host_index:
        return host
    original = list(fabric.params.get("original_hosts") or [])
    if host in original:
        return fabric.host_names[original.index(host)]
    raise TestbedError(f"{where}: testbed {name} has no host {host!r} "
                       f"(its hosts are {fabric.host_names[0]} .. {fabric.host_names[-1]})")


def job(name: str, out: str | os.PathLike[str], ppn: int | None = None, hostfile: str | None = None
        ) -> tuple[Fabric, str, list[str], int]:
    """Everything ``fabscope measure --testbed`` needs: (fabric, host file, launcher options, ranks).

    The hosts are the testbed's, in order, or those of ``hostfile`` in its order (named as on the
    testbed, ``fstb-NAME-h<i>``, or as in the fabric it was built from), ``ppn`` ranks each (default 1).
    Without ``ppn``, a host file that lists a host per rank (a cyclic placement from ``fabscope map
    -o`` repeats hosts) puts rank *i* on its line *i*.
    Checks that the testbed is up and whole, and that the MPI found is MPICH (Hydra).
    """
    from itertools import groupby

    from fabscope.measure.hostlists import hostfile_ranks, read_hostfile
    from fabscope.textio import read_lines

    st, fabric = ready(name)
    where = f"--hostfile {hostfile}"
    given = hostfile_ranks((ln for _, ln in read_lines(hostfile, "host file", TestbedError)), where) \
        if hostfile and not ppn else None
    if given is not None and len(set(given)) == len(given):
        given = None                # each host once: the testbed's ranks per host, as without a host file
    if given is not None:           # Hydra's machine file: host:count runs in rank order
        ranks = [host_on_testbed(name, fabric, h, where) for h in given]
        runs = [(h, len(list(g))) for h, g in groupby(ranks)]
    else:
        hosts = list(fabric.host_names)
        if hostfile:
            hosts = [host_on_testbed(name, fabric, h, where) for h, _ in read_hostfile(hostfile)]
        runs = [(h, ppn or st.ppn) for h in hosts]
    path = Path(f"{os.fspath(out)}.hosts")
    with atomic_open(path) as fh:
        fh.write("".join(f"{h}:{k}\n" for h, k in runs))
    return fabric, str(path), hydra_args(name), sum(k for _, k in runs)
