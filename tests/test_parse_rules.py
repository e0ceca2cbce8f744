"""One fixed test per parsing rule of issue 2, with the arithmetic written in the test."""

from __future__ import annotations

import pytest

from pointfail.families import get_family
from pointfail.frames import FrameError, smart_resize

W, H = 1024, 768  # PointerBench frame


def parse(family, text, size=(W, H), model_input_size=None, task="point"):
    return get_family(family).parse(text, size, model_input_size, task=task)


class approx:
    """Nested-list equality within an absolute tolerance (pytest.approx does not nest)."""

    def __init__(self, expected, abs=1e-9):
        self.expected, self.abs = expected, abs

    def __eq__(self, actual):
        if len(actual) != len(self.expected):
            return False
        return all(
            len(a) == len(e) and all(x == pytest.approx(y, abs=self.abs) for x, y in zip(a, e))
            for a, e in zip(actual, self.expected)
        )

    def __repr__(self):
        return f"approx({self.expected!r})"


# ----------------------------------------------------------------------------- frame by declaration


def test_frame_comes_from_the_declaration_not_the_size_of_numbers():
    text = '{"point_2d": [50, 25]}'
    # qwen3_vl declares 0-1000: 50/1000, 25/1000 even though the values look like percent
    assert parse("qwen3_vl", text).points == approx([[0.05, 0.025]])
    # json_pixels declares original pixels: a 0-1000-looking answer is NOT rescaled
    # (PointerBench's coordinate-frame compliance failure): 800/1024, 900/768 -> out of image
    r = parse("json_pixels", '{"point": [800, 900]}')
    assert r.points == approx([[800 / 1024, 900 / 768]])
    assert r.frame == "pixels_original"
    assert "out_of_image" in r.flags


def test_resized_frame_uses_the_processors_size():
    # a 1024x768 image is fed to Qwen2.5-VL as 1036x756 (smart_resize: 756 = 27*28, 1036 = 37*28)
    rh, rw = smart_resize(768, 1024)
    assert (rw, rh) == (1036, 756)
    r = parse("qwen2_5_vl", '{"point_2d": [518, 189]}', model_input_size=(rw, rh))
    # 518 / 1036 = 0.5, 189 / 756 = 0.25
    assert r.points == approx([[0.5, 0.25]])
    assert r.frame == "pixels_resized"


def test_resized_frame_without_model_input_size_raises_before_reading_text():
    for fam in ("qwen2_5_vl", "ui_tars_1_5", "gta1", "opencua"):
        with pytest.raises(FrameError, match="model_input_size"):
            parse(fam, "anything at all")


# ----------------------------------------------------------------------------- reasoning


def test_closed_think_block_only_the_final_answer_counts():
    text = "<think>maybe {\"point_2d\": [10, 20]}? no.</think>\n{\"point_2d\": [500, 250]}"
    r = parse("qwen3_vl", text)
    # only the answer after </think>: 500/1000, 250/1000
    assert r.points == approx([[0.5, 0.25]])
    assert "think_stripped" in r.flags


def test_closing_tag_without_opening_tag_strips_reasoning():
    # Qwen3 thinking templates put <think> in the prompt; the reply starts inside the reasoning
    r = parse("qwen3_vl", 'the mug is left, [1, 2]...</think>[{"point_2d": [100, 900]}]')
    assert r.points == approx([[0.1, 0.9]])


def test_unclosed_think_is_no_prediction_truncated():
    r = parse("qwen3_vl", '<think>The mug is at {"point_2d": [120, 340]} or maybe')
    assert r.points == [] and r.boxes == []
    assert r.reason == "truncated" and r.truncated is True


def test_answer_tag_content_counts():
    r = parse("uground", "<think>left side (10, 10)?</think><answer>(250, 500)</answer> done (1, 1)")
    assert r.points == approx([[0.25, 0.5]])
    assert "answer_tag" in r.flags


# ----------------------------------------------------------------------------- fences and prose


def test_markdown_fence_content_only():
    text = 'Sure! (see 1 below)\n```json\n[{"point_2d": [250, 750], "label": "mug"}]\n```\nAlso [5, 5].'
    r = parse("qwen3_vl", text)
    assert r.points == approx([[0.25, 0.75]])
    assert "fenced" in r.flags
    assert any(i.startswith("outside_fence") for i in r.ignored)


def test_trailing_prose_with_brackets_is_ignored():
    # ShowUI answers [x, y] in 0-1; the second bracket group follows prose and is not a point
    r = parse("showui", "[0.25, 0.75] The coordinates are in the range [0, 1].")
    assert r.points == approx([[0.25, 0.75]])
    assert any(i.startswith("after_prose") for i in r.ignored)


def test_leading_prose_brackets_without_coordinates_are_skipped():
    r = parse("showui", "The [Save] button, item [3], is at [0.1, 0.2]")
    assert r.points == approx([[0.1, 0.2]])


def test_list_of_objects_gives_every_point_in_order():
    text = '[{"point_2d": [100, 200], "label": "a"}, {"point_2d": [300, 400], "label": "b"}]'
    assert parse("qwen3_vl", text).points == approx([[0.1, 0.2], [0.3, 0.4]])


# ----------------------------------------------------------------------------- numbers


def test_fullwidth_digits_and_brackets_via_nfkc():
    # U+FF11.. digits, U+FF3B/U+FF3D brackets, U+FF0C comma -> [123, 456]
    r = parse("qwen3_vl", '{"point_2d": ［１２３，４５６］}')
    assert r.points == approx([[0.123, 0.456]])
    assert "fullwidth" in r.flags


def test_signs_are_read_and_negative_values_kept():
    # +512 / 1024 = 0.5; -10 / 768 = -0.01302 (kept, not clamped to 0)
    r = parse("json_pixels", '{"point": [+512, -10]}')
    assert r.points == approx([[0.5, -10 / 768]])
    assert "out_of_image" in r.flags


def test_unicode_minus_sign():
    r = parse("json_pixels", '{"point": [\u2212256, 384]}')
    assert r.points == approx([[-0.25, 0.5]])
    assert "unicode_minus" in r.flags


def test_decimals():
    # Molmo percent: 61.25 % -> 0.6125, 7.5 % -> 0.075; ".5" and "12." are numbers too
    assert parse("molmo", '<point x="61.25" y="7.5" alt="m">m</point>').points == approx([[0.6125, 0.075]])
    assert parse("json_pixels", '{"point": [.5, 12.]}').points == approx([[0.5 / 1024, 12 / 768]])


def test_exponents():
    # 5e2 = 500 -> 0.5, 2.5E2 = 250 -> 0.25
    assert parse("qwen3_vl", '{"point_2d": [5e2, 2.5E2]}').points == approx([[0.5, 0.25]])


def test_x_equals_y_equals_pairs():
    # json_pixels has no such syntax; the generic reader finds x=512, y=384: 512/1024, 384/768
    r = parse("json_pixels", "I would click at x=512, y=384.")
    assert r.points == approx([[0.5, 0.5]])
    assert "xy_pairs" in r.flags


def test_x_y_json_object_keys():
    # {"x": 256, "y": 192} -> 256/1024 = 0.25, 192/768 = 0.25
    assert parse("json_pixels", '{"x": 256, "y": 192}').points == approx([[0.25, 0.25]])


def test_pixel_units():
    # "512px" -> 512 -> 0.5; "192 px" -> 192 -> 0.25
    r = parse("json_pixels", '{"point": [512px, "192 px"]}')
    assert r.points == approx([[0.5, 0.25]])
    assert "unit_px" in r.flags


# ----------------------------------------------------------------------------- truncation


def test_truncated_json_keeps_complete_points_and_is_flagged():
    text = '```json\n[{"point_2d": [100, 200], "label": "a"}, {"point_2d": [300, 4'
    r = parse("qwen3_vl", text)
    assert r.points == approx([[0.1, 0.2]])
    assert r.truncated is True and "truncated" in r.flags
    assert r.reason is None


def test_truncated_json_with_nothing_complete_is_no_prediction_truncated():
    r = parse("qwen3_vl", '[{"point_2d": [30')
    assert r.points == [] and r.reason == "truncated"


# ----------------------------------------------------------------------------- boxes


def test_inverted_box_corners_are_sorted_and_flagged():
    # [300, 200, 100, 50] -> x0=100, y0=50, x1=300, y1=200 (pixels of 1024x768)
    r = parse("json_pixels", '{"bbox": [300, 200, 100, 50]}', task="box")
    assert r.boxes == approx([[100 / W, 50 / H, 300 / W, 200 / H]])
    assert "inverted_box" in r.flags


def test_zero_area_box_is_a_point():
    r = parse("json_pixels", '{"bbox": [100, 300, 100, 300]}', task="box")
    assert r.boxes == []
    assert r.points == approx([[100 / W, 300 / H]])
    assert "zero_area_box" in r.flags
    # a line (no height) has zero area too: its centre (100+200)/2 = 150
    r = parse("json_pixels", '{"bbox": [100, 300, 200, 300]}', task="box")
    assert r.boxes == [] and r.points == approx([[150 / W, 300 / H]])


def test_point_task_box_answer_gives_its_centre():
    # centre of [100, 200, 300, 400] on the 0-1000 grid = (200, 300) -> (0.2, 0.3)
    r = parse("qwen3_vl", '{"bbox_2d": [100, 200, 300, 400]}', task="point")
    assert r.points == approx([[0.2, 0.3]])
    assert r.boxes == approx([[0.1, 0.2, 0.3, 0.4]])
    assert "box_center" in r.flags


def test_box_task_point_answer_gives_no_box():
    r = parse("qwen3_vl", '{"point_2d": [100, 200]}', task="box")
    assert r.boxes == []
    assert r.points == approx([[0.1, 0.2]])
    assert "box_center" not in r.flags


def test_box_task_box_answer_adds_no_centre_point():
    r = parse("qwen3_vl", '{"bbox_2d": [100, 200, 300, 400]}', task="box")
    assert r.points == [] and r.boxes == approx([[0.1, 0.2, 0.3, 0.4]])


# ----------------------------------------------------------------------------- format errors


@pytest.mark.parametrize("token", ["NaN", "nan", "Infinity", "-inf", "1e999"])
def test_non_finite_numbers_are_format_errors(token):
    r = parse("json_pixels", f'{{"point": [{token}, 3]}}')
    assert r.points == [] and r.boxes == []  # never a point at (0, 0)
    assert r.reason == "non_finite_number"
    assert any(i.startswith("non_finite_number") for i in r.ignored)


@pytest.mark.parametrize("token", ["12.3.4", "--2", "1e", "0x1F", "five"])
def test_malformed_numbers_are_format_errors(token):
    r = parse("json_pixels", f'{{"point": [{token}, 3]}}')
    assert r.points == [] and r.reason == "malformed_number"


def test_one_bad_point_does_not_drop_the_good_ones():
    r = parse("qwen3_vl", '[{"point_2d": [NaN, 1]}, {"point_2d": [500, 500]}]')
    assert r.points == approx([[0.5, 0.5]])
    assert r.reason is None and len(r.ignored) == 1


def test_wrong_number_of_values_is_ignored_with_reason():
    r = parse("json_pixels", '{"point": [1, 2, 3]}')
    assert r.points == [] and r.reason == "no_coordinates"
    assert any(i.startswith("wrong_arity") for i in r.ignored)


# ----------------------------------------------------------------------------- out-of-image, order


def test_out_of_image_values_are_kept_not_clamped():
    # Molmo percent 120 -> 1.2, -5 -> -0.05
    r = parse("molmo", '<point x="120" y="-5" alt="m">m</point>')
    assert r.points == approx([[1.2, -0.05]])
    assert "out_of_image" in r.flags


def test_several_points_all_kept_in_order():
    text = '<points x1="10" y1="20" x2="30" y2="40" x3="50.5" y3="60" alt="m">m</points>'
    assert parse("molmo", text).points == approx([[0.1, 0.2], [0.3, 0.4], [0.505, 0.6]])


def test_points_from_mixed_syntaxes_follow_text_order():
    # Qwen2.5-VL: an XML point tag before a JSON point; model input 1000x1000 pixels
    text = '<points x1="100" y1="100" alt="a">a</points> then {"point_2d": [900, 900]}'
    r = parse("qwen2_5_vl", text, model_input_size=(1000, 1000))
    assert r.points == approx([[0.1, 0.1], [0.9, 0.9]])


# ----------------------------------------------------------------------------- diagnostics


@pytest.mark.parametrize(
    "text, reason",
    [("", "empty"), ("   \n", "empty"), (None, "empty"), ("The mug is blue.", "no_coordinates"),
     # a statement of absence is an explicit decline (families._decline), not an unreadable reply
     ("I cannot see a mug.", "declined")],
)
def test_nothing_parsed_has_a_reason(text, reason):
    r = parse("molmo", text)
    assert r.points == [] and r.reason == reason
    assert r.family == "molmo" and r.frame == "percent_100"


def test_every_result_carries_family_frame_and_flags():
    r = parse("gemini", '```json\n[{"point": [250, 500], "label": "x"}]\n```')
    dumped = r.model_dump()
    assert dumped["family"] == "gemini" and dumped["frame"] == "grid_1000_yx"
    assert dumped["flags"] == ["fenced"] and dumped["ignored"] == [] and dumped["reason"] is None


def test_invalid_task_is_a_caller_error():
    with pytest.raises(ValueError, match="task"):
        parse("molmo", "x", task="segment")
