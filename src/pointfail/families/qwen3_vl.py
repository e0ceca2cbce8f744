"""Qwen3-VL: the Qwen2.5-VL JSON keys (``point_2d`` / ``bbox_2d``) on a 0–1000 grid.

Convention (Qwen3-VL model cards and cookbooks): Qwen3-VL returns grounding coordinates relative to
the image, scaled to 0–1000 (not resized-input pixels as Qwen2.5-VL did), in the same JSON shapes:
``[{"point_2d": [x, y], "label": …}]``, ``[{"bbox_2d": [x1, y1, x2, y2], "label": …}]``; XML
``<points x1 y1 alt>`` tags are read in the same frame, and, when neither is present, a bare
``[x, y]`` / ``[x1, y1, x2, y2]`` list (flag ``bare_list``). Qwen3-VL's processor uses factor 32
(patch 16 × merge 2), which does not matter for a 0–1000 frame. Thinking variants emit
``<think>…</think>`` first (stripped by the shared rules).
"""

from __future__ import annotations

from pointfail.families._qwen import QwenJSONFamily
from pointfail.frames import Frame


class Qwen3VL(QwenJSONFamily):
    """Qwen3-VL JSON/XML answers, 0-1000 grid."""

    name = "qwen3_vl"
    lineage = ("qwen",)  # Qwen3-VL
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid relative to the image (Qwen3-VL)")
    checkpoints = (
        "Qwen/Qwen3-VL-2B-Instruct",
        "Qwen/Qwen3-VL-4B-Instruct",
        "Qwen/Qwen3-VL-8B-Instruct",
        "Qwen/Qwen3-VL-8B-Thinking",
    )
    backend = "pointfail.running.backends.qwen3_vl"
    json_layout = "compact"


FAMILY = Qwen3VL()
