"""Launch fabscope-bench and read what it wrote.

Python only builds the command line, starts the job, follows the output file
for progress and reads it at the end; the timing is all in C.

Everything is checked before anything is launched: fabscope's own options,
the host list, oversubscription of this host, and the program's options
(``fabscope-bench --check-args`` parses them without starting MPI).  However
the run ends (done, failed, ``--timeout``, Ctrl-C, SIGTERM from a batch
system), no process of the job is left behind: see :mod:`.processes`.

The program writes its JSON lines to a temporary file beside ``--out``
(``.NAME.XXXX.part``), under a lock on ``--out`` (a second ``measure`` to the
same file is refused at once); it is renamed to ``--out`` at the end.  A job
that fails or is stopped keeps the lines that finished (whole lines, renamed
to ``--out``) if any measurement finished, and leaves nothing otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from fabscope.atomic import DISK_FULL, Lock, atomic_open, check_output, current_umask
from fabscope.errors import FabscopeError, MeasureError, OutputError
from fabscope.fabric.model import Fabric
from fabscope.measure.apps import APP_TESTS, check_app_args
from fabscope.measure.build import bench_binary
from fabscope.measure.failures import dead_rank, signal_name
from fabscope.measure.hostlists import job_hosts, read_hostfile
from fabscope.measure.launchers import SRUN_MPI, Job, get_launcher, launcher_for
from fabscope.measure.mpi import MPIInstall, find_mpi
from fabscope.measure.parse import BenchRun, read_run
from fabscope.measure.processes import ExitOrder, JobProcesses
from fabscope.units import parse_size

SIZE_OPTIONS = ("--size", "--min-size", "--max-size")
Progress = Callable[[int, str], None]
# Ranks on this host may exceed the CPUs the job may use (its affinity set) by at
# most this factor without --oversubscribe: 2 ranks on 1 CPU is a fair test of a
# CPU set (they yield), 1,000 ranks on 2 cores only hangs the machine.
OVERSUBSCRIBE_FACTOR = 4
GRACE = 3.0  # seconds between SIGTERM and SIGKILL when a job is stopped


class Stopped(MeasureError):
    """The job was ended by a signal to fabscope (a batch system's SIGTERM, a hang-up)."""


def usable_cpus() -> int:
    """CPUs this process (and so a job it launches here) may run on: its affinity set.

    >>> usable_cpus() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def this_host_names() -> set[str]:
    """The names a host file may give this host by.

    >>> "localhost" in this_host_names()
    True
    """
    import socket

    names = {"localhost", "localhost.localdomain", "127.0.0.1", "::1"}
    for n in (socket.gethostname(), socket.getfqdn()):
        names |= {n, n.split(".")[0]}
    return names


def ranks_here(hosts: Sequence[tuple[str, int]], np: int, ppn: int | None = None) -> int:
    """How many of ``np`` ranks a launcher places on this host, filling the hosts in order
    (``ppn`` each, else their slots), as Hydra and Open MPI's default by-slot mapping do.

    >>> ranks_here([("localhost", 12), ("n2", 12)], 16), ranks_here([("n2", 4), ("localhost", 12)], 6)
    (12, 2)
    """
    local = this_host_names()
    left, here = np, 0
    for host, slots in hosts:
        take = min(left, ppn or slots)
        if host in local or host.split(".")[0] in local:
            here += take
        left -= take
        if left <= 0:
            break
    return here


def bench_args(args: Sequence[str]) -> list[str]:
    """Test arguments with sizes parsed once, here, as :func:`fabscope.units.parse_size` reads them.

    >>> bench_args(["random-pairs", "--size", "1MiB", "--iterations", "100"])
    ['random-pairs', '--size', '1048576', '--iterations', '100']
    """
    out = list(args)
    for i, a in enumerate(out[:-1]):
        if a in SIZE_OPTIONS:
            out[i + 1] = str(parse_size(out[i + 1]))
    for i, a in enumerate(out):
        if "=" in a and a.split("=", 1)[0] in SIZE_OPTIONS:
            k, v = a.split("=", 1)
            out[i] = f"{k}={parse_size(v)}"
    return out


@dataclass
class Plan:
    """Everything needed to start one job; :meth:`argv` is the command."""

    mpi: MPIInstall
    binary: Path
    np: int
    args: list[str]
    out: Path
    launcher: str = "auto"
    hosts: list[tuple[str, int]] | None = None
    hostfile: str | None = None
    ppn: int | None = None
    launcher_args: list[str] = field(default_factory=list)
    oversubscribe: bool = False
    #: where the program writes while it runs (a temporary file beside ``out``); None: ``out`` itself
    write_to: Path | None = None

    def _launcher(self):  # type: ignore[no-untyped-def]
        if self.launcher == "auto":
            return launcher_for(self.mpi.vendor, self.mpi.mpiexec)
        exe = self.mpi.mpiexec if self.launcher in ("mpich", "openmpi", "mpiexec", "mpirun") else None
        return get_launcher(self.launcher, exe)

    def argv(self) -> list[str]:
        oversub = self.oversubscribe or (self.hosts is None and self.hostfile is None and self.np > usable_cpus())
        launcher = self._launcher()
        extra = list(self.launcher_args)
        if (launcher.name == "srun" and self.mpi.vendor in SRUN_MPI
                and not any(a.startswith("--mpi") for a in extra)):
            extra.insert(0, SRUN_MPI[self.mpi.vendor])
        job = Job(np=self.np, program=[str(self.binary), *self.args, "--out", str(self.write_to or self.out)],
                  hosts=self.hosts, hostfile=self.hostfile, ppn=self.ppn, oversubscribe=oversub,
                  extra=tuple(extra))
        return launcher.command(job)

    def env(self) -> dict[str, str]:
        return {**os.environ, **self._launcher().env()}


def plan(args: Sequence[str], np: int, out: str | os.PathLike[str], launcher: str = "auto",
         hostfile: str | None = None, ppn: int | None = None, fabric: Fabric | None = None,
         mpi: MPIInstall | None = None, launcher_args: Sequence[str] = (),
         oversubscribe: bool = False) -> Plan:
    """Check the request against the job's hosts and the fabric, build the program,
    check its options, return the plan.  Nothing is launched."""
    from fabscope.measure.analysis import topo_lines

    if np < 1:
        raise MeasureError(f"--np must be at least 1, got {np}")
    if ppn is not None and ppn < 1:
        raise MeasureError(f"--ppn must be at least 1, got {ppn}")
    if launcher != "auto":
        get_launcher(launcher)  # an unknown name is refused here, not after a build
    args = bench_args(args)
    hosts, where = None, ""
    if hostfile:
        hosts, where = read_hostfile(hostfile), hostfile
    else:
        found = job_hosts()
        if found:
            hosts, where = found
    here, named = np, ""
    if hosts is not None:
        slots = sum(n for _, n in hosts) if ppn is None else ppn * len(hosts)
        if np > slots:
            raise MeasureError(f"{np} ranks, but the {len(hosts)} hosts of {where} allow {slots}")
        # a host file naming this host ('vm:12') puts ranks here as surely as no host file does
        here, named = ranks_here(hosts, np, ppn), f" ({where} puts them on this host)"
    cpus = usable_cpus()
    if here > cpus * OVERSUBSCRIBE_FACTOR and not oversubscribe:
        raise MeasureError(f"{here} ranks on this host{named}, where the job may use {cpus} CPU{'s' * (cpus != 1)} "
                           f"(its affinity set): more than {OVERSUBSCRIBE_FACTOR} ranks per CPU; "
                           "give --oversubscribe to run it anyway, or --hostfile to spread the ranks")
    out = Path(out)
    if out.is_dir():
        raise MeasureError(f"--out {out} is a directory")
    if not out.parent.is_dir():
        raise MeasureError(f"--out {out}: directory {out.parent} does not exist")
    check_output(out, "--out")   # a symbolic link, a folder that takes no file: refused before the build
    if fabric is not None:
        if hosts is not None:
            unknown = [h for h, _ in hosts if h not in fabric.host_index and h.split(".")[0] not in fabric.host_index]
            if unknown:
                raise MeasureError(f"fabric {fabric.name!r} does not name host {unknown[0]!r} of this job ({where})")
        if "--topo" not in args:
            topo = out.with_name(out.name + ".topo")
            with atomic_open(topo) as fh:
                fh.write("\n".join(topo_lines(fabric)) + "\n")
            args += ["--topo", str(topo)]
        if fabric.dims and "--dims" not in args and not any(t in APP_TESTS for t in args[0].split(",")):
            args += ["--dims", "x".join(str(d) for d in fabric.dims)]
            if fabric.periodic and not all(fabric.periodic):
                args += ["--mesh"]
    check_app_args(args, np)
    mpi = mpi or find_mpi()
    binary, _ = bench_binary(mpi)
    check_args(binary, args)
    # a host file is passed as such; Slurm and PBS lists go to the launcher by name
    return Plan(mpi, binary, np, list(args), out, launcher, None if hostfile else hosts,
                hostfile, ppn, list(launcher_args), oversubscribe)


#: the job's own PYTHONPATH ("" for none) while the supervisor runs with fabscope's
JOB_PYTHONPATH = "FABSCOPE_JOB_PYTHONPATH"


def supervised(argv: Sequence[str], fd: int) -> list[str]:
    """The launcher's command run under :mod:`fabscope.measure.supervise`, watching pipe ``fd``."""
    return [sys.executable, "-m", "fabscope.measure.supervise", str(fd), "--", *argv]


def _supervisor_env(env: dict[str, str]) -> dict[str, str]:
    """The job's environment, with this fabscope first on the supervisor's module path
    (the supervisor gives the launcher the job's own ``PYTHONPATH`` back)."""
    here = str(Path(__file__).resolve().parents[2])
    path = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": here + (os.pathsep + path if path else ""), JOB_PYTHONPATH: path or ""}


def check_args(binary: Path, args: Sequence[str]) -> None:
    """Let the program parse its options (tests, sizes, counts) without starting MPI."""
    try:
        p = subprocess.run([str(binary), *args, "--check-args"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise MeasureError(f"cannot run {binary} to check its options: {err}") from err
    if p.returncode != 0:
        mine = [ln for ln in p.stderr.splitlines() if ln.startswith("fabscope-bench: error:")]
        msg = mine[0].replace("fabscope-bench: error: ", "", 1) if mine else (p.stderr.strip() or f"status {p.returncode}")
        raise MeasureError(msg)


def _count_lines(path: Path) -> tuple[int, str]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return 0, ""
    lines = data.splitlines()
    return len(lines), (lines[-1].decode(errors="replace") if lines else "")


def _keep_whole_lines(path: Path) -> None:
    """Cut a last line that a stopped job left half-written, so the file holds whole lines only."""
    try:
        with open(path, "rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)
    except OSError:
        pass


class _SignalsToExceptions:
    """While a job runs, SIGTERM and SIGHUP to fabscope raise :class:`Stopped`
    (so the job is ended with it); only in the main thread, where Python delivers signals."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __enter__(self) -> "_SignalsToExceptions":
        self.old: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.old[sig] = signal.signal(sig, self._raise)
        return self

    @staticmethod
    def _raise(num: int, frame: object) -> None:
        raise Stopped(f"fabscope received {signal_name(num)}")

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.old.items():
            signal.signal(sig, old)  # type: ignore[arg-type]


#: the lines that are measurements: a file without one holds nothing worth keeping
RESULT_TYPES = frozenset({"pair", "size", "stream"})


def _has_results(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            for line in fh:
                with contextlib.suppress(ValueError, AttributeError):
                    if json.loads(line).get("type") in RESULT_TYPES:
                        return True
    except OSError:
        pass
    return False


def _ranks_line(path: Path) -> dict | None:
    """The program's ``ranks`` line (pids and hosts), from the first lines of its output; None before it."""
    try:
        with open(path, "rb") as fh:
            for _, line in zip(range(8), fh):
                if b'"type":"ranks"' in line and line.endswith(b"\n"):
                    doc = json.loads(line)
                    return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        pass
    return None


def _watch_ranks(path: Path) -> "ExitOrder | bool | None":
    """Watch this host's ranks for the first to end, once the ranks line is there (None: not yet;
    False: nothing to watch here)."""
    ranks = _ranks_line(path)
    if ranks is None:
        return None
    local = this_host_names()
    pids = [int(p) for p, h in zip(ranks.get("pid") or [], ranks.get("host") or [])
            if isinstance(p, int) and isinstance(h, str) and (h in local or h.split(".")[0] in local)]
    if not pids or len(pids) != len(ranks.get("pid") or []):
        return False   # ranks on other hosts: their ends cannot be seen from here
    order = ExitOrder()
    return order if order.watch(pids, comm="fabscope-bench") else False


def _kept(p: Plan, path: Path) -> str:
    """What a failed job leaves, as the end of its message."""
    if p.write_to is not None and not _has_results(path):
        return f"; no measurement finished: {p.out} not written"
    n, _ = _count_lines(path)
    return f"; {p.out} keeps what finished ({n} lines)"


def _last_words(lines: list[str]) -> str:
    """The job's last line of output (its launcher's, or a rank's standard error), as the end of a message
    on a job that was stopped: where a hung job waited, when it says.

    >>> _last_words(["srun: step created\\n", "srun: error: fab-h2: task 1: timed out\\n", "\\n"])
    '; its last output: srun: error: fab-h2: task 1: timed out'
    >>> _last_words([])
    ''
    """
    last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
    return f"; its last output: {last[:300]}" if last else ""


def _start_file(p: Plan) -> Path:
    """The temporary file the program writes, beside ``--out``, created as open() would (umask);
    with the program's ``--append``, it starts as a copy of ``--out``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{p.out.name}.", suffix=".part", dir=p.out.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        if "--append" in p.args and p.out.is_file():
            with open(p.out, "rb") as src, os.fdopen(os.dup(fd), "wb") as dst:
                shutil.copyfileobj(src, dst)
    except OSError as err:
        os.close(fd)
        os.unlink(tmp)
        if err.errno in DISK_FULL:
            raise MeasureError(f"--out {p.out}: {err.strerror} (writing in {p.out.parent})") from None
        raise
    os.close(fd)
    return Path(tmp)


def execute(p: Plan, timeout: float | None = None, progress: Progress | None = None) -> BenchRun:
    """Run the plan; return the run read back, or raise MeasureError with one clear line.

    The job's processes are ended (SIGTERM, then SIGKILL after :data:`GRACE`
    seconds) whenever this returns or raises: timeout, failure, Ctrl-C, SIGTERM.
    ``p.out`` appears at the end (renamed from a temporary file); a failed
    job leaves it only if a measurement finished.
    """
    if p.write_to is not None or str(p.out) == "-":
        return _execute(p, p.write_to or p.out, timeout, progress)
    try:
        lock = Lock(p.out).acquire()
    except OutputError as err:
        raise MeasureError(f"--out {err}") from None
    tmp: Path | None = None
    try:
        tmp = _start_file(p)
        try:
            run = _execute(replace(p, write_to=tmp), tmp, timeout, progress)
        except BaseException:
            if _has_results(tmp):
                _keep_whole_lines(tmp)
                os.replace(tmp, p.out)
            raise
        os.replace(tmp, p.out)
        run.path = str(p.out)
        return run
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        lock.release()


def _execute(p: Plan, path: Path, timeout: float | None, progress: Progress | None) -> BenchRun:
    """Run the job writing ``path``; messages name ``p.out``, where the lines will be."""
    argv = p.argv()
    with _SignalsToExceptions():
        if shutil.which(argv[0]) is None:
            raise MeasureError(f"cannot start {argv[0]}: not found, or not executable")
        # fabscope's death (SIGKILL too) closes `alive`'s write end: the supervisor then ends the job
        watch, alive = os.pipe()
        proc: subprocess.Popen | None = None
        job: JobProcesses | None = None
        err_lines: list[str] = []
        done = False
        order: ExitOrder | bool | None = None   # which local rank ends first, once the ranks line names them
        try:
            # from the launch on, a Ctrl-C ends the job before fabscope leaves: every statement from the
            # launch to the loop is inside this try (a Ctrl-C between the launch and the try, or while
            # the reader started, left the job to the supervisor, ended after fabscope had said it was
            # interrupted; one during the launch itself closes `alive` below, and the supervisor, seeing
            # fabscope gone, starts no launcher)
            try:
                # Hydra reports a rank that died on standard output: read both, as one stream
                proc = subprocess.Popen(supervised(argv, watch), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, stdin=subprocess.DEVNULL, env=_supervisor_env(p.env()),
                                        start_new_session=True, pass_fds=(watch,))
            except OSError as err:
                raise MeasureError(f"cannot start {argv[0]}: {err.strerror}") from err
            finally:
                os.close(watch)
            job = JobProcesses(proc)
            reader = threading.Thread(target=lambda: err_lines.extend(proc.stdout or []), daemon=True)
            start = time.monotonic()
            reader.start()
            while proc.poll() is None:
                job.refresh()
                if order is None:
                    order = _watch_ranks(path)
                if timeout is not None and time.monotonic() - start > timeout:
                    job.stop(GRACE)
                    _keep_whole_lines(path)
                    reader.join(2)
                    raise MeasureError(f"the job ran over {timeout:g} s and was stopped{_kept(p, path)}"
                                       f"{_last_words(err_lines)}")
                if progress:
                    progress(*_count_lines(path))
                time.sleep(0.1)
            done = True
        except Stopped as err:
            if job is not None:
                job.stop(GRACE)
            _keep_whole_lines(path)
            raise Stopped(f"{err}: stopped the job{_kept(p, path)}") from None
        finally:
            if not done:  # Ctrl-C, or anything else: the job ends with fabscope
                if job is None and proc is not None:        # interrupted right after the launch
                    job = JobProcesses(proc)
                if job is not None:
                    job.stop(GRACE)
                _keep_whole_lines(path)
                os.close(alive)
        left = job.stop(GRACE)  # ranks a launcher left running after it exited
        os.close(alive)
        reader.join(5)
    if left:
        raise MeasureError(f"{len(left)} processes of the job (pids {', '.join(str(k[0]) for k in left[:5])}) "
                           "survived SIGKILL")
    if proc.returncode != 0:
        _keep_whole_lines(path)
        mine = [ln.strip() for ln in err_lines if ln.startswith("fabscope-bench: error:")]
        if mine:
            msg = mine[0].replace("fabscope-bench: error: ", "", 1)
            if msg.startswith("cannot write the output: "):   # a full disk, a quota: name the file and folder
                why = msg[len("cannot write the output: "):]
                raise MeasureError(f"--out {p.out}: {why} (writing in {p.out.parent}){_kept(p, path)}")
            raise MeasureError(msg)
        try:
            ranks = read_run(path).ranks
        except FabscopeError:  # no file, or not yet a run: it tells nothing about the ranks
            ranks = {}
        first = order.wait(1.0) if isinstance(order, ExitOrder) else None
        who = dead_rank(err_lines, ranks, first)
        if who is None:  # the launcher did not say; the rank seen gone first is the likely cause
            pids = list(ranks.get("pid") or [])
            first = next((pid for pid in job.ended if pid in pids), None)
            if first is not None:
                r = pids.index(first)
                who = f"rank {r} on host {ranks['host'][r]} ended first (the launcher did not say how)"
        kept = _kept(p, path)
        if who:
            raise MeasureError(f"{who}; the job was stopped{kept}")
        last = next((ln.strip() for ln in reversed(err_lines) if ln.strip().strip("=").strip()), "no message")
        raise MeasureError(f"{os.path.basename(argv[0])} exited with status {proc.returncode}: {last}{kept}")
    return read_run(path)


def measure(args: Sequence[str], np: int, out: str | os.PathLike[str], timeout: float | None = None,
            progress: Progress | None = None, **kw) -> BenchRun:  # type: ignore[no-untyped-def]
    """Plan and run one job: ``measure(["pingpong"], np=2, out="run.jsonl")``."""
    return execute(plan(args, np, out, **kw), timeout=timeout, progress=progress)
