"""``fabscope testbed run``: any MPI program across a testbed's hosts.

The program's MPI is read first, from its ELF dependencies or ``--mpi``
(:func:`fabscope.measure.mpi.program_mpi`), and it is launched as that MPI launches, as
``measure --testbed`` launches fabscope-bench (:func:`fabscope.testbed.launch.launch_args`):
an MPICH program by Hydra (OFI or, for a UCX build, UCX on TCP), an Open MPI program by
Open MPI's own ``mpirun``; in both the ranks enter the hosts' namespaces and talk over
``fab0`` only.  A program of no MPI fabscope knows is refused before anything starts (started
by the other family's launcher it would run as N one-rank worlds).  The job runs under the
supervisor of :mod:`fabscope.measure.supervise` (nothing of the job outlives fabscope, even
a SIGKILLed one).  Where the ranks go:

* every host of the testbed in order, ``--ppn`` ranks each (default: the testbed's, 1);
* ``--hostfile F``: F's hosts in F's order (``host``, ``host:N``, ``host slots=N``), their
  counts or ``--ppn`` each;
* ``--placement P``: a placement as ``fabscope map`` writes it (hostfile, slurm, rankfile,
  machinefile or map format), rank by rank.

Hosts are named as on the testbed (``fstb-NAME-h<i>``) or as in the fabric it was built
from.  Hydra gets the ranks' hosts as a machine file of ``host:count`` runs in rank order
(Hydra fills ranks in the file's order).

The program's standard output and error pass through unchanged (fabscope's own, inherited).
The exit status is the program's: the first rank to fail gives its status (killed by signal N:
128 + N; Hydra itself would return N), and every other rank is stopped then (see
:data:`RANK_WRAPPER`); ``--timeout`` stops every rank and exits 124; Ctrl-C 130, SIGTERM 143.

>>> placement_hosts(["rank 1=h1 slot=0", "rank 0=h0 slot=2"], "p")
['h0', 'h1']
>>> placement_hosts(["# rank host core  (topo, 3 ranks)", "0 h2 0", "1 h0 0", "2 h2 1"], "p")
['h2', 'h0', 'h2']
>>> placement_hosts(["h3:2", "h1:1"], "p"), placement_hosts(["h3", "h3", "h1"], "p")
(['h3', 'h3', 'h1'], ['h3', 'h3', 'h1'])
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from fabscope.measure.launchers import Job, get_launcher
from fabscope.measure.processes import JobProcesses
from fabscope.measure.runner import GRACE, Stopped, _SignalsToExceptions, _supervisor_env, supervised
from fabscope.names import check_host_name
from fabscope.testbed.names import TestbedError

if TYPE_CHECKING:
    from fabscope.measure.mpi import ProgramMPI

#: exit status of a run stopped by --timeout (as timeout(1))
TIMEOUT_STATUS = 124
#: seconds Open MPI's mpirun gets to end a job itself after a rank failed, before fabscope stops it
OWN_ABORT = 5.0

_RANKFILE = re.compile(r"rank\s+(\d+)\s*=\s*(\S+?)(?:\s+slot=\S+)?")
_MAPLINE = re.compile(r"(\d+)\s+(\S+)\s+\d+(?:\s+-?\d+)*")
_MACHINE = re.compile(r"(\S+?):(\d+)")


def placement_hosts(lines: Iterable[str], source: str) -> list[str]:
    """The host of every rank, in rank order, from a placement as ``fabscope map -o`` writes it.

    One format per file: ``hostfile``/``slurm`` (a host per rank), ``rankfile`` (``rank R=host
    slot=S``), ``machinefile`` (``host:N`` runs) or ``map`` (``rank host core [coords]``);
    ``#`` starts a comment.  Anything else is refused naming the line.
    """
    kinds: set[str] = set()
    ranked: dict[int, str] = {}
    seq: list[str] = []
    for n, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"--placement {source} line {n}"
        if m := _RANKFILE.fullmatch(line):
            kind, rank, host = "rankfile", int(m.group(1)), m.group(2)
        elif m := _MAPLINE.fullmatch(line):
            kind, rank, host = "map", int(m.group(1)), m.group(2)
        elif m := _MACHINE.fullmatch(line):
            kind, rank, host = "machinefile", -1, m.group(1)
        elif len(line.split()) == 1:
            kind, rank, host = "hostfile", -1, line
        else:
            raise TestbedError(f"{where}: {line[:60]!r} is no line of a placement (host, host:N, "
                               "'rank R=host slot=S' or 'rank host core')")
        kinds.add(kind)
        if len(kinds) > 1:
            raise TestbedError(f"{where}: a {kind} line in a file of {sorted(kinds - {kind})[0]} lines")
        check_host_name(host, where, TestbedError)
        if rank < 0:
            count = int(m.group(2)) if kind == "machinefile" else 1
            if not 1 <= count <= 1 << 20:
                raise TestbedError(f"{where}: {count} ranks on one host")
            seq += [host] * count
        elif rank in ranked:
            raise TestbedError(f"{where}: rank {rank} placed twice")
        else:
            ranked[rank] = host
    if ranked:
        missing = next((r for r in range(len(ranked)) if r not in ranked), None)
        if missing is not None:
            raise TestbedError(f"--placement {source}: no line places rank {missing} "
                               f"(ranks must be 0..{len(ranked) - 1})")
        seq = [ranked[r] for r in range(len(ranked))]
    if not seq:
        raise TestbedError(f"--placement {source}: places no rank")
    return seq


def rank_hosts(name: str, fabric, default_ppn: int, hostfile: str | None = None, placement: str | None = None,
               ppn: int | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """The testbed host of every rank, in rank order; :class:`TestbedError` in one line for a host
    the testbed does not have."""
    from fabscope.measure.hostlists import read_hostfile
    from fabscope.testbed.launch import host_on_testbed
    from fabscope.textio import read_lines

    if placement:
        if ppn:
            raise TestbedError("--ppn goes with --hostfile or the testbed's hosts; --placement places every rank")
        given = placement_hosts((ln for _, ln in read_lines(placement, "placement", TestbedError)), placement)
        where = f"--placement {placement}"
        return [host_on_testbed(name, fabric, h, where) for h in given]
    if hostfile:
        from fabscope.measure.hostlists import hostfile_ranks

        given = None if ppn else hostfile_ranks((ln for _, ln in read_lines(hostfile, "host file", TestbedError)),
                                                f"--hostfile {hostfile}")
        if given is not None:       # a host per rank (a cyclic placement repeats hosts): rank i on line i
            return [host_on_testbed(name, fabric, h, f"--hostfile {hostfile}") for h in given]
        out = []
        for h, slots in read_hostfile(hostfile):
            out += [host_on_testbed(name, fabric, h, f"--hostfile {hostfile}")] * (ppn or slots)
        return out
    return [h for h in fabric.host_names for _ in range(ppn or default_ppn)]


def program_path(argv: Sequence[str]) -> str:
    if not argv:
        raise TestbedError("no program to run: fabscope testbed run NAME [options] -- PROGRAM [ARGS...]")
    prog = argv[0]
    found = prog if "/" in prog else shutil.which(prog)
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise TestbedError(f"program {prog!r}: not found, or not an executable file")
    return os.path.abspath(found)


#: what each rank runs: the program, then, if it failed, a note of its status (``128 + N``: killed by signal N)
#: in the run's folder.  Hydra stops a job across proxies only sometimes (on this MPICH 5.0.2, neither a rank's
#: ``exit(3)`` nor its SIGKILL stopped the ranks of other hosts: they waited in their next collective), so the
#: run watches the folder and ends the job itself at the first failed rank.
RANK_WRAPPER = """#!/bin/sh
d="$1"; shift
"$@"
s=$?
[ "$s" -eq 0 ] || echo "$s ${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-?}} $(uname -n)" > "$d/failed.$$"
exit "$s"
"""


def first_failure(folder: str) -> tuple[int, str, str] | None:
    """(status, rank, host) of the first rank that failed, from the notes of :data:`RANK_WRAPPER`; None: none yet.

    >>> import tempfile, pathlib
    >>> d = tempfile.mkdtemp(); first_failure(d) is None
    True
    >>> _ = (pathlib.Path(d) / "failed.7").write_text("137 1 fstb-tb1-h1\\n"); first_failure(d)
    (137, '1', 'fstb-tb1-h1')
    """
    notes = []
    for entry in os.scandir(folder):
        if entry.name.startswith("failed."):
            try:
                with open(entry.path) as fh:
                    status, rank, host = fh.read().split()
                notes.append((entry.stat().st_mtime_ns, int(status), rank, host))
            except (OSError, ValueError):
                continue     # being written: read at the next look
    if not notes:
        return None
    _, status, rank, host = min(notes)
    return status, rank, host


def run(name: str, argv: Sequence[str], hostfile: str | None = None, placement: str | None = None,
        ppn: int | None = None, np: int | None = None, timeout: float | None = None, mpi: str | None = None,
        rank_env: dict[str, str] | None = None, pm: "ProgramMPI | None" = None,
        say: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> int:
    """Run ``argv`` (an MPI program and its arguments) across testbed ``name``; its exit status.

    Everything is checked before anything starts (options, program and its MPI, testbed, hosts);
    ``mpi`` says the program's MPI (a key of :data:`fabscope.measure.mpi.WORDS`) where its ELF
    dependencies do not (``pm``: as read already); ``rank_env`` goes to every rank's environment
    (not the launcher's), as the launcher passes it.
    """
    from fabscope.errors import MeasureError
    from fabscope.measure.mpi import family_launcher, program_mpi
    from fabscope.testbed.launch import host_file, launch_args, ready
    from fabscope.testbed.lifecycle import launcher_path

    if hostfile and placement:
        raise TestbedError("give --hostfile or --placement, not both")
    for opt, v in (("--ppn", ppn), ("--np", np)):
        if v is not None and v < 1:
            raise TestbedError(f"{opt} must be at least 1, got {v}")
    if timeout is not None and not timeout > 0:
        raise TestbedError(f"--timeout must be positive, got {timeout:g}")
    argv = list(argv[1:] if argv and argv[0] == "--" else argv)
    exe = program_path(argv)
    try:
        pm = pm or program_mpi(exe, mpi)
        launcher_exe = family_launcher(pm)
    except MeasureError as err:
        raise TestbedError(str(err)) from None
    st, fabric = ready(name)
    hosts = rank_hosts(name, fabric, st.ppn, hostfile, placement, ppn)
    if np is not None and np > len(hosts):
        where = f"--placement {placement}" if placement else f"--hostfile {hostfile}" if hostfile else f"testbed {name}"
        raise TestbedError(f"--np {np}, but {where} places {len(hosts)} ranks")
    hosts = hosts[:np] if np else hosts
    folder = tempfile.mkdtemp(prefix=f".{name}-run.", dir=launcher_path(name).parent)
    try:
        mf, wrapper = os.path.join(folder, "hosts"), os.path.join(folder, "rank.sh")
        with open(mf, "w") as fh:
            fh.write(host_file(pm.family, hosts))
        with open(wrapper, "w") as fh:
            fh.write(RANK_WRAPPER)
        os.chmod(wrapper, 0o700)
        kind, args = launch_args(name, pm.family, pm.netmod, len(hosts))
        launcher = get_launcher(kind, launcher_exe)
        args += launcher.rank_env(dict(rank_env or {}))
        job = Job(np=len(hosts), program=[wrapper, folder, exe, *argv[1:]], hostfile=mf, extra=tuple(args))
        return supervise_job(launcher.command(job), folder, timeout, say, os.path.basename(exe), launcher.env(),
                             own_abort=OWN_ABORT if kind == "openmpi" else 0.0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def supervise_job(cmd: list[str], folder: str, timeout: float | None, say: Callable[[str], None], prog: str,
                  env: dict[str, str] | None = None, own_abort: float = 0.0) -> int:
    """Run ``cmd`` under the supervisor, output passed through; the status as :func:`run` gives it."""
    watch, alive = os.pipe()
    with _SignalsToExceptions():
        try:
            proc = subprocess.Popen(supervised(cmd, watch), stdin=subprocess.DEVNULL,
                                    env=_supervisor_env({**os.environ, **(env or {})}), start_new_session=True, pass_fds=(watch,))
        except OSError as err:
            os.close(alive)
            raise TestbedError(f"cannot start {cmd[0]}: {err.strerror}") from err
        finally:
            os.close(watch)
        job = JobProcesses(proc)
        start = time.monotonic()
        failed = None
        timed_out = False
        try:
            while proc.poll() is None:
                job.refresh()
                failed = first_failure(folder)
                if failed is not None:
                    # a launcher that ends the job itself at a failed rank (Open MPI's mpirun) is left to do so,
                    # for a moment: stopped in the middle of its abort it crashed (a segfault in PMIx_Finalize)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=own_abort)
                    break
                if timeout is not None and time.monotonic() - start > timeout:
                    timed_out = True
                    break
                time.sleep(0.1)
        except Stopped as err:
            job.stop(GRACE)
            say(f"fabscope testbed run: {err}: stopped every rank of {prog}")
            return 128 + (signal.SIGHUP if "SIGHUP" in str(err) else signal.SIGTERM)
        finally:
            job.stop(GRACE)     # Ctrl-C, a failed rank, the timeout, or what a launcher left running
            os.close(alive)
    if timed_out:
        say(f"fabscope testbed run: {prog} ran over {timeout:g} s; stopped every rank (exit {TIMEOUT_STATUS})")
        return TIMEOUT_STATUS
    failed = failed or first_failure(folder)
    if failed is not None:
        status, rank, host = failed
        how = f"was killed by signal {status - 128}" if status > 128 else f"exited with status {status}"
        say(f"fabscope testbed run: rank {rank} of {prog} on {host} {how}; stopped every rank")
        return status
    return proc.returncode
