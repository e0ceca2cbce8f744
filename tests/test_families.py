"""Family registry, prompts, each family's own syntax (fixed cases with arithmetic) and hypothesis
round-trips for every family: a point/box written in the family's syntax at its real precision parses
back to the same normalized values within its quantization."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pointfail.families import Family, get_family, list_families
from pointfail.frames import FRAME_KINDS

REQUIRED = {
    "molmo", "molmo2", "qwen2_5_vl", "qwen3_vl", "internvl3", "paligemma", "florence2", "kosmos2",
    "gemini", "json_pixels", "json_unit", "ui_tars", "ui_tars_1_5", "os_atlas", "showui", "uground", "gta1",
    "opencua", "center", "ocr",
}
"""The families the project must cover (issue 2 and later); the registry may hold more."""
FAMILIES = sorted(f.name for f in list_families())
"""Every registered family: the parametrized tests below run on each, so a new family file is tested
without editing this file."""


# ----------------------------------------------------------------------------- registry


def test_every_required_family_is_registered_sorted():
    fams = list_families()
    names = [f.name for f in fams]
    assert names == sorted(names)
    assert REQUIRED <= set(names)
    import pkgutil

    import pointfail.families as pkg

    files = {m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")}
    assert set(names) == files, "every family file registers exactly one family named like the file"


def test_get_family_unknown_lists_known_names():
    with pytest.raises(KeyError) as e:
        get_family("gpt-9")
    msg = str(e.value)
    assert "gpt-9" in msg and "molmo" in msg and "qwen2_5_vl" in msg


@pytest.mark.parametrize("name", FAMILIES)
def test_family_declarations(name):
    import importlib

    fam = get_family(name)
    assert isinstance(fam, Family) and fam.name == name
    assert fam.frame.kind in FRAME_KINDS and fam.frame.name
    if fam.backend is not None:
        assert fam.backend == f"pointfail.running.backends.{name}"
        assert callable(importlib.import_module(fam.backend).load)
        if fam.needs_weights:
            assert fam.checkpoints, "weight-backed families name their checkpoints"
    doc = sys.modules[type(fam).__module__].__doc__
    assert doc and len(doc) > 100, "each family file documents its convention and source"


def test_declared_frames():
    kinds = {f.name: (f.frame.kind, f.frame.scale, f.frame.order) for f in list_families()}
    assert kinds["molmo"] == ("percent", 100, "xy")
    assert kinds["molmo2"] == ("grid", 1000, "xy")
    assert kinds["qwen2_5_vl"][0] == "pixels_resized"
    assert kinds["qwen3_vl"] == ("grid", 1000, "xy")
    assert kinds["internvl3"] == ("grid", 1000, "xy")
    assert kinds["paligemma"] == ("bin_index", 1024, "yx")
    assert kinds["florence2"] == ("bins", 1000, "xy")
    assert kinds["kosmos2"] == ("patch_grid", 32, "xy")
    assert kinds["gemini"] == ("grid", 1000, "yx")
    assert kinds["json_pixels"][0] == "pixels_original"
    assert kinds["ui_tars"] == ("grid", 1000, "xy")
    assert kinds["ui_tars_1_5"][0] == "pixels_resized"
    assert kinds["os_atlas"] == ("grid", 1000, "xy")
    assert kinds["showui"] == ("unit", 1, "xy")
    assert kinds["uground"] == ("grid", 1000, "xy")
    assert kinds["gta1"][0] == "pixels_resized"
    assert kinds["opencua"][0] == "pixels_resized"


def test_import_is_light():
    code = (
        "import sys, pointfail.families as f, pointfail.frames; f.list_families();"
        "bad = [m for m in ('torch', 'transformers', 'docker', 'ollama') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_families_command_lists_names_and_frames(capsys):
    from pointfail.cli import main

    assert main(["families", "--format", "plain"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(ln) <= 160 for ln in lines), max(lines, key=len)  # a terminal's width, one line per family
    for fam in list_families():
        line = next(ln for ln in lines if ln.split()[0] == fam.name)
        assert f"{fam.frame.name}: " in line and f"  {', '.join(fam.frame.order)}  " in line
        assert (fam.checkpoints[0][:10] if fam.checkpoints else " -") in line
    assert lines[-1] == "in full (prompt, system prompt, every checkpoint): pointfail families NAME"
    # in full: every checkpoint, the prompt as sent
    names = [f.name for f in list_families() if len(f.checkpoints) > 1]
    assert main(["families", *names]) == 0
    full = capsys.readouterr().out
    for name in names:
        fam = get_family(name)
        assert f"  checkpoints: {', '.join(fam.checkpoints)}" in full
        assert fam.prompt("the Save button", "point").splitlines()[0] in full


# ----------------------------------------------------------------------------- prompts


def test_prompts_native_phrasing():
    assert get_family("molmo").prompt("the mug on the left") == "Point to the mug on the left"
    # a leading pointing verb is replaced by Molmo's own, not wrapped a second time
    assert get_family("molmo").prompt("Click the Save button.") == "Point to the Save button"
    assert get_family("molmo").prompt("Target cell E15.") == "Point to target cell E15"  # no pointing verb
    assert get_family("molmo").prompt("Select cell E15") == "Point to cell E15"  # cell names keep their case
    q = get_family("qwen2_5_vl")
    assert "output its coordinates in JSON format" in q.prompt("the mug", "point") and "point_2d" in q.prompt("the mug")
    assert "bbox_2d" in q.prompt("the mug", "box")
    assert get_family("internvl3").prompt("the mug", "box").endswith("<ref>the mug</ref>")
    assert get_family("paligemma").prompt("mug") == "detect mug"
    assert get_family("florence2").prompt("mug") == "<CAPTION_TO_PHRASE_GROUNDING>mug"
    assert get_family("kosmos2").prompt("a mug").startswith("<grounding><phrase> a mug</phrase>")
    assert "[y, x]" in get_family("gemini").prompt("the mug")
    gta = get_family("gta1").prompt("Save button", model_input_size=(1036, 756))
    assert "height 756 and width 1036" in gta


def test_json_pixels_prompt_is_the_pointerbench_system_prompt(pointerbench_dir):
    from pointfail.families.json_pixels import SYSTEM_PROMPT

    seed = (pointerbench_dir.parent.parent / "seeds" / "pointerbench-paper.txt").read_text(encoding="utf-8")
    assert SYSTEM_PROMPT in seed  # verbatim
    for name in ("json_pixels", "center", "ocr"):
        fam = get_family(name)
        assert fam.system_prompt == SYSTEM_PROMPT
        assert fam.prompt("Click E15", "point").startswith(SYSTEM_PROMPT)
        assert fam.prompt("Click E15", "point").endswith("Point task: Click E15")
        assert fam.prompt("Select the word", "box").endswith("Bounding-box task: Select the word")


@pytest.mark.parametrize("name", FAMILIES)
def test_prompt_contains_core_for_both_tasks(name):
    fam = get_family(name)
    for task in ("point", "box"):
        assert "blue teapot" in fam.prompt("the blue teapot", task)
    with pytest.raises(ValueError):
        fam.prompt("x", "segment")


# ----------------------------------------------------------------------------- each family's syntax


def pts(name, text, size=(1000, 500), mis=None, task="point"):
    r = get_family(name).parse(text, size, mis, task=task)
    return [[round(v, 9) for v in p] for p in r.points], [[round(v, 9) for v in b] for b in r.boxes], r


def test_molmo_click_syntax():
    # Click(25.5, 50) in percent -> (0.255, 0.5)
    assert pts("molmo", "Click(25.5, 50)")[0] == [[0.255, 0.5]]


def test_molmo_bare_percent_tuple():
    """The issue-16 case: Molmo's own evaluator reads a bare percent tuple; (18.6, 30.2) on 1000x500
    -> (0.186, 0.302), i.e. (186, 151) px."""
    p, _, r = pts("molmo", "(18.6, 30.2)")
    assert p == [[0.186, 0.302]] and "bare_tuple" in r.flags
    # a point tag wins over a tuple in prose
    p, _, r = pts("molmo", '<point x="10.0" y="20.0" alt="a">a</point> (18.6, 30.2)')
    assert p == [[0.1, 0.2]] and "bare_tuple" not in r.flags


def test_molmo2_coords_with_image_index_and_semicolons():
    # image 1: points (500, 250) and (100, 900); image 2: point (10, 20); 0-1000 grid
    text = '<points coords="1 1 500 250 2 100 900;2 1 010 020">mugs</points>'
    assert pts("molmo2", text)[0] == [[0.5, 0.25], [0.1, 0.9], [0.01, 0.02]]


def test_molmo2_single_image_without_image_index():
    # "1 125 875": 3 tokens, id 1 -> point (125, 875) / 1000
    p, _, r = pts("molmo2", '<points coords="1 125 875"/>')
    assert p == [[0.125, 0.875]] and "molmo2_no_image_index" in r.flags
    # "1 1 125 875": image 1, id 1 -> the same point
    assert pts("molmo2", '<point coords="1 1 125 875">x</point>')[0] == [[0.125, 0.875]]


def test_molmo2_truncated_triple_is_ignored():
    p, _, r = pts("molmo2", '<points coords="1 1 500 250 2 100">m</points>')
    assert p == [[0.5, 0.25]] and any(i.startswith("wrong_arity") for i in r.ignored)


def test_qwen_bare_list_fallback_in_declared_frame():
    # Qwen3-VL: bare [250, 500] on the 0-1000 grid -> (0.25, 0.5), flagged
    p, _, r = pts("qwen3_vl", "The mug is at [250, 500].")
    assert p == [[0.25, 0.5]] and "bare_list" in r.flags
    # Qwen2.5-VL: bare [518, 378] in a 1036x756 model input -> (0.5, 0.5)
    assert pts("qwen2_5_vl", "[518, 378]", mis=(1036, 756))[0] == [[0.5, 0.5]]
    # keyed JSON wins over a bare list in prose
    assert pts("qwen3_vl", 'range [0, 1000]: {"point_2d": [100, 100]}')[0] == [[0.1, 0.1]]


def test_internvl3_box_and_point_syntax():
    # box [[100, 200, 300, 600]] -> centre (200, 400) / 1000
    p, b, r = pts("internvl3", "<ref>the mug</ref><box>[[100, 200, 300, 600]]</box>")
    assert b == [[0.1, 0.2, 0.3, 0.6]] and p == [[0.2, 0.4]] and "box_center" in r.flags
    assert pts("internvl3", "<ref>the mug</ref>[[250, 750]]")[0] == [[0.25, 0.75]]
    # two boxes in one tag
    _, b, _ = pts("internvl3", "<box>[[0, 0, 100, 100], [500, 500, 600, 700]]</box>", task="box")
    assert b == [[0.0, 0.0, 0.1, 0.1], [0.5, 0.5, 0.6, 0.7]]


def test_paligemma_loc_tokens_y_first_big_vision_rule():
    # big_vision reads <locN> as N / 1023: <loc0256><loc0768> = y 256/1023, x 768/1023
    assert pts("paligemma", "<loc0256><loc0768> mug")[0] == [[round(768 / 1023, 9), round(256 / 1023, 9)]]
    # box ymin=0, xmin=512, ymax=1023, xmax=1023: <loc0000> and <loc1023> are the image edges
    _, b, _ = pts("paligemma", "<loc0000><loc0512><loc1023><loc1023> mug ; <loc0001>", task="box")
    assert b == [[round(512 / 1023, 9), 0.0, 1.0, 1.0]]


def test_paligemma_disagreement_fixed_on_a_4k_side():
    """The issue-16 case: on a 3840-px side the bin-centre reading ((n + 0.5) / 1024) was up to
    0.5 / 1024 * 3840 = 1.875 px off Google's n / 1023. <loc0512><loc0256> on 3840x2160:
    x = 256 / 1023 * 3840 = 960.938 px, y = 512 / 1023 * 2160 = 1081.056 px."""
    r = get_family("paligemma").parse("<loc0512><loc0256> icon", (3840, 2160))
    x, y = r.points[0]
    assert x * 3840 == pytest.approx(960.9384164, abs=1e-6)
    assert y * 2160 == pytest.approx(1081.0557185, abs=1e-6)
    # the edge tokens are the edges, not half a bin inside them (the old reading: 1.875 px in)
    r = get_family("paligemma").parse("<loc1023><loc0000>", (3840, 2160))
    assert r.points == [[0.0, 1.0]]
    # writing follows round(v * 1023): x = 0.25 -> round(255.75) = 256, y = 0.5 -> round(511.5) = 512
    assert get_family("paligemma").format_point(0.25, 0.5, (3840, 2160)).startswith("<loc0512><loc0256>")


def test_florence2_loc_tokens_x_first():
    # mug<loc_100><loc_200><loc_300><loc_400>: x0 = 100.5/1000 ... centre (0.2005, 0.3005)
    p, b, _ = pts("florence2", "mug<loc_100><loc_200><loc_300><loc_400>")
    assert b == [[0.1005, 0.2005, 0.3005, 0.4005]] and p == [[0.2005, 0.3005]]


def test_kosmos2_patch_pairs():
    # patch 33 = (col 1, row 1), patch 99 = (col 3, row 3): box between centres 1.5/32 .. 3.5/32
    _, b, _ = pts("kosmos2", "<phrase> mug</phrase><object><patch_index_0033><patch_index_0099></object>", task="box")
    assert b == [[1.5 / 32, 1.5 / 32, 3.5 / 32, 3.5 / 32]]
    # same patch twice: the whole cell of patch 34 (col 2, row 1): [2/32, 1/32, 3/32, 2/32], centre (2.5/32, 1.5/32)
    p, b, _ = pts("kosmos2", "<object><patch_index_0034><patch_index_0034></object>")
    assert b == [[2 / 32, 1 / 32, 3 / 32, 2 / 32]] and p == [[2.5 / 32, 1.5 / 32]]
    # several objects
    text = "<object><patch_index_0000><patch_index_0033></delimiter_of_multi_objects/><patch_index_0064><patch_index_0097></object>"
    assert len(pts("kosmos2", text, task="box")[1]) == 2


def test_kosmos2_corners_sharing_a_row_or_column_span_whole_cells():
    """The issue-16 case: transformers' patch_index_to_coordinate spans whole cells when the corner
    patches share a row or a column (pointfail made a zero-height box, then a point).
    Patches 33 and 36: row 1, columns 1 and 4 -> [1/32, 1/32, 5/32, 2/32]; on 640x480 that is
    [20, 15, 100, 30] px, a real box (80 x 15 px), centre (60, 22.5) px."""
    p, b, r = pts("kosmos2", "<object><patch_index_0033><patch_index_0036></object>", size=(640, 480), task="box")
    assert b == [[1 / 32, 1 / 32, 5 / 32, 2 / 32]] and p == []
    assert "zero_area_box" not in r.flags
    x0, y0, x1, y1 = b[0]
    assert [x0 * 640, y0 * 480, x1 * 640, y1 * 480] == [20.0, 15.0, 100.0, 30.0]
    # same column: patches 34 (row 1) and 98 (row 3), column 2 -> [2/32, 1/32, 3/32, 4/32]
    _, b, _ = pts("kosmos2", "<object><patch_index_0034><patch_index_0098></object>", task="box")
    assert b == [[2 / 32, 1 / 32, 3 / 32, 4 / 32]]
    # for a point task the point is the centre of the whole-cell box: (3/32, 1.5/32)
    assert pts("kosmos2", "<object><patch_index_0033><patch_index_0036></object>")[0] == [[3 / 32, 1.5 / 32]]


def test_gemini_points_and_boxes_are_y_first():
    # point [y=250, x=750] -> (0.75, 0.25)
    assert pts("gemini", '[{"point": [250, 750], "label": "a"}]')[0] == [[0.75, 0.25]]
    # box_2d [ymin=100, xmin=200, ymax=300, xmax=400] -> [0.2, 0.1, 0.4, 0.3]
    assert pts("gemini", '[{"box_2d": [100, 200, 300, 400], "label": "a"}]', task="box")[1] == [[0.2, 0.1, 0.4, 0.3]]
    # bare [y, x]
    assert pts("gemini", "[600, 300]")[0] == [[0.3, 0.6]]


def test_ui_tars_start_box_variants():
    assert pts("ui_tars", "Thought: it is the save icon (top).\nAction: click(start_box='(235,512)')")[0] == [[0.235, 0.512]]
    assert pts("ui_tars", "click(start_box='<|box_start|>(100,200)<|box_end|>')")[0] == [[0.1, 0.2]]
    # four numbers -> box, centre (200, 300)
    assert pts("ui_tars", "click(start_box='(100,200,300,400)')")[0] == [[0.2, 0.3]]
    # drag: end_box is not a target
    p, _, r = pts("ui_tars", "drag(start_box='(100,100)', end_box='(900,900)')")
    assert p == [[0.1, 0.1]] and any(i.startswith("end_box") for i in r.ignored)
    assert pts("ui_tars", "click(point='<point>400 600</point>')")[0] == [[0.4, 0.6]]


def test_ui_tars_bare_tuple_answer_to_the_grounding_prompt():
    """The issue-16 case: the short grounding prompt is answered with a bare (x,y), which was
    no_prediction. UI-TARS v1, 0-1000 grid: (235,512) on 1000x500 -> (0.235, 0.512)."""
    p, _, r = pts("ui_tars", "(235,512)")
    assert p == [[0.235, 0.512]] and "bare_tuple" in r.flags and r.reason is None
    # UI-TARS-1.5, resized pixels: (518,378) in a 1036x756 input -> (0.5, 0.5)
    assert pts("ui_tars_1_5", "(518,378)", size=(1024, 768), mis=(1036, 756))[0] == [[0.5, 0.5]]
    # an action, when present, wins; the bare tuple is only a fallback
    p, _, r = pts("ui_tars", "(1,2) Action: click(start_box='(100,200)')")
    assert p == [[0.1, 0.2]] and "bare_tuple" not in r.flags


def test_ui_tars_1_5_is_resized_pixels():
    # (518, 378) in a 1036x756 model input -> (0.5, 0.5)
    p, _, r = pts("ui_tars_1_5", "click(start_box='(518,378)')", size=(1024, 768), mis=(1036, 756))
    assert p == [[0.5, 0.5]] and r.frame == "pixels_resized"


def test_os_atlas_base_4b_internvl2_lists():
    """The issue-16 case: OS-Atlas-Base-4B (InternVL2) answers [[x,y]] on the 0-1000 grid, which was
    no_prediction. [[250,600]] on 1000x500 -> (0.25, 0.6), i.e. (250, 300) px."""
    p, _, r = pts("os_atlas", "[[250,600]]")
    assert p == [[0.25, 0.6]] and "bare_list" in r.flags
    p, b, _ = pts("os_atlas", "<ref>Save</ref><box>[[100,200,300,400]]</box>")
    assert b == [[0.1, 0.2, 0.3, 0.4]] and p == [[0.2, 0.3]]


def test_os_atlas_box_tags():
    text = "<|object_ref_start|>Save<|object_ref_end|><|box_start|>(100,200),(300,400)<|box_end|>"
    p, b, _ = pts("os_atlas", text)
    assert b == [[0.1, 0.2, 0.3, 0.4]] and p == [[0.2, 0.3]]
    assert pts("os_atlas", "<|box_start|>(700,50)<|box_end|>")[0] == [[0.7, 0.05]]


def test_showui_unit_fractions():
    assert pts("showui", "[0.73, 0.21]")[0] == [[0.73, 0.21]]


def test_uground_parenthesized_grid():
    assert pts("uground", "(512, 88)")[0] == [[0.512, 0.088]]


def test_gta1_resized_pixels():
    # (259, 189) in a 518x378 model input -> (0.5, 0.5)
    assert pts("gta1", "(259,189)", mis=(518, 378))[0] == [[0.5, 0.5]]


def test_gta1_resize_setting_is_stored_in_the_family():
    """The issue-16 case: GTA1's processor runs with max_pixels = 4096 * 2160 = 8847360, not
    Qwen2.5-VL's 12845056. 5120x2880: beta = sqrt(14745600 / 8847360) = 1.29099,
    floor(5120 / 1.29099 / 28) * 28 = 3948, floor(2880 / 1.29099 / 28) * 28 = 2212."""
    gta1 = get_family("gta1")
    assert gta1.resize == {"factor": 28, "min_pixels": 3136, "max_pixels": 8847360}
    assert gta1.expected_model_input_size((5120, 2880)) == (3948, 2212)
    # Qwen2.5-VL's setting gives 4760x2688: the centre answer (1974, 1106) would read 17 % off
    assert get_family("qwen2_5_vl").expected_model_input_size((5120, 2880)) == (4760, 2688)
    assert 1 - 3948 / 4760 == pytest.approx(0.17, abs=0.005)
    assert pts("gta1", "(1974,1106)", size=(5120, 2880), mis=(3948, 2212))[0] == [[0.5, 0.5]]
    with pytest.raises(ValueError, match="no resize"):
        get_family("molmo").expected_model_input_size((640, 480))


@pytest.mark.parametrize("name", FAMILIES)
def test_resized_frames_declare_their_resize_setting(name):
    fam = get_family(name)
    assert (fam.resize is not None) == (fam.frame.kind == "pixels_resized")


def test_opencua_pyautogui_calls():
    text = "## Code:\n```python\npyautogui.click(x=1036, y=378)\npyautogui.moveTo(259, 189)\n```"
    # model input 2072x756: 1036/2072 = 0.5, 378/756 = 0.5; positional 259/2072 = 0.125, 189/756 = 0.25
    assert pts("opencua", text, mis=(2072, 756))[0] == [[0.5, 0.5], [0.125, 0.25]]


def test_json_pixels_point_and_bbox():
    # 1000x500 image: point (250, 125) -> (0.25, 0.25)
    assert pts("json_pixels", '{"point": [250, 125]}')[0] == [[0.25, 0.25]]
    assert pts("center", '{"point": [500, 250]}')[0] == [[0.5, 0.5]]
    assert pts("ocr", '{"bbox": [0, 0, 100, 50]}', task="box")[1] == [[0.0, 0.0, 0.1, 0.1]]


# ----------------------------------------------------------------------------- round-trips (hypothesis)

ALL = FAMILIES
BOXERS = sorted(n for n in FAMILIES if get_family(n).can_box)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
size = st.tuples(st.integers(64, 4000), st.integers(64, 4000))
RT = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", ALL)
@RT
@given(x=unit, y=unit, image_size=size, model_input_size=size)
def test_point_round_trip(name, x, y, image_size, model_input_size):
    fam = get_family(name)
    text = fam.format_point(x, y, image_size, model_input_size)
    r = fam.parse(text, image_size, model_input_size, task="point")
    tx, ty = fam.tolerance(image_size, model_input_size)
    assert r.reason is None, (text, r)
    px, py = r.points[0]
    assert abs(px - x) <= tx + 1e-9 and abs(py - y) <= ty + 1e-9, (text, r.points, (x, y), (tx, ty))
    assert not r.truncated and "inverted_box" not in r.flags


@st.composite
def boxes(draw):
    a, b = draw(unit), draw(unit)
    c, d = draw(unit), draw(unit)
    return min(a, c), min(b, d), max(a, c), max(b, d)


@pytest.mark.parametrize("name", BOXERS)
@RT
@given(box=boxes(), image_size=size, model_input_size=size)
def test_box_round_trip(name, box, image_size, model_input_size):
    fam = get_family(name)
    x0, y0, x1, y1 = box
    tx, ty = fam.tolerance(image_size, model_input_size)
    # corners must be distinguishable at the family's precision (else it is a zero-area box)
    if x1 - x0 <= 4 * tx or y1 - y0 <= 4 * ty:
        return
    text = fam.format_box(x0, y0, x1, y1, image_size, model_input_size)
    r = fam.parse(text, image_size, model_input_size, task="box")
    assert r.reason is None and len(r.boxes) == 1, (text, r)
    got = r.boxes[0]
    for g, e, t in zip(got, (x0, y0, x1, y1), (tx, ty, tx, ty)):
        assert abs(g - e) <= t + 1e-9, (text, got, box)
    # for a point task the same answer gives the box centre
    rp = fam.parse(text, image_size, model_input_size, task="point")
    assert rp.points[0] == pytest.approx([(got[0] + got[2]) / 2, (got[1] + got[3]) / 2])


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=200))
def test_parse_never_raises_on_arbitrary_text(name, text):
    fam = get_family(name)
    r = fam.parse(text, (640, 480), (644, 476), task="point")
    assert (r.points or r.boxes) or r.reason
    for p in r.points:
        assert all(v == v and abs(v) != float("inf") for v in p)


FRAGMENTS = [
    "<think>", "</think>", "```json\n", "```", "[", "]", "{", "}", "(", ")", ",", " ", "\n", '"', "'",
    '"point_2d": ', '"bbox_2d": ', '"point": ', '"bbox": ', '"box_2d": ', "x=", "y=", "<point ", "<points ",
    'x="', 'y="', 'x1="', 'y1="', 'coords="', ">", "</point>", "<box>", "</box>", "<ref>a</ref>", "<loc0512>",
    "<loc_100>", "<patch_index_0033>", "<|box_start|>", "<|box_end|>", "start_box='", "pyautogui.click(",
    "Click(", "12", "-3.5", "1e3", "NaN", "inf", "１２", "512px", "0.25", ";", "</answer>", "<answer>",
]


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_parse_never_raises_on_syntax_soup(name, parts):
    """Random mixtures of every family's syntax fragments: parse returns a result, all numbers finite,
    and an empty result always says why."""
    r = get_family(name).parse("".join(parts), (640, 480), (644, 476), task="point")
    assert (r.points or r.boxes) or r.reason
    for p in r.points + r.boxes:
        assert all(abs(v) < float("inf") for v in p)


# ----------------------------------------------------------------------------- declines (absent referents)


@pytest.mark.parametrize("name", ALL)
def test_every_family_reads_its_own_decline(name):
    fam = get_family(name)
    r = fam.parse(fam.format_decline(), (640, 480), (644, 476))
    assert r.reason == "declined" and "declined" in r.flags and not r.points and not r.boxes


@pytest.mark.parametrize("name", ALL)
def test_the_prompt_says_how_to_decline_only_when_the_referent_may_be_absent(name):
    fam = get_family(name)
    plain = fam.prompt("Click the Save button.", "point")
    told = fam.prompt("Click the Save button.", "point", absent_possible=True)
    if fam.decline_prompt is None:
        # task-token prompts cannot carry a sentence; these families decline by giving no location
        assert told == plain and fam.declines_by_silence
    else:
        assert told.startswith(plain.rstrip().rstrip(".")) and told.endswith(fam.decline_prompt)
        assert plain.count(fam.decline_prompt) == 0


def test_decline_conventions_fixed_cases():
    # json_pixels convention: its own keys with a null location
    assert get_family("json_pixels").parse('{"bbox": null}', (640, 480), task="box").reason == "declined"
    # Molmo: PixMo-Points' "There are none."
    assert get_family("molmo").parse("There are none.", (640, 480)).reason == "declined"
    # Qwen / Gemini: an empty grounding list, fenced or bare
    assert get_family("qwen3_vl").parse("```json\n[]\n```", (640, 480)).reason == "declined"
    assert get_family("gemini").parse("[]", (640, 480)).reason == "declined"
    # PaliGemma: a detection with nothing found writes no loc tokens (empty or label only)
    assert get_family("paligemma").parse("", (640, 480)).reason == "declined"
    # other families: "not present", or an English statement of absence
    assert get_family("uground").parse("The button is not present in the screenshot.", (640, 480)).reason == "declined"
    # prose without coordinates and without a decline stays no_coordinates, never a decline
    assert get_family("uground").parse("It is the blue one.", (640, 480)).reason == "no_coordinates"
    assert get_family("json_pixels").parse("", (640, 480)).reason == "empty"
    # a location wins over decline words: that is a located answer (hallucinated if absent)
    r = get_family("json_pixels").parse('Not present, but maybe {"point": [10, 20]}', (640, 480))
    assert r.points and r.reason is None and "declined" not in r.flags


def test_readme_says_which_families_answer_y_first():
    """Every family whose frame puts y before x is named with "y first" in the README's family list
    (a reader converting Gemini's [y, x] by hand would otherwise swap the axes)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    para = " ".join(readme.split("## Model families", 1)[1].split("\n\n")[1].split())
    yx = sorted(f.name for f in list_families() if tuple(f.frame.order) == ("y", "x"))
    assert yx == ["gemini", "paligemma"]
    assert "Gemini (0–1000 grid, y first: `{\"point\": [y, x]}`" in para
    assert "PaliGemma (`<loc0000>`..`<loc1023>` = n/1023, y first" in para
