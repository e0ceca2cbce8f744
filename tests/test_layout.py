"""The method stands apart (issue #29, item 1): the modules at the top of ``src/pointfail`` (families,
frames, prompts, geometry, scoring, the official rules, the judge's miss/oracle/protocol, aggregate,
metrics, tables, records and the few helpers they share) never import a machinery wing -- by any import
form: ``import``, ``from ... import`` (absolute or relative), function-level imports, and
``importlib.import_module("pointfail....")`` / lazy-export strings. The package docstring reads as the
pipeline and names files that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pointfail

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "src" / "pointfail"
WINGS = ("running", "inputs", "generated", "outputs", "commands")
# the front door: the `pointfail` entry point reads the command table (a wing) and nothing else
FRONT_DOOR = ("pointfail.cli", "pointfail.__main__")
# the package's lazy-export table (``from pointfail import load_benchmark``) names loaders by string; it
# imports nothing until a name is asked for, and it is the public surface, not the method
LAZY_EXPORTS = "pointfail"
# Known imports of a wing by the method, today; this list may only shrink (the test fails on a new one
# and on one that went away). Each is a named debt, not a permission.
KNOWN: set[tuple[str, str]] = {
    # the aggregate reads the study file's [aggregate] table and its judges' lineage line
    ("pointfail.aggregate.study", "pointfail.inputs.study"),
    ("pointfail.aggregate.study", "pointfail.inputs.study.AggregateSpec"),
    ("pointfail.aggregate.study", "pointfail.inputs.study.StudyError"),
    ("pointfail.aggregate.study", "pointfail.inputs.study.load_study"),
    ("pointfail.aggregate.study", "pointfail.running.judges.lineage"),
    ("pointfail.aggregate.study", "pointfail.running.judges.lineage.lineage_note"),
    # the judge weights the failure composition rests on: the digest study.lock pins (judge_pin_note)
    ("pointfail.aggregate.study", "pointfail.inputs.studylock"),
    ("pointfail.aggregate.study", "pointfail.inputs.studylock.LockError"),
    ("pointfail.aggregate.study", "pointfail.inputs.studylock.lock_path"),
    ("pointfail.aggregate.study", "pointfail.inputs.studylock.read_lock"),
    ("pointfail.aggregate.study", "pointfail.running.judges.lineage.LineageError"),
    ("pointfail.aggregate.study", "pointfail.running.judges.lineage.judge_plan"),
    ("pointfail.aggregate.study", "pointfail.running.judges.lineage.model_judges"),
    # the publisher's warning printed under RefSpatial's Unseen split
    ("pointfail.aggregate.writing", "pointfail.inputs.benchmarks.refspatial"),
    ("pointfail.aggregate.writing", "pointfail.inputs.benchmarks.refspatial.UNSEEN_WARNING"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_wing(name: str) -> bool:
    return any(name == f"pointfail.{w}" or name.startswith(f"pointfail.{w}.") for w in WINGS)


def method_modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if not is_wing(module_name(p))
                  and module_name(p) not in FRONT_DOOR and module_name(p) != LAZY_EXPORTS)


def imported_names(path: Path, mod: str | None = None) -> set[str]:
    """Every pointfail module ``path`` (module ``mod``, by default its own name) names in an import (any
    form, any depth) or in a string that is a module path."""
    mod = mod or module_name(path)
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # a family's ``backend = "pointfail.running.backends.<name>"`` declares which module runs it inside
    # its image (the worker imports it there); the family itself never imports it
    declared = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and [getattr(t, "id", None) for t in n.targets] == ["backend"]}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                frm = ".".join(base + ([node.module] if node.module else []))
            else:
                frm = node.module or ""
            found.add(frm)
            found.update(f"{frm}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in declared:
            # a string that is a module path (``importlib.import_module`` targets, lazy-export tables,
            # discovery package names); prose that mentions a module is not an import
            m = re.fullmatch(r"(pointfail(?:\.\w+)+)(?::\w+)?", node.value)
            if m:
                found.add(m.group(1))
    return {n for n in found if n == "pointfail" or n.startswith("pointfail.")}


def wing_imports() -> set[tuple[str, str]]:
    return {(module_name(p), n) for p in method_modules() for n in imported_names(p) if is_wing(n)}


def test_the_method_never_imports_a_wing():
    found = wing_imports()
    new = sorted(found - KNOWN)
    gone = sorted(KNOWN - found)
    assert not new, "the method imports machinery:\n" + "\n".join(f"{a} -> {b}" for a, b in new)
    assert not gone, "no longer imported (take off KNOWN):\n" + "\n".join(f"{a} -> {b}" for a, b in gone)


def test_the_check_sees_every_import_form(tmp_path):
    src = ("import pointfail.running.worker\nfrom ..inputs import study\n"
           "def f():\n    from pointfail.outputs.report import make_report\n"
           "X = {'a': 'pointfail.generated.testing.tiny:make'}\nfrom pointfail.judge import miss\n")
    p = tmp_path / "registry.py"
    p.write_text(src)
    names = imported_names(p, "pointfail.aggregate.registry")
    assert {n for n in names if is_wing(n)} == {
        "pointfail.running.worker", "pointfail.inputs", "pointfail.inputs.study", "pointfail.outputs.report",
        "pointfail.outputs.report.make_report", "pointfail.generated.testing.tiny"}
    assert "pointfail.judge.miss" in names and not is_wing("pointfail.judge.miss")


def test_the_package_docstring_is_the_pipeline_and_names_real_files():
    doc = pointfail.__doc__ or ""
    for arrow in ("Sample", "Response", "ParseResult", "Record", "Judgment", "Table"):
        assert arrow in doc, arrow
    files = re.findall(r"``(\S+\.py|\S+/)``", doc)
    assert len(files) >= 8
    for f in files:
        assert (REPO / f if f.startswith("tests/") else PKG / f).exists(), f
    # the method's files are at the top level, not in a wing
    method = files[: next(i for i, f in enumerate(files) if f.startswith("tests/"))]
    assert not any(is_wing("pointfail." + f.split("/")[0].removesuffix(".py")) for f in method), method
