"""Launch fabscope-bench and read what it wrote.

Python only builds the command line, starts the job, follows the output file
for progress and reads it at the end; the timing is all in C.
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

from fabscope.errors import MeasureError
from fabscope.fabric.model import Fabric
from fabscope.measure.build import bench_binary
from fabscope.measure.hostlists import job_hosts, read_hostfile
from fabscope.measure.launchers import Job, get_launcher, launcher_for
from fabscope.measure.mpi import MPIInstall, find_mpi
from fabscope.measure.parse import BenchRun, read_run
from fabscope.units import parse_size

SIZE_OPTIONS = ("--size", "--min-size", "--max-size")
Progress = Callable[[int, str], None]


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

    def _launcher(self):  # type: ignore[no-untyped-def]
        if self.launcher == "auto":
            return launcher_for(self.mpi.vendor, self.mpi.mpiexec)
        exe = self.mpi.mpiexec if self.launcher in ("mpich", "openmpi", "mpiexec", "mpirun") else None
        return get_launcher(self.launcher, exe)

    def argv(self) -> list[str]:
        oversub = self.hosts is None and self.hostfile is None and self.np > (os.cpu_count() or 1)
        job = Job(np=self.np, program=[str(self.binary), *self.args, "--out", str(self.out)],
                  hosts=self.hosts, hostfile=self.hostfile, ppn=self.ppn, oversubscribe=oversub,
                  extra=tuple(self.launcher_args))
        return self._launcher().command(job)

    def env(self) -> dict[str, str]:
        return {**os.environ, **self._launcher().env()}


def plan(args: Sequence[str], np: int, out: str | os.PathLike[str], launcher: str = "auto",
         hostfile: str | None = None, ppn: int | None = None, fabric: Fabric | None = None,
         mpi: MPIInstall | None = None, launcher_args: Sequence[str] = ()) -> Plan:
    """Check the request against the job's hosts and the fabric, build the program, return the plan."""
    from fabscope.measure.analysis import topo_lines

    if np < 1:
        raise MeasureError(f"--np must be at least 1, got {np}")
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
    out = Path(out)
    if fabric is not None:
        if hosts is not None:
            unknown = [h for h, _ in hosts if h not in fabric.host_index and h.split(".")[0] not in fabric.host_index]
            if unknown:
                raise MeasureError(f"fabric {fabric.name!r} does not name host {unknown[0]!r} of this job ({where})")
        if "--topo" not in args:
            topo = out.with_name(out.name + ".topo")
            topo.write_text("\n".join(topo_lines(fabric)) + "\n")
            args += ["--topo", str(topo)]
        if fabric.dims and "--dims" not in args:
            args += ["--dims", "x".join(str(d) for d in fabric.dims)]
            if fabric.periodic and not all(fabric.periodic):
                args += ["--mesh"]
    mpi = mpi or find_mpi()
    binary, _ = bench_binary(mpi)
    # a host file is passed as such; Slurm and PBS lists go to the launcher by name
    return Plan(mpi, binary, np, list(args), out, launcher, None if hostfile else hosts,
                hostfile, ppn, list(launcher_args))


def _count_lines(path: Path) -> tuple[int, str]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return 0, ""
    lines = data.splitlines()
    return len(lines), (lines[-1].decode(errors="replace") if lines else "")


def execute(p: Plan, timeout: float | None = None, progress: Progress | None = None) -> BenchRun:
    """Run the plan; return the run read back, or raise MeasureError with one clear line."""
    argv = p.argv()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=p.env(), start_new_session=True)
    except OSError as err:
        raise MeasureError(f"cannot start {argv[0]}: {err.strerror}") from err
    err_lines: list[str] = []
    reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr or []), daemon=True)
    reader.start()
    start = time.monotonic()
    try:
        while proc.poll() is None:
            if timeout is not None and time.monotonic() - start > timeout:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                n, _ = _count_lines(p.out)
                raise MeasureError(f"the job ran over {timeout:g} s and was stopped; "
                                   f"{p.out} keeps what finished ({n} lines)")
            if progress:
                progress(*_count_lines(p.out))
            time.sleep(0.2)
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGTERM)
        raise
    reader.join(5)
    if proc.returncode != 0:
        mine = [ln.strip() for ln in err_lines if ln.startswith("fabscope-bench: error:")]
        if mine:
            raise MeasureError(mine[0].replace("fabscope-bench: error: ", "", 1))
        last = next((ln.strip() for ln in reversed(err_lines) if ln.strip()), "no message")
        raise MeasureError(f"{os.path.basename(argv[0])} exited with status {proc.returncode}: {last}")
    return read_run(p.out)


def measure(args: Sequence[str], np: int, out: str | os.PathLike[str], timeout: float | None = None,
            progress: Progress | None = None, **kw) -> BenchRun:  # type: ignore[no-untyped-def]
    """Plan and run one job: ``measure(["pingpong"], np=2, out="run.jsonl")``."""
    return execute(plan(args, np, out, **kw), timeout=timeout, progress=progress)
