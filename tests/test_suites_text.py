"""The text suite: tokenization, determinism, glyph-exact targets per category, uniqueness."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest

from pointfail.generated.suites import corpus, text
from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.painter import TextPainter
from pointfail.generated.suites.rows import build_row, sample_rng
from pointfail.generated.suites.text import CATEGORY_WEIGHTS, PUNCT_NAMES, split_token

PAINTER = TextPainter()
QUOTED = re.compile(r"[\"'`«]([^\"'`»]+)[\"'`»]")


@pytest.mark.parametrize("tok,parts", [
    ("Friday,", ("", "Friday", ",")),
    ("¿Puedes", ("¿", "Puedes", "")),
    ("l'imprimante", ("", "l'imprimante", "")),
    ("dix-huit", ("", "dix-huit", "")),
    ("errori?", ("", "errori", "?")),
    ("(2026).", ("(", "2026", ").")),
    ("...", ("...", "", "")),
])
def test_split_token(tok, parts):
    assert split_token(tok) == parts
    assert "".join(split_token(tok)) == tok


def test_corpus_language_mix_and_sentences():
    assert corpus.LANGUAGES == ("en", "de", "fr", "es", "it", "nl")
    w = dict(zip(corpus.LANGUAGES, corpus.LANGUAGE_WEIGHTS))
    assert w["en"] / sum(corpus.LANGUAGE_WEIGHTS) == 0.5  # 5 / 10
    assert all(w[lang] / sum(corpus.LANGUAGE_WEIGHTS) == 0.1 for lang in corpus.LANGUAGES[1:])
    for lang, sents in corpus.SENTENCES.items():
        assert len(sents) >= 15 and len(set(sents)) == len(sents)
        assert all(s[-1] in ".!?" for s in sents), lang


def _sample(category, index=0, seed=21):
    for attempt in range(60):
        try:
            spec = text.make_sample(sample_rng("text-test", seed, index, attempt), index, PAINTER, category=category)
        except SuiteError:
            continue
        return build_row(f"pft_{index:04d}", f"{index:04d}", spec), spec
    raise AssertionError(f"no {category} sample in 60 attempts")


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    out = tmp_path_factory.mktemp("text") / "s"
    return out, text.generate(out, n=6, seed=9)


def test_language_mix_is_exact():
    """The suite's languages follow the schedule: of 20 samples, 20 * 5/10 = 10 English and
    20 * 1/10 = 2 of each other language."""
    from pointfail.generated.suites.rows import category_schedule

    langs = category_schedule(dict(zip(corpus.LANGUAGES, corpus.LANGUAGE_WEIGHTS)), 20, "text-language", 1)
    assert sorted(langs) == sorted(["en"] * 10 + ["de", "fr", "es", "it", "nl"] * 2)


def test_same_seed_same_bytes(suite, tmp_path):
    out, m = suite
    again = text.generate(tmp_path / "again", n=6, seed=9)
    assert again["files"] == m["files"]
    for rel in m["files"]:
        assert (out / rel).read_bytes() == (tmp_path / "again" / rel).read_bytes()
    rows = [json.loads(x) for x in (out / "data/test/metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    # 6 samples: 6 * 5/10 = 3 English, 0.6 for each other language -> three of them get one
    assert sum(r["language"] == "en" for r in rows) == 3
    for r in rows:
        sg = json.loads((out / "data/test" / r["scene_graph"]).read_text(encoding="utf-8"))
        assert {e["id"]: e for e in sg["elements"]}[r["target_id"]]["box"] == r["bbox"]
        assert r["surface"] in text.SURFACES and r["difficulty"] in ("easy", "medium", "hard")
        assert {"word", "char", "line", "caret", "paragraph"} <= {e["category"] for e in sg["elements"]}


@pytest.mark.parametrize("category", sorted(CATEGORY_WEIGHTS))
def test_every_category_names_exactly_its_target(category):
    row, spec = _sample(category)
    _check_target(category, row, spec)


def test_repeated_words_are_named_by_occurrence_or_colour():
    """Over several pages, some word targets need a qualifier; each still resolves to its target."""
    kinds = set()
    for i in range(12):
        for category in ("word_center", "char_center", "caret_before_word"):
            row, spec = _sample(category, index=i, seed=5)
            _check_target(category, row, spec)
            m = re.search(r"the (first|last) [\"'`«]|[\"'`»] in (" + "|".join(text.INK_COLORS) + ")", row["instruction"])
            if m:
                kinds.add(m.group(1) or "colour")
    assert {"first", "last"} <= kinds


def test_coloured_words_are_drawn_in_their_ink():
    for i in range(30):
        row, spec = _sample("word_center", index=i, seed=8)
        styled = [e for e in spec.scene.elements if e.category == "word" and e.style]
        if styled:
            break
    else:
        raise AssertionError("no coloured word in 30 pages")
    dark = row["surface"] == "dark_notes"
    img = spec.scene.image
    for e in styled:
        ink = text.INK_COLORS[e.style][1 if dark else 0]
        x0, y0, x1, y1 = e.box
        colours = {img.getpixel((x, y)) for x in range(x0, x1) for y in range(y0, y1)}
        assert ink in colours, (e.id, e.style)


def _check_target(category, row, spec):
    els = spec.scene.by_id()
    t = els[row["target_id"]]
    instr = row["instruction"]
    quoted = QUOTED.findall(instr)
    words = [e for e in spec.scene.elements if e.category == "word"]

    def fold(s):
        return unicodedata.normalize("NFC", s).casefold()

    if CATEGORY_WEIGHTS[category][0] == "bbox":
        assert row["answer_type"] == "bbox"
        assert row["eval"] == {"type": "iou", "bbox": row["bbox"], "min_coverage": 0.9, "min_precision": 0.7}
    else:
        assert row["answer_type"] == "point" and row["eval"]["type"] == "point_in_bbox"
    def order(e):
        return tuple(int(v) for v in e.id.split(":")[1].split("."))

    def referenced(word_text):
        """The word element the instruction names: the only one with that text, or the first/last
        in reading order, or the only one in the named ink colour."""
        same = sorted((w for w in words if fold(w.text) == fold(word_text)), key=order)
        m = re.search(r"the (first|last) [\"'`«]", instr)
        if m:
            return same[0] if m.group(1) == "first" else same[-1]
        m = re.search(r"[\"'`»] in (" + "|".join(text.INK_COLORS) + r")\b", instr)
        if m:
            styled = [w for w in same if w.style == m.group(1)]
            assert len(styled) == 1
            return styled[0]
        assert len(same) == 1, [w.id for w in same]
        return same[0]

    if category in ("word_center", "word_bbox"):
        assert t.category == "word" and t is referenced(quoted[0])
    elif category in ("char_center", "char_bbox"):
        ch, word = quoted[0], quoted[1]
        assert t.category == "char" and t.text == ch and word.count(ch) == 1
        w = referenced(word)
        assert w.box[0] <= t.box[0] and t.box[2] <= w.box[2]
        assert order(t)[0] == order(w)[0]
    elif category == "punctuation":
        assert t.category == "punctuation" and PUNCT_NAMES[t.text] in instr
        w = referenced(quoted[0])
        assert order(t)[0] == order(w)[0] and t.box[0] >= w.box[2] - 1  # right after the word's ink
    elif category == "caret_between_chars":
        a, b, word = quoted
        w = referenced(word)
        line, i = map(int, row["target_id"].split(":")[1].split("."))
        left, right = els[f"char:{line}.{i - 1}"], els[f"char:{line}.{i}"]
        assert (left.text, right.text) == (a, b) and line == order(w)[0]
        assert w.box[0] <= left.box[0] and right.box[2] <= w.box[2]
        cx = (t.box[0] + t.box[2]) / 2
        assert left.box[0] < cx < right.box[2]
    elif category in ("caret_after_word", "caret_before_word", "sentence_boundary"):
        w = referenced(quoted[0])
        line, i = map(int, row["target_id"].split(":")[1].split("."))
        assert line == order(w)[0]
        if category == "sentence_boundary":
            assert els[f"char:{line}.{i - 1}"].text in ".!?" and t.box[0] >= w.box[2] - 3
        else:
            edge = w.box[2] if category == "caret_after_word" else w.box[0]
            assert t.box[0] <= edge <= t.box[2] or abs((t.box[0] + t.box[2]) / 2 - edge) <= 3, (t.box, edge)
    elif category == "between_words":
        a = referenced(quoted[0])
        line, idx = order(a)
        b = els[f"word:{line}.{idx + 1}"]
        assert b.text == quoted[1]
        assert t.category == "space" and t.box[0] == a.box[2] and t.box[2] == b.box[0]
    elif category in ("line_start", "line_end", "line_bbox"):
        line = int(re.search(r":(\d+)", row["target_id"]).group(1))
        ln = els[f"line:{line}"]
        assert ln.text.startswith(quoted[0])
        assert sum(1 for e in spec.scene.elements if e.category == "line" and e.text.startswith(quoted[0])) == 1
        if category == "line_start":
            assert row["target_id"] == f"caret:{line}.0" and t.box[0] < ln.box[0] < t.box[2]
        elif category == "line_end":
            assert row["target_id"] == f"caret:{line}.{len(ln.text)}" and t.box[0] < ln.box[2] <= t.box[2]
        else:
            assert t is ln
    elif category in ("paragraph_start", "paragraph_bbox", "paragraph_end"):
        assert t.category in ("caret", "paragraph")


def test_caret_boxes_never_overlap_within_a_line():
    _, spec = _sample("caret_between_chars", index=3)
    by_line: dict[int, list] = {}
    for e in spec.scene.elements:
        if e.category == "caret":
            line, i = map(int, e.id.split(":")[1].split("."))
            by_line.setdefault(line, []).append((i, e.box))
    for carets in by_line.values():
        carets.sort()
        for (_, a), (_, b) in zip(carets, carets[1:]):
            assert a[2] <= b[0], (a, b)


def test_glyph_ink_is_inside_its_box():
    """Every pixel that differs from the page background inside a line's box belongs to a glyph box
    of that line: no ink is drawn outside the recorded geometry."""
    seen = set()
    for index in range(40):  # until every surface (background) has been checked once
        row, spec = _sample("word_center", index=index)
        if row["surface"] in seen:
            continue
        seen.add(row["surface"])
        _check_no_stray_ink(spec, text.SURFACES[row["surface"]].bg)
        if seen == set(text.SURFACES):
            break
    assert seen == set(text.SURFACES)


def _check_no_stray_ink(spec, bg):
    img = spec.scene.image
    lines = [e for e in spec.scene.elements if e.category == "line"]
    ln = lines[len(lines) // 2]
    k = ln.id.split(":")[1]
    boxes = [e.box for e in spec.scene.elements if e.category in ("char", "punctuation") and e.id.startswith(f"char:{k}.")]
    x0, y0, x1, y1 = ln.box
    stray = 0
    px = img.load()
    for y in range(y0, y1):
        for x in range(x0, x1):
            if px[x, y] != bg and not any(b[0] <= x < b[2] and b[1] <= y < b[3] for b in boxes):
                stray += 1
    assert stray == 0


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=12).filter(lambda t: " " not in t))
def test_split_token_invariants(tok):
    lead, core, trail = split_token(tok)
    assert lead + core + trail == tok

    def alnum(ch):
        return unicodedata.category(ch)[0] in "LN"

    if core:
        assert alnum(core[0]) and alnum(core[-1])
    assert not any(alnum(c) for c in lead) and not any(alnum(c) for c in trail)
