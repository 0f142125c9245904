"""A new embedded history (SQLite, DuckDB) is built under a temporary name and appears only when it commits.

The first ``history add`` to a file that does not exist yet writes the database
as ``.NAME.XXXXXXXX.fabscope-tmp`` in the same folder (the temporary names of
:mod:`fabscope.atomic`), holding the output lock of ``NAME`` meanwhile, and
links it into place when its runs are committed (:meth:`NewFile.publish`).
An add that ends before that (an error, Ctrl-C, SIGTERM, and SIGKILL too)
leaves no ``NAME``: the temporary is removed at once or, after a SIGKILL, by
the next writer of ``NAME`` when it takes the lock
(:func:`fabscope.atomic.remove_stale_temporaries`).  A second first add while
one builds is refused at once by the lock, naming the first.  A PostgreSQL
history is no file: its first add is one transaction, which the server rolls
back when the client dies.

>>> import tempfile
>>> d = tempfile.mkdtemp(); final = os.path.join(d, "h.db")
>>> new = NewFile(final, "sqlite")
>>> sorted(n.endswith(".fabscope-tmp") or n.endswith(".fabscope-lock") for n in os.listdir(d))
[True, True]
>>> new.publish()
>>> os.listdir(d)
['h.db']
"""

from __future__ import annotations

import contextlib
import os
import signal

from fabscope.atomic import TEMP_COMPANIONS, TEMP_SUFFIXES, Lock, current_umask, temporary_base
from fabscope.history.db import HistoryError

#: what fabscope unwinds on (Ctrl-C, SIGTERM, a closed terminal): held while a new file comes into being,
#: so that it is not left between being made and being kept (:class:`fabscope.history.store.History`)
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class HeldSignals:
    """:data:`HELD_SIGNALS` noted, not acted on, until :meth:`release`, which puts their handlers back and
    raises the first that came through its handler.  Python runs handlers in the main thread whichever
    thread the kernel gave the signal to, so a handler swapped there holds them where a thread's signal
    mask would not (BLAS's or a thread pool's threads take a signal the main thread blocks).  Elsewhere
    than in the main thread, where handlers cannot be set, nothing is held.

    >>> old = signal.signal(signal.SIGTERM, lambda num, frame: print("handled"))
    >>> h = HeldSignals()
    >>> signal.raise_signal(signal.SIGTERM)          # noted, not handled
    >>> h.release()
    handled
    >>> _ = signal.signal(signal.SIGTERM, old)
    """

    def __init__(self) -> None:
        import threading

        self.came: list[int] = []
        self.old: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for s in HELD_SIGNALS:
                self.old[s] = signal.signal(s, lambda num, frame: self.came.append(num))

    def release(self) -> None:
        old, self.old = self.old, {}
        for s, h in old.items():
            signal.signal(s, h)
        if self.came:
            signal.raise_signal(self.came[0])


class NewFile:
    """The temporary file a new history ``final`` is built in (``dialect`` sqlite or duckdb), under ``final``'s lock."""

    def __init__(self, final: str, dialect: str) -> None:
        import tempfile

        self.final = final
        self.lock = Lock(final).acquire()     # also removes what a killed first add left
        folder, name = os.path.split(os.path.abspath(final))
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{temporary_base(name)}.", suffix=TEMP_SUFFIXES[0], dir=folder)
        except OSError as err:
            self.lock.release()
            raise HistoryError(f"cannot make history {final} in {folder} ({err.strerror})") from None
        try:
            os.close(fd)
            if dialect == "duckdb":     # DuckDB makes its own file: it refuses an empty one
                os.unlink(self.tmp)
            else:
                os.chmod(self.tmp, 0o666 & ~current_umask())    # the mode SQLite gives a file it makes
        except BaseException:
            self.discard()
            raise

    def publish(self) -> None:
        """Put the (closed) temporary database in place as ``final``; never over a file made meanwhile."""
        try:
            try:
                os.link(self.tmp, self.final)
            except FileExistsError:
                raise HistoryError(f"history {self.final} was made by another program while this add ran; "
                                   "nothing written: run it again") from None
            except OSError:     # a file system without hard links: the lock keeps fabscope's writers out
                if os.path.lexists(self.final):
                    raise HistoryError(f"history {self.final} was made by another program while this add "
                                       "ran; nothing written: run it again") from None
                os.replace(self.tmp, self.final)
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the temporary database and its companions, and release the lock."""
        for p in (self.tmp, *(self.tmp + c for c in TEMP_COMPANIONS)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
        self.lock.release()
