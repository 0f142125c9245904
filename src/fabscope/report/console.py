"""The console fabscope prints to: rich's on a terminal, a plain one (no rich import) elsewhere.

Off a terminal rich prints no colour, 120 columns wide, long lines kept whole
(soft wrap).  :class:`PlainConsole` prints what it can lay out itself
(:mod:`fabscope.report.plaintable`) exactly as rich would, and hands
everything else to a rich console made on first need, so a caller may use it
as a ``rich.console.Console``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from fabscope.report.plaintable import markup_text, printable

#: width of the console when not on a terminal, where rich cannot ask the terminal
WIDTH = 120
#: environment variables by which rich decides a terminal (or a notebook) otherwise than by the file
_RICH_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "JUPYTER_COLUMNS", "JUPYTER_LINES")


def rich_console(width: int | None = None):
    """rich's console as fabscope uses it: long lines kept whole, emoji codes left as written
    (rich would turn a name's ``:fire:`` into an emoji)."""
    from rich.console import Console

    return Console(soft_wrap=True, width=width, emoji=False)


def plain_output() -> bool:
    """Whether rich would print to standard output without colour or terminal: a pipe or a file,
    no variable that makes rich think otherwise, no notebook or IDLE (in doubt: no)."""
    if any(v in os.environ for v in _RICH_ENV) or "IPython" in sys.modules or "idlelib" in sys.modules:
        return False
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class PlainConsole:
    """What fabscope prints off a terminal, as rich prints it there; anything else goes to rich.

    >>> import io, contextlib
    >>> buf = io.StringIO()
    >>> with contextlib.redirect_stdout(buf):
    ...     PlainConsole().print("[bold]itasca[/bold], 64 ranks")
    >>> buf.getvalue()
    'itasca, 64 ranks\\n'
    """

    is_terminal = False

    def __init__(self, width: int = WIDTH) -> None:
        self.width = width
        self._rich = None

    @property
    def rich(self):
        """The rich console this one stands for, made on first need."""
        if self._rich is None:
            self._rich = rich_console(self.width)
        return self._rich

    def __getattr__(self, name: str) -> Any:      # rule, status, ...: rich's
        if name.startswith("__") or name == "_rich":
            raise AttributeError(name)
        return getattr(self.rich, name)

    def write(self, text: str) -> None:
        """Write text already laid out (whole lines), as rich writes a print: then flushed."""
        out = sys.stdout
        out.write(text)
        out.flush()

    def print(self, *objects: Any, **kw: Any) -> None:
        """One line of text (console markup unless ``markup=False``) printed here; anything else by rich."""
        text = self._line(objects, kw)
        if text is None:
            self.rich.print(*objects, **kw)
        else:
            self.write(text + "\n")

    @staticmethod
    def _line(objects: tuple, kw: dict) -> str | None:
        if len(objects) != 1 or type(objects[0]) is not str:
            return None
        if any(k not in ("markup", "highlight", "emoji") for k in kw) or kw.get("emoji"):
            return None
        text = objects[0] if kw.get("markup", True) is False else markup_text(objects[0])
        return text if text is not None and printable(text) else None
