"""No shell anywhere on the container path (``shared/DESIGN.md``, "Containers"): the runner package,
every Dockerfile under ``images/`` and the Makefile recipes that call the runner.

* Python (AST, so prose in docstrings does not count): no ``shell=True`` keyword, no ``os.system``,
  ``os.popen``, ``subprocess.getoutput``/``getstatusoutput``, no argument list that runs a shell with
  ``-c`` (``["sh", "-c", …]``).
* Dockerfiles: ``RUN``, ``CMD`` and ``ENTRYPOINT`` in exec form (a JSON array), never a shell with ``-c``.
* Makefile: recipes that call ``pointfail-runner`` or ``pointfail_runner`` contain no pipes, command
  lists (``;``, ``&&``, ``||``), command substitution or ``sh -c``.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHELLS = {"sh", "bash", "dash", "zsh", "ash", "ksh"}
BANNED_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput")}


def python_violations(source: str, name: str = "<src>") -> list[str]:
    """Shell uses in Python source, as ``name:line: what``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    out.append(f"{name}:{node.lineno}: shell= keyword")
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in BANNED_CALLS:
                out.append(f"{name}:{node.lineno}: {f.value.id}.{f.attr}")
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None for e in node.elts]
            for a, b in zip(vals, vals[1:]):
                if a and Path(a).name in SHELLS and b == "-c":
                    out.append(f"{name}:{node.lineno}: argv runs {a} -c")
    return out


def dockerfile_violations(text: str, name: str = "Dockerfile") -> list[str]:
    """Shell-form RUN/CMD/ENTRYPOINT (or an exec form that runs ``sh -c``) in a Dockerfile."""
    out = []
    joined = re.sub(r"\\\n", " ", text)
    for line in joined.splitlines():
        s = line.strip()
        m = re.match(r"(?i)(RUN|CMD|ENTRYPOINT)\s+(.*)$", s)
        if not m:
            continue
        arg = m.group(2).strip()
        try:
            argv = json.loads(arg)
        except json.JSONDecodeError:
            out.append(f"{name}: {m.group(1)} in shell form: {s[:80]}")
            continue
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            out.append(f"{name}: {m.group(1)} not a JSON array of strings")
        elif any(Path(a).name in SHELLS and b == "-c" for a, b in zip(argv, argv[1:])):
            out.append(f"{name}: {m.group(1)} runs a shell with -c")
    return out


def makefile_violations(text: str) -> list[str]:
    """Recipe lines calling the runner that use shell features."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("\t") or not re.search(r"pointfail[-_]runner", line):
            continue
        if re.search(r"\||;|&&|`|\$\(shell|\$\((?!\w+\))|\bsh\s+-c\b|\bbash\s+-c\b", line):
            out.append(f"Makefile:{n}: {line.strip()}")
    return out


def test_checker_catches_what_it_should():
    bad_py = ("import os, subprocess\nsubprocess.run('ls', shell=True)\nos.system('ls')\n"
              "subprocess.run(['/bin/sh', '-c', 'ls'])\n")
    assert len(python_violations(bad_py)) == 3
    assert python_violations("'''never use shell=True or sh -c'''\nsubprocess.run(['ls'], shell=False)\n") == []
    assert dockerfile_violations('RUN apt-get update\nCMD ["sh", "-c", "x"]\nENTRYPOINT ["/bin/x"]\n') == [
        "Dockerfile: RUN in shell form: RUN apt-get update", "Dockerfile: CMD runs a shell with -c"]
    assert dockerfile_violations('RUN ["a", \\\n  "b"]\n') == []
    assert len(makefile_violations("x:\n\tpointfail-runner run | tee log\n\tpointfail-runner build && y\n"
                                   "\tpointfail-runner run --study $(STUDY)\n")) == 2


def test_runner_package_has_no_shell():
    files = sorted((REPO / "runner").rglob("*.py"))
    assert files, "runner package not found"
    bad = [v for p in files for v in python_violations(p.read_text(), str(p.relative_to(REPO)))]
    assert bad == []


def test_bench_and_runner_tests_have_no_shell():
    files = [p for p in [REPO / "bench/runner.py", *sorted((REPO / "tests").glob("test_runner*.py")),
                         *sorted((REPO / "tests").glob("test_images*.py"))] if p.exists()]
    bad = [v for p in files for v in python_violations(p.read_text(), str(p.relative_to(REPO)))]
    assert bad == []


def test_dockerfiles_are_exec_form():
    files = sorted((REPO / "images").rglob("Dockerfile*"))
    assert len(files) >= 4
    bad = [v for p in files for v in dockerfile_violations(p.read_text(), str(p.relative_to(REPO)))]
    assert bad == []


def test_makefile_runner_recipes_have_no_shell_features():
    mk = REPO / "Makefile"
    if not mk.exists():
        pytest.fail("Makefile missing")
    text = mk.read_text()
    assert re.search(r"pointfail[-_]runner", text)
    assert makefile_violations(text) == []
