"""The ocr baseline on rendered screenshots with known geometry (issue 4: "The ocr baseline answers real
rendered text correctly ... most single-word targets are hits")."""

from __future__ import annotations

import json
import random
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageFont

from pointfail.generated.baselines import ocr
from pointfail.generated.baselines.ocr.instruction import quoted
from pointfail.generated.baselines.ocr.sheet import col_index, col_letters
from pointfail.generated.baselines.ocr.words import paragraphs, read_words

pytest.importorskip("pytesseract")
if shutil.which("tesseract") is None:
    pytest.skip("tesseract binary not installed (Debian tesseract-ocr)", allow_module_level=True)

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
WORDS = ("apple bridge candle dolphin engine forest garden harbor island jungle kettle lantern meadow needle "
         "orange pepper quartz ribbon saddle tunnel velvet walnut yellow zipper Straße château niño").split()


def _inside(pt, box) -> bool:
    return pt is not None and box[0] <= pt[0] <= box[2] and box[1] <= pt[1] <= box[3]


@pytest.fixture(scope="module")
def page():
    """1024x768 page of words in DejaVu Sans 16 px; returns (image, word -> pixel box, OCR words)."""
    font = ImageFont.truetype(FONT, 16)
    rng = random.Random(0)
    img = Image.new("RGB", (1024, 768), "white")
    d = ImageDraw.Draw(img)
    boxes = {}
    x, y = 40, 60
    for w in WORDS:
        bb = d.textbbox((x, y), w, font=font)
        if bb[2] > 980:
            x, y = 40, y + 48
            bb = d.textbbox((x, y), w, font=font)
        d.text((x, y), w, fill="black", font=font)
        boxes[w] = bb
        x = bb[2] + rng.randint(14, 40)
    return img, boxes, read_words(img)


X0, Y0, CW, RH = 50, 40, 100, 26


def _cell(c: int, r: int):
    """Pixel box of column c (0 = A), row r (1-based) in the rendered sheet."""
    return (X0 + c * CW, Y0 + r * RH, X0 + (c + 1) * CW, Y0 + (r + 1) * RH)


@pytest.fixture(scope="module")
def sheet():
    """A spreadsheet: grey header bands, column letters A-I, row numbers 1-25, grid lines."""
    font = ImageFont.truetype(FONT, 14)
    img = Image.new("RGB", (1024, 768), "white")
    d = ImageDraw.Draw(img)
    d.rectangle([0, Y0, 1024, Y0 + RH], fill=(235, 235, 235))
    d.rectangle([0, Y0, X0, 768], fill=(235, 235, 235))
    for c in range(9):
        x = X0 + c * CW
        d.line([x, Y0, x, 768], fill=(200, 200, 200))
        bb = d.textbbox((0, 0), chr(65 + c), font=font)
        d.text((x + CW / 2 - (bb[2] - bb[0]) / 2, Y0 + 5), chr(65 + c), fill="black", font=font)
    for r in range(1, 26):
        y = Y0 + r * RH
        d.line([0, y, 1024, y], fill=(200, 200, 200))
        bb = d.textbbox((0, 0), str(r), font=font)
        d.text((X0 / 2 - (bb[2] - bb[0]) / 2, y + 5), str(r), fill="black", font=font)
    x0, y0, _, _ = _cell(2, 7)
    d.text((x0 + 5, y0 + 5), "Marketing", fill="black", font=font)
    return img, read_words(img)


def test_single_word_targets_are_mostly_hits(page):
    img, boxes, words = page
    hits = [w for w in WORDS if _inside(ocr.point_to(img, f'Click the word "{w}".', words=words).point, boxes[w])]
    assert len(hits) / len(WORDS) >= 0.8, f"hits {len(hits)}/{len(WORDS)}: missed {set(WORDS) - set(hits)}"


def test_caret_positions_and_gaps(page):
    img, boxes, words = page
    g, h = boxes["garden"], boxes["harbor"]
    after = ocr.point_to(img, "Place the caret after 'garden'.", words=words)
    before = ocr.point_to(img, "Click just before «garden».", words=words)
    gap = ocr.point_to(img, 'the gap between "garden" and "harbor"', words=words)
    assert (after.rule, before.rule, gap.rule) == ("caret_after", "caret_before", "between_words")
    assert abs(after.point[0] - g[2]) <= 3 and g[1] <= after.point[1] <= g[3]   # right edge of the word
    assert abs(before.point[0] - g[0]) <= 3 and g[1] <= before.point[1] <= g[3]  # left edge
    assert g[2] - 2 <= gap.point[0] <= h[0] + 2                                  # in the blank between them


def test_box_task_and_unfound_text(page):
    img, boxes, words = page
    a = ocr.point_to(img, 'Draw a box around "lantern".', task="box", words=words)
    x0, y0, x1, y1 = json.loads(a.text)["bbox"]
    b = boxes["lantern"]
    assert abs(x0 - b[0]) <= 4 and abs(x1 - b[2]) <= 4 and abs(y0 - b[1]) <= 6 and abs(y1 - b[3]) <= 6
    miss = ocr.point_to(img, 'Click "xylophone".', words=words)
    assert miss.point is None and miss.rule == "not_found" and "[" not in miss.text


SHEET_CASES = [
    # (instruction, expected pixel box; corners/edges as 1-px boxes around the exact point)
    ("Select cell C7.", _cell(2, 7)),
    ("Click the cell B22 in the spreadsheet.", _cell(1, 22)),
    ("Place the selection on H12.", _cell(7, 12)),
    ("Point to the cell 2 columns right, 2 rows down from B9.", _cell(3, 11)),   # B+2 = D, 9+2 = 11
    ("Target the cell 4 rows down from F15.", _cell(5, 19)),                       # 15+4 = 19
    ("starting on c25, count 3 columns right and 2 rows up.", _cell(5, 23)),      # C+3 = F, 25-2 = 23
    ('Go to the cell that contains "Marketing".', _cell(2, 7)),
    ("Please click the header for column E.", (X0 + 4 * CW, Y0, X0 + 5 * CW, Y0 + RH)),
    ("Click the row number 4.", (0, Y0 + 4 * RH, X0, Y0 + 5 * RH)),
    ("Click the top-left corner of cell F15.", (550 - 3, 430 - 3, 550 + 3, 430 + 3)),  # x = 50+5*100, y = 40+15*26
    ("Click exactly on the bottom border of D21.", (350, 612 - 3, 450, 612 + 3)),        # y = 40+22*26 = 612
    ("Where is column G's resize line?", (750 - 3, Y0, 750 + 3, Y0 + RH)),               # right edge of G = 50+7*100
]


def test_spreadsheet_references_against_found_headers(sheet):
    img, words = sheet
    cache: dict = {}
    results = [(ins, ocr.point_to(img, ins, words=words, cache=cache)) for ins, _ in SHEET_CASES]
    hits = [ins for (ins, a), (_, box) in zip(results, SHEET_CASES) if _inside(a.point, box)]
    assert len(hits) / len(SHEET_CASES) >= 0.8, [(i, a.point, a.rule) for i, a in results if i not in hits]


def test_worker_backend_answers_json_pixels(page, tmp_path):
    from pointfail.records import canonical_json
    from pointfail.running.worker import load_backend, run_worker

    img, boxes, _ = page
    p = tmp_path / "page.png"
    img.save(p)
    req = tmp_path / "req.jsonl"
    req.write_text(canonical_json({"sample_id": "a", "image": str(p), "prompt": 'Click "meadow".', "task": "point"}),
                   encoding="utf-8")
    run_worker(load_backend("ocr", None, "cpu"), req, tmp_path / "resp.jsonl")
    resp = json.loads((tmp_path / "resp.jsonl").read_text(encoding="utf-8"))
    assert resp["error"] is None
    assert _inside(json.loads(resp["raw_text"])["point"], boxes["meadow"])


def test_worker_gives_the_baseline_the_core_instruction(page, tmp_path):
    """The runner's requests carry the family's prompt and the core instruction: the baseline answers
    the core instruction (the prompt's own words, "top-left" and a quoted JSON example, are never
    read), and declines in the json_pixels convention when the request says the prompt told it how."""
    from pointfail.families import get_family
    from pointfail.records import canonical_json
    from pointfail.running.worker import load_backend, run_worker

    img, boxes, _ = page
    p = tmp_path / "page.png"
    img.save(p)
    fam = get_family("ocr")
    rows = [{"sample_id": "a", "image": str(p), "prompt": fam.prompt('Click "meadow".', "point"),
             "instruction": 'Click "meadow".', "task": "point"},
            {"sample_id": "b", "image": str(p), "prompt": fam.prompt('Click "xylophone".', "point", absent_possible=True),
             "instruction": 'Click "xylophone".', "absent_possible": True, "task": "point"},
            {"sample_id": "c", "image": str(p), "prompt": fam.prompt('Click "xylophone".', "point"),
             "instruction": 'Click "xylophone".', "task": "point"}]
    req = tmp_path / "req.jsonl"
    req.write_text("".join(canonical_json(r) for r in rows), encoding="utf-8")
    run_worker(load_backend("ocr", None, "cpu"), req, tmp_path / "resp.jsonl")
    got = {r["sample_id"]: r for r in map(json.loads, (tmp_path / "resp.jsonl").read_text(encoding="utf-8").splitlines())}
    assert _inside(json.loads(got["a"]["raw_text"])["point"], boxes["meadow"])
    assert got["b"]["raw_text"] == '{"point": null}'
    assert got["c"]["raw_text"] == "ocr baseline: quoted text not found in the screenshot"


def test_quoted_strings_in_every_quote_style():
    text = "Click the boundary between the «i» and the \"n\" in the 'Within' and `x` or “y” ‘z’."
    assert [q for _, q in quoted(text)] == ["i", "n", "Within", "x", "y", "z"]
    assert [q for _, q in quoted("the two \"p\"'s in 'approximately'")] == ["p", "approximately"]


@settings(deadline=None)  # the first call imports the sheets suite (col_letters is its col_name)
@given(st.integers(min_value=0, max_value=26 * 27 - 1))
def test_column_letters_round_trip(i):
    assert col_index(col_letters(i)) == i


def test_column_letters_fixed():
    # A=0, Z=25, AA=26 (26*1 + 1 - 1), AZ=51, BA=52
    assert [col_index(s) for s in ("A", "Z", "AA", "AZ", "BA")] == [0, 25, 26, 51, 52]


def test_character_boxes_and_gaps_from_glyph_columns():
    # "Bäckerei café" in DejaVu Sans 22 px at (60, 60); each glyph's ink box comes from PIL's textbbox of
    # that character drawn at the prefix's advance (getlength), the same arithmetic the renderer uses.
    font = ImageFont.truetype(FONT, 22)
    img = Image.new("RGB", (400, 160), "white")
    d = ImageDraw.Draw(img)
    text, x, y = "Bäckerei café", 60, 60
    d.text((x, y), text, fill="black", font=font)

    def glyph(i):
        return d.textbbox((x + font.getlength(text[:i]), y), text[i], font=font)

    a = ocr.point_to(img, "Isolate the 'ä' in 'Bäckerei' with a bbox.", task="box")
    assert a.rule == "char"
    g = glyph(1)
    assert all(abs(u - v) <= 1.5 for u, v in zip(a.box, g)), (a.box, g)
    gap = ocr.point_to(img, 'Click between the "f" and the "é" in the word «café».')
    f, e = glyph(text.index("f")), glyph(text.index("é"))
    assert gap.rule == "between_chars" and f[2] - 1 <= gap.point[0] <= e[0] + 1, (gap.point, f, e)


def test_paragraphs_split_at_first_line_indents():
    # two paragraphs, first lines indented by 40 px, no extra vertical gap (the text suite's layout)
    font = ImageFont.truetype(FONT, 16)
    img = Image.new("RGB", (700, 200), "white")
    d = ImageDraw.Draw(img)
    lines = [(80, "Three volunteers signed up for the garden cleanup"), (40, "on Sunday morning before the rain."),
             (80, "Could you check whether the backup finished"), (40, "without errors last night?")]
    for i, (x, s) in enumerate(lines):
        d.text((x, 20 + 24 * i), s, fill="black", font=font)
    paras = paragraphs(read_words(img))
    firsts = [p[0][0].text for p in paras]
    assert firsts == ["Three", "Could"] and [len(p) for p in paras] == [2, 2], [[w.text for ln in p for w in ln] for p in paras]
    box = ocr.point_to(img, 'Draw a box around the whole paragraph starting with "Three".', task="box").box
    assert box[0] <= 41 and box[1] <= 22 and box[3] >= 20 + 24 + 14 and box[3] < 20 + 48, box


def test_absent_quoted_text_is_declined_in_the_json_pixels_convention():
    """When the prompt told the model how to decline (a row whose referent may be absent), a quoted
    phrase that OCR finds nowhere is answered with the convention's null location, read as a decline."""
    from PIL import Image

    from pointfail.generated.baselines.ocr import point_to
    from pointfail.families import get_family

    blank = Image.new("RGB", (320, 200), "white")
    fam = get_family("ocr")
    ans = point_to(blank, 'Click the cell that shows "Paid".', task="point", words=[], may_decline=True)
    assert ans.text == '{"point": null}' and ans.rule == "not_found"
    assert fam.parse(ans.text, (320, 200)).reason == "declined"
    box = point_to(blank, 'Click the cell that shows "Paid".', task="box", words=[], may_decline=True)
    assert box.text == '{"bbox": null}'
    # without the decline sentence the baseline says in words that it found nothing
    plain = point_to(blank, 'Click the cell that shows "Paid".', task="point", words=[])
    assert plain.text.startswith("ocr baseline: quoted text not found")
