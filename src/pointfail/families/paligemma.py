"""PaliGemma: ``<locYYYY>`` tokens, y before x, 1024 bins.

Convention (PaliGemma model card / big_vision docs): detection answers are four location tokens
``<loc{ymin}><loc{xmin}><loc{ymax}><loc{xmax}> label``, each a 4-digit bin index 0–1023 of the image
height or width (1024 bins), several detections separated by `` ; ``. A run of two tokens
``<loc{y}><loc{x}>`` is a point. Bins convert to their centres (see :mod:`pointfail.frames`). A run
of another length is ``wrong_arity`` (runs of 8, 12, … are several boxes). Prompt: the ``detect``
task prefix for both tasks (PaliGemma has no pointing prefix; the box centre is the point).
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import Item
from pointfail.frames import Frame


def read_loc_runs(text, diag, pattern, order_kinds=((2, "point"), (4, "box"))):
    """Runs of consecutive location tokens (whitespace allowed between them): a run of 2 is a point,
    4 a box, a multiple of 4 several boxes; anything else is ignored as ``wrong_arity``."""
    items = []
    run_re = re.compile(f"(?:{pattern}\\s*)+")
    for m in run_re.finditer(text):
        vals = re.findall(pattern, m.group(0))
        n = len(vals)
        if n == 2:
            items.append(Item("point", vals, m.start(), m.group(0)))
        elif n % 4 == 0:
            for i in range(0, n, 4):
                items.append(Item("box", vals[i:i + 4], m.start() + i * 1e-3, m.group(0)))
        else:
            diag.ignore("wrong_arity", m.group(0))
    return items


class PaliGemma(Family):
    """PaliGemma <locNNNN> detection tokens, 1024 bins, y first."""

    name = "paligemma"
    frame = Frame("bins_1024_yx", "bins", 1024, "yx", "1024 bins per axis, y before x (PaliGemma <loc> tokens)")
    checkpoints = ("google/paligemma-3b-mix-448", "google/paligemma2-3b-mix-448")
    backend = None
    point_prompt = "detect {target}"
    box_prompt = "detect {target}"

    def extract(self, text, diag):
        return read_loc_runs(text, diag, r"<loc(\d{1,4})>")

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"<loc{fy:04d}><loc{fx:04d}> target"

    def format_box(self, x0, y0, x1, y1, image_size, model_input_size=None):
        a, b = self._frame_values(x0, y0, image_size, model_input_size)
        c, d = self._frame_values(x1, y1, image_size, model_input_size)
        return f"<loc{b:04d}><loc{a:04d}><loc{d:04d}><loc{c:04d}> target"


FAMILY = PaliGemma()
