"""UI-TARS (v1): ``click(start_box='(x,y)')`` actions on a 0–1000 grid.

Convention (UI-TARS paper, arXiv:2501.12326, and the UI-TARS v1 README): actions are written
``Action: click(start_box='(x1,y1)')`` (optionally wrapped in ``<|box_start|>…<|box_end|>``), with
coordinates relative to the image scaled to 0–1000; a four-number ``start_box`` is a box (its centre
is the point). ``end_box`` of drag actions is not a target and is ignored. ``<point>x y</point>``
(later UI-TARS/Seed releases) is read too. Only the action counts; the ``Thought:`` prose before it is
not scanned for numbers. Prompt: the UI-TARS grounding prompt ("Output only the coordinate of one
point in your response. What element matches the following task: …").

That short grounding prompt asks for a coordinate, not an action, and clients that send it (GUI
grounding evaluations of UI-TARS) get, and read, a bare ``(x,y)``; so when the reply holds no action,
a bare ``(x,y)`` (or ``(x1,y1,x2,y2)``) is read in the same frame (flag ``bare_tuple``), with the
after-prose rule of :func:`~pointfail.families._text.read_bare_groups`. Worked case (UI-TARS v1,
0–1000 grid): ``(235,512)`` on a 1920x1080 screenshot is ``(0.235 * 1920, 0.512 * 1080) =
(451.2, 552.96)`` px. The action forms agree with ByteDance's ``ui-tars`` package
(``ui_tars.action_parser.parse_action_to_structure_output``; tested against it).
"""

from __future__ import annotations

import re
from typing import ClassVar

from pointfail.families import Family
from pointfail.families._text import item_from_tokens, read_bare_groups, split_tokens
from pointfail.frames import Frame

# possessive quantifiers throughout: no run of spaces or digits is rescanned (linear time)
_START = re.compile(
    r"start_box\s*+=\s*+[\"']?\s*+(?:<\|box_start\|>)?\s*+[\(\[]([^()\[\]]*+)[\)\]]"
    r"(?:\s*+,\s*+[\(\[]([^()\[\]]*+)[\)\]])?",
    re.I,
)
_POINT = re.compile(r"<point>([^<>]*+)</point>", re.I)
_END = re.compile(r"end_box\s*+=\s*+[\"']?[^\"')]*+\)?", re.I)

GROUNDING_PROMPT = "Output only the coordinate of one point in your response. What element matches the following task: {core}"


def read_actions(text, diag):
    """``start_box='(x,y)'`` / ``'(x1,y1,x2,y2)'`` / ``'(x1,y1),(x2,y2)'`` and ``<point>x y</point>``."""
    items = []
    for m in _START.finditer(text):
        toks = split_tokens(m.group(1)) + (split_tokens(m.group(2)) if m.group(2) else [])
        it = item_from_tokens(toks, m.start(), m.group(0), diag)
        if it:
            items.append(it)
    for m in _POINT.finditer(text):
        toks = split_tokens(m.group(1).strip().replace("(", " ").replace(")", " "))
        it = item_from_tokens(toks, m.start(), m.group(0), diag, ((2, "point"),))
        if it:
            items.append(it)
    for m in _END.finditer(text):
        diag.ignore("end_box", m.group(0))
    return items


class UITars(Family):
    """UI-TARS v1 actions, 0-1000 grid."""

    name = "ui_tars"
    lineage = ("qwen", "ui-tars")  # UI-TARS is fine-tuned from Qwen2-VL / Qwen2.5-VL
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid of the screenshot (UI-TARS v1 start_box)")
    checkpoints: ClassVar[tuple[str, ...]] = ("ByteDance-Seed/UI-TARS-2B-SFT", "ByteDance-Seed/UI-TARS-7B-DPO", "ByteDance-Seed/UI-TARS-72B-DPO")
    backend = None
    point_prompt = GROUNDING_PROMPT
    box_prompt = GROUNDING_PROMPT

    def extract(self, text, diag):
        """The action (:func:`read_actions`); with none, a bare ``(x,y)`` (flag ``bare_tuple``)."""
        items = read_actions(text, diag)
        if not items:
            items = read_bare_groups(text, diag, "(", ")")
            if items:
                diag.flag("bare_tuple")
        return items

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"Thought: The target is here.\nAction: click(start_box='<|box_start|>({fx},{fy})<|box_end|>')"

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return f"Action: click(start_box='({a},{b},{c},{d})')"


FAMILY = UITars()
