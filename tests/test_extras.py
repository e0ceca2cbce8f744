"""Optional dependencies: without its extra, each path says in one line which extra to install, exits 2
and leaves no file behind. A missing module is simulated by blocking its import in a subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pointfail.extras import EXTRAS, MissingExtra, extra_for_module, require

REPO = Path(__file__).resolve().parents[1]

BLOCKED_RUN = r"""
import importlib.abc, sys
BLOCK = set(sys.argv[1].split(","))

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from pointfail.cli import main
sys.exit(main(sys.argv[2:]))
"""


def run_blocked(modules: str, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "OLLAMA_HOST": "http://127.0.0.1:9"}
    return subprocess.run([sys.executable, "-c", BLOCKED_RUN, modules, *argv], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd or REPO)


def files_under(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()} if d.exists() else {}


def assert_one_line(res: subprocess.CompletedProcess, command: str, extra: str, module: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert re.fullmatch(rf"pointfail {re.escape(command)}: .+ needs {module}, which is not installed: "
                        rf"pip install 'pointfail\[{extra}\]'", lines[0]), lines[0]


def test_extras_agree_with_pyproject():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, reqs in extras.items():
        if extra in ("dev", "cli"):
            continue
        assert extra in EXTRAS, f"pyproject extra {extra!r} is missing from pointfail.extras.EXTRAS"
        for req in reqs:
            dist = re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower().replace("-", "_")
            assert dist in EXTRAS[extra], f"{extra}: {dist} ({req}) not in EXTRAS[{extra!r}]"
    assert set(EXTRAS) <= set(extras)
    # cli is everything the pointfail command itself uses: the report and the model judges
    assert extras["cli"] == ["pointfail[report,judge]"]


def test_require_and_extra_for_module():
    assert extra_for_module("matplotlib.pyplot") == "report" and extra_for_module("numpy") is None
    require("report", "the report")  # installed in the test environment: no error
    with pytest.raises(KeyError):
        require("nonsense", "x")
    e = MissingExtra("report", "matplotlib", "the report")
    assert str(e) == "the report needs matplotlib, which is not installed: pip install 'pointfail[report]'"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A copy of the committed default study (records and tables only)."""
    d = tmp_path_factory.mktemp("study") / "default"
    shutil.copytree(REPO / "records" / "default", d, ignore=shutil.ignore_patterns("report", "view"))
    return d


def test_report_without_the_report_extra(study, tmp_path):
    out = tmp_path / "report"
    res = run_blocked("matplotlib", "report", str(study), "--out", str(out))
    assert_one_line(res, "report", "report", "matplotlib")
    assert not out.exists()


def test_report_library_call_raises_before_writing(study, tmp_path):
    code = ("import importlib.abc, sys\n"
            "class B(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'matplotlib': raise ModuleNotFoundError(name, name=name)\n"
            "sys.meta_path.insert(0, B())\n"
            "from pointfail.extras import MissingExtra\n"
            "from pointfail.outputs.report import make_report\n"
            "try:\n"
            f"    make_report({str(study)!r}, {str(tmp_path / 'r')!r})\n"
            "except MissingExtra as e:\n"
            "    print('MissingExtra', e.extra, e.module)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert res.stdout.strip() == "MissingExtra report matplotlib", res.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("judge,module,extra_args", [
    ("ollama", "ollama", []),
    ("openai", "openai", ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"]),
])
def test_model_judges_without_the_judge_extra(study, judge, module, extra_args):
    before = files_under(study)
    res = run_blocked(module, "judge", str(study), "--judge", judge, *extra_args, "--no-progress")
    assert_one_line(res, "judge", "judge", module)
    assert files_under(study) == before  # no lock file, no journal, records untouched


def test_judge_one_without_the_judge_extra(tmp_path):
    from PIL import Image

    img = tmp_path / "shot.png"
    Image.new("RGB", (64, 48), (255, 255, 255)).save(img)
    res = run_blocked("httpx", "judge-one", "--image", str(img), "--box", "4", "4", "20", "20", "--point", "30", "30",
                      "--instruction", "the icon")
    assert_one_line(res, "judge-one", "judge", "httpx")


def _replies_for(suite: Path, path: Path) -> None:
    row = json.loads((suite / "data" / "test" / "metadata.jsonl").read_text().splitlines()[0])
    path.write_text(json.dumps({"id": row["id"], "text": '<point x="50" y="50">x</point>'}) + "\n")


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    from pointfail.cli import main

    d = tmp_path_factory.mktemp("suite") / "sheets"
    assert main(["generate", "sheets", "--n", "3", "--seed", "1", "--out", str(d)]) == 0
    return d


def test_evaluate_without_the_report_extra(suite, tmp_path):
    replies = tmp_path / "r.jsonl"
    _replies_for(suite, replies)
    out = tmp_path / "out"
    res = run_blocked("matplotlib", "evaluate", "--benchmark", "suite", "--data", str(suite), "--replies",
                      str(replies), "--family", "molmo", "--out", str(out))
    assert_one_line(res, "evaluate", "report", "matplotlib")
    assert "--no-report" in res.stderr
    assert not out.exists()
    # --no-report does without it
    res = run_blocked("matplotlib", "evaluate", "--benchmark", "suite", "--data", str(suite), "--replies",
                      str(replies), "--family", "molmo", "--out", str(out), "--no-report", "--no-view")
    assert res.returncode == 0, res.stderr
    assert (out / "tables" / "failure_composition.md").is_file() and not (out / "report").exists()


@pytest.mark.parametrize("judge,module", [("ollama", "ollama"), ("openai", "openai")])
def test_evaluate_with_a_model_judge_without_the_judge_extra(suite, tmp_path, judge, module):
    replies = tmp_path / "r.jsonl"
    _replies_for(suite, replies)
    out = tmp_path / "out"
    res = run_blocked(module, "evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies),
                      "--family", "molmo", "--out", str(out), "--judge", judge, "--base-url", "http://127.0.0.1:9/v1",
                      "--judge-model", "m", "--no-report")
    assert_one_line(res, "evaluate", "judge", module)
    assert not out.exists()


def test_generate_web_without_the_web_extra(tmp_path):
    out = tmp_path / "web"
    res = run_blocked("playwright", "generate", "web", "--n", "2", "--out", str(out))
    assert_one_line(res, "generate", "web", "playwright")
    assert not out.exists()


def test_the_base_install_imports_no_extra():
    """Everything the base install runs (parse, score, evaluate with the oracle, aggregate, verify)
    works with every extra blocked."""
    blocked = ",".join(sorted({m for mods in EXTRAS.values() for m in mods}))
    res = run_blocked(blocked, "verify", str(REPO / "records" / "default"))
    assert res.returncode == 0, res.stderr
    res = run_blocked(blocked, "score", "--family", "molmo", "--image-size", "100", "100", "--box", "40", "40",
                      "60", "60", "--text", '<point x="50" y="50">m</point>')
    assert res.returncode == 0 and json.loads(res.stdout)["outcome"] == "hit", res.stderr
