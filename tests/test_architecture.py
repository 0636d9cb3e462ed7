"""The shape of the code, read from its source with ast (nothing is imported):

- the first-party packages (pyproject's packages.find list) import each other without a
  cycle. Every import counts, those inside functions too (a deferred import is a
  dependency all the same), except those under ``if TYPE_CHECKING:``, which never run.
  Package level is the rule of docs/design.md ("the folders are the architecture"); the
  modules inside one package must not form a cycle either, since such a cycle makes the
  result of an import depend on which module is imported first. A package's
  ``__init__`` counts as its module ``pkg``.
- no class is longer than MAX_CLASS_LINES lines.
- some modules must not import some others at all, not even under ``if TYPE_CHECKING:``
  (FORBIDDEN_IMPORTS): a type-only import is a dependency the cycle check cannot see.
  The schedules (``launch/schedules.py``) use the run through their ``ScheduleHost``
  protocol, which ``launch.train.Run`` satisfies: every ``run.<name>`` they use is a
  member of the protocol, and every member is one of ``Run``'s.
- the lower layers import only what lies below them (PACKAGE_IMPORTS, in any block): the
  engines (``games``) import no other package of the project, and name none in a string
  either (``upward_references``: no ``"module:attr"`` reference, no module of another
  package), since a string the import graph cannot see is a dependency all the same: a
  package above keeps its own table of what it holds per game, keyed by the game's name; the
  networks and the copies that play them (``inference``) rest on ``games`` alone, so that
  training (``learner``) and every player (``actors``, ``evaluation``) share them from
  above; the search loads no network, nor torch (it calls an evaluator it is handed).
- ``ray.init(`` is called in one module outside the tests, RAY_START: every entry point
  starts Ray through it, with the same options.
- a game's name is compared with a literal (``game.name == "connect4"``, ``name in ("go",
  "othello")``, ``case "hex":``) in at most MAX_GAME_NAME_COMPARISONS places outside
  ``games/`` and the tests: the rest of the system asks the game's descriptor
  (``games.descriptor(game)``) what it needs to know about the game. Likewise an
  algorithm's name (``config.algo == "avi"``) outside ``algorithms/``, at most
  MAX_ALGORITHM_NAME_COMPARISONS times: ``algorithms.descriptor(algo)`` holds its facts.
- no Python file outside ``algorithms/`` and the tests names the hybrid (``files_naming``):
  a built-in algorithm is one module, its collector, loss and settings in it.
- a policy's name (``"greedy"``, ``"mcts"``, ..., and ``"auto"``) is compared with a
  literal in at most MAX_POLICY_NAME_COMPARISONS places of the code that builds agents
  (POLICY_USERS) outside its registry (POLICY_REGISTRY): evaluation, the board and GTP
  build their players through ``evaluation.policy_registry``, with no chain of names.

Each test fails naming what breaks the rule: the cycle with one import site per edge,
the classes with their length, the forbidden import or the ``ray.init`` call with its line."""

from __future__ import annotations

import ast
import re
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_CLASS_LINES = 300
# module -> modules it must not import, in any block (TYPE_CHECKING's included).
FORBIDDEN_IMPORTS = {"launch.schedules": ("launch.train",)}
# package -> ("only", first-party packages it may import besides itself) or ("not", modules,
# first-party or not, that none of its modules may import); in any block.
PACKAGE_IMPORTS = {"games": ("only", ()), "inference": ("only", ("games",)), "search": ("not", ("learner", "inference", "torch"))}
RAY_START = "lifecycle/ray_start.py"  # the one module that calls ray.init
MAX_GAME_NAME_COMPARISONS = 0  # a game's facts live in its descriptor: nothing outside games/ compares its name
GAME_NAMES_AT_HOME = "games"  # the package where a game's name is compared with literals
MAX_ALGORITHM_NAME_COMPARISONS = 0  # an algorithm's facts live in its descriptor (algorithms/)
ALGORITHM_NAMES_AT_HOME = "algorithms"
MAX_POLICY_NAME_COMPARISONS = 0  # a policy is declared once, in its registry: nothing else compares its name
POLICY_REGISTRY = "evaluation/policy_registry.py"  # the module where a policy's name is compared with literals
# Where agents are built from a policy's name (packages, or a module); launch/experiments is not yet among them.
POLICY_USERS = ("evaluation", "board", "gtp", "search", "launch/gtp_serve.py", "launch/experiments")
# Not the project's source: checked-out environments, caches, and the tests' own clusters.
NOT_SOURCE = {".git", ".venv", "tests", "build", "dist", "node_modules", "__pycache__"}


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


def _every_import(module: str, path: Path) -> list[tuple[str, int]]:
    """The modules ``path`` imports, with their lines, in every block: those under ``if
    TYPE_CHECKING:`` too (``_Imports`` leaves them out, as the cycle checks should)."""
    class Everything(_Imports):
        visit_If = ast.NodeVisitor.generic_visit

    visitor = Everything(module, path.name == "__init__.py")
    visitor.visit(ast.parse(path.read_text(), str(path)))
    return visitor.found


def forbidden_imports(forbidden: dict[str, tuple[str, ...]], known: dict[str, Path], root: Path = ROOT) -> list[str]:
    """"path:line imports module" for every import of ``forbidden[module]`` (or of a module
    inside one) by ``module`` (its source file: ``known[module]``, under ``root``)."""
    found = []
    for module, banned in forbidden.items():
        path = known[module]
        for imported, line in _every_import(module, path):
            if any(imported == b or imported.startswith(b + ".") for b in banned):
                found.append(f"{path.relative_to(root)}:{line} imports {imported}")
    return found


def test_no_module_imports_what_it_must_not_even_for_types():
    found = forbidden_imports(FORBIDDEN_IMPORTS, modules())
    assert not found, "forbidden imports (FORBIDDEN_IMPORTS):\n" + "\n".join(found)


def test_the_forbidden_import_check_sees_type_checking_blocks(tmp_path):
    source = tmp_path / "schedules.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from launch.train import Run\n"
                      "import typing\nif typing.TYPE_CHECKING:\n    from launch import train\n")
    found = forbidden_imports({"launch.schedules": ("launch.train",)}, {"launch.schedules": source}, tmp_path)
    assert [f.split(" imports ")[1] for f in found] == ["launch.train", "launch.train.Run", "launch.train"]


def package_bans(rules: dict[str, tuple[str, tuple[str, ...]]], known: dict[str, Path]) -> dict[str, tuple[str, ...]]:
    """PACKAGE_IMPORTS as FORBIDDEN_IMPORTS: each module of a package -> what it must not import."""
    first_party = {m.split(".")[0] for m in known}
    bans = {}
    for package, (kind, names) in rules.items():
        banned = tuple(sorted(first_party - {package, *names})) if kind == "only" else names
        bans.update({m: banned for m in known if m.split(".")[0] == package})
    return bans


def test_the_lower_layers_import_only_what_lies_below():
    found = forbidden_imports(package_bans(PACKAGE_IMPORTS, modules()), modules())
    assert not found, "imports against the layers (PACKAGE_IMPORTS):\n" + "\n".join(found)


def test_the_layer_rules_ban_the_packages_above(tmp_path):
    known = {"games": tmp_path / "g.py", "inference.network": tmp_path / "n.py", "learner.learner": tmp_path / "l.py",
             "search.mcts": tmp_path / "m.py"}
    bans = package_bans({"inference": ("only", ("games",)), "search": ("not", ("torch",))}, known)
    assert bans == {"inference.network": ("learner", "search"), "search.mcts": ("torch",)}
    known["inference.network"].write_text("import games\nfrom learner.learner import Learner\n")
    known["search.mcts"].write_text("def f():\n    import torch.nn\n")
    found = forbidden_imports(bans, known, tmp_path)
    assert found == ["n.py:2 imports learner.learner", "n.py:2 imports learner.learner.Learner",
                     "m.py:2 imports torch.nn"]


# A string that names an object to import: "module:attribute" (or "package.module:attribute").
MODULE_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")


def upward_references(package: str, known: dict[str, Path], root: Path = ROOT) -> list[str]:
    """"path:line 'string'" for every string constant in ``package``'s modules (``known``:
    dotted name -> file) that is a ``"module:attribute"`` reference or the name of a
    module of another first-party package (an ``importlib.import_module`` argument)."""
    others = {m for m in known if m.split(".")[0] != package}
    found = []
    for module, path in known.items():
        if module.split(".")[0] != package:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and (MODULE_ATTRIBUTE.fullmatch(node.value) or node.value in others)):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.value!r}")
    return found


def test_the_games_name_no_package_above_them_in_a_string():
    found = upward_references("games", modules())
    assert not found, ("strings in games/ that name code to import (a package above keeps its own per-game "
                       "table instead; a game's own functions are given as objects):\n" + "\n".join(found))


def test_the_upward_reference_finder_finds_references_and_module_names(tmp_path):
    known = {"games": tmp_path / "g.py", "games.go": tmp_path / "go.py", "evaluation.suites": tmp_path / "s.py"}
    known["games"].write_text('"""A doc: evaluation.suites:go_suites is prose."""\nBUILTIN = {"go": "games.go"}\n')
    known["games.go"].write_text('D = dict(suites="evaluation.suites:go_suites", grid="board.grid:connect4_grid",\n'
                                 '         key="actors.epsilon", at="12:30", mod="evaluation.suites")\n')
    known["evaluation.suites"].write_text('x = "games.go:Go"\n')
    assert upward_references("games", known, tmp_path) == [
        "go.py:1 'evaluation.suites:go_suites'", "go.py:1 'board.grid:connect4_grid'", "go.py:2 'evaluation.suites'"]


def _class(path: Path, name: str) -> ast.ClassDef:
    found = [n for n in ast.walk(ast.parse(path.read_text(), str(path))) if isinstance(n, ast.ClassDef) and n.name == name]
    assert found, f"no class {name} in {path.relative_to(ROOT)}"
    return found[0]


def _members(cls: ast.ClassDef) -> set[str]:
    """A class's methods and attributes: annotated in its body, or set on ``self``."""
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    names.add(t.attr)
    return names


def test_the_schedules_use_the_run_through_their_protocol_and_the_run_satisfies_it():
    schedules, train = ROOT / "launch" / "schedules.py", ROOT / "launch" / "train.py"
    protocol = {n for n in _members(_class(schedules, "ScheduleHost")) if not n.startswith("_")}
    used = {n.attr for n in ast.walk(ast.parse(schedules.read_text()))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "run"}
    assert used <= protocol, f"launch/schedules.py uses run.{sorted(used - protocol)}, not in ScheduleHost"
    missing = protocol - _members(_class(train, "Run"))
    assert not missing, f"launch.train.Run lacks ScheduleHost's {sorted(missing)}"


def ray_init_calls(root: Path) -> list[str]:
    """"path:line" of every ``ray.init(...)`` call (or ``from ray import init``) in the
    Python files under ``root`` that are source (NOT_SOURCE left out)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if NOT_SOURCE & set(relative.parts) or any(p.startswith(".") for p in relative.parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            call = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "init"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "ray")
            imported = (isinstance(node, ast.ImportFrom) and node.module == "ray"
                        and any(a.name == "init" for a in node.names))
            if call or imported:
                found.append(f"{relative}:{node.lineno}")
    return found


def test_ray_is_started_in_one_module():
    calls = ray_init_calls(ROOT)
    elsewhere = [c for c in calls if c.rsplit(":", 1)[0] != RAY_START]
    assert not elsewhere, (f"ray.init called outside {RAY_START} (start Ray with lifecycle.ray_start.start_ray):\n"
                           + "\n".join(elsewhere))
    assert calls, f"no ray.init call in {RAY_START}"


def test_the_ray_init_finder_finds_calls_and_skips_the_tests(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import ray\n\ndef f():\n    ray.init(num_cpus=2)\n")
    (tmp_path / "pkg" / "b.py").write_text("from ray import init\n# ray.init( in a comment\n")
    (tmp_path / "tests" / "c.py").write_text("import ray\nray.init()\n")
    assert ray_init_calls(tmp_path) == ["pkg/a.py:4", "pkg/b.py:1"]


def builtin_names(root: Path = ROOT, package: str = "games") -> set[str]:
    """The keys of ``<package>.BUILTIN`` (read from ``<package>/__init__.py``'s source):
    the games', or the algorithms' (``package="algorithms"``)."""
    for node in ast.walk(ast.parse((root / package / "__init__.py").read_text())):
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(
            node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id == "BUILTIN" and isinstance(node.value, ast.Dict):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    raise AssertionError(f"no BUILTIN dict of names in {package}/__init__.py")


def _literals(node: ast.AST) -> set[str]:
    """The strings of a literal: itself, or the items of a tuple, list or set of literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_literals(e) for e in node.elts)) if node.elts else set()
    return set()


def game_name_comparisons(root: Path, names: set[str], home: str = GAME_NAMES_AT_HOME) -> list[str]:
    """"path:line: comparison" for every ``==``, ``!=``, ``in`` or ``not in`` with a literal
    among ``names`` on a side (alone or in a tuple, list or set), and every ``case`` of
    such a literal, in the source files under ``root`` outside the package ``home``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if (NOT_SOURCE & set(relative.parts) or any(p.startswith(".") for p in relative.parts)
                or relative.parts[0] == home):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
            elif isinstance(node, ast.MatchValue):
                sides = [node.value]
            else:
                continue
            if any(_literals(side) & names for side in sides):
                found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_a_game_name_is_compared_with_a_literal_in_few_places():
    found = game_name_comparisons(ROOT, builtin_names())
    assert len(found) <= MAX_GAME_NAME_COMPARISONS, (
        f"{len(found)} comparisons of a game's name with a literal outside {GAME_NAMES_AT_HOME}/ and the tests "
        f"(at most {MAX_GAME_NAME_COMPARISONS}; ask games.descriptor(game) instead):\n" + "\n".join(found))


def test_the_game_name_finder_finds_comparisons_and_skips_games_and_tests(tmp_path):
    for folder in ("pkg", "games", "tests"):
        (tmp_path / folder).mkdir()
    (tmp_path / "games" / "__init__.py").write_text('BUILTIN = {"go": "games.go", "hex": "games.hex"}\n')
    (tmp_path / "pkg" / "a.py").write_text(
        'def f(game, name):\n    if game.name == "go":\n        return 1\n    if name not in ("hex", "x"):\n'
        '        return 2\n    match name:\n        case "hex":\n            return 3\n'
        '    return name == "gone" or {"go": 4}[name]\n')
    (tmp_path / "games" / "b.py").write_text('ok = "go" == "go"\n')
    (tmp_path / "tests" / "c.py").write_text('ok = "hex" in ("hex",)\n')
    names = builtin_names(tmp_path)
    assert names == {"go", "hex"}
    assert game_name_comparisons(tmp_path, names) == [
        "pkg/a.py:2: game.name == 'go'", "pkg/a.py:4: name not in ('hex', 'x')", "pkg/a.py:7: 'hex'"]


def test_an_algorithm_name_is_compared_with_a_literal_in_few_places():
    found = game_name_comparisons(ROOT, builtin_names(ROOT, "algorithms"), ALGORITHM_NAMES_AT_HOME)
    assert len(found) <= MAX_ALGORITHM_NAME_COMPARISONS, (
        f"{len(found)} comparisons of an algorithm's name with a literal outside {ALGORITHM_NAMES_AT_HOME}/ and the "
        f"tests (at most {MAX_ALGORITHM_NAME_COMPARISONS}; ask algorithms.descriptor(algo) instead):\n"
        + "\n".join(found))


def test_the_algorithm_name_finder_finds_comparisons_and_skips_algorithms_and_tests(tmp_path):
    for folder in ("pkg", "algorithms", "tests"):
        (tmp_path / folder).mkdir()
    (tmp_path / "algorithms" / "__init__.py").write_text(
        'BUILTIN = {"avi": "algorithms.avi", "azal": "algorithms.azal"}\n')
    (tmp_path / "pkg" / "a.py").write_text(
        'def f(config, algo):\n    if config.algo == "avi":\n        return 1\n'
        '    if algo not in ("azal", "x"):\n        return 2\n    return algo == "avid"\n')
    (tmp_path / "algorithms" / "b.py").write_text('ok = "avi" == "avi"\n')
    (tmp_path / "tests" / "c.py").write_text('ok = "azal" in ("azal",)\n')
    names = builtin_names(tmp_path, "algorithms")
    assert names == {"avi", "azal"}
    assert game_name_comparisons(tmp_path, names, "algorithms") == [
        "pkg/a.py:2: config.algo == 'avi'", "pkg/a.py:4: algo not in ('azal', 'x')"]


def files_naming(root: Path, word: str, home: str = ALGORITHM_NAMES_AT_HOME) -> list[str]:
    """The Python files under ``root`` outside ``home``/ and NOT_SOURCE (the tests among
    them) whose text holds ``word`` in any case, in code, strings or comments alike; paths
    from ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[0] == home or NOT_SOURCE & set(relative.parts[:-1]):
            continue
        if word.lower() in path.read_text(errors="replace").lower():
            found.append(str(relative))
    return found


def test_no_python_file_outside_algorithms_names_the_hybrid():
    # A built-in algorithm is one module: removing the hybrid is deleting algorithms/hybrid.py
    # and its line in algorithms.BUILTIN, and no other file of the project need change.
    found = files_naming(ROOT, "hybrid")
    assert not found, (f"{len(found)} Python files outside {ALGORITHM_NAMES_AT_HOME}/ and the tests name the hybrid "
                       f"(its collector, loss and settings belong in algorithms/hybrid.py):\n" + "\n".join(found))


def test_the_file_name_finder_finds_a_word_in_any_case_and_skips_algorithms_and_tests(tmp_path):
    for folder in ("pkg/sub", "algorithms", "tests", ".venv"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1  # the Hybrid's\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text('NAME = "HYBRID"\n')
    (tmp_path / "pkg" / "c.py").write_text("x = 2\n")
    (tmp_path / "pkg" / "notes.md").write_text("hybrid\n")
    for folder in ("algorithms", "tests", ".venv"):
        (tmp_path / folder / "d.py").write_text("hybrid = 1\n")
    assert files_naming(tmp_path, "hybrid") == ["pkg/a.py", "pkg/sub/b.py"]


def registered_policy_names(root: Path = ROOT) -> set[str]:
    """The names declared in POLICY_REGISTRY (``PolicyEntry("greedy", ...)``) and its AUTO."""
    names = set()
    for node in ast.walk(ast.parse((root / POLICY_REGISTRY).read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "PolicyEntry"
                and node.args and isinstance(node.args[0], ast.Constant)):
            names.add(node.args[0].value)
        elif (isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["AUTO"]
              and isinstance(node.value, ast.Constant)):
            names.add(node.value.value)
    if not names:
        raise AssertionError(f"no PolicyEntry(\"name\", ...) declaration in {POLICY_REGISTRY}")
    return names


def policy_name_comparisons(root: Path, names: set[str]) -> list[str]:
    """:func:`game_name_comparisons`'s finder run over each of POLICY_USERS (a package, or
    one module of a package), POLICY_REGISTRY left out; paths from ``root``."""
    registry = Path(POLICY_REGISTRY)
    found = []
    for place in map(Path, POLICY_USERS):
        folder = place.parent if place.suffix == ".py" else place
        if not (root / folder).is_dir():
            continue
        home = registry.name if folder == registry.parent else ""  # "": no top-level name is skipped
        for hit in game_name_comparisons(root / folder, names, home):
            if place.suffix != ".py" or hit.startswith(f"{place.name}:"):
                found.append(f"{folder}/{hit}")
    return found


def test_a_policy_name_is_compared_with_a_literal_in_its_registry_alone():
    found = policy_name_comparisons(ROOT, registered_policy_names())
    assert len(found) <= MAX_POLICY_NAME_COMPARISONS, (
        f"{len(found)} comparisons of a policy's name with a literal in {', '.join(POLICY_USERS)} outside "
        f"{POLICY_REGISTRY} (at most {MAX_POLICY_NAME_COMPARISONS}; declare what the policy needs and reads "
        f"in its PolicyEntry and ask the registry):\n" + "\n".join(found))


def test_the_policy_name_finder_finds_comparisons_in_the_users_and_skips_the_registry(tmp_path):
    for folder in ("evaluation", "board", "launch", "tests"):
        (tmp_path / folder).mkdir()
    (tmp_path / POLICY_REGISTRY).write_text(
        'AUTO = "auto"\nregister(PolicyEntry("greedy", "g", f))\nregister(PolicyEntry("mcts", "m", f))\n'
        'def resolve(name):\n    return "greedy" if name == "auto" else name\n')
    (tmp_path / "evaluation" / "runner.py").write_text(
        'def f(policy):\n    if policy == "auto":\n        return 1\n    return policy in ("mcts", "x")\n')
    (tmp_path / "board" / "agents.py").write_text(
        'def g(spec):\n    match spec.policy:\n        case "greedy":\n            return 1\n'
        '    return spec.policy == "gone" or {"mcts": 2}[spec.policy]\n')
    (tmp_path / "launch" / "gtp_serve.py").write_text('ok = "mcts" != policy\n')
    (tmp_path / "launch" / "config.py").write_text('ok = search == "mcts"\n')  # builds no agent
    (tmp_path / "tests" / "c.py").write_text('ok = "mcts" in ("mcts",)\n')
    names = registered_policy_names(tmp_path)
    assert names == {"auto", "greedy", "mcts"}
    assert policy_name_comparisons(tmp_path, names) == [
        "evaluation/runner.py:2: policy == 'auto'", "evaluation/runner.py:4: policy in ('mcts', 'x')",
        "board/agents.py:3: 'greedy'", "launch/gtp_serve.py:1: 'mcts' != policy"]


MAX_FUNCTION_LINES = 80
# Where long functions are allowed: benchmark scripts, read top to bottom, and numba
# kernels, whose loops stay in one function so that the compiler sees them whole.
LONG_FUNCTION_PACKAGES = ("benchmarks",)
KERNEL_DECORATORS = ("njit", "jit", "vectorize", "guvectorize")


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def long_functions(paths: dict[str, Path], root: Path = ROOT) -> list[str]:
    """"path:line name: N lines" for every function or method of ``paths`` over
    MAX_FUNCTION_LINES that is not a numba kernel."""
    long = []
    for path in paths.values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES and not any(_decorator_name(d) in KERNEL_DECORATORS
                                                      for d in node.decorator_list):
                long.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {lines} lines")
    return long


def test_no_function_is_over_the_line_limit():
    checked = {m: p for m, p in modules().items() if m.split(".")[0] not in LONG_FUNCTION_PACKAGES}
    checked.update({f"examples.{p.stem}": p for p in (ROOT / "examples").glob("*.py")})
    long = long_functions(checked)
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them):\n" + "\n".join(long)


def test_the_function_length_check_finds_long_functions_and_skips_kernels(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = tmp_path / "m.py"
    source.write_text(f"from numba import njit\n\ndef long():\n{body}\n@njit(cache=True)\ndef kernel():\n{body}\n"
                      f"class C:\n    def short(self):\n        return 1\n")
    assert long_functions({"m": source}, tmp_path) == [f"m.py:3 long: {MAX_FUNCTION_LINES + 1} lines"]
