"""Florence-2: ``<loc_N>`` tokens, x before y, 1000 bins.

Convention (Florence-2 model card and its processor's post-processing): region answers are
``label<loc_x1><loc_y1><loc_x2><loc_y2>`` with bin indices 0–999 (the processor quantizes
``floor(x / W * 1000)`` and dequantizes to the bin centre ``(n + 0.5) * W / 1000``, which is the
:class:`~pointfail.frames.Frame` ``bins`` rule). A run of two tokens is a point; multiples of four are
several boxes. Prompt: the ``<CAPTION_TO_PHRASE_GROUNDING>`` task token followed by the phrase, for
both tasks (the box centre is the point).

Declining: the prompt is task tokens only and cannot carry an instruction, and the model's own way of
saying "nothing here" is an answer with no location tokens (``declines_by_silence``); such a reply,
empty or text only, parses as ``reason == "declined"``.
"""

from __future__ import annotations

from pointfail.families._loc import LocTokenFamily
from pointfail.frames import Frame


class Florence2(LocTokenFamily):
    """Florence-2 <loc_N> tokens, 1000 bins, x first."""

    name = "florence2"
    lineage = ("florence",)  # Florence-2
    frame = Frame("bins_1000", "bins", 1000, "xy", "1000 bins per axis, x before y (Florence-2 <loc_N>)")
    checkpoints = ("microsoft/Florence-2-base", "microsoft/Florence-2-large")
    backend = None
    point_prompt = "<CAPTION_TO_PHRASE_GROUNDING>{target}"
    box_prompt = "<CAPTION_TO_PHRASE_GROUNDING>{target}"
    # prompted with task tokens only: no room for an instruction; declines by giving no location
    decline_prompt = None
    declines_by_silence = True
    loc_pattern = r"<loc_(\d{1,4})>"
    loc_token = "<loc_{}>"
    label_template = "target{tokens}"


FAMILY = Florence2()
