"""Oracle judge on hand-built scene graphs: one case per label, and the boundary cases."""

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from pointfail.geometry import point_box_distance as box_distance_px
from pointfail.judge.oracle import (
    SceneGraphError,
    load_scene_graph,
    oracle_judgment,
)

# A 400x200 "sheet": a column header row (y 0..20), cells 100x30 below it, a word inside cell B2,
# and empty margin to the right of x = 300.
GRAPH = {
    "schema": "pointfail.scene_graph/1",
    "image": "0000.png",
    "width": 400,
    "height": 200,
    "elements": [
        {"id": "column_header:A", "category": "column_header", "box": [0, 0, 100, 20]},
        {"id": "column_header:B", "category": "column_header", "box": [100, 0, 200, 20]},
        {"id": "cell:A1", "category": "cell", "box": [0, 20, 100, 50]},
        {"id": "cell:B1", "category": "cell", "box": [100, 20, 200, 50]},
        {"id": "cell:C1", "category": "cell", "box": [200, 20, 300, 50]},
        {"id": "cell:A2", "category": "cell", "box": [0, 50, 100, 80]},
        {"id": "cell:B2", "category": "cell", "box": [100, 50, 200, 80]},
        {"id": "word:B2", "category": "word", "box": [110, 55, 150, 75]},
    ],
}


def label(point, target="cell:A1", tol=8.0):
    return oracle_judgment(GRAPH, target, point, tol).label


def test_off_by_pixels_within_tolerance():
    # target A1 = [0,20,100,50]; point (105, 35): dx = 105-100 = 5, dy = 0 -> 5 px <= 8
    j = oracle_judgment(GRAPH, "cell:A1", (105, 35), 8.0)
    assert j.label == "off_by_pixels" and j.status == "labeled" and j.judge == "oracle"
    assert j.options == {"tolerance_px": 8.0}
    assert "5.00 px from target cell:A1" in j.detail


def test_wrong_instance_same_category():
    # (250, 35) is in C1 (a cell), 150 px right of A1's right edge
    assert label((250, 35)) == "wrong_instance"


def test_wrong_category_other_category():
    # (150, 10) is in column_header:B; distance to A1: dx = 50, dy = 20-10 = 10 -> 50.99 > 8
    j = oracle_judgment(GRAPH, "cell:A1", (150, 10), 8.0)
    assert j.label == "wrong_category"
    assert "on column_header:B (column_header)" in j.detail
    assert f"{math.hypot(50, 10):.2f} px" in j.detail


def test_hallucinated_on_no_element():
    # (350, 150) is right of every element
    assert label((350, 150)) == "hallucinated"


def test_hallucinated_outside_image():
    assert label((-40, -40)) == "hallucinated"
    assert label((1000, 35)) == "hallucinated"


def test_tolerance_is_inclusive_at_exactly_tolerance():
    # A1's right edge is x = 100: a point at x = 108 is exactly 8 px away -> off_by_pixels;
    # x = 108.01 is beyond, and lies in B1 -> wrong_instance
    assert label((108, 35)) == "off_by_pixels"
    assert label((108.01, 35)) == "wrong_instance"


def test_tolerance_zero_point_on_target_edge_counts_as_inside():
    # distance from (100, 35) to A1 is 0 (on the inclusive edge) -> off_by_pixels even at tolerance 0
    assert label((100, 35), tol=0.0) == "off_by_pixels"


def test_corner_distance_is_euclidean():
    # (106, 56) vs A1 corner (100, 50): sqrt(36 + 36) = 8.485 > 8 -> lands in B2 (cell)
    assert box_distance_px((106, 56), [0, 20, 100, 50]) == pytest.approx(math.sqrt(72))
    assert label((106, 56)) == "wrong_instance"
    assert label((106, 56), tol=8.5) == "off_by_pixels"


def test_same_category_under_an_overlay_is_wrong_instance():
    # (120, 60) is inside cell:B2 (3000 px^2) and the smaller word:B2 (800 px^2): a cell lies under the
    # point, so with a cell as target it is wrong_instance, named after the cell
    j = oracle_judgment(GRAPH, "cell:A1", (120, 60), 8.0)
    assert j.label == "wrong_instance" and "on cell:B2 (cell)" in j.detail


def test_nested_other_category_names_innermost():
    # a toolbar containing an icon, both of other categories than the target cell: wrong_category,
    # named after the smaller icon
    g = dict(GRAPH, elements=GRAPH["elements"] + [
        {"id": "toolbar", "category": "toolbar", "box": [220, 100, 400, 140]},
        {"id": "icon:save", "category": "icon", "box": [230, 105, 250, 125]},
    ])
    j = oracle_judgment(g, "cell:A1", (240, 110), 8.0)
    assert j.label == "wrong_category" and "on icon:save (icon)" in j.detail
    j = oracle_judgment(g, "cell:A1", (300, 110), 8.0)
    assert j.label == "wrong_category" and "on toolbar (toolbar)" in j.detail


def test_shared_edge_of_equal_neighbours_resolves_to_smaller_id():
    # (200, 35) lies on the shared edge of B1 and C1 (both 3000 px^2); target A2 far away
    # distance to A2 [0,50,100,80]: dx = 100, dy = 15 -> > 8
    j = oracle_judgment(GRAPH, "cell:A2", (200, 35), 8.0)
    assert j.label == "wrong_instance" and "on cell:B1 (cell)" in j.detail
    # list order does not matter
    reordered = dict(GRAPH, elements=list(reversed(GRAPH["elements"])))
    assert oracle_judgment(reordered, "cell:A2", (200, 35), 8.0).detail == j.detail


def test_point_inside_target_box_is_off_by_pixels():
    # the scorer called it a miss (e.g. against a smaller mask), but it is inside the element's box
    assert label((50, 35), tol=0.0) == "off_by_pixels"


def test_target_containing_point_is_not_a_candidate():
    # the word is the target; a point in the enclosing cell B2 but 25 px from the word -> the cell is
    # another category (cell vs word) -> wrong_category
    # word:B2 = [110,55,150,75]; point (175, 60): dx = 25 -> 25 px
    assert label((175, 60), target="word:B2") == "wrong_category"


def test_unknown_target_and_bad_inputs_raise():
    with pytest.raises(SceneGraphError, match="cell:Z9"):
        oracle_judgment(GRAPH, "cell:Z9", (1, 1))
    with pytest.raises(ValueError, match="finite"):
        oracle_judgment(GRAPH, "cell:A1", (float("nan"), 1))
    with pytest.raises(ValueError, match="tolerance"):
        oracle_judgment(GRAPH, "cell:A1", (1, 1), -1)
    with pytest.raises(SceneGraphError, match="schema"):
        oracle_judgment(dict(GRAPH, schema="other"), "cell:A1", (1, 1))
    bad = dict(GRAPH, elements=[{"id": "x", "category": "cell", "box": [0, 0, 1]}])
    with pytest.raises(SceneGraphError, match="element 0"):
        oracle_judgment(bad, "x", (1, 1))


def test_load_scene_graph_names_file(tmp_path):
    good = tmp_path / "g.json"
    good.write_text(json.dumps(GRAPH))
    assert load_scene_graph(good)["elements"][0]["id"] == "column_header:A"
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(SceneGraphError, match="bad.json"):
        load_scene_graph(bad)


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failures
@given(
    st.floats(-50, 450, allow_nan=False),
    st.floats(-50, 250, allow_nan=False),
    st.floats(0, 30, allow_nan=False),
)
def test_label_invariants(x, y, tol):
    j = oracle_judgment(GRAPH, "cell:A1", (x, y), tol)
    d = box_distance_px((x, y), [0, 20, 100, 50])
    # off_by_pixels exactly when within tolerance
    assert (j.label == "off_by_pixels") == (d <= tol)
    # hallucinated exactly when beyond tolerance and on no element
    on_any = any(
        e["id"] != "cell:A1"
        and e["box"][0] <= x <= e["box"][2]
        and e["box"][1] <= y <= e["box"][3]
        for e in GRAPH["elements"]
    )
    assert (j.label == "hallucinated") == (d > tol and not on_any)
    on_cell = any(
        e["id"] != "cell:A1" and e["category"] == "cell"
        and e["box"][0] <= x <= e["box"][2] and e["box"][1] <= y <= e["box"][3]
        for e in GRAPH["elements"]
    )
    assert (j.label == "wrong_instance") == (d > tol and on_cell)


# ------------------------------------------------------------------- containers (lines, paragraphs)

# A text-suite page: paragraph 0 has two lines with 10 px of leading between them (y 30..40); line 0
# holds two words and the space between them; paragraph 1 is one line of one word, far below.
TEXT = {
    "schema": "pointfail.scene_graph/1", "image": "0001.png", "width": 300, "height": 200,
    "elements": [
        {"id": "para:0", "category": "paragraph", "box": [10, 10, 210, 60]},
        {"id": "line:0", "category": "line", "box": [10, 10, 210, 30]},
        {"id": "line:1", "category": "line", "box": [10, 40, 150, 60]},
        {"id": "word:0.0", "category": "word", "box": [10, 10, 60, 30]},
        {"id": "space:0.5", "category": "space", "box": [60, 10, 70, 30]},
        {"id": "word:0.1", "category": "word", "box": [70, 10, 210, 30]},
        {"id": "word:1.0", "category": "word", "box": [10, 40, 150, 60]},
        {"id": "para:1", "category": "paragraph", "box": [10, 100, 210, 120]},
        {"id": "line:2", "category": "line", "box": [10, 100, 210, 120]},
        {"id": "word:2.0", "category": "word", "box": [10, 100, 210, 120]},
    ],
}


def test_word_target_missed_into_leading_between_lines_is_hallucinated():
    # (100, 35): inside para:0 [10,10,210,60] but between line:0 (y <= 30) and line:1 (y >= 40);
    # distance to word:2.0 [10,100,210,120] is 100 - 35 = 65 px > 8
    j = oracle_judgment(TEXT, "word:2.0", (100, 35), 8.0)
    assert j.label == "hallucinated"
    assert "65.00 px from target word:2.0" in j.detail and "blank space inside para:0 (paragraph)" in j.detail
    # (180, 50): inside para:0, right of the shorter line:1 (x1 = 150): blank too
    assert oracle_judgment(TEXT, "word:2.0", (180, 50), 8.0).label == "hallucinated"


def test_word_target_on_smaller_elements_inside_containers():
    # (100, 20) is on word:0.1 (and line:0, para:0, which are ignored): another word
    j = oracle_judgment(TEXT, "word:2.0", (100, 20), 8.0)
    assert j.label == "wrong_instance" and "on word:0.1 (word)" in j.detail
    # (65, 20) is on the space between the words: another category, named after the space
    j = oracle_judgment(TEXT, "word:2.0", (65, 20), 8.0)
    assert j.label == "wrong_category" and "on space:0.5 (space)" in j.detail


def test_container_targets_still_see_their_own_category():
    # a line target: the point on line:0 (on word:0.1 too) is another line -> wrong_instance, named line:0
    j = oracle_judgment(TEXT, "line:2", (100, 20), 8.0)
    assert j.label == "wrong_instance" and "on line:0 (line)" in j.detail
    # a line target missed into the leading: para:0 is a container of another category -> ignored
    assert oracle_judgment(TEXT, "line:2", (100, 35), 8.0).label == "hallucinated"
    # a paragraph target: another paragraph under the point is another instance, even on blank leading
    j = oracle_judgment(TEXT, "para:1", (100, 35), 8.0)
    assert j.label == "wrong_instance" and "on para:0 (paragraph)" in j.detail


# A web page: a paragraph (category text, role paragraph) holding a link and a code identifier; the
# target is another code identifier; a code block and a second paragraph further down.
WEB = {
    "schema": "pointfail.scene_graph/1", "image": "0002.png", "width": 600, "height": 600,
    "elements": [
        {"id": "el:0001", "category": "text", "role": "paragraph", "box": [0, 0, 500, 100]},
        {"id": "el:0002", "category": "link", "role": "link", "box": [100, 10, 160, 30]},
        {"id": "el:0003", "category": "text", "role": "code", "box": [200, 10, 260, 30]},
        {"id": "el:0004", "category": "text", "role": "code", "box": [300, 200, 360, 220]},
        {"id": "el:0005", "category": "text", "role": "code_block", "box": [0, 300, 500, 400]},
        {"id": "el:0006", "category": "text", "role": "paragraph", "box": [0, 500, 500, 560]},
    ],
}


def test_web_code_target_missed_onto_paragraph_text_is_wrong_category():
    # before the rule, a paragraph (category "text") counted as another instance of a code identifier
    j = oracle_judgment(WEB, "el:0004", (50, 50), 8.0)
    assert j.label == "wrong_category" and "on el:0001 (text/paragraph)" in j.detail
    j = oracle_judgment(WEB, "el:0004", (50, 350), 8.0)
    assert j.label == "wrong_category" and "on el:0005 (text/code_block)" in j.detail


def test_web_smaller_elements_inside_a_paragraph_win():
    j = oracle_judgment(WEB, "el:0004", (230, 20), 8.0)  # another code identifier inside the paragraph
    assert j.label == "wrong_instance" and "on el:0003 (text/code)" in j.detail
    j = oracle_judgment(WEB, "el:0004", (120, 20), 8.0)  # a link inside the paragraph: the innermost
    assert j.label == "wrong_category" and "on el:0002 (link)" in j.detail
    # a paragraph target (box task) missed into another paragraph
    j = oracle_judgment(WEB, "el:0006", (50, 50), 8.0)
    assert j.label == "wrong_instance" and "on el:0001 (text/paragraph)" in j.detail


def test_located_answer_to_an_absent_referent_is_hallucinated():
    """The referent is nowhere in the image (target_id None): whatever the point lands on, even a
    cell of the kind asked for, the answer points at something that is not there."""
    j = oracle_judgment(GRAPH, None, (130, 60), 8.0)
    assert j.label == "hallucinated" and j.status == "labeled"
    # the innermost element under the point is named for the audit: word:B2 inside cell:B2
    assert "referent is absent" in j.detail and "on word:B2 (word)" in j.detail
    assert oracle_judgment(GRAPH, None, (350, 150), 8.0).detail.endswith("on no element")
    # the tolerance never turns it into a near miss
    assert oracle_judgment(GRAPH, None, (0, 20), 1000.0).label == "hallucinated"
