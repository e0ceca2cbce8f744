"""scoring.frame_compliance: the coordinate-frame compliance diagnostic (PointerBench paper, Sec. 3.3
and Table 13). Fixed cases with the arithmetic written out; the outcome is never changed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from pointfail import geometry
from pointfail.geometry import TargetRegion
from pointfail.records import Target
from pointfail.scoring import frame_compliance, score_prediction

SIZE = (1024, 768)
BOX = [480, 360, 540, 400]  # pixels of the 1024x768 PointerBench frame; contains (512, 384) = centre


@pytest.fixture
def box_region() -> TargetRegion:
    return TargetRegion.from_target(Target(kind="boxes", boxes=[BOX]), SIZE)


def by_frame(diag: dict) -> dict[str, dict]:
    return {r["frame"]: r for r in diag["readings"]}


def test_json_pixels_reply_in_a_0_1000_frame(box_region):
    """The paper's case: asked for 1024x768 pixels, the model answers on a 0-1000 grid."""
    text = '{"point": [500, 500]}'
    d = frame_compliance("json_pixels", text, SIZE, box_region)
    assert d["diagnostic"] is True and d["declared_frame"] == "pixels_original"
    assert d["raw_primary"] == [500.0, 500.0]
    r = by_frame(d)
    assert list(r) == ["pixels_original", "unit", "percent_100", "grid_1000"]  # no model-input size
    assert r["pixels_original"]["declared"] and not r["grid_1000"]["declared"]
    # declared: pixel (500, 500); the box's bottom edge is y = 400 -> 100 px below it, a miss
    assert r["pixels_original"]["primary"] == [500 / 1024, 500 / 768]
    assert r["pixels_original"]["hit"] is False and r["pixels_original"]["distance_px"] == 100.0
    # 0-1000: (0.5, 0.5) -> pixel (512, 384), inside [480, 360, 540, 400]
    assert r["grid_1000"]["primary"] == [0.5, 0.5] and r["grid_1000"]["hit"] is True
    assert r["grid_1000"]["distance_px"] == 0.0
    # percent: (5.0, 5.0) -> pixel (5120, 3840); unit: (500, 500): far outside
    assert r["percent_100"]["primary"] == [5.0, 5.0] and r["percent_100"]["hit"] is False
    assert r["unit"]["hit"] is False
    assert d["hit_frames"] == ["grid_1000"]
    # the outcome is the declared frame's, whatever the diagnostic says
    assert score_prediction("json_pixels", text, image_size=SIZE, box=BOX).outcome == "miss"


def test_resized_pixels_with_and_without_the_model_input_size(box_region):
    # smart_resize(768, 1024) = (756, 1036): model input 1036x756
    text = '[{"point_2d": [518, 378], "label": "x"}]'
    d = frame_compliance("qwen2_5_vl", text, SIZE, box_region, model_input_size=(1036, 756))
    r = by_frame(d)
    assert list(r) == ["pixels_resized", "unit", "percent_100", "grid_1000", "pixels_original"]
    # declared: 518/1036 = 0.5, 378/756 = 0.5 -> pixel (512, 384): hit
    assert r["pixels_resized"]["primary"] == [0.5, 0.5] and r["pixels_resized"]["hit"] is True
    # original pixels: (518, 378) is inside [480..540] x [360..400] too
    assert r["pixels_original"]["hit"] is True
    # 0-1000: (0.518, 0.378) -> pixel (530.4, 290.3): y above 360, 69.7 px from the box
    assert r["grid_1000"]["hit"] is False
    assert r["grid_1000"]["distance_px"] == pytest.approx(360 - 0.378 * 768)
    assert d["hit_frames"] == ["pixels_resized", "pixels_original"]
    # without the size the declared reading cannot be computed: said so, the others still are
    d2 = frame_compliance("qwen2_5_vl", text, SIZE, box_region)
    r2 = by_frame(d2)
    assert r2["pixels_resized"]["hit"] is None and "model_input_size" in r2["pixels_resized"]["error"]
    assert "pixels_resized" not in [x["frame"] for x in d2["readings"] if not x["declared"]]
    assert d2["hit_frames"] == ["pixels_original"]


def test_yx_order_is_kept_for_every_reading(box_region):
    # Gemini writes [y, x]: [500, 250] is x = 250, y = 500
    d = frame_compliance("gemini", '[{"point": [500, 250], "label": "a"}]', SIZE, box_region)
    assert d["raw_primary"] == [250.0, 500.0]
    r = by_frame(d)
    # declared 0-1000: (0.25, 0.5) -> pixel (256, 384): left of the box (x0 = 480) by 224 px
    assert r["grid_1000_yx"]["primary"] == [0.25, 0.5] and r["grid_1000_yx"]["distance_px"] == 224.0
    # original pixels: (250, 500): 230 px left and 100 px below -> hypot(230, 100)
    assert r["pixels_original"]["distance_px"] == pytest.approx(np.hypot(230, 100))
    assert d["hit_frames"] == []


def test_unit_floats_sent_to_a_percent_family_on_a_mask(tmp_path):
    """Molmo (0-100 percent) answering 0-1 floats, scored on a 100x80 mask (columns 40..59, rows 30..49)."""
    m = np.zeros((80, 100), np.uint8)
    m[30:50, 40:60] = 255
    mask = tmp_path / "mask.png"
    Image.fromarray(m, mode="L").save(mask)
    geometry.mask_cache_clear()
    region = TargetRegion.from_target(Target(kind="mask", mask_path=str(mask)), (100, 80))
    d = frame_compliance("molmo", '<point x="0.5" y="0.5" alt="b">b</point>', (100, 80), region)
    r = by_frame(d)
    # percent: (0.005, 0.005) -> pixel (0, 0); the nearest mask pixel (40, 30): hypot(40, 30) = 50
    assert r["percent_100"]["declared"] and r["percent_100"]["hit"] is False
    assert r["percent_100"]["distance_px"] == 50.0
    # unit: (0.5, 0.5) -> pixel (50, 40): inside
    assert r["unit"]["hit"] is True and d["hit_frames"] == ["unit"]


def test_token_frames_report_only_their_declared_reading(box_region):
    d = frame_compliance("paligemma", "<loc0383><loc0511> mug", SIZE, box_region)
    assert [r["frame"] for r in d["readings"]] == ["loc_1024_yx"]
    assert d["alternatives"].startswith("not applicable")
    # the numbers as written are the bin indices (x = 511, y = 383; PaliGemma writes y first)
    assert d["raw_primary"] == [511.0, 383.0]
    # big_vision: x = 511 / 1023, y = 383 / 1023 -> pixel (511.5, 287.5): above the box
    assert d["readings"][0]["primary"] == [511 / 1023, 383 / 1023]
    assert d["readings"][0]["hit"] is False
    assert d["readings"][0]["distance_px"] == pytest.approx(360 - 383 / 1023 * 768)


def test_no_point_and_absent_target(box_region):
    d = frame_compliance("json_pixels", "It is the blue one.", SIZE, box_region)
    assert d["raw_primary"] is None and d["reason"] == "no_coordinates"
    assert all(r["hit"] is None and r["primary"] is None for r in d["readings"]) and d["hit_frames"] == []
    absent = TargetRegion.from_target(Target(kind="absent"), SIZE)
    d = frame_compliance("json_pixels", '{"point": [500, 500]}', SIZE, absent)
    assert [r["hit"] for r in d["readings"]] == [False] * 4


def test_size_must_match_region(box_region):
    with pytest.raises(ValueError, match="differs"):
        frame_compliance("json_pixels", '{"point": [1, 2]}', (100, 100), box_region)


@settings(max_examples=60, deadline=None)
@given(x=st.integers(0, 1100), y=st.integers(0, 800))
def test_declared_reading_agrees_with_the_outcome(x, y):
    region = TargetRegion.from_target(Target(kind="boxes", boxes=[BOX]), SIZE)
    text = json.dumps({"point": [x, y]})
    d = frame_compliance("json_pixels", text, SIZE, region)
    outcome = score_prediction("json_pixels", text, image_size=SIZE, box=BOX).outcome
    assert d["readings"][0]["declared"] and d["readings"][0]["hit"] == (outcome == "hit")


def test_cli_score_diagnose(capsys):
    from pointfail.cli import main

    argv = ["score", "--family", "json_pixels", "--image-size", "1024", "768", "--box", *map(str, BOX),
            "--text", '{"point": [500, 500]}']
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "frame_compliance" not in plain
    assert main(argv + ["--diagnose"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == plain["outcome"] == "miss"  # unchanged by the diagnostic
    fc = out["frame_compliance"]
    assert fc["diagnostic"] is True and fc["hit_frames"] == ["grid_1000"]
