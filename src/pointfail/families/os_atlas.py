"""OS-Atlas: ``<|box_start|>(x1,y1),(x2,y2)<|box_end|>`` (Base-7B) or ``[[x,y]]`` (Base-4B), 0–1000 grid.

Convention (OS-Atlas paper, arXiv:2410.23218; the OS-Atlas README and OS-Atlas-Base model cards: "the
model outputs are normalized to relative coordinates within a 0-1000 range (either a center point or
a bounding box defined by top-left and bottom-right coordinates)"). The two base checkpoints write
them in their base models' grounding syntax:

* OS-Atlas-Base-7B (Qwen2-VL): ``<|object_ref_start|>label<|object_ref_end|><|box_start|>(x1,y1),(x2,y2)
  <|box_end|>``; a single ``(x,y)`` inside the box tags is a point.
* OS-Atlas-Base-4B (InternVL2): ``[[x,y]]`` for a point, ``[[x1,y1,x2,y2]]`` for a box (InternVL2's
  grounding lists, optionally inside ``<box>…</box>`` after a ``<ref>…</ref>`` label). These are read
  when the reply has no box tags (flag ``bare_list``). Worked case: ``[[250,600]]`` on a 1920x1080
  screenshot is ``(250 / 1000 * 1920, 600 / 1000 * 1080) = (480, 648)`` px.

For a point task a box's centre is the point. Prompt: the OS-Atlas-Base-7B grounding prompt (the
README's inference example), sent to both checkpoints.
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import item_from_tokens, read_bare_groups, split_tokens, tag_spans
from pointfail.frames import Frame

_BRACKETS = re.compile(r"[()\[\]]")
PROMPT = 'In this UI screenshot, what is the position of the element corresponding to the command "{core}" (with bbox)?'


class OSAtlas(Family):
    """OS-Atlas box tags (Base-7B) or InternVL2 lists (Base-4B), 0-1000 grid."""

    name = "os_atlas"
    lineage = ("os-atlas", "qwen")  # OS-Atlas Pro is built on Qwen2-VL
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid of the screenshot (OS-Atlas box tags)")
    checkpoints = ("OS-Copilot/OS-Atlas-Base-4B", "OS-Copilot/OS-Atlas-Base-7B")
    backend = None
    point_prompt = PROMPT
    box_prompt = PROMPT

    def extract(self, text, diag):
        items = []
        for start, c0, c1, end in tag_spans(text, "<|box_start|>", "<|box_end|>", ignore_case=False):
            toks = split_tokens(_BRACKETS.sub(" ", text[c0:c1]).replace(" ,", ","))
            it = item_from_tokens(toks, start, text[start:end], diag)
            if it:
                items.append(it)
        if not items:
            items = read_bare_groups(text, diag)
            if items:
                diag.flag("bare_list")
        return items

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"<|object_ref_start|>target<|object_ref_end|><|box_start|>({fx},{fy})<|box_end|>"

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return f"<|object_ref_start|>target<|object_ref_end|><|box_start|>({a},{b}),({c},{d})<|box_end|>"


FAMILY = OSAtlas()
