"""UI-TARS-1.5: the UI-TARS action syntax in absolute pixels of the *resized* model input.

Convention (UI-TARS-1.5 model card and README, "coordinate processing"): UI-TARS-1.5 is built on
Qwen2.5-VL and writes ``click(start_box='(x,y)')`` (or ``<point>x y</point>``) in pixels of the image
after ``smart_resize``; converting back needs the resized size the processor produced
(``Response.model_input_size``). Parsing rules are those of :mod:`ui_tars`, the bare ``(x,y)`` answer
to the short grounding prompt included. The resize setting (:attr:`UITars15.resize`) is the one in
ByteDance's ``ui-tars`` package (factor 28, ``min_pixels = 100 * 28 * 28``, ``max_pixels = 16384 * 28
* 28``), whose ``parse_action_to_structure_output`` divides by that resized size; pointfail divides by
the size the worker recorded, which is the same for images the processor resized with that setting.
Worked case: ``(518,378)`` with a recorded 1036x756 input (a 1024x768 screenshot) is ``(0.5, 0.5)``,
i.e. ``(512, 384)`` px.
"""

from __future__ import annotations

from pointfail.families.ui_tars import UITars
from pointfail.frames import SMART_RESIZE_DEFAULTS, Frame


class UITars15(UITars):
    """UI-TARS-1.5 actions, resized-input pixels."""

    name = "ui_tars_1_5"
    lineage = ("qwen", "ui-tars")  # UI-TARS-1.5 is fine-tuned from Qwen2.5-VL
    frame = Frame("pixels_resized", "pixels_resized", None, "xy", "absolute pixels of the smart_resize'd model input")
    checkpoints = ("ByteDance-Seed/UI-TARS-1.5-7B",)
    resize = SMART_RESIZE_DEFAULTS["ui_tars_1_5"]


FAMILY = UITars15()
