"""Location-token answers shared by PaliGemma and Florence-2 (helper module, not a family).

Both models write coordinates as runs of location tokens, one bin index per token (PaliGemma
``<locNNNN>``, 1024 bins, y before x; Florence-2 ``<loc_N>``, 1000 bins, x before y): a run of two
tokens is a point, a run of four a box, a multiple of four several boxes (PaliGemma model card /
big_vision docs; Florence-2 model card and its processor's post-processing).
"""

from __future__ import annotations

import re
from typing import ClassVar

from pointfail.families import Family
from pointfail.families._text import Item
from pointfail.limits import MAX_ITEMS


def read_loc_runs(text, diag, pattern, order_kinds=((2, "point"), (4, "box"))):
    """Runs of consecutive location tokens matching ``pattern`` (one capture group: the bin index;
    whitespace allowed between tokens): a run of 2 is a point, 4 a box, a multiple of 4 several
    boxes; anything else is ignored as ``wrong_arity``. Returns the items with the bin indices as
    written (strings, in the token order of the text)."""
    items = []
    run_re = re.compile(f"(?:{pattern}\\s*+)++")
    for m in run_re.finditer(text):
        src = m.group(0)
        vals = re.findall(pattern, src)  # src: one string shared by the run's items, not one copy each
        n = len(vals)
        if n == 2:
            items.append(Item("point", vals, m.start(), src))
        elif n % 4 == 0:
            for i in range(0, min(n, 4 * MAX_ITEMS), 4):
                items.append(Item("box", vals[i:i + 4], m.start() + i * 1e-7, src))
        else:
            diag.ignore("wrong_arity", src)
    return items


class LocTokenFamily(Family):
    """Base of the location-token families. Subclasses set ``frame`` (``bins``, with its axis
    order), ``loc_pattern`` (regex with one group: the bin index), ``loc_token`` (a format string
    writing one index) and ``label_template`` (how :meth:`format_point` / :meth:`format_box` place
    the label ``target`` around the tokens, ``{tokens}`` standing for them)."""

    loc_pattern: ClassVar[str] = ""
    loc_token: ClassVar[str] = ""
    label_template: ClassVar[str] = "{tokens}"

    def extract(self, text, diag):
        """Runs of ``loc_pattern`` tokens (:func:`read_loc_runs`)."""
        return read_loc_runs(text, diag, self.loc_pattern)

    def _tokens(self, *xy_pairs) -> str:
        out: list[str] = []
        for fx, fy in xy_pairs:
            pair = (fy, fx) if self.frame.order == "yx" else (fx, fy)
            out.extend(self.loc_token.format(v) for v in pair)
        return self.label_template.format(tokens="".join(out))

    def format_point(self, x, y, image_size, model_input_size=None):
        """One two-token run in the frame's axis order, with the label."""
        return self._tokens(self._frame_values(x, y, image_size, model_input_size))

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        """One four-token run (top-left corner, then bottom-right) in the frame's axis order."""
        return self._tokens(self._frame_values(x0, y0, image_size, model_input_size),
                            self._frame_values(x1, y1, image_size, model_input_size))
