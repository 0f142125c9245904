"""Writing files so that a failure never leaves one half-written.

Files are created as ``open()`` would create them: mode ``0666`` less the
umask (a file that already exists keeps its mode).  The rules every output
follows:

* it is written to a temporary file in the target folder and renamed over
  the target at the end, so a reader sees the old file or the new one;
* a target that is a symbolic link is refused (fabscope never writes
  through a link, nor replaces one): name the link's target instead;
* a target that is one of the command's inputs (the same file, also by
  another name or through a link) is refused before any work
  (:func:`check_outputs` with ``inputs``);
* a full disk (``ENOSPC``, ``EDQUOT``) is one :class:`OutputError` naming
  the file and the folder; the temporary file is removed;
* two fabscope processes writing the same file: the second is refused at
  once, naming the first (an ``flock`` on ``.NAME.fabscope-lock`` beside
  the target, held until the rename; see :func:`output_lock`).  The CLI
  holds each command's outputs from :func:`check_outputs` to the command's
  end (:func:`hold_output_locks`), so two long runs to one file do not
  silently replace each other.  A lock name that is a hard link to another
  file (more than one link) is refused, not written into; the temporary files
  of a writer of the same output that died (SIGKILL: ``.NAME.*.fabscope-tmp``,
  measure's ``.NAME.*.part``) are removed when the next writer takes the lock.

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
import errno
import fcntl
import io
import os
import re
import stat
import sys
from typing import IO, Iterable, Iterator, Mapping

from fabscope.errors import OutputError

# (temporary path or None for stdout, final path, buffered stdout text, lock held) of the
# files written inside the innermost all_or_none block; None outside one
_Pending = tuple[str | None, str, str, "Lock | None"]
_PENDING: contextvars.ContextVar[list[_Pending] | None] = contextvars.ContextVar(
    "fabscope_pending_outputs", default=None)
#: errors that mean the disk (or the user's quota) is full
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


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


def _refuse_link(p: str, what: str) -> None:
    if os.path.islink(p):
        try:
            to = f" (to {os.readlink(p)})"
        except OSError:
            to = ""
        hint = "; give - for standard output" if p.startswith("/dev/") else ""
        raise OutputError(f"{what}: is a symbolic link{to}; fabscope does not write through links: "
                          f"name the file itself{hint}")


def check_output(path: str | os.PathLike[str], option: str = "output") -> None:
    """Raise :class:`OutputError` (naming ``option``) unless a file can be written at ``path``.

    Checks that the folder exists and is a folder, that ``path`` is not a
    folder nor a symbolic link, and that a file can be created there (a
    read-only file system or a folder the user may not write fails here,
    before any work).
    """
    p = os.fspath(path)
    if p == "-":
        return
    if not p:
        raise OutputError(f"{option}: empty file name")
    _refuse_link(p, f"{option} {p}")
    if os.path.isdir(p):
        raise OutputError(f"{option} {p}: is a directory; give a file name")
    folder = _short(p)
    if not os.path.exists(folder):
        raise OutputError(f"{option} {p}: directory {folder} does not exist")
    if not os.path.isdir(folder):
        raise OutputError(f"{option} {p}: {folder} is not a directory")
    if os.path.exists(p) and not os.access(p, os.W_OK):
        raise OutputError(f"{option} {p}: the file is not writable")
    import tempfile  # here, not at the top: a process that writes nothing does not load it

    try:
        fd, probe = tempfile.mkstemp(prefix=".fabscope-probe-", dir=folder)
    except OSError as err:
        raise OutputError(f"{option} {p}: cannot write in {folder} ({err.strerror})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """``a`` and ``b`` are one existing file (by device and inode: ``./x``, links and hard links too).

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "x"); open(p, "w").close()
    >>> same_file(p, os.path.join(d, ".", "x")), same_file(p, os.path.join(d, "y"))
    (True, False)
    """
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_outputs(outputs: Mapping[str, str | os.PathLike[str] | None],
                  inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """Check every ``option -> path`` (``None`` skipped); two options naming one file is an error too,
    and so is an output that is one of ``inputs`` (it would be lost)."""
    seen: dict[str, str] = {}
    ins = [os.fspath(i) for i in inputs if i is not None and os.fspath(i) != "-"]
    for option, path in outputs.items():
        if path is None:
            continue
        p = os.fspath(path)
        for i in ins:
            if p != "-" and same_file(p, i):
                raise OutputError(f"{option} {p} is also an input ({i}); fabscope does not overwrite "
                                  "what it reads: write elsewhere")
        check_output(path, option)
        key = p if p == "-" else os.path.realpath(p)
        if key in seen:
            what = "standard output" if p == "-" else p
            raise OutputError(f"{seen[key]} and {option} both write {what}")
        seen[key] = option
    holding = _HOLDING.get()
    if holding is not None:   # the command's outputs stay locked from this check to its end
        for option, path in outputs.items():
            if path is not None and os.fspath(path) != "-":
                try:
                    holding.append(Lock(path).acquire())
                except OutputError as err:
                    raise OutputError(f"{option} {err}") from None


# the locks taken by check_outputs inside hold_output_locks(); None outside it
_HOLDING: contextvars.ContextVar[list["Lock"] | None] = contextvars.ContextVar("fabscope_held_locks", default=None)
# lock file -> the Lock this process holds on it (a second Lock on it here is the same holder, not a rival)
_HELD: dict[str, "Lock"] = {}


@contextlib.contextmanager
def hold_output_locks() -> Iterator[None]:
    """Inside, :func:`check_outputs` also locks each output until the block ends (the CLI wraps a
    command in it): a second fabscope writing one of them meanwhile is refused at once."""
    held: list[Lock] = []
    token = _HOLDING.set(held)
    try:
        yield
    finally:
        _HOLDING.reset(token)
        for lock in reversed(held):
            lock.release()


def temporary_base(name: str) -> str:
    """The name an output's lock and temporary files are made from: the output's own, or for a long
    one (its lock would pass the file system's 255 bytes) a hash of it."""
    if len(name.encode(errors="surrogateescape")) > 200:
        import hashlib

        return hashlib.sha256(name.encode(errors="surrogateescape")).hexdigest()[:32]
    return name


_RANDOM = re.compile(r"[a-z0-9_]{8}")
#: how the temporary files of an output end: atomic_open's, and measure's run file while it runs
TEMP_SUFFIXES = (".fabscope-tmp", ".part")
#: what SQLite (``-journal``, ``-wal``, ``-shm``) and DuckDB (``.wal``) keep beside a database built under a
#: temporary name (a first ``history add``): removed with it
TEMP_COMPANIONS = ("-journal", "-wal", "-shm", ".wal")


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files a dead writer of ``path`` left beside it (``.NAME.*.fabscope-tmp``,
    ``.NAME.*.part``); call only while holding the output's lock (no live writer has any)."""
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    head = f".{temporary_base(name)}."
    gone = []
    try:
        names = os.listdir(folder)
    except OSError:
        return gone
    for n in names:
        # exactly head + mkstemp's 8 random characters + a suffix: not the temporary of ``NAME.b`` beside
        # (or a file a database built under such a name keeps beside it: ``-journal``, ``-wal``, ...)
        core = next((n[:-len(c)] for c in TEMP_COMPANIONS if n.endswith(c)), n)
        suffix = next((s for s in TEMP_SUFFIXES if core.endswith(s)), None)
        if suffix is None or not core.startswith(head) or not _RANDOM.fullmatch(core[len(head):-len(suffix)]):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, n))
            gone.append(n)
    return gone


class Lock:
    """An exclusive ``flock`` on ``.NAME.fabscope-lock`` beside an output, holding this process's pid."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        folder, name = os.path.split(os.path.abspath(self.path))
        self.lock = os.path.join(folder, f".{temporary_base(name)}.fabscope-lock")
        self.fd: int | None = None
        self.nested = False

    def acquire(self) -> "Lock":
        if self.lock in _HELD:      # this process holds it already (a command's outputs, held from its check)
            self.nested = True
            return self
        for _ in range(20):   # the holder may remove the file between our open and our flock: try again
            try:
                fd = os.open(self.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
            except OSError as err:
                raise OutputError(f"{self.path}: cannot create the lock file {self.lock} ({err.strerror})") from None
            st = os.fstat(fd)
            if st.st_nlink > 1 or not stat.S_ISREG(st.st_mode):
                # made in advance as a hard link to another file: writing the pid would change that file
                os.close(fd)
                what = f"has {st.st_nlink} links (a hard link to another file)" if st.st_nlink > 1 else \
                    "is not a regular file"
                raise OutputError(f"{self.path}: the lock file {self.lock} {what}; fabscope does not write "
                                  "into it: remove it")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                holder = ""
                with contextlib.suppress(OSError):
                    holder = os.pread(fd, 24, 0).decode(errors="replace").strip()
                os.close(fd)
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise OutputError(f"{self.path}: cannot lock {self.lock} ({err.strerror})") from None
                who = f"fabscope process {holder}" if holder.isdecimal() else "fabscope process"
                raise OutputError(f"{self.path}: another {who} is writing it (lock {self.lock}); "
                                  "wait for it to finish, or write elsewhere") from None
            try:
                st, now = os.fstat(fd), os.stat(self.lock, follow_symlinks=False)
                ours = (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)
            except OSError:
                ours = False
            if ours:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self.fd = fd
                _HELD[self.lock] = self
                remove_stale_temporaries(self.path)     # no live writer of it: what is there, one left
                return self
            os.close(fd)
        raise OutputError(f"{self.path}: cannot lock {self.lock}: other processes keep replacing it")

    def release(self) -> None:
        if self.nested:
            self.nested = False
            return
        if self.fd is not None:
            _HELD.pop(self.lock, None)
            with contextlib.suppress(OSError):
                os.unlink(self.lock)    # while still held: a waiter that opened it sees it gone and retries
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "Lock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def output_lock(path: str | os.PathLike[str]) -> Lock:
    """``with output_lock(p):`` no other fabscope process writes ``p`` meanwhile (it is refused at once,
    naming this one); within this process a second lock on ``p`` is the same holder.

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "run.jsonl")
    >>> with output_lock(p):
    ...     with output_lock(p):
    ...         sorted(os.listdir(d))
    ['.run.jsonl.fabscope-lock']
    >>> os.listdir(d)
    []
    """
    return Lock(path)


def disk_full(err: OSError, path: str) -> OutputError:
    """The one line for a write that failed because the disk is full."""
    folder = os.path.dirname(os.path.abspath(path))
    return OutputError(f"{path}: {err.strerror or 'disk full'} (writing in {folder}); nothing was written")


@contextlib.contextmanager
def all_or_none() -> Iterator[None]:
    """Every :func:`atomic_open` inside the block lands at its end, or none does.

    Standard output (``"-"``) is buffered and printed at the end too, so a
    failure prints no partial file either.
    """
    pending: list[_Pending] = []
    token = _PENDING.set(pending)
    i = 0
    try:
        yield
        _PENDING.reset(token)
        token = None
        for i, (tmp, path, text, _) in enumerate(pending):
            if tmp is None:
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                os.replace(tmp, path)
        i = len(pending)
    finally:
        if token is not None:
            _PENDING.reset(token)
        for tmp, _, _, _ in pending[i:]:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        for *_, lock in pending:
            if lock is not None:
                lock.release()


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
        pending.append((None, "-", buf.getvalue(), None))
        return
    path = os.fspath(path)
    _refuse_link(path, path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: directory {folder} does not exist")
    import tempfile

    lock = Lock(path).acquire()
    try:
        # named after the output: the next writer of it removes this file if this process dies meanwhile
        fd, tmp = tempfile.mkstemp(prefix=f".{temporary_base(os.path.basename(path))}.", suffix=TEMP_SUFFIXES[0], dir=folder)
    except BaseException as err:
        lock.release()
        if isinstance(err, FileNotFoundError):
            raise OutputError(f"{path}: directory {folder} does not exist") from None
        if isinstance(err, IsADirectoryError):
            raise OutputError(f"{path}: is a directory") from None
        if isinstance(err, OSError):
            raise OutputError(f"{path}: cannot write in {folder} ({err.strerror})") from None
        raise
    try:
        os.fchmod(fd, _mode_for(path))
        try:
            with os.fdopen(fd, mode) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as err:
            if err.errno in DISK_FULL:
                raise disk_full(err, path) from None
            raise
        if os.path.isdir(path):
            raise OutputError(f"{path}: is a directory; give a file name")
        _refuse_link(path, path)   # made a link while we wrote: os.replace would replace the link, refuse
        if pending is None:
            os.replace(tmp, path)
            lock.release()
        else:
            pending.append((tmp, path, "", lock))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        lock.release()
        raise
