"""Each benchmark's official rule (benchmarks.official), with the arithmetic of the official scripts
worked out at the edges that decide a row: x*W landing on an integer, on W itself, just below it;
boxes reversed, outside, degenerate; single- and multi-point Molmo replies; counting with fewer, equal
and more points; missing answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from pointfail.official import (
    RULES,
    SCREENSPOT_WRONG_FORMAT,
    official_score,
    pointarena_extract_points,
    robopoint_text2pts,
    roborefer_reader,
    rule_pixel,
    screenspot_correctness,
)
from pointfail.geometry import box_score as pointerbench_box_score, point_in_box as point_in_box_inclusive
from pointfail.records import ImageRef, OfficialScore, ParseResult, Sample, Target


def _parse(points=(), boxes=(), family="t"):
    return ParseResult(family=family, frame="unit", points=[list(p) for p in points], boxes=[list(b) for b in boxes])


def _mask_sample(tmp_path, benchmark, arr, **metadata):
    path = tmp_path / f"{benchmark}_mask.png"
    Image.fromarray(arr.astype(np.uint8), mode="L").save(path)
    h, w = arr.shape
    return Sample(sample_id="s", benchmark=benchmark, image=ImageRef(path="img.png", width=w, height=h),
                  instruction="x", target=Target(kind="mask", mask_path=str(path)), metadata=metadata)


def _px(x, y, w=20, h=10):
    """Normalized point at pixel position (x, y) of a w x h image."""
    return (x / w, y / h)


# ---------------------------------------------------------------------------- Where2Place (RoboPoint)


def test_where2place_text2pts_scales_relative_values_to_640x480(tmp_path):
    m = np.zeros((480, 640))
    m[168, 320] = 255   # int(0.5*640) = 320, int(0.35*480) = int(168.0) = 168
    m[240, 100] = 255
    s = _mask_sample(tmp_path, "where2place", m)
    assert official_score(s, _parse(), raw_text="[(0.5, 0.35)]").score == 1.0
    # integer pairs are pixels as written
    assert official_score(s, _parse(), raw_text="(100, 240)").score == 1.0
    # two points, one in (1) one out (0): the mean, 0.5
    assert official_score(s, _parse(), raw_text="[(100, 240), (101, 240)]").score == 0.5
    # x = 640 = W (int(1.0 * 640) too) is outside the mask: 0, and it counts in the mean
    assert official_score(s, _parse(), raw_text="[(100, 240), (640, 240)]").score == 0.5
    assert official_score(s, _parse(), raw_text="[(100, 240), (1.0, 0.5)]").score == 0.5
    # x = 639 is the last column: inside the image, value 0 here
    assert official_score(s, _parse(), raw_text="(639, 240)").score == 0.0


def test_where2place_boxes_numpy_slices(tmp_path):
    m = np.zeros((480, 640))
    m[0:4, 0:6] = 255        # 24 cells
    s = _mask_sample(tmp_path, "where2place", m)
    # (0.0, 0.0, 0.01, 0.01): int(6.4) = 6, int(4.8) = 4: the 6 x 4 = 24 cells, all in the mask
    assert official_score(s, _parse(), raw_text="(0.0, 0.0, 0.01, 0.01)").score == 1.0
    # a 12 x 4 box: 24 of its 48 cells in the mask = 0.5
    assert official_score(s, _parse(), raw_text="(0, 0, 12, 4)").score == 0.5
    # the box's cells and a point all count once: (24 * 1 + 1 * 0) / 25
    assert official_score(s, _parse(), raw_text="(0, 0, 6, 4) (300, 300)").score == pytest.approx(24 / 25, abs=1e-15)
    # reversed corners: the slice is empty, no point: 0; beside a point the box adds nothing
    assert official_score(s, _parse(), raw_text="(6, 4, 0, 0)").score == 0.0
    assert official_score(s, _parse(), raw_text="(6, 4, 0, 0) (1, 1)").score == 1.0
    # a negative start counts from the far edge (numpy): [-5:3] is empty
    assert official_score(s, _parse(), raw_text="(-5, 0, 3, 4) (300, 300)").score == 0.0
    # a box past the edge is cut to the 640 x 480 grid: columns 630..639 x rows 470..479, 100 cells, 0 each
    assert official_score(s, _parse(), raw_text="(630, 470, 700, 500)").score == 0.0


def test_where2place_skips_what_its_parser_raises_on_and_missing_answers(tmp_path):
    m = np.zeros((480, 640))
    s = _mask_sample(tmp_path, "where2place", m)
    # an int x0 with a float corner: text2pts slices with a float, raises, and the script `continue`s
    got = official_score(s, _parse(), raw_text="(10, 0.5, 20, 0.6)")
    assert got.score is None and "leaves it out" in got.note
    missing = official_score(s, None)  # no answer: not in the script's mean, and said so
    assert missing.score is None and "leaves it out" in missing.note


def test_where2place_molmo_reply_is_read_as_nothing_officially(tmp_path):
    """RoboPoint's text2pts reads only parenthesised tuples: a Molmo point tag is no point (0), while
    pointfail's Molmo reading (30 %, 40 % of 20 x 10 = pixel (6, 4), in the mask) would score 1."""
    m = np.zeros((10, 20))
    m[4, 6] = 255
    s = _mask_sample(tmp_path, "where2place", m)
    got = official_score(s, _parse([(0.3, 0.4)], family="molmo"), raw_text='<point x="30" y="40">gap</point>',
                         family="molmo")
    assert got.score == 0.0 and got.own_score == 1.0
    assert got.rule == RULES["where2place"]


def test_where2place_graded_mask_value(tmp_path):
    m = np.zeros((480, 640))
    m[0, 1] = 128
    s = _mask_sample(tmp_path, "where2place", m)
    assert official_score(s, _parse(), raw_text="(1, 0)").score == 128 / 255


# ----------------------------------------------------------------------------- RefSpatial (RoboRefer)


def test_refspatial_truncates_x_times_h_never_rounds(tmp_path):
    """The issue's row: (0.5, 0.35) on 1280 x 720 is row int(0.35 * 720) = int(251.99999999999997) = 251."""
    m = np.zeros((720, 1280))
    m[252, 640] = 255
    s = _mask_sample(tmp_path, "refspatial", m)
    assert 0.35 * 720 < 252
    got = official_score(s, _parse([(0.5, 0.35)]), raw_text="[(0.5, 0.35)]", family="internvl3")
    assert got.score == 0.0 and got.own_score is None  # pointfail's reading truncates alike
    m[251, 640] = 255
    s = _mask_sample(tmp_path, "refspatial", m)
    assert official_score(s, _parse([(0.5, 0.35)]), raw_text="[(0.5, 0.35)]", family="internvl3").score == 1.0


def test_refspatial_height_1440_flips_0_70(tmp_path):
    m = np.zeros((1440, 1280))
    m[1008, 640] = 255
    s = _mask_sample(tmp_path, "refspatial", m)
    assert int(0.7 * 1440) == 1007
    assert official_score(s, _parse(), raw_text="(0.5, 0.7)", family="internvl3").score == 0.0


def test_refspatial_molmo_reads_only_numbered_attributes(tmp_path):
    m = np.zeros((720, 1280))
    m[251, 640] = 255   # int(35.0 / 100 * 720) = 251
    s = _mask_sample(tmp_path, "refspatial", m)
    assert roborefer_reader("molmo") == "xml2pts"
    single = official_score(s, _parse([(0.5, 0.35)], family="molmo"), raw_text='<point x="50.0" y="35.0">a</point>',
                            family="molmo")
    assert single.score == 0.0 and single.own_score == 1.0  # read as nothing officially
    multi = official_score(s, _parse([(0.5, 0.35), (0.9, 0.9)], family="molmo"),
                           raw_text='<points x1="50.0" y1="35.0" x2="90.0" y2="90.0">a</points>', family="molmo")
    assert multi.score == 0.5 and multi.own_score is None   # (1 + 0) / 2, both readings agree
    assert "xml2pts" in multi.rule


def test_refspatial_boxes_are_not_sorted_or_clamped(tmp_path):
    m = np.zeros((10, 20))
    m[0:2, 0:2] = 255
    s = _mask_sample(tmp_path, "refspatial", m)
    # (0, 0, 2, 2) absolute pixels via the Qwen reading: 4 cells, all in the mask
    assert roborefer_reader("qwen2_5_vl") == "text2pts absolute"
    assert official_score(s, _parse(), raw_text="(0, 0, 2, 2)", family="qwen2_5_vl").score == 1.0
    # partly outside: (-2, 0, 2, 2) is 4 x 2 = 8 cells; the 4 left of the image count 0: 4 / 8
    assert official_score(s, _parse(), raw_text="(-2, 0, 2, 2)", family="qwen2_5_vl").score == 0.5
    # reversed corners: ones((y1 - y0, x1 - x0)) has a negative dimension, the question is dropped
    got = official_score(s, _parse(), raw_text="(2, 2, 0, 0)", family="qwen2_5_vl")
    assert got.score is None
    # a degenerate box adds no cell: no point, 0
    assert official_score(s, _parse(), raw_text="(1, 1, 1, 5)", family="qwen2_5_vl").score == 0.0
    # the absolute reading with a float pair stops the script: unscored
    assert official_score(s, _parse(), raw_text="(1.5, 1.0)", family="qwen2_5_vl").score is None
    # the relative reading scales a 4-tuple unconditionally: (0, 0, 0.1, 0.2) -> (0, 0, 2, 2)
    assert official_score(s, _parse(), raw_text="(0, 0, 0.1, 0.2)", family="internvl3").score == 1.0


def test_refspatial_gemini_json_y_first_grid(tmp_path):
    m = np.zeros((720, 1280))
    m[251, 640] = 255   # y = int(350 / 1000 * 720) = 251, x = int(500 / 1000 * 1280) = 640
    s = _mask_sample(tmp_path, "refspatial", m)
    reply = '```json\n[{"point": [350, 500], "label": "a"}]\n```'
    assert official_score(s, _parse(), raw_text=reply, family="gemini").score == 1.0
    assert official_score(s, _parse(), raw_text='[{"point": [350, 500]}]', family="gemini").score == 0.0  # no fence
    assert official_score(s, _parse(), raw_text='```json\n[{"point": ["a", 5]}]\n```', family="gemini").score is None


def test_refspatial_mask_nonzero_is_in(tmp_path):
    m = np.zeros((10, 20))
    m[0, 1] = 1   # any value > 0 is in (summarize_acc.py line 78)
    s = _mask_sample(tmp_path, "refspatial", m)
    assert official_score(s, _parse(), raw_text="(1, 0)", family="qwen2_5_vl").score == 1.0
    assert official_score(s, None, family="molmo").score is None
    assert "xml2pts" in official_score(s, None, family="molmo").rule


# ------------------------------------------------------------------------------ Point-Bench (PointArena)


def test_point_bench_first_point_only_and_threshold(tmp_path):
    m = np.zeros((10, 20))
    m[2:6, 5:10] = 200
    m[0, 0], m[0, 1] = 127, 128
    s = _mask_sample(tmp_path, "point-bench", m, category="spatial", count=1)
    inside, outside = _px(7.5, 3.5), _px(15.5, 8.5)
    assert official_score(s, _parse([inside, outside])).score == 1.0
    assert official_score(s, _parse([outside, inside])).score == 0.0
    assert official_score(s, _parse()).score == 0.0
    assert official_score(s, _parse([_px(0.5, 0.5)])).score == 0.0  # 127 is not > 127
    assert official_score(s, _parse([_px(1.5, 0.5)])).score == 1.0
    assert official_score(s, _parse([inside])).rule == RULES["point-bench"]


def test_point_bench_truncates_toward_zero_and_w_is_outside(tmp_path):
    m = np.zeros((10, 20))
    m[:, 0] = 255
    m[:, 19] = 255
    s = _mask_sample(tmp_path, "point-bench", m, category="reasoning", count=1)
    assert official_score(s, _parse([_px(-0.4, 3.5)])).score == 1.0   # int(-0.4) = 0
    assert official_score(s, _parse([_px(-1.4, 3.5)])).score == 0.0   # int(-1.4) = -1: outside
    assert official_score(s, _parse([_px(19.999, 3.5)])).score == 1.0  # just below W: column 19
    assert official_score(s, _parse([(1.0, 0.35)])).score == 0.0       # x*W = 20 = W: outside


def test_point_bench_molmo_extract_points(tmp_path):
    m = np.zeros((720, 1280), dtype=np.uint8)
    m[251, 640] = 255
    s = _mask_sample(tmp_path, "point-bench", m, category="spatial", count=1)
    # x1="50.0" y1="35.0": 35.0 / 100 * 720 = 251.99999999999997, int() = 251
    assert pointarena_extract_points('<points x1="50.0" y1="35.0">a</points>', 1280, 720) == [(640.0, 0.35 * 720)]
    reply = '<points x1="50.0" y1="35.0" x2="1.0" y2="1.0">a</points>'
    assert official_score(s, _parse([(0.5, 0.35), (0.01, 0.01)], family="molmo"), raw_text=reply,
                          family="molmo").score == 1.0
    # a value above 100 skips the pair; no point is a failure
    assert official_score(s, _parse([(1.5, 0.35)], family="molmo"), raw_text='<point x="150" y="35.0">a</point>',
                          family="molmo").score == 0.0


def test_point_bench_counting_fewer_equal_more(tmp_path):
    m = np.zeros((10, 20))
    m[0:2, 0:4] = 255
    m[8:10, 16:18] = 255
    s = _mask_sample(tmp_path, "point-bench", m, category="counting", count=2)
    a, b, out = _px(1, 1), _px(17, 9), _px(10, 5)
    assert official_score(s, _parse([a, b])).score == 1.0
    assert official_score(s, _parse([a, b, a])).score == 0.0  # more
    assert official_score(s, _parse([a])).score == 0.0        # fewer
    assert official_score(s, _parse([a, out])).score == 0.0   # equal, one outside
    assert official_score(s, _parse([a, b])).rule == RULES["point-bench-counting"]


def test_point_bench_molmo_click_counts_twice(tmp_path):
    """extract_points runs its patterns one after another: ``Click(5.0, 10.0)`` also matches the bare
    ``(a.b, c.d)`` pattern, so one click is two points, which meets a count of 2."""
    m = np.zeros((10, 20))
    m[1, 1] = 255   # 5.0 % of 20 = 1.0, 10.0 % of 10 = 1.0
    s = _mask_sample(tmp_path, "point-bench", m, category="counting", count=2)
    assert len(pointarena_extract_points("Click(5.0, 10.0)", 20, 10)) == 2
    got = official_score(s, _parse([(0.05, 0.1)], family="molmo"), raw_text="Click(5.0, 10.0)", family="molmo")
    assert got.score == 1.0 and got.own_score == 0.0


def test_point_bench_missing_answer_is_a_failure(tmp_path):
    s = _mask_sample(tmp_path, "point-bench", np.zeros((10, 20)), category="spatial", count=1)
    got = official_score(s, None)
    assert got.score == 0.0 and got.note


# ----------------------------------------------------------------------- PointerBench and ScreenSpot-Pro


def _box_sample(bench="pointerbench-text", box=(10, 20, 30, 40), ev_type="point_in_bbox", task="point", size=(1024, 768)):
    ev = {"type": ev_type, "bbox": list(box)}
    if ev_type == "iou":
        ev.update(min_coverage=0.9, min_precision=0.7)
    return Sample(sample_id="pbt_0000", benchmark=bench, image=ImageRef(path="x.png", width=size[0], height=size[1]),
                  instruction="x", task=task, target=Target(kind="boxes", boxes=[list(box)], eval=ev))


def test_pointerbench_point_inclusive_edges():
    s = _box_sample()
    edge = (30 / 1024, 40 / 768)  # bottom-right corner, exactly on the inclusive edge
    assert official_score(s, _parse([edge])).score == 1.0
    assert official_score(s, _parse([(10 / 1024, 20 / 768)])).score == 1.0
    assert official_score(s, _parse([(30.01 / 1024, 40 / 768)])).score == 0.0
    assert official_score(s, _parse([(20 / 1024, 19.99 / 768)])).score == 0.0
    assert official_score(s, _parse([(0.5, 0.5), edge])).score == 0.0  # only the first point counts
    assert official_score(s, _parse(boxes=[(0, 0, 1, 1)])).score == 0.0  # no point: wrong
    assert official_score(s, None).score == 0.0  # no answer: wrong, in n


def test_pixel_frame_recovers_the_written_number():
    """15 / 22 * 22 is 15.000000000000002: a pixel-frame reply of 15 on a 22-pixel axis is compared as
    15, the number written; a grid reply compares x * W raw."""
    assert 15 / 22 * 22 != 15
    assert rule_pixel(15 / 22, 22, "pixels_original") == 15
    assert rule_pixel(15 / 22, 22, "grid") == 15 / 22 * 22
    assert rule_pixel(0.35, 720, "grid") == 0.35 * 720 < 252


def test_pointerbench_pixel_family_on_the_edge_and_grid_just_below():
    s = _box_sample(box=(0, 0, 15, 252), size=(22, 720))
    on_edge = ParseResult(family="json_pixels", frame="pixels", points=[[15 / 22, 0.1]])
    assert official_score(s, on_edge).score == 1.0  # 15 <= 15
    below = _box_sample(box=(0, 252, 15, 300), size=(22, 720))
    grid = ParseResult(family="qwen3_vl", frame="grid_1000", points=[[0.1, 0.35]])
    assert official_score(below, grid).score == 0.0  # 0.35 * 720 = 251.99999999999997 < 252


def test_pointerbench_box_rule_thresholds():
    s = _box_sample(box=(0, 0, 100, 50), ev_type="iou", task="box")
    W, H = 1024, 768
    assert official_score(s, _parse(boxes=[(0, 0, 90 / W, 50 / H)])).score == 1.0   # coverage 0.9
    assert official_score(s, _parse(boxes=[(0, 0, 89 / W, 50 / H)])).score == 0.0   # coverage 0.89
    assert official_score(s, _parse(boxes=[(0, 0, 140 / W, 50 / H)])).score == 1.0  # precision 0.714
    assert official_score(s, _parse(boxes=[(0, 0, 150 / W, 50 / H)])).score == 0.0  # precision 0.667
    assert official_score(s, _parse([(0.01, 0.01)])).score == 0.0  # a point for a box row: wrong


def test_box_classes_by_arithmetic():
    gt = [0, 0, 100, 50]
    assert pointerbench_box_score([0, 0, 90, 50], gt).box_class == "hit"
    assert pointerbench_box_score([0, 0, 80, 50], gt).box_class == "clipped"
    b = pointerbench_box_score([0, 0, 150, 50], gt)
    assert b.box_class == "oversized" and b.precision == pytest.approx(2 / 3)
    assert pointerbench_box_score([50, 0, 200, 50], gt).box_class == "both"
    assert pointerbench_box_score([90, 50, 0, 0], gt).box_class == "hit"          # corners sorted
    assert pointerbench_box_score(None, gt).box_class == "malformed"
    assert pointerbench_box_score([0, 0, float("nan"), 1], gt).box_class == "malformed"


def test_screenspot_pro_compares_normalized_values():
    """eval_sample_positive_gt divides the box by img_size: 252 / 720 is exactly 0.35, so a point at
    y = 0.35 is on the edge (correct), where the pixel comparison 0.35 * 720 < 252 would miss it."""
    s = _box_sample(bench="screenspot-pro", box=(0, 252, 100, 300), size=(1280, 720))
    assert 252 / 720 == 0.35
    got = official_score(s, _parse([(0.05, 0.35)]))
    assert got.score == 1.0 and got.rule == RULES["screenspot-pro"]
    assert official_score(s, _parse([(0.05, np.nextafter(0.35, 0))])).score == 0.0
    assert official_score(s, None).score == 0.0  # wrong_format / no answer: in num_total
    # a box answer: the wrappers (qwen2_5vl.py, internvl.py, ...) click its centre, here (0.05, 0.375): in the box
    assert official_score(s, _parse(boxes=[(0, 0.35, 0.1, 0.4)])).score == 1.0
    # centre y = (0.3 + 0.39) / 2 = 0.345 < 252 / 720 = 0.35: outside, although the box overlaps the target
    assert official_score(s, _parse(boxes=[(0, 0.3, 0.1, 0.39)])).score == 0.0
    no_point = official_score(s, _parse())  # no point, no box: the script's point is None
    assert (no_point.score, no_point.note) == (0.0, SCREENSPOT_WRONG_FORMAT)
    assert screenspot_correctness(no_point.score, no_point.note) == "wrong_format"
    assert screenspot_correctness(0.0, official_score(s, None).note) == "wrong_format"  # no answer
    assert screenspot_correctness(0.0, None) == "wrong" and screenspot_correctness(1.0, None) == "correct"
    absent = Sample(sample_id="a", benchmark="x", image=ImageRef(path="x", width=4, height=4), instruction="x",
                    target=Target(kind="absent"))
    assert official_score(absent, _parse([(0.5, 0.5)])) is None


@settings(max_examples=200, deadline=None)
@given(x=st.integers(0, 1024), y=st.integers(0, 768),
       box=st.tuples(st.integers(0, 1024), st.integers(0, 768), st.integers(0, 1024), st.integers(0, 768)))
def test_normalized_parse_agrees_with_pixel_rule(x, y, box):
    """A whole-pixel answer converted to the unit square and back scores exactly as in pixels,
    including points on the inclusive edges."""
    x0, y0, x1, y1 = min(box[0], box[2]), min(box[1], box[3]), max(box[0], box[2]), max(box[1], box[3])
    s = _box_sample(box=(x0, y0, x1, y1))
    want = point_in_box_inclusive((x, y), [x0, y0, x1, y1])
    got = official_score(s, ParseResult(family="json_pixels", frame="pixels", points=[[x / 1024, y / 768]]))
    assert got.score == (1.0 if want else 0.0)


@settings(max_examples=200, deadline=None)
@given(w=st.integers(1, 4096), v=st.integers(0, 4096))
def test_rule_pixel_recovers_every_whole_pixel(w, v):
    assert rule_pixel(v / w, w, "pixels_original") == v


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet="(),.-+0123456789 xy=\"<>", max_size=200))
def test_text2pts_never_raises(text):
    got = robopoint_text2pts(text, 640, 480)
    assert got is None or all(k in ("pt", "box") for k, _, _ in got)


def test_official_score_serializes_without_unset_fields():
    assert OfficialScore(rule="r", score=1.0).model_dump(mode="json") == {"rule": "r", "score": 1.0}
    assert OfficialScore(rule="r", score=None, own_score=0.5, note="n").model_dump(mode="json") == {
        "rule": "r", "score": None, "own_score": 0.5, "note": "n"}


def test_official_score_through_build_record(tmp_path):
    """End to end: a Where2Place fixture, the Molmo parser, pointfail's outcome and the official mean.
    RoboPoint's text2pts reads no Molmo tag: officially 0; pointfail's reading (one point in, one out)
    would score 0.5."""
    import sys
    from pathlib import Path

    import pointfail.scoring as scoring
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
    import builders

    from pointfail.inputs.benchmarks import load
    from pointfail.prompts import build_prompt
    from pointfail.records import Response

    s = load("where2place", builders.where2place(tmp_path / "w2p", n=1))[0]
    prompt = build_prompt("molmo", s)
    rec = scoring.build_record(study="t", model="m", family="molmo", sample=s, prompt=prompt,
                               response=Response(raw_text='<points x1="30" y1="40" x2="90" y2="90" alt="gap">gap</points>'))
    assert rec.outcome == "hit"
    assert rec.official.score == 0.0 and rec.official.own_score == pytest.approx(0.5, abs=1e-9)
    assert rec.official.rule == RULES["where2place"]
    err = scoring.build_record(study="t", model="m", family="molmo", sample=s, prompt=prompt,
                               response=Response(raw_text=None, error="oom"))
    assert err.outcome == "error" and err.official.score is None  # RoboPoint's script skips a missing answer
    assert "leaves it out" in err.official.note


def test_a_number_too_long_for_a_float_is_what_the_script_raises_on(tmp_path):
    """``int(float('9' * 400) * 640)`` raises OverflowError in text2pts and xml2pts: RoboPoint skips the
    reply and RoboRefer drops the question; pointfail says so instead of failing."""
    huge = "9" * 400
    assert robopoint_text2pts(f"({huge}.0, 0.5)") is None
    s = _mask_sample(tmp_path, "refspatial", np.zeros((10, 20)))
    got = official_score(s, _parse(), raw_text=f'<points x1="{huge}" y1="1">a</points>', family="molmo")
    assert got.score is None and got.note
