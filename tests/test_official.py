"""Each benchmark's official rule (benchmarks.official), with the arithmetic written out."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from pointfail.benchmarks.official import RULES, official_score
from pointfail.geometry import box_score as pointerbench_box_score, point_in_box as point_in_box_inclusive
from pointfail.records import ImageRef, ParseResult, Sample, Target


def _parse(points=(), boxes=()):
    return ParseResult(family="t", frame="unit", points=[list(p) for p in points], boxes=[list(b) for b in boxes])


def _mask_sample(tmp_path, benchmark, arr, **metadata):
    path = tmp_path / f"{benchmark}_mask.png"
    Image.fromarray(arr.astype(np.uint8), mode="L").save(path)
    h, w = arr.shape
    return Sample(sample_id="s", benchmark=benchmark, image=ImageRef(path="img.png", width=w, height=h),
                  instruction="x", target=Target(kind="mask", mask_path=str(path)), metadata=metadata)


def _px(x, y, w=20, h=10):
    """Normalized point at pixel position (x, y) of a w x h image."""
    return (x / w, y / h)


@pytest.mark.parametrize("bench", ["where2place", "refspatial"])
def test_mean_over_all_points_of_mask_value(tmp_path, bench):
    m = np.zeros((10, 20))
    m[0, 0] = 255
    m[0, 1] = 128
    s = _mask_sample(tmp_path, bench, m)
    # pixel (0,0) -> 255/255 = 1; pixel (1,0) -> 128/255; x = 24 px is outside the image -> 0
    got = official_score(s, _parse([_px(0.5, 0.5), _px(1.5, 0.5), _px(24, 0.5)]))
    assert got.score == pytest.approx((1 + 128 / 255 + 0) / 3, abs=1e-12)
    assert got.rule == RULES[bench]
    # a box covering pixels (0,0) and (1,0) contributes both: (1 + 128/255) / 2
    box = official_score(s, _parse(boxes=[(0, 0, 2 / 20, 1 / 10)]))
    assert box.score == pytest.approx((1 + 128 / 255) / 2, abs=1e-12)
    assert official_score(s, _parse()).score == 0.0  # no prediction scores 0


def test_point_bench_first_point_only(tmp_path):
    m = np.zeros((10, 20))
    m[2:6, 5:10] = 200  # > 127: inside
    s = _mask_sample(tmp_path, "point-bench", m, category="spatial", count=1)
    inside, outside = _px(7.5, 3.5), _px(15.5, 8.5)
    assert official_score(s, _parse([inside, outside])).score == 1.0
    assert official_score(s, _parse([outside, inside])).score == 0.0
    assert official_score(s, _parse()).score == 0.0
    assert official_score(s, _parse([inside])).rule == RULES["point-bench"]


def test_point_bench_threshold_127(tmp_path):
    m = np.zeros((10, 20))
    m[0, 0] = 127
    m[0, 1] = 128
    s = _mask_sample(tmp_path, "point-bench", m, category="affordable", count=1)
    assert official_score(s, _parse([_px(0.5, 0.5)])).score == 0.0  # 127 is not > 127
    assert official_score(s, _parse([_px(1.5, 0.5)])).score == 1.0


def test_point_bench_truncates_toward_zero(tmp_path):
    """PointArena indexes the mask with int(x): x = -0.4 px becomes column 0 (documented quirk)."""
    m = np.zeros((10, 20))
    m[:, 0] = 255
    s = _mask_sample(tmp_path, "point-bench", m, category="reasoning", count=1)
    assert official_score(s, _parse([_px(-0.4, 3.5)])).score == 1.0
    assert official_score(s, _parse([_px(-1.4, 3.5)])).score == 0.0  # int(-1.4) = -1: outside


def test_point_bench_counting_needs_exact_count_all_inside(tmp_path):
    m = np.zeros((10, 20))
    m[0:2, 0:4] = 255
    m[8:10, 16:18] = 255
    s = _mask_sample(tmp_path, "point-bench", m, category="counting", count=2)
    a, b, out = _px(1, 1), _px(17, 9), _px(10, 5)
    assert official_score(s, _parse([a, b])).score == 1.0
    assert official_score(s, _parse([a, b, a])).score == 0.0  # three points for count 2
    assert official_score(s, _parse([a])).score == 0.0
    assert official_score(s, _parse([a, out])).score == 0.0
    assert official_score(s, _parse([a, b])).rule == RULES["point-bench-counting"]


def _box_sample(bench="pointerbench-text", box=(10, 20, 30, 40), ev_type="point_in_bbox", task="point"):
    ev = {"type": ev_type, "bbox": list(box)}
    if ev_type == "iou":
        ev.update(min_coverage=0.9, min_precision=0.7)
    return Sample(sample_id="pbt_0000", benchmark=bench, image=ImageRef(path="x.png", width=1024, height=768),
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
    assert "inclusive" in official_score(s, _parse([edge])).rule


def test_pointerbench_box_rule_thresholds():
    s = _box_sample(box=(0, 0, 100, 50), ev_type="iou", task="box")
    W, H = 1024, 768
    # coverage = 90*50 / (100*50) = 0.9, precision 1 -> hit
    assert official_score(s, _parse(boxes=[(0, 0, 90 / W, 50 / H)])).score == 1.0
    # coverage 0.89 -> clipped
    assert official_score(s, _parse(boxes=[(0, 0, 89 / W, 50 / H)])).score == 0.0
    # precision = 100*50 / (140*50) = 0.714 -> hit; 100*50/(150*50) = 0.667 -> oversized
    assert official_score(s, _parse(boxes=[(0, 0, 140 / W, 50 / H)])).score == 1.0
    assert official_score(s, _parse(boxes=[(0, 0, 150 / W, 50 / H)])).score == 0.0
    # a point for a box row is malformed: wrong
    assert official_score(s, _parse([(0.01, 0.01)])).score == 0.0


def test_box_classes_by_arithmetic():
    gt = [0, 0, 100, 50]
    assert pointerbench_box_score([0, 0, 90, 50], gt).box_class == "hit"          # cov 0.9, prec 1
    assert pointerbench_box_score([0, 0, 80, 50], gt).box_class == "clipped"      # cov 0.8
    b = pointerbench_box_score([0, 0, 150, 50], gt)                               # prec 2/3
    assert b.box_class == "oversized" and b.precision == pytest.approx(2 / 3)
    assert pointerbench_box_score([50, 0, 200, 50], gt).box_class == "both"       # cov 0.5, prec 1/3
    assert pointerbench_box_score([90, 50, 0, 0], gt).box_class == "hit"          # corners sorted
    assert pointerbench_box_score(None, gt).box_class == "malformed"
    assert pointerbench_box_score([0, 0, float("nan"), 1], gt).box_class == "malformed"


def test_screenspot_label_and_none_cases(tmp_path):
    s = _box_sample(bench="screenspot-pro")
    assert official_score(s, _parse([(20 / 1024, 30 / 768)])).rule == RULES["screenspot-pro"]
    assert official_score(s, None) is None  # infrastructure error: never scored
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
    assert official_score(s, _parse([(x / 1024, y / 768)])).score == (1.0 if want else 0.0)


def test_official_score_through_build_record(tmp_path):
    """End to end: a Where2Place fixture, the Molmo parser, pointfail's outcome and the official mean."""
    import sys
    from pathlib import Path

    import pointfail.scoring as scoring
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
    import builders

    from pointfail.benchmarks import load
    from pointfail.prompts import build_prompt
    from pointfail.records import Response

    s = load("where2place", builders.where2place(tmp_path / "w2p", n=1))[0]
    prompt = build_prompt("molmo", s)
    # Molmo percent: (30 %, 40 %) of 20x10 = pixel (6, 4), inside the 5..9 x 2..5 mask (value 1);
    # (90 %, 90 %) = pixel (18, 9), outside (value 0): official mean 0.5, first point a hit
    rec = scoring.build_record(study="t", model="m", family="molmo", sample=s, prompt=prompt,
                               response=Response(raw_text='<points x1="30" y1="40" x2="90" y2="90" alt="gap">gap</points>'))
    assert rec.outcome == "hit"
    assert rec.official.score == pytest.approx(0.5, abs=1e-9)
    assert rec.official.rule == RULES["where2place"]
    assert rec.prompt.core == "Please point to the free space between the two plates."
