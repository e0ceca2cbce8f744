"""ShowUI: ``[x, y]`` as 0–1 fractions of the screenshot.

Convention (ShowUI paper, arXiv:2411.17465, and the ShowUI-2B model card): the grounding system prompt
asks for "a clickable location [x, y] for an element, which is a relative coordinate on the
screenshot, scaled from 0 to 1", and the model answers e.g. ``[0.73, 0.21]`` (two decimals). Read with
the bare-list after-prose rule; a four-number list is a box.
"""

from __future__ import annotations

from pointfail.families import Family
from pointfail.families._text import read_bare_groups
from pointfail.frames import Frame

SYSTEM = (
    "Based on the screenshot of the page, I give a text description and you give its corresponding location. "
    "The coordinate represents a clickable location [x, y] for an element, which is a relative coordinate on "
    "the screenshot, scaled from 0 to 1."
)


class ShowUI(Family):
    """ShowUI [x, y] in 0-1."""

    name = "showui"
    lineage = ("qwen", "showui")  # ShowUI is built on Qwen2-VL
    frame = Frame("unit", "unit", 1, "xy", "0-1 fractions of the screenshot (ShowUI)")
    checkpoints = ("showlab/ShowUI-2B",)
    backend = None
    system_prompt = SYSTEM
    point_prompt = SYSTEM + "\n{core}"
    box_prompt = SYSTEM + "\n{core}"
    decimals = 2

    def extract(self, text, diag):
        return read_bare_groups(text, diag)

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"[{self._num(fx)}, {self._num(fy)}]"

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return f"[{self._num(a)}, {self._num(b)}, {self._num(c)}, {self._num(d)}]"


FAMILY = ShowUI()
