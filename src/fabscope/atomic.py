"""Writing files so that a failure never leaves one half-written.

Files are created as ``open()`` would create them: mode ``0666`` less the
umask (a file that already exists keeps its mode).

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> p = os.path.join(d, "out.txt")
>>> with atomic_open(p) as fh:
...     _ = fh.write("hello\\n")
>>> open(p).read()
'hello\\n'

A command with several outputs checks them all before it computes anything
(:func:`check_outputs`) and writes them inside :func:`all_or_none`: every
file appears at the end of the block, or none does.

>>> check_outputs({"-o": os.path.join(d, "no", "such", "x.json")})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
fabscope.errors.OutputError: -o .../no/such/x.json: directory .../no/such does not exist
>>> a, b = os.path.join(d, "a.txt"), os.path.join(d, "b.txt")
>>> try:
...     with all_or_none():
...         with atomic_open(a) as fh:
...             _ = fh.write("a")
...         raise RuntimeError("the second output failed")
... except RuntimeError:
...     pass
>>> os.path.exists(a)
False
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import os
import sys
import tempfile
from typing import IO, Iterator, Mapping

from fabscope.errors import OutputError

# (temporary path or None for stdout, final path, buffered stdout text) of the
# files written inside the innermost all_or_none block; None outside one
_PENDING: contextvars.ContextVar[list[tuple[str | None, str, str]] | None] = contextvars.ContextVar(
    "fabscope_pending_outputs", default=None)


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows.

    >>> 0 <= current_umask() <= 0o777
    True
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)   # no other way to read it: set and restore at once
    os.umask(old)
    return old


def _mode_for(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777      # keep an existing file's mode, as open() does
    except OSError:
        return 0o666 & ~current_umask()


def _short(path: str) -> str:
    d = os.path.dirname(path)
    return d if d else "."


def check_output(path: str | os.PathLike[str], option: str = "output") -> None:
    """Raise :class:`OutputError` (naming ``option``) unless a file can be written at ``path``.

    Checks that the folder exists and is a folder, that ``path`` is not a
    folder, and that a file can be created there (a read-only file system or
    a folder the user may not write fails here, before any work).
    """
    p = os.fspath(path)
    if p == "-":
        return
    if not p:
        raise OutputError(f"{option}: empty file name")
    if os.path.isdir(p):
        raise OutputError(f"{option} {p}: is a directory; give a file name")
    folder = _short(p)
    if not os.path.exists(folder):
        raise OutputError(f"{option} {p}: directory {folder} does not exist")
    if not os.path.isdir(folder):
        raise OutputError(f"{option} {p}: {folder} is not a directory")
    if os.path.exists(p) and not os.access(p, os.W_OK):
        raise OutputError(f"{option} {p}: the file is not writable")
    try:
        fd, probe = tempfile.mkstemp(prefix=".fabscope-probe-", dir=folder)
    except OSError as err:
        raise OutputError(f"{option} {p}: cannot write in {folder} ({err.strerror})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def check_outputs(outputs: Mapping[str, str | os.PathLike[str] | None]) -> None:
    """Check every ``option -> path`` (``None`` skipped); two options naming one file is an error too."""
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        check_output(path, option)
        p = os.fspath(path)
        key = p if p == "-" else os.path.realpath(p)
        if key in seen:
            what = "standard output" if p == "-" else p
            raise OutputError(f"{seen[key]} and {option} both write {what}")
        seen[key] = option


@contextlib.contextmanager
def all_or_none() -> Iterator[None]:
    """Every :func:`atomic_open` inside the block lands at its end, or none does.

    Standard output (``"-"``) is buffered and printed at the end too, so a
    failure prints no partial file either.
    """
    pending: list[tuple[str | None, str, str]] = []
    token = _PENDING.set(pending)
    try:
        yield
    except BaseException:
        _PENDING.reset(token)
        for tmp, _, _ in pending:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        raise
    _PENDING.reset(token)
    try:
        for i, (tmp, path, text) in enumerate(pending):
            if tmp is None:
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                os.replace(tmp, path)
    except BaseException:
        for tmp, _, _ in pending[i:]:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success.

    ``path`` of ``"-"`` writes to standard output instead.  Inside
    :func:`all_or_none` the rename (or the printing) waits for the block's end.
    """
    pending = _PENDING.get()
    if str(path) == "-":
        if pending is None:
            yield sys.stdout
            sys.stdout.flush()
            return
        buf = io.StringIO()
        yield buf
        pending.append((None, "-", buf.getvalue()))
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".fabscope-", suffix=".tmp", dir=folder)
    except FileNotFoundError:
        raise OutputError(f"{path}: directory {folder} does not exist") from None
    except IsADirectoryError:
        raise OutputError(f"{path}: is a directory") from None
    except OSError as err:
        raise OutputError(f"{path}: cannot write in {folder} ({err.strerror})") from None
    try:
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if os.path.isdir(path):
            raise OutputError(f"{path}: is a directory; give a file name")
        if pending is None:
            os.replace(tmp, path)
        else:
            pending.append((tmp, path, ""))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
