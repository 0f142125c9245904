"""Terminal tables in the seeds' layout: Max / Average / Min [MB/sec] by class."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

from fabscope.names import plain, terminal
from fabscope.report.console import WIDTH, PlainConsole, plain_output, rich_console
from fabscope.report.plaintable import layout_table
from fabscope.result import ClassSummary, Result

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def make_console() -> Console | PlainConsole:
    """A console that keeps long lines whole, 120 columns wide when not on a terminal.

    Emoji codes are left as written: rich would turn a name's ``:fire:`` into
    an emoji (and loading its table of codes took 2 ms of every run).  Off a
    terminal it is a :class:`~fabscope.report.console.PlainConsole`, which prints
    tables and lines as rich does there without importing rich.
    """
    if plain_output():
        return PlainConsole(WIDTH)
    con = rich_console()
    if not con.is_terminal:
        con = rich_console(WIDTH)
    return con


def draw_table(con, title: str | None, columns: Sequence[tuple[str, str, str | None]],
               rows: Sequence[Sequence[str]]) -> None:
    """Print a table of plain-text cells (``title`` and headers are markup) with rich's
    ``Table(box=None, pad_edge=False)``; on a :class:`PlainConsole` laid out without rich when it can be.

    ``columns`` are ``(header, justify, style)``; a style shows on a terminal only.
    """
    if isinstance(con, PlainConsole):
        text = layout_table(title, [(h, j) for h, j, _ in columns], rows, con.width)
        if text is not None:
            con.write(text)
            return
        con = con.rich
    con.print(_rich_table(title, columns, rows))


def _rich_table(title: str | None, columns: Sequence[tuple[str, str, str | None]],
                rows: Sequence[Sequence[str]]) -> Table:
    from rich.table import Table
    from rich.text import Text

    t = Table(title=title or None, title_justify="left", box=None, pad_edge=False)
    for header, justify, style in columns:
        t.add_column(header, justify=justify, style=style)
    for row in rows:
        t.add_row(*(Text(c) for c in row))
    return t


def class_cells(rows: Sequence[ClassSummary],
                seed: Mapping[str, tuple[float, float, float]] | None = None) -> tuple[list[str], list[list[str]]]:
    """Columns and cells of the seeds' table (the terminal's and the HTML report's).

    >>> cols, cells = class_cells([ClassSummary("Far", 2, 3.0, 2.0, 1.0)], {"Far": (4.0, 3.0, 2.0)})
    >>> cols[3], cells[0]
    ('[MB/sec]', ['3.00', '2.00', '1.00', 'Far', '2', '4.00', '3.00', '2.00'])
    """
    cols = ["Max", "Average", "Min", "[MB/sec]", "pairs"]
    if seed:
        cols += ["seed 000 (measured) Max", "Average", "Min"]
    cells = []
    for r in rows:
        row = [f"{r.max:.2f}", f"{r.avg:.2f}", f"{r.min:.2f}", r.label, str(r.count)]
        if seed:
            sv = seed.get(r.label)
            row += [f"{x:.2f}" for x in sv] if sv else ["", "", ""]
        cells.append(row)
    return cols, cells


def _class_columns(cols: Sequence[str]) -> list[tuple[str, str, str | None]]:
    return [(col, "left" if col == "[MB/sec]" else "right",
             "dim" if col == "pairs" else ("cyan" if i >= 5 else None)) for i, col in enumerate(cols)]


def class_table(rows: Sequence[ClassSummary], title: str = "",
                seed: Mapping[str, tuple[float, float, float]] | None = None) -> Table:
    """A table of the model's (or measurement's) rows, with the seed's beside where given."""
    cols, cells = class_cells(rows, seed)
    return _rich_table(title, _class_columns(cols), [[plain(c) for c in row] for row in cells])   # labels are text


def print_result(result: Result, console: Console | None = None,
                 merge: Mapping[str, Sequence[str]] | None = None,
                 seed: Mapping[str, tuple[float, float, float]] | None = None, limits: int = 3) -> None:
    """Print a run's header, its class table and the links that limit each class."""
    if console is None:
        from rich.console import Console

        console = Console(emoji=False)
    con = console
    m = result.meta
    params = {k: v for k, v in (m.get("pattern_params") or {}).items() if k != "seed"}   # said once, below
    pattern = m.get("pattern")
    if pattern and params:   # the parameters used, given or defaulted (leaf-offset's offset, ...)
        said = ", ".join(str(k).replace("_", " ") + f" {v}" for k, v in params.items())
        pattern = f"{pattern} ({said})"
    head = ", ".join(str(x) for x in (
        m.get("fabric"), f"routing {m.get('routing')}" if m.get("routing") else None,
        f"model {m.get('model')}" if m.get("model") else None, pattern,
        f"{m.get('ranks')} ranks" + (f" ({m.get('ppn')} per node)" if m.get("ppn") else ""),
        m.get("size_text"), f"pattern seed {m.get('seed')}" if m.get("seed") is not None else None) if x)
    con.print(f"[bold]{terminal(head)}[/bold]", emoji=False)     # names as written, ':fire:' too
    cols, cells = class_cells(result.summary(merge=merge), seed)
    draw_table(con, None, _class_columns(cols), [[plain(c) for c in row] for row in cells])   # labels are text
    lim = result.extra.get("limiting_links") or {}
    if limits and lim:
        con.print("[dim]links that limit each class (flows held back):[/dim]", emoji=False)
        for label, items in lim.items():
            txt = "; ".join(f"{i['name']} ({i['flows']})" for i in items[:limits])
            con.print(f"  [dim]{terminal(label)}:[/dim] {terminal(txt)}", emoji=False)


def print_tables(tables: Sequence, console: Console | None = None, title: str = "") -> None:
    """Print report tables (:class:`fabscope.report.sections.Table`) as the HTML page shows them."""
    con = console or make_console()
    if title:
        con.rule(f"[bold]{terminal(title)}")
    for tab in tables:
        cols = [(col, "left" if (i == 0 and col != "Max") or col in ("route", "link", "cable", "[MB/sec]")
                 else "right", None) for i, col in enumerate(tab.columns)]
        draw_table(con, terminal(tab.title) if tab.title else None, cols,
                   [[plain(c) for c in row] for row in tab.rows])   # host and link names are text, not markup
        if tab.note and isinstance(con, PlainConsole):
            con.print(plain(tab.note), markup=False)      # dim shows on a terminal only
        elif tab.note:
            from rich.text import Text

            con.print(Text(plain(tab.note), style="dim"))


def print_leaf_matrix(con: Console, result: Result, fabric, which: str) -> None:
    """Seed 000's leaf-pair summary (near sets, far pairs) and the one-character-per-leaf-pair map."""
    from rich.table import Table
    from rich.text import Text

    from fabscope.report.leafmatrix import leaf_matrix
    from fabscope.seeds import ITASCA_LEAF_PAIRS

    m = leaf_matrix(result, fabric)
    t = Table(title=f"leaf pairs: {which} of the node pairs between two leaves [MB/sec]",
              title_justify="left", box=None)
    for col in ("Max", "Average", "Min", "", "leaf pairs"):
        t.add_column(col, justify="right" if col != "" else "left")
    seed = fabric.params.get("generator") == "itasca"
    for label, (mx, av, mn) in m.block_summary(which).items():
        t.add_row(f"{mx:.0f}", f"{av:.0f}", f"{mn:.0f}", Text(plain(label)), "")
    con.print(t)
    if seed:
        con.print(f"[cyan]seed 000: near sets about {ITASCA_LEAF_PAIRS['near']:.0f} MB/s; all pairs range "
                  f"{ITASCA_LEAF_PAIRS['min']:.0f} .. {ITASCA_LEAF_PAIRS['max']:.0f} MB/s[/cyan]")
    con.print(f"[dim]{which} matrix, one character per leaf pair, ' ' low .. '@' high:[/dim]")
    con.print(m.render(which), markup=False, highlight=False)
