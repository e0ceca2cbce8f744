"""Absent referents in the generated suites: rows whose referent is nowhere on the screen, with a
scene-graph proof of absence that the loader re-derives, and prompts that tell models how to decline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pointfail.inputs.benchmarks import load
from pointfail.inputs.benchmarks._common import BenchmarkError
from pointfail.prompts import build_prompt
from pointfail.generated.suites import sheets, text
from pointfail.generated.suites.absent import (
    ABSENCE_RULE,
    absence_proof,
    absent_indices,
    check_absence_proof,
    make_absent_rows,
)
from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.manifest import verify_manifest

GRAPH = {
    "schema": "pointfail.scene_graph/1", "image": "0000.png", "width": 1024, "height": 768,
    "elements": [
        {"id": "cell:A1", "category": "cell", "box": [0, 0, 100, 20], "text": "Invoice 2024"},
        {"id": "cell:A2", "category": "cell", "box": [0, 20, 100, 40], "text": "4821"},
        {"id": "grid", "category": "chrome", "box": [0, 0, 1, 1]},
    ],
}


def test_proof_of_absence_is_a_casefolded_substring_check():
    p = absence_proof(GRAPH, "Paid", "scene_graphs/0000.json")
    assert p == {"rule": ABSENCE_RULE, "referent": "Paid", "scene_graph": "scene_graphs/0000.json",
                 "elements_checked": 3, "texts_checked": 2}
    # present (case and whitespace differences do not hide it): no proof
    for present in ("invoice  2024", "INVOICE", "482"):
        with pytest.raises(SuiteError, match="shown in the image"):
            absence_proof(GRAPH, present, "scene_graphs/0000.json")
    check_absence_proof(GRAPH, p)
    # a proof whose referent is in the image, or whose counts do not match the graph, does not hold
    with pytest.raises(SuiteError):
        check_absence_proof(GRAPH, dict(p, referent="4821"))
    with pytest.raises(SuiteError, match="elements_checked"):
        check_absence_proof(GRAPH, dict(p, elements_checked=2))
    with pytest.raises(SuiteError, match="not a proof"):
        check_absence_proof(GRAPH, {"referent": "Paid"})


def test_absent_indices_are_exact_and_deterministic():
    a = absent_indices("sheets", 7, 150, 0.1)
    assert len(a) == 15 and a == sorted(a) and a == absent_indices("sheets", 7, 150, 0.1)
    assert a != absent_indices("sheets", 8, 150, 0.1)
    assert absent_indices("sheets", 7, 150, 0.0) == []
    with pytest.raises(SuiteError):
        absent_indices("sheets", 7, 10, 1.0)


def test_share_zero_leaves_rows_unchanged():
    rows = [{"id": "a", "file_name": "0000.png"}]
    assert make_absent_rows(rows, {"0000.png": GRAPH}, suite="sheets", seed=1, share=0.0) == rows


@pytest.fixture(scope="module")
def sheets_suite(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("absent") / "sheets"
    sheets.generate(out, n=10, seed=3, absent_share=0.3)
    return out


def test_sheets_suite_with_absent_referents_loads_and_proves_absence(sheets_suite):
    manifest = json.loads((sheets_suite / "manifest.json").read_text())
    assert manifest["absent_share"] == 0.3
    rows = [json.loads(x) for x in (sheets_suite / "data/test/metadata.jsonl").read_text().splitlines()]
    absent = [r for r in rows if r["referent"] == "absent"]
    assert [int(r["id"][-4:]) for r in absent] == absent_indices("sheets", 3, 10, 0.3)
    assert all(r["absent_possible"] is True for r in rows)
    for r in absent:
        assert r["bbox"] is None and r["target_id"] is None and r["eval"] == {"type": "absent"}
        graph = json.loads((sheets_suite / "data/test" / r["scene_graph"]).read_text())
        referent = r["absence_proof"]["referent"]
        assert referent in r["instruction"] and r["category"] == "cell_content"
        texts = [" ".join(e["text"].casefold().split()) for e in graph["elements"] if e.get("text")]
        assert not any(referent.casefold() in t for t in texts)
    samples = load("suite", sheets_suite)
    kinds = {s.sample_id: s.target.kind for s in samples}
    assert sorted(k for k, v in kinds.items() if v == "absent") == sorted(r["id"] for r in absent)
    s = next(s for s in samples if s.target.kind == "absent")
    assert s.metadata["referent"] == "absent" and s.metadata["absent_possible"] is True
    # every row's prompt, present or absent, says how to decline in the family's convention
    for smp in samples:
        assert build_prompt("json_pixels", smp).sent.endswith('{"bbox": null}).')
        assert build_prompt("molmo", smp).sent.endswith("If there are none, answer: There are none.")


def test_loader_rederives_the_proof_and_rejects_a_false_one(sheets_suite, tmp_path):
    import shutil

    bad = tmp_path / "sheets"
    shutil.copytree(sheets_suite, bad)
    (bad / "manifest.json").unlink()  # the manifest would catch the edit first; test the proof itself
    meta = bad / "data/test/metadata.jsonl"
    rows = [json.loads(x) for x in meta.read_text().splitlines()]
    r = next(r for r in rows if r["referent"] == "absent")
    graph = json.loads((bad / "data/test" / r["scene_graph"]).read_text())
    shown = next(e["text"] for e in graph["elements"] if e.get("category") == "cell" and e.get("text"))
    r["absence_proof"]["referent"] = shown  # claims a value that IS on the screen is absent
    meta.write_text("".join(json.dumps(x) + "\n" for x in rows))
    with pytest.raises(BenchmarkError, match="absence proof does not hold"):
        load("suite", bad)


def test_regenerating_a_suite_with_absent_referents_is_byte_identical(sheets_suite):
    assert verify_manifest(sheets_suite, regenerate=True).ok


def test_text_suite_absent_words(tmp_path):
    text.generate(tmp_path / "text", n=6, seed=1, absent_share=0.34)
    samples = load("suite", tmp_path / "text")
    absent = [s for s in samples if s.target.kind == "absent"]
    assert len(absent) == 2 and all(s.metadata["category"] == "word" for s in absent)
    assert all(s.instruction.split()[-1].strip("`'\"«».") for s in absent)
