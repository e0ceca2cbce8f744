"""``json_pixels``: the PointerBench answer convention for API and frontier models.

Convention (PointerBench paper, Appendix "Prompt", in ``shared/seeds/pointerbench-paper.txt``): the
model receives the benchmark's fixed system prompt (:data:`SYSTEM_PROMPT`, verbatim) and answers
``{"point": [x, y]}`` for point tasks and ``{"bbox": [x0, y0, x1, y1]}`` for bounding-box tasks, in
absolute pixel coordinates of the original image, origin top-left. The system prompt names the
1024x768 PointerBench frame; for other images the coordinates are still read as pixels of the
original image. A reply in another frame (e.g. 0–1000) is *not* rescaled: that is the paper's
coordinate-frame compliance failure, scored as given (a separate diagnostic may report other
readings).

Declining (absent referents, :mod:`pointfail.families._decline`): when the suite may hold absent
referents the prompt adds 'If the target is not in the screenshot, return JSON like {"point": null}
(bounding-box tasks: {"bbox": null})', the convention's own keys with a null location; such a reply
parses as ``reason == "declined"``.
"""

from __future__ import annotations

from typing import ClassVar, Optional

from pointfail.families import Family
from pointfail.families._text import read_keyed_lists
from pointfail.frames import Frame

SYSTEM_PROMPT = (
    "You are evaluating PointerBench, a GUI grounding benchmark. You will receive one 1024x768 screenshot "
    "and one task instruction. Use absolute pixel coordinates with origin at the top-left of the image. "
    "Do not return normalized coordinates. Do not crop or resize the coordinate frame. For point tasks, "
    'return JSON like {"point": [x, y]}. For bounding-box tasks, return JSON like {"bbox": [x0, y0, x1, y1]}.'
)
"""PointerBench's system prompt, verbatim (pointerbench-paper.txt, Appendix "Prompt")."""

KEYS = {"point": "point", "bbox": "box"}


class JsonPixels(Family):
    """PointerBench JSON in absolute pixels of the original image."""

    name = "json_pixels"
    frame = Frame("pixels_original", "pixels_original", None, "xy", "absolute pixels of the original image")
    checkpoints: ClassVar[tuple[str, ...]] = ()
    backend: ClassVar[Optional[str]] = None
    system_prompt: ClassVar[Optional[str]] = SYSTEM_PROMPT
    point_prompt = SYSTEM_PROMPT + "\n\nPoint task: {core}"
    box_prompt = SYSTEM_PROMPT + "\n\nBounding-box task: {core}"
    decimals = 0
    # the convention's own null: the same JSON keys with no location
    decline_prompt = 'If the target is not in the screenshot, return JSON like {"point": null} (bounding-box tasks: {"bbox": null}).'
    decline_answer = '{"point": null}'

    def extract(self, text, diag):
        return read_keyed_lists(text, KEYS, diag)

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f'{{"point": [{fx}, {fy}]}}'

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return f'{{"bbox": [{a}, {b}, {c}, {d}]}}'


FAMILY = JsonPixels()
