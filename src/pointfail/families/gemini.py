"""Gemini: ``[y, x]`` points and ``box_2d`` ``[ymin, xmin, ymax, xmax]``, 0–1000, y first.

Convention (Gemini API documentation on object detection and pointing, and the Gemini Robotics-ER
docs): points are JSON ``[{"point": [y, x], "label": …}]`` and boxes
``[{"box_2d": [ymin, xmin, ymax, xmax], "label": …}]``, normalized to 0–1000, y before x. Bare
``[y, x]`` lists without a key are read too (after-prose rule).

Declining: the same JSON list with nothing in it (``[]``); when the referent may be absent the
prompt asks for it, and it parses as ``reason == "declined"``.
"""

from __future__ import annotations

from pointfail.families import Family
from pointfail.families._text import read_bare_groups, read_keyed_lists
from pointfail.frames import Frame

KEYS = {"point": "point", "box_2d": "box"}


class Gemini(Family):
    """Gemini JSON, 0-1000 grid, y first."""

    name = "gemini"
    lineage = ("gemini", "gemma")  # Gemma models derive from Gemini research and technology (Gemma reports)
    frame = Frame("grid_1000_yx", "grid", 1000, "yx", "0-1000 grid, y before x (Gemini point / box_2d)")
    checkpoints = ()
    backend = None
    point_prompt = (
        '{point_to}. The answer should follow the json format: [{"point": <point>, "label": <label1>}, ...]. '
        "The points are in [y, x] format normalized to 0-1000."
    )
    box_prompt = (
        'Detect {target}. Output a json list where each entry contains the 2D bounding box in "box_2d" '
        '([ymin, xmin, ymax, xmax] normalized to 0-1000) and a text label in "label".'
    )
    decline_prompt = "If there is no such object in the image, output an empty json list []."
    decline_answer = "```json\n[]\n```"

    def extract(self, text, diag):
        items = read_keyed_lists(text, KEYS, diag)
        return items or read_bare_groups(text, diag)

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f'```json\n[\n  {{"point": [{fy}, {fx}], "label": "target"}}\n]\n```'

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return f'```json\n[\n  {{"box_2d": [{b}, {a}, {d}, {c}], "label": "target"}}\n]\n```'


FAMILY = Gemini()
