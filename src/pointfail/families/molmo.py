"""Molmo (Molmo-7B-D, MolmoE-1B): point tags in percent of the original image.

Convention (Molmo/PixMo paper, arXiv:2409.17146, and the Molmo model cards): pointing answers are
``<point x="61.5" y="40.2" alt="mug">mug</point>`` for one point,
``<points x1="…" y1="…" x2="…" y2="…" alt="…">…</points>`` for several, and ``Click(x, y)`` for
click-style prompts. ``x``/``y`` are percentages (0–100) of the original image's width/height, one
decimal. Prompt phrasing: "Point to …" (the PixMo-Points instruction). Molmo has no box syntax; for
a box task it is still asked to point, and its points give no box.

Declining: the PixMo-Points data (Molmo paper) answers a pointing query whose object is missing
with "There are none."; when the referent may be absent the prompt says so ("If there are none,
answer: There are none."), and the reply parses as ``reason == "declined"``.

Molmo's own evaluator (``extract_points`` in the authors' code) also reads a bare percent tuple
``(18.6, 30.2)``; pointfail reads one too when the reply has no point tag and no ``Click(…)``
(flag ``bare_tuple``, after-prose rule of :func:`~pointfail.families._text.read_bare_groups`).
Worked case: ``(18.6, 30.2)`` on a 640x480 image is ``(0.186 * 640, 0.302 * 480) = (119.04, 144.96)``
px.
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import Item, read_bare_groups, read_point_tags
from pointfail.frames import Frame

_CLICK = re.compile(r"\bclick\(([^,()]++),([^,()]++)\)", re.I)
"""``Click(x, y)``; each argument runs possessively to the next ``,`` / ``)`` and is stripped in code
(the lazy ``\\s*([^,()]+?)\\s*`` form rescanned a long run of spaces from every position)."""


class Molmo(Family):
    """Molmo v1 point tags, percent frame."""

    name = "molmo"
    image_requirements = {
        "torchvision": (
            "the released checkpoints' remote image preprocessing (image_preprocessing_molmo.py) imports torchvision",
            ("allenai/Molmo-7B-D-0924", "allenai/MolmoE-1B-0924", "allenai/Molmo-7B-O-0924", "allenai/Molmo-72B-0924")),
        # run here on the released code (artifact.md, "Molmo v1's released remote code"): resize_and_pad
        # calls tf.image.resize unconditionally, so the first sample fails without TensorFlow
        "tensorflow-cpu": (
            "the released checkpoints' remote image preprocessing (image_preprocessing_molmo.py, resize_and_pad) "
            "imports tensorflow",
            ("allenai/Molmo-7B-D-0924", "allenai/MolmoE-1B-0924", "allenai/Molmo-7B-O-0924", "allenai/Molmo-72B-0924")),
    }
    lineage = ("molmo", "olmo", "qwen")  # Molmo-7B-D is built on Qwen2-7B, MolmoE-1B on OLMoE-1B-7B, Molmo-7B-O on OLMo-7B (Molmo paper)
    frame = Frame("percent_100", "percent", 100, "xy", "0-100 percent of the original image (Molmo point tags)")
    checkpoints = ("allenai/Molmo-7B-D-0924", "allenai/MolmoE-1B-0924")
    backend = "pointfail.running.backends.molmo"
    point_prompt = "{point_to}"
    box_prompt = "{point_to}"
    # Molmo's pointing data answers a query whose object is missing with "There are none."
    decline_prompt = 'If there are none, answer: There are none.'
    decline_answer = "There are none."
    decimals = 1

    def extract(self, text, diag):
        items = read_point_tags(text, diag)
        for m in _CLICK.finditer(text):
            items.append(Item("point", [m.group(1).strip() or m.group(1), m.group(2).strip() or m.group(2)],
                              m.start(), m.group(0)))
        if not items:
            items = read_bare_groups(text, diag, "(", ")", ((2, "point"),))
            if items:
                diag.flag("bare_tuple")
        return items

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f'<point x="{self._num(fx)}" y="{self._num(fy)}" alt="target">target</point>'


FAMILY = Molmo()
