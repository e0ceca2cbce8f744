"""Coordinate frames and smart_resize: fixed cases with the arithmetic, round-trips (hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pointfail.frames import FRAME_KINDS, SMART_RESIZE_DEFAULTS, Frame, FrameError, smart_resize

PERCENT = Frame("percent_100", "percent", 100)
GRID = Frame("grid_1000", "grid", 1000)
GRID_YX = Frame("grid_1000_yx", "grid", 1000, "yx")
BINS_1024 = Frame("bins_1024", "bins", 1024, "yx")
BINS_1000 = Frame("bins_1000", "bins", 1000)
LOC_1024 = Frame("loc_1024", "bin_index", 1024, "yx")
PATCH = Frame("patch_grid_32", "patch_grid", 32)
UNIT = Frame("unit", "unit", 1)
PIX = Frame("pixels_original", "pixels_original")
RES = Frame("pixels_resized", "pixels_resized")


# ------------------------------------------------------------------------------- fixed conversions


def test_percent_divides_by_100():
    # 61.5 % of the width, 40 % of the height
    assert PERCENT.to_unit(61.5, 40.0) == pytest.approx((0.615, 0.40))


def test_grid_divides_by_1000():
    assert GRID.to_unit(250, 1000) == pytest.approx((0.25, 1.0))


def test_bins_are_read_as_bin_centres():
    # bin 512 of 1024 -> (512 + 0.5) / 1024 = 0.50048828125
    assert BINS_1024.to_unit(512, 0) == pytest.approx((512.5 / 1024, 0.5 / 1024))
    # Florence-2 bin 999 of 1000 -> 0.9995 (never reaches 1.0)
    assert BINS_1000.to_unit(999, 999) == pytest.approx((0.9995, 0.9995))


def test_bin_index_is_big_vision_n_over_n_minus_1():
    # PaliGemma (big_vision): token n -> n / 1023, so 0 and 1023 are the edges; 512 -> 0.50048876
    assert LOC_1024.to_unit(512, 0) == pytest.approx((512 / 1023, 0.0))
    assert LOC_1024.to_unit(1023, 1023) == (1.0, 1.0)
    # writing is round(v * 1023), clamped: 0.5 -> round(511.5) = 512 (ties to even), 1.2 -> 1023
    assert LOC_1024.from_unit(0.5, 1.2) == (512.0, 1023.0)
    assert LOC_1024.from_unit(-0.1, 0.25) == (0.0, 256.0)  # 255.75 -> 256
    assert LOC_1024.quantum() == (1 / 1023, 1 / 1023)


def test_patch_grid_index_to_patch_centre():
    # patch column 3, row 10 of 32 -> ((3 + 0.5) / 32, (10 + 0.5) / 32) = (0.109375, 0.328125)
    assert PATCH.to_unit(3, 10) == pytest.approx((0.109375, 0.328125))


def test_unit_is_identity():
    assert UNIT.to_unit(0.37, 0.81) == (0.37, 0.81)


def test_pixels_original_divide_by_image_size():
    # 512 px of 1024 = 0.5; 192 px of 768 = 0.25
    assert PIX.to_unit(512, 192, (1024, 768)) == pytest.approx((0.5, 0.25))


def test_pixels_resized_divide_by_model_input_size_not_image():
    # image 1024x768 resized to 1036x756 (smart_resize): x 518/1036 = 0.5, y 189/756 = 0.25
    assert RES.to_unit(518, 189, (1024, 768), (1036, 756)) == pytest.approx((0.5, 0.25))


def test_pixels_resized_without_model_input_size_is_a_clear_error():
    with pytest.raises(FrameError, match="model_input_size"):
        RES.to_unit(10, 10, (1024, 768))


def test_pixel_frames_reject_missing_or_bad_sizes():
    with pytest.raises(FrameError, match="image_size"):
        PIX.to_unit(1, 1, None)
    with pytest.raises(FrameError, match="positive"):
        PIX.to_unit(1, 1, (0, 768))
    with pytest.raises(FrameError, match="positive"):
        RES.to_unit(1, 1, (10, 10), (float("nan"), 10))


def test_out_of_range_values_are_converted_linearly_not_clamped():
    assert PERCENT.to_unit(-10, 150) == pytest.approx((-0.1, 1.5))
    assert PIX.to_unit(2048, -5, (1024, 768)) == pytest.approx((2.0, -5 / 768))


def test_as_xy_reorders_yx_frames():
    assert GRID_YX.as_xy(300, 700) == (700, 300)
    assert GRID.as_xy(300, 700) == (300, 700)


def test_bins_from_unit_is_floor_clamped():
    # 0.5 * 1024 = 512 -> bin 512; 1.0 -> 1024 clamped to 1023; -0.2 -> clamped to 0
    assert BINS_1024.from_unit(0.5, 1.0) == (512.0, 1023.0)
    assert BINS_1024.from_unit(-0.2, 0.0) == (0.0, 0.0)


def test_frame_declaration_is_validated():
    with pytest.raises(ValueError, match="unknown frame kind"):
        Frame("x", "furlongs", 1)
    with pytest.raises(ValueError, match="order"):
        Frame("x", "grid", 1000, "zx")
    with pytest.raises(ValueError, match="positive scale"):
        Frame("x", "grid", None)
    assert set(FRAME_KINDS) == {"percent", "grid", "bins", "unit", "pixels_original", "pixels_resized", "patch_grid", "bin_index"}


# ------------------------------------------------------------------------------- round-trips

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
sizes = st.tuples(st.integers(1, 4000), st.integers(1, 4000))


@given(x=unit, y=unit, size=sizes, rsize=sizes)
def test_continuous_frames_round_trip(x, y, size, rsize):
    for fr in (PERCENT, GRID, GRID_YX, UNIT, PIX, RES):
        fx, fy = fr.from_unit(x, y, size, rsize)
        bx, by = fr.to_unit(fx, fy, size, rsize)
        assert bx == pytest.approx(x, abs=1e-12) and by == pytest.approx(y, abs=1e-12)


@given(x=unit, y=unit)
def test_binned_frames_round_trip_within_half_a_bin(x, y):
    for fr in (BINS_1024, BINS_1000, PATCH, LOC_1024):
        bx, by = fr.to_unit(*fr.from_unit(x, y))
        half = 0.5 * fr.quantum()[0]
        assert abs(bx - x) <= half + 1e-12 and abs(by - y) <= half + 1e-12


@given(i=st.integers(0, 1023))
def test_bin_index_round_trips_exactly(i):
    assert BINS_1024.from_unit(*BINS_1024.to_unit(i, i)) == (float(i), float(i))
    assert LOC_1024.from_unit(*LOC_1024.to_unit(i, i)) == (float(i), float(i))


# ------------------------------------------------------------------------------- smart_resize


def test_smart_resize_rounds_each_side_to_the_factor():
    # 768 / 28 = 27.43 -> 27 * 28 = 756; 1024 / 28 = 36.57 -> 37 * 28 = 1036;
    # 756 * 1036 = 783216 lies in [3136, 1003520] -> kept
    assert smart_resize(768, 1024) == (756, 1036)


def test_smart_resize_round_ties_to_even():
    # 42 / 28 = 1.5 -> round() gives 2 -> 56; 70 / 28 = 2.5 -> round() gives 2 -> 56 (banker's rounding)
    # 56 * 56 = 3136 is not < min_pixels 3136 -> kept
    assert smart_resize(42, 70) == (56, 56)


def test_smart_resize_shrinks_above_max_pixels_with_floor():
    # rounded 1988 x 2996 = 5956048 > 1003520 -> beta = sqrt(2000 * 3000 / 1003520) = 2.44519
    # 2000 / 2.44519 / 28 = 29.21 -> floor 29 -> 812; 3000 / 2.44519 / 28 = 43.82 -> 43 -> 1204
    beta = math.sqrt(2000 * 3000 / 1003520)
    assert math.floor(2000 / beta / 28) == 29 and math.floor(3000 / beta / 28) == 43
    assert smart_resize(2000, 3000) == (812, 1204)
    assert 812 * 1204 <= 1003520


def test_smart_resize_grows_below_min_pixels_with_ceil():
    # rounded 28 x 28 = 784 < 3136 -> beta = sqrt(3136 / (20 * 30)) = 2.28619
    # 20 * 2.28619 / 28 = 1.63 -> ceil 2 -> 56; 30 * 2.28619 / 28 = 2.45 -> ceil 3 -> 84
    assert smart_resize(20, 30) == (56, 84)
    assert 56 * 84 >= 3136


def test_smart_resize_qwen2_5_vl_checkpoint_settings():
    cfg = SMART_RESIZE_DEFAULTS["qwen2_5_vl"]
    # 1080 / 28 = 38.57 -> 39 -> 1092; 1920 / 28 = 68.57 -> 69 -> 1932; 1092*1932 = 2109744 < 12845056
    assert smart_resize(1080, 1920, **cfg) == (1092, 1932)
    # the class default max (1003520) shrinks the same image: beta = sqrt(1080*1920/1003520) = 1.4375
    # 1080 / 1.4375 / 28 = 26.8 -> 26 -> 728; 1920 / 1.4375 / 28 = 47.7 -> 47 -> 1316
    assert smart_resize(1080, 1920) == (728, 1316)


def test_smart_resize_qwen3_vl_factor_32():
    cfg = SMART_RESIZE_DEFAULTS["qwen3_vl"]
    assert cfg["factor"] == 32  # patch 16 x merge 2
    # 768 / 32 = 24 -> 768; 1024 / 32 = 32 -> 1024; 786432 in [65536, 16777216]
    assert smart_resize(768, 1024, **cfg) == (768, 1024)
    # 500 / 32 = 15.6 -> 16 -> 512; 300 / 32 = 9.4 -> 9 -> 288; 512*288 = 147456 >= 65536
    assert smart_resize(500, 300, **cfg) == (512, 288)


def test_smart_resize_rejects_extreme_aspect_ratio():
    # 2001 / 10 = 200.1 > 200
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 2001)
    # exactly 200 is allowed: 10 -> round(0.36) = 0, 2000 -> 71*28 = 1988; 0 < min -> ceil branch
    assert smart_resize(10, 2000) == (28, 812)


def test_smart_resize_rejects_tiny_or_invalid_inputs():
    with pytest.raises(ValueError, match="positive integer"):
        smart_resize(0, 100)
    with pytest.raises(ValueError, match="positive integer"):
        smart_resize(100, 12.5)  # type: ignore[arg-type]
    # transformers 4.4x raised for a side below the factor; reproduced on request
    with pytest.raises(ValueError, match="must be larger than factor"):
        smart_resize(20, 100, min_side_check=True)


@given(h=st.integers(1, 6000), w=st.integers(1, 6000))
def test_smart_resize_invariants(h, w):
    if max(h, w) / min(h, w) > 200:
        with pytest.raises(ValueError):
            smart_resize(h, w)
        return
    rh, rw = smart_resize(h, w)
    assert rh % 28 == 0 and rw % 28 == 0 and rh >= 28 and rw >= 28
    assert rh * rw >= 56 * 56 or rh * rw > 14 * 14 * 4 * 1280


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(h=st.integers(1, 5000), w=st.integers(1, 5000), cfg=st.sampled_from(sorted(SMART_RESIZE_DEFAULTS)))
def test_smart_resize_matches_transformers(h, w, cfg):
    """Cross-check against the installed transformers implementation (the processor's own rule)."""
    mod = pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")
    params = SMART_RESIZE_DEFAULTS[cfg]
    try:
        expected = mod.smart_resize(h, w, **params)
    except ValueError:
        with pytest.raises(ValueError):
            smart_resize(h, w, **params)
        return
    assert smart_resize(h, w, **params) == expected
