"""How the failure profile's segments look, in every figure and page: colour, a fill pattern and a
text label, so the failure modes stay distinguishable without colour (for readers with colour-vision
deficiencies, and in greyscale print).

One table, used by ``pointfail report`` (matplotlib hatches) and ``pointfail view`` (CSS patterns).
"""

from __future__ import annotations

from pointfail.records import FAILURE_MODES

__all__ = ["SEGMENTS", "COLORS", "HATCHES", "CSS_PATTERNS", "SEGMENT_LABELS", "segment_css"]

SEGMENTS: tuple[str, ...] = ("hit", *FAILURE_MODES, "malformed_box", "unlabeled", "judge_unavailable", "pending",
                             "no_prediction", "error")
"""Stacking order of the failure-profile bars, bottom to top: every sample of ``n`` is in one segment
(``malformed_box``: point answers to box tasks; ``error``: infrastructure errors, non-hits in ``n``)."""

COLORS: dict[str, str] = {
    "hit": "#2e7d32",
    "off_by_pixels": "#9ccc65",
    "wrong_instance": "#ffca28",
    "wrong_category": "#fb8c00",
    "hallucinated": "#d32f2f",
    "malformed_box": "#8d6e63",
    "unlabeled": "#9e9e9e",
    "judge_unavailable": "#616161",
    "pending": "#cfd8dc",
    "no_prediction": "#5c6bc0",
    "error": "#000000",
}
"""Fill colour of each segment (``error`` also colours list badges)."""

HATCHES: dict[str, str] = {
    "hit": "",
    "off_by_pixels": "..",
    "wrong_instance": "//",
    "wrong_category": "\\\\",
    "hallucinated": "xx",
    "malformed_box": "**",
    "unlabeled": "--",
    "judge_unavailable": "||",
    "pending": "++",
    "no_prediction": "oo",
    "error": "",
}
"""matplotlib hatch of each segment (the PNG figures)."""

_LINE = "rgba(0,0,0,.45)"
CSS_PATTERNS: dict[str, str] = {
    "hit": "none",
    "off_by_pixels": f"radial-gradient({_LINE} 1.2px, transparent 1.6px) 0 0/6px 6px",
    "wrong_instance": f"repeating-linear-gradient(45deg, {_LINE} 0 2px, transparent 2px 7px)",
    "wrong_category": f"repeating-linear-gradient(-45deg, {_LINE} 0 2px, transparent 2px 7px)",
    "hallucinated": (f"repeating-linear-gradient(45deg, {_LINE} 0 1.5px, transparent 1.5px 6px), "
                     f"repeating-linear-gradient(-45deg, {_LINE} 0 1.5px, transparent 1.5px 6px)"),
    "malformed_box": f"repeating-linear-gradient(90deg, {_LINE} 0 2px, transparent 2px 7px)",
    "unlabeled": f"repeating-linear-gradient(0deg, {_LINE} 0 2px, transparent 2px 6px)",
    "judge_unavailable": "repeating-linear-gradient(90deg, rgba(255,255,255,.55) 0 2px, transparent 2px 6px)",
    "pending": f"repeating-linear-gradient(0deg, {_LINE} 0 1px, transparent 1px 5px), "
               f"repeating-linear-gradient(90deg, {_LINE} 0 1px, transparent 1px 5px)",
    "no_prediction": "radial-gradient(circle, transparent 1.5px, rgba(255,255,255,.6) 2px, transparent 2.6px) 0 0/8px 8px",
    "error": "none",
}
"""CSS ``background`` pattern layer drawn over each segment's colour (the pages)."""

SEGMENT_LABELS: dict[str, str] = {
    "hit": "hit",
    "off_by_pixels": "off by pixels",
    "wrong_instance": "wrong instance",
    "wrong_category": "wrong category",
    "hallucinated": "hallucinated",
    "malformed_box": "point answer to a box task",
    "unlabeled": "unlabeled (judge abstained)",
    "judge_unavailable": "judge unavailable",
    "pending": "not judged yet",
    "no_prediction": "no prediction",
    "error": "infrastructure error",
}
"""Text label of each segment, shown beside every pattern."""


def segment_css() -> str:
    """CSS rules ``.seg-<name>`` (colour and pattern of each segment), for the pages and the report."""
    out = []
    for name in SEGMENTS:
        pat = CSS_PATTERNS[name]
        layer = f"{pat}, " if pat != "none" else ""
        text = "#fff" if name in ("hit", "hallucinated", "judge_unavailable", "no_prediction", "error") else "#111"
        out.append(f".seg-{name}{{background:{layer}{COLORS[name]};color:{text}}}")
    return "\n".join(out) + "\n"
