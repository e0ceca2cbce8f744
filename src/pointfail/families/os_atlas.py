"""OS-Atlas: ``<|box_start|>(x1,y1),(x2,y2)<|box_end|>`` on a 0–1000 grid.

Convention (OS-Atlas paper, arXiv:2410.23218, and the OS-Atlas-Base model cards): grounding answers
are ``<|object_ref_start|>label<|object_ref_end|><|box_start|>(x1,y1),(x2,y2)<|box_end|>`` with
coordinates scaled to 0–1000 (the Qwen2-VL grounding format); a single ``(x,y)`` inside the box tags is
a point. For a point task the box centre is the point. Prompt: the OS-Atlas-Base grounding prompt.
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import item_from_tokens, split_tokens
from pointfail.frames import Frame

_BOX = re.compile(r"<\|box_start\|>(.*?)<\|box_end\|>", re.S)
PROMPT = 'In this UI screenshot, what is the position of the element corresponding to the command "{core}" (with bbox)?'


class OSAtlas(Family):
    """OS-Atlas box tags, 0-1000 grid."""

    name = "os_atlas"
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid of the screenshot (OS-Atlas box tags)")
    checkpoints = ("OS-Copilot/OS-Atlas-Base-4B", "OS-Copilot/OS-Atlas-Base-7B")
    backend = None
    point_prompt = PROMPT
    box_prompt = PROMPT

    def extract(self, text, diag):
        items = []
        for m in _BOX.finditer(text):
            toks = split_tokens(re.sub(r"[()\[\]]", " ", m.group(1)).replace(" ,", ","))
            it = item_from_tokens(toks, m.start(), m.group(0), diag)
            if it:
                items.append(it)
        return items

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"<|object_ref_start|>target<|object_ref_end|><|box_start|>({fx},{fy})<|box_end|>"

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return f"<|object_ref_start|>target<|object_ref_end|><|box_start|>({a},{b}),({c},{d})<|box_end|>"


FAMILY = OSAtlas()
