"""The one reader of text and JSON files: bounded lines, strict UTF-8, bounded nesting.

Every text format fabscope reads (host maps, host files, node lists from files,
fabscope-bench JSON lines, communication matrices, traces, fabric and result
JSON) goes through here, so that a file that is not what it should be is
refused with one line naming the file and the line:

- a line is read with a bound (:data:`MAX_LINE` bytes unless the format says
  otherwise): a 2 GB line is refused after reading the bound, never whole;
- bytes that are not UTF-8 are named with their line and column, not raised
  as ``UnicodeDecodeError``;
- a JSON document nested deeper than :data:`MAX_DEPTH` is refused (nesting
  100,000 deep raised ``RecursionError`` in the decoder);
- a whole-file JSON document (a result, a fabric) is bounded by its size, not
  by the length of a line: it is sized before it is read against the memory
  limit (:func:`fabscope.limits.memory_limit`), Python holding about
  :data:`JSON_BYTES_PER_BYTE` bytes of objects per byte of JSON text; a
  reader that tells a format by its first line (:func:`first_line`) takes a
  first line over the bound for such a document.

>>> import os, tempfile
>>> p = os.path.join(tempfile.mkdtemp(), "hosts")
>>> _ = open(p, "wb").write(b"n1\\nn2 \\xff\\xfe\\n")
>>> [line for _, line in read_lines(p, "host file")]  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
fabscope.errors.FabscopeError: ...hosts line 2: not UTF-8 text (byte 0xff at column 4); not a host file
>>> loads_json("[" * 100000, "deep.json")
Traceback (most recent call last):
...
fabscope.errors.FabscopeError: deep.json: JSON nested deeper than 64 levels; not a fabscope file
"""

from __future__ import annotations

import json
import os
from typing import IO, Any, Iterator

from fabscope.errors import FabscopeError
from fabscope.limits import human_bytes, memory_limit

#: the longest line (bytes) of a line-oriented text file: far above any real line of the formats read here
MAX_LINE = 1 << 20
#: the deepest JSON nesting read (fabscope's own files nest at most 5 deep)
MAX_DEPTH = 64
# json.loads of a result or fabric file: peak Python memory over the file's size, measured with tracemalloc
# on a 58 MB result of 1,048,576 pairs (bench/bench_junk_input.py prints it): about 9x; rounded up
JSON_BYTES_PER_BYTE = 12


def _fail(error: type[FabscopeError], text: str) -> FabscopeError:
    return error(text)


def open_binary(path: str | os.PathLike[str], what: str, error: type[FabscopeError] = FabscopeError) -> IO[bytes]:
    """``open(path, "rb")``, with a refusal naming the file instead of ``OSError``."""
    try:
        fh = open(path, "rb")
    except OSError as err:
        why = err.strerror or str(err)
        raise _fail(error, f"cannot read {what} {os.fspath(path)!r}: {why}") from None
    except ValueError as err:                 # a NUL byte in the name
        raise _fail(error, f"cannot read {what} {os.fspath(path)!r}: {err}") from None
    return fh


def decode(raw: bytes, source: str, n: int, what: str, error: type[FabscopeError] = FabscopeError) -> str:
    """``raw`` as UTF-8, or one line naming the line and the column of the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _fail(error, f"{source} line {n}: not UTF-8 text (byte 0x{raw[err.start]:02x} at column "
                           f"{err.start + 1}); not {_a(what)}") from None


def _a(what: str) -> str:
    return what if what.split(" ", 1)[0] in ("a", "an", "the") else f"a {what}"


def bounded(fh: IO[bytes], source: str, what: str, error: type[FabscopeError] = FabscopeError,
            limit: int = MAX_LINE) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of an open binary file, each line decoded and at most ``limit`` bytes."""
    n = 0
    while True:
        try:
            raw = fh.readline(limit + 1)
        except OSError as err:                 # a folder opened, an I/O error
            raise _fail(error, f"cannot read {what} {source!r}: {err.strerror or err}") from None
        if not raw:
            return
        n += 1
        if len(raw) > limit and not raw.endswith(b"\n") or len(raw.rstrip(b"\r\n")) > limit:
            raise _fail(error, f"{source} line {n}: longer than {limit:,} bytes; not {_a(what)}")
        yield n, decode(raw, source, n, what, error)


def bounded_text(fh: IO[str], source: str, what: str, error: type[FabscopeError] = FabscopeError,
                 limit: int = MAX_LINE) -> Iterator[str]:
    """The lines of an open text file, never holding more than ``limit`` characters of one."""
    n = 0
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        n += 1
        if len(line.rstrip("\r\n")) > limit:
            raise _fail(error, f"{source} line {n}: longer than {limit:,} characters; not {_a(what)}")
        yield line


def first_line(path: str | os.PathLike[str], what: str, error: type[FabscopeError] = FabscopeError,
               limit: int = MAX_LINE) -> str | None:
    """The first line of a file, to tell its format; ``None`` where it is longer than ``limit`` bytes
    (the file is then no line-oriented format, and a whole-file JSON reader, :func:`load_json`, bounds
    it by its size against the memory limit; a result file is one JSON line of any length)."""
    with open_binary(path, what, error) as fh:
        try:
            raw = fh.readline(limit + 1)
        except OSError as err:                 # a folder
            raise _fail(error, f"cannot read {what} {os.fspath(path)!r}: {err.strerror or err}") from None
    if len(raw.rstrip(b"\r\n")) > limit:
        return None
    return decode(raw, os.fspath(path), 1, what, error)


def read_lines(path: str | os.PathLike[str], what: str, error: type[FabscopeError] = FabscopeError,
               limit: int = MAX_LINE) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a text file (line ends kept), bounded and decoded; see the module docstring."""
    with open_binary(path, what, error) as fh:
        yield from bounded(fh, os.fspath(path), what, error, limit)


def text_lines(text: str, source: str, what: str, error: type[FabscopeError] = FabscopeError,
               limit: int = MAX_LINE) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of text already in memory, each line at most ``limit`` characters."""
    for n, line in enumerate(text.splitlines(), start=1):
        if len(line) > limit:
            raise _fail(error, f"{source} line {n}: longer than {limit:,} characters; not {_a(what)}")
        yield n, line


def check_depth(doc: Any, source: str, what: str = "a fabscope file", error: type[FabscopeError] = FabscopeError,
                limit: int = MAX_DEPTH) -> Any:
    """``doc``, if no list or object in it is nested deeper than ``limit``.

    >>> len(check_depth([0.5] * 100_000 + [[1, [2]]], "x.json", limit=3))
    100001
    >>> check_depth([0.5] * 100_000 + [[1, [[2]]]], "x.json", limit=3)
    Traceback (most recent call last):
    fabscope.errors.FabscopeError: x.json: JSON nested deeper than 3 levels; not a fabscope file
    """
    stack = [(doc, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            items = x.values()
        else:
            kinds = set(map(type, x))       # a long column of numbers is passed over in C
            if dict not in kinds and list not in kinds:
                continue
            items = x
        for v in items:
            if isinstance(v, (dict, list)):
                if d + 1 > limit:
                    raise _fail(error, f"{source}: JSON nested deeper than {limit} levels; not {_a(what)}")
                stack.append((v, d + 1))
    return doc


def loads_json(text: str | bytes, source: str, what: str = "a fabscope file",
               error: type[FabscopeError] = FabscopeError) -> Any:
    """A JSON document from text, depth-checked; a syntax error named with its line."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise _fail(error, f"{source}: JSON nested deeper than {MAX_DEPTH} levels; not {_a(what)}") from None
    except json.JSONDecodeError as err:
        cut = " (truncated?)" if err.pos >= len(text.rstrip()) - 1 else ""
        raise _fail(error, f"{source}: not valid JSON{cut} ({err.msg} at line {err.lineno})") from None
    except UnicodeDecodeError as err:
        raise _fail(error, f"{source}: not UTF-8 text (byte at offset {err.start}); not {_a(what)}") from None
    except ValueError as err:                   # an integer of more than 4,300 digits
        raise _fail(error, f"{source}: not valid JSON ({str(err).split(';')[0]})") from None
    if isinstance(doc, (dict, list)):
        check_depth(doc, source, what, error)
    return doc


def load_json(path: str | os.PathLike[str], what: str, error: type[FabscopeError] = FabscopeError) -> Any:
    """A whole-file JSON document: sized against the memory limit first, then decoded and depth-checked."""
    source = os.fspath(path)
    with open_binary(path, what, error) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            lim, why = memory_limit()
            if size * JSON_BYTES_PER_BYTE > lim:
                raise _fail(error, f"{source}: a JSON file of {human_bytes(size)} needs about "
                                   f"{human_bytes(size * JSON_BYTES_PER_BYTE)} to read; the limit is "
                                   f"{human_bytes(lim)} ({why})")
            raw = fh.read()
        except OSError as err:                 # a folder
            raise _fail(error, f"cannot read {what} {source!r}: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise _fail(error, f"{source} line {line}: not UTF-8 text (byte 0x{raw[err.start]:02x} at column {col}); "
                           f"not {_a(what)}") from None
    del raw
    return loads_json(text, source, what, error)
