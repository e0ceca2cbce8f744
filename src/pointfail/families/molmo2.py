"""Molmo2: ``<points coords="…">`` on a 0–1000 grid.

Convention (Molmo2 model cards, as summarized in issue 2): ``coords`` holds, per image, the image
index followed by ``ID X Y`` triples (point id, then x and y as integers on a 0–1000 grid of that
image); images are separated by ``;``, e.g. ``<points coords="1 1 512 300 2 640 310">mugs</points>``.
Single ``<point coords="…">`` tags are read the same way. Every point of every image is kept in
order (pointfail prompts carry one image). A trailing group with fewer than three numbers (a cut-off
reply) is ignored as ``wrong_arity``. Prompt phrasing: "Point to …".
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import Item, tag_attributes
from pointfail.frames import Frame


class Molmo2(Family):
    """Molmo2 coords attribute, 0-1000 grid."""

    name = "molmo2"
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid of the image (Molmo2 coords)")
    checkpoints = ("allenai/Molmo2-4B", "allenai/Molmo2-8B", "allenai/Molmo2-O-7B")
    backend = "pointfail.backends.molmo2"
    point_prompt = "{point_to}"
    box_prompt = "{point_to}"
    decimals = 0

    def extract(self, text, diag):
        items = []
        for m in re.finditer(r"<points?\b([^<>]*)>", text, re.I):
            attrs = tag_attributes(m.group(1))
            if "coords" not in attrs:
                continue
            for k, seg in enumerate(attrs["coords"].split(";")):
                toks = seg.split()
                if not toks:
                    continue
                rest = toks[1:]  # toks[0] is the image index
                full = len(rest) - len(rest) % 3
                for i in range(0, full, 3):
                    items.append(Item("point", [rest[i + 1], rest[i + 2]], m.start() + k * 1e-3 + i * 1e-6, m.group(0)))
                if len(rest) % 3:
                    diag.ignore("wrong_arity", " ".join(rest[full:]))
        return items

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f'<points coords="1 1 {fx} {fy}">target</points>'


FAMILY = Molmo2()
