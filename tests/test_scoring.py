"""pointfail.scoring: outcome rules (fixed cases with the arithmetic), records, the API and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import numpy as np
import pytest
from pathlib import Path
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from pointfail import geometry
from pointfail.geometry import TargetRegion
from pointfail.records import (
    ImageRef,
    OfficialScore,
    ParseResult,
    Prompt,
    Response,
    Sample,
    Target,
)
from pointfail.scoring import build_record, score_parse, score_prediction, scorePrediction

W, H = 100, 80


def parse(points=(), boxes=(), **kw) -> ParseResult:
    return ParseResult(family="test", frame="unit", points=[list(p) for p in points], boxes=[list(b) for b in boxes], **kw)


@pytest.fixture
def box_region() -> TargetRegion:
    # target [20, 16, 40, 32] pixels of a 100x80 image = [0.2, 0.2, 0.4, 0.4] normalized
    return TargetRegion.from_target(Target(kind="boxes", boxes=[[20, 16, 40, 32]]), (W, H))


# --------------------------------------------------------------------------- point tasks


def test_point_task_hit_miss_no_prediction(box_region):
    out, geo = score_parse(parse([(0.3, 0.3)]), box_region, "point", (W, H))  # (30, 24): inside
    assert out == "hit" and geo.in_target and geo.distance_px == 0.0 and geo.box is None
    out, geo = score_parse(parse([(0.5, 0.3)]), box_region, "point", (W, H))  # (50, 24): 10 px right
    assert out == "miss" and geo.in_target is False
    assert geo.distance_px == 10.0 and geo.distance_norm == pytest.approx(10 / np.hypot(100, 80))
    out, geo = score_parse(parse(reason="no_coordinates"), box_region, "point", (W, H))
    assert out == "no_prediction" and geo.in_target is None and geo.distance_px is None
    assert score_parse(None, box_region, "point", (W, H))[0] == "no_prediction"


def test_primary_point_is_the_first(box_region):
    # the second point is inside, but only the first counts
    out, _ = score_parse(parse([(0.9, 0.9), (0.3, 0.3)]), box_region, "point", (W, H))
    assert out == "miss"
    assert score_parse(parse([(0.3, 0.3), (0.9, 0.9)]), box_region, "point", (W, H))[0] == "hit"


def test_box_answer_to_point_task_is_scored_by_its_centre(box_region):
    # box [0.25, 0.25, 0.35, 0.35] -> centre (0.3, 0.3) -> pixel (30, 24): inside
    assert score_parse(parse(boxes=[(0.25, 0.25, 0.35, 0.35)]), box_region, "point", (W, H))[0] == "hit"
    # box [0.5, 0.5, 0.7, 0.7] -> centre (0.6, 0.6) -> (60, 48): outside
    assert score_parse(parse(boxes=[(0.5, 0.5, 0.7, 0.7)]), box_region, "point", (W, H))[0] == "miss"


def test_out_of_image_point_is_a_miss_not_clamped():
    region = TargetRegion.from_target(Target(kind="boxes", boxes=[[90, 0, 100, 80]]), (W, H))
    assert score_parse(parse([(1.0, 0.5)]), region, "point", (W, H))[0] == "hit"  # x = 100: edge
    out, geo = score_parse(parse([(1.2, 0.5)]), region, "point", (W, H))  # x = 120
    assert out == "miss" and geo.distance_px == 20.0


# --------------------------------------------------------------------------- box tasks


@pytest.mark.parametrize(
    "pred_norm, outcome, cls",
    [
        ((0.2, 0.2, 0.4, 0.4), "hit", "hit"),  # exactly the target
        ((0.2, 0.2, 0.37, 0.4), "miss", "clipped"),  # [20,16,37,32]: coverage 17*16 / (20*16) = 0.85
        ((0.1, 0.1, 0.5, 0.5), "miss", "oversized"),  # [10,8,50,40]: precision 320/1280 = 0.25
        ((0.3, 0.3, 0.6, 0.6), "miss", "both"),  # [30,24,60,48]: inter 10*8=80; cov 0.25, prec 80/720
    ],
)
def test_box_task_uses_pointerbench_rule(box_region, pred_norm, outcome, cls):
    out, geo = score_parse(parse(boxes=[pred_norm]), box_region, "box", (W, H))
    assert out == outcome and geo.box.box_class == cls


def test_box_at_exact_coverage_threshold_is_hit(box_region):
    out, geo = score_parse(parse(boxes=[(0.2, 0.2, 0.38, 0.4)]), box_region, "box", (W, H))
    assert geo.box.coverage == pytest.approx(0.9) and out == "hit"  # 18*16 / (20*16) = 0.9 >= 0.90


def test_point_answer_to_box_task_is_a_malformed_miss(box_region):
    out, geo = score_parse(parse([(0.3, 0.3)]), box_region, "box", (W, H))
    assert out == "miss"
    assert geo.box.box_class == "malformed" and geo.box.coverage is None
    assert geo.in_target is True and geo.distance_px == 0.0  # diagnostics of the point itself


def test_no_answer_to_box_task(box_region):
    out, geo = score_parse(parse(reason="truncated", truncated=True), box_region, "box", (W, H))
    assert out == "no_prediction" and geo.box.box_class == "malformed"


def test_box_task_diagnostics_use_box_centre(box_region):
    # box [0.5, 0.2, 0.7, 0.4] -> [50,16,70,32], centre (60, 24): 20 px right of x = 40
    out, geo = score_parse(parse(boxes=[(0.5, 0.2, 0.7, 0.4)]), box_region, "box", (W, H))
    assert out == "miss" and geo.box.box_class == "both" and geo.distance_px == 20.0


# --------------------------------------------------------------------------- absent targets


def test_absent_target_any_point_is_miss_no_point_is_no_prediction():
    region = TargetRegion.from_target(Target(kind="absent"), (W, H))
    out, geo = score_parse(parse([(0.5, 0.5)]), region, "point", (W, H))
    assert out == "miss" and geo.in_target is False and geo.distance_px is None
    assert score_parse(parse(reason="no_coordinates"), region, "point", (W, H))[0] == "no_prediction"
    out, geo = score_parse(parse(boxes=[(0.1, 0.1, 0.2, 0.2)]), region, "box", (W, H))
    assert out == "miss" and geo.box is None
    assert score_parse(parse(), region, "box", (W, H))[0] == "no_prediction"


def test_score_parse_rejects_bad_task_and_size(box_region):
    with pytest.raises(ValueError, match="task"):
        score_parse(parse([(0.3, 0.3)]), box_region, "click", (W, H))
    with pytest.raises(ValueError, match="differs"):
        score_parse(parse([(0.3, 0.3)]), box_region, "point", (W + 1, H))


unit = st.floats(-0.5, 1.5, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(unit, unit), max_size=3),
    st.lists(st.tuples(unit, unit, unit, unit), max_size=2),
    st.sampled_from(["point", "box"]),
    st.sampled_from(["boxes", "absent"]),
)
def test_exactly_one_outcome_consistent_with_geometry(points, boxes, task, kind):
    target = Target(kind="boxes", boxes=[[20, 16, 40, 32]]) if kind == "boxes" else Target(kind="absent")
    region = TargetRegion.from_target(target, (W, H))
    out, geo = score_parse(parse(points, boxes), region, task, (W, H))
    assert out in ("hit", "miss", "no_prediction")
    if not points and not boxes:
        assert out == "no_prediction"
    elif kind == "absent":
        assert out == "miss"
    elif task == "point":
        assert (out == "hit") == bool(geo.in_target)
    else:
        assert (out == "hit") == (geo.box.box_class == "hit")
        if not boxes:
            assert geo.box.box_class == "malformed" and out == "miss"


# --------------------------------------------------------------------------- files for API tests


@pytest.fixture
def study_files(tmp_path):
    """image.png 100x80 and mask.png with the block of pixels columns 40..59, rows 30..49."""
    img = tmp_path / "image.png"
    Image.new("RGB", (W, H), (30, 30, 30)).save(img)
    m = np.zeros((H, W), np.uint8)
    m[30:50, 40:60] = 255
    mask = tmp_path / "mask.png"
    Image.fromarray(m, mode="L").save(mask)
    geometry.mask_cache_clear()
    return img, mask


def test_study_documented_call(study_files):
    img, mask = study_files
    result = scorePrediction(
        family="molmo",
        rawText='<point x="50.0" y="50.0">mug</point>',
        imagePath=str(img),
        maskPath=str(mask),
    )
    # 50 % of 100 x 80 -> pixel (50, 40): column 50, row 40, inside the block
    assert result["primary"] == [0.5, 0.5]
    assert result["inMask"] is True
    assert result["outcome"] == "hit" and result["distance_px"] == 0.0
    miss = scorePrediction(family="molmo", rawText='<point x="10" y="50">mug</point>', imagePath=img, maskPath=mask)
    # (10, 40): column 10, row 40; nearest mask pixel column 40 -> 30 px
    assert miss["inMask"] is False and miss["outcome"] == "miss" and miss["distance_px"] == 30.0
    none = scorePrediction(family="molmo", rawText="I cannot see a mug.", imagePath=img, maskPath=mask)
    assert none["primary"] is None and none["inMask"] is False and none["outcome"] == "no_prediction"
    with pytest.raises(TypeError, match="colour"):
        scorePrediction(family="molmo", rawText="", imagePath=img, maskPath=mask, colour="red")


def test_the_write_up_call_runs_exactly_as_written(study_files, tmp_path, monkeypatch):
    """The code block of shared/seeds/pointfail-study.txt ("Running it"), run verbatim in a folder
    holding image.png and mask.png: it prints the primary point and whether it is in the mask."""
    import contextlib
    import io
    import re

    seed = (Path(__file__).resolve().parents[2] / "shared" / "seeds" / "pointfail-study.txt").read_text(encoding="utf-8")
    block = seed[seed.index("from pointfail import scorePrediction"):seed.index('print(result["primary"], result["inMask"])')]
    code = block + 'print(result["primary"], result["inMask"])\n'
    assert re.search(r'imagePath="image.png",\s*maskPath="mask.png"', code)
    img, mask = study_files
    assert (img.name, mask.name) == ("image.png", "mask.png")
    monkeypatch.chdir(img.parent)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "pointfail-study.txt", "exec"), {})
    assert out.getvalue() == "[0.5, 0.5] True\n"


def test_one_function_one_result_type(study_files):
    """score_prediction and scorePrediction are one function: the same ScoreResult, read by
    attribute or by key (r["primary"] no longer raises)."""
    from pointfail.scoring import ScoreResult

    img, mask = study_files
    a = score_prediction("molmo", '<point x="10" y="50">m</point>', image_path=img, mask_path=mask)
    b = scorePrediction(family="molmo", rawText='<point x="10" y="50">m</point>', imagePath=img, maskPath=mask)
    assert type(a) is type(b) is ScoreResult and a == b
    assert a["primary"] == a.primary == [0.1, 0.5] and a["inMask"] is False and a.inMask is False
    assert a["in_target"] is False and a["box"] is None and a["image_size"] == [100, 80]
    assert set(a.keys()) == set(a.to_dict()) | {"inMask"} and "inMask" in a and "parse" not in a
    assert dict((k, a[k]) for k in a.keys())["distance_px"] == 30.0
    with pytest.raises(KeyError):
        a["parse"]


def test_score_prediction_typed_result(study_files):
    img, mask = study_files
    r = score_prediction("molmo", '<points x1="45" y1="50" x2="90" y2="90" alt="two">two</points>',
                         image_path=img, mask_path=mask)
    assert r.outcome == "hit" and r.primary == [0.45, 0.5] and r.in_target is True
    assert r.points == [[0.45, 0.5], [0.9, 0.9]] and r.frame == r.parse.frame
    assert r.image_size == (100, 80) and r.geometry.in_target is True


def test_score_prediction_box_target_and_box_task():
    # json_pixels: absolute pixels of the original 1024x768 frame (PointerBench convention)
    r = score_prediction("json_pixels", '{"point": [500, 300]}', image_size=(1024, 768), box=[490, 290, 510, 310])
    assert r.outcome == "hit" and r.primary == [500 / 1024, 300 / 768]
    r = score_prediction("json_pixels", '{"bbox": [490, 290, 509, 310]}', image_size=(1024, 768),
                         box=[490, 290, 510, 310], task="box")
    # coverage 19*20 / (20*20) = 0.95, precision 1 -> hit
    assert r.outcome == "hit" and r.box.coverage == pytest.approx(0.95) and r.box.box_class == "hit"


def test_score_prediction_input_errors(study_files, tmp_path):
    img, mask = study_files
    with pytest.raises(ValueError, match="exactly one target"):
        score_prediction("molmo", "", image_path=img)
    with pytest.raises(ValueError, match="image size"):
        score_prediction("molmo", "", box=[0, 0, 1, 1])
    with pytest.raises(ValueError, match="differs"):
        score_prediction("molmo", "", image_path=img, image_size=(10, 10), box=[0, 0, 1, 1])
    with pytest.raises(geometry.MaskSizeError, match=r"100x80.*50x40"):
        score_prediction("molmo", "", image_size=(50, 40), mask_path=mask)
    with pytest.raises(KeyError):
        score_prediction("no_such_family", "", image_path=img, mask_path=mask)
    # mask size is the image size when no image is given
    assert score_prediction("molmo", '<point x="50" y="50">m</point>', mask_path=mask).outcome == "hit"


# --------------------------------------------------------------------------- records


def make_sample(mask_path, task="point") -> Sample:
    return Sample(
        sample_id="s1",
        benchmark="toy",
        image=ImageRef(path="image.png", width=W, height=H),
        instruction="point to the block",
        task=task,
        target=Target(kind="mask", mask_path=str(mask_path)),
        metadata={"category": "c"},
    )


PROMPT = Prompt(original="point to the block", core="point to the block", sent="Point to the block")


def test_build_record_scores_and_keeps_everything(study_files):
    _, mask = study_files
    resp = Response(raw_text='<point x="50" y="50">b</point>', seconds=0.1)
    rec = build_record(study="st", model="m", family="molmo", sample=make_sample(mask), prompt=PROMPT, response=resp)
    assert rec.outcome == "hit" and rec.family == "molmo" and rec.benchmark == "toy"
    assert rec.parse.points == [[0.5, 0.5]] and rec.geometry.in_target is True
    assert rec.judge is None and rec.metadata == {"category": "c"}
    assert rec.to_json().endswith("\n")


def test_build_record_worker_error_is_not_scored(study_files):
    _, mask = study_files
    resp = Response(error="out of memory", seconds=2.5)
    rec = build_record(study="st", model="m", family="molmo", sample=make_sample(mask), prompt=PROMPT,
                       response=resp)
    assert rec.outcome == "error" and rec.parse is None
    assert rec.error == "worker: out of memory"
    assert rec.response == resp  # stored exactly as the worker wrote it
    assert rec.geometry.in_target is None and rec.official is None


def test_build_record_wrong_size_mask_is_an_explained_error(study_files, tmp_path):
    small = tmp_path / "small.png"
    Image.new("L", (10, 10)).save(small)
    resp = Response(raw_text='<point x="50" y="50">b</point>')
    rec = build_record(study="st", model="m", family="molmo", sample=make_sample(small), prompt=PROMPT, response=resp)
    assert rec.outcome == "error"
    assert rec.error.startswith("scoring: ") and "10x10" in rec.error and "100x80" in rec.error
    # the worker's response is untouched: response.error is only ever the worker's own error
    assert rec.response == resp and rec.response.error is None
    # 50 % of 100x80 -> (0.5, 0.5): the parse is kept
    assert rec.parse.points == [[0.5, 0.5]]


def test_build_record_unreadable_mask_is_an_explained_error(tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    resp = Response(raw_text='<point x="10" y="20">b</point>')
    rec = build_record(study="st", model="m", family="molmo", sample=make_sample(broken), prompt=PROMPT,
                       response=resp)
    assert rec.outcome == "error" and rec.error.startswith("scoring: ") and "broken.png" in rec.error
    assert rec.response.raw_text == resp.raw_text and rec.response.error is None
    assert rec.parse.points == [[0.1, 0.2]]


def test_build_record_missing_model_input_size_is_an_explained_error(study_files):
    _, mask = study_files
    resp = Response(raw_text='{"point_2d": [10, 10]}')  # qwen2_5_vl: resized-input pixels
    rec = build_record(study="st", model="m", family="qwen2_5_vl", sample=make_sample(mask), prompt=PROMPT,
                       response=resp)
    assert rec.outcome == "error" and rec.error.startswith("scoring: ") and "model_input_size" in rec.error
    assert rec.response == resp and rec.parse is None  # no parse without the frame's size


def test_build_record_scored_outcomes_have_no_error(study_files):
    _, mask = study_files
    for text, outcome in (('<point x="50" y="50">b</point>', "hit"), ("no idea", "no_prediction")):
        rec = build_record(study="st", model="m", family="molmo", sample=make_sample(mask), prompt=PROMPT,
                           response=Response(raw_text=text))
        assert rec.outcome == outcome and rec.error is None


def _fake_official(monkeypatch, fn):
    import pointfail.inputs.benchmarks as pkg

    mod = types.ModuleType("pointfail.official")
    mod.official_score = fn
    monkeypatch.setitem(sys.modules, "pointfail.official", mod)
    monkeypatch.setattr(pkg, "official", mod, raising=False)


def test_build_record_fills_official_score(monkeypatch, study_files):
    _, mask = study_files
    seen = []

    def official_score(sample, parse, region, *, raw_text=None, family=None):
        seen.append((sample.sample_id, parse.points, region.kind, raw_text, family))
        return OfficialScore(rule="toy official", score=1.0)

    _fake_official(monkeypatch, official_score)
    rec = build_record(study="st", model="m", family="molmo", sample=make_sample(mask), prompt=PROMPT,
                       response=Response(raw_text='<point x="50" y="50">b</point>'))
    assert rec.official == OfficialScore(rule="toy official", score=1.0)
    assert seen == [("s1", [[0.5, 0.5]], "mask", '<point x="50" y="50">b</point>', "molmo")]


def test_build_record_propagates_a_bug_in_the_official_scorer(monkeypatch, study_files):
    _, mask = study_files

    def broken(sample, parse, region, **kw):
        raise RuntimeError("bug in the official scorer")

    _fake_official(monkeypatch, broken)
    with pytest.raises(RuntimeError, match="bug in the official scorer"):
        build_record(study="st", model="m", family="molmo", sample=make_sample(mask), prompt=PROMPT,
                     response=Response(raw_text='<point x="50" y="50">b</point>'))


# --------------------------------------------------------------------------- CLI


def run_cli(capsys, argv):
    from pointfail.cli import main

    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_score_box_target(capsys):
    rc, out, _ = run_cli(capsys, ["score", "--family", "molmo", "--image-size", "1024", "768",
                                  "--box", "100", "100", "200", "200",
                                  "--text", '<point x="14.6484375" y="19.53125" alt="b">b</point>'])
    assert rc == 0 and out.endswith("\n") and out.count("\n") == 1
    d = json.loads(out)
    # 14.6484375 % of 1024 = 150 px; 19.53125 % of 768 = 150 px: inside [100, 200]
    assert d["outcome"] == "hit" and d["primary"] == [0.146484375, 0.1953125]
    assert d["points"] == [[0.146484375, 0.1953125]] and d["boxes"] == [] and d["flags"] == []
    assert d["distance_px"] == 0.0 and d["image_size"] == [1024, 768]


def test_cli_score_mask_and_box_task(capsys, study_files):
    img, mask = study_files
    rc, out, _ = run_cli(capsys, ["score", "--family", "molmo", "--image", str(img), "--mask", str(mask),
                                  "--text", "no idea"])
    d = json.loads(out)
    assert rc == 0 and d["outcome"] == "no_prediction" and d["primary"] is None and d["reason"] == "no_coordinates"
    rc, out, _ = run_cli(capsys, ["score", "--family", "json_pixels", "--image-size", "1024", "768", "--task", "box",
                                  "--box", "0", "0", "100", "100", "--text", '{"bbox": [0, 0, 100, 150]}'])
    d = json.loads(out)
    # coverage 1, precision 100*100 / (100*150) = 0.667 < 0.70
    assert d["outcome"] == "miss" and d["box"]["box_class"] == "oversized"


def test_cli_score_errors(capsys, study_files):
    img, mask = study_files
    rc, _, err = run_cli(capsys, ["score", "--family", "nope", "--image", str(img), "--mask", str(mask), "--text", "x"])
    assert rc == 2 and "nope" in err
    rc, _, err = run_cli(capsys, ["score", "--family", "molmo", "--image-size", "50", "40", "--mask", str(mask),
                                  "--text", "x"])
    assert rc == 1 and "100x80" in err and "50x40" in err
    rc, _, err = run_cli(capsys, ["score", "--family", "qwen2_5_vl", "--image-size", "50", "40",
                                  "--box", "0", "0", "1", "1", "--text", '{"point_2d": [1, 1]}'])
    assert rc == 1 and "--model-input-size" in err and "model_input_size" not in err


def test_cli_entry_point_in_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "pointfail", "score", "--family", "json_pixels", "--image-size", "1024", "768",
         "--box", "10", "10", "20", "20", "--text", '{"point": [20, 21]}'],
        capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["outcome"] == "miss" and d["distance_px"] == 1.0  # (20, 21) is 1 px below y = 20


# --------------------------------------------------------------------------- real PointerBench rows


def test_real_pointerbench_rows_reference_answers_and_edges(pointerbench_dir):
    """All 1,500 real rows: the publishers' reference point (point rows) and box (bbox rows) are hits;
    for point rows the four box corners are hits (inclusive edges) and one pixel beyond the right
    edge is a miss, at 1024 x 768 (x / 1024 and y / 768 normalized)."""
    rows = []
    for f in sorted(pointerbench_dir.glob("pointerbench-*/data/test/metadata.jsonl")):
        rows += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) == 1500
    size = (1024, 768)
    counts = {"point": 0, "bbox": 0}
    for row in rows:
        x0, y0, x1, y1 = row["bbox"]
        region = TargetRegion.from_target(Target(kind="boxes", boxes=[row["bbox"]], eval=row["eval"]), size)

        def norm(x, y):
            return (x / 1024, y / 768)

        counts[row["answer_type"]] += 1
        if row["answer_type"] == "point":
            px, py = row["point"]
            assert score_parse(parse([norm(px, py)]), region, "point", size)[0] == "hit", row["id"]
            for cx, cy in ((x0, y0), (x1, y0), (x0, y1), (x1, y1)):
                assert score_parse(parse([norm(cx, cy)]), region, "point", size)[0] == "hit", row["id"]
            out, geo = score_parse(parse([norm(x1 + 1, y0)]), region, "point", size)
            assert out == "miss" and geo.distance_px == 1.0, row["id"]
        else:
            b = [x0 / 1024, y0 / 768, x1 / 1024, y1 / 768]
            out, geo = score_parse(parse(boxes=[b]), region, "box", size)
            assert out == "hit" and geo.box.coverage == 1.0 and geo.box.precision == 1.0, row["id"]
    assert counts == {"point": 1366, "bbox": 134}


def test_empty_mask_is_refused_standalone_and_an_error_in_records(tmp_path):
    empty = tmp_path / "empty.png"
    Image.new("L", (W, H), 0).save(empty)
    geometry.mask_cache_clear()
    with pytest.raises(geometry.GeometryError, match="empty.png is empty"):
        score_prediction("molmo", '<point x="50" y="50">b</point>', image_size=(W, H), mask_path=empty)
    rec = build_record(study="st", model="m", family="molmo", sample=make_sample(empty), prompt=PROMPT,
                       response=Response(raw_text='<point x="50" y="50">b</point>'))
    assert rec.outcome == "error" and rec.error.startswith("scoring: mask ") and "is empty" in rec.error
    assert rec.parse.points == [[0.5, 0.5]] and rec.geometry.in_target is None


def test_absence_outcome_counts_apart_from_the_hit_rate():
    from pointfail.records import ParseResult
    from pointfail.scoring import absence_outcome

    declined = ParseResult(family="json_pixels", frame="pixels_original", reason="declined", flags=["declined"])
    located = ParseResult(family="json_pixels", frame="pixels_original", points=[[0.5, 0.5]])
    unreadable = ParseResult(family="json_pixels", frame="pixels_original", reason="no_coordinates")
    assert absence_outcome("absent", "no_prediction", declined) == "correctly_declined"
    assert absence_outcome("absent", "miss", located) == "hallucinated_a_location"
    assert absence_outcome("absent", "no_prediction", unreadable) == "no_location_no_decline"
    assert absence_outcome("absent", "error", None) is None
    assert absence_outcome("boxes", "no_prediction", declined) == "missed_a_present_referent"
    assert absence_outcome("boxes", "hit", located) is None
    assert absence_outcome("mask", "no_prediction", unreadable) is None
