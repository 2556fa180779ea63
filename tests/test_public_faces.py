"""The shape of the code: packages are used through their public faces.

The rule (``test_imports_across_packages_use_public_faces``): a private module is one with
a path component starting with ``_`` (not a dunder), and it belongs to the package that
holds it: ``engine.rules._schema`` belongs to ``engine.rules``, ``engine._money`` to
``engine``. A private module may be imported only by modules inside its own package (its
subpackages included). Everything else imports the package's face, its ``__init__``,
which lists what it offers in ``__all__``: ``from engine.rules import StrictModel``,
never ``from engine.rules._schema import StrictModel`` from ``engine/builtin/``.

So the top-level private modules (``engine/_money.py``, ``engine/_errors.py``,
``engine/_clock.py``, ``engine/_plugins.py``, ...) are the core's own: any module under
``engine/`` may import them, and code outside ``engine/`` reads them through
``engine/__init__.py``'s re-exports.

Only ``engine/**/*.py`` is checked. Tests may import a private module they test directly.
The walk is pure: ``ast`` on the sources, nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "engine"


def module_name(path: Path) -> str:
    """``engine/rules/_schema.py`` -> ``engine.rules._schema``; a package is its folder."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def engine_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}


def imported(path: Path, tree: ast.AST) -> Iterator[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) of every ``import`` and ``from ... import``
    in the file, wherever it stands (module level, functions, ``if TYPE_CHECKING:``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target, [alias.name for alias in node.names]


def owner_of_private(module: str) -> str | None:
    """The package a private module belongs to, or ``None`` for a public module."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def face_violations(name: str, path: Path, tree: ast.AST) -> list[str]:
    found = []
    for line, target, names in imported(path, tree):
        if target != "engine" and not target.startswith("engine."):
            continue
        # ``from engine.sniper import _session`` reaches the private module as well
        for reached in [target, *(f"{target}.{n}" for n in names if n.startswith("_"))]:
            owner = owner_of_private(reached)
            if owner is None or name == owner or name.startswith(owner + "."):
                continue
            where = path.relative_to(ROOT)
            found.append(f"{where}:{line}: imports {reached}, private to {owner}; use its face")
    return found


@pytest.mark.parametrize(
    ("module", "source", "bad"),
    [
        ("engine.builtin._hold", "from ..rules._schema import StrictModel", True),
        ("engine.builtin._hold", "from ..rules import StrictModel", False),
        ("engine.builtin._hold", "from .._money import format_usd", False),
        ("engine.builtin._hold", "from ._price import x", False),
        ("engine.cli._run", "import engine.sniper._session", True),
        ("engine.cli._run", "from engine.sniper import _session", True),
        ("engine.builtin", "from . import _hold", False),
        ("engine.rules._load", "from ._schema import build_config_model", False),
        ("engine.rules", "from ._schema import StrictModel", False),
        ("engine.sandbox._app", "from ..client._secret import Secret", True),
        ("engine.hookspecs", "from .notify._events import Notice", True),
    ],
)
def test_the_rule_on_examples(module: str, source: str, bad: bool) -> None:
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    assert bool(face_violations(module, path, ast.parse(source))) is bad


def test_imports_across_packages_use_public_faces() -> None:
    found = []
    for name, path in engine_modules().items():
        found += face_violations(name, path, ast.parse(path.read_text("utf-8")))
    assert not found, "\n".join(found)


# -- import cycles --------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _without_type_checking(tree: ast.AST) -> ast.AST:
    """The tree with the bodies of ``if TYPE_CHECKING:`` removed (they never run)."""

    class Strip(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.AST:
            if _is_type_checking(node.test):
                node.body = [ast.Pass()]
            self.generic_visit(node)
            return node

    return Strip().visit(tree)


class _ModuleLevel(ast.NodeVisitor):
    """Collects the import statements that run when the module is imported: those outside
    function bodies (class bodies run at import time)."""

    def __init__(self) -> None:
        self.found: list[ast.stmt] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        pass

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        pass

    def visit_Import(self, node: ast.Import) -> None:
        self.found.append(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.found.append(node)


def import_graph(*, type_checking: bool, functions: bool = False) -> dict[str, set[str]]:
    """module -> the engine modules it imports at module level. An edge goes to the module
    named, or to the submodule when ``from package import submodule``; importing
    ``engine.rules._schema`` also runs ``engine/rules/__init__.py``, but that is not an edge
    here. Imports in a function body are edges only when ``functions`` is true: they run
    when called, after every module is loaded, and are the one sanctioned way to reach up
    a layer (the rules loader builds the default plugin host that way). ``if
    TYPE_CHECKING:`` imports are edges only when ``type_checking`` is true."""
    modules = engine_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text("utf-8"))
        if not type_checking:
            tree = _without_type_checking(tree)
        if not functions:
            collector = _ModuleLevel()
            collector.visit(tree)
            tree = ast.Module(body=collector.found, type_ignores=[])
        for _line, target, names in imported(path, tree):
            for reached in [f"{target}.{n}" for n in names] or [target]:
                reached = reached if reached in modules else target
                if reached in modules and reached != name:
                    graph[name].add(reached)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_cycles_finds_a_circle_and_only_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_engine_modules() -> None:
    """No module of engine/ imports, at module level, one that imports it back."""
    assert cycles(import_graph(type_checking=False)) == []


def test_no_import_cycle_in_the_rules_package_at_all() -> None:
    """The rules circle (``_schema`` and ``_prices`` importing each other) stays undone:
    ``StrictModel`` lives in ``rules/_strict.py``, below both. Every import counts here,
    late ones in functions included."""
    graph = import_graph(type_checking=True, functions=True)
    rules = {m: {t for t in ts if t.startswith("engine.rules")} for m, ts in graph.items()}
    rules = {m: ts for m, ts in rules.items() if m.startswith("engine.rules")}
    assert cycles(rules) == []


# -- size ----------------------------------------------------------------------------------

MAX_LINES = 800


def test_every_source_file_is_under_800_lines() -> None:
    """A file that grows past this is split along its seams (as the ledger was: writing in
    ``_ledger.py``, reading in ``_queries.py``, buy orders in ``_orders.py``)."""
    long = [
        f"{path.relative_to(ROOT)}: {count} lines"
        for top in ("engine", "plugins", "tests", "bench")
        for path in sorted((ROOT / top).rglob("*.py"))
        if (count := len(path.read_text("utf-8").splitlines())) >= MAX_LINES
    ]
    assert not long, "\n".join(long)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_hookspecs_takes_the_event_types_from_below_notify() -> None:
    """The circle ``_plugins -> builtin -> notify -> hookspecs -> notify`` stays undone:
    the hook specifications take the notification types from ``engine/_events.py`` and
    ``engine/_notifiers.py``, which reach (by any import, type-checking and late ones
    included) neither the hooks, nor notify, nor the plugin host and the built-ins that
    register the notifiers."""
    graph = import_graph(type_checking=True, functions=True)
    assert not {t for t in graph["engine.hookspecs"] if t.startswith("engine.notify")}
    above = ("engine.hookspecs", "engine.notify", "engine.builtin", "engine._plugins")
    for low in ("engine._events", "engine._notifiers"):
        reached = reachable(graph, low)
        assert not [m for m in reached if m.startswith(above)], low


# -- the module map --------------------------------------------------------------------------


def test_the_architecture_map_names_every_module() -> None:
    """docs/architecture.md's module table names every module under engine/: a package by
    its folder (`` `engine/rules/` ``), a module by its path (`` `engine/rules/_load.py` ``)
    or by its file name in its package's row (`` `_yaml.py` `` in the `engine/rules/` row)."""
    doc = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("| `")]

    def named(path: Path) -> bool:
        rel = path.relative_to(ROOT)
        if path.name == "__init__.py":
            return f"`{rel.parent.as_posix()}/`" in doc
        if f"`{rel.as_posix()}`" in doc:
            return True
        package = f"`{rel.parent.as_posix()}/`"
        return any(package in row.split("|")[1] and f"`{path.name}`" in row for row in rows)

    missing = [str(p.relative_to(ROOT)) for p in sorted(ENGINE.rglob("*.py")) if not named(p)]
    assert not missing, "not in docs/architecture.md: " + ", ".join(missing)
