"""The sheets suite: determinism, target geometry per category, uniqueness, scroll offsets."""

from __future__ import annotations

import json
import re

import pytest

from pointfail.generated.suites import sheets
from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.painter import TextPainter
from pointfail.generated.suites.rows import build_row, sample_rng
from pointfail.generated.suites.sheets import CATEGORY_WEIGHTS, COLORS, STYLES, col_name

PAINTER = TextPainter()


def test_col_name():
    # bijective base 26: A..Z, then AA (26 + 0), AZ (26 + 25), BA (52), ZZ (26 + 26*26 - 1 = 701), AAA
    assert [col_name(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]
    with pytest.raises(ValueError):
        col_name(-1)


def _sample(category, index=0):
    """First attempt stream that yields ``category`` (deterministic), as a row plus scene graph."""
    for attempt in range(60):
        try:
            spec = sheets.make_sample(sample_rng("sheets-test", 11, index, attempt), index, PAINTER, category=category)
        except SuiteError:
            continue
        row = build_row(f"pfs_{index:04d}", f"{index:04d}", spec)
        return row, spec
    raise AssertionError(f"no {category} sample in 60 attempts")


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    out = tmp_path_factory.mktemp("sheets") / "s"
    m = sheets.generate(out, n=8, seed=4)
    return out, m


def test_same_seed_same_bytes_other_seed_other_bytes(suite, tmp_path):
    out, m = suite
    again = sheets.generate(tmp_path / "again", n=8, seed=4)
    assert again["files"] == m["files"]
    for rel in m["files"]:
        assert (out / rel).read_bytes() == (tmp_path / "again" / rel).read_bytes()
    other = sheets.generate(tmp_path / "other", n=8, seed=5)
    assert other["files"]["data/test/0000.png"] != m["files"]["data/test/0000.png"]
    assert m["suite"] == "sheets" and m["generator"] == "pointfail.suites.sheets" and m["n"] == 8


def test_rows_match_their_scene_graph(suite):
    out, _ = suite
    rows = [json.loads(x) for x in (out / "data/test/metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 8
    for r in rows:
        sg = json.loads((out / "data/test" / r["scene_graph"]).read_text(encoding="utf-8"))
        els = {e["id"]: e for e in sg["elements"]}
        assert len(els) == len(sg["elements"])  # ids unique
        assert els[r["target_id"]]["box"] == r["bbox"]
        x0, y0, x1, y1 = r["bbox"]
        assert x0 <= r["point"][0] <= x1 and y0 <= r["point"][1] <= y1
        assert r["eval"] == {"type": "point_in_bbox", "bbox": r["bbox"]}
        assert r["answer_type"] == "point" and r["image_size"] == [1024, 768]
        assert r["data_type"] == CATEGORY_WEIGHTS[r["category"]][0]
        assert r["ui_style"] in STYLES and r["language"] in ("en", "de", "fr", "es", "it", "nl")
        cats = {e["category"] for e in sg["elements"]}
        assert {"cell", "column_header", "row_header", "cell_edge", "cell_corner", "col_resize_handle",
                "row_resize_handle"} <= cats


@pytest.mark.parametrize("category", sorted(CATEGORY_WEIGHTS))
def test_every_category_produces_a_sound_target(category):
    row, spec = _sample(category)
    els = spec.scene.by_id()
    t = els[row["target_id"]]
    x0, y0, x1, y1 = t.box
    img = spec.scene.image
    style = STYLES[row["ui_style"]]
    instr = row["instruction"]
    if category.endswith("corner"):
        assert (x1 - x0, y1 - y0) == (6, 6) and t.category == "cell_corner"
        # the node sits at the crossing of two grid lines drawn in the style's grid colour
        assert img.getpixel((x0 + 3, y0 + 3)) in (style.grid, style.header_line)
    elif category in ("cell_right_edge", "col_resize_handle"):
        assert x1 - x0 == 6
        line_color = style.grid if category == "cell_right_edge" else style.header_line
        assert img.getpixel((x0 + 3, (y0 + y1) // 2)) == line_color
    elif category in ("cell_bottom_edge", "row_resize_handle"):
        assert y1 - y0 == 6
        line_color = style.grid if category == "cell_bottom_edge" else style.header_line
        assert img.getpixel((x0 + 2, y0 + 3)) == line_color
    ref = re.search(r"\b([A-Za-z]{1,2})(\d{1,3})\b", instr)
    if category == "cell_ref":
        assert row["target_id"] == f"cell:{ref.group(1).upper()}{ref.group(2)}"
    elif category == "cell_color":
        _check_colour(row, spec)
    elif category in ("cell_content", "cell_ref_content"):
        assert t.text and t.text in instr
        assert [e.id for e in spec.scene.elements if e.text and e.text.casefold() == t.text.casefold()] == [t.id]
    elif category in ("cell_relative_row", "cell_relative_offset"):
        anchor_c, anchor_r = ref.group(1).upper(), int(ref.group(2))
        dr = re.search(r"(\d+) rows? (down|below|up|above)", instr)
        dc = re.search(r"(\d+) columns? (right|left)", instr)
        r = anchor_r + (0 if not dr else int(dr.group(1)) * (1 if dr.group(2) in ("down", "below") else -1))
        ci = [col_name(i) for i in range(60)].index(anchor_c)
        ci += 0 if not dc else int(dc.group(1)) * (1 if dc.group(2) == "right" else -1)
        assert row["target_id"] == f"cell:{col_name(ci)}{r}"
    elif category == "col_header":
        assert t.category == "column_header" and t.text.lower() in instr.lower()
    elif category == "row_header":
        assert t.category == "row_header" and re.search(rf"\b{t.text}\b", instr)
    if category.endswith("corner"):
        # corner naming: the top-left corner of X is the bottom-right node of the cell up-left of X
        c, r = ref.group(1).upper(), int(ref.group(2))
        ci = [col_name(i) for i in range(60)].index(c)
        vert, horiz = category.split("_")[1:3]
        want = f"corner:{col_name(ci if horiz == 'right' else ci - 1)}{r if vert == 'bottom' else r - 1}"
        assert row["target_id"] == want


def test_scroll_offsets_move_the_grid():
    """The same column header lands at different x, and first rows differ, across samples."""
    firsts, xs = set(), set()
    for i in range(6):
        row, spec = _sample("col_header", index=i)
        firsts.add((row["first_row"], row["first_col"]))
        for e in spec.scene.elements:
            if e.category == "column_header" and e.text == "J":
                xs.add(e.box[0])
    assert len(firsts) >= 4
    assert len(xs) >= 2


def test_non_unique_content_is_rejected():
    """A value shown in two cells can never be a cell_content target: make_sample must raise or pick
    another value (checked on the elements it returns)."""
    for i in range(8):
        try:
            spec = sheets.make_sample(sample_rng("dup", 1, i, 0), i, PAINTER, category="cell_content")
        except SuiteError as e:
            assert "matches" in str(e) or "no filled cell" in str(e)
            continue
        t = spec.scene.by_id()[spec.target_id]
        assert sum(1 for e in spec.scene.elements if e.text and e.text.casefold() == t.text.casefold()) == 1


def _check_colour(row, spec):
    """The named colour fills the target (a cell, or a whole row/column band) and nothing else."""
    img = spec.scene.image
    instr = row["instruction"]
    t = spec.scene.by_id()[row["target_id"]]
    x0, y0, x1, y1 = t.box
    name = next(c for c in COLORS if re.search(rf"\b{c}\b", instr))
    assert img.getpixel(((x0 + x1) // 2, y0 + 2)) == COLORS[name]
    same = [e for e in spec.scene.elements if e.category == "cell"
            and img.getpixel(((e.box[0] + e.box[2]) // 2, min(e.box[1] + 2, 767))) == COLORS[name]]
    if t.category == "color_band":
        kind = "row" if t.id.startswith("band:row:") else "column"
        assert kind in instr and t.text == name
        assert len(same) >= 2 and all(x0 <= e.box[0] and e.box[2] <= x1 and y0 <= e.box[1] and e.box[3] <= y1
                                      for e in same)
    else:
        assert [e.id for e in same] == [row["target_id"]]


def test_colour_bands_and_cells():
    kinds = set()
    for i in range(30):
        row, spec = _sample("cell_color", index=i)
        _check_colour(row, spec)
        kinds.add(spec.scene.by_id()[row["target_id"]].category)
        if kinds == {"cell", "color_band"}:
            break
    assert kinds == {"cell", "color_band"}


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _col_index(name: str) -> int:
    """Inverse of col_name, written independently: bijective base 26 (A=1 .. Z=26), minus one."""
    v = 0
    for ch in name:
        v = v * 26 + (ord(ch) - 64)
    return v - 1


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=20000))
def test_col_name_roundtrip_and_order(i):
    name = col_name(i)
    assert name.isalpha() and name.isupper()
    assert _col_index(name) == i
    nxt = col_name(i + 1)
    assert (len(nxt), nxt) > (len(name), name)  # spreadsheet order: shorter first, then alphabetical
