"""`pointfail score-predictions` on the real 1,500 PointerBench rows with constructed predictions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pointfail.inputs.benchmarks import AXES, load
from pointfail.official import prediction_box, prediction_point, score_pointerbench_predictions
from pointfail.cli import main

SUBSETS = ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro")


def _rows(pointerbench_dir, name):
    path = pointerbench_dir / name / "data" / "test" / "metadata.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, objs) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def _run(tmp_path, name, data, preds_path, *extra):
    out = tmp_path / f"{name}.rows.jsonl"
    rc = main(["score-predictions", "--benchmark", name, "--data", str(data), "--predictions", str(preds_path),
               "--frame", "pixels", "--out", str(out), *extra])
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    summary = json.loads(Path(str(out) + ".summary.json").read_text(encoding="utf-8"))
    return rc, rows, summary


@pytest.mark.parametrize("name", SUBSETS)
def test_reference_answers_all_hit(tmp_path, pointerbench_dir, name):
    gt = _rows(pointerbench_dir, name)
    preds = [{"id": r["id"], "point": r["point"]} if r["answer_type"] == "point" else {"id": r["id"], "bbox": r["bbox"]}
             for r in gt]
    rc, rows, summary = _run(tmp_path, name, pointerbench_dir, _write_jsonl(tmp_path / "p.jsonl", preds))
    assert rc == 0
    assert len(rows) == 500 and all(r["hit"] and not r["missing"] for r in rows)
    assert [r["id"] for r in rows] == sorted(r["id"] for r in gt)
    assert summary["n"] == 500 and summary["hits"] == 500 and summary["accuracy"] == 1.0
    assert summary["missing_predictions"] == 0
    n_box = sum(r["answer_type"] == "bbox" for r in gt)
    assert summary["box_classes"] == ({"hit": n_box} if n_box else {})
    # every official axis of the subset is broken down, and each breakdown covers all 500 rows
    axes = {"pointerbench-sheets": ("category", "ui_style", "data_type"),
            "pointerbench-text": ("answer_type", "data_type", "category", "surface", "language", "difficulty"),
            "pointerbench-pro": ("element_type", "app_category", "platform", "app")}[name]
    for a in axes:
        assert sum(v["n"] for v in summary[f"by_{a}"].values()) == 500, a
    if name == "pointerbench-text":
        assert summary["by_language"]["en"] == {"n": 250, "hits": 250, "acc": 1.0}
        assert summary["by_answer_type"]["bbox"]["n"] == 134


@pytest.mark.parametrize("name", SUBSETS)
def test_inclusive_edges(tmp_path, pointerbench_dir, name):
    gt = [r for r in _rows(pointerbench_dir, name) if r["answer_type"] == "point"]
    mid = lambda r: (r["bbox"][1] + r["bbox"][3]) / 2  # noqa: E731
    on_edge = [{"id": r["id"], "point": [r["bbox"][2], r["bbox"][3]]} for r in gt]           # corner: inside
    on_left = [{"id": r["id"], "point": [r["bbox"][0], mid(r)]} for r in gt]                 # left edge: inside
    past_right = [{"id": r["id"], "point": [r["bbox"][2] + 0.5, mid(r)]} for r in gt]        # outside
    past_left = [{"id": r["id"], "point": [r["bbox"][0] - 0.001, mid(r)]} for r in gt]       # outside
    samples = [s for s in load(name, pointerbench_dir) if s.task == "point"]
    for preds, want in ((on_edge, True), (on_left, True), (past_right, False), (past_left, False)):
        rows, summary = score_pointerbench_predictions(samples, {p["id"]: p for p in preds}, AXES[name])
        assert all(r["hit"] is want for r in rows)
        assert summary["hits"] == (len(gt) if want else 0)
        assert summary["missing_predictions"] == 0


def test_box_thresholds_on_real_rows(tmp_path, pointerbench_dir):
    """Predictions built at the coverage (0.9) and precision (0.7) thresholds of the 134 real box rows.

    For a w x h target with w divisible by 10, a box 9w/10 wide has coverage exactly 9/10 (hit); one
    pixel narrower is clipped. For w divisible by 7, a box 10w/7 wide has precision exactly 7/10
    (hit); one pixel wider is oversized."""
    gt = [r for r in _rows(pointerbench_dir, "pointerbench-text") if r["answer_type"] == "bbox"]
    assert len(gt) == 134
    preds = {}
    for r in gt:
        x0, y0, x1, y1 = r["bbox"]
        w = x1 - x0
        if w % 10 == 0:
            preds[r["id"] + "/cov"] = [x0, y0, x0 + 9 * w // 10, y1], "hit"
            preds[r["id"] + "/cov-1"] = [x0, y0, x0 + 9 * w // 10 - 1, y1], "clipped"
        if w % 7 == 0:
            preds[r["id"] + "/prec"] = [x0, y0, x0 + 10 * w // 7, y1], "hit"
            preds[r["id"] + "/prec+1"] = [x0, y0, x0 + 10 * w // 7 + 1, y1], "oversized"
    assert len(preds) >= 20  # enough real rows land on the exact thresholds
    samples = {s.sample_id: s for s in load("pointerbench-text", pointerbench_dir) if s.task == "box"}
    for key, (box, want) in preds.items():
        sid = key.split("/")[0]
        rows, _ = score_pointerbench_predictions([samples[sid]], {sid: {"id": sid, "bbox": box}}, ())
        assert rows[0]["box_class"] == want, (key, box, rows[0])
        assert rows[0]["hit"] is (want == "hit")


def test_missing_malformed_duplicates_and_json_list(tmp_path, pointerbench_dir):
    gt = _rows(pointerbench_dir, "pointerbench-text")
    box_rows = [r for r in gt if r["answer_type"] == "bbox"]
    point_rows = [r for r in gt if r["answer_type"] == "point"]
    preds = [
        {"id": box_rows[0]["id"], "bbox": "n/a"},                               # malformed box
        {"id": box_rows[1]["id"], "bbox": json.dumps(box_rows[1]["bbox"])},     # numbers in a string: read
        {"id": box_rows[2]["id"], "point": box_rows[2]["point"]},              # a point for a box row: wrong
        {"id": point_rows[0]["id"], "point": [0, 0]},                           # first (miss) ...
        {"id": point_rows[0]["id"], "point": point_rows[0]["point"]},           # ... the last one wins
        {"id": point_rows[1]["id"], "x": point_rows[1]["point"][0], "y": point_rows[1]["point"][1]},
        {"id": point_rows[2]["id"], "point": ["left", "top"]},                  # malformed point
        {"point": [1, 2]},                                                       # no id: ignored
        {"id": "pbt_9999", "point": [1, 2]},                                     # unknown id
    ]
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(preds), encoding="utf-8")  # one JSON list
    rc, rows, summary = _run(tmp_path, "pointerbench-text", pointerbench_dir / "pointerbench-text", path)
    assert rc == 0
    by = {r["id"]: r for r in rows}
    assert by[box_rows[0]["id"]] == {"id": box_rows[0]["id"], "answer_type": "bbox", "box_class": "malformed",
                                     "hit": False, "missing": True, "iou": None, "coverage": None, "precision": None}
    assert by[box_rows[1]["id"]]["hit"] and by[box_rows[1]["id"]]["box_class"] == "hit"
    assert by[box_rows[2]["id"]]["box_class"] == "malformed"  # a prediction, but no box in it
    assert by[point_rows[0]["id"]]["hit"] and by[point_rows[1]["id"]]["hit"]
    assert by[point_rows[2]["id"]] == {"id": point_rows[2]["id"], "answer_type": "point", "hit": False, "missing": True}
    assert summary["hits"] == 3
    # rows without a usable prediction: 494 rows had no object (6 distinct known ids were given),
    # plus the malformed box, the point given for a box row and the malformed point
    assert summary["missing_predictions"] == 494 + 3
    assert summary["predictions"] == {"duplicate_id": 1, "entries": 9, "no_id": 1, "raw_text": 0, "replies": 7,
                                      "unknown_id": 1, "with_coordinates_only": 7, "with_text": 0}
    # box rows whose id has no prediction at all are no_prediction, not malformed
    assert summary["box_classes"] == {"hit": 1, "malformed": 2, "no_prediction": 134 - 3}
    kinds = [(p["where"], p["kind"], p["sample_id"]) for p in summary["problems"]]
    assert kinds == [("item 4", "duplicate_id", point_rows[0]["id"]), ("item 8", "no_id", None),
                     ("item 9", "unknown_id", "pbt_9999")]


def test_prediction_readers():
    assert prediction_point({"coordinate": [3, 4, 9, 9]}) == (3.0, 4.0)
    assert prediction_point({"pred": ["1.5", "2"]}) == (1.5, 2.0)
    assert prediction_point({"point": [None, 1]}) is None
    assert prediction_box({"box": [5, 6, 1, 2]}) == [1.0, 2.0, 5.0, 6.0]
    assert prediction_box({"x0": 1, "y0": 2, "x1": 3, "y1": 4}) == [1.0, 2.0, 3.0, 4.0]
    assert prediction_box({"answer": "the box is (10, 20) to (30, 40)"}) == [10.0, 20.0, 30.0, 40.0]
    assert prediction_box({"bbox": [1, 2, 3]}) is None


def test_bad_lines_are_listed_not_fatal(tmp_path, pointerbench_dir, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "pbs_0000", "point": [1, 2]}\n{oops\n{"id": "pbs_0001", "text": "click (3, 4)"}\n',
                   encoding="utf-8")
    out = tmp_path / "o.jsonl"
    args = ["score-predictions", "--benchmark", "pointerbench-sheets", "--data", str(pointerbench_dir),
            "--frame", "pixels", "--out", str(out), "--predictions"]
    assert main(args + [str(bad)]) == 0
    text = capsys.readouterr().out
    assert "line 2: unparseable: not JSON" in text
    assert "line 3 id 'pbs_0001': raw_text: a raw reply text and no coordinates" in text
    assert "not scored as given: raw_text 1, unparseable 1" in text
    assert main(args + [str(tmp_path / "none.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["score-predictions", "--benchmark", "where2place", "--data", ".", "--predictions", "p", "--out", "o",
              "--frame", "pixels"])


def test_the_frame_is_declared_never_guessed(tmp_path, pointerbench_dir, capsys):
    """The issue's case: [0.5, 0.5] meant as a fraction. Without --frame the command refuses; with
    --frame pixels it is pixel (0.5, 0.5), said so with a note; with --frame unit it is the centre."""
    gt = [r for r in _rows(pointerbench_dir, "pointerbench-text") if r["answer_type"] == "point"]
    preds = [{"id": r["id"], "point": [(r["bbox"][0] + r["bbox"][2]) / 2 / 1024, (r["bbox"][1] + r["bbox"][3]) / 2 / 768]}
             for r in gt[:5]]
    path = _write_jsonl(tmp_path / "p.jsonl", preds)
    with pytest.raises(SystemExit):
        main(["score-predictions", "--benchmark", "pointerbench-text", "--data", str(pointerbench_dir),
              "--predictions", str(path), "--out", str(tmp_path / "o.jsonl")])
    assert "--frame" in capsys.readouterr().err
    rc, rows, summary = _run(tmp_path, "pointerbench-text", pointerbench_dir, path, "--only-predicted")
    out = capsys.readouterr().out
    assert rc == 0 and summary["hits"] == 0 and summary["frame"] == "pixels"
    assert "every coordinate in the file is between 0 and 1" in out and "--frame unit" in out
    out_path = tmp_path / "u.jsonl"
    assert main(["score-predictions", "--benchmark", "pointerbench-text", "--data", str(pointerbench_dir),
                 "--predictions", str(path), "--frame", "unit", "--only-predicted", "--out", str(out_path)]) == 0
    summary = json.loads(Path(str(out_path) + ".summary.json").read_text(encoding="utf-8"))
    assert summary["hits"] == 5 and summary["n"] == 5 and summary["frame"] == "unit"
    assert summary["scope"] == "only_predicted" and summary["benchmark_samples"] == 500
    assert "accuracy 100.00% over the 5 samples with a prediction (--only-predicted; the benchmark has 500)" in \
        capsys.readouterr().out


def test_generated_suite_reference_points_hit(tmp_path):
    """A suite written by the real generator scores through the same command."""
    out = tmp_path / "sheets"
    assert main(["generate", "sheets", "--n", "2", "--seed", "3", "--out", str(out)]) == 0
    gt = [json.loads(line) for line in (out / "data" / "test" / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    preds = _write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "point": r["point"]} for r in gt])
    rc, rows, summary = _run(tmp_path, "suite", out, preds)
    assert rc == 0 and summary["benchmark"] == "sheets"
    assert [r["hit"] for r in rows] == [True, True]
