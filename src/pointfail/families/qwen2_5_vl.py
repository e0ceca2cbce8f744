"""Qwen2.5-VL: JSON ``point_2d`` / ``bbox_2d`` in absolute pixels of the *resized* model input.

Convention (Qwen2.5-VL technical report, arXiv:2502.13923, and the Qwen2.5-VL grounding cookbook):
grounding answers are JSON, usually a list of objects in a markdown fence,
``[{"point_2d": [x, y], "label": "mug"}]`` / ``[{"bbox_2d": [x1, y1, x2, y2], "label": "mug"}]``, in
absolute pixel coordinates of the image *as the processor resized it* (``smart_resize``, factor 28),
not of the original. The model also answers in XML point tags ``<points x1="…" y1="…" alt="…">…
</points>`` in the same pixels. Conversion therefore needs the model-input size the processor produced
(``Response.model_input_size``); without it :class:`~pointfail.frames.FrameError` is raised.
When neither keyed JSON nor XML tags are present, a bare ``[x, y]`` / ``[x1, y1, x2, y2]`` list is
read in the same declared frame (flag ``bare_list``, after-prose rule).

Prompt phrasing: "… output its coordinates in JSON format" (point) / "… output its bbox
coordinates using JSON format" (box), the cookbook's wording.
"""

from __future__ import annotations

from pointfail.families._qwen import KEYS, QwenJSONFamily
from pointfail.frames import SMART_RESIZE_DEFAULTS, Frame

__all__ = ["KEYS", "Qwen25VL", "FAMILY"]


class Qwen25VL(QwenJSONFamily):
    """Qwen2.5-VL JSON/XML answers, resized-input pixels."""

    name = "qwen2_5_vl"
    lineage = ("qwen",)  # Qwen2.5-VL
    frame = Frame("pixels_resized", "pixels_resized", None, "xy", "absolute pixels of the smart_resize'd model input")
    checkpoints = ("Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-72B-Instruct")
    resize = SMART_RESIZE_DEFAULTS["qwen2_5_vl"]
    backend = "pointfail.running.backends.qwen2_5_vl"
    json_layout = "indented"


FAMILY = Qwen25VL()
