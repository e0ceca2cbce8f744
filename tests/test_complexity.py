"""Small functions (issue #29, item 5): ruff's C901 at ``max-complexity = 10`` ([tool.ruff.lint.mccabe]
in pyproject.toml) over the library and the runner. The functions above it today are listed by
qualified name in ``[tool.pointfail.complexity] allowed``; the list may only shrink: a new offender
fails, and so does a listed name that no longer offends (take it off the list)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = {"src": REPO / "src", "runner/src": REPO / "runner" / "src"}


def _qualnames(path: Path) -> dict[int, str]:
    """Line of each ``def`` in ``path`` -> its qualified name (``pointfail.m.Class.method``)."""
    root = next(r for r in ROOTS.values() if r in path.parents)
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    out: dict[int, str] = {}

    def walk(node: ast.AST, prefix: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = [*prefix, child.name]
                if not isinstance(child, ast.ClassDef):
                    out[child.lineno] = ".".join(name)
                walk(child, name)
            else:
                walk(child, prefix)
    walk(ast.parse(path.read_text(encoding="utf-8")), parts)
    return out


def offenders() -> set[str]:
    """Qualified names of the functions ruff's C901 reports in src/ and runner/src/."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "C901",
                           "--output-format", "json", "--exit-zero", *ROOTS], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    found = set()
    for hit in json.loads(proc.stdout):
        path = Path(hit["filename"])
        found.add(_qualnames(path)[hit["location"]["row"]])
    return found


def allowed() -> list[str]:
    """The listed exceptions, from pyproject.toml."""
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return cfg["tool"]["pointfail"]["complexity"]["allowed"]


def test_the_threshold_is_torchmetrics_ten():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert cfg["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"] == 10


def test_no_function_above_ten_outside_the_list_and_the_list_only_shrinks():
    pytest.importorskip("ruff", reason="ruff (requirements-dev.txt) is not installed")
    listed = allowed()
    assert len(listed) == len(set(listed)), "a name is listed twice"
    found = offenders()
    new = sorted(found - set(listed))
    stale = sorted(set(listed) - found)
    assert not new, "above complexity 10 and not listed (split them): " + ", ".join(new)
    assert not stale, "listed but no longer above 10 (take them off the list): " + ", ".join(stale)


def test_qualified_names_follow_classes():
    src = REPO / "src" / "pointfail" / "geometry" / "regions.py"
    names = _qualnames(src)
    assert "pointfail.geometry.regions.TargetRegion.__init__" in names.values()
