"""Adding an executor is adding one file: an executor module in ``pointfail_runner/executors/``.

The throwaway executor below is written into a temporary folder added to the search path of the
``pointfail_runner.executors`` package (as if the file had been put in
``runner/src/pointfail_runner/executors/``); no list anywhere is edited. ``pointfail-runner submit
--executor`` then offers it, describes it in its help and hands the plan to it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import pointfail_runner.executors as executors_pkg
from pointfail_runner.cli import main
from pointfail_runner.executors import executors, refresh

EXECUTOR_FILE = '''
"""``throwaway``: a test executor. It runs nothing; it writes what it was handed to ``handed.json``
beside the plan."""

import json
from pathlib import Path

from pointfail_runner.executors import Executor


def submit_command(plan_file, args, common):
    out = Path(plan_file).parent / "handed.json"
    out.write_text(json.dumps({"plan": str(plan_file), "models": common["models"], "missing": common["missing"],
                               "run_dir": str(common["run_dir"]), "concurrency": args.concurrency}))
    return 7


EXECUTOR = Executor("throwaway", "writes what it was handed (a test executor)", submit_command)
'''


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    d = tmp_path / "executors"
    d.mkdir()
    (d / "throwaway.py").write_text(textwrap.dedent(EXECUTOR_FILE), encoding="utf-8")
    monkeypatch.setattr(executors_pkg, "__path__", [*executors_pkg.__path__, str(d)])
    refresh()
    yield executors()["throwaway"]
    monkeypatch.undo()
    refresh()


def test_the_shipped_executors_are_declared():
    refresh()
    assert sorted(executors()) == ["k8s", "local", "slurm"]


def test_submit_offers_it_and_hands_it_the_plan(throwaway, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    assert "throwaway: writes what it was handed" in " ".join(capsys.readouterr().out.split())
    plan = tmp_path / "work" / "plan.json"
    plan.parent.mkdir()
    plan.write_text("{}")
    rc = main(["--repo", str(tmp_path), "submit", "--plan", str(plan), "--executor", "throwaway",
               "--models", "m1", "--missing", "--concurrency", "3"])
    assert rc == 7
    assert json.loads((tmp_path / "work" / "handed.json").read_text()) == {
        "plan": str(plan), "models": ["m1"], "missing": True, "run_dir": str(tmp_path / "work" / "run"),
        "concurrency": 3}
