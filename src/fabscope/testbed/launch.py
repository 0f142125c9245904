"""Starting MPI ranks inside a testbed's host namespaces.

MPICH's Hydra starts one proxy per host through the program given as its
ssh launcher (``-launcher ssh -launcher-exec PROG``), calling it as
``PROG [options] HOST "proxy command"``.  PROG here is a small script that
enters the host's network namespace and a fresh UTS namespace named after
the host (so each host has its own host name, as MPI reports it) and runs
the command.  The proxies reach mpiexec over the management bridge
(``-iface``); the ranks talk over ``fab0`` only: ``MPIR_CVAR_NOLOCAL=1``
forbids the shared-memory shortcut between ranks that share a kernel, and
the OFI netmod with its TCP provider bound to ``fab0`` carries the data (a UCX
build of MPICH: UCX's TCP transport on ``fab0``).  Open MPI's ``mpirun`` takes the
same script as its rsh agent (``plm_rsh_agent``), wires up over the management
bridge and sends over its TCP BTL on ``fab0`` (:func:`ompi_env`).  Which of the two
starts a program follows the MPI it is built with
(:func:`fabscope.measure.mpi.program_mpi`): a program of one MPI started by the
other's launcher runs as independent one-rank worlds.

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
# Hydra's ssh launcher (Open MPI's rsh agent) for fabscope testbed {name}: $0 [options] HOST "command"
while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done
host="$1"; shift
case "$host" in {names.NETNS_PREFIX}{name}-h[0-9]*) ;; *) echo "fabscope testbed {name}: no host $host" >&2; exit 1;; esac
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
"""


def mpi_env(netmod: str = "ofi") -> dict[str, str]:
    """What every rank of an MPICH gets: no shared memory between namespaces, TCP over ``fab0``, through
    the OFI netmod's TCP provider or (``netmod="ucx"``, a UCX build such as Debian's ch4:ucx) UCX's TCP
    transport; a UCX build ignores the OFI variables and, left alone, takes shared memory between namespaces.

    >>> sorted(mpi_env("ucx").items())[-2:]
    [('UCX_NET_DEVICES', 'fab0'), ('UCX_TLS', 'tcp,self')]
    """
    if netmod == "ucx":
        return {"MPIR_CVAR_NOLOCAL": "1", "MPIR_CVAR_CH4_NETMOD": "ucx", **ucx_env()}
    return {"MPIR_CVAR_NOLOCAL": "1", "MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp",
            "FI_TCP_IFACE": names.HOST_IF}


def ucx_env() -> dict[str, str]:
    """UCX on TCP over ``fab0`` only (without them UCX finds every namespace one machine and uses its shared memory)."""
    return {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": names.HOST_IF}


def ompi_env(name: str | None, nranks: int, cpus: int) -> dict[str, str]:
    """Open MPI's parameters for a job of ``nranks`` ranks on testbed ``name`` (``OMPI_MCA_*`` variables, which
    ``mpirun`` passes to every rank, and srun's ranks read as well): the TCP BTL over the fabric alone (``fab0``,
    and ``fab1``... where the testbed's hosts have several ports; ``ob1``,
    no shared memory, no UCX), wire-up on the management bridge, no binding (every namespace sees the same
    cores: each host's rank 0 would be bound to core 0) and, with more ranks than cores, yielding when idle
    (Open MPI spins by default: a 16-rank LAMMPS on 2 cores ran 14x slower).  ``name`` None: no ``mpirun``
    (srun starts the ranks), so no launcher script nor wire-up subnet.

    >>> e = ompi_env(None, 8, 2); e["OMPI_MCA_btl"], e["OMPI_MCA_mpi_yield_when_idle"]
    ('tcp,self', '1')
    """
    env = {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self", "OMPI_MCA_btl_tcp_if_include": names.HOST_IF,
           "OMPI_MCA_hwloc_base_binding_policy": "none", **ucx_env()}
    if nranks > cpus:
        env["OMPI_MCA_mpi_yield_when_idle"] = "1"
    if name is not None:
        st = state.load(name)
        env |= {"OMPI_MCA_plm_rsh_agent": str(write_launcher(name)), "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
                "OMPI_MCA_oob_tcp_if_include": f"{st.mgmt_subnet}.0/24",
                # hosts with several ports: the TCP BTL on all of them, striping large messages
                "OMPI_MCA_btl_tcp_if_include": ",".join(st.fabric_interfaces())}
    return env


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


def hydra_args(name: str, netmod: str = "ofi") -> list[str]:
    """mpiexec (Hydra) options that launch into testbed ``name``."""
    args = ["-launcher", "ssh", "-launcher-exec", str(write_launcher(name)), "-iface", names.bridge(name)]
    for k, v in mpi_env(netmod).items():
        args += ["-genv", k, v]
    return args


def launch_args(name: str, family: str, netmod: str | None, nranks: int) -> tuple[str, list[str]]:
    """(launcher, its options) that start ``nranks`` ranks of an MPI ``family`` ("mpich", "openmpi", "none")
    on testbed ``name``, with a host file as :func:`host_file` writes it: Hydra through the launcher script,
    or Open MPI's ``mpirun`` with the same script as its rsh agent, ranks in the host file's order
    (``--map-by seq``), and :func:`ompi_env` as ``--mca`` options."""
    from fabscope.measure.runner import usable_cpus

    if family != "openmpi":
        return "mpich", hydra_args(name, netmod or "ofi")
    args = ["--map-by", "seq"]
    for k, v in ompi_env(name, nranks, usable_cpus()).items():
        args += ["--mca", k[len("OMPI_MCA_"):], v] if k.startswith("OMPI_MCA_") else ["-x", f"{k}={v}"]
    return "openmpi", args


def host_file(family: str, hosts: list[str]) -> str:
    """The host file putting rank *i* on ``hosts[i]``: Hydra's ``host:count`` runs, or for Open MPI's
    sequential mapper one line per rank.

    >>> host_file("mpich", ["h0", "h0", "h1"]), host_file("openmpi", ["h0", "h0", "h1"])
    ('h0:2\\nh1:1\\n', 'h0\\nh0\\nh1\\n')
    """
    from fabscope.names import launcher_host

    if family == "openmpi":
        return "".join(f"{launcher_host(h)}\n" for h in hosts)
    runs: list[list] = []
    for h in hosts:
        if runs and runs[-1][0] == h:
            runs[-1][1] += 1
        else:
            runs.append([h, 1])
    return "".join(f"{launcher_host(h)}:{k}\n" for h, k in runs)


def ready(name: str) -> tuple[state.State, Fabric]:
    """Testbed ``name``'s state and fabric (as built), once checked up and whole; :class:`TestbedError`
    in one line otherwise.  Which launcher starts a program follows the program's MPI (:func:`launch_args`)."""
    from fabscope.testbed.lifecycle import existing

    st = state.load(name)
    fabric = state.load_fabric(name)
    ex = existing(name)
    have = len(ex[0].netns) if ex else 0
    if have != fabric.n_nodes:
        raise TestbedError(f"testbed {name} is incomplete ({have} of {fabric.n_nodes} namespaces); "
                           f"bring it up again ('fabscope testbed up --name {name} --fabric {st.spec}')")
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


def job(name: str, out: str | os.PathLike[str], ppn: int | None = None, hostfile: str | None = None,
        family: str = "mpich", netmod: str | None = "ofi") -> tuple[Fabric, str, str, list[str], int]:
    """Everything ``fabscope measure --testbed`` needs: (fabric, host file, launcher, its options, ranks).

    The hosts are the testbed's, in order, or those of ``hostfile`` in its order (named as on the
    testbed, ``fstb-NAME-h<i>``, or as in the fabric it was built from), ``ppn`` ranks each (default 1).
    Without ``ppn``, a host file that lists a host per rank (a cyclic placement from ``fabscope map
    -o`` repeats hosts) puts rank *i* on its line *i*.  The launcher is that of the benchmark's MPI
    ``family`` (:func:`launch_args`).  Checks that the testbed is up and whole.
    """
    from fabscope.measure.hostlists import hostfile_ranks, read_hostfile
    from fabscope.textio import read_lines

    st, fabric = ready(name)
    where = f"--hostfile {hostfile}"
    given = hostfile_ranks((ln for _, ln in read_lines(hostfile, "host file", TestbedError)), where) \
        if hostfile and not ppn else None
    if given is not None and len(set(given)) == len(given):
        given = None                # each host once: the testbed's ranks per host, as without a host file
    if given is not None:           # rank i on line i
        ranks = [host_on_testbed(name, fabric, h, where) for h in given]
    else:
        hosts = list(fabric.host_names)
        if hostfile:
            hosts = [host_on_testbed(name, fabric, h, where) for h, _ in read_hostfile(hostfile)]
        ranks = [h for h in hosts for _ in range(ppn or st.ppn)]
    path = Path(f"{os.fspath(out)}.hosts")
    with atomic_open(path) as fh:
        fh.write(host_file(family, ranks))      # Hydra: host:count runs in rank order; Open MPI: a line per rank
    launcher, args = launch_args(name, family, netmod, len(ranks))
    return fabric, str(path), launcher, args, len(ranks)
