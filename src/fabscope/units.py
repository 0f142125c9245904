"""Sizes and rates as people write them.

>>> parse_size("1MiB"), parse_size("64KiB"), parse_size("4M"), parse_size("8"), parse_size("1.5k")
(1048576, 65536, 4000000, 8, 1500)
>>> format_size(1048576)
'1 MiB'
>>> plural(1, "pair"), plural(24, "pair"), plural(1, "concurrent set"), plural(2, "CPU")
('1 pair', '24 pairs', '1 concurrent set', '2 CPUs')
>>> format_rate(3.07e9), format_rate(2.5e6), format_rate(512e3), format_rate(25e9)
('3070 MB/s', '2.50 MB/s', '512 kB/s', '25.0 GB/s')
"""

from __future__ import annotations

import re

from fabscope.errors import FabscopeError

_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "kib": 2**10,
    "m": 10**6, "mb": 10**6, "mib": 2**20,
    "g": 10**9, "gb": 10**9, "gib": 2**30,
    "t": 10**12, "tb": 10**12, "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e(\d+))?\s*([a-zA-Z]*)\s*$")


#: the largest message size read (1 PB): above it a size is a typo or hostile
MAX_SIZE = 1e15


def parse_size(text: str | int) -> int:
    """Bytes in ``text``: ``8``, ``64KiB``, ``1MiB``, ``4M`` (10^6), ``1e6``; a bad one raises FabscopeError."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    unit = m.group(3).lower() if m else ""
    if not m or unit not in _UNITS:
        raise FabscopeError(f"size {text!r} does not parse; write e.g. 8, 64KiB, 1MiB or 4M")
    try:
        exp = min(int(m.group(2)[-5:]) if len(m.group(2)) <= 5 else 400, 400) if m.group(2) else 0
        value = float(m.group(1)) * 10 ** exp * _UNITS[unit]
    except OverflowError:                      # 1e400: more than a float holds
        value = float("inf")
    if not value <= MAX_SIZE:
        raise FabscopeError(f"size {text[:40]!r} is larger than any message (at most {MAX_SIZE:.0e} bytes)")
    if value != int(value):
        raise FabscopeError(f"size {text!r} is not a whole number of bytes")
    return int(value)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1 (``many``: an irregular plural); thousands separated."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def format_size(n: int) -> str:
    """``1048576`` -> ``'1 MiB'``; sizes that are not a power-of-two multiple print in bytes."""
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def format_rate(bytes_per_s: float) -> str:
    """A rate for people: kB/s below 1 MB/s (a testbed's links), MB/s to 10 GB/s (InfiniBand's links,
    as fabscope-bench prints them), GB/s above; three significant digits, so that no figure rounds to 0.

    >>> format_rate(0), format_rate(850), format_rate(40e3), format_rate(999.6e3), format_rate(4.2e6)
    ('0 B/s', '850 B/s', '40.0 kB/s', '1000 kB/s', '4.20 MB/s')
    """
    unit, size = rate_unit(bytes_per_s)
    return f"{rate_digits(bytes_per_s / size)} {unit}"


def rate_unit(bytes_per_s: float) -> tuple[str, float]:
    """The unit :func:`format_rate` prints ``bytes_per_s`` in, and its size in bytes/s: a table's
    column takes the unit of its largest figure.

    >>> rate_unit(3.07e9), rate_unit(6e5), rate_unit(25e9)
    (('MB/s', 1000000.0), ('kB/s', 1000.0), ('GB/s', 1000000000.0))
    """
    v = abs(float(bytes_per_s))
    for unit, above, size in (("GB/s", 1e10, 1e9), ("MB/s", 1e6, 1e6), ("kB/s", 1e3, 1e3)):
        if v >= above:
            return unit, size
    return "B/s", 1.0


def rate_digits(x: float) -> str:
    """``x`` with three significant digits and no exponent (whole from 100 up).

    >>> rate_digits(3070.4), rate_digits(25.04), rate_digits(0.5), rate_digits(0)
    ('3070', '25.0', '0.50', '0')
    """
    if x == 0 or abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{2 if abs(x) < 10 else 1}f}"
