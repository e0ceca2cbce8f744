"""``json_unit``: PointerBench's JSON answer keys with coordinates as fractions of the image.

Convention: ``{"point": [x, y]}`` for point tasks and ``{"bbox": [x0, y0, x1, y1]}`` for box tasks,
as in PointerBench's answer format (:mod:`pointfail.families.json_pixels`), but each number is a
fraction of the original image's width (x) or height (y), 0 to 1, origin top-left: the layout many
evaluation harnesses export their parsed predictions in. ``pointfail evaluate --frame unit`` reads a
file of such coordinates through this family, so the records keep the numbers as given and name the
frame they were declared in; nothing is rescaled by guessing from the size of the numbers.
"""

from __future__ import annotations

from pointfail.families.json_pixels import JsonPixels
from pointfail.frames import Frame

INSTRUCTION = (
    'Answer with JSON: {"point": [x, y]} for a point, {"bbox": [x0, y0, x1, y1]} for a box, where x and y are '
    "fractions of the image's width and height (0 to 1), origin at the top-left."
)


class JsonUnit(JsonPixels):
    """PointerBench JSON keys, coordinates in 0-1 fractions of the original image."""

    name = "json_unit"
    frame = Frame("unit", "unit", 1, "xy", "0-1 fractions of the original image (JSON point / bbox)")
    checkpoints = ()
    backend = None
    system_prompt = None
    point_prompt = "{core}\n\n" + INSTRUCTION
    box_prompt = "{core}\n\n" + INSTRUCTION
    decimals = 4


FAMILY = JsonUnit()
