"""Launchers: a small registry of the commands that start an MPI job.

Each launcher turns a :class:`Job` into an argument list; nothing here runs
MPI, so the command lines are tested as they are.  A new one is a subclass
with a ``command`` (and, if it needs variables in the job's environment, an
``env``) under ``@register(name, default_exe)``; ``fabscope measure
--launcher NAME`` then finds it.  Whatever it starts is ended with the job:
the runner follows the launcher's whole process tree (see :mod:`.processes`).

>>> job = Job(np=4, program=["fabscope-bench", "pingpong"], hosts=[("n1", 2), ("n2", 2)], ppn=2)
>>> " ".join(get_launcher("mpich", exe="mpiexec").command(job))
'mpiexec -n 4 -hosts n1:2,n2:2 -ppn 2 fabscope-bench pingpong'
>>> " ".join(get_launcher("openmpi", exe="mpirun").command(job))
'mpirun -np 4 --host n1:2,n2:2 --map-by ppr:2:node fabscope-bench pingpong'
>>> " ".join(get_launcher("srun").command(job))
'srun --ntasks 4 --nodelist n1,n2 --ntasks-per-node 2 fabscope-bench pingpong'

Each also says how it runs a program with its ranks where a placement file puts them (the files
``fabscope map -o`` writes, :meth:`Launcher.placed`), for a program of a given MPI family:

>>> get_launcher("openmpi").placed("hostfile", "F", 4, "./a.out")
'mpirun --map-by seq --hostfile F -np 4 ./a.out'
>>> get_launcher("srun").placed("slurm", "F", 4, "./a.out", family="openmpi")
'SLURM_HOSTFILE=F srun --mpi=pmix --distribution=arbitrary -n 4 ./a.out'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

from fabscope.errors import MeasureError
from fabscope.names import launcher_host, slurm_name


@dataclass(frozen=True)
class Job:
    np: int
    program: Sequence[str]
    hosts: Sequence[tuple[str, int]] | None = None  # (host, slots)
    hostfile: str | None = None
    ppn: int | None = None
    oversubscribe: bool = False
    extra: Sequence[str] = field(default_factory=tuple)  # the user's own launcher options


@dataclass(frozen=True)
class Launcher:
    name: str
    exe: str

    def command(self, job: Job) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """Variables the launcher needs in the job's environment."""
        return {}

    def rank_env(self, env: dict[str, str]) -> list[str]:  # pragma: no cover - overridden
        """Options that set ``env`` in every rank's environment, and not in the launcher's own (a preload
        given to the launcher itself would be loaded into it and every daemon it starts)."""
        raise NotImplementedError

    def placed(self, fmt: str, file: str, n: int, program: str, family: str | None = None,
               version: tuple[int, ...] | None = None) -> str | None:  # pragma: no cover - overridden
        """The command line (shell words, already quoted) running ``program`` as ``n`` ranks, rank *i*
        where placement ``file`` of format ``fmt`` (``fabscope map --format``) puts it; None when this
        launcher reads no file of that format.  ``family``: the program's MPI ("openmpi", "mpich");
        ``version``: the launcher's own, where its options depend on it."""
        raise NotImplementedError


_REGISTRY: dict[str, tuple[type[Launcher], str]] = {}


def register(name: str, default_exe: str) -> Callable[[type[Launcher]], type[Launcher]]:
    def deco(cls: type[Launcher]) -> type[Launcher]:
        _REGISTRY[name] = (cls, default_exe)
        return cls
    return deco


def names() -> list[str]:
    """The registered launchers.

    >>> names()
    ['mpich', 'openmpi', 'srun']
    """
    return sorted(_REGISTRY)


def get_launcher(name: str, exe: str | None = None) -> Launcher:
    """A launcher by name; ``mpiexec``/``mpirun`` are taken as the MPICH/Open MPI ones."""
    alias = {"mpiexec": "mpich", "hydra": "mpich", "mpirun": "openmpi", "ompi": "openmpi", "slurm": "srun"}
    key = alias.get(name, name)
    if key not in _REGISTRY:
        raise MeasureError(f"unknown launcher {name!r} (known: {', '.join(names())}, mpiexec, mpirun)")
    cls, default = _REGISTRY[key]
    return cls(key, exe or default)


def _host_list(hosts: Sequence[tuple[str, int]]) -> str:
    return ",".join(f"{launcher_host(h)}:{n}" for h, n in hosts)


@register("mpich", "mpiexec")
class MpichLauncher(Launcher):
    """MPICH's Hydra (also MVAPICH and Intel MPI's mpiexec.hydra)."""

    def command(self, job: Job) -> list[str]:
        argv = [self.exe, "-n", str(job.np)]
        if job.hostfile:
            argv += ["-f", job.hostfile]
        elif job.hosts:
            argv += ["-hosts", _host_list(job.hosts)]
        if job.ppn:
            argv += ["-ppn", str(job.ppn)]
        return argv + list(job.extra) + list(job.program)

    def rank_env(self, env: dict[str, str]) -> list[str]:
        """Hydra's ``-genv``.

        >>> get_launcher("mpich").rank_env({"LD_PRELOAD": "/x/l.so"})
        ['-genv', 'LD_PRELOAD', '/x/l.so']
        """
        return [a for k, v in env.items() for a in ("-genv", k, v)]

    def placed(self, fmt: str, file: str, n: int, program: str, family: str | None = None,
               version: tuple[int, ...] | None = None) -> str | None:
        """Hydra's ``-f`` reads a host per line or ``host:count`` runs, in order; no rank file.

        >>> get_launcher("mpich").placed("machinefile", "F", 4, "./a.out"), get_launcher("mpich").placed("rankfile", "F", 4, "x")
        ('mpiexec -f F -n 4 ./a.out', None)
        """
        return f"{self.exe} -f {file} -n {n} {program}" if fmt in ("hostfile", "machinefile") else None


@register("openmpi", "mpirun")
class OpenMpiLauncher(Launcher):
    def command(self, job: Job) -> list[str]:
        argv = [self.exe, "-np", str(job.np)]
        if job.hostfile:
            argv += ["--hostfile", job.hostfile]
        elif job.hosts:
            argv += ["--host", _host_list(job.hosts)]
        if job.ppn:
            argv += ["--map-by", f"ppr:{job.ppn}:node"]
        if job.oversubscribe:
            argv += ["--oversubscribe"]
        return argv + list(job.extra) + list(job.program)

    def rank_env(self, env: dict[str, str]) -> list[str]:
        """Open MPI passes a variable to the ranks only when told (``-x``), on every host.

        >>> get_launcher("openmpi").rank_env({"LD_PRELOAD": "/x/l.so"})
        ['-x', 'LD_PRELOAD=/x/l.so']
        """
        return [a for k, v in env.items() for a in ("-x", f"{k}={v}")]

    def placed(self, fmt: str, file: str, n: int, program: str, family: str | None = None,
               version: tuple[int, ...] | None = None) -> str | None:
        """A host per line with the sequential mapper (a plain host file does not order ranks), or a rank
        file: Open MPI 5 takes ``--map-by rankfile:file=F``, 4 and older only ``--rankfile F`` (4 refuses
        ``rankfile:file=`` as an unrecognized modifier); version unknown: both, labelled.

        >>> get_launcher("openmpi").placed("rankfile", "F", 4, "./a.out", version=(4, 1, 4))
        'mpirun --rankfile F -np 4 ./a.out'
        >>> get_launcher("openmpi").placed("rankfile", "F", 4, "./a.out")
        'mpirun --map-by rankfile:file=F -np 4 ./a.out (Open MPI 5; Open MPI 4: mpirun --rankfile F -np 4 ./a.out)'
        """
        if fmt == "hostfile":
            return f"{self.exe} --map-by seq --hostfile {file} -np {n} {program}"
        if fmt != "rankfile":
            return None
        v5 = f"{self.exe} --map-by rankfile:file={file} -np {n} {program}"
        v4 = f"{self.exe} --rankfile {file} -np {n} {program}"
        return f"{v5} (Open MPI 5; Open MPI 4: {v4})" if version is None else v5 if version[0] >= 5 else v4

    def env(self) -> dict[str, str]:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            return {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        return {}


#: the PMI plugin srun gives each MPI family's ranks: MPICH's take theirs from Slurm's pmi2 plugin, Open MPI's
#: (4.x: PMIx clients) from its pmix one (without it they start as singletons)
SRUN_MPI = {"mpich": "--mpi=pmi2", "openmpi": "--mpi=pmix"}


@register("srun", "srun")
class SrunLauncher(Launcher):
    """Slurm's srun, inside an allocation (``salloc``/``sbatch``)."""

    def command(self, job: Job) -> list[str]:
        argv = [self.exe, "--ntasks", str(job.np)]
        if job.hostfile:
            argv += ["--nodefile", job.hostfile]
        elif job.hosts:
            argv += ["--nodelist", ",".join(slurm_name(launcher_host(h)) for h, _ in job.hosts)]
        if job.ppn:
            argv += ["--ntasks-per-node", str(job.ppn)]
        if job.oversubscribe:
            argv += ["--overcommit"]
        return argv + list(job.extra) + list(job.program)

    def rank_env(self, env: dict[str, str]) -> list[str]:
        """srun's ``--export`` (the whole environment and these).

        >>> get_launcher("srun").rank_env({"A": "1"})
        ['--export=ALL,A=1']
        """
        return [f"--export=ALL,{','.join(f'{k}={v}' for k, v in env.items())}"] if env else []

    def placed(self, fmt: str, file: str, n: int, program: str, family: str | None = None,
               version: tuple[int, ...] | None = None) -> str | None:
        """A host per line in ``$SLURM_HOSTFILE`` with the arbitrary distribution, and the PMI plugin of
        the program's MPI (:data:`SRUN_MPI`; unknown: the site's default).

        >>> get_launcher("srun").placed("slurm", "F", 4, "./a.out", family="mpich")
        'SLURM_HOSTFILE=F srun --mpi=pmi2 --distribution=arbitrary -n 4 ./a.out'
        """
        if fmt != "slurm":
            return None
        mpi = f"{SRUN_MPI[family]} " if family in SRUN_MPI else ""
        return f"SLURM_HOSTFILE={file} {self.exe} {mpi}--distribution=arbitrary -n {n} {program}"


def launcher_for(vendor: str, exe: str) -> Launcher:
    """The launcher that goes with an MPI found by :func:`fabscope.measure.mpi.find_mpi`."""
    return get_launcher("openmpi" if vendor == "openmpi" else "mpich", exe)
