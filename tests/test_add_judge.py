"""Adding a judge is adding one file: a judge kind module in ``pointfail/judge/kinds/``.

The throwaway judge below is written into a temporary folder added to the search path of the
``pointfail.running.judges.kinds`` package (as if the file had been put in ``src/pointfail/running/judges/kinds/``); no
list anywhere is edited. The judge registry then drives everything else: the command line's
``--judge`` choices and ``pointfail judge``, the study file's ``primary_judge`` and ``compared``, the
lineage rules (it declares itself a model judge, so the study must name its lineage), the runner's
judge stage, and the agreement report and tables (which read judge names from the records).
"""

from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

import pytest

import pointfail.running.judges.kinds as kinds_pkg
from judge_fixtures import make_study
from pointfail.cli import main
from pointfail.running.judges.kinds import get_kind, kind_names, refresh
from pointfail.records import read_records

JUDGE_FILE = '''
"""``throwaway``: a test judge. A miss whose point lies in the left half of the image is
``off_by_pixels``, any other ``hallucinated``."""

from pointfail.running.judges.kinds import JudgeKind
from pointfail.records import Judgment


class LeftRight:
    def __init__(self, version):
        self.name = f"throwaway:{version}"

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return None

    async def judge_miss(self, miss):
        x, _ = miss.point
        label = "off_by_pixels" if x < 0.5 else "hallucinated"
        return Judgment(judge=self.name, status="labeled", label=label, detail=f"x = {x:.3f}")


class Throwaway(JudgeKind):
    name = "throwaway"
    summary = "left half off_by_pixels, else hallucinated (a test judge)"
    model_judge = True

    def make(self, settings):
        return [LeftRight(settings.get("throwaway_version", "v1"))]


KIND = Throwaway()
'''


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    d = tmp_path / "kinds"
    d.mkdir()
    (d / "throwaway.py").write_text(textwrap.dedent(JUDGE_FILE), encoding="utf-8")
    monkeypatch.setattr(kinds_pkg, "__path__", [*kinds_pkg.__path__, str(d)])
    refresh()
    yield get_kind("throwaway")
    monkeypatch.undo()
    refresh()


def _toml(study: Path, primary: str, compared: str = "", lineage: bool = True) -> None:
    (study / "study.toml").write_text(
        f'[study]\nname = "s"\nprimary_judge = "{primary}"\n\n[[benchmarks]]\nname = "suite"\nloader = "suite"\n\n'
        + "[judge]\n" + ('lineage = ["left-right"]\n' if lineage else "") + (f'compared = ["{compared}"]\n' if compared else ""))


def test_the_registry_finds_it_and_the_cli_offers_it(throwaway, capsys):
    assert "throwaway" in kind_names() and throwaway.model_judge
    with pytest.raises(SystemExit):
        main(["judge", "--help"])
    assert "throwaway: left half off_by_pixels" in " ".join(capsys.readouterr().out.split())


def test_cli_judges_with_it_and_agreement_reads_it(throwaway, tmp_path, capsys):
    study = make_study(tmp_path, n_misses=4)  # points x = 0.27, 0.6, 0.5, 0.9; oracle O, I, C, H
    _toml(study, "oracle", compared="throwaway")
    assert main(["judge", str(study), "--no-progress"]) == 0
    assert main(["judge", str(study), "--judge", "throwaway", "--no-progress", "--json"]) == 0
    out = capsys.readouterr().out
    rep = json.loads(out[out.index("{\n"):])
    assert (rep["judge"], rep["role"], rep["labels"]) == ("throwaway:v1", "other", {"hallucinated": 3, "off_by_pixels": 1})
    misses = [r for r in read_records(study / "m" / "suite.jsonl") if r.outcome == "miss"]
    assert [(r.judge.judge, [(o.judge, o.label) for o in r.other_judgments]) for r in misses] == [
        ("oracle", [("throwaway:v1", "off_by_pixels")]), ("oracle", [("throwaway:v1", "hallucinated")]),
        ("oracle", [("throwaway:v1", "hallucinated")]), ("oracle", [("throwaway:v1", "hallucinated")])]
    assert main(["judge-agreement", str(study), "--between", "oracle", "throwaway", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    # oracle O, I, C, H against O, H, H, H: 2 agree
    assert (p["b"], p["n"], p["percent_agreement"]) == ("throwaway:v1", 4, 0.5)
    from pointfail.aggregate import aggregate

    rows = list(csv.DictReader(io.StringIO(aggregate(study)["judge_agreement.csv"].decode())))
    assert [(r["benchmark"], r["other_judge"], r["agree"]) for r in rows] == [
        ("suite", "throwaway:v1", "2"), ("pooled", "throwaway:v1", "2")]


def test_the_study_file_and_the_lineage_rules_take_it(throwaway, tmp_path):
    from pointfail.running.judges.lineage import LineageError, judge_plan
    from pointfail.inputs.study import StudyError, load_study

    study = make_study(tmp_path, n_misses=2)
    _toml(study, "throwaway")
    spec = load_study(study / "study.toml")
    assert judge_plan(spec.model_dump()).primary == "throwaway"
    _toml(study, "throwaway", lineage=False)
    with pytest.raises(LineageError, match="lineage is not declared for the throwaway judge"):
        judge_plan(load_study(study / "study.toml").model_dump())
    _toml(study, "nosuchjudge")
    with pytest.raises(StudyError, match="unknown judge 'nosuchjudge'.*throwaway"):
        load_study(study / "study.toml")


def test_the_runners_judge_stage_runs_it(throwaway, tmp_path):
    from pointfail.running.judges.lineage import judge_plan
    from pointfail.inputs.study import load_study
    from pointfail_runner.reproduce import judge_stage

    study = make_study(tmp_path, n_misses=2)
    _toml(study, "throwaway", compared="oracle")
    spec = load_study(study / "study.toml")
    logs: list[str] = []
    judge_stage(study, spec, judge_plan(spec.model_dump()), data_root=tmp_path, log=logs.append)
    assert any(ln.startswith("[reproduce] judge throwaway:v1 (primary): 2 misses, 2 judged") for ln in logs), logs
    misses = [r for r in read_records(study / "m" / "suite.jsonl") if r.outcome == "miss"]
    assert [(r.judge.judge, r.failure_mode) for r in misses] == [("throwaway:v1", "off_by_pixels"),
                                                                 ("throwaway:v1", "hallucinated")]
    assert "## oracle vs throwaway:v1" in "\n".join(logs)


def test_without_the_file_it_is_unknown(tmp_path):
    assert "throwaway" not in kind_names()
    with pytest.raises(KeyError, match="unknown judge 'throwaway'"):
        get_kind("throwaway")
