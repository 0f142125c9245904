"""The files launchers take, written atomically (a failure never leaves half a file).

========== ================================= ==========================================================
format     file                              launch with
========== ================================= ==========================================================
hostfile   one host per line, rank order     ``mpirun --map-by seq -hostfile F -np N ./a.out`` (Open MPI's
                                             sequential mapper; a plain host file does not order ranks)
rankfile   ``rank 0=host slot=3``            Open MPI 5: ``mpirun --map-by rankfile:file=F -np N ./a.out``;
                                             Open MPI 4: ``mpirun --rankfile F -np N ./a.out`` (``-rf F``;
                                             4 refuses ``rankfile:file=`` as an unrecognized modifier)
machinefile ``host:count`` runs, in order    ``mpiexec -f F -n N ./a.out`` (MPICH/Hydra)
slurm      one host per line, rank order     ``SLURM_HOSTFILE=F srun --distribution=arbitrary -n N ./a.out``
map        ``rank host core [coords]``       for people and scripts (Rubik's map file, with hosts)
========== ================================= ==========================================================

>>> from fabscope.fabric.generators import fat_tree
>>> from fabscope.mapping.targets import Mapping, Target
>>> t = Target.whole(fat_tree(k=2, levels=2, cores=2), 4, ppn=2)
>>> m = Mapping(t, [2, 0, 1, 3])
>>> print(render(m, "rankfile"), end="")
rank 0=h0001 slot=0
rank 1=h0000 slot=0
rank 2=h0000 slot=1
rank 3=h0001 slot=1
>>> print(render(m, "machinefile"), end="")
h0001:1
h0000:2
h0001:1
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np

from fabscope.atomic import atomic_open
from fabscope.mapping.targets import Mapping
from fabscope.names import launcher_host, shell_word, slurm_name

__all__ = ["FORMATS", "render", "write", "launch_command", "openmpi_version", "detect_openmpi"]

FORMATS = ("hostfile", "rankfile", "machinefile", "slurm", "map")



def _runs(names: list[str]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for h in names:
        if out and out[-1][0] == h:
            out[-1] = (h, out[-1][1] + 1)
        else:
            out.append((h, 1))
    return out


def render(mapping: Mapping, fmt: str) -> str:
    """The text of ``mapping`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        from fabscope.errors import MappingError

        raise MappingError(f"unknown output format {fmt!r}; choose from {', '.join(FORMATS)}")
    # every host name checked for what launchers' files can carry (a Fabric built in Python skips the importers)
    names = mapping.host_names
    for h in set(names):
        launcher_host(h)
        if fmt == "slurm":
            slurm_name(h)
    if fmt in ("hostfile", "slurm"):
        return "".join(h + "\n" for h in names)
    if fmt == "rankfile":
        cores = mapping.core.tolist()
        return "".join(f"rank {r}={h} slot={c}\n" for r, (h, c) in enumerate(zip(names, cores)))
    if fmt == "machinefile":
        return "".join(f"{h}:{k}\n" for h, k in _runs(names))
    if fmt == "map":
        f = mapping.fabric
        head = "# rank host core" + (" " + " ".join(f"c{i}" for i in range(len(f.dims))) if f.coords is not None else "")
        lines = [head + f"  ({mapping.algorithm or 'mapping'}, {mapping.n_ranks} ranks)\n"]
        cores = mapping.core.tolist()
        if f.coords is not None:
            coords = f.coords[mapping.host].tolist()
            lines += [f"{r} {h} {c} {' '.join(map(str, xyz))}\n"
                      for r, (h, c, xyz) in enumerate(zip(names, cores, coords))]
        else:
            lines += [f"{r} {h} {c}\n" for r, (h, c) in enumerate(zip(names, cores))]
        return "".join(lines)
    from fabscope.errors import MappingError

    raise MappingError(f"unknown output format {fmt!r}; choose from {', '.join(FORMATS)}")


def write(mapping: Mapping, fmt: str, path: str | os.PathLike[str]) -> None:
    """Write ``mapping`` as ``fmt`` to ``path`` (``-`` for standard output), atomically."""
    text = render(mapping, fmt)       # render first: a bad format never opens the file
    with atomic_open(path) as fh:
        fh.write(text)


def openmpi_version(text: str) -> tuple[int, ...] | None:
    """Open MPI's version from ``ompi_info --version`` or ``mpirun --version`` output; None if not Open MPI.

    >>> openmpi_version("Open MPI v4.1.4\\n\\nhttp://www.open-mpi.org/community/help/")
    (4, 1, 4)
    >>> openmpi_version("mpirun (Open MPI) 5.0.3\\n\\nReport bugs to https://www.open-mpi.org/community/help/")
    (5, 0, 3)
    >>> openmpi_version("mpirun.openmpi (OpenRTE) 4.1.4")
    (4, 1, 4)
    >>> openmpi_version("HYDRA build details:\\n    Version:                                 4.1.2") is None
    True
    """
    # "(OpenRTE)": Open MPI 1-4's launcher as Debian builds it ("mpirun.openmpi (OpenRTE) 4.1.4")
    m = re.search(r"\((?:Open MPI|OpenRTE)\)\s+v?(\d+(?:\.\d+)*)|Open MPI\s+v?(\d+(?:\.\d+)*)", text)
    if not m:
        return None
    return tuple(int(x) for x in (m.group(1) or m.group(2)).split("."))


def detect_openmpi(timeout: float = 10.0) -> tuple[int, ...] | None:
    """The Open MPI version on ``PATH`` (``ompi_info --version``, else ``mpirun --version``); None if none."""
    for cmd in (["ompi_info", "--version"], ["mpirun", "--version"]):
        exe = shutil.which(cmd[0])
        if exe is None:
            continue
        try:
            p = subprocess.run([exe, cmd[1]], capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        v = openmpi_version(p.stdout + p.stderr)
        if v is not None:
            return v
    return None


def launch_command(fmt: str, path: str, n: int, ompi: tuple[int, ...] | None = None, mpi: str | None = None,
                   testbed: str | None = None, program: str = "./a.out", mpi_word: str | None = None) -> str:
    """The command line that runs ``program`` with its ranks where a file of format ``fmt`` puts them,
    as the program's MPI launches (:meth:`fabscope.measure.launchers.Launcher.placed`).

    ``mpi`` is the program's MPI family ("openmpi", "mpich"; "intel" launches as MPICH; None: not
    known).  MPICH's Hydra takes host and machine files with ``-f``; Open MPI host files with
    ``--map-by seq --hostfile`` and rank files, whose option depends on its version (``ompi``); Slurm's
    ``srun`` a host file in ``$SLURM_HOSTFILE`` with the PMI plugin of the program's MPI.  A format the
    program's launcher does not read: the line of the launcher that does, and what to write instead.
    On a testbed (``testbed``: its name) every format runs through ``fabscope testbed run``, with
    ``--mpi`` when the MPI was the user's word (``mpi_word``), not read from the program.

    >>> launch_command("slurm", "hosts.txt", 8)
    'SLURM_HOSTFILE=hosts.txt srun --distribution=arbitrary -n 8 ./a.out'
    >>> launch_command("slurm", "hosts.txt", 8, mpi="openmpi", program="/usr/bin/lmp")
    'SLURM_HOSTFILE=hosts.txt srun --mpi=pmix --distribution=arbitrary -n 8 /usr/bin/lmp'
    >>> launch_command("rankfile", "r.txt", 8, (4, 1, 4))
    'mpirun --rankfile r.txt -np 8 ./a.out'
    >>> launch_command("hostfile", "my hosts;x", 8)
    "mpirun --map-by seq --hostfile 'my hosts;x' -np 8 ./a.out"
    >>> launch_command("hostfile", "h.txt", 8, mpi="mpich")
    'mpiexec -f h.txt -n 8 ./a.out'
    >>> launch_command("rankfile", "r.txt", 8, mpi="mpich", testbed="tb1", mpi_word="mpich-ucx")
    'fabscope testbed run tb1 --mpi mpich-ucx --placement r.txt -- ./a.out'
    """
    from fabscope.measure.launchers import get_launcher

    path, program = shell_word(path), shell_word(program)     # the command is meant to be pasted into a shell
    if testbed is not None:
        word = f" --mpi {shell_word(mpi_word)}" if mpi_word else ""
        return f"fabscope testbed run {shell_word(testbed)}{word} --placement {path} -- {program}"
    family = "mpich" if mpi == "intel" else mpi
    if fmt == "slurm":
        return get_launcher("srun").placed(fmt, path, n, program, family) or ""
    if fmt == "map":
        return ""
    # the format's own launcher when the program's MPI is not known (a host file: Open MPI's, which orders ranks)
    own = get_launcher(family if family in ("openmpi", "mpich") else
                       "mpich" if fmt == "machinefile" else "openmpi")
    line = own.placed(fmt, path, n, program, family, ompi)
    if line is not None:
        return line
    other = get_launcher("openmpi" if own.name == "mpich" else "mpich")
    instead = "machinefile" if own.name == "mpich" else "hostfile or rankfile"
    label = {"openmpi": "Open MPI", "intel": "Intel MPI"}.get(mpi or "", "MPICH")
    return (f"{other.placed(fmt, path, n, program, family, ompi)}; a {fmt} is not {label}'s: for {label}, "
            f"write --format {instead} and run "
            f"{own.placed('machinefile' if own.name == 'mpich' else 'hostfile', path, n, program, family, ompi)}")


def order_is_rank_order(mapping: Mapping) -> np.ndarray:
    """Host index per rank (what every format encodes)."""
    return mapping.host
