"""The rooms stay small and one-way (DESIGN §4): a file's folder says what it may touch, no module is
over 500 lines, and no module of the product imports itself back through a circle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

import ladder

ROOT = Path(ladder.__file__).parent.parent
MAX_TOP_LEVEL_MODULES = 12
MAX_MODULE_LINES = 500
PRODUCT = ("ladder", "ladder_client")


def product_modules() -> list[Path]:
    return sorted(
        path
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.relative_to(ROOT).parts
    )


def test_it_keeps_at_most_twelve_modules_at_the_top_of_ladder() -> None:
    top = sorted(path.name for path in Path(ladder.__file__).parent.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_it_finds_the_product_modules() -> None:
    assert len(product_modules()) > 100  # a wrong root would pass the checks below on nothing


def test_it_keeps_every_module_under_the_line_limit() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in product_modules()
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"over {MAX_MODULE_LINES} lines (split by concern): {long}"


def import_cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), or a module that
    imports itself: each is a cycle of some length."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def imported(module: str) -> Iterator[str]:
        return iter(sorted(graph.find_modules_directly_imported_by(module) & modules))

    def visit(start: str) -> None:
        # Iterative: the import graph is deep enough to exhaust recursion in a plain version.
        work = [(start, imported(start))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, imported(child)))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.find_modules_directly_imported_by(node):
                    found.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PRODUCT)


def test_it_has_no_import_cycle_of_any_length(graph: grimp.ImportGraph) -> None:
    modules = {m for m in graph.modules if ".migrations" not in m}
    assert import_cycles(graph, modules) == []


def test_it_would_see_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")):
        graph.add_import(importer=importer, imported=imported)

    assert import_cycles(graph, {"p.a", "p.b", "p.c", "p.d"}) == [["p.a", "p.b", "p.c"]]
