"""Writing files so that a failure never leaves one half-written.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> p = os.path.join(d, "out.txt")
>>> with atomic_open(p) as fh:
...     _ = fh.write("hello\\n")
>>> open(p).read()
'hello\\n'
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import IO, Iterator


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it over ``path`` only on success.

    ``path`` of ``"-"`` writes to standard output instead.
    """
    if str(path) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fabscope-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
