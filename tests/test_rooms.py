"""Rooms a reader can hold (STYLE.md, docs/architecture.md): no module of ``sitemapcrawl``
over 800 lines, no import circle among its modules (imports under ``TYPE_CHECKING`` and inside
functions count: they name the room all the same), no class over 400 lines, and no function
over 80 lines but the scanner's two hot loops, which say why they are inlined."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sitemapcrawl"
MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 80
# The byte scanner's loops: a call per entry costs more than their length (scan.py says why).
HOT_LOOPS = {
    ("sitemapcrawl.sitemaps.scan", "_content"),
    ("sitemapcrawl.sitemaps.entries", "element"),
}


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the package that ``name`` imports, wherever the import stands.

    ``from package import module`` names the module, not the package's ``__init__``.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                named.add(full if full in modules else base)
    return {other for other in named if other in modules and other != name}


def import_circles(modules: dict[str, Path]) -> list[list[str]]:
    """Strongly connected components of the import graph with more than one module."""
    graph = {name: sorted(_imports(name, path, modules)) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for other in edges:
                if other not in index:
                    index[other] = low[other] = len(index)
                    stack.append(other)
                    on_stack.add(other)
                    work.append((other, iter(graph[other])))
                    break
                if other in on_stack:
                    low[node] = min(low[node], index[other])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))

    for name in graph:
        if name not in index:
            visit(name)
    return circles


def test_no_import_circle() -> None:
    assert import_circles(_modules()) == []


def test_the_circle_finder_finds_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub.b import B\n"
    )
    (package / "sub" / "b.py").write_text("from .. import c\n")
    (package / "c.py").write_text("def f():\n    from pkg import a\n")
    (package / "d.py").write_text("from pkg import c\n")
    assert import_circles(_modules(package)) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def _sizes() -> list[tuple[str, str, str, int]]:
    sizes = []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        sizes.append(("module", name, "", len(text.splitlines())))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                assert node.end_lineno is not None
                sizes.append((kind, name, node.name, node.end_lineno - node.lineno + 1))
    return sizes


@pytest.mark.parametrize(
    ("kind", "limit"),
    [("module", MAX_MODULE_LINES), ("class", MAX_CLASS_LINES), ("function", MAX_FUNCTION_LINES)],
)
def test_rooms_a_reader_can_hold(kind: str, limit: int) -> None:
    over = [
        (module, name, lines)
        for what, module, name, lines in _sizes()
        if what == kind and lines > limit and (module, name) not in HOT_LOOPS
    ]
    assert over == []


def test_the_hot_loops_are_still_the_only_long_functions() -> None:
    long = {(m, n) for what, m, n, lines in _sizes() if what == "function" and lines > 80}
    assert long == HOT_LOOPS
