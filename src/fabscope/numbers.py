"""The one check of a number read from a file or a spec: a number, finite, in range.

NaN, infinities (``1e400`` reads as one), text where a number belongs, a
negative bandwidth: each is refused with one line naming where it came from
and what was expected, in the error class of the caller.

>>> number(3.5, "run.jsonl:4: 'bandwidth'", lo=0)
3.5
>>> number("fast", "run.jsonl:4: 'bandwidth'", lo=0)
Traceback (most recent call last):
...
fabscope.errors.SchemaError: run.jsonl:4: 'bandwidth' is 'fast', not a number
>>> number(float("1e400"), "run.jsonl:4: 'time'", lo=0)
Traceback (most recent call last):
...
fabscope.errors.SchemaError: run.jsonl:4: 'time' is inf, not a finite number
>>> number(-1, "rank", lo=0, integer=True)
Traceback (most recent call last):
...
fabscope.errors.SchemaError: rank is -1, not an integer >= 0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fabscope.errors import FabscopeError, SchemaError


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _range(lo: float | None, hi: float | None, lo_open: bool, integer: bool) -> str:
    kind = "an integer" if integer else "a number"
    if lo is not None and hi is not None:
        return f"{kind} in {'(' if lo_open else '['}{_num(lo)}, {_num(hi)}]"
    if lo is not None:
        return f"{kind} {'>' if lo_open else '>='} {_num(lo)}"
    if hi is not None:
        return f"{kind} <= {_num(hi)}"
    return kind


def number(value: Any, what: str, lo: float | None = None, hi: float | None = None, *,
           lo_open: bool = False, integer: bool = False, error: type[FabscopeError] = SchemaError) -> Any:
    """``value`` as a finite float (or int, with ``integer``) in ``[lo, hi]``; else ``error`` naming ``what``.

    Booleans are not numbers here; strings are converted (``"1e6"``, ``"8"``).
    """
    if isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, (list, dict, tuple)):
        raise error(f"{what} is {_show(value)}, not a number")
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{what} is {_show(value)}, not a number") from None
    if not math.isfinite(x):
        raise error(f"{what} is {x}, not a finite number")
    if integer:
        if isinstance(value, (int, np.integer)):
            x = int(value)
        elif x.is_integer():
            x = int(x) if isinstance(value, (float, np.floating)) else _int_text(value, what, error)
        else:
            raise error(f"{what} is {_show(value)}, not an integer")
    if (lo is not None and (x < lo or (lo_open and x == lo))) or (hi is not None and x > hi):
        shown = value if isinstance(value, (int, float, np.integer, np.floating)) else x
        raise error(f"{what} is {_show(shown)}, not {_range(lo, hi, lo_open, integer)}")
    return x


def _int_text(value: Any, what: str, error: type[FabscopeError]) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        return int(float(value))


def numbers(values: Any, what: str, lo: float | None = None, hi: float | None = None, *,
            lo_open: bool = False, integer: bool = False, error: type[FabscopeError] = SchemaError,
            names: Any = None) -> np.ndarray:
    """An array of numbers, every one checked as :func:`number` does; the first bad one is named by
    index, or by ``names[i]`` after ``what`` when given (a host's name).

    >>> numbers([1.0, 2.0], "bandwidth", lo=0).tolist()
    [1.0, 2.0]
    >>> numbers([1.0, float("nan")], "result.json: pair column 'bandwidth'", lo=0)
    Traceback (most recent call last):
    ...
    fabscope.errors.SchemaError: result.json: pair column 'bandwidth' entry 2 is nan, not a finite number
    >>> numbers([1.0, -1.0], "memory_bw of host", lo=0, lo_open=True, names=["n1", "n2"])
    Traceback (most recent call last):
    ...
    fabscope.errors.SchemaError: memory_bw of host 'n2' is -1.0, not a number > 0
    >>> numbers([3, 1e308], "'sent'", lo=0, integer=True)
    Traceback (most recent call last):
    ...
    fabscope.errors.SchemaError: 'sent' entry 2 is 1e+308, more than a 64-bit integer holds
    """
    try:
        a = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{what} is not a list of numbers") from None
    if a.dtype.kind not in "iuf":
        raise error(f"{what} is not all numbers")
    f = a.astype(np.float64)
    fin = np.isfinite(f)
    bad = ~fin
    if integer:
        bad |= fin & (np.floor(np.where(fin, f, 0.0)) != np.where(fin, f, 0.0))
        # beyond int64 the cast below would wrap round (1e+308 became a negative rank)
        bad |= fin & (np.abs(np.where(fin, f, 0.0)) >= 2.0 ** 63)
    if lo is not None:
        bad |= (f <= lo) if lo_open else (f < lo)
    if hi is not None:
        bad |= f > hi
    if np.any(bad):
        i = int(np.flatnonzero(bad.ravel())[0])
        at = f"{what} entry {i + 1}" if names is None else f"{what} {str(names[i])[:60]!r}"
        number(a.ravel()[i].item(), at, lo, hi, lo_open=lo_open, integer=integer, error=error)
        raise error(f"{at} is {_show(a.ravel()[i].item())}, more than a 64-bit integer holds")
    return a.astype(np.int64) if integer else f


def _show(v: Any) -> str:
    s = repr(v) if isinstance(v, str) else str(v)
    return s if len(s) <= 40 else s[:37] + "..."
