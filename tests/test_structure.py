"""Imports run downward: fabric/ is the ground, and no two modules import each other.

The import graph is read from the sources (every ``import`` statement, also
those inside functions, also those under ``if TYPE_CHECKING``).
"""

from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
#: what the ground (fabric/) must not import
ABOVE_FABRIC = ("routing", "traffic", "model", "mapping", "measure", "report", "cli", "whatif", "diagnose",
                "testbed", "leafmatrix", "seeds")


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


def test_no_import_cycles_between_modules():
    g = import_graph()
    # a package's __init__ importing its own modules is not a cycle of roles: drop those edges
    h = g.copy()
    h.remove_edges_from([(a, b) for a, b in g.edges if b.startswith(a + ".") or a.startswith(b + ".")])
    cycles = [c for c in nx.simple_cycles(h) if len(c) == 2]
    assert not cycles, f"modules importing each other: {cycles}"


@pytest.mark.parametrize("a,b", [("fabscope.mapping.commfiles", "fabscope.mapping.commgraph"),
                                 ("fabscope.measure.analysis", "fabscope.measure.parse")])
def test_named_cycles_are_broken(a, b):
    g = import_graph()
    assert not (g.has_edge(a, b) and g.has_edge(b, a)), f"{a} and {b} import each other"


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
