"""The memory fabscope allows itself, and sizes and times as people read them.

``FABSCOPE_MAX_MEMORY`` (bytes, or with a unit: ``8G``, ``500MB``, ``2GiB``)
when set, else the machine's available memory (``MemAvailable`` of
``/proc/meminfo``): every size a spec or a file declares is checked against
it before anything is allocated.
"""

from __future__ import annotations

import os
import re

from fabscope.errors import FabscopeError

_UNITS = {"": 1, "b": 1, "k": 10 ** 3, "kb": 10 ** 3, "m": 10 ** 6, "mb": 10 ** 6, "g": 10 ** 9, "gb": 10 ** 9,
          "t": 10 ** 12, "tb": 10 ** 12, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def human_bytes(n: float) -> str:
    """``7.3 PB``: powers of 1000, one decimal.

    >>> human_bytes(1.5e9), human_bytes(999), human_bytes(3e30)
    ('1.5 GB', '999 B', '3000000.0 YB')
    """
    for unit in ("B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} YB"


def human_seconds(s: float) -> str:
    """``40 s``, ``2.4 min``, ``3.1 h``, ``12 days``.

    >>> human_seconds(40), human_seconds(144), human_seconds(11000), human_seconds(1e6)
    ('40 s', '2.4 min', '3.1 h', '12 days')
    """
    if s < 100:
        return f"{s:.0f} s"
    if s < 6000:
        return f"{s / 60:.1f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.0f} days"


def parse_memory(text: str) -> int:
    """Bytes from ``8G``, ``500MB``, ``2GiB`` or a plain count.

    >>> parse_memory("8G"), parse_memory("2GiB"), parse_memory("1000")
    (8000000000, 2147483648, 1000)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS or float(m.group(1)) <= 0:
        raise FabscopeError(f"FABSCOPE_MAX_MEMORY={text[:40]!r} is not a memory size such as 8G or 500MB")
    return int(float(m.group(1)) * _UNITS[unit])


def memory_limit() -> tuple[int, str]:
    """(bytes, where that figure comes from): ``FABSCOPE_MAX_MEMORY``, else the available memory."""
    env = os.environ.get("FABSCOPE_MAX_MEMORY")
    if env:
        return parse_memory(env), "FABSCOPE_MAX_MEMORY"
    try:
        # ASCII text, read as utf-8: the codec Python has loaded (the ascii one took 0.2 ms to import)
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, \
                        "the machine's available memory; FABSCOPE_MAX_MEMORY sets another"
    except (OSError, ValueError, IndexError):
        pass
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return pages, "the machine's memory; FABSCOPE_MAX_MEMORY sets another"


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep the memory a process frees for its next arrays, rather than give it back to
    the kernel, which zeroes every page it hands out again: arrays up to 32 MiB come from the heap, and
    the heap is trimmed only past 1 GiB free.  A diagnosis at 109,800 pairs frees and allocates arrays
    of 1-30 MB thousands of times; its system CPU falls from 2.5-2.7 s to 1.5-1.8 (``/usr/bin/time``
    around ``fabscope diagnose`` of bench/nightly_in_time.py's torus night), its peak memory grows by
    under 1 %.  Whether it took: False where the C library has no ``mallopt`` (not glibc)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
    return bool(mallopt(M_MMAP_THRESHOLD, 32 << 20) and mallopt(M_TRIM_THRESHOLD, 1 << 30)
                and mallopt(M_TOP_PAD, 64 << 20))
