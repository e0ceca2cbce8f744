"""Annotated images of misses, as the judge sees them.

Source: ``shared/seeds/pointfail-study.txt``, "The two-stage protocol": each miss is rendered as an
annotated image, the ground-truth region tinted (green), the predicted point marked (red). Nothing else
in the image changes: pixels outside the target and away from the marker keep their exact values.

Drawing rules:

* **Target tint.** Every target pixel becomes ``round((1 - a) * pixel + a * GREEN)`` per channel with
  ``a = TINT_ALPHA`` (integer arithmetic, so the bytes never depend on float rounding). Target pixels
  are those of the raster :func:`target_raster` builds: a mask file binarized by
  ``pointfail.geometry.load_mask``; for boxes (absolute pixels, edges inclusive) every pixel column ``i``
  whose span ``[i, i + 1)`` meets ``[x0, x1]`` (columns ``floor(x0) .. floor(x1)``), rows alike; polygons
  filled by Pillow's polygon rasterizer. An ``absent`` target tints nothing.
* **Marker.** A red ring of radius ``r = max(4, round(MARKER_FRACTION * min(W, H)))`` pixels (15 px on
  1024x768) and width ``max(2, r // 4)``, around the predicted point, plus a red centre dot of radius
  ``max(1, r // 5)``; the ring leaves what is under the point visible. A point outside the image is
  drawn at the nearest position on the image border (the prompt then says the point is outside).
* **Every parsed point and box** (:func:`annotation`, :func:`render_annotated`; the report's gallery
  and ``pointfail view`` draw with these rules, the judge sees only the primary point): the primary
  point (``scoring.primary_point``: the first point, else the first box's centre) gets the marker above;
  every other point a thinner orange ring of radius ``max(3, round(0.6 * r))`` without a dot; every
  predicted box (normalized in the record, drawn in pixels ``x * W``, ``y * H``) a red outline, 3 px
  for the primary box, 1 px for the others.
* **Bytes.** PNG, RGB, zlib level 1 (fast; size does not matter on loopback or LAN), no metadata (no time stamp, no text chunks): the same inputs and
  Pillow version give the same bytes.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
from PIL import Image, ImageDraw

from pointfail.geometry.shapes import box_cells, sorted_box
from pointfail.records import Target

GREEN = (0, 200, 0)
"""Tint colour of the correct target (RGB)."""
RED = (255, 0, 0)
"""Colour of the predicted-point marker (RGB)."""
TINT_ALPHA_NUM, TINT_ALPHA_DEN = 45, 100
TINT_ALPHA = TINT_ALPHA_NUM / TINT_ALPHA_DEN
"""Opacity of the green tint (0.45)."""
MARKER_FRACTION = 0.02
"""Marker radius as a fraction of the image's shorter side."""
ORANGE = (255, 140, 0)
"""Colour of the rings of the other (not scored) points (RGB)."""
SECONDARY_FRACTION = 0.6
"""Ring radius of the other points relative to the primary marker's."""


def _resolve(path: str, base_dir: Optional[Union[str, Path]]) -> Path:
    p = Path(path)
    if p.is_absolute() or base_dir is None:
        return p
    return Path(base_dir) / p


def target_raster(
    target: Target, image_size: tuple[int, int], base_dir: Optional[Union[str, Path]] = None
) -> np.ndarray:
    """The target as a boolean raster of shape ``(H, W)`` (rules in the module docstring).

    Args:
        target: a ``records.Target``; boxes and polygons in absolute pixels of the original image.
        image_size: ``(W, H)`` in pixels.
        base_dir: directory relative mask paths are resolved against (``None``: the working directory).

    Raises:
        ValueError: a ``mask`` target without ``mask_path``, or a mask whose size differs from the image
            (from ``pointfail.geometry.load_mask``, naming both sizes).
        OSError: the mask file cannot be read.
    """
    w, h = image_size
    if target.kind == "absent":
        return np.zeros((h, w), dtype=bool)
    if target.kind == "mask":
        return _mask_raster(target, (w, h), base_dir)
    if target.kind == "boxes":
        return _boxes_raster(target.boxes or [], (w, h))
    if target.kind == "polygon":
        return _polygons_raster(target.polygons or [], (w, h))
    raise ValueError(f"unknown target kind {target.kind!r}")


def _mask_raster(target: Target, image_size: tuple[int, int], base_dir: Optional[Union[str, Path]]) -> np.ndarray:
    """A ``mask`` target's mask file (``mask_path``, relative paths resolved against ``base_dir``) as a
    boolean ``(H, W)`` raster, binarized by ``pointfail.geometry.load_mask``; ``image_size`` is ``(W, H)``.

    Raises:
        ValueError: no ``mask_path``, or the mask's size differs from the image (naming both sizes).
        OSError: the mask file cannot be read.
    """
    w, h = image_size
    if not target.mask_path:
        raise ValueError("mask target without mask_path")
    from pointfail.geometry import load_mask  # lazy: the geometry module owns binarization

    mask = np.asarray(load_mask(_resolve(target.mask_path, base_dir), expected_size=(w, h)), dtype=bool)
    if mask.shape != (h, w):
        raise ValueError(f"mask is {mask.shape[1]}x{mask.shape[0]}, image is {w}x{h}")
    return mask


def _boxes_raster(boxes: list, image_size: tuple[int, int]) -> np.ndarray:
    """Boxes (``[x0, y0, x1, y1]`` in absolute pixels of the ``(W, H)`` image) as a boolean ``(H, W)``
    raster: every pixel cell :func:`box_cells` says a box covers (inclusive); a box outside the image
    adds nothing."""
    w, h = image_size
    raster = np.zeros((h, w), dtype=bool)
    for box in boxes:
        cells = box_cells(box, (w, h))
        if cells is not None:
            c0, r0, c1, r1 = cells
            raster[r0 : r1 + 1, c0 : c1 + 1] = True
    return raster


def _polygons_raster(polygons: list, image_size: tuple[int, int]) -> np.ndarray:
    """Polygons (``[[x, y], ...]`` in absolute pixels of the ``(W, H)`` image) filled with their outline by
    PIL's ``ImageDraw.polygon``, as a boolean ``(H, W)`` raster; a polygon of fewer than 3 vertices adds
    nothing."""
    canvas = Image.new("L", image_size, 0)
    draw = ImageDraw.Draw(canvas)
    for poly in polygons:
        if len(poly) >= 3:
            draw.polygon([(float(x), float(y)) for x, y in poly], fill=1, outline=1)
    return np.asarray(canvas, dtype=np.uint8).astype(bool)


def _region_raster(region: object, image_size: tuple[int, int]) -> np.ndarray:
    kind = getattr(region, "kind")
    if kind == "mask":
        mask = np.asarray(getattr(region, "mask"), dtype=bool)
        if mask.shape != (image_size[1], image_size[0]):
            raise ValueError(f"mask is {mask.shape[1]}x{mask.shape[0]}, image is {image_size[0]}x{image_size[1]}")
        return mask
    if kind == "boxes":
        return target_raster(Target(kind="boxes", boxes=[list(b) for b in getattr(region, "boxes")]), image_size)
    if kind == "polygon":
        polys = [np.asarray(p).tolist() for p in getattr(region, "polygons")]
        return target_raster(Target(kind="polygon", polygons=polys), image_size)
    return np.zeros((image_size[1], image_size[0]), dtype=bool)


def marker_radius(image_size: tuple[int, int]) -> int:
    """Ring radius in pixels for an image of ``(W, H)``: ``max(4, round(0.02 * min(W, H)))``."""
    return max(4, round(MARKER_FRACTION * min(image_size)))


def point_outside(point_norm: Sequence[float]) -> bool:
    """True when a normalized point lies outside the unit square (continuous, ``x = 1.0`` is inside)."""
    x, y = float(point_norm[0]), float(point_norm[1])
    return not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0)


@dataclass(frozen=True)
class Marker:
    """One parsed point as drawn, in pixels of the original image.

    Attributes:
        x, y: the centre, ``(x_norm * W, y_norm * H)`` clamped to ``[0, W] x [0, H]``.
        radius, width: ring radius and stroke width (pixels).
        dot: radius of the filled centre dot (0: none; only the primary point has one).
        index: 0-based position of the point in the reply's points (-1: the centre of the first
            box, used as the primary point when the reply has no point).
        primary: whether this is the scored point.
        outside: the point lies outside the image and is drawn at the nearest border position.
        color: RGB of the ring (and dot).
    """

    x: float
    y: float
    radius: int
    width: int
    dot: int
    index: int
    primary: bool
    outside: bool
    color: tuple[int, int, int]


@dataclass(frozen=True)
class Annotation:
    """What an annotated image shows besides the target tint (module docstring, "Drawing rules").

    Attributes:
        image_size: ``(W, H)`` in pixels.
        markers: secondary points first, the primary point last (it is drawn on top).
        boxes: predicted boxes ``(x0, y0, x1, y1)`` in pixels of the original image, reply order.
        primary_box: index into ``boxes`` of the primary box (the first), ``None`` without boxes.
    """

    image_size: tuple[int, int]
    markers: tuple[Marker, ...] = ()
    boxes: tuple[tuple[float, float, float, float], ...] = ()
    primary_box: Optional[int] = None


def _marker(point_norm: Sequence[float], image_size: tuple[int, int], index: int, primary: bool) -> Marker:
    x, y = (float(v) for v in point_norm[:2])
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f"point must be finite, got {point_norm!r}")
    w, h = image_size
    r = marker_radius(image_size)
    cx = min(max(x * w, 0.0), float(w))
    cy = min(max(y * h, 0.0), float(h))
    if primary:
        return Marker(cx, cy, r, max(2, r // 4), max(1, r // 5), index, True, point_outside((x, y)), RED)
    rs = max(3, round(SECONDARY_FRACTION * r))
    return Marker(cx, cy, rs, max(1, r // 6), 0, index, False, point_outside((x, y)), ORANGE)


def annotation(
    points: Sequence[Sequence[float]],
    boxes: Sequence[Sequence[float]],
    image_size: tuple[int, int],
    primary: Optional[Sequence[float]] = None,
) -> Annotation:
    """The markers and boxes of one parsed answer (rules in the module docstring).

    Args:
        points: parsed points ``[[x, y], ...]`` normalized (unit square, origin top-left), reply order.
        boxes: parsed boxes ``[[x0, y0, x1, y1], ...]`` normalized, reply order.
        image_size: ``(W, H)`` of the original image in pixels.
        primary: the scored point, normalized; pass ``scoring.primary_point(parse)`` (the first
            point, else the first box's centre). ``None``: no primary marker.

    Raises:
        ValueError: a non-finite primary point. Non-finite secondary points and boxes are skipped
            (a record never holds them; the parser drops them).
    """
    w, h = image_size
    markers: list[Marker] = []
    prim_index: Optional[int] = None
    if primary is not None:
        prim_index = -1
        for i, p in enumerate(points):
            if len(p) >= 2 and float(p[0]) == float(primary[0]) and float(p[1]) == float(primary[1]):
                prim_index = i
                break
    for i, p in enumerate(points):
        if i == prim_index or len(p) < 2 or not all(math.isfinite(float(v)) for v in p[:2]):
            continue
        markers.append(_marker(p, image_size, i, primary=False))
    if primary is not None:
        markers.append(_marker(primary, image_size, prim_index if prim_index is not None else -1, primary=True))
    px_boxes = []
    for b in boxes:
        if len(b) == 4 and all(math.isfinite(float(v)) for v in b):
            px_boxes.append((float(b[0]) * w, float(b[1]) * h, float(b[2]) * w, float(b[3]) * h))
    return Annotation((w, h), tuple(markers), tuple(px_boxes), 0 if px_boxes else None)


def tint(pixels: np.ndarray, raster: np.ndarray) -> None:
    """Blend the target colour into ``pixels`` (``(H, W, 3)`` uint8, in place) where ``raster``
    (``(H, W)`` bool) is set: ``round((1 - a) * pixel + a * GREEN)`` with integer arithmetic."""
    rows = np.flatnonzero(raster.any(axis=1))
    if not rows.size:
        return
    cols = np.flatnonzero(raster.any(axis=0))  # tint inside the raster's bounding box only
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    sub = raster[r0:r1, c0:c1]
    patch = pixels[r0:r1, c0:c1]
    green = np.array(GREEN, dtype=np.uint16)
    sel = patch[sub].astype(np.uint16)
    blended = (sel * (TINT_ALPHA_DEN - TINT_ALPHA_NUM) + green * TINT_ALPHA_NUM + TINT_ALPHA_DEN // 2) // TINT_ALPHA_DEN
    patch[sub] = blended.astype(np.uint8)


def tint_layer(raster: np.ndarray) -> tuple[Image.Image, tuple[int, int]]:
    """The tint as a transparent layer for viewers that stack it over the image: an RGBA image of
    the raster's bounding box, ``GREEN`` with alpha ``round(255 * TINT_ALPHA)`` on target pixels and
    fully transparent elsewhere, and its top-left corner ``(x, y)`` in pixels. An empty raster gives
    a 1x1 transparent layer at ``(0, 0)``."""
    rows = np.flatnonzero(raster.any(axis=1))
    if not rows.size:
        return Image.new("RGBA", (1, 1), (0, 0, 0, 0)), (0, 0)
    cols = np.flatnonzero(raster.any(axis=0))
    r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    sub = raster[r0:r1, c0:c1]
    rgba = np.zeros(sub.shape + (4,), dtype=np.uint8)
    rgba[sub] = (*GREEN, round(255 * TINT_ALPHA))
    return Image.fromarray(rgba, mode="RGBA"), (c0, r0)


def paint(image: Image.Image, ann: Annotation) -> None:
    """Draw the boxes and markers of ``ann`` on ``image`` (RGB, in place): boxes first, then
    secondary points, the primary point last."""
    draw = ImageDraw.Draw(image)
    for i, (x0, y0, x1, y1) in enumerate(ann.boxes):
        draw.rectangle(list(sorted_box((x0, y0, x1, y1))), outline=RED,
                       width=3 if i == ann.primary_box else 1)
    for m in ann.markers:
        draw.ellipse([m.x - m.radius, m.y - m.radius, m.x + m.radius, m.y + m.radius], outline=m.color, width=m.width)
        if m.dot:
            draw.ellipse([m.x - m.dot, m.y - m.dot, m.x + m.dot, m.y + m.dot], fill=m.color)


def _raster_for(target: object, size: tuple[int, int], base_dir: Optional[Union[str, Path]]) -> np.ndarray:
    w, h = size
    if isinstance(target, Target):
        return target_raster(target, (w, h), base_dir)
    if hasattr(target, "kind") and hasattr(target, "image_size"):  # a geometry.TargetRegion
        return _region_raster(target, (w, h))
    raster = np.asarray(target, dtype=bool)
    if raster.shape != (h, w):
        raise ValueError(f"target raster is {raster.shape[1]}x{raster.shape[0]}, image is {w}x{h}")
    return raster


def _load_rgb(image_path: Union[str, Path, Image.Image]) -> np.ndarray:
    if isinstance(image_path, Image.Image):
        return np.array(image_path.convert("RGB"), dtype=np.uint8)
    from pointfail.limits import MAX_IMAGE_BYTES
    from pointfail.safeio import open_binary

    with open_binary(image_path, max_bytes=MAX_IMAGE_BYTES) as f, Image.open(f) as im:  # regular files only
        im.load()
        return np.array(im if im.mode == "RGB" else im.convert("RGB"), dtype=np.uint8)


def render_annotated(
    image_path: Union[str, Path, Image.Image],
    target: Union[Target, np.ndarray],
    points: Sequence[Sequence[float]],
    boxes: Sequence[Sequence[float]] = (),
    primary: Optional[Sequence[float]] = None,
    *,
    base_dir: Optional[Union[str, Path]] = None,
) -> Image.Image:
    """An image with the target tinted and every parsed point and box drawn (module docstring), for
    people (the report's gallery); the judge gets :func:`render_miss`.

    Args:
        image_path: the original image, or a ``PIL.Image`` (e.g. a blank canvas of the image's size
            when the file is missing).
        target: as in :func:`render_miss`.
        points, boxes, primary: as in :func:`annotation` (normalized, unit square).
        base_dir: directory relative mask paths are resolved against.

    Returns:
        An RGB ``PIL.Image`` of the original image's size.

    Raises:
        OSError / PIL.UnidentifiedImageError: the image cannot be read.
        ValueError: a non-finite primary point, or a target raster whose shape differs from the image.
    """
    pixels = _load_rgb(image_path)
    h, w = pixels.shape[:2]
    ann = annotation(points, boxes, (w, h), primary)
    tint(pixels, _raster_for(target, (w, h), base_dir))
    out = Image.fromarray(pixels)
    paint(out, ann)
    return out


def render_miss(
    image_path: Union[str, Path],
    target: Union[Target, np.ndarray],
    point_norm: Sequence[float],
    *,
    base_dir: Optional[Union[str, Path]] = None,
) -> bytes:
    """Render one miss: target tinted green, predicted point marked red, PNG bytes.

    Args:
        image_path: the original image (any mode Pillow reads; converted to RGB).
        target: a ``records.Target`` (rasterized by :func:`target_raster`), a
            ``geometry.TargetRegion`` (its mask, or its boxes/polygons rasterized the same way), or a
            boolean array of shape ``(H, W)`` marking the target pixels.
        point_norm: the primary point ``(x, y)`` normalized to the unit square, origin top-left.
        base_dir: directory relative mask paths are resolved against.

    Returns:
        PNG bytes, deterministic for the same inputs and Pillow version.

    Raises:
        OSError / PIL.UnidentifiedImageError: the image cannot be read.
        ValueError: a non-finite point, or a target raster whose shape differs from the image.
    """
    x, y = (float(v) for v in point_norm)
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f"point must be finite, got {point_norm!r}")
    pixels = _load_rgb(image_path)
    h, w = pixels.shape[:2]
    tint(pixels, _raster_for(target, (w, h), base_dir))
    out = Image.fromarray(pixels)
    paint(out, annotation([], [], (w, h), primary=(x, y)))
    buf = io.BytesIO()
    out.save(buf, format="PNG", compress_level=1, optimize=False)
    return buf.getvalue()
