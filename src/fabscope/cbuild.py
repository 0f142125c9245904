"""C sources shipped with the package, built with the system C compiler on first use and loaded by ctypes.

Each shared library goes to ``$XDG_CACHE_HOME/fabscope`` (default
``~/.cache/fabscope``) under a name holding the source's hash, so an edited
source is rebuilt.  A library built before loads without looking for a
compiler (nor importing what building takes).  Without a compiler the caller
falls back to its pure-Python reference and can say why (the second value
returned).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import time
from collections.abc import Sequence

__all__ = ["CFLAGS", "cache_dir", "load_library"]

#: how every library is compiled, hashed into its name with its sources (a library built with other flags is
#: another file).  -O3 rather than -O2: the dynamic engine takes 0.89x the CPU on a 13x13x13 torus's rounds
#: and on Itasca's, and a torus night's whole diagnosis 0.91-0.95x, the same bits (``bench/bench_cflags.py``;
#: docs/benchmarks.md).  Portable: no -march (one cached build serves every CPU of a cluster sharing a home
#: folder; unitgains.c picks AVX2 itself at run time), and no -ffast-math, so every sum is added in the
#: order the source writes it, as the Python references do.
CFLAGS = ("-O3",)


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fabscope")


def sweep_stale(folder: str | os.PathLike[str], prefix: str, age: float = 3600.0) -> None:
    """Remove ``prefix*`` temporary files older than ``age`` seconds from ``folder``: what a build
    killed outright (SIGKILL, a power cut) could not remove itself.

    >>> import tempfile, time
    >>> d = tempfile.mkdtemp(); old = os.path.join(d, ".build-x"); open(old, "w").close()
    >>> os.utime(old, (time.time() - 7200,) * 2); sweep_stale(d, ".build-"); os.listdir(d)
    []
    """
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.startswith(prefix) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > age:
                        os.unlink(entry.path)


def load_library(source: str | Sequence[str], stem: str,
                 flags: Sequence[str] | None = None) -> tuple[ctypes.CDLL | None, str]:
    """``(library, "")`` built from ``source`` with ``flags`` (:data:`CFLAGS` as it is at the call: a bench
    sets it to compare builds), cached by their hash, or ``(None, why not)``.

    ``source`` may be several files: the ``.c`` ones are compiled into one library, the others
    (headers) only hashed, so that an edit to any of them rebuilds it."""
    sources = [source] if isinstance(source, str) else list(source)
    flags = CFLAGS if flags is None else tuple(flags)
    digest = hashlib.sha256(" ".join(flags).encode() + b"\0")       # flags first: another build, another name
    for i, path in enumerate(sources):
        try:
            with open(path, "rb") as fh:    # one file hashes as it did alone; each further one by name too
                digest.update((b"\0" + os.path.basename(path).encode() + b"\0" if i else b"") + fh.read())
        except OSError as err:
            return None, f"cannot read {path}: {err.strerror}"
    tag = digest.hexdigest()[:16]
    out_dir = cache_dir()
    lib = os.path.join(out_dir, f"{stem}-{tag}.so")
    if not os.path.exists(lib):
        import shutil  # only to build: a cached library loads without them (shutil alone took 2-3 ms)
        import subprocess
        import tempfile

        cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
        if not cc:
            return None, "no C compiler (gcc or cc) on PATH"

        tmp = None
        try:
            os.makedirs(out_dir, exist_ok=True)
            sweep_stale(out_dir, f".{stem}-")
            fd, tmp = tempfile.mkstemp(prefix=f".{stem}-", suffix=".so", dir=out_dir)
            os.close(fd)
            p = subprocess.run([cc, *flags, "-shared", "-fPIC", "-o", tmp,
                                *[s for s in sources if s.endswith(".c")], "-lm"],
                               capture_output=True, text=True, timeout=120)
            if p.returncode:
                return None, f"{cc} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}"
            os.replace(tmp, lib)
        except (OSError, subprocess.TimeoutExpired) as err:
            return None, f"cannot build {stem} in {out_dir}: {err}"
        finally:   # Ctrl-C and SIGTERM included: no half-built library is left behind
            if tmp is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
    try:
        return ctypes.CDLL(lib), ""
    except OSError as err:
        return None, f"cannot load {lib}: {err}"
