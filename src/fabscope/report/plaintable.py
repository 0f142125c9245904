"""fabscope's tables and lines as rich prints them when the output is not a terminal, without importing rich.

Off a terminal (a pipe, a file) rich draws no colour: a ``Table(box=None,
pad_edge=False)`` is plain aligned columns, two spaces apart, and a line of
markup is its text.  Laying these out here spares a small run the import of
rich (0.04 s of a 0.2 s process).  Each function returns ``None`` where rich
would do more than this module knows (a table wider than the console, whose
cells rich would wrap; a line break or control character; markup other than
plain style tags): the caller then draws with rich, so the output is always
rich's, byte for byte (tests/report/test_plaintable.py compares the two on
generated tables).

>>> print(layout_table("speeds", [("[MB/sec]", "left"), ("Max", "right")],
...                    [["Far", "3.00"], ["Near", "12.50"]]), end="")
speeds
[MB/sec]    Max
Far        3.00
Near      12.50
"""

from __future__ import annotations

import re
from typing import Sequence

#: console markup tags, as rich's parser finds them: the backslashes before, the tag's text
_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")
#: style tags whose only effect is colour or weight, which a console without colour does not show
_STYLES = frozenset(("bold", "dim", "italic", "underline", "cyan", "red", "green", "yellow", "blue", "magenta"))


def text_width(text: str) -> int:
    """Terminal cells ``text`` takes, as rich counts them (rich's own count for text beyond ASCII).

    >>> text_width("leaf 12"), text_width("東京")
    (7, 4)
    """
    if text.isascii():
        return len(text)
    from rich.cells import cell_len   # wide and zero-width characters: rich's table, not a second one

    return cell_len(text)


def printable(text: str) -> bool:
    """Whether rich prints ``text`` as it is on one line: no line break, tab or control character
    (rich removes some, expands tabs, splits lines).

    >>> printable("a b"), printable("a\\tb"), printable("a\\u2028b")
    (True, False, False)
    """
    if text.isascii():
        return text.isprintable() or text == ""
    return text.isprintable() and len(text.splitlines()) <= 1


def markup_text(markup: str) -> str | None:
    """The text rich's console markup ``markup`` prints without colour; ``None`` for markup it
    does not know (a tag other than a plain style, a closing tag out of order, ``[@...]`` handlers).

    >>> markup_text("[bold]itasca[/bold], 64 ranks \\\\[x]")
    'itasca, 64 ranks [x]'
    >>> markup_text("[link=http://x]here[/link]") is None
    True
    """
    if "[" not in markup:
        return markup
    out: list[str] = []
    opened: list[str] = []
    pos = 0
    for m in _TAG.finditer(markup):
        out.append(markup[pos:m.start()].replace("\\[", "["))
        pos = m.end()
        slashes, name = len(m.group(1)), m.group(2)
        out.append("\\" * (slashes // 2))
        if slashes % 2:                       # an escaped tag: its text as written
            out.append("[" + name + "]")
            continue
        if name.startswith("/"):
            if not opened or name[1:] not in ("", opened[-1]):
                return None
            opened.pop()
        elif name in _STYLES:
            opened.append(name)
        else:
            return None
    out.append(markup[pos:].replace("\\[", "["))
    return "".join(out)


def layout_table(title: str | None, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]],
                 width: int = 120) -> str | None:
    """The lines rich draws for ``Table(title=title, title_justify="left", box=None, pad_edge=False)``
    on a console ``width`` wide with soft wrap, no colour, or ``None`` where rich must draw it.

    ``title`` and the headers are console markup (as rich reads a str); ``columns`` are
    ``(header, justify)`` with justify ``"left"`` or ``"right"``; cells are plain text (rich ``Text``).
    Columns are as wide as their widest cell, one space of padding each side except at the
    table's edges; a column with nothing in it is one cell wide.  A title is printed as it is,
    neither padded nor wrapped (soft wrap).
    """
    if not columns or any(j not in ("left", "right") for _, j in columns):
        return None
    heads = [markup_text(h) for h, _ in columns]
    head_title = markup_text(title) if title else None
    if any(h is None for h in heads) or (title and head_title is None):
        return None
    table = [heads] + [list(r) for r in rows]
    n = len(columns)
    if any(len(r) != n for r in table):
        return None
    cells = [c for r in table for c in r]
    if not all(printable(c) and c == c.strip() for c in cells) or (head_title is not None and not printable(head_title)):
        return None
    sizes = [[text_width(c) for c in r] for r in table]
    pads = [(0 if i == 0 else 1, 0 if i == n - 1 else 1) for i in range(n)]
    widths = [max(s[i] for s in sizes) + sum(pads[i]) or 1 for i in range(n)]
    if sum(widths) > width:
        return None
    lines = [head_title + "\n"] if title else []
    for r, s in zip(table, sizes):
        parts = []
        for i, (c, w) in enumerate(zip(r, s)):
            left, right = pads[i]
            fill = " " * (widths[i] - left - right - w)
            parts.append(" " * left + (c + fill if columns[i][1] == "left" else fill + c) + " " * right)
        lines.append("".join(parts) + "\n")
    return "".join(lines)
