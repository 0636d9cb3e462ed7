"""The shape of the code, read from its source with ast (nothing is imported):

- the first-party packages (pyproject's packages.find list) import each other without a
  cycle. Every import counts, those inside functions too (a deferred import is a
  dependency all the same), except those under ``if TYPE_CHECKING:``, which never run.
  Package level is the rule of DESIGN.md ("the folders are the architecture"); the
  modules inside one package must not form a cycle either, since such a cycle makes the
  result of an import depend on which module is imported first. A package's
  ``__init__`` counts as its module ``pkg``.
- no class is longer than MAX_CLASS_LINES lines.

Each test fails naming what breaks the rule: the cycle with one import site per edge, or
the classes with their length."""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 300


def packages() -> list[str]:
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(p.rstrip("*").rstrip(".") for p in include)


def modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the first-party packages."""
    found = {}
    for package in packages():
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


class _Imports(ast.NodeVisitor):
    """The modules a source file imports, at any depth, with their line numbers."""

    def __init__(self, module: str, is_package: bool):
        self.module, self.is_package = module, is_package
        self.found: list[tuple[str, int]] = []

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [(alias.name, node.lineno) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:  # relative: from the package of this module, `level` steps up
            base = self.module.split(".")
            base = base[: len(base) - node.level + (1 if self.is_package else 0)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module
        # `from pkg import name` imports pkg, and pkg.name when that is a module.
        self.found.append((source, node.lineno))
        self.found += [(f"{source}.{alias.name}", node.lineno) for alias in node.names]


def module_graph() -> dict[str, dict[str, str]]:
    """module -> {first-party module it imports: "path:line" of one such import}."""
    known = modules()
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for module, path in known.items():
        visitor = _Imports(module, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text(), str(path)))
        for imported, line in visitor.found:
            if imported in known and imported != module:
                graph[module].setdefault(imported, f"{path.relative_to(ROOT)}:{line}")
        graph.setdefault(module, {})
    return dict(graph)


def package_graph() -> dict[str, dict[str, str]]:
    graph: dict[str, dict[str, str]] = {p: {} for p in packages()}
    for module, edges in module_graph().items():
        for imported, site in edges.items():
            source, target = module.split(".")[0], imported.split(".")[0]
            if source != target:
                graph[source].setdefault(target, site)
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """One cycle (first node repeated at the end) per strongly connected component that has
    one, by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_cycle_in(set(c), graph) for c in components]


def _cycle_in(component: set[str], graph: dict[str, dict[str, str]]) -> list[str]:
    """A shortest cycle through the component's smallest node (breadth first inside it)."""
    start = min(component)
    parent = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node]):
                if nxt == start:
                    path = [node]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, node, start]
                if nxt in component and nxt not in parent:
                    parent[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start} in its own strongly connected component")


def describe(cycle: list[str], graph: dict[str, dict[str, str]]) -> str:
    edges = ", ".join(f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:]))
    return f"{' -> '.join(cycle)}: {edges}"


def test_the_package_import_graph_has_no_cycle():
    graph = package_graph()
    found = cycles(graph)
    assert not found, "package import cycles:\n" + "\n".join(describe(c, graph) for c in found)


def test_the_modules_of_each_package_import_each_other_without_a_cycle():
    graph = module_graph()
    inside = {m: {i: s for i, s in edges.items() if i.split(".")[0] == m.split(".")[0]}
              for m, edges in graph.items()}
    found = cycles(inside)
    assert not found, "module import cycles inside a package:\n" + "\n".join(describe(c, inside) for c in found)


def test_no_class_is_over_the_line_limit():
    long = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} class {node.name}: {lines} lines")
    assert not long, f"classes over {MAX_CLASS_LINES} lines:\n" + "\n".join(long)


def test_the_cycle_finder_finds_a_cycle_and_names_its_imports():
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:2"}, "c": {"a": "c.py:3", "d": "c.py:4"}, "d": {}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert describe(["a", "b", "c", "a"], graph) == "a -> b -> c -> a: a -> b (a.py:1), b -> c (b.py:2), c -> a (c.py:3)"
    assert cycles({"a": {"b": "x"}, "b": {}}) == []
