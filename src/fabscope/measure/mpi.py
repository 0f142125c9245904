"""Finding MPI: one place, one documented order.

:func:`find_mpi` looks for an MPI C compiler wrapper and its launcher in this
order, and says which rule matched (``MPIInstall.source``):

1. ``$FABSCOPE_MPICC`` (and ``$FABSCOPE_MPIEXEC``), for a site that wants a
   particular MPI for fabscope only;
2. ``$MPICC`` (and ``$MPIEXEC``), the usual convention of build tools;
3. ``mpicc`` on ``$PATH`` outside this Python environment: the site's MPI,
   as ``module load`` puts it there; on a cluster this is the one to measure;
4. ``mpicc`` of the PyPI ``mpich`` wheel inside this Python environment
   (``pip install mpich``): needs no root, the default on a laptop.

The launcher is the ``mpiexec`` (or ``mpirun``) beside the compiler unless
``$FABSCOPE_MPIEXEC``/``$MPIEXEC`` names one.

>>> m = MPIInstall("/x/mpicc", "/x/mpiexec", "MPICC", "mpich", "MPICH 4.0.2")
>>> m.vendor, m.is_wheel
('mpich', False)
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Mapping

from fabscope.errors import MeasureError

SOURCES = ("FABSCOPE_MPICC", "MPICC", "PATH", "mpich wheel")

WHEEL_NOTE = ("the PyPI mpich wheel's wait loop calls sched_yield() after every empty poll "
              "(~1 us per message); fabscope-bench spins instead when no host runs more ranks "
              "than CPUs in the job's affinity sets (--yield auto), so its small-message figures match a site MPICH")


@dataclass(frozen=True)
class MPIInstall:
    mpicc: str
    mpiexec: str
    source: str
    vendor: str  # "mpich", "openmpi", "intel" or "unknown"
    version: str

    @property
    def is_wheel(self) -> bool:
        return self.source == "mpich wheel"

    def identity(self) -> str:
        """What the built program depends on: the compiler wrapper, its flags and version."""
        h = hashlib.sha256()
        for part in (os.path.realpath(self.mpicc), self.version, compile_line(self.mpicc)):
            h.update(part.encode() + b"\0")
        return h.hexdigest()[:16]


def _run(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (p.stdout + p.stderr).strip()


@functools.lru_cache(maxsize=None)
def compile_line(mpicc: str) -> str:
    """The wrapper's underlying compile line (``-show`` for MPICH, ``--showme`` for Open MPI)."""
    out = _run([mpicc, "-show"])
    return out if out and "error" not in out.lower() else _run([mpicc, "--showme"])


def vendor_of(version_text: str) -> str:
    """Name the MPI from the launcher's ``--version`` text.

    >>> vendor_of("mpiexec (Open MPI) 4.1.4"), vendor_of("HYDRA build details:\\n Version: 4.0.2")
    ('openmpi', 'mpich')
    """
    t = version_text.lower()
    if "open mpi" in t or "open-mpi" in t or "openrte" in t:
        return "openmpi"
    if "intel(r) mpi" in t:
        return "intel"
    if "hydra" in t or "mpich" in t:
        return "mpich"
    return "unknown"


def _beside(mpicc: str) -> str | None:
    """The launcher in the compiler's folder; a suffixed compiler (Debian's
    ``mpicc.mpich``) takes the launcher with the same suffix (``mpiexec.mpich``).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for n in ("mpicc.mpich", "mpiexec", "mpiexec.mpich"):
    ...     (d / n).touch(mode=0o755)
    >>> os.path.basename(_beside(str(d / "mpicc.mpich")))
    'mpiexec.mpich'
    """
    d = os.path.dirname(os.path.abspath(mpicc))
    base = os.path.basename(mpicc)
    suffix = base[len("mpicc"):] if base.startswith("mpicc") else ""
    names = [n + suffix for n in ("mpiexec", "mpirun")] if suffix else []
    for name in names + ["mpiexec", "mpirun"]:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def _which(name: str, path: str) -> str | None:
    return shutil.which(name, path=path) if path else None


@dataclass(frozen=True)
class Candidate:
    """One rule of the discovery order and what it found (``path`` None: nothing)."""

    source: str
    path: str | None
    note: str


def candidates(env: Mapping[str, str] | None = None, prefix: str | None = None) -> list[Candidate]:
    """What each rule of the discovery order finds, in order; the first with a path is used.

    >>> [c.source for c in candidates({"PATH": ""}, prefix="/nonexistent")]
    ['FABSCOPE_MPICC', 'MPICC', 'PATH', 'mpich wheel']
    """
    env = os.environ if env is None else env
    prefix = os.path.realpath(prefix or sys.prefix)
    own_bin = os.path.join(prefix, "bin")
    out = []
    for var in ("FABSCOPE_MPICC", "MPICC"):
        if env.get(var):
            cc = shutil.which(env[var]) or env[var]
            out.append(Candidate(var, cc, f"${var}={env[var]}"))
        else:
            out.append(Candidate(var, None, f"${var} not set"))
    outside = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                              if p and os.path.realpath(p) != os.path.realpath(own_bin))
    cc = _which("mpicc", outside)
    out.append(Candidate("PATH", cc, "mpicc on $PATH outside this Python environment" if cc
                         else "no mpicc on $PATH outside this Python environment"))
    wheel = os.path.join(own_bin, "mpicc")
    ok = os.access(wheel, os.X_OK)
    out.append(Candidate("mpich wheel", wheel if ok else None,
                         "the mpich wheel of this environment" if ok else f"no {wheel} (pip install mpich)"))
    return out


def describe(m: MPIInstall) -> str:
    """The line ``fabscope measure`` prints before it launches anything.

    >>> describe(MPIInstall("/x/mpicc", "/x/mpiexec", "PATH", "openmpi", "Open MPI 4.1.4"))
    'MPI: openmpi (Open MPI 4.1.4), mpicc /x/mpicc, launcher /x/mpiexec; found by PATH (set FABSCOPE_MPICC to pin one)'
    """
    pin = "pinned by $FABSCOPE_MPICC" if m.source == "FABSCOPE_MPICC" else f"found by {m.source} (set FABSCOPE_MPICC to pin one)"
    return f"MPI: {m.vendor} ({m.version}), mpicc {m.mpicc}, launcher {m.mpiexec}; {pin}"


def find_mpi(env: Mapping[str, str] | None = None, prefix: str | None = None) -> MPIInstall:
    """The MPI to build and run with, by the order in this module's docstring
    (the first of :func:`candidates` that found one).

    Raises :class:`MeasureError` with what was tried when none is found.
    """
    env = os.environ if env is None else env
    found: tuple[str, str | None, str] | None = None
    for c in candidates(env, prefix):
        if c.path is None:
            continue
        if c.source in ("FABSCOPE_MPICC", "MPICC"):
            if not os.access(c.path, os.X_OK):
                raise MeasureError(f"${c.source} names {env[c.source]!r}, which is not an executable")
            exe_var = "FABSCOPE_MPIEXEC" if c.source == "FABSCOPE_MPICC" else "MPIEXEC"
            found = (c.path, env.get(exe_var) or env.get("MPIEXEC") or None, c.source)
        else:
            found = (c.path, None, c.source)
        break
    if found is None:
        raise MeasureError("no MPI found: tried $FABSCOPE_MPICC, $MPICC, mpicc on PATH and the mpich wheel "
                           "in this environment; load your site's MPI module or run 'pip install mpich'")
    cc, exe, source = found
    exe = exe or _beside(cc) or shutil.which("mpiexec", path=env.get("PATH", ""))
    if not exe:
        raise MeasureError(f"found {cc} ({source}) but no mpiexec or mpirun beside it; set $FABSCOPE_MPIEXEC")
    text = _run([exe, "--version"])
    vendor = vendor_of(text)
    if source == "mpich wheel" or (vendor == "unknown" and os.access(os.path.join(os.path.dirname(cc), "mpichversion"), os.X_OK)):
        vendor = "mpich"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    hydra = [ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith("version:")]
    version = f"MPICH {hydra[0]}" if hydra else (lines[0] if lines else "unknown")
    return MPIInstall(cc, exe, source, vendor, version)


# ---- the MPI a program was built with: how it must be launched ----------------------------------------------

#: what ``--mpi`` may say of a program: (family, MPICH's netmod)
WORDS = {"openmpi": ("openmpi", None), "mpich": ("mpich", "ofi"), "mpich-ofi": ("mpich", "ofi"),
         "mpich-ucx": ("mpich", "ucx"), "none": ("none", None)}
#: MPI libraries by name: libmpi.so.40 is Open MPI's (3.0 to 5.x), libmpich.so.12 and libmpi.so.12 MPICH's
#: ABI (MPICH, the mpich wheel, Intel MPI); libmpi_abi.so the MPI-5 ABI library MPICH ships
_MPI_LIB = re.compile(r"lib(mpi|mpich|mpi_abi)\.so(\.\d+)*")
_FAMILY_OF_LIB = {"libmpi.so.40": "openmpi", "libmpich.so.12": "mpich", "libmpi.so.12": "mpich",
                  "libmpi_abi.so.1": "mpich"}


@dataclass(frozen=True)
class ProgramMPI:
    """The MPI a program runs with: ``family`` "openmpi", "mpich" or "none" (no MPI: independent
    copies), MPICH's ``netmod`` ("ofi" or "ucx"), and where that was read (``source``).

    >>> ProgramMPI("mpich", "ucx", "libmpich.so.12").label
    'MPICH (ch4:ucx)'
    """

    family: str
    netmod: str | None
    source: str
    #: the MPI library the program loads (a path), when read from its dependencies
    library: str | None = None

    @property
    def label(self) -> str:
        name = {"openmpi": "Open MPI", "mpich": "MPICH", "none": "no MPI"}[self.family]
        return f"{name} (ch4:{self.netmod})" if self.netmod else name


def _known() -> str:
    return "|".join(k for k in WORDS if k != "mpich-ofi")


def program_mpi(program: str, word: str | None = None) -> ProgramMPI:
    """The MPI of ``program``, read from its ELF dependencies (:mod:`fabscope.measure.elfdeps`), or as
    ``word`` (a key of :data:`WORDS`) says; :class:`MeasureError` in one line naming what was found
    when the program cannot be launched as an MPI job fabscope knows.

    >>> program_mpi("/bin/sh", "mpich-ucx")
    ProgramMPI(family='mpich', netmod='ucx', source='--mpi mpich-ucx', library=None)
    >>> program_mpi("/bin/sh")
    Traceback (most recent call last):
    ...
    fabscope.errors.MeasureError: program /bin/sh links no MPI library (statically linked, or no MPI program); say which MPI it runs with, --mpi openmpi|mpich|mpich-ucx|none (none: independent copies)
    """
    from fabscope.measure.elfdeps import closure, read_dynamic

    if word is not None:
        if word not in WORDS:
            raise MeasureError(f"--mpi {word!r}: known are {', '.join(WORDS)}")
        return ProgramMPI(*WORDS[word], f"--mpi {word}")
    say = f"say which MPI it runs with, --mpi {_known()} (none: independent copies)"
    if read_dynamic(program) is None:
        raise MeasureError(f"program {program} is no ELF executable (a script?): its MPI cannot be read; {say}")
    deps = closure(program)
    libs = [n for n in deps if _MPI_LIB.fullmatch(n)]
    if not libs:
        raise MeasureError(f"program {program} links no MPI library (statically linked, or no MPI program); {say}")
    families = {_FAMILY_OF_LIB.get(n, "unknown") for n in libs}
    if "unknown" in families or len(families) > 1:
        odd = next((n for n in libs if _FAMILY_OF_LIB.get(n) is None), " and ".join(libs))
        raise MeasureError(f"program {program} links {odd}, an MPI fabscope does not know how to launch "
                           f"(Open MPI: libmpi.so.40; MPICH: libmpich.so.12, libmpi.so.12); {say}")
    lib = libs[0]
    if deps[lib] is None:
        raise MeasureError(f"program {program} links {lib}, which this machine does not have "
                           "(not in its runpath, $LD_LIBRARY_PATH or the loader's cache)")
    family = families.pop()
    if family == "openmpi":
        return ProgramMPI("openmpi", None, f"{lib} ({deps[lib]})", deps[lib])
    netmod = "ofi" if "libfabric.so.1" in deps else "ucx" if "libucp.so.0" in deps else None
    if netmod is None:
        raise MeasureError(f"program {program} links {lib} ({deps[lib]}), an MPICH with neither the OFI nor the "
                           "UCX netmod (no libfabric, no libucp): fabscope cannot keep its ranks on the fabric")
    return ProgramMPI("mpich", netmod, f"{lib} ({deps[lib]})", deps[lib])


#: launchers to try per family, by name on $PATH (Debian's suffixed ones first)
_LAUNCHER_NAMES = {"openmpi": ("mpirun.openmpi", "mpirun", "mpiexec", "orterun"),
                   "mpich": ("mpiexec.mpich", "mpiexec.hydra", "mpiexec", "mpirun")}


def family_launcher(pm: ProgramMPI, env: Mapping[str, str] | None = None) -> str:
    """The launcher of ``pm``'s family: the MPI :func:`find_mpi` finds when it is of that family (as
    ``measure`` would use it), else the first of :data:`_LAUNCHER_NAMES` on ``$PATH`` whose
    ``--version`` names the family.  A program of no MPI goes with Hydra.  :class:`MeasureError` if none."""
    family = "mpich" if pm.family == "none" else pm.family
    try:
        found = find_mpi(env)
        if found.vendor == family:
            return found.mpiexec
    except MeasureError:
        pass
    path = (os.environ if env is None else env).get("PATH", "")
    tried = []
    for name in _LAUNCHER_NAMES[family]:
        exe = _which(name, path)
        if exe and exe not in tried:
            tried.append(exe)
            if vendor_of(_run([exe, "--version"])) == family:
                return exe
    what = "Open MPI's mpirun" if family == "openmpi" else "MPICH's Hydra (mpiexec)"
    raise MeasureError(f"the program is built with {pm.label} ({pm.source}), but {what} is not found: tried "
                       f"{', '.join(_LAUNCHER_NAMES[family])} on $PATH; install it or put it on $PATH")
