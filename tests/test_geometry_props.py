"""Hypothesis invariants for pointfail.geometry and the point-scoring rule."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pointfail.geometry import (
    TargetRegion,
    box_coverage,
    box_iou,
    box_overlap,
    box_precision,
    point_in_box,
    point_in_polygon,
)
from pointfail.records import ParseResult, Target
from pointfail.scoring import score_parse

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

coord = st.floats(-500, 1500, allow_nan=False, allow_infinity=False)
quarter = st.sampled_from([0.0, 0.25, 0.5, 0.75])  # exact binary fractions of a pixel


@st.composite
def boxes(draw, min_size=0.0):
    x0, y0 = draw(coord), draw(coord)
    w = draw(st.floats(min_size, 800, allow_nan=False))
    h = draw(st.floats(min_size, 800, allow_nan=False))
    return [x0, y0, x0 + w, y0 + h]


@st.composite
def int_boxes_in_image(draw, W=200, H=150):
    x0 = draw(st.integers(0, W - 1))
    y0 = draw(st.integers(0, H - 1))
    x1 = draw(st.integers(x0, W))
    y1 = draw(st.integers(y0, H))
    return [x0, y0, x1, y1]


@SETTINGS
@given(boxes(), boxes())
def test_iou_symmetric_and_in_unit_interval(a, b):
    assert box_iou(a, b) == box_iou(b, a)
    assert 0.0 <= box_iou(a, b) <= 1.0
    _, cov, prec = box_overlap(a, b)
    assert 0.0 <= cov <= 1.0 and 0.0 <= prec <= 1.0
    # coverage of b by a is precision of b against a
    assert box_coverage(a, b) == box_precision(b, a)


@SETTINGS
@given(boxes(min_size=0.01))
def test_iou_with_itself_is_one(a):
    if (a[2] - a[0]) * (a[3] - a[1]) > 0:
        assert box_iou(a, a) == 1.0


@SETTINGS
@given(boxes(min_size=0.01), st.floats(0, 300), st.floats(0, 300), st.floats(0, 300), st.floats(0, 300))
def test_coverage_is_one_when_prediction_contains_target(t, l, u, r, d):
    if (t[2] - t[0]) * (t[3] - t[1]) <= 0:
        return
    pred = [t[0] - l, t[1] - u, t[2] + r, t[3] + d]
    assert box_coverage(pred, t) == 1.0
    assert box_precision(pred, t) <= 1.0


@SETTINGS
@given(int_boxes_in_image(), st.floats(0, 1), st.floats(0, 1))
def test_point_inside_a_box_is_a_hit(box, fx, fy):
    W, H = 200, 150
    px = box[0] + fx * (box[2] - box[0])
    py = box[1] + fy * (box[3] - box[1])
    assert point_in_box((px, py), box)
    region = TargetRegion.from_target(Target(kind="boxes", boxes=[box]), (W, H))
    parse = ParseResult(family="test", frame="unit", points=[[px / W, py / H]])
    outcome, geom = score_parse(parse, region, "point", (W, H))
    assert outcome == "hit" and geom.in_target and geom.distance_px == 0.0


@SETTINGS
@given(int_boxes_in_image(), st.floats(-0.5, 1.5), st.floats(-0.5, 1.5))
def test_box_distance_zero_iff_inside(box, x, y):
    region = TargetRegion.from_target(Target(kind="boxes", boxes=[box]), (200, 150))
    d = region.distance_px((x, y))
    assert d >= 0
    assert (d == 0.0) == region.contains((x, y))


small_masks = arrays(np.bool_, st.tuples(st.integers(1, 24), st.integers(1, 24)))


@SETTINGS
@given(small_masks, st.floats(-0.3, 1.3), st.floats(-0.3, 1.3))
def test_mask_distance_zero_iff_inside(mask, x, y):
    region = TargetRegion.from_mask_array(mask)
    d = region.distance_px((x, y))
    if not mask.any():
        assert d is None and not region.contains((x, y))
        return
    assert d >= 0
    assert (d == 0.0) == region.contains((x, y))


@SETTINGS
@given(small_masks, st.data())
def test_mask_distance_equals_scipy_edt_in_image(mask, data):
    from scipy import ndimage

    if not mask.any():
        return
    h, w = mask.shape
    r = data.draw(st.integers(0, h - 1))
    c = data.draw(st.integers(0, w - 1))
    fx, fy = data.draw(quarter), data.draw(quarter)
    edt = ndimage.distance_transform_edt(~mask)
    region = TargetRegion.from_mask_array(mask)
    assert math.isclose(region.distance_px(((c + fx) / w, (r + fy) / h)), float(edt[r, c]), abs_tol=1e-12)


@SETTINGS
@given(
    small_masks,
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(-3, 27),
    st.integers(-3, 27),
    quarter,
    quarter,
)
def test_translating_image_mask_and_point_keeps_outcome(mask, left, top, right, bottom, pc, pr, fx, fy):
    h, w = mask.shape
    big = np.zeros((h + top + bottom, w + left + right), bool)
    big[top : top + h, left : left + w] = mask
    H2, W2 = big.shape
    px, py = pc + fx, pr + fy  # pixel units in the small image (may lie outside it)
    inside_small = 0 <= px < w and 0 <= py < h
    if not inside_small:
        return  # outside the small image the big canvas has pixels the small one lacks
    small_r = TargetRegion.from_mask_array(mask)
    big_r = TargetRegion.from_mask_array(big)
    p_small = [px / w, py / h]
    p_big = [(px + left) / W2, (py + top) / H2]
    o1, g1 = score_parse(ParseResult(family="t", frame="unit", points=[p_small]), small_r, "point", (w, h))
    o2, g2 = score_parse(ParseResult(family="t", frame="unit", points=[p_big]), big_r, "point", (W2, H2))
    assert o1 == o2
    if mask.any():
        assert g1.distance_px == g2.distance_px


@SETTINGS
@given(int_boxes_in_image(), st.integers(0, 300), st.integers(0, 300), st.floats(-0.2, 1.2), st.floats(-0.2, 1.2))
def test_translating_box_target_keeps_outcome(box, dx, dy, x, y):
    W, H = 200, 150
    W2, H2 = W + dx + 50, H + dy + 50
    r1 = TargetRegion.from_target(Target(kind="boxes", boxes=[box]), (W, H))
    moved = [box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy]
    r2 = TargetRegion.from_target(Target(kind="boxes", boxes=[moved]), (W2, H2))
    px, py = round(x * W * 4) / 4, round(y * H * 4) / 4  # quarter pixels: exact arithmetic
    assert r1.contains((px / W, py / H)) == r2.contains(((px + dx) / W2, (py + dy) / H2))


@SETTINGS
@given(int_boxes_in_image(), st.floats(-10, 210), st.floats(-10, 160))
def test_rectangle_polygon_agrees_with_inclusive_box(box, px, py):
    x0, y0, x1, y1 = box
    if x1 == x0 or y1 == y0:
        return
    poly = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
    gaps = [abs(px - x0), abs(px - x1), abs(py - y0), abs(py - y1)]
    if any(0 < gap <= 1e-9 for gap in gaps):
        return  # point_in_polygon counts points within 1e-9 px of an edge as on it (documented)
    assert point_in_polygon((px, py), poly) == point_in_box((px, py), box)


@SETTINGS
@given(int_boxes_in_image(W=40, H=30), boxes())
def test_mask_of_a_box_scores_like_the_box(tbox, pred):
    x0, y0, x1, y1 = tbox
    if x1 == x0 or y1 == y0:
        return
    mask = np.zeros((30, 40), bool)
    mask[y0:y1, x0:x1] = True  # pixels x0..x1-1 cover exactly [x0, x1)
    region = TargetRegion.from_mask_array(mask)
    exact = box_overlap(pred, tbox)
    s = region.box_score(pred)
    assert math.isclose(s.coverage, exact[1], abs_tol=1e-9)
    assert math.isclose(s.precision, exact[2], abs_tol=1e-9)
    assert math.isclose(s.iou, exact[0], abs_tol=1e-9)


def _encode(mask: np.ndarray, encoding: str):
    from PIL import Image

    u8 = mask.astype(np.uint8)
    if encoding == "1":
        return Image.fromarray(mask), "png"
    if encoding == "L255":
        return Image.fromarray(u8 * 255, mode="L"), "png"
    if encoding == "L01":
        return Image.fromarray(u8, mode="L"), "png"
    if encoding == "P":
        im = Image.fromarray(u8, mode="P")
        im.putpalette([0, 0, 0, 255, 255, 255])
        return im, "png"
    if encoding == "RGB_green":
        rgb = np.zeros(mask.shape + (3,), np.uint8)
        rgb[mask] = (0, 200, 0)
        return Image.fromarray(rgb), "png"
    if encoding == "RGBA_alpha":
        rgba = np.zeros(mask.shape + (4,), np.uint8)
        rgba[..., :3] = 255  # white everywhere: only alpha marks the target
        rgba[mask, 3] = 255  # (all in: constant alpha, read by its white colour; all out: transparent)
        return Image.fromarray(rgba), "png"
    if encoding == "LA":
        return Image.fromarray(u8 * 255, mode="L").convert("LA"), "png"
    if encoding == "I16":
        return Image.fromarray(mask.astype(np.uint16) * 65535), "png"
    raise AssertionError(encoding)


ENCODINGS = ["1", "L255", "L01", "P", "RGB_green", "RGBA_alpha", "LA", "I16"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arrays(np.bool_, st.tuples(st.integers(1, 12), st.integers(1, 12))), st.sampled_from(ENCODINGS))
def test_every_lossless_encoding_round_trips(mask, encoding):
    import tempfile
    from pathlib import Path

    from pointfail.geometry import load_mask

    im, ext = _encode(mask, encoding)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"m.{ext}"
        im.save(p)
        np.testing.assert_array_equal(load_mask(p), mask)
