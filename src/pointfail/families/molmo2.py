"""Molmo2: ``<points coords="…">`` on a 0–1000 grid.

Convention (Molmo2 model cards and Molmo's "html-v2" point markup, as summarized in issue 2 and seen
in public Molmo2 parsers): ``coords`` holds, per image, the image index followed by ``ID X Y`` triples
(a point id counting up from 1, then x and y as integers on a 0–1000 grid of that image, usually
zero-padded to three digits); images are separated by ``;``, e.g.
``<points coords="1 1 512 300 2 640 310">mugs</points>``. Single-image replies are also seen without
the image index (``<points coords="1 512 300"/>``): a group whose token count is a multiple of three
and whose ids count up by one is read that way (flag ``molmo2_no_image_index``); otherwise the first
token is the image index. Single ``<point coords="…">`` tags are read the same way. Every point of
every image is kept in order (pointfail prompts carry one image). A trailing incomplete triple is
ignored as ``wrong_arity``. Prompt phrasing: "Point to …".
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import Item, tag_attributes
from pointfail.families.molmo import Molmo
from pointfail.frames import Frame


def _consecutive(ids: list[str]) -> bool:
    """True when the tokens are integers counting up by one (Molmo2 point ids)."""
    try:
        vals = [int(t) for t in ids]
    except ValueError:
        return False
    return all(b == a + 1 for a, b in zip(vals, vals[1:]))


class Molmo2(Family):
    """Molmo2 coords attribute, 0-1000 grid."""

    name = "molmo2"
    lineage = ("molmo", "olmo", "qwen")  # Molmo2 checkpoints are built on Qwen3 and OLMo3 language models (Molmo2 model cards)
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid of the image (Molmo2 coords)")
    checkpoints = ("allenai/Molmo2-4B", "allenai/Molmo2-8B")
    backend = "pointfail.running.backends.molmo2"
    point_prompt = "{point_to}"
    box_prompt = "{point_to}"
    # declines as Molmo does (its pointing data answers a query whose object is missing with "There are none.")
    decline_prompt = Molmo.decline_prompt
    decline_answer = Molmo.decline_answer
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
                if len(toks) % 3 == 0 and _consecutive(toks[0::3]):
                    rest = toks
                    diag.flag("molmo2_no_image_index")
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
