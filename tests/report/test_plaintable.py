"""Tables and lines printed off a terminal without rich are rich's own output, byte for byte,
on generated tables; where they cannot be, rich draws them."""

import contextlib
import io
import random

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape, render

from fabscope.names import escape_markup, terminal
from fabscope.report.console import PlainConsole, plain_output
from fabscope.report.plaintable import layout_table, markup_text
from fabscope.report.tables import _rich_table, draw_table

WORDS = ["Far", "Near", "Same Router", "Diff Groups", "leaf 12", "s-1.2", "東京", "Zürich", "naïve", "e\u0301t\u00e9",
         "🔥 hot", "[x]", "[bold]x[/bold]", "a\\[b", "\\", "x" * 30, "a  b", "[MB/sec]", ""]
HEADERS = ["Max", "Average", "Min", "[MB/sec]", "pairs", "seed 000 (measured) Max", "route", "", "link",
           "[dim]flows[/dim]", "東京 bytes", "x\\[y]"]


def _rich(con_print, *objects, **kw) -> str:
    buf = io.StringIO()
    Console(file=buf, soft_wrap=True, width=120, emoji=False, force_terminal=False).print(*objects, **kw)
    return buf.getvalue()


def _cell(rnd: random.Random) -> str:
    kind = rnd.random()
    if kind < 0.4:
        return f"{rnd.uniform(0, 10 ** rnd.randint(0, 7)):.{rnd.randint(0, 3)}f}"
    if kind < 0.5:
        return str(rnd.randint(0, 10 ** 6))
    if kind < 0.88:
        return rnd.choice(WORDS)
    if kind < 0.9:
        return rnd.choice((" lead", "trail "))
    s = "".join(rnd.choice("abc XYZ-_.[]/\\é東") for _ in range(rnd.randint(0, 30)))
    return s if rnd.random() < 0.05 else s.strip()      # spaces at the ends: left to rich


def _table(rnd: random.Random):
    n = rnd.randint(1, 8)
    title = rnd.choice([None, "", "per pair", terminal(rnd.choice(WORDS)), "[bold]title[/bold] " + "t" * rnd.randint(0, 150),
                        terminal("host [a]\\ " * rnd.randint(1, 3))])
    cols = [(rnd.choice(HEADERS), rnd.choice(("left", "right")), rnd.choice((None, "dim", "cyan"))) for _ in range(n)]
    wide = rnd.random() < 0.15
    rows = [[("w" * rnd.randint(10, 60)) if wide and rnd.random() < 0.5 else _cell(rnd) for _ in range(n)]
            for _ in range(rnd.randint(0, 6))]
    return title, cols, rows


@pytest.mark.parametrize("seed", range(20))
def test_layout_is_richs_output(seed):
    """Random widths, numbers and text, empty cells, titles, unicode, both justifications;
    a table too wide for 120 columns is left to rich (None), never drawn otherwise."""
    rnd = random.Random(seed)
    drawn = wide = 0
    for _ in range(50):
        title, cols, rows = _table(rnd)
        want = _rich(None, _rich_table(title, cols, rows))
        got = layout_table(title, [(h, j) for h, j, _ in cols], rows, 120)
        if got is None:      # left to rich: too wide (rich shrinks cells), or a cell with spaces at its ends
            wide += 1
            heads = [render(h, emoji=False).plain for h, _, _ in cols]
            natural = sum(max(cell_len(c) for c in col) for col in zip(heads, *rows)) + 2 * (len(cols) - 1)
            assert natural > 120 or any(c != c.strip() for r in rows + [[h for h, _, _ in cols]] for c in r)
        else:
            drawn += 1
            assert got == want, (title, cols, rows)
    assert drawn > 25 and wide > 3


def test_width_limit_is_richs():
    """A table exactly 120 columns wide is laid out here; one column more makes rich wrap its cells."""
    for total in (119, 120):
        rows = [["a" * 50, "b" * (total - 50 - 2)]]
        assert layout_table(None, [("x", "left"), ("y", "right")], rows) == \
            _rich(None, _rich_table(None, [("x", "left", None), ("y", "right", None)], rows))
    wide = [["a" * 50, "b" * (121 - 52)]]
    assert layout_table(None, [("x", "left"), ("y", "right")], wide) is None
    assert "\n" in _rich(None, _rich_table(None, [("x", "left", None), ("y", "right", None)], wide)).rstrip("\n")


def test_empty_column_is_one_cell_wide():
    for rows in ([], [[""]], [["", ""]]):
        n = len(rows[0]) if rows else 1
        cols = [("", "left", None)] * n
        assert layout_table(None, [("", "left")] * n, rows) == _rich(None, _rich_table(None, cols, rows))


@pytest.mark.parametrize("seed", range(10))
def test_draw_table_on_a_plain_console_prints_richs_output(seed, monkeypatch):
    """Through the console fabscope uses off a terminal, fallbacks (wide tables) included."""
    for v in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(v, raising=False)
    rnd = random.Random(1000 + seed)
    for _ in range(20):
        title, cols, rows = _table(rnd)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            draw_table(PlainConsole(120), title, cols, rows)
        assert buf.getvalue() == _rich(None, _rich_table(title, cols, rows))


def _markup(rnd: random.Random) -> str:
    parts = ["[bold]", "[/bold]", "[dim]", "[/dim]", "[/]", "[cyan]", "[/cyan]", "\\", "\\\\", "[", "]", "[x]",
             "[link=u]", "[@click]", "[1]", "[#fff]", "abc", " ", "東", "[red]", "[/red]", "[Bold]"]
    return "".join(rnd.choice(parts) for _ in range(rnd.randint(0, 8)))


def test_markup_text_is_richs_or_none():
    rnd = random.Random(7)
    known = 0
    for _ in range(3000):
        s = _markup(rnd)
        try:
            want = render(s, emoji=False).plain
        except MarkupError:
            want = None
        got = markup_text(s)
        if got is not None:
            known += 1
            assert got == want, s
    assert known > 500


def test_escape_markup_is_richs():
    rnd = random.Random(3)
    for _ in range(3000):
        s = _markup(rnd)
        assert escape_markup(s) == escape(s), s
        assert markup_text(escape_markup(s)) == render(escape(s), emoji=False).plain, s


@pytest.mark.parametrize("line", ["[bold]itasca[/bold], 64 ranks (1 per node)", "[dim]dynamic: x, 1,024 messages[/dim]",
                                  terminal("n[a]me \\ :fire: 東京"), "x" * 200, "", "tab\there", "a\nb",
                                  "[link=x]y[/link]", "[bold]unclosed", "[/bold]bad"])
def test_plain_console_lines_are_richs(line, monkeypatch):
    for v in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(v, raising=False)
    try:
        want = _rich(None, line)
    except MarkupError:
        want = None
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        if want is None:
            with pytest.raises(MarkupError):
                PlainConsole().print(line)
            return
        PlainConsole().print(line)
    assert buf.getvalue() == want


def test_plain_output_only_where_rich_sees_no_terminal(monkeypatch):
    """Off a terminal unless a variable makes rich decide otherwise (FORCE_COLOR, TTY_COMPATIBLE)."""
    monkeypatch.setattr("sys.stdout", io.StringIO())
    for v in ("FORCE_COLOR", "TTY_COMPATIBLE", "JUPYTER_COLUMNS", "JUPYTER_LINES"):
        monkeypatch.delenv(v, raising=False)
    assert plain_output()
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not plain_output()
