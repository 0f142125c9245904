"""Build ``fabscope-bench`` once per source and MPI, and cache it.

The binary lives under ``$FABSCOPE_CACHE`` (default
``$XDG_CACHE_HOME/fabscope`` or ``~/.cache/fabscope``) in a folder named by a
hash of the C sources, the compile flags and the MPI's identity (its
wrapper, the wrapper's compile line and the launcher's version), so editing
a source or switching MPI rebuilds it, and nothing else does.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from fabscope.cbuild import sweep_stale
from fabscope.errors import MeasureError
from fabscope.measure.mpi import MPIInstall

CFLAGS = ["-O2", "-g", "-std=gnu11", "-Wall"]
BINARY = "fabscope-bench"


def source_dir() -> Path:
    """The C sources: ``$FABSCOPE_CSRC``, else ``fabscope/csrc`` inside the
    installed package (package data of the wheel; in a checkout a link to the
    top-level ``csrc/``), else ``csrc/`` of the checkout."""
    env = os.environ.get("FABSCOPE_CSRC")
    cands = [Path(env)] if env else []
    here = Path(__file__).resolve().parent
    cands += [here.parent / "csrc", here.parents[2] / "csrc"]
    for c in cands:
        if (c / "main.c").is_file():
            return c
    raise MeasureError(f"cannot find the C sources of fabscope-bench (looked in {', '.join(map(str, cands))}); "
                       "reinstall fabscope or set $FABSCOPE_CSRC")


def sources(src: Path | None = None) -> list[Path]:
    src = src or source_dir()
    return sorted(p for p in src.iterdir() if p.suffix in (".c", ".h"))


def cache_root() -> Path:
    if os.environ.get("FABSCOPE_CACHE"):
        return Path(os.environ["FABSCOPE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fabscope"


def defines(mpi: MPIInstall) -> list[str]:
    r"""``-D`` flags: the program records which compiler wrapper built it.

    >>> print(defines(MPIInstall('/opt/my "mpi"/mpicc', "x", "PATH", "mpich", "4"))[0])
    -DFB_MPICC="/opt/my \"mpi\"/mpicc"
    """
    cc = mpi.mpicc.replace("\\", "\\\\").replace('"', '\\"')
    return [f'-DFB_MPICC="{cc}"']


def build_key(mpi: MPIInstall, src: Path | None = None) -> str:
    h = hashlib.sha256()
    for p in sources(src):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(" ".join(CFLAGS + defines(mpi)).encode() + b"\0" + mpi.identity().encode())
    return h.hexdigest()[:20]


#: seconds a build may take
BUILD_TIMEOUT = 300


def bench_binary(mpi: MPIInstall, force: bool = False) -> tuple[Path, bool]:
    """Path of the built program and whether it was built just now."""
    src = source_dir()
    folder = cache_root() / build_key(mpi, src)
    exe = folder / BINARY
    if exe.is_file() and os.access(exe, os.X_OK) and not force:
        return exe, False
    folder.mkdir(parents=True, exist_ok=True)
    sweep_stale(folder, ".build-")
    fd, tmp = tempfile.mkstemp(prefix=".build-", dir=folder)
    os.close(fd)
    cmd = [mpi.mpicc, *CFLAGS, *defines(mpi), "-o", tmp, *[str(p) for p in sources(src) if p.suffix == ".c"], "-lm"]
    try:   # however the build ends (failure, Ctrl-C, SIGTERM, timeout), its temporary file goes
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        except OSError as err:
            raise MeasureError(f"cannot run {mpi.mpicc}: {err.strerror}") from err
        except subprocess.TimeoutExpired:
            raise MeasureError(f"building fabscope-bench with {mpi.mpicc} took over {BUILD_TIMEOUT} s") from None
        if p.returncode != 0:
            first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])
            raise MeasureError(f"building fabscope-bench with {mpi.mpicc} failed: {first}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, exe)  # atomic: a concurrent build never sees a half-written binary
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return exe, True
