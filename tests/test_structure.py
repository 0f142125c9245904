"""Imports run downward: fabric/ is the ground, and no modules reach each other through imports.

The import graph is read from the sources (every ``import`` statement, also
those inside functions, also those under ``if TYPE_CHECKING``).
"""

from __future__ import annotations

import ast
import pathlib
import re

import networkx as nx
import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
#: what the ground (fabric/) must not import
ABOVE_FABRIC = ("routing", "traffic", "model", "mapping", "measure", "report", "cli", "whatif", "diagnose",
                "testbed", "seeds")


def _module(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in sorted((SRC / "fabscope").rglob("*.py")):
        mod = _module(path)
        g.add_node(mod)
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                if t.startswith("fabscope") and t != mod:
                    g.add_edge(mod, t)
    known = set(g.nodes)
    # "from fabscope.x import name" adds fabscope.x.name: keep only edges to real modules
    g.remove_nodes_from([n for n in list(g.nodes) if n not in known or not _is_module(n)])
    return g


def _is_module(name: str) -> bool:
    p = SRC.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _without_own_package(g: nx.DiGraph) -> nx.DiGraph:
    """A package's ``__init__`` importing its own modules (or a module its package) is not a circle of
    roles: those edges dropped."""
    h = g.copy()
    h.remove_edges_from([(a, b) for a, b in g.edges if b.startswith(a + ".") or a.startswith(b + ".")])
    return h


def import_circles(g: nx.DiGraph) -> list[list[str]]:
    """Every group of modules that reach each other through imports, of any length (the strongly
    connected components of more than one module).

    >>> g = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    >>> import_circles(g)
    [['a', 'b', 'c']]
    """
    return sorted(sorted(c) for c in nx.strongly_connected_components(_without_own_package(g)) if len(c) > 1)


def test_no_import_circle_anywhere():
    circles = import_circles(import_graph())
    assert not circles, "modules that reach each other through imports (imports must run downward): " + \
        "; ".join(" -> ".join(c) for c in circles)


def test_circle_detector_sees_a_long_circle():
    """A circle through four modules of two packages is found: the graph of src/ with one edge upward added."""
    g = import_graph()
    g.add_edge("fabscope.traffic.commfiles", "fabscope.dynamic.apps")
    found = [c for c in import_circles(g) if "fabscope.traffic.commfiles" in c]
    assert found and {"fabscope.dynamic.apps", "fabscope.dynamic.programs"} <= set(found[0])


@pytest.mark.parametrize("a,b", [("fabscope.dynamic", "fabscope.mapping"),
                                 ("fabscope.traffic", "fabscope.dynamic"),
                                 ("fabscope.traffic.commfiles", "fabscope.mapping.apprun"),
                                 ("fabscope.cli.options", "fabscope.cli.dynamic")])
def test_shared_readers_stand_below(a, b):
    """The communication-file reader sits in traffic/, below the dynamic engine and mapping, which
    both use it; the CLI's option helpers import no command."""
    g = import_graph()
    bad = [(x, y) for x, y in g.edges if (x == a or x.startswith(a + ".")) and (y == b or y.startswith(b + "."))]
    assert not bad, f"{a} imports {b}: {bad}"


def test_fabric_imports_nothing_above_it():
    g = import_graph()
    bad = [(a, b) for a, b in g.edges
           if a.startswith("fabscope.fabric")
           and b.split(".")[1] in ABOVE_FABRIC]
    assert not bad, f"fabric/ imports above itself: {bad}"


def test_library_never_imports_cli():
    g = import_graph()
    bad = [(a, b) for a, b in g.edges if not a.startswith("fabscope.cli") and b.startswith("fabscope.cli")]
    assert not bad, bad


#: what a line says when it speaks of how the project was made rather than of what it does:
#: rounds of work, who ran what, issue numbers, designs "as they were before"
#: (each pattern split where it would match its own line)
HOW_MADE = re.compile(r"ses" r"sion \d|\bthe help" r"er\b|help" r"ers?.{0,12}(branch|worktree|run at)|\bissue #?\d+|"
                      r"\bthe issue('s)?\b|\bround of work|\bas (it|they) (was|were) before|\bfirst written\b",
                      re.IGNORECASE)
#: a day of work (in prose: docs, README, bench); a timestamp with its time (2026-11-08T02:00Z) is data
DAY = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b(?!T)")


def _project_text():
    root = SRC.parent
    for top in ("src", "tests", "bench", "docs"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix in (".py", ".md", ".c", ".h", ".txt", ".toml", ".cfg", ".sh", ".j2", ".html") \
                    and path.is_file() and path != pathlib.Path(__file__).resolve():
                yield path
    yield root / "README.md"


def test_nothing_speaks_of_how_the_project_was_made():
    """Docs, comments and tests say what the code does now; history goes to git and CHANGELOG.md."""
    bad = []
    for path in _project_text():
        rel = path.relative_to(SRC.parent)
        prose = rel.parts[0] in ("docs", "bench") or rel.name == "README.md"
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if HOW_MADE.search(line) or (prose and DAY.search(line)):
                bad.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert not bad, "lines that speak of how the project was made:\n" + "\n".join(bad)


@pytest.mark.parametrize("line,flagged", [("(docs/dynamic.md, \"The refill, ses" "sion 7\")", True),
                                          ("the generators as they were before they were vectorised", True),
                                          ("rerun on 2026-11-24 at load 1", True),
                                          ("# ---- issue 19: --out written", True),
                                          ("slow since run 8 (2026-11-08T02:00:00Z)", False),
                                          ("a session of the test run takes down its testbeds", False)])
def test_how_made_patterns(line, flagged):
    assert bool(HOW_MADE.search(line) or DAY.search(line)) is flagged
