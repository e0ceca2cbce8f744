"""The Qwen-VL answer syntax shared by Qwen2.5-VL and Qwen3-VL (helper module, not a family).

Both models answer grounding requests with JSON objects keyed ``point_2d`` / ``bbox_2d`` (usually a
list in a markdown fence), also with XML ``<points x1 y1 alt>`` tags, and are asked with the Qwen
grounding cookbook's wording; only the coordinate frame differs (Qwen2.5-VL: pixels of the
``smart_resize``'d input, Qwen3-VL: a 0-1000 grid), so each family sets ``frame`` and nothing else
about parsing. Sources: Qwen2.5-VL technical report (arXiv:2502.13923) and grounding cookbook;
Qwen3-VL model cards and cookbooks.

Declining: an empty JSON list (``[]``, fenced or not) is the grounding list with nothing found; when the
referent may be absent the prompt asks for it ("If there is no such object in the image, output an
empty JSON list []."), and it parses as ``reason == "declined"``.
"""

from __future__ import annotations

from typing import ClassVar

from pointfail.families import Family
from pointfail.families._text import read_bare_groups, read_keyed_lists, read_point_tags

KEYS = {"point_2d": "point", "bbox_2d": "box"}
"""JSON key -> item kind for :func:`~pointfail.families._text.read_keyed_lists`."""


class QwenJSONFamily(Family):
    """Base of the Qwen-VL families: JSON ``point_2d``/``bbox_2d`` objects and XML point tags in the
    subclass's ``frame``; a bare ``[x, y]`` / ``[x1, y1, x2, y2]`` list, read in the same frame, only
    when neither is present (flag ``bare_list``). ``json_layout`` is how :meth:`format_point` /
    :meth:`format_box` lay out the fenced JSON list: ``"indented"`` (one object per line after a tab,
    as Qwen2.5-VL writes it) or ``"compact"`` (one line, Qwen3-VL)."""

    point_prompt = '{point_to}, output its coordinates in JSON format as [{"point_2d": [x, y], "label": "..."}].'
    box_prompt = 'Locate {target}, output its bbox coordinates using JSON format as [{"bbox_2d": [x1, y1, x2, y2], "label": "..."}].'
    decimals = 0
    decline_prompt = "If there is no such object in the image, output an empty JSON list []."
    decline_answer = "```json\n[]\n```"
    json_layout: ClassVar[str] = "compact"

    def extract(self, text, diag):
        """Keyed JSON lists and XML point tags, else bare lists (flag ``bare_list``)."""
        items = read_keyed_lists(text, KEYS, diag) + read_point_tags(text, diag)
        if not items:
            items = read_bare_groups(text, diag)
            if items:
                diag.flag("bare_list")
        return items

    def _json_answer(self, key: str, values) -> str:
        obj = f'{{"{key}": [{", ".join(str(v) for v in values)}], "label": "target"}}'
        if self.json_layout == "indented":
            return f"```json\n[\n\t{obj}\n]\n```"
        return f"```json\n[{obj}]\n```"

    def format_point(self, x, y, image_size, model_input_size=None):
        """``point_2d`` in a fenced JSON list, in the family's frame, integers."""
        return self._json_answer("point_2d", self._frame_values(x, y, image_size, model_input_size))

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        """``bbox_2d`` ``[x1, y1, x2, y2]`` in a fenced JSON list, in the family's frame, integers."""
        a, b, c, d = self._box_values(x0, y0, x1, y1, image_size, model_input_size)
        return self._json_answer("bbox_2d", (a, b, c, d))
