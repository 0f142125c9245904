"""A program's shared libraries, read from its ELF file without running it.

``ldd`` runs the program's own loader (it may run code of the program); this reads the
dynamic section instead: the ``DT_NEEDED`` names and the search path (``DT_RUNPATH``, else
``DT_RPATH``, with ``$ORIGIN``), and resolves each name as the loader does, in the order
runpath, ``$LD_LIBRARY_PATH``, the loader's cache (``ldconfig -p``), the default folders.
:func:`closure` follows the libraries' own dependencies: a program whose MPI comes through
another library (LAMMPS's ``lmp`` needs ``liblammps.so.0``, which needs ``libmpi.so.40``)
is seen as linked with that MPI.

>>> deps = closure("/bin/sh")
>>> "libc.so.6" in deps and os.path.isfile(deps["libc.so.6"])
True
>>> read_dynamic(__file__) is None          # not an ELF file: None, no error
True
"""

from __future__ import annotations

import functools
import os
import struct
import subprocess
from dataclasses import dataclass

#: dynamic-section tags
DT_NULL, DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 1, 5, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
#: libraries followed at most (a program and its dependencies: a few dozen in practice)
MAX_LIBRARIES = 500
DEFAULT_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib")


@dataclass(frozen=True)
class Dynamic:
    """What the loader reads of one ELF file: its needed names and its own search path."""

    needed: tuple[str, ...]
    runpath: tuple[str, ...]
    machine: int
    elf_class: int


def read_dynamic(path: str) -> Dynamic | None:
    """The dynamic section of ELF file ``path``; None for a file that is no ELF file (a script).

    A statically linked program gives an empty ``needed``."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(64 << 20)     # a program's headers and dynamic strings lie well within this
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    try:
        if is64:
            phoff, phentsize, phnum = struct.unpack_from(end + "Q", data, 32)[0], *struct.unpack_from(end + "HH", data, 54)
        else:
            phoff, phentsize, phnum = struct.unpack_from(end + "I", data, 28)[0], *struct.unpack_from(end + "HH", data, 42)
        machine = struct.unpack_from(end + "H", data, 18)[0]
        loads, dyn = [], None
        for i in range(min(phnum, 256)):
            off = phoff + i * phentsize
            if is64:
                p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(end + "IIQQQQ", data, off)
            else:
                p_type, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(end + "IIIII", data, off)
            if p_type == PT_LOAD:
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == PT_DYNAMIC:
                dyn = (p_offset, p_filesz)
        if dyn is None:
            return Dynamic((), (), machine, data[4])
        fmt, size = (end + "qQ", 16) if is64 else (end + "iI", 8)
        entries = []
        for off in range(dyn[0], min(dyn[0] + dyn[1], len(data) - size + 1), size):
            tag, val = struct.unpack_from(fmt, data, off)
            if tag == DT_NULL:
                break
            entries.append((tag, val))
        strtab = next((v for t, v in entries if t == DT_STRTAB), None)
        base = next((strtab - va + o for va, o, sz in loads if strtab is not None and va <= strtab < va + sz), None)
        if base is None:
            return Dynamic((), (), machine, data[4])

        def text(at: int) -> str:
            start = base + at
            stop = data.find(b"\0", start)
            return data[start:stop].decode("utf-8", "replace") if 0 <= start < stop else ""
        needed = tuple(text(v) for t, v in entries if t == DT_NEEDED)
        runpath = [text(v) for t, v in entries if t == DT_RUNPATH] or [text(v) for t, v in entries if t == DT_RPATH]
        folder = os.path.dirname(os.path.abspath(path))
        dirs = tuple(d.replace("$ORIGIN", folder).replace("${ORIGIN}", folder)
                     for rp in runpath for d in rp.split(":") if d)
        return Dynamic(needed, dirs, machine, data[4])
    except (struct.error, OverflowError, ValueError):   # a header that points outside the file
        return None


@functools.lru_cache(maxsize=1)
def _loader_cache() -> dict[str, tuple[str, ...]]:
    """soname -> paths in the loader's cache (``ldconfig -p``), in its order."""
    out: dict[str, list[str]] = {}
    for exe in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            text = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in text.splitlines()[1:]:
            name, sep, path = line.strip().partition(" => ")
            if sep:
                out.setdefault(name.split(" (")[0].strip(), []).append(path.strip())
        break
    return {k: tuple(v) for k, v in out.items()}


def resolve(name: str, runpath: tuple[str, ...] = (), machine: int | None = None) -> str | None:
    """Where the loader finds library ``name`` (a path when the name has a ``/``); None: not found."""
    if "/" in name:
        return name if os.path.isfile(name) else None
    env = tuple(d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d)
    for d in runpath + env:
        p = os.path.join(d, name)
        if os.path.isfile(p) and _same_machine(p, machine):
            return p
    for p in _loader_cache().get(name, ()):
        if os.path.isfile(p) and _same_machine(p, machine):
            return p
    for d in DEFAULT_DIRS:
        p = os.path.join(d, name)
        if os.path.isfile(p) and _same_machine(p, machine):
            return p
    return None


def _same_machine(path: str, machine: int | None) -> bool:
    if machine is None:
        return True
    d = read_dynamic(path)
    return d is not None and d.machine == machine


def closure(program: str) -> dict[str, str | None]:
    """Every library ``program`` loads, by name, with its path (None: not found on this machine),
    breadth first from the program's own; empty for a program that is no ELF file or links none."""
    top = read_dynamic(program)
    if top is None:
        return {}
    out: dict[str, str | None] = {}
    queue = [(n, top.runpath) for n in top.needed]
    while queue and len(out) < MAX_LIBRARIES:
        name, rp = queue.pop(0)
        if name in out:
            continue
        path = resolve(name, rp, top.machine)
        out[name] = path
        if path is not None:
            d = read_dynamic(path)
            if d is not None:
                queue += [(n, d.runpath) for n in d.needed if n not in out]
    return out
