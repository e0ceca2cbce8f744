"""Every import of one of our own modules resolves, including the ones inside function bodies.

Many commands import lazily (inside the function that needs the module) so that ``pointfail --help``
and the runner start fast; such an import is only executed when that function runs. When a module
is split or renamed (``pointfail.generated.suites.common`` became ``suites.manifest``, ``suites.writer``, ...),
a stale lazy import stays invisible to linting and to every test that does not call that function:
``make bundle`` failed that way with ``ModuleNotFoundError: No module named
'pointfail.generated.suites.common'`` before writing anything. This test reads every ``import``/``from ...
import`` naming ``pointfail`` or ``pointfail_runner`` in ``src/`` and ``runner/src/`` (any depth in the
syntax tree) and checks that the module imports and has each imported name.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"pointfail": REPO / "src" / "pointfail", "pointfail_runner": REPO / "runner" / "src" / "pointfail_runner"}


def _module_name(pkg: str, root: Path, path: Path) -> tuple[str, bool]:
    parts = path.relative_to(root).with_suffix("").parts
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join((pkg, *parts)), is_pkg


def own_imports() -> list[tuple[str, int, str, str]]:
    """``(file, line, module, name)`` for every import of one of our modules; ``name`` is ``""`` for a
    plain ``import module``."""
    found = []
    for pkg, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            modname, is_pkg = _module_name(pkg, root, path)
            package = modname if is_pkg else modname.rpartition(".")[0]
            rel = str(path.relative_to(REPO))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
                if isinstance(node, ast.ImportFrom):
                    target = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                        if node.level else (node.module or "")
                    if target.split(".")[0] in PACKAGES:
                        found += [(rel, node.lineno, target, a.name) for a in node.names if a.name != "*"]
                elif isinstance(node, ast.Import):
                    found += [(rel, node.lineno, a.name, "") for a in node.names if a.name.split(".")[0] in PACKAGES]
    return found


def _problem(module: str, name: str) -> str | None:
    """Why ``from module import name`` fails, or ``None``. A module that needs a third-party package this
    environment lacks (an optional extra) is not judged here."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in PACKAGES:
            return None
        return f"no module {e.name!r}"
    if not name or hasattr(mod, name):
        return None
    try:
        importlib.import_module(f"{module}.{name}")
        return None
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in PACKAGES:
            return None
        return f"{module} has no name {name!r}"


def test_the_scan_sees_lazy_imports():
    """The scan reaches imports inside function bodies (the bundle's manifest import is one)."""
    seen = {(f, m, n) for f, _, m, n in own_imports()}
    assert ("runner/src/pointfail_runner/bundle.py", "pointfail.generated.suites.manifest", "compare_manifests") in seen
    assert ("runner/src/pointfail_runner/bundle.py", "pointfail_runner", "images") in seen


def test_problem_names_a_stale_module_and_a_missing_name():
    assert _problem("pointfail.generated.suites.common", "compare_manifests") == "no module 'pointfail.generated.suites.common'"
    assert _problem("pointfail.generated.suites.manifest", "no_such_name") == "pointfail.generated.suites.manifest has no name 'no_such_name'"
    assert _problem("pointfail.generated.suites", "manifest") is None  # a submodule
    assert _problem("pointfail.generated.suites.manifest", "compare_manifests") is None


@pytest.mark.parametrize("pkg", sorted(PACKAGES))
def test_every_own_import_resolves(pkg):
    problems = [f"{f}:{line}: from {m} import {n or '(module)'}: {why}"
                for f, line, m, n in own_imports() if m.split(".")[0] == pkg and (why := _problem(m, n))]
    assert problems == []
