"""``fabscope profile``: one command from an MPI program to the matrix ``map --comm`` takes.

The program's MPI is read first (:func:`fabscope.measure.mpi.program_mpi`); the PMPI library
(``csrc/pmpi``) is built with a compiler wrapper of that very MPI: one whose build links the
same MPI library file as the program (a library built against another MPI would load a second
MPI into every rank), cached like fabscope-bench by a hash of the sources and the wrapper.  The
program then runs with the library preloaded in its ranks only, passed as its launcher passes
variables to ranks (:meth:`fabscope.measure.launchers.Launcher.rank_env`: Hydra's ``-genv``,
Open MPI's ``-x``), on a testbed (:func:`fabscope.testbed.run.run`) or with the MPI's own
launcher here.  Rank 0 writes the matrix at ``MPI_Finalize``: bytes in ``OUT``, message counts
in ``OUT`` with ``.msgs.mtx``.

>>> os.path.basename(matrices("/tmp/app.mtx")[1])
'app.msgs.mtx'
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from fabscope.cbuild import sweep_stale
from fabscope.errors import MeasureError
from fabscope.measure.build import BUILD_TIMEOUT, cache_root, source_dir
from fabscope.measure.elfdeps import closure
from fabscope.measure.mpi import ProgramMPI, compile_line, family_launcher, find_mpi, program_mpi

LIBRARY = "libfabscope_pmpi.so"
#: compiler wrappers tried per family after the MPI :func:`find_mpi` finds (Debian's suffixed ones first)
COMPILERS = {"openmpi": ("mpicc.openmpi", "mpicc"), "mpich": ("mpicc.mpich", "mpicc")}


def matrices(out: str) -> tuple[str, str]:
    """The two files the library writes for ``out``: bytes, and message counts beside it."""
    stem = out[:-4] if out.endswith(".mtx") else out
    return out, stem + ".msgs.mtx"


def pmpi_sources() -> list[Path]:
    src = source_dir() / "pmpi"
    return sorted(p for p in src.iterdir() if p.suffix in (".c", ".h"))


def _compilers(pm: ProgramMPI) -> list[str]:
    out = []
    with contextlib.suppress(MeasureError):
        out.append(find_mpi().mpicc)
    out += [os.path.join(sys.prefix, "bin", "mpicc")] if pm.family == "mpich" else []
    out += [p for n in COMPILERS[pm.family] if (p := shutil.which(n))]
    return list(dict.fromkeys(os.path.abspath(p) for p in out if os.access(p, os.X_OK)))


def _build(cc: str) -> Path:
    h = hashlib.sha256()
    for p in pmpi_sources():
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(os.path.realpath(cc).encode() + b"\0" + compile_line(cc).encode())
    folder = cache_root() / f"pmpi-{h.hexdigest()[:20]}"
    lib = folder / LIBRARY
    if lib.is_file():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    sweep_stale(folder, ".build-")
    fd, tmp = tempfile.mkstemp(prefix=".build-", dir=folder)
    os.close(fd)
    cmd = [cc, "-O2", "-Wall", "-fPIC", "-shared", "-o", tmp, *[str(p) for p in pmpi_sources() if p.suffix == ".c"]]
    try:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise MeasureError(f"building the PMPI library with {cc}: {err}") from None
        if p.returncode != 0:
            first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])
            raise MeasureError(f"building the PMPI library with {cc} failed: {first}")
        os.replace(tmp, lib)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return lib


def pmpi_library(pm: ProgramMPI) -> Path:
    """The PMPI library built against the MPI library ``pm.library`` the program loads; :class:`MeasureError`
    naming the wrappers tried when none of this machine's builds against it."""
    if pm.family == "none" or pm.library is None:
        raise MeasureError(f"profiling needs the program's MPI library, read from its ELF dependencies "
                           f"({pm.label}, {pm.source})")
    want = os.path.realpath(pm.library)
    tried = []
    for cc in _compilers(pm):
        try:
            lib = _build(cc)
        except MeasureError as err:
            tried.append(f"{cc} ({err})")
            continue
        if any(p and os.path.realpath(p) == want for p in closure(str(lib)).values()):
            return lib
        tried.append(cc)
    raise MeasureError(f"no MPI compiler wrapper here builds against the program's {pm.source}: tried "
                       f"{', '.join(tried) or 'none found'}; set $FABSCOPE_MPICC to that MPI's mpicc")


def profile(argv: Sequence[str], out: str, testbed: str | None = None, np: int | None = None,
            hostfile: str | None = None, placement: str | None = None, ppn: int | None = None,
            timeout: float | None = None, mpi: str | None = None,
            say: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> int:
    """Run ``argv`` under the PMPI library, writing ``out``; the program's exit status."""
    from fabscope.atomic import check_outputs
    from fabscope.testbed.run import program_path

    argv = list(argv[1:] if argv and argv[0] == "--" else argv)
    exe = program_path(argv)
    out = os.path.abspath(out)
    check_outputs(dict(zip(("-o", "-o (counts)"), matrices(out))))
    pm = program_mpi(exe, mpi)
    lib = pmpi_library(pm)
    env = {"LD_PRELOAD": str(lib), "FABSCOPE_PMPI_OUT": out}
    for f in matrices(out):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f)        # a matrix of an earlier run is not taken for this one's
    say(f"fabscope profile: {os.path.basename(exe)} is built with {pm.label} ({pm.source}); PMPI library {lib}")
    if testbed:
        from fabscope.testbed.run import run

        status = run(testbed, [exe, *argv[1:]], hostfile=hostfile, placement=placement, ppn=ppn, np=np,
                     timeout=timeout, rank_env=env, pm=pm, say=say)
    else:
        status = _run_here(pm, exe, argv[1:], env, np or 2, hostfile, timeout, say)
    if status == 0 and not os.path.isfile(out):
        raise MeasureError(f"{os.path.basename(exe)} ended without writing {out}: did it call MPI_Finalize?")
    if status == 0:
        say(f"wrote {out} and {matrices(out)[1]}; map it: fabscope map --comm {out} --fabric {testbed or 'FABRIC'}")
    return status


def _run_here(pm: ProgramMPI, exe: str, args: Sequence[str], env: dict[str, str], np: int, hostfile: str | None,
              timeout: float | None, say: Callable[[str], None]) -> int:
    """The program started by its MPI's own launcher (off a testbed), under the job supervisor."""
    from fabscope.measure.launchers import Job, get_launcher
    from fabscope.measure.runner import usable_cpus
    from fabscope.testbed.run import OWN_ABORT, supervise_job

    launcher = get_launcher(pm.family, family_launcher(pm))
    job = Job(np=np, program=[exe, *args], hostfile=hostfile, oversubscribe=hostfile is None and np > usable_cpus(),
              extra=tuple(launcher.rank_env(env)))
    folder = tempfile.mkdtemp(prefix=".fabscope-profile.")
    try:
        return supervise_job(launcher.command(job), folder, timeout, say, os.path.basename(exe), launcher.env(),
                             own_abort=OWN_ABORT if pm.family == "openmpi" else 0.0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
