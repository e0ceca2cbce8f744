"""Static checks: ruff over the library, the runner, the benchmarks and the tests (rules in
pyproject.toml, ``[tool.ruff]``), and no module reaching for another module's private names.

ruff is pinned in requirements-dev.txt; where it is not installed this test is skipped and says so
(CI installs it, so it runs there)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINTED = ("src", "runner/src", "bench", "tests")


def test_ruff_is_clean():
    pytest.importorskip("ruff", reason="ruff (requirements-dev.txt) is not installed")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           *LINTED], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _private_imports(source: str, name: str) -> list[str]:
    """``from pointfail... import _name`` (or a relative import of one) in ``source`` (the file
    ``name``): a module using another module's private name."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("pointfail")):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{name}:{node.lineno}: imports {a.name} from "
                               f"{'.' * node.level}{node.module or ''}")
    return out


def test_no_module_imports_another_modules_private_names():
    found = [hit for root in ("src", "runner/src") for p in sorted((REPO / root).rglob("*.py"))
             for hit in _private_imports(p.read_text(encoding="utf-8"), str(p.relative_to(REPO)))]
    assert found == [], "\n".join(found)


def test_the_private_import_check_sees_one():
    src = ("from pointfail.judge.client import ChatJudge, _Hidden\nfrom .x import _y, public\n"
           "from os import _exit\nfrom pointfail import __version__\n")
    assert _private_imports(src, "m.py") == ["m.py:1: imports _Hidden from pointfail.judge.client",
                                             "m.py:2: imports _y from .x"]
