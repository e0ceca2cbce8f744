"""Fixed cases for pointfail.geometry, with the arithmetic written next to each expected value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from pointfail import geometry as g
from pointfail.geometry import (
    GeometryError,
    MaskError,
    MaskSizeError,
    TargetRegion,
    box_overlap,
    box_score,
    load_mask,
    point_in_box,
    point_in_mask,
    point_in_polygon,
)
from pointfail.records import Target


@pytest.fixture(autouse=True)
def _fresh_cache():
    g.mask_cache_clear()
    yield
    g.mask_cache_clear()


def column_mask(w: int, h: int, col: int) -> np.ndarray:
    m = np.zeros((h, w), dtype=bool)
    m[:, col] = True
    return m


# --------------------------------------------------------------------------- point in mask


def test_float_error_does_not_move_a_point_across_a_pixel_edge():
    # 0.29 * 100 == 28.999999999999996 in binary floating point; floor would say column 28.
    assert 0.29 * 100 != 29
    m = column_mask(100, 10, 29)
    assert point_in_mask((0.29, 0.5), m)
    assert not point_in_mask((0.29, 0.5), column_mask(100, 10, 28))


def test_x_equal_one_is_the_last_column_and_beyond_is_outside():
    m = column_mask(100, 10, 99)
    assert point_in_mask((1.0, 0.5), m)  # 1.0 * 100 = 100 -> last column 99
    assert point_in_mask((0.999, 0.5), m)  # floor(99.9) = 99
    assert not point_in_mask((1.001, 0.5), m)  # 100.1 > W: in no pixel
    assert not point_in_mask((0.5, 1.0001), np.ones((10, 100), bool))
    assert not point_in_mask((-0.001, 0.5), np.ones((10, 100), bool))  # -0.1 < 0
    assert point_in_mask((0.0, 0.0), np.ones((10, 100), bool))
    assert not point_in_mask((float("nan"), 0.5), np.ones((10, 100), bool))


def test_pixel_lookup_rows_and_columns():
    # W=4, H=2: point (0.6, 0.75) -> column floor(2.4)=2, row floor(1.5)=1
    m = np.zeros((2, 4), bool)
    m[1, 2] = True
    assert point_in_mask((0.6, 0.75), m)
    assert not point_in_mask((0.75, 0.6), m)  # column 3, row 1


# --------------------------------------------------------------------------- boxes


def test_point_in_box_is_inclusive_on_both_edges():
    box = [10, 20, 30, 40]
    assert point_in_box((10, 20), box) and point_in_box((30, 40), box)
    assert point_in_box((30, 20), box) and point_in_box((20, 30), box)
    assert not point_in_box((30.001, 30), box)
    assert not point_in_box((20, 19.999), box)
    assert point_in_box((20, 30), [30, 40, 10, 20])  # corners sorted, as PointerBench does


def test_region_box_contains_with_normalized_points():
    region = TargetRegion.from_target(Target(kind="boxes", boxes=[[10, 20, 30, 40]]), (100, 200))
    assert region.contains((0.10, 0.10))  # (10, 20): corner, inclusive
    assert region.contains((0.30, 0.20))  # (30, 40): opposite corner
    assert not region.contains((0.31, 0.15))  # x = 31 > 30
    # 0.28 * 100 = 28.000000000000004 in floats -> snapped to 28, on the edge of [.., 28]: inside
    edge = TargetRegion.from_target(Target(kind="boxes", boxes=[[10, 20, 28, 40]]), (100, 200))
    assert 0.28 * 100 > 28
    assert edge.contains((0.28, 0.15))
    assert not edge.contains((0.2801, 0.15))


def test_box_overlap_arithmetic():
    # pred [0,0,10,10], target [5,0,15,10]: inter 5*10=50, areas 100 and 100, union 150
    iou, cov, prec = box_overlap([0, 0, 10, 10], [5, 0, 15, 10])
    assert iou == pytest.approx(50 / 150) and cov == 0.5 and prec == 0.5
    # disjoint
    assert box_overlap([0, 0, 1, 1], [2, 2, 3, 3]) == (0.0, 0.0, 0.0)
    # inverted corners are sorted first
    assert box_overlap([10, 10, 0, 0], [0, 0, 10, 10]) == (1.0, 1.0, 1.0)
    # zero-area target: coverage 0 (PointerBench: "inter / gt_area if gt_area else 0.0")
    assert box_overlap([0, 0, 10, 10], [5, 5, 5, 5]) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "pred, target, cls, cov, prec",
    [
        ([0, 0, 10, 10], [0, 0, 10, 10], "hit", 1.0, 1.0),
        ([0, 0, 9, 10], [0, 0, 10, 10], "hit", 0.9, 1.0),  # 90/100 = 0.9 >= 0.90
        ([0, 0, 8, 10], [0, 0, 10, 10], "clipped", 0.8, 1.0),  # 80/100 < 0.90
        ([0, 0, 10, 10], [0, 0, 7, 10], "hit", 1.0, 0.7),  # 70/100 = 0.7 >= 0.70
        ([0, 0, 10, 15], [0, 0, 10, 10], "oversized", 1.0, 100 / 150),  # 0.667 < 0.70
        ([0, 0, 8, 20], [0, 0, 10, 10], "both", 0.8, 80 / 160),  # 0.8 < 0.9 and 0.5 < 0.7
    ],
)
def test_pointerbench_box_rule(pred, target, cls, cov, prec):
    s = box_score(pred, target)
    assert s.box_class == cls
    assert s.coverage == pytest.approx(cov) and s.precision == pytest.approx(prec)


def test_box_rule_takes_thresholds_and_flags_malformed():
    assert box_score([0, 0, 8, 10], [0, 0, 10, 10], min_coverage=0.8).box_class == "hit"
    for bad in (None, [1, 2, 3], [0, 0, float("nan"), 1], ["a", 0, 1, 1]):
        s = box_score(bad, [0, 0, 10, 10])
        assert s.box_class == "malformed" and s.iou is None


def test_region_box_score_uses_row_thresholds():
    t = Target(kind="boxes", boxes=[[0, 0, 10, 10]], eval={"type": "iou", "min_coverage": 0.5, "min_precision": 0.5})
    region = TargetRegion.from_target(t, (100, 100))
    assert region.box_score([0, 0, 6, 10]).box_class == "hit"  # coverage 0.6 >= 0.5
    assert TargetRegion.from_target(Target(kind="boxes", boxes=[[0, 0, 10, 10]]), (100, 100)).box_score(
        [0, 0, 6, 10]
    ).box_class == "clipped"


def test_union_of_boxes_area_and_box_score():
    region = TargetRegion.from_target(Target(kind="boxes", boxes=[[10, 10, 20, 20], [15, 15, 30, 30]]), (100, 100))
    assert region.area_px == 100 + 225 - 25  # overlap [15,15,20,20] counted once
    s = region.box_score([10, 10, 30, 30])  # covers the union (300) inside a 400 box
    assert s.coverage == 1.0 and s.precision == 300 / 400 and s.iou == 300 / 400
    assert region.bbox_px == [10, 10, 30, 30]
    assert region.contains((0.25, 0.25)) and not region.contains((0.12, 0.28))


# --------------------------------------------------------------------------- polygons


def test_polygon_containment_even_odd_and_edges():
    tri = [[0, 0], [10, 0], [0, 10]]
    assert point_in_polygon((2, 2), tri)
    assert not point_in_polygon((6, 6), tri)  # 6 + 6 > 10
    assert point_in_polygon((5, 5), tri)  # on the hypotenuse: inclusive
    assert point_in_polygon((0, 0), tri)  # vertex
    # U shape: the notch between the arms is outside
    u = [[0, 0], [30, 0], [30, 30], [20, 30], [20, 10], [10, 10], [10, 30], [0, 30]]
    assert point_in_polygon((5, 20), u) and point_in_polygon((25, 20), u)
    assert not point_in_polygon((15, 20), u)
    assert point_in_polygon((15, 5), u)
    with pytest.raises(GeometryError):
        point_in_polygon((0, 0), [[0, 0], [1, 1]])


def test_polygon_region_area_distance_and_clip():
    sq = [[10, 10], [20, 10], [20, 20], [10, 20]]
    r = TargetRegion.from_target(Target(kind="polygon", polygons=[sq]), (100, 100))
    assert r.area_px == 100.0  # 10 * 10 by the shoelace formula
    assert r.distance_px((0.05, 0.15)) == 5.0  # (5, 15) is 5 px left of x = 10
    assert r.distance_px((0.25, 0.26)) == pytest.approx(math.hypot(5, 6))  # nearest corner (20, 20)
    assert r.distance_px((0.15, 0.15)) == 0.0
    assert r.intersection_area_px([15, 15, 40, 40]) == 25.0  # [15,20] x [15,20]
    tri = TargetRegion.from_target(Target(kind="polygon", polygons=[[[0, 0], [10, 0], [0, 10]]]), (100, 100))
    assert tri.area_px == 50.0
    assert tri.distance_px((0.1, 0.1)) == pytest.approx(10 / math.sqrt(2))  # |10+10-10| / sqrt(2)


# --------------------------------------------------------------------------- distances


def test_box_distance_arithmetic():
    r = TargetRegion.from_target(Target(kind="boxes", boxes=[[10, 10, 20, 20]]), (100, 100))
    assert r.distance_px((0.25, 0.24)) == pytest.approx(math.sqrt(5**2 + 4**2))  # (25, 24)
    assert r.distance_px((0.05, 0.15)) == 5.0
    assert r.distance_px((0.2, 0.2)) == 0.0  # corner, inclusive
    assert r.distance_norm((0.05, 0.15)) == pytest.approx(5 / math.hypot(100, 100))


def test_mask_distance_pixel_centre_convention():
    m = np.zeros((100, 100), bool)
    m[10, 10] = True
    r = TargetRegion.from_mask_array(m)
    # point (0.135, 0.145) is in pixel (col 13, row 14); centres differ by (3, 4) -> 5
    assert r.distance_px((0.135, 0.145)) == 5.0
    # the adjacent pixel is 1.0 away, the pixel itself 0
    assert r.distance_px((0.115, 0.105)) == 1.0
    assert r.distance_px((0.105, 0.105)) == 0.0
    # outside the image: x * W = -0.5 -> column -1, row 10: 11 columns from column 10
    assert r.distance_px((-0.005, 0.105)) == 11.0
    assert r.area_px == 1.0 and r.bbox_px == [10.0, 10.0, 11.0, 11.0]


def test_mask_distance_equals_scipy_edt():
    from scipy import ndimage

    rng = np.random.default_rng(7)
    m = rng.random((30, 40)) < 0.03
    m[5, 5] = True
    edt = ndimage.distance_transform_edt(~m)
    r = TargetRegion.from_mask_array(m)
    for row in range(30):
        for col in range(40):
            assert r.distance_px(((col + 0.25) / 40, (row + 0.75) / 30)) == pytest.approx(edt[row, col], abs=1e-12)


def test_mask_box_intersection_is_exact_per_pixel_area():
    m = np.zeros((50, 50), bool)
    m[10:20, 10:20] = True  # pixels 10..19: the square [10, 20) x [10, 20), area 100
    r = TargetRegion.from_mask_array(m)
    assert r.area_px == 100.0
    assert r.intersection_area_px([10, 10, 20, 20]) == 100.0
    assert r.intersection_area_px([9.5, 10, 15.5, 20]) == 55.0  # columns 10..15.5: 5.5 * 10
    s = r.box_score([9.5, 10, 20, 20])  # inter 100, pred 10.5 * 10 = 105
    assert s.coverage == 1.0 and s.precision == pytest.approx(100 / 105) and s.box_class == "hit"
    assert r.box_score([10, 10, 15, 20]).box_class == "clipped"  # coverage 50/100


# --------------------------------------------------------------------------- absent


def test_absent_region():
    r = TargetRegion.from_target(Target(kind="absent"), (64, 48))
    assert not r.contains((0.5, 0.5))
    assert r.distance_px((0.5, 0.5)) is None and r.distance_norm((0.5, 0.5)) is None
    assert r.area_px == 0.0 and r.bbox_px is None and r.box_score([0, 0, 1, 1]) is None


def test_bad_targets_raise_clear_errors():
    with pytest.raises(GeometryError, match="mask_path"):
        TargetRegion.from_target(Target(kind="mask"), (10, 10))
    with pytest.raises(GeometryError, match="at least one box"):
        TargetRegion.from_target(Target(kind="boxes", boxes=[]), (10, 10))
    with pytest.raises(GeometryError, match="4 finite"):
        TargetRegion.from_target(Target(kind="boxes", boxes=[[1, 2, 3]]), (10, 10))
    with pytest.raises(GeometryError, match="positive"):
        TargetRegion.from_target(Target(kind="absent"), (0, 10))


# --------------------------------------------------------------------------- mask files


def expected_square(w=20, h=16) -> np.ndarray:
    m = np.zeros((h, w), bool)
    m[4:10, 5:15] = True
    return m


def _write(img: Image.Image, path, **kw):
    img.save(path, **kw)
    return path


def test_mode_1(tmp_path):
    im = Image.fromarray(expected_square())  # bool -> mode "1"
    assert im.mode == "1"
    np.testing.assert_array_equal(load_mask(_write(im, tmp_path / "m.png")), expected_square())


@pytest.mark.parametrize("on", [1, 255, 200])
def test_mode_L_zero_one_and_zero_255(tmp_path, on):
    arr = expected_square().astype(np.uint8) * on
    p = _write(Image.fromarray(arr, mode="L"), tmp_path / "m.png")
    np.testing.assert_array_equal(load_mask(p), expected_square())


def test_mode_L_threshold_is_strictly_above_127(tmp_path):
    arr = np.array([[0, 127, 128, 255]], dtype=np.uint8)
    p = _write(Image.fromarray(arr, mode="L"), tmp_path / "m.png")
    np.testing.assert_array_equal(load_mask(p), [[False, False, True, True]])


def test_mode_P_uses_palette_colours_not_indices(tmp_path):
    exp = expected_square()
    for name, palette, target_index in (("normal", [0, 0, 0, 255, 255, 255], 1), ("inverted", [255, 255, 255, 0, 0, 0], 0)):
        idx = np.where(exp, target_index, 1 - target_index).astype(np.uint8)
        im = Image.fromarray(idx, mode="P")
        im.putpalette(palette)
        p = _write(im, tmp_path / f"{name}.png")
        assert Image.open(p).mode == "P"
        np.testing.assert_array_equal(load_mask(p), exp, err_msg=name)


def test_mode_RGB_red_on_black_and_zero_one(tmp_path):
    exp = expected_square()
    rgb = np.zeros(exp.shape + (3,), np.uint8)
    rgb[exp] = (255, 0, 0)  # luminance 76 would fail a grey threshold; max channel 255 passes
    np.testing.assert_array_equal(load_mask(_write(Image.fromarray(rgb), tmp_path / "red.png")), exp)
    rgb01 = np.repeat(exp[..., None], 3, axis=2).astype(np.uint8)
    np.testing.assert_array_equal(load_mask(_write(Image.fromarray(rgb01), tmp_path / "01.png")), exp)


def test_mode_RGBA_alpha_decides_when_it_varies(tmp_path):
    exp = expected_square()
    rgba = np.zeros(exp.shape + (4,), np.uint8)
    rgba[~exp] = (255, 255, 255, 0)  # white but fully transparent background
    rgba[exp] = (0, 0, 0, 255)  # black, opaque target
    np.testing.assert_array_equal(load_mask(_write(Image.fromarray(rgba), tmp_path / "a.png")), exp)
    opaque = np.zeros(exp.shape + (4,), np.uint8)
    opaque[..., 3] = 255  # constant alpha: colour decides
    opaque[exp, :3] = 255
    np.testing.assert_array_equal(load_mask(_write(Image.fromarray(opaque), tmp_path / "o.png")), exp)


def test_mode_LA_and_I16(tmp_path):
    exp = expected_square()
    la = Image.fromarray(exp.astype(np.uint8) * 255, mode="L").convert("LA")
    assert la.mode == "LA"
    np.testing.assert_array_equal(load_mask(_write(la, tmp_path / "la.png")), exp)
    i16 = Image.fromarray(exp.astype(np.uint16) * 65535)
    p = _write(i16, tmp_path / "i16.png")
    assert Image.open(p).mode.startswith("I")
    np.testing.assert_array_equal(load_mask(p), exp)


def test_jpeg_mask_is_thresholded(tmp_path):
    h, w = 64, 64
    arr = np.zeros((h, w), np.uint8)
    arr[:, 32:] = 100  # grey 100 <= 127: outside
    arr[16:48, 40:56] = 255  # white block: inside
    p = _write(Image.fromarray(arr, mode="L"), tmp_path / "m.jpg", quality=95)
    m = load_mask(p)
    assert m[20:44, 44:52].all()  # block interior, away from compression ringing
    assert not m[:, :28].any() and not m[:12, 36:].any()
    rgb = _write(Image.fromarray(arr, mode="L").convert("RGB"), tmp_path / "c.jpg", quality=95)
    assert load_mask(rgb)[20:44, 44:52].all()


def test_corrupt_missing_and_unsupported_masks_name_the_file(tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"this is not a png")
    with pytest.raises(MaskError, match="bad.png"):
        load_mask(bad)
    noise = np.random.default_rng(0).integers(0, 256, (64, 64), dtype=np.uint8)
    good = _write(Image.fromarray(noise, mode="L"), tmp_path / "good.png")
    data = good.read_bytes()
    cut = tmp_path / "cut.png"
    cut.write_bytes(data[: len(data) // 2])  # a download cut short
    with pytest.raises(MaskError, match="cut.png"):
        load_mask(cut)
    with pytest.raises(MaskError, match="missing.png"):
        load_mask(tmp_path / "missing.png")
    f = _write(Image.fromarray(expected_square().astype(np.float32)), tmp_path / "f.tif")
    with pytest.raises(MaskError, match="unsupported mask image mode 'F'"):
        load_mask(f)


def test_size_mismatch_names_both_sizes_and_rescale(tmp_path):
    small = np.zeros((40, 50), bool)
    small[10:20, 25:50] = True
    p = _write(Image.fromarray(small), tmp_path / "m.png")
    with pytest.raises(MaskSizeError, match=r"50x40.*100x80") as ei:
        load_mask(p, expected_size=(100, 80))
    assert ei.value.mask_size == (50, 40) and ei.value.image_size == (100, 80)
    big = load_mask(p, expected_size=(100, 80), allow_rescale=True)  # same aspect: 50/40 == 100/80
    assert big.shape == (80, 100)
    exp = np.zeros((80, 100), bool)
    exp[20:40, 50:100] = True  # every pixel doubled
    np.testing.assert_array_equal(big, exp)
    with pytest.raises(MaskSizeError, match="aspect"):
        load_mask(p, expected_size=(100, 100), allow_rescale=True)  # 50/40 != 100/100
    with pytest.raises(MaskSizeError, match=r"50x40.*100x80"):
        TargetRegion.from_target(Target(kind="mask", mask_path=str(p)), (100, 80))


def test_decoding_is_cached_by_content_and_arrays_are_read_only(tmp_path):
    im = Image.fromarray(expected_square())
    a = _write(im, tmp_path / "a.png")
    b = tmp_path / "b.png"
    b.write_bytes(a.read_bytes())
    m1 = load_mask(a)
    m2 = load_mask(b)  # same bytes, other path: no second decode
    assert m1 is m2
    info = g.mask_cache_info()
    assert info["misses"] == 1 and info["hits"] == 1
    with pytest.raises(ValueError):
        m1[0, 0] = True
    # a changed file is decoded again
    _write(Image.fromarray(~expected_square()), a)
    assert load_mask(a)[0, 0]
    assert g.mask_cache_info()["misses"] == 2


def test_from_target_resolves_relative_mask_against_base_dir(tmp_path):
    (tmp_path / "masks").mkdir()
    _write(Image.fromarray(expected_square()), tmp_path / "masks" / "m.png")
    r = TargetRegion.from_target(Target(kind="mask", mask_path="masks/m.png"), (20, 16), base_dir=tmp_path)
    assert r.kind == "mask" and r.area_px == 60.0  # 6 rows x 10 columns
    assert r.contains(((5 + 0.5) / 20, (4 + 0.5) / 16)) and not r.contains((0.1, 0.1))
    assert r.bbox_px == [5.0, 4.0, 15.0, 10.0]


def test_image_size_reads_header_and_rejects_garbage(tmp_path):
    p = _write(Image.new("RGB", (33, 21)), tmp_path / "i.png")
    assert g.image_size(p) == (33, 21)
    bad = tmp_path / "x.png"
    bad.write_bytes(b"\x89PNG garbage")
    with pytest.raises(g.ImageError, match="x.png"):
        g.image_size(bad)


def test_cache_is_bounded_by_bytes(tmp_path, monkeypatch):
    from pointfail.geometry import masks

    monkeypatch.setattr(masks, "MASK_CACHE_MAX_BYTES", 2 * 20 * 16)  # room for two 20x16 masks
    for i in range(4):
        m = expected_square()
        m[0, i] = True  # distinct content, distinct sha256
        load_mask(_write(Image.fromarray(m), tmp_path / f"m{i}.png"))
    info = g.mask_cache_info()
    assert info["size"] == 2 and info["bytes"] == 2 * 320 and info["misses"] == 4
