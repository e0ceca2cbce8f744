"""Each family's parser against the model authors' own parsing code, where it is an installable package.

Replies are generated in each family's syntax (hypothesis) on 16 image sizes, from 640x480 to
6016x3384, portrait phones included; the expected pixel coordinates come from running the official
reference on the same reply, and pointfail's parse must agree within 1 px:

* Kosmos-2: transformers' ``clean_text_and_extract_entities_with_bboxes`` / ``patch_index_to_coordinate``
  (the authors' ``unilm/kosmos-2`` decoding, as shipped in transformers).
* Florence-2: transformers' ``Florence2PostProcessor`` (phrase grounding, ``dequantize``).
* UI-TARS (v1, 0-1000 grid) and UI-TARS-1.5 (resized pixels): ByteDance's ``ui-tars`` package,
  ``ui_tars.action_parser.parse_action_to_structure_output`` (which also recomputes the resize).
* Qwen2.5-VL and GTA1 (resized pixels): ``qwen-vl-utils``' ``smart_resize`` with the checkpoint's
  setting (Qwen2.5-VL's defaults; GTA1's model card ``max_pixels = 4096 * 2160``), converting back as
  the model cards do (``x / Wr * W``).

Families without an installable reference (PaliGemma's big_vision, Molmo's evaluator, OS-Atlas,
GTA1's card regex) have fixed cases with the arithmetic in ``test_families.py``.
"""

from __future__ import annotations

import ast
import types

import pytest
import qwen_vl_utils
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.models.florence2.processing_florence2 import Florence2PostProcessor
from transformers.models.kosmos2.processing_kosmos2 import (
    clean_text_and_extract_entities_with_bboxes,
    patch_index_to_coordinate,
)
from ui_tars.action_parser import parse_action_to_structure_output

from pointfail.families import get_family

SIZES = [
    (640, 480), (800, 600), (1024, 768), (1280, 720), (1366, 768), (1440, 900), (1920, 1080),
    (2560, 1440), (2880, 1800), (3840, 2160), (5120, 2880), (6016, 3384),
    # portrait phones
    (750, 1334), (1080, 1920), (1170, 2532), (1290, 2796),
]
PX = 1.0  # agreement tolerance in pixels
REF = settings(max_examples=50, deadline=None)
sizes = st.sampled_from(SIZES)


def close_px(ours_norm, ref_px, size):
    """Compare normalized values (x, y, ...) with the reference's pixels, within PX."""
    w, h = size
    ours_px = [v * (w if i % 2 == 0 else h) for i, v in enumerate(ours_norm)]
    return all(abs(a - b) <= PX for a, b in zip(ours_px, ref_px)), ours_px


def test_sixteen_sizes_from_vga_to_6k_with_portrait_phones():
    assert len(set(SIZES)) == 16
    assert min(SIZES) == (640, 480) and (6016, 3384) in SIZES
    assert sum(h > w for w, h in SIZES) == 4


# ------------------------------------------------------------------------------------------ Kosmos-2


@REF
@given(size=sizes, a=st.integers(0, 1023), b=st.integers(0, 1023))
def test_kosmos2_matches_transformers(size, a, b):
    # the model writes the upper-left patch first: keep generated pairs in that order
    (ca, ra), (cb, rb) = (a % 32, a // 32), (b % 32, b // 32)
    ul, lr = min(ra, rb) * 32 + min(ca, cb), max(ra, rb) * 32 + max(ca, cb)
    text = f"<grounding><phrase> the icon</phrase><object><patch_index_{ul:04d}><patch_index_{lr:04d}></object>"
    _, entities = clean_text_and_extract_entities_with_bboxes(text)
    (ref_box,) = entities[0][2]
    assert ref_box == patch_index_to_coordinate(ul, lr, 32)
    w, h = size
    ref_px = [ref_box[0] * w, ref_box[1] * h, ref_box[2] * w, ref_box[3] * h]
    r = get_family("kosmos2").parse(text, size, task="box")
    assert len(r.boxes) == 1, (text, r)
    ok, ours = close_px(r.boxes[0], ref_px, size)
    assert ok, (text, ours, ref_px)


def test_kosmos2_shared_row_case_against_transformers():
    """The disagreement the cross-check found, run through the reference: patches 33 and 36."""
    ref = patch_index_to_coordinate(33, 36, 32)
    r = get_family("kosmos2").parse("<object><patch_index_0033><patch_index_0036></object>", (640, 480), task="box")
    assert r.boxes == [list(ref)] == [[1 / 32, 1 / 32, 5 / 32, 2 / 32]]


# ---------------------------------------------------------------------------------------- Florence-2


def florence2_reference(text, size):
    # the post-processor reads only `all_special_tokens` from its tokenizer when parsing text
    post = Florence2PostProcessor({"phrase_grounding": {}}, types.SimpleNamespace(all_special_tokens=[]))
    return post(text=text, image_size=size, parse_tasks=["phrase_grounding"])["phrase_grounding"]


@REF
@given(size=sizes, bins=st.lists(st.integers(0, 999), min_size=4, max_size=4))
def test_florence2_matches_transformers(size, bins):
    x0, x1 = sorted(bins[::2])
    y0, y1 = sorted(bins[1::2])
    if x0 == x1 or y0 == y1:
        x1, y1 = min(x0 + 1, 999), min(y0 + 1, 999)
        x0, y0 = x1 - 1, y1 - 1
    text = f"the icon<loc_{x0}><loc_{y0}><loc_{x1}><loc_{y1}>"
    (inst,) = florence2_reference(text, size)
    (ref_px,) = inst["bbox"]  # dequantized, truncated to int pixels by the reference
    r = get_family("florence2").parse(text, size, task="box")
    ok, ours = close_px(r.boxes[0], ref_px, size)
    assert ok, (text, ours, ref_px)


# ------------------------------------------------------------------------------------ UI-TARS (both)


def uitars_reference(text, size, model_type):
    w, h = size
    (action,) = parse_action_to_structure_output(
        text, factor=1000, origin_resized_height=h, origin_resized_width=w, model_type=model_type
    )
    x0, y0, x1, y1 = ast.literal_eval(action["action_inputs"]["start_box"])
    return [(x0 + x1) / 2 * w, (y0 + y1) / 2 * h]


ACTIONS = [
    "Thought: the target is there.\nAction: click(start_box='({x},{y})')",
    "Action: click(point='<point>{x} {y}</point>')",
    "Action: left_double(start_box='({x},{y})')",
]


@REF
@given(size=sizes, x=st.integers(0, 1000), y=st.integers(0, 1000), form=st.sampled_from(ACTIONS))
def test_ui_tars_v1_matches_the_ui_tars_package(size, x, y, form):
    text = form.format(x=x, y=y)
    ref = uitars_reference(text, size, "qwen2vl")
    r = get_family("ui_tars").parse(text, size)
    ok, ours = close_px(r.points[0], ref, size)
    assert ok, (text, ours, ref)


@REF
@given(size=sizes, fx=st.floats(0, 1), fy=st.floats(0, 1), form=st.sampled_from(ACTIONS))
def test_ui_tars_1_5_matches_the_ui_tars_package(size, fx, fy, form):
    fam = get_family("ui_tars_1_5")
    mis = fam.expected_model_input_size(size)
    x, y = round(fx * mis[0]), round(fy * mis[1])
    text = form.format(x=x, y=y)
    ref = uitars_reference(text, size, "qwen25vl")
    r = fam.parse(text, size, mis)
    ok, ours = close_px(r.points[0], ref, size)
    assert ok, (text, mis, ours, ref)


@REF
@given(size=sizes, x=st.integers(0, 1000), y=st.integers(0, 1000))
def test_ui_tars_bare_tuple_reads_as_the_packages_action(size, x, y):
    """The bare ``(x,y)`` answer to the grounding prompt reads as the same click would in the
    package."""
    ref = uitars_reference(f"Action: click(start_box='({x},{y})')", size, "qwen2vl")
    r = get_family("ui_tars").parse(f"({x},{y})", size)
    ok, ours = close_px(r.points[0], ref, size)
    assert ok and "bare_tuple" in r.flags


# ------------------------------------------------------------------------ Qwen2.5-VL and GTA1 (resized)


@REF
@given(size=sizes, fx=st.floats(0, 1), fy=st.floats(0, 1))
def test_qwen2_5_vl_matches_qwen_vl_utils(size, fx, fy):
    w, h = size
    rh, rw = qwen_vl_utils.smart_resize(h, w, factor=28)  # the package's defaults: Qwen2.5-VL's
    fam = get_family("qwen2_5_vl")
    assert fam.expected_model_input_size(size) == (rw, rh)
    x, y = round(fx * rw), round(fy * rh)
    text = f'```json\n[\n\t{{"point_2d": [{x}, {y}], "label": "icon"}}\n]\n```'
    ref = [x / rw * w, y / rh * h]
    r = fam.parse(text, size, (rw, rh))
    ok, ours = close_px(r.points[0], ref, size)
    assert ok, (text, ours, ref)


@REF
@given(size=sizes, fx=st.floats(0, 1), fy=st.floats(0, 1))
def test_gta1_matches_its_model_card_resize(size, fx, fy):
    w, h = size
    # the GTA1 card: processor min_pixels=3136, max_pixels=4096*2160; smart_resize with them
    rh, rw = qwen_vl_utils.smart_resize(h, w, factor=28, min_pixels=3136, max_pixels=4096 * 2160)
    fam = get_family("gta1")
    assert fam.expected_model_input_size(size) == (rw, rh)
    x, y = round(fx * rw), round(fy * rh)
    ref = [x / rw * w, y / rh * h]
    r = fam.parse(f"({x},{y})", size, (rw, rh))
    ok, ours = close_px(r.points[0], ref, size)
    assert ok, (x, y, ours, ref)


@pytest.mark.parametrize("size", SIZES)
def test_resize_settings_agree_with_the_references_on_every_size(size):
    w, h = size
    assert get_family("qwen2_5_vl").expected_model_input_size(size)[::-1] == qwen_vl_utils.smart_resize(h, w, 28)
    assert get_family("gta1").expected_model_input_size(size)[::-1] == qwen_vl_utils.smart_resize(
        h, w, 28, min_pixels=3136, max_pixels=4096 * 2160)
    from ui_tars.action_parser import MAX_PIXELS, MIN_PIXELS
    from ui_tars.action_parser import smart_resize as uitars_resize

    assert get_family("ui_tars_1_5").expected_model_input_size(size)[::-1] == uitars_resize(
        h, w, 28, MIN_PIXELS, MAX_PIXELS)
