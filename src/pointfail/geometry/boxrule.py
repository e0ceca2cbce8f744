"""The PointerBench box rule: IoU, coverage and precision of a predicted box against a target box,
and the box outcome class.

Source: PointerBench ``eval.py`` (asymmetric box rule) and the paper's Table 12. Corners sorted;
``inter = max(0, ix1 - ix0) * max(0, iy1 - iy0)``; areas likewise; ``iou = inter / union``,
``coverage = inter / target_area``, ``precision = inter / pred_area``, each ``0.0`` when its
denominator is 0. :func:`box_score`: ``hit`` when coverage >= 0.90 and precision >= 0.70 (thresholds
from the row's ``eval`` when it has them), ``clipped`` (coverage too low only), ``oversized``
(precision too low only), ``both``, ``malformed`` (no valid box).

>>> box_overlap([0, 0, 10, 10], [0, 0, 10, 20])
(0.5, 0.5, 1.0)
>>> box_score([0, 0, 10, 19], [0, 0, 10, 20]).box_class, box_score([0, 0, 10, 17], [0, 0, 10, 20]).box_class
('hit', 'clipped')
>>> box_score([0, 0, 20, 20], [0, 0, 10, 20]).box_class, box_score(None, [0, 0, 1, 1]).box_class
('oversized', 'malformed')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from pointfail.geometry.shapes import sorted_box, valid_box
from pointfail.records import BoxClass, BoxScore

__all__ = [
    "POINTERBENCH_MIN_COVERAGE",
    "POINTERBENCH_MIN_PRECISION",
    "box_class",
    "box_coverage",
    "box_iou",
    "box_overlap",
    "box_precision",
    "box_score",
]

POINTERBENCH_MIN_COVERAGE = 0.90
"""PointerBench box rule: share of the target box's area the prediction must cover."""
POINTERBENCH_MIN_PRECISION = 0.70
"""PointerBench box rule: share of the predicted box's area that must lie inside the target."""

def box_overlap(pred_px: Sequence[float], target_px: Sequence[float]) -> tuple[float, float, float]:
    """``(iou, coverage, precision)`` of a predicted box against a target box, both
    ``[x0, y0, x1, y1]`` in pixels (corners sorted first). ``coverage = inter / target_area``,
    ``precision = inter / pred_area``, ``iou = inter / union``; each 0.0 when its denominator is 0.
    Source: PointerBench ``eval.py`` (``_overlap``), same operations in the same order."""
    ax0, ay0, ax1, ay1 = sorted_box(pred_px)
    bx0, by0, bx1, by1 = sorted_box(target_px)
    ix0, iy0 = max(ax0, bx0), max(ay0, by0)
    ix1, iy1 = min(ax1, bx1), min(ay1, by1)
    inter = max(0.0, ix1 - ix0) * max(0.0, iy1 - iy0)
    pred_area = max(0.0, ax1 - ax0) * max(0.0, ay1 - ay0)
    gt_area = max(0.0, bx1 - bx0) * max(0.0, by1 - by0)
    union = pred_area + gt_area - inter
    iou = inter / union if union else 0.0
    coverage = inter / gt_area if gt_area else 0.0
    precision = inter / pred_area if pred_area else 0.0
    return iou, coverage, precision


def box_iou(pred_px: Sequence[float], target_px: Sequence[float]) -> float:
    """Intersection over union of two pixel boxes, in [0, 1] (0.0 when both are empty)."""
    return box_overlap(pred_px, target_px)[0]


def box_coverage(pred_px: Sequence[float], target_px: Sequence[float]) -> float:
    """Intersection area / target area, in [0, 1] (0.0 for a zero-area target, as PointerBench)."""
    return box_overlap(pred_px, target_px)[1]


def box_precision(pred_px: Sequence[float], target_px: Sequence[float]) -> float:
    """Intersection area / predicted area, in [0, 1] (0.0 for a zero-area prediction)."""
    return box_overlap(pred_px, target_px)[2]


def box_class(
    coverage: float,
    precision: float,
    min_coverage: float = POINTERBENCH_MIN_COVERAGE,
    min_precision: float = POINTERBENCH_MIN_PRECISION,
) -> BoxClass:
    """PointerBench box outcome class from coverage and precision: ``hit`` (both thresholds met),
    ``clipped`` (coverage below ``min_coverage`` only), ``oversized`` (precision below
    ``min_precision`` only), ``both`` (both below). Source: PointerBench paper, Table 12."""
    cov_ok = coverage >= min_coverage
    prec_ok = precision >= min_precision
    if cov_ok and prec_ok:
        return "hit"
    if prec_ok:
        return "clipped"
    if cov_ok:
        return "oversized"
    return "both"


def box_score(
    pred_px: Optional[Sequence[float]],
    target_px: Sequence[float],
    min_coverage: float = POINTERBENCH_MIN_COVERAGE,
    min_precision: float = POINTERBENCH_MIN_PRECISION,
) -> BoxScore:
    """Score a predicted pixel box against a target pixel box by the PointerBench box rule
    (coverage >= ``min_coverage`` and precision >= ``min_precision``; defaults 0.90 / 0.70 from the
    paper and ``eval.py``).

    Returns:
        ``BoxScore`` with iou, coverage, precision and ``box_class``; a missing, wrong-length or
        non-finite prediction gives ``box_class="malformed"`` with the three numbers ``None``
        (PointerBench counts malformed outputs as failures).
    """
    if pred_px is None or not valid_box(pred_px):
        return BoxScore(box_class="malformed")
    iou, cov, prec = box_overlap(pred_px, target_px)
    return BoxScore(iou=iou, coverage=cov, precision=prec, box_class=box_class(cov, prec, min_coverage, min_precision))

