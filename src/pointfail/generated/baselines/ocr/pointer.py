"""The pointer: the order the instruction rules are tried in, and the answer in the json_pixels convention."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from pointfail.generated.baselines.ocr.color import COLOR_WORDS, color_point
from pointfail.generated.baselines.ocr.instruction import quoted, unquoted
from pointfail.generated.baselines.ocr.sheet import SHEET_HINT, find_sheet, spreadsheet_point
from pointfail.generated.baselines.ocr.text import pad_box, text_target
from pointfail.generated.baselines.ocr.words import Word, read_words

__all__ = ["DEFAULT_LANGS", "OcrAnswer", "point_to"]

DEFAULT_LANGS = "eng+deu+fra+spa+ita+nld"
"""Every language pack the baseline may read (the PointerBench languages)."""


@dataclass
class OcrAnswer:
    """The baseline's answer: ``point`` / ``box`` in pixels of the original image (``None`` when not
    found), the rule used, and ``text``: the json_pixels reply (or a sentence with no coordinates)."""

    point: Optional[tuple[float, float]]
    box: Optional[tuple[float, float, float, float]]
    rule: str
    text: str


def _r(v: float) -> float:
    return round(float(v), 1)


def point_to(image: Any, instruction: str, task: str = "point", words: Optional[list[Word]] = None,
             langs: str = DEFAULT_LANGS, cache: Optional[dict[str, Any]] = None, *,
             may_decline: bool = False) -> OcrAnswer:
    """Answer ``instruction`` on ``image`` (PIL) with OCR and the rules in :mod:`pointfail.generated.baselines.ocr`.

    ``instruction``: the core instruction (the benchmark's words without other models' answer-format
    directives: ``records.Prompt.core``, which the worker passes; never a family's prompt).
    Returns an :class:`OcrAnswer` whose ``text`` is ``{"point": [x, y]}`` (point tasks) or
    ``{"bbox": [x0, y0, x1, y1]}`` (box tasks), pixels of the original image, one decimal; when a
    quoted phrase is not found and ``may_decline`` (the prompt told the model how to decline: the
    referent may be absent), the json_pixels convention's decline ``{"point": null}`` /
    ``{"bbox": null}``; otherwise ``"ocr baseline: <why>"`` with no coordinates. ``words``: OCR words
    of ``image`` when already read; ``langs``: every language the baseline may read (``eng`` first,
    the rest when a quoted phrase is not found); ``cache``: a dict reused across calls on the same
    image (keeps the words and the spreadsheet grid; the OCR cache of
    :mod:`~pointfail.generated.baselines.ocr.words` works without it).
    """
    instruction = instruction.strip()
    cache = {} if cache is None else cache
    first = langs.split("+")[0]
    if words is None:
        words = cache.get("words")
    if words is None:
        words = read_words(image, langs=first)
    cache["words"] = words
    unq = unquoted(instruction)
    grid_answer = _grid_answer(image, instruction, unq, words, cache, first, task)
    if grid_answer is not None:
        return grid_answer
    if not quoted(instruction):
        instruction = _quote_value(instruction)
    tt = text_target(instruction, words, image)
    if tt is None and quoted(instruction) and image is not None and langs != first:
        more = cache.get("words_all")
        if more is None:
            more = cache["words_all"] = read_words(image, langs=langs)
        tt = text_target(instruction, more, image)
    if tt is not None:
        return _text_answer(tt, unq, words, task)
    if quoted(instruction):
        if may_decline:  # the prompt says how to decline: the json_pixels convention's null location
            return OcrAnswer(None, None, "not_found", json.dumps({"bbox" if task == "box" else "point": None}))
        return OcrAnswer(None, None, "not_found", "ocr baseline: quoted text not found in the screenshot")
    return OcrAnswer(None, None, "unreadable", "ocr baseline: no rule reads this instruction")


def _grid_answer(image: Any, instruction: str, unq: str, words: list[Word], cache: dict[str, Any], first: str,
                 task: str) -> Optional[OcrAnswer]:
    """The spreadsheet rules (a cell, header or resize handle) and the colour-fill rule, on the grid
    read once per image (kept in ``cache["grid"]``); ``None`` when neither applies."""
    grid = None
    if image is not None and (SHEET_HINT.search(unq) or re.search(COLOR_WORDS, unq.lower())):
        if "grid" not in cache:
            cache["grid"] = find_sheet(image, words, first)
        grid = cache["grid"]
    if grid is not None and SHEET_HINT.search(unq):
        sp = spreadsheet_point(instruction, grid)
        if sp is not None:
            x, y, rule, box = sp
            return _answer((x, y), box, rule, task)
    if image is not None and re.search(COLOR_WORDS, unq.lower()) and not quoted(instruction):
        cp = color_point(image, instruction, grid)
        if cp is not None:
            return _answer(cp[:2], None, cp[2], task)
    return None


def _quote_value(instruction: str) -> str:
    """An unquoted value ("the cell containing 2428") put in quotes, so the text rules look for it."""
    m = re.search(r"\b(?:containing|contains|that says|showing|shows|displays|displaying|reads|with (?:the )?"
                  r"(?:value|text))\s+([^\s,;]+?)(?=[\s,;]|[.](?:\s|$)|$)", instruction)
    if m:
        return f'{instruction[:m.start(1)]}"{m.group(1)}"{instruction[m.end(1):]}'
    return instruction


def _text_answer(tt: tuple[Any, Any, str], unq: str, words: list[Word], task: str) -> OcrAnswer:
    """The answer for a text rule's ``(box, point, rule)``; for box tasks, line and paragraph boxes are
    padded by 0.22 and heading, link, button, code and paragraph phrase boxes by 0.3 (:func:`pad_box`)."""
    box, pt, rule = tt
    if task == "box" and rule in ("line_box", "paragraph_box"):
        box = pad_box(box, rule, words, 0.22)
    elif task == "box" and rule == "phrase_center" and re.search(r"\b(heading|title|link|button|code|paragraph)\b",
                                                                  unq.lower()):
        box = pad_box(box, rule, words, 0.3)
    return _answer(pt, box, rule, task)


def _answer(pt, box, rule: str, task: str) -> OcrAnswer:
    if task == "box" and box is not None:
        text = json.dumps({"bbox": [_r(v) for v in box]})
    else:
        text = json.dumps({"point": [_r(pt[0]), _r(pt[1])]})
    return OcrAnswer((float(pt[0]), float(pt[1])), box, rule, text)
