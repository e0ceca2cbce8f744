"""UI-TARS-1.5: the UI-TARS action syntax in absolute pixels of the *resized* model input.

Convention (UI-TARS-1.5 model card and README, "coordinate processing"): UI-TARS-1.5 is built on
Qwen2.5-VL and writes ``click(start_box='(x,y)')`` (or ``<point>x y</point>``) in pixels of the image
after ``smart_resize``; converting back needs the resized size the processor produced
(``Response.model_input_size``). Parsing rules are those of :mod:`ui_tars`.
"""

from __future__ import annotations

from pointfail.families.ui_tars import UITars
from pointfail.frames import Frame


class UITars15(UITars):
    """UI-TARS-1.5 actions, resized-input pixels."""

    name = "ui_tars_1_5"
    frame = Frame("pixels_resized", "pixels_resized", None, "xy", "absolute pixels of the smart_resize'd model input")
    checkpoints = ("ByteDance-Seed/UI-TARS-1.5-7B",)


FAMILY = UITars15()
