"""A NumPy column's JSON text, ``json.dumps(a.tolist(), separators=(",", ":"))`` byte for byte,
written to a file piece by piece.

A result's columns are most of a large result file (7.2 M link rows of a 1M-host fat tree:
585 MB).  :func:`column_text` is the pure-Python reference: the whole text as one string, floats
by :func:`float_column`.  :func:`write_column` writes the same bytes in pieces of
:data:`CHUNK` items from ``jsoncolumns.c`` (built with the system C compiler on first use,
:mod:`fabscope.cbuild`): integers formatted there, floats as the texts of their distinct
values (each encoded once by ``json.dumps``) copied in the column's order, strings that need
no escaping (host names) copied.  No string of the whole column is made; without a compiler
the reference runs instead (:func:`why_not`).

>>> import io
>>> out = io.BytesIO()
>>> write_column(out, np.array([3, -1, 2**40] * 3000))
>>> out.getvalue() == json.dumps([3, -1, 2**40] * 3000, separators=(",", ":")).encode()
True
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from functools import lru_cache
from typing import IO, Any

import numpy as np

__all__ = ["CHUNK", "available", "column_text", "float_column", "is_binary", "why_not", "write_column"]

SOURCE = os.path.join(os.path.dirname(__file__), "jsoncolumns.c")

#: columns shorter than this are encoded as they are (by json.dumps, the library not loaded)
SHORT_COLUMN = 4096
#: items per piece written (a piece's buffer: 21 bytes an integer, the longest text + 1 a float)
CHUNK = 1 << 18
#: a float column whose sample holds more distinct values is encoded value by value
_FEW = 256
#: values a float column's sample missed that are added one by one (each one a piece encoded again)
_MISSES = 8

_COMPACT = (",", ":")


def _dumps(v: Any) -> str:
    return json.dumps(v, separators=_COMPACT)


def column_text(a: np.ndarray) -> str:
    """The reference: ``json.dumps(a.tolist(), separators=(",", ":"))``; floats as float64 (float32's
    values as ``tolist`` gives them) by :func:`float_column`.

    >>> column_text(np.array([1.5, -0.0])), column_text(np.array([], dtype=np.int64))
    ('[1.5,-0.0]', '[]')
    """
    if a.dtype.kind == "f":
        return float_column(a)
    return _dumps(a.tolist())


def float_column(a: np.ndarray) -> str:
    """``json.dumps(a.tolist(), separators=(",", ":"))`` of a float array, byte for byte, each
    distinct value encoded once where they are few.

    A result's float columns repeat a few values (one message size, one link capacity, the
    loads a symmetric pattern gives: 1 to 238 distinct values in the 447,526 links and 65,536
    pairs of a 65,536-host fat tree's permutation), and encoding floats is most of writing a
    large result (12.4 CPU s of a 1M-host run's).  Values are told apart by their bits (0.0 and
    -0.0 are two values, as their texts are).

    >>> a = np.array([0.1, -0.0, 0.0, np.inf, np.nan, 1e300, 0.1] * 1000)
    >>> float_column(a) == json.dumps(a.tolist(), separators=(",", ":"))
    True
    """
    a = np.ascontiguousarray(a, dtype=np.float64)      # float32's values, as tolist() gives them
    n = len(a)
    if n < SHORT_COLUMN:
        return _dumps(a.tolist())
    seen = _sampled_values(a)
    if len(seen) > _FEW:
        return _dumps(a.tolist())
    bits = a.view(np.int64)
    at = np.minimum(np.searchsorted(seen, bits), len(seen) - 1)
    if np.array_equal(seen[at], bits):                 # every value is one the sample saw: no sort
        uniq = seen
    else:
        uniq = _distinct(bits)
        if len(uniq) > n // 4:
            return _dumps(a.tolist())
        at = np.searchsorted(uniq, bits)
    texts = _dumps(uniq.view(np.float64).tolist())[1:-1].split(",")
    return "[" + ",".join(np.array(texts, dtype=object)[at].tolist()) + "]"


def _sampled_values(a: np.ndarray) -> np.ndarray:
    """The distinct bits (sorted) of about 1,024 of ``a``'s values, every ``len(a) // 1024``-th."""
    return _distinct(a[:: max(1, len(a) // 1024)].view(np.int64))


def _distinct(bits: np.ndarray) -> np.ndarray:
    s = np.sort(bits)
    return s[np.r_[True, s[1:] != s[:-1]]] if len(s) else s


@lru_cache(maxsize=1)
def _load() -> tuple[Any, str]:
    import ctypes

    from fabscope.cbuild import load_library

    dll, why = load_library(SOURCE, "jsoncolumns")
    if dll is not None:
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        dll.jc_ints.restype = dll.jc_texts.restype = i64
        dll.jc_ints.argtypes = [p, i64, ctypes.c_int, p]
        dll.jc_texts.argtypes = [p, i64, p, i64, p, p, p]
        dll.jc_strs.restype = i64
        dll.jc_strs.argtypes = [p, i64, i64, p]
    return dll, why


def available() -> bool:
    """The compiled writer builds (or is built) and loads here."""
    return _load()[0] is not None


def why_not() -> str:
    """Why the compiled writer does not load ("" when it does)."""
    return _load()[1]


def is_binary(fh: IO[Any]) -> bool:
    """``fh`` takes bytes (a file opened ``"wb"``), not text (standard output, ``io.StringIO``)."""
    return isinstance(fh, (io.BufferedIOBase, io.RawIOBase))


def write_column(fh: IO[Any], a: np.ndarray, compiled: bool = True) -> None:
    """Write :func:`column_text` of the 1-D array ``a`` to ``fh`` (binary, or text: standard
    output), in pieces; ``compiled=False``, or no compiled library: the reference, in one piece."""
    binary = is_binary(fh)
    kind = a.dtype.kind
    dll = _load()[0] if compiled and len(a) >= SHORT_COLUMN and (
        kind in "iuf" or (kind == "U" and a.dtype.isnative and a.dtype.itemsize)) else None
    if dll is None:
        text = column_text(a)
        fh.write(text.encode() if binary else text)
        return
    fh.write(b"[" if binary else "[")
    pieces = _float_pieces(dll, a) if kind == "f" else _str_pieces(dll, a) if kind == "U" else _int_pieces(dll, a)
    for i, piece in enumerate(pieces):      # written at once: the next piece reuses the buffer
        if i:
            fh.write(b"," if binary else ",")
        fh.write(piece if binary else bytes(piece).decode())
    fh.write(b"]" if binary else "]")


def _int_pieces(dll: Any, a: np.ndarray) -> Iterator[memoryview]:
    """The items of an integer column, :data:`CHUNK` at a time, formatted by ``jc_ints``."""
    unsigned = a.dtype.kind == "u" and a.dtype.itemsize == 8    # smaller unsigned fit int64
    dtype = np.uint64 if unsigned else np.int64
    out = np.empty(min(len(a), CHUNK) * 21, np.uint8)
    view = memoryview(out)
    for start in range(0, len(a), CHUNK):
        c = np.ascontiguousarray(a[start:start + CHUNK], dtype=dtype)
        m = dll.jc_ints(c.ctypes.data, len(c), int(unsigned), out.ctypes.data)
        yield view[:m]


def _str_pieces(dll: Any, a: np.ndarray) -> Iterator[memoryview | bytes]:
    """The items of a unicode column, up to :data:`CHUNK` (or 4 MB) at a time, copied by ``jc_strs``
    where no string needs escaping (host names), else ``json.dumps`` of the piece."""
    width = a.dtype.itemsize // 4
    step = max(1, min(CHUNK, (1 << 22) // (width + 3)))
    out = np.empty(min(len(a), step) * (width + 3), np.uint8)
    for start in range(0, len(a), step):
        c = np.ascontiguousarray(a[start:start + step])
        m = dll.jc_strs(c.ctypes.data, len(c), width, out.ctypes.data)
        yield memoryview(out)[:m] if m >= 0 else _dumps(c.tolist())[1:-1].encode()


class _Texts:
    """The texts of the float values ``keys`` (sorted bits) as one ASCII table and its offsets."""

    def __init__(self, keys: np.ndarray) -> None:
        texts = _dumps(keys.view(np.float64).tolist())[1:-1].split(",")
        self.keys = np.ascontiguousarray(keys, dtype=np.int64)
        self.table = np.frombuffer("".join(texts).encode(), np.uint8)
        lengths = np.fromiter(map(len, texts), np.int64, len(texts))
        self.offs = np.r_[np.int64(0), np.cumsum(lengths)]
        self.width = int(lengths.max()) + 1


def _float_pieces(dll: Any, a: np.ndarray) -> Iterator[memoryview | bytes]:
    """The items of a float column, :data:`CHUNK` at a time: where its values are few (a sample's
    distinct values and a few it missed, or all of them), each value's text is looked up by
    ``jc_texts``; where they are many (over a quarter of the column), ``json.dumps`` of the rest."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    n = len(a)
    bits = a.view(np.int64)
    keys = _sampled_values(a)
    texts = _Texts(keys) if len(keys) <= _FEW else None
    out = np.empty(0, np.uint8)
    start = misses = 0
    while start < n and texts is not None:
        c = bits[start:start + CHUNK]
        if len(out) < len(c) * texts.width:
            out = np.empty(min(n, CHUNK) * texts.width, np.uint8)
        m = dll.jc_texts(c.ctypes.data, len(c), texts.keys.ctypes.data, len(texts.keys),
                         texts.table.ctypes.data, texts.offs.ctypes.data, out.ctypes.data)
        if m < 0:       # a value the sample missed, added; after _MISSES, all the column's distinct values
            if misses > _MISSES:
                raise RuntimeError(f"jc_texts missed {a[start - 1 - m]!r}, one of the column's distinct values")
            keys = np.union1d(texts.keys, c[-1 - m:-m])
            misses += 1
            if misses > _MISSES or len(keys) > _FEW:
                keys = _distinct(bits)
                misses = _MISSES + 1
            texts = _Texts(keys) if len(keys) <= n // 4 else None
            continue    # this piece again
        yield memoryview(out)[:m]
        start += len(c)
    for i in range(start, n, CHUNK):
        yield _dumps(a[i:i + CHUNK].tolist())[1:-1].encode()
