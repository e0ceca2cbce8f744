"""Kosmos-2: ``<patch_index_NNNN>`` pairs on a 32x32 patch grid.

Convention (Kosmos-2 paper, arXiv:2306.14824, and the transformers Kosmos-2 processor): a grounded
phrase is followed by ``<object><patch_index_A><patch_index_B></object>`` where ``A`` is the patch of
the top-left corner and ``B`` of the bottom-right corner, indices 0–1023 row-major on a 32x32 grid
(column ``k % 32``, row ``k // 32``); several boxes are separated by
``</delimiter_of_multi_objects/>``. Corner patches become a box by the rule of transformers'
``patch_index_to_coordinate`` (``models/kosmos2/processing_kosmos2.py``, itself taken from the
authors' ``unilm/kosmos-2/demo/decode_string.py``), with cell size ``c = 1/32``:

* ``A == B``, or the two patches share a row or a column: the box spans the *whole cells*,
  ``[colA*c, rowA*c, (colB+1)*c, (rowB+1)*c]``;
* otherwise it runs between the two patch *centres*, ``[(colA+0.5)*c, (rowA+0.5)*c, (colB+0.5)*c,
  (rowB+0.5)*c]``.

Worked case: ``<patch_index_0033><patch_index_0036>`` (row 1, columns 1 and 4, the same row) is
``[1/32, 1/32, 5/32, 2/32]``; on a 640x480 image ``[20, 15, 100, 30]`` px, whose centre ``(60, 22.5)``
is the point. (Between centres it would be ``[30, 22.5, 90, 22.5]``: zero height.)
Prompt: ``<grounding><phrase>…</phrase>`` (referring expression comprehension).

Declining: the prompt is task tokens only and cannot carry an instruction, and the model's own way of
saying "nothing here" is an answer with no location tokens (``declines_by_silence``); such a reply,
empty or text only, parses as ``reason == "declined"``.
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import Item
from pointfail.frames import Frame

N = 32


class Kosmos2(Family):
    """Kosmos-2 patch-index boxes, 32x32 grid."""

    name = "kosmos2"
    lineage = ("kosmos",)  # Kosmos-2
    frame = Frame("patch_grid_32", "patch_grid", N, "xy", "32x32 patch grid, patch index -> patch centre (Kosmos-2)")
    checkpoints = ("microsoft/kosmos-2-patch14-224",)
    backend = None
    point_prompt = "<grounding><phrase> {target}</phrase>"
    box_prompt = "<grounding><phrase> {target}</phrase>"
    # prompted with task tokens only: no room for an instruction; declines by giving no location
    decline_prompt = None
    declines_by_silence = True

    def extract(self, text, diag):
        toks = list(re.finditer(r"<patch_index_(\d{1,4})>", text))
        items = []
        full = len(toks) - len(toks) % 2
        for i in range(0, full, 2):
            a, b = toks[i], toks[i + 1]
            items.append(Item("box", [a.group(1), b.group(1)], a.start(), text[a.start():b.end()]))
        if len(toks) % 2:
            diag.ignore("wrong_arity", toks[-1].group(0))
        return items

    def convert(self, item, numbers, image_size, model_input_size):
        """Patch indices ``(A, B)`` → box ``[x0, y0, x1, y1]`` normalized by transformers'
        ``patch_index_to_coordinate``: whole cells when ``A == B`` or the patches share a row or a
        column, patch centres otherwise (module docstring). An index outside 0–1023 is converted
        linearly all the same (kept, not clamped: row = ``k // 32`` may exceed 31 and give a point
        beyond the image)."""
        a, b = (int(v) for v in numbers)
        (ca, ra), (cb, rb) = (a % N, a // N), (b % N, b // N)
        if a == b or ca == cb or ra == rb:
            return [ca / N, ra / N, (cb + 1) / N, (rb + 1) / N]
        x0, y0 = self.frame.to_unit(ca, ra)
        x1, y1 = self.frame.to_unit(cb, rb)
        return [x0, y0, x1, y1]

    def _index(self, x, y):
        c, r = self.frame.from_unit(x, y)
        return int(r) * N + int(c)

    def format_point(self, x, y, image_size, model_input_size=None):
        k = self._index(x, y)
        return f"<phrase> target</phrase><object><patch_index_{k:04d}><patch_index_{k:04d}></object>"

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b = self._index(x0, y0), self._index(x1, y1)
        return f"<phrase> target</phrase><object><patch_index_{a:04d}><patch_index_{b:04d}></object>"


FAMILY = Kosmos2()
