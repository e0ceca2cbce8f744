"""InternVL3: the InternVL grounding template, ``<ref>…</ref><box>[[x1, y1, x2, y2]]</box>``, 0–1000.

Convention (InternVL2.5/InternVL3 model cards and grounding docs): a referring-expression query is
``Please provide the bounding box coordinate of the region this sentence describes: <ref>…</ref>``
and the answer is ``<ref>…</ref><box>[[x1, y1, x2, y2]]</box>`` (several boxes as
``[[…], […]]``), coordinates on a 0–1000 grid of the image. Points are written ``[[x, y]]``. The study
asks InternVL3 with this grounding template for point tasks too ("a grounding template for
InternVL3", pointfail-study.txt, Stage 1), so its box's centre is the point (flag ``box_center``).
Bare ``[[x, y]]`` lists outside ``<box>`` tags are read with the after-prose rule.
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import item_from_tokens, read_bare_groups, split_tokens, tag_spans
from pointfail.frames import Frame

_GROUP = re.compile(r"\[([^\[\]]*+)\]")
TEMPLATE = "Please provide the bounding box coordinate of the region this sentence describes: <ref>{core}</ref>"


class InternVL3(Family):
    """InternVL3 <box>[[...]]</box> answers, 0-1000 grid."""

    name = "internvl3"
    lineage = ("internvl", "qwen")  # InternVL3 pairs InternViT with Qwen2.5 language models (InternVL3 report)
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid of the image (InternVL <box>)")
    checkpoints = ("OpenGVLab/InternVL3-1B", "OpenGVLab/InternVL3-2B", "OpenGVLab/InternVL3-8B")
    backend = "pointfail.running.backends.internvl3"
    point_prompt = TEMPLATE
    box_prompt = TEMPLATE
    decimals = 0

    def extract(self, text, diag):
        items = []
        for _, c0, c1, _ in tag_spans(text, "<box>", "</box>"):  # linear, unlike a lazy <box>(.*?)</box>
            for g in _GROUP.finditer(text, c0, c1):
                it = item_from_tokens(split_tokens(g.group(1)), g.start(), g.group(0), diag)
                if it:
                    items.append(it)
        if not items:
            items = read_bare_groups(text, diag)
        return items

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"<ref>target</ref>[[{fx}, {fy}]]"

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return f"<ref>target</ref><box>[[{a}, {b}, {c}, {d}]]</box>"


FAMILY = InternVL3()
