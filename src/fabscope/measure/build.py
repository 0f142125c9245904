"""Build ``fabscope-bench`` once per source and MPI, and cache it.

The binary lives under ``$FABSCOPE_CACHE`` (default
``$XDG_CACHE_HOME/fabscope`` or ``~/.cache/fabscope``) in a folder named by a
hash of the C sources, the compile flags and the MPI's identity (its
wrapper, the wrapper's compile line and the launcher's version), so editing
a source or switching MPI rebuilds it, and nothing else does.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from fabscope.errors import MeasureError
from fabscope.measure.mpi import MPIInstall

CFLAGS = ["-O2", "-g", "-std=gnu11", "-Wall"]
BINARY = "fabscope-bench"


def source_dir() -> Path:
    """``csrc/`` of this checkout, or ``$FABSCOPE_CSRC``."""
    env = os.environ.get("FABSCOPE_CSRC")
    cands = [Path(env)] if env else []
    here = Path(__file__).resolve()
    cands += [here.parents[3] / "csrc", here.parents[1] / "csrc"]
    for c in cands:
        if (c / "main.c").is_file():
            return c
    raise MeasureError("cannot find the C sources of fabscope-bench (csrc/); set $FABSCOPE_CSRC")


def sources(src: Path | None = None) -> list[Path]:
    src = src or source_dir()
    return sorted(p for p in src.iterdir() if p.suffix in (".c", ".h"))


def cache_root() -> Path:
    if os.environ.get("FABSCOPE_CACHE"):
        return Path(os.environ["FABSCOPE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fabscope"


def build_key(mpi: MPIInstall, src: Path | None = None) -> str:
    h = hashlib.sha256()
    for p in sources(src):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(" ".join(CFLAGS).encode() + b"\0" + mpi.identity().encode())
    return h.hexdigest()[:20]


def bench_binary(mpi: MPIInstall, force: bool = False) -> tuple[Path, bool]:
    """Path of the built program and whether it was built just now."""
    src = source_dir()
    folder = cache_root() / build_key(mpi, src)
    exe = folder / BINARY
    if exe.is_file() and os.access(exe, os.X_OK) and not force:
        return exe, False
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".build-", dir=folder)
    os.close(fd)
    cmd = [mpi.mpicc, *CFLAGS, "-o", tmp, *[str(p) for p in sources(src) if p.suffix == ".c"], "-lm"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except OSError as err:
        os.unlink(tmp)
        raise MeasureError(f"cannot run {mpi.mpicc}: {err.strerror}") from err
    if p.returncode != 0:
        os.unlink(tmp)
        first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])
        raise MeasureError(f"building fabscope-bench with {mpi.mpicc} failed: {first}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, exe)  # atomic: a concurrent build never sees a half-written binary
    return exe, True
