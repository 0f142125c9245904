"""Launch fabscope-bench and read what it wrote.

Python only builds the command line, starts the job, follows the output file
for progress and reads it at the end; the timing is all in C.

Everything is checked before anything is launched: fabscope's own options,
the host list, oversubscription of this host, and the program's options
(``fabscope-bench --check-args`` parses them without starting MPI).  However
the run ends (done, failed, ``--timeout``, Ctrl-C, SIGTERM from a batch
system), no process of the job is left behind: see :mod:`.processes`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from fabscope.atomic import atomic_open
from fabscope.errors import FabscopeError, MeasureError
from fabscope.fabric.model import Fabric
from fabscope.measure.build import bench_binary
from fabscope.measure.failures import dead_rank, signal_name
from fabscope.measure.hostlists import job_hosts, read_hostfile
from fabscope.measure.launchers import Job, get_launcher, launcher_for
from fabscope.measure.mpi import MPIInstall, find_mpi
from fabscope.measure.parse import BenchRun, read_run
from fabscope.measure.processes import JobProcesses
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

    def _launcher(self):  # type: ignore[no-untyped-def]
        if self.launcher == "auto":
            return launcher_for(self.mpi.vendor, self.mpi.mpiexec)
        exe = self.mpi.mpiexec if self.launcher in ("mpich", "openmpi", "mpiexec", "mpirun") else None
        return get_launcher(self.launcher, exe)

    def argv(self) -> list[str]:
        oversub = self.oversubscribe or (self.hosts is None and self.hostfile is None and self.np > usable_cpus())
        launcher = self._launcher()
        extra = list(self.launcher_args)
        if (launcher.name == "srun" and self.mpi.vendor == "mpich"
                and not any(a.startswith("--mpi") for a in extra)):
            extra.insert(0, "--mpi=pmi2")  # MPICH's ranks take their PMI from Slurm's pmi2 plugin
        job = Job(np=self.np, program=[str(self.binary), *self.args, "--out", str(self.out)],
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
    if hosts is not None:
        slots = sum(n for _, n in hosts) if ppn is None else ppn * len(hosts)
        if np > slots:
            raise MeasureError(f"{np} ranks, but the {len(hosts)} hosts of {where} allow {slots}")
    else:
        cpus = usable_cpus()
        if np > cpus * OVERSUBSCRIBE_FACTOR and not oversubscribe:
            raise MeasureError(f"{np} ranks on this host, where the job may use {cpus} CPU{'s' * (cpus != 1)} "
                               f"(its affinity set): more than {OVERSUBSCRIBE_FACTOR} ranks per CPU; "
                               "give --oversubscribe to run it anyway, or --hostfile to spread the ranks")
    out = Path(out)
    if out.is_dir():
        raise MeasureError(f"--out {out} is a directory")
    if not out.parent.is_dir():
        raise MeasureError(f"--out {out}: directory {out.parent} does not exist")
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
        if fabric.dims and "--dims" not in args:
            args += ["--dims", "x".join(str(d) for d in fabric.dims)]
            if fabric.periodic and not all(fabric.periodic):
                args += ["--mesh"]
    mpi = mpi or find_mpi()
    binary, _ = bench_binary(mpi)
    check_args(binary, args)
    # a host file is passed as such; Slurm and PBS lists go to the launcher by name
    return Plan(mpi, binary, np, list(args), out, launcher, None if hostfile else hosts,
                hostfile, ppn, list(launcher_args), oversubscribe)


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


def execute(p: Plan, timeout: float | None = None, progress: Progress | None = None) -> BenchRun:
    """Run the plan; return the run read back, or raise MeasureError with one clear line.

    The job's processes are ended (SIGTERM, then SIGKILL after :data:`GRACE`
    seconds) whenever this returns or raises: timeout, failure, Ctrl-C, SIGTERM.
    """
    argv = p.argv()
    with _SignalsToExceptions():
        try:
            # Hydra reports a rank that died on standard output: read both, as one stream
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    stdin=subprocess.DEVNULL, env=p.env(), start_new_session=True)
        except OSError as err:
            raise MeasureError(f"cannot start {argv[0]}: {err.strerror}") from err
        job = JobProcesses(proc)
        err_lines: list[str] = []
        reader = threading.Thread(target=lambda: err_lines.extend(proc.stdout or []), daemon=True)
        reader.start()
        start = time.monotonic()
        done = False
        try:
            while proc.poll() is None:
                job.refresh()
                if timeout is not None and time.monotonic() - start > timeout:
                    job.stop(GRACE)
                    _keep_whole_lines(p.out)
                    n, _ = _count_lines(p.out)
                    raise MeasureError(f"the job ran over {timeout:g} s and was stopped; "
                                       f"{p.out} keeps what finished ({n} lines)")
                if progress:
                    progress(*_count_lines(p.out))
                time.sleep(0.1)
            done = True
        except Stopped as err:
            job.stop(GRACE)
            _keep_whole_lines(p.out)
            n, _ = _count_lines(p.out)
            raise Stopped(f"{err}: stopped the job; {p.out} keeps what finished ({n} lines)") from None
        finally:
            if not done:  # Ctrl-C, or anything else: the job ends with fabscope
                job.stop(GRACE)
                _keep_whole_lines(p.out)
        left = job.stop(GRACE)  # ranks a launcher left running after it exited
        reader.join(5)
    if left:
        raise MeasureError(f"{len(left)} processes of the job (pids {', '.join(str(k[0]) for k in left[:5])}) "
                           "survived SIGKILL")
    if proc.returncode != 0:
        _keep_whole_lines(p.out)
        mine = [ln.strip() for ln in err_lines if ln.startswith("fabscope-bench: error:")]
        if mine:
            raise MeasureError(mine[0].replace("fabscope-bench: error: ", "", 1))
        try:
            ranks = read_run(p.out).ranks
        except FabscopeError:  # no file, or not yet a run: it tells nothing about the ranks
            ranks = {}
        who = dead_rank(err_lines, ranks)
        if who is None:  # the launcher did not say; the rank seen gone first is the likely cause
            pids = list(ranks.get("pid") or [])
            first = next((pid for pid in job.ended if pid in pids), None)
            if first is not None:
                r = pids.index(first)
                who = f"rank {r} on host {ranks['host'][r]} ended first (the launcher did not say how)"
        n, _ = _count_lines(p.out)
        kept = f"; {p.out} keeps what finished ({n} lines)" if n else ""
        if who:
            raise MeasureError(f"{who}; the job was stopped{kept}")
        last = next((ln.strip() for ln in reversed(err_lines) if ln.strip().strip("=").strip()), "no message")
        raise MeasureError(f"{os.path.basename(argv[0])} exited with status {proc.returncode}: {last}{kept}")
    return read_run(p.out)


def measure(args: Sequence[str], np: int, out: str | os.PathLike[str], timeout: float | None = None,
            progress: Progress | None = None, **kw) -> BenchRun:  # type: ignore[no-untyped-def]
    """Plan and run one job: ``measure(["pingpong"], np=2, out="run.jsonl")``."""
    return execute(plan(args, np, out, **kw), timeout=timeout, progress=progress)
