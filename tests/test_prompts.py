"""Directive stripping on the publishers' real wordings, and build_prompt's three forms."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
import builders  # noqa: E402

from pointfail.inputs.benchmarks import load  # noqa: E402
from pointfail.prompts import DIRECTIVES, PromptError, build_prompt, strip_directives  # noqa: E402
from pointfail.records import ImageRef, Sample, Target  # noqa: E402

# Where2Place / RoboPoint, verbatim (point_questions.jsonl text and RoboPoint's prompt constant).
ROBOPOINT = ("Your answer should be formatted as a list of tuples, i.e. [(x1, y1), (x2, y2), ...], where "
             "each tuple contains the x and y coordinates of a point satisfying the conditions above. The "
             "coordinates should be between 0 and 1, indicating the normalized pixel locations of the points "
             "in the image.")
# A box variant as published for bbox questions (0-1000 wording from a public evaluation script).
BOX_1000 = ("Your answer should be formatted as a list of tuples, i.e. [(x1, y1, x2, y2), ...], where each "
            "tuple contains the coordinates of a bbox satisfying the conditions above. The coordinates should "
            "range from 0 to 1000, representing the relative pixel positions of the bbox in the image.")
BOX_UNIT = ("Your answer should be formatted as a list of tuples, i.e. [(x1, y1, x2, y2), ...], where each "
            "tuple contains the x and y coordinates of the upper-left and lower-right corners of a bounding "
            "box satisfying the conditions above. The coordinates should be between 0 and 1, indicating the "
            "normalized pixel locations of the bounding boxes in the image.")
POINTARENA_999 = ("Your answer should be formatted as a list of tuples, i.e. [(x1, y1), (x2, y2), ...], where "
                  "each tuple contains the x and y coordinates of a point satisfying the conditions above. The "
                  "coordinates should be integers between 0 and 999, representing the pixel locations scaled "
                  "to a 1000x1000 grid.")


@pytest.mark.parametrize("text,core,names", [
    ("<image>\nPoint to the free space left of the bowl. " + ROBOPOINT,
     "Point to the free space left of the bowl.", ["image_placeholder", "robopoint_point_list"]),
    ("Point to the free space left of the bowl. " + ROBOPOINT,
     "Point to the free space left of the bowl.", ["robopoint_point_list"]),
    ("<image>\nFind a spot on the shelf for the box. " + BOX_UNIT,
     "Find a spot on the shelf for the box.", ["image_placeholder", "robopoint_box_list"]),
    ("Please generate a set of bounding box (bbox) coordinates based on the image and description.\n" + BOX_1000,
     "Please generate a set of bounding box (bbox) coordinates based on the image and description.",
     ["robopoint_box_list"]),
    ("Please point to the mug left of the laptop. " + builders.REFSPATIAL_SUFFIX,
     "Please point to the mug left of the laptop.", ["robopoint_point_list"]),
    ("Locate several points within the vacant space for the following task: place the cup. " + ROBOPOINT
     + " Output 3 coordinates.",
     "Locate several points within the vacant space for the following task: place the cup.",
     ["robopoint_point_list"]),
    ("Point to the red apple. " + POINTARENA_999, "Point to the red apple.", ["robopoint_point_list"]),
    # line-wrapped copy of the directive still matches
    ("Point to the gap.\n" + ROBOPOINT.replace("where each", "where\neach"), "Point to the gap.",
     ["robopoint_point_list"]),
])
def test_strip_real_wordings(text, core, names):
    assert strip_directives(text) == (core, names)


def test_no_directive_left_alone():
    assert strip_directives("  Target cell E15.  ") == ("Target cell E15.", [])
    # the instruction mentioning tuples is not a directive
    assert strip_directives("Point to the list of tuples on the board.")[1] == []


def test_real_pointerbench_instructions_untouched(pointerbench_dir):
    """None of the 1,500 real PointerBench instructions carries a directive: all pass through."""
    n = 0
    for name in ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro"):
        for s in load(name, pointerbench_dir):
            core, stripped = strip_directives(s.instruction)
            assert stripped == [] and core == " ".join(s.instruction.split()), s.sample_id
            n += 1
    assert n == 1500


def test_registry_names_unique():
    names = [d.name for d in DIRECTIVES]
    assert len(names) == len(set(names)) and all(d.source for d in DIRECTIVES)


_core_text = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd"), whitelist_characters=" ,"),
                     min_size=1, max_size=60).filter(lambda t: t.strip())


@settings(max_examples=60, deadline=None)
@given(core=_core_text, image_line=st.booleans(), directive=st.sampled_from([ROBOPOINT, BOX_UNIT, BOX_1000]))
def test_strip_recovers_core(core, image_line, directive):
    text = ("<image>\n" if image_line else "") + core + ". " + directive
    got, names = strip_directives(text)
    assert got == " ".join((core + ".").split())
    assert len(names) == 1 + int(image_line)
    assert strip_directives(got) == (got, [])  # idempotent


class _EchoFamily:
    """A minimal family: marks the task so the test sees exactly what reached prompt(). Its frame is
    pixels of the original image (as json_pixels), for the steerable reference point."""

    name = "echo"
    frame = __import__("pointfail.families.json_pixels", fromlist=["FAMILY"]).FAMILY.frame
    decimals = 0

    def _frame_values(self, x, y, image_size, model_input_size):
        from pointfail.families import get_family

        return get_family("json_pixels")._frame_values(x, y, image_size, model_input_size)

    def prompt(self, core_instruction: str, task: str = "point") -> str:
        return f"[{task}] {core_instruction}"


def _sample(instruction, task="point", **metadata):
    return Sample(sample_id="s", benchmark="x", image=ImageRef(path="i.png", width=640, height=480),
                  instruction=instruction, task=task, target=Target(kind="absent"), metadata=metadata)


def test_build_prompt_keeps_three_forms():
    text = "<image>\nPoint to the gap. " + ROBOPOINT
    p = build_prompt(_EchoFamily(), _sample(text))
    assert p.original == text
    assert p.core == "Point to the gap."
    assert p.sent == "[point] Point to the gap."
    assert p.stripped == ["image_placeholder", "robopoint_point_list"]
    assert build_prompt(_EchoFamily(), _sample("Box the word.", task="box")).sent == "[box] Box the word."


def test_build_prompt_refspatial_unknown_suffix_removed_verbatim():
    suffix = "Answer with one normalized point as (x, y) please"
    p = build_prompt(_EchoFamily(), _sample(f"Point to the cup. {suffix}", directive_suffix=suffix))
    assert p.core == "Point to the cup." and p.stripped == ["refspatial_suffix"]


def test_build_prompt_refspatial_fixture(tmp_path):
    s = load("refspatial", builders.refspatial(tmp_path / "rs"))[0]
    p = build_prompt(_EchoFamily(), s)
    assert p.core == "Please point to the location target." and p.stripped == ["robopoint_point_list"]


def test_build_prompt_steerable_reference_point_in_each_family_frame(tmp_path):
    """(5, 5) px of the 20x10 fixture image is (0.25, 0.5) of the unit square: 25.0/50.0 percent for
    Molmo, 250/500 on InternVL's 0-1000 grid, and for Qwen2.5-VL pixels of the resized input: the
    tiny 20x10 image is smart_resized (factor 28, min_pixels 3136) to 84x28... (the size the family's
    own expected_model_input_size gives), so (0.25 * W', 0.5 * H')."""
    from pointfail.families import get_family

    s = {x.sample_id: x for x in load("point-bench", builders.point_bench(tmp_path / "pb"))}
    note = "The query refers to an existing point that is not drawn in the image, at "
    p = build_prompt(_EchoFamily(), s["steerable/s1.png"])
    assert p.core == "Point to the object left of the dot. " + note + "(5, 5) in pixels of the image."
    molmo = build_prompt("molmo", s["steerable/s1.png"])
    assert molmo.core == "Point to the object left of the dot. " + note + \
        "(25.0, 50.0) in percent of the image width and height."
    assert molmo.sent == ("Point to the object left of the dot (the query refers to an existing point that is not "
                          "drawn in the image, at (25.0, 50.0) in percent of the image width and height)")
    assert build_prompt("internvl3", s["steerable/s1.png"]).core.endswith("at (250, 500) on a 0-1000 grid of the image.")
    w, h = get_family("qwen2_5_vl").expected_model_input_size((20, 10))
    qx, qy = round(0.25 * w), round(0.5 * h)
    assert build_prompt("qwen2_5_vl", s["steerable/s1.png"]).sent.startswith(
        f"Point to the object left of the dot (the query refers to an existing point that is not drawn in the image, "
        f"at ({qx}, {qy}) in pixels of the image), output its coordinates")
    p2 = build_prompt(_EchoFamily(), s["steerable/s2.png"])
    assert p2.core == "Point to the object right of the dot."


def test_build_prompt_empty_after_stripping():
    with pytest.raises(PromptError, match="empty after stripping"):
        build_prompt(_EchoFamily(), _sample("<image>\n" + ROBOPOINT))


def test_build_prompt_with_real_families():
    import pointfail.families as fam
    s = _sample("<image>\nthe mug on the left. " + ROBOPOINT)
    jp = build_prompt("json_pixels", s)
    assert jp.core == "the mug on the left."
    assert jp.sent == fam.get_family("json_pixels").prompt("the mug on the left.", "point")
    assert "You are evaluating PointerBench" in jp.sent and "the mug on the left." in jp.sent
    q = build_prompt(fam.get_family("qwen2_5_vl"), s)
    assert "the mug on the left" in q.sent and "point_2d" in q.sent
    with pytest.raises(KeyError):
        build_prompt("no_such_family", s)


# Core instructions of the real wordings above (Where2Place, RefSpatial, RoboPoint), as
# strip_directives leaves them, with the target phrase each must reduce to.
REAL_CORES = [
    ("Point to the free space left of the bowl.", "the free space left of the bowl"),
    ("Please point to the free space between the two plates.", "the free space between the two plates"),
    ("Please point to the mug left of the laptop.", "the mug left of the laptop"),
    ("Please point to the location target.", "the location target"),
    ("Find a spot on the shelf for the box.", "a spot on the shelf for the box"),
    ("Locate several points within the vacant space for the following task: place the cup.",
     "several points within the vacant space for the following task: place the cup"),
    ("Point to the red apple.", "the red apple"),
    ("the mug on the left.", "the mug on the left"),
]


@pytest.mark.parametrize("core,target", REAL_CORES)
def test_families_do_not_wrap_a_pointing_verb_twice(core, target):
    from pointfail.families import get_family

    assert get_family("molmo").prompt(core) == f"Point to {target}"
    assert get_family("molmo2").prompt(core) == f"Point to {target}"
    assert get_family("qwen2_5_vl").prompt(core).startswith(f"Point to {target}, output its coordinates")
    assert get_family("qwen3_vl").prompt(core, "box").startswith(f"Locate {target}, output its bbox")
    assert get_family("gemini").prompt(core).startswith(f"Point to {target}. The answer")
    assert get_family("gemini").prompt(core, "box").startswith(f"Detect {target}. Output")
    assert get_family("paligemma").prompt(core) == f"detect {target}"
    # phrase-grounding families take a noun phrase, not an imperative
    assert get_family("kosmos2").prompt(core) == f"<grounding><phrase> {target}</phrase>"
    assert get_family("florence2").prompt(core, "box") == f"<CAPTION_TO_PHRASE_GROUNDING>{target}"
    # families that do not prepend a verb keep the instruction as written
    assert get_family("internvl3").prompt(core).endswith(f"<ref>{' '.join(core.split())}</ref>")


def test_build_prompt_where2place_and_refspatial_fixtures_with_molmo(tmp_path):
    """End to end on the fixtures: directive stripped, then wrapped once ("Point to please point to"
    was the bug)."""
    w2p = load("where2place", builders.where2place(tmp_path / "w2p", n=1))[0]
    p = build_prompt("molmo", w2p)
    assert p.core == "Please point to the free space between the two plates."
    assert p.sent == "Point to the free space between the two plates"
    rs = load("refspatial", builders.refspatial(tmp_path / "rs"))
    assert [build_prompt("molmo", s).sent for s in rs] == [
        "Point to the location target", "Point to the placement target", "Point to the unseen target"]
    assert build_prompt("qwen2_5_vl", rs[1]).sent.startswith("Point to the placement target, output")


@pytest.mark.parametrize("core,target", [
    ("Click on the Save button", "the Save button"),
    ("Could you please tap the OK button?", "the OK button"),
    ("Kindly, point at the cat", "the cat"),
    ("Show me the exit sign", "the exit sign"),
    ("Pointed arch in the window", "pointed arch in the window"),  # not the verb phrase "point to"
    ("Click.", "click"),  # nothing after the verb: the word is kept (first letter lower-cased)
    ("Finding Nemo poster", "finding Nemo poster"),  # "find" must be a whole word
])
def test_pointing_target_rule(core, target):
    from pointfail.families._text import pointing_target

    assert pointing_target(core) == target


def test_rows_that_may_be_absent_are_told_how_to_decline_in_the_family_convention():
    s = _sample("Click the cell containing 4821.", absent_possible=True)
    sent = build_prompt("json_pixels", s).sent
    assert sent.endswith('Point task: Click the cell containing 4821. If the target is not in the screenshot, '
                         'return JSON like {"point": null} (bounding-box tasks: {"bbox": null}).')
    assert build_prompt("molmo", s).sent == "Point to the cell containing 4821. If there are none, answer: There are none."
    # task-token families cannot be told; their prompt is unchanged
    assert build_prompt("paligemma", s).sent == "detect the cell containing 4821"
    # rows of suites without absent referents get the plain prompt
    assert "null" not in build_prompt("json_pixels", _sample("Click the cell containing 4821.")).sent


# The cases: what each study family is sent for instructions that are not a plain pointing
# imperative (a question, a description followed by a request, another verb, a GUI command).
@pytest.mark.parametrize("core,target", [
    ("Which object would you use to cut paper?", 'the answer to the question "Which object would you use to cut paper?"'),
    ("In the image, there is an item encased within a red rectangle. Pinpoint several points within the vacant "
     "space situated to the left of the item.",
     "several points within the vacant space situated to the left of the item (in the image, there is an item "
     "encased within a red rectangle)"),
    ("Pinpoint the red apple", "the red apple"),
    ("Open settings", "the element to click to open settings"),
    ("There is a red mug on the table.", 'the target described by "There is a red mug on the table."'),
    ("The mug is red. It sits on the table.", 'the target described by "The mug is red. It sits on the table."'),
])
def test_non_imperative_instructions_read_as_one_sentence(core, target):
    from pointfail.families import get_family
    from pointfail.families._text import pointing_target

    assert pointing_target(core) == target
    assert get_family("molmo").prompt(core) == f"Point to {target}"
    assert get_family("qwen2_5_vl").prompt(core).startswith(f"Point to {target}, output its coordinates")
    for fam in ("molmo", "molmo2", "qwen2_5_vl", "qwen3_vl", "gemini"):
        sent = get_family(fam).prompt(core)
        assert "Point to which" not in sent and "Point to in " not in sent and "Point to pinpoint" not in sent


ROBOREFER_RAW = ("<image>In the image, there is the mug. Pinpoint several points within the vacant space situated "
                 "left of the mug on the table. Your final answer should be formatted as a list of tuples, i.e. "
                 "[(x1, y1), ...], where each tuple contains the x and y coordinates of a point satisfying the "
                 "conditions above. The coordinates should be between 0 and 1, indicating the normalized pixel "
                 "locations of the points.")


def test_refspatial_raw_prompt_with_final_answer_directive():
    """RoboRefer's raw RefSpatial wording: '<image>' with no line break, 'Your final answer ...', and a
    coordinate sentence ending 'of the points.'"""
    core, names = strip_directives(ROBOREFER_RAW)
    assert core == ("In the image, there is the mug. Pinpoint several points within the vacant space situated left "
                    "of the mug on the table.")
    assert names == ["image_placeholder", "robopoint_point_list"]
    from pointfail.families import get_family

    assert get_family("molmo").prompt(core) == ("Point to several points within the vacant space situated left of the "
                                               "mug on the table (in the image, there is the mug)")


# Every real instruction wording of the fixtures of the five benchmarks, as each study family gets it
# (Molmo v1, Qwen2.5-VL, InternVL3): no directive for another model, no "<image>", no doubled verb, and
# the exact text sent.
_QWEN_TAIL = ', output its coordinates in JSON format as [{"point_2d": [x, y], "label": "..."}].'
_INTERNVL = "Please provide the bounding box coordinate of the region this sentence describes: <ref>{}</ref>"
STUDY_FAMILY_PROMPTS = {  # (benchmark, sample id): (Molmo's prompt, InternVL's <ref> text, unused)
    ("point-bench", "affordable/café.png"): ("Point to the cup handle", "Point to the cup handle.", None),
    ("point-bench", "counting/b.png"): ("Point to every apple", "Point to every apple.", None),
    ("point-bench", "steerable/s2.png"): ("Point to the object right of the dot", "Point to the object right of the dot.",
                                          None),
    ("where2place", "000"): ("Point to the free space between the two plates",
                           "Please point to the free space between the two plates.", None),
    ("refspatial", "location/0000"): ("Point to the location target", "Please point to the location target.", None),
    ("refspatial", "placement/0000"): ("Point to the placement target", "Please point to the placement target.", None),
    ("screenspot-pro", "pycharm_0"): ("Point to the element to click to open settings", "Open settings", None),
    ("pointerbench-text", "pbt_0000"): ("Point to word 0", "Click word 0.", None),
    ("screenspot-pro", "pycharm_1"): ("Point to the element to click to run the file", "Run the file", None),
}


def _fixture_samples(tmp_path):
    out = {}
    for name, d in (("point-bench", builders.point_bench(tmp_path / "pb")),
                    ("where2place", builders.where2place(tmp_path / "w2p", n=1)),
                    ("refspatial", builders.refspatial(tmp_path / "rs")),
                    ("screenspot-pro", builders.screenspot_pro(tmp_path / "ssp")),
                    ("pointerbench-text", builders.pointerbench(tmp_path / "pbt", [builders.pointerbench_row(0)]))):
        for s in load(name, d):
            out[(name, s.sample_id)] = s
    return out


def test_prompts_of_real_fixture_instructions_for_each_study_family(tmp_path):
    samples = _fixture_samples(tmp_path)
    assert {b for b, _ in samples} == {"point-bench", "where2place", "refspatial", "screenspot-pro", "pointerbench-text"}
    for key, (molmo, internvl_core, _) in STUDY_FAMILY_PROMPTS.items():
        s = samples[key]
        m = build_prompt("molmo", s)
        assert m.sent == molmo, key
        assert build_prompt("qwen2_5_vl", s).sent == molmo + _QWEN_TAIL, key
        assert build_prompt("internvl3", s).sent == _INTERNVL.format(internvl_core), key
    for s in samples.values():  # every fixture row, every study family
        for fam in ("molmo", "qwen2_5_vl", "internvl3"):
            p = build_prompt(fam, s)
            assert "<image>" not in p.sent and "between 0 and 1" not in p.sent and "Your answer" not in p.sent
            low = p.sent.lower()
            assert not any(f"point to {v}" in low for v in ("please", "point", "click", "pinpoint", "which", "in the"))


def test_judge_quotes_the_instruction_the_model_was_given(tmp_path):
    """The judge quotes Prompt.core (directives stripped, reference point in the model's frame), not
    Prompt.original with '<image>' and the 0-1 directive."""
    from pointfail.prompts import instruction_given

    s = _fixture_samples(tmp_path)[("where2place", "000")]
    p = build_prompt("molmo", s)
    assert p.original.startswith("<image>") and "between 0 and 1" in p.original
    assert instruction_given(p) == "Please point to the free space between the two plates."
