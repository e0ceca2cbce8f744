"""The README's own commands, run as written in a fresh clone of this checkout's HEAD, leave the clone
clean: `git status --porcelain` prints nothing after them (what they write is ignored or byte for byte
what is committed), so a reviewer checking that a reproduction changed nothing sees nothing.

The commands are read from README.md's code blocks: every `pointfail ...` line with no placeholder
(`DIR`, `N`, `...`, `a|b`), `records/<study>` read as `records/default`, optional `[...]` parts left
out. Those that need what a fresh machine does not have, or that rewrite records (judge, data fetch,
weights), are listed in SKIP with the reason. `make verify` and `make reproduce` are not run here (they
make a venv and images; `make test-pristine` and `make ci-pristine` run them in a fresh clone).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SKIP = {
    "judge": "relabels every miss of the study (minutes; its bytes are checked by make reproduce)",
    "judge-one": "needs a judge server",
    "judge-agreement": "needs a second judge's labels (the committed studies have the oracle's alone)",
    "data": "downloads a benchmark",
    "weights-manifest": "needs a checkpoint",
    "score-predictions": "needs a predictions file",
}
"""Subcommands of the README whose lines are not run here, and why."""

PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*(?:\.\w+)?|\.\.\.|.*\|.*)$")
"""A token that stands for something the reader fills in: DIR, N, R.jsonl, ..., a|b."""


def readme_commands() -> list[list[str]]:
    """The README's runnable ``pointfail`` lines (see the module docstring), as argument lists."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
        for line in block.splitlines():
            if not line.startswith("pointfail "):
                continue
            line = re.sub(r"\s+#.*$", "", line).replace("records/<study>", "records/default")
            line = re.sub(r"\s*\[[^\]]*\]", "", line)
            args = [a for a in shlex.split(line)[1:] if a != "--serve"]  # the site is written either way
            if any(PLACEHOLDER.match(a) for a in args) or (args and args[0] in SKIP):
                continue
            if "--base-url" in args:  # needs a running server: tests/test_served_transformers.py runs it
                continue
            if args not in out:
                out.append(args)
    return out


def test_readme_has_the_commands_this_test_runs():
    cmds = readme_commands()
    assert ["generate", "sheets", "--n", "20", "--seed", "1", "--out", "suites/sheets"] in cmds
    assert any(c[:1] == ["evaluate"] and "results/molmo-sheets" in c for c in cmds)
    assert {c[0] for c in cmds} >= {"families", "score", "verify", "aggregate", "report", "view", "show"}
    assert cmds.index(["show", "suites/sheets", "--id", "pfs_0001"]) > cmds.index(
        ["generate", "sheets", "--n", "20", "--seed", "1", "--out", "suites/sheets"])  # after the suite exists


@pytest.mark.slow
def test_readme_commands_leave_a_fresh_clone_clean(tmp_path):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(clone / "src"), str(clone / "runner" / "src")]),
           "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1"}
    printed = {}
    for args in readme_commands():
        r = subprocess.run([sys.executable, "-m", "pointfail", *args], cwd=clone, env=env, capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])
        printed[args[0]] = printed.get(args[0], "") + r.stdout
    # the summary the README shows for the replies example is what evaluate printed, line for line
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = readme.split("with a summary that fits 160 columns:\n\n```\n", 1)[1].split("```", 1)[0]
    lines = [line.rstrip() for line in printed["evaluate"].splitlines()]
    assert all(line.rstrip() in lines for line in shown.splitlines() if line), shown
    assert (clone / "results" / "molmo-sheets" / "tables" / "headline.csv").is_file()  # they did run
    assert (clone / "records" / "default" / "report").is_dir()
    assert (clone / "show" / "pfs_0001.png").is_file()  # show's default folder
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", f"the README's commands left the clone dirty:\n{status}"
