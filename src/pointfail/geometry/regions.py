"""Target regions: a sample's target (mask, boxes, polygons or absent) ready for scoring.

numpy and the mask machinery (:mod:`pointfail.geometry.masks`) are imported when a mask or polygon
region needs them, so scoring against a box target (``pointfail score --box``) starts without them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from pointfail.geometry.boxrule import POINTERBENCH_MIN_COVERAGE, POINTERBENCH_MIN_PRECISION, box_class, box_score
from pointfail.geometry.errors import GeometryError, MaskSizeError
from pointfail.geometry.shapes import (
    clip_polygon_to_box,
    pixel_of,
    point_box_distance,
    point_in_box,
    point_in_polygon,
    point_polygon_distance,
    polygon_area,
    polygon_array,
    sorted_box,
    to_pixels,
    union_area,
    valid_box,
)
from pointfail.records import BoxScore, Target

if TYPE_CHECKING:
    import numpy as np

    from pointfail.geometry.masks import MaskInfo

__all__ = ["TargetRegion"]


def _check_mask(mask_info: Optional[MaskInfo], W: int, H: int) -> None:
    """A mask target's mask exists and is ``W x H`` pixels (``GeometryError`` / ``MaskSizeError``)."""
    if mask_info is None:
        raise GeometryError("a mask target needs a mask")
    mh, mw = mask_info.mask.shape
    if (mw, mh) != (W, H):
        raise MaskSizeError(f"mask is {mw}x{mh} pixels but its image is {W}x{H} (width x height)", (mw, mh), (W, H))


def _check_boxes(boxes: Sequence[Sequence[float]]) -> None:
    """A boxes target has at least one box, each 4 finite numbers (``GeometryError``)."""
    if not boxes:
        raise GeometryError("a boxes target needs at least one box")
    for b in boxes:
        if not valid_box(b):
            raise GeometryError(f"target box must be 4 finite numbers [x0, y0, x1, y1], got {b!r}")


class TargetRegion:
    """A sample's target, ready for scoring: a mask, one or more boxes, one or more polygons, or
    absent. Build it with :meth:`from_target`.

    Points passed to its methods are normalized ``(x, y)`` (unit square, origin top-left); they
    are converted to pixels of the original image (``image_size = (W, H)``) with
    :func:`to_pixels`.

    Attributes:
        kind: ``mask`` | ``boxes`` | ``polygon`` | ``absent``.
        image_size: ``(W, H)`` in pixels of the original image.
        boxes: sorted pixel boxes (``boxes`` kind), else ``()``.
        polygons: pixel polygons as ``(n, 2)`` arrays (``polygon`` kind), else ``()``.
        min_coverage / min_precision: the box-rule thresholds (the row's ``eval`` values when it
            has them, else PointerBench's 0.90 / 0.70).
    """

    def __init__(
        self,
        kind: str,
        image_size: Sequence[int],
        *,
        mask_info: Optional[MaskInfo] = None,
        boxes: Sequence[Sequence[float]] = (),
        polygons: Sequence[Sequence[Sequence[float]]] = (),
        min_coverage: float = POINTERBENCH_MIN_COVERAGE,
        min_precision: float = POINTERBENCH_MIN_PRECISION,
    ):
        if kind not in ("mask", "boxes", "polygon", "absent"):
            raise GeometryError(f"unknown target kind {kind!r}")
        W, H = int(image_size[0]), int(image_size[1])
        if W <= 0 or H <= 0:
            raise GeometryError(f"image size must be positive, got {W}x{H}")
        self.kind = kind
        self.image_size = (W, H)
        self._mask_info = mask_info
        if kind == "mask":
            _check_mask(mask_info, W, H)
        if kind == "boxes":
            _check_boxes(boxes)
        self.boxes: tuple[tuple[float, float, float, float], ...] = tuple(sorted_box(b) for b in boxes)
        if kind == "polygon" and not polygons:
            raise GeometryError("a polygon target needs at least one polygon")
        self.polygons: tuple["np.ndarray", ...] = tuple(polygon_array(p) for p in polygons)
        self.min_coverage = float(min_coverage)
        self.min_precision = float(min_precision)
        self._area: Optional[float] = None

    @property
    def _mask(self) -> "MaskInfo":
        """The decoded mask of a ``mask`` region (the constructor guarantees one)."""
        if self._mask_info is None:
            raise GeometryError(f"a {self.kind} region has no mask")
        return self._mask_info

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_target(
        cls,
        target: Target,
        image_size: Sequence[int],
        base_dir: Optional[str | Path] = None,
        *,
        allow_rescale: bool = False,
    ) -> "TargetRegion":
        """Build the region for ``target`` on an image of ``image_size = (W, H)`` pixels.

        A relative ``target.mask_path`` is resolved against ``base_dir`` (when given). Box-rule
        thresholds come from ``target.eval["min_coverage"]`` / ``["min_precision"]`` when present.

        Raises:
            MaskError / MaskSizeError: the mask cannot be read or its size differs from the image
                (see :func:`load_mask`).
            GeometryError: a target missing the data its kind needs, or invalid boxes/polygons.
        """
        ev = target.eval or {}
        cov = float(ev.get("min_coverage", POINTERBENCH_MIN_COVERAGE))
        prec = float(ev.get("min_precision", POINTERBENCH_MIN_PRECISION))
        if target.kind == "mask":
            if not target.mask_path:
                raise GeometryError("mask target has no mask_path")
            p = Path(target.mask_path)
            if base_dir is not None and not p.is_absolute():
                p = Path(base_dir) / p
            from pointfail.geometry.masks import load_mask_info

            info = load_mask_info(p, image_size, allow_rescale)
            return cls("mask", image_size, mask_info=info, min_coverage=cov, min_precision=prec)
        if target.kind == "boxes":
            return cls("boxes", image_size, boxes=target.boxes or [], min_coverage=cov, min_precision=prec)
        if target.kind == "polygon":
            return cls("polygon", image_size, polygons=target.polygons or [], min_coverage=cov, min_precision=prec)
        return cls("absent", image_size, min_coverage=cov, min_precision=prec)

    @classmethod
    def from_mask_array(cls, mask: "np.ndarray", **kw: Any) -> "TargetRegion":
        """A mask region from a boolean ``(H, W)`` array (the image size is the mask's)."""
        import numpy as np

        from pointfail.geometry.masks import MaskInfo

        arr = np.array(mask, dtype=bool)
        if arr.ndim != 2 or arr.size == 0:
            raise GeometryError(f"mask must be a non-empty 2-D array, got shape {arr.shape}")
        arr.setflags(write=False)
        h, w = arr.shape
        return cls("mask", (w, h), mask_info=MaskInfo(arr), **kw)

    # -- queries -----------------------------------------------------------------------------

    @property
    def mask(self) -> Optional["np.ndarray"]:
        """The read-only boolean ``(H, W)`` mask (``mask`` kind), else ``None``."""
        return self._mask_info.mask if self._mask_info is not None else None

    @property
    def diagonal_px(self) -> float:
        """The image diagonal ``hypot(W, H)`` in pixels (the unit of normalized distances)."""
        return math.hypot(*self.image_size)

    def contains(self, point_norm: Sequence[float]) -> bool:
        """Whether normalized ``(x, y)`` is inside the target: mask by pixel lookup
        (:func:`point_in_mask`), boxes inclusive (any box), polygons even-odd with edges inclusive
        (any polygon); an absent target contains nothing."""
        if self.kind == "absent":
            return False
        if self.kind == "mask":
            cr = pixel_of(point_norm, self.image_size)
            return cr is not None and bool(self._mask.mask[cr[1], cr[0]])
        pt = to_pixels(point_norm, self.image_size)
        if not (math.isfinite(pt[0]) and math.isfinite(pt[1])):
            return False
        if self.kind == "boxes":
            return any(point_in_box(pt, b) for b in self.boxes)
        return any(point_in_polygon(pt, p) for p in self.polygons)

    def distance_px(self, point_norm: Sequence[float]) -> Optional[float]:
        """Distance in pixels from normalized ``(x, y)`` to the target (0 inside), by the
        conventions in the module docstring (masks: pixel-centre; boxes and polygons: exact point to
        closed region). ``None`` for an absent target, an empty mask or a non-finite point."""
        if self.kind == "absent":
            return None
        if self.kind == "mask":
            from pointfail.geometry.masks import mask_distance

            return mask_distance(self._mask, point_norm)
        pt = to_pixels(point_norm, self.image_size)
        if not (math.isfinite(pt[0]) and math.isfinite(pt[1])):
            return None
        if self.kind == "boxes":
            return min(point_box_distance(pt, b) for b in self.boxes)
        return min(point_polygon_distance(pt, p) for p in self.polygons)

    def distance_norm(self, point_norm: Sequence[float]) -> Optional[float]:
        """:meth:`distance_px` divided by the image diagonal (``None`` where it is ``None``)."""
        d = self.distance_px(point_norm)
        return None if d is None else d / self.diagonal_px

    @property
    def mask_empty(self) -> bool:
        """True for a ``mask`` region with no pixel in the target (nothing could hit it), else
        False. Uses the mask's cached bounding box, which a miss's distance search computes
        anyway, so checking after scoring a miss costs nothing more."""
        return self.kind == "mask" and self._mask.bbox is None

    @property
    def area_px(self) -> float:
        """Target area in square pixels: mask pixel count; exact area of the union of the boxes;
        sum of the polygons' shoelace areas (overlapping polygons are counted twice); 0 when absent."""
        if self._area is None:
            if self.kind == "mask":
                self._area = float(self._mask.area)
            elif self.kind == "boxes":
                self._area = union_area(self.boxes)
            elif self.kind == "polygon":
                self._area = float(sum(polygon_area(p) for p in self.polygons))
            else:
                self._area = 0.0
        return self._area

    @property
    def bbox_px(self) -> Optional[list[float]]:
        """Pixel bounding box ``[x0, y0, x1, y1]`` of the target (continuous coordinates: a mask's
        covers its pixels' squares, so it ends at the last column + 1), ``None`` when absent or the
        mask is empty."""
        if self.kind == "mask":
            bb = self._mask.bbox
            if bb is None:
                return None
            r0, r1, c0, c1 = bb
            return [float(c0), float(r0), float(c1), float(r1)]
        if self.kind == "boxes":
            return [
                min(b[0] for b in self.boxes),
                min(b[1] for b in self.boxes),
                max(b[2] for b in self.boxes),
                max(b[3] for b in self.boxes),
            ]
        if self.kind == "polygon":
            import numpy as np

            allp = np.concatenate(self.polygons)
            return [float(allp[:, 0].min()), float(allp[:, 1].min()), float(allp[:, 0].max()), float(allp[:, 1].max())]
        return None

    def intersection_area_px(self, box_px: Sequence[float]) -> float:
        """Area in square pixels of the target inside pixel box ``[x0, y0, x1, y1]``: exact for boxes
        (union), polygons (Sutherland–Hodgman clip + shoelace, summed) and masks (each mask pixel
        ``[c, c+1) x [r, r+1)`` contributes its overlap with the box); 0 when absent."""
        bx = sorted_box(box_px)
        if self.kind == "absent":
            return 0.0
        if self.kind == "boxes":
            clipped = [
                (max(b[0], bx[0]), max(b[1], bx[1]), min(b[2], bx[2]), min(b[3], bx[3])) for b in self.boxes
            ]
            return union_area(clipped)
        if self.kind == "polygon":
            total = 0.0
            for p in self.polygons:
                c = clip_polygon_to_box(p, bx)
                if len(c) >= 3:
                    total += polygon_area(c)
            return total
        mask = self._mask.mask
        h, w = mask.shape
        c0 = max(0, int(math.floor(bx[0])))
        c1 = min(w, int(math.ceil(bx[2])))
        r0 = max(0, int(math.floor(bx[1])))
        r1 = min(h, int(math.ceil(bx[3])))
        if c1 <= c0 or r1 <= r0:
            return 0.0
        import numpy as np

        cols = np.arange(c0, c1, dtype=np.float64)
        rows = np.arange(r0, r1, dtype=np.float64)
        wx = np.clip(np.minimum(cols + 1, bx[2]) - np.maximum(cols, bx[0]), 0.0, None)
        wy = np.clip(np.minimum(rows + 1, bx[3]) - np.maximum(rows, bx[1]), 0.0, None)
        return float(wy @ mask[r0:r1, c0:c1].astype(np.float64) @ wx)

    def box_score(self, pred_px: Optional[Sequence[float]]) -> Optional[BoxScore]:
        """The box rule for a predicted pixel box against this target, with this region's
        thresholds. A single target box uses :func:`box_score` exactly (PointerBench's arithmetic);
        several boxes, a polygon or a mask use the same definitions with the exact intersection of
        :meth:`intersection_area_px` and :attr:`area_px`. ``None`` for an absent target (there is
        nothing to cover); ``malformed`` for a missing or invalid prediction."""
        if self.kind == "absent":
            return None
        if pred_px is None or not valid_box(pred_px):
            return BoxScore(box_class="malformed")
        if self.kind == "boxes" and len(self.boxes) == 1:
            return box_score(pred_px, self.boxes[0], self.min_coverage, self.min_precision)
        ax0, ay0, ax1, ay1 = sorted_box(pred_px)
        pred_area = max(0.0, ax1 - ax0) * max(0.0, ay1 - ay0)
        inter = self.intersection_area_px(pred_px) if pred_area else 0.0
        gt_area = self.area_px
        union = pred_area + gt_area - inter
        iou = inter / union if union else 0.0
        cov = inter / gt_area if gt_area else 0.0
        prec = inter / pred_area if pred_area else 0.0
        # clamp float noise from summed areas into [0, 1]
        iou, cov, prec = (min(1.0, max(0.0, v)) for v in (iou, cov, prec))
        return BoxScore(
            iou=iou, coverage=cov, precision=prec, box_class=box_class(cov, prec, self.min_coverage, self.min_precision)
        )

    def __repr__(self) -> str:
        return f"TargetRegion(kind={self.kind!r}, image_size={self.image_size}, area_px={self.area_px:g})"
