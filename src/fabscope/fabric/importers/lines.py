"""Reading a tool's output a line at a time, with a bound on a line's length.

A file that is not what it should be (a binary, random bytes, a file with no
line breaks) is refused at its first overlong line instead of being read whole.
The reading itself is :func:`fabscope.textio.bounded_text`, the one bounded
reader of every text format; this names the InfiniBand importers' error class.

>>> import io
>>> list(bounded_lines(io.StringIO("a\\nb\\n"), "x", 10, "a table"))
['a\\n', 'b\\n']
>>> list(bounded_lines(io.StringIO("z" * 50), "x", 10, "a table"))
Traceback (most recent call last):
...
fabscope.errors.FabricError: x line 1: longer than 10 characters; not a table
"""

from __future__ import annotations

from typing import IO, Iterator

from fabscope.errors import FabricError
from fabscope.textio import bounded_text


def bounded_lines(fh: IO[str], source: str, limit: int, what: str) -> Iterator[str]:
    """The lines of ``fh``, never holding more than ``limit`` characters of one."""
    return bounded_text(fh, source, what, FabricError, limit)
