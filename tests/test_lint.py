"""Static checks: ruff over the library, the runner, the benchmarks and the tests (rules in
pyproject.toml, ``[tool.ruff]``), mypy over the library and the runner (``[tool.mypy]``), and no
module reaching for another module's private names.

ruff and mypy are pinned in requirements-dev.txt; where one is not installed its test is skipped and
says so (CI installs them, so they run there)."""

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


def test_mypy_is_clean(tmp_path):
    pytest.importorskip("mypy", reason="mypy (requirements-dev.txt) is not installed")
    # files and settings come from pyproject.toml; a fresh cache, so the result never depends on an
    # earlier run (a cold run of the whole tree takes about 15-30 s here)
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
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
    src = ("from pointfail.running.judges.client import ChatJudge, _Hidden\nfrom .x import _y, public\n"
           "from os import _exit\nfrom pointfail import __version__\n")
    assert _private_imports(src, "m.py") == ["m.py:1: imports _Hidden from pointfail.running.judges.client",
                                             "m.py:2: imports _y from .x"]
