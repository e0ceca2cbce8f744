"""Which judges a study names, the out-of-family (lineage) rule, and the image variant rule."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pointfail.running.judges.lineage import LineageError, judge_plan, lineage_note

REPO = Path(__file__).resolve().parents[1]


def _raw(name: str) -> dict:
    return tomllib.loads((REPO / "records" / name / "study.toml").read_text())


def _study(models, primary="ollama", judge=None, benchmarks=None):
    return {"study": {"name": "s", "primary_judge": primary},
            "benchmarks": benchmarks if benchmarks is not None else [{"name": "pb", "loader": "point-bench"}],
            "models": models, "judge": {"ollama_model": "gemma4:31b", **(judge or {})}}


def test_source_study_judge_is_primary_and_out_of_lineage():
    plan = judge_plan(_raw("pointfail-vlm"))
    assert plan.primary == "ollama" and plan.compared == () and plan.lineage == ("gemini", "gemma")
    assert lineage_note(_raw("pointfail-vlm")) == ("ollama judge gemma4:31b (primary), lineage gemini, gemma: out of "
                                                   "the lineage of every evaluated model.")
    assert judge_plan(_raw("pointfail-vlm-rehearsal")).primary == "ollama"
    # the default study is judged by the oracle only: no model judge, no note
    assert judge_plan(_raw("default")).judges == ("oracle",) and lineage_note(_raw("default")) is None


def test_in_lineage_judge_refused_unless_the_study_says_so():
    models = [{"name": "pg", "family": "paligemma"}, {"name": "q", "family": "qwen2_5_vl"}]
    with pytest.raises(LineageError, match=r"shares lineage with evaluated models: pg \(gemma\)"):
        judge_plan(_study(models, judge={"lineage": ["gemma"]}))
    raw = _study(models, judge={"lineage": ["gemma"], "allow_in_lineage": True})
    assert judge_plan(raw).allow_in_lineage
    assert lineage_note(raw) == ("ollama judge gemma4:31b (primary), lineage gemma: IN-LINEAGE for pg (shares gemma), "
                                 "allowed explicitly by the study (allow_in_lineage = true).")
    # a model's own lineage key counts too (a Qwen-based judge against a study model declared qwen-derived)
    with pytest.raises(LineageError, match=r"q \(qwen\)"):
        judge_plan(_study([{"name": "q", "family": "json_pixels", "lineage": ["Qwen"]}], judge={"lineage": ["qwen"]}))


def test_judges_need_what_they_judge_with():
    with pytest.raises(LineageError, match="lineage is not declared"):
        judge_plan(_study([{"name": "q", "family": "qwen2_5_vl"}]))
    with pytest.raises(LineageError, match="oracle judge needs scene graphs"):
        judge_plan(_study([{"name": "q", "family": "qwen2_5_vl"}], primary="oracle"))
    with pytest.raises(LineageError, match="unknown judge 'gpt'"):
        judge_plan(_study([], judge={"compared": ["gpt"], "lineage": ["gemma"]}))
    # both: a model judge primary, the oracle compared, on a study with a generated suite
    raw = _study([{"name": "c", "family": "center"}], judge={"compared": ["oracle"], "lineage": ["gemma"]},
                 benchmarks=[{"name": "sheets", "loader": "suite", "generator": "sheets", "n": 2, "seed": 1}])
    assert judge_plan(raw).judges == ("ollama", "oracle")


def test_variant_follows_the_engine_and_refuses_what_cannot_run(monkeypatch):
    from pointfail_runner import prepare
    from pointfail_runner.study import load_study

    monkeypatch.setenv("POINTFAIL_GPU", "1")
    assert prepare.choose_variant("", log=lambda m: None) == "cuda"
    assert prepare.choose_variant("cpu", log=lambda m: None) == "cpu"
    monkeypatch.setenv("POINTFAIL_GPU", "0")
    assert prepare.choose_variant(None, log=lambda m: None) == "cpu"
    src = load_study(REPO / "records/pointfail-vlm/study.toml")
    problems = prepare.variant_problems(REPO, src, "cpu")
    # both molmo locks carry tensorflow-cpu; only the CUDA one has a torchvision that matches its torch
    assert [p.split(" ")[1] for p in problems] == ["molmo-7b-d", "molmoe-1b"]
    assert all("imports torchvision" in p and "requirements-cpu.lock has no torchvision" in p for p in problems)
    assert prepare.variant_problems(REPO, src, "cuda") == []
    # the rehearsal's Molmo stand-in carries its own code, which needs no torchvision
    assert prepare.variant_problems(REPO, load_study(REPO / "records/pointfail-vlm-rehearsal/study.toml"), "cpu") == []


def test_family_image_requirements_are_in_their_image_locks():
    """Every package a family declares for its released checkpoints (``Family.image_requirements``) is
    pinned in ``images/<family>/requirements-*.in`` and locked with a hash in the matching lock, at the
    same version, on the CUDA variant; on the CPU variant too, except the one documented gap (PyPI's
    torchvision is built against the CUDA torch, not the local CPU build)."""
    from pointfail.families import list_families
    from pointfail_runner import locks

    checked = {}
    for fam in (f for f in list_families() if f.image_requirements):
        for variant in ("cpu", "cuda"):
            image = REPO / "images" / fam.name
            pins = {locks.normalize(n): v for n, v in
                    (line.split("==", 1) for line in locks.input_path(image, variant).read_text().splitlines()
                     if "==" in line and not line.startswith("#"))}
            locked = {e.name: e.version for e in locks.parse_lock(locks.lock_path(image, variant))}
            for pkg in fam.image_requirements:
                name = locks.normalize(pkg)
                if variant == "cpu" and name == "torchvision":
                    assert name not in locked  # the gap variant_problems names (test above)
                    continue
                assert pins[name] == locked[name], (fam.name, variant, pkg)
                checked[(fam.name, variant, name)] = locked[name]
    assert checked == {("molmo", "cpu", "tensorflow-cpu"): "2.21.0", ("molmo", "cuda", "tensorflow-cpu"): "2.21.0",
                       ("molmo", "cuda", "torchvision"): "0.28.0"}


def test_stand_in_judge_labels_by_the_rendered_miss():
    from pointfail_runner.prepare import standin_judge_label

    a = {"messages": [{"role": "user", "content": "x", "images": ["aGVsbG8="]}]}
    b = {"messages": [{"role": "user", "content": "y", "images": ["aGVsbG8="]}]}
    assert standin_judge_label(a) == standin_judge_label(b)  # the image decides, not the prompt
    labels = {standin_judge_label({"messages": [{"images": [str(i)]}]}) for i in range(40)}
    assert labels == {"off_by_pixels", "wrong_instance", "wrong_category", "hallucinated"}


def test_tables_name_the_pinned_judge_digest(tmp_path):
    """The rehearsal's study.lock pins the ollama judge: the failure composition and judge validity
    tables say which weights their labels rest on; an unpinned study says none is pinned yet; the
    oracle (no weights) says nothing."""
    from pointfail.aggregate.study import judge_pin_note
    from pointfail.inputs.studylock import pin_judge

    lock = REPO / "records" / "pointfail-vlm-rehearsal" / "study.lock"
    assert judge_pin_note(_raw("pointfail-vlm-rehearsal"), lock) == (
        "ollama judge gemma4:31b digest sha256:" + "ab" * 32 + ", pinned in study.lock by the first run that "
        "reached the judge (later runs refuse another digest).")
    fresh = tmp_path / "study.lock"
    raw = _study([{"name": "q", "family": "qwen2_5_vl"}], judge={"lineage": ["gemma"]})
    assert judge_pin_note(raw, fresh) == ("ollama judge gemma4:31b: no digest pinned in study.lock (no run of the "
                                          "study has reached the judge yet).")
    pin_judge(fresh, "ollama", "gemma4:31b", "sha256:" + "cd" * 32)
    assert "digest sha256:" + "cd" * 32 in judge_pin_note(raw, fresh)
    assert judge_pin_note(_raw("default"), REPO / "records" / "default" / "study.lock") is None
    for table in ("failure_composition.md", "judge_validity.md"):
        text = (REPO / "records" / "pointfail-vlm-rehearsal" / "tables" / table).read_text()
        assert "Judge weights: ollama judge gemma4:31b digest sha256:" + "ab" * 32 in text
