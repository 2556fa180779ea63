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
