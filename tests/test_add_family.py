"""Adding a model family is adding files: a family file and, when it runs locally, a backend file.

The throwaway family below is written into two folders that are added to the search paths of the
``pointfail.families`` and ``pointfail.running.backends`` packages (as if the files had been put in
``src/pointfail/families/`` and ``src/pointfail/running/backends/``); no list anywhere is edited. The family
registry then drives everything else: ``get_family``, the backend list, the worker, scoring, the
runner's weight check (``Family.needs_weights``) and the parametrized family tests.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import pointfail.running.backends as backends_pkg
import pointfail.families as families_pkg
from pointfail.families import get_family, list_families, refresh

FAMILY_FILE = '''
"""``throwaway``: a test family. It answers ``{"point": [x, y]}`` with ``x`` and ``y`` as fractions of the
image's width and height (0 to 1, origin top-left), the ``json_unit`` convention it inherits."""

from pointfail.families.json_unit import JsonUnit


class Throwaway(JsonUnit):
    name = "throwaway"
    backend = "pointfail.running.backends.throwaway"
    needs_weights = False


FAMILY = Throwaway()
'''

BACKEND_FILE = '''
"""Backend of the ``throwaway`` test family: answers the upper-left quarter point of every image."""

import json

from pointfail.running.backends.base import result


class Throwaway:
    name = "throwaway"

    def generate(self, batch):
        return [result(json.dumps({"point": [0.25, 0.25]})) for _ in batch]

    def info(self):
        return {"backend": "throwaway", "checkpoint": None}


def load(weights_dir=None, device="cpu", **options):
    return Throwaway()
'''


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    fam_dir, back_dir = tmp_path / "families", tmp_path / "backends"
    fam_dir.mkdir()
    back_dir.mkdir()
    (fam_dir / "throwaway.py").write_text(textwrap.dedent(FAMILY_FILE), encoding="utf-8")
    (back_dir / "throwaway.py").write_text(textwrap.dedent(BACKEND_FILE), encoding="utf-8")
    monkeypatch.setattr(families_pkg, "__path__", [*families_pkg.__path__, str(fam_dir)])
    monkeypatch.setattr(backends_pkg, "__path__", [*backends_pkg.__path__, str(back_dir)])
    refresh()
    yield get_family("throwaway")
    monkeypatch.undo()
    refresh()


def test_the_registry_finds_the_new_family_and_its_backend(throwaway):
    from pointfail.running.backends import backend_modules

    assert throwaway.name == "throwaway" and "throwaway" in [f.name for f in list_families()]
    assert get_family("Throw-Away") is throwaway  # the registry's alias rule applies to it too
    assert backend_modules()["throwaway"] == "pointfail.running.backends.throwaway"
    assert not throwaway.needs_weights


def test_the_worker_runs_it_and_scoring_parses_it(throwaway, tmp_path):
    from PIL import Image

    from pointfail.records import ImageRef, Prompt, Response, Sample, Target
    from pointfail.scoring import build_record
    from pointfail.running.worker import load_backend, run_worker

    img = tmp_path / "i.png"
    Image.new("RGB", (40, 20)).save(img)
    req = tmp_path / "requests.jsonl"
    req.write_text(json.dumps({"sample_id": "s", "image": str(img), "prompt": "p", "task": "point",
                               "max_new_tokens": 8}) + "\n", encoding="utf-8")
    out = tmp_path / "responses.jsonl"
    run_worker(load_backend("throwaway", None, "cpu"), req, out)
    reply = json.loads(out.read_text(encoding="utf-8"))
    sample = Sample(sample_id="s", benchmark="b", image=ImageRef(path=str(img), width=40, height=20),
                    instruction="p", target=Target(kind="boxes", boxes=[[8, 4, 12, 6]]))
    rec = build_record(study="st", model="m", family="throwaway", sample=sample,
                       prompt=Prompt(original="p", core="p", sent="p"),
                       response=Response(raw_text=reply["raw_text"]))
    # (0.25, 0.25) of 40 x 20 is (10, 5) px: inside [8, 4, 12, 6]
    assert rec.parse.points == [[0.25, 0.25]] and rec.outcome == "hit"


def test_the_runner_asks_no_weights_of_a_weight_free_family(throwaway, tmp_path):
    from pointfail.inputs.study import Roots
    from pointfail_runner.study import load_study, missing_inputs

    study_file = tmp_path / "study.toml"
    study_file.write_text(textwrap.dedent('''
        [study]
        name = "t"

        [[benchmarks]]
        name = "b"
        loader = "suite"

        [[models]]
        name = "tw"
        family = "throwaway"
        image = "throwaway"
    '''), encoding="utf-8")
    (tmp_path / "data" / "b").mkdir(parents=True)
    study = load_study(study_file)
    roots = Roots.for_study(study, tmp_path, data=tmp_path / "data", weights=tmp_path / "weights")
    assert missing_inputs(study, study.models, study.benchmarks, roots, repo=tmp_path) == []
    # the same study with a weight-backed family asks for its weights
    study_file.write_text(study_file.read_text().replace('family = "throwaway"', 'family = "qwen2_5_vl"'))
    study = load_study(study_file)
    assert [line.split(":")[0] for line in missing_inputs(study, study.models, study.benchmarks, roots, repo=tmp_path)] == [
        "weights for tw (qwen2_5_vl)"]


def test_the_family_tests_cover_it(throwaway):
    import test_families

    assert "throwaway" in sorted(f.name for f in list_families())
    test_families.test_family_declarations("throwaway")
    test_families.test_prompt_contains_core_for_both_tasks("throwaway")
