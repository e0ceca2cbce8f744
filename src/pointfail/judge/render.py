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
* **Bytes.** PNG, RGB, zlib level 1 (fast; size does not matter on loopback or LAN), no metadata (no time stamp, no text chunks): the same inputs and
  Pillow version give the same bytes.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
from PIL import Image, ImageDraw

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
    raster = np.zeros((h, w), dtype=bool)
    if target.kind == "absent":
        return raster
    if target.kind == "mask":
        if not target.mask_path:
            raise ValueError("mask target without mask_path")
        from pointfail.geometry import load_mask  # lazy: the geometry module owns binarization

        mask = np.asarray(load_mask(_resolve(target.mask_path, base_dir), expected_size=(w, h)), dtype=bool)
        if mask.shape != (h, w):
            raise ValueError(f"mask is {mask.shape[1]}x{mask.shape[0]}, image is {w}x{h}")
        return mask
    if target.kind == "boxes":
        for box in target.boxes or []:
            x0, y0, x1, y1 = (float(v) for v in box)
            x0, x1 = sorted((x0, x1))
            y0, y1 = sorted((y0, y1))
            c0, c1 = max(math.floor(x0), 0), min(math.floor(x1), w - 1)
            r0, r1 = max(math.floor(y0), 0), min(math.floor(y1), h - 1)
            if c0 <= c1 and r0 <= r1:
                raster[r0 : r1 + 1, c0 : c1 + 1] = True
        return raster
    if target.kind == "polygon":
        canvas = Image.new("L", (w, h), 0)
        draw = ImageDraw.Draw(canvas)
        for poly in target.polygons or []:
            if len(poly) >= 3:
                draw.polygon([(float(x), float(y)) for x, y in poly], fill=1, outline=1)
        return np.asarray(canvas, dtype=np.uint8).astype(bool)
    raise ValueError(f"unknown target kind {target.kind!r}")


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
    with Image.open(image_path) as im:
        im.load()
        pixels = np.array(im if im.mode == "RGB" else im.convert("RGB"), dtype=np.uint8)
    h, w = pixels.shape[:2]
    if isinstance(target, Target):
        raster = target_raster(target, (w, h), base_dir)
    elif hasattr(target, "kind") and hasattr(target, "image_size"):  # a geometry.TargetRegion
        raster = _region_raster(target, (w, h))
    else:
        raster = np.asarray(target, dtype=bool)
        if raster.shape != (h, w):
            raise ValueError(f"target raster is {raster.shape[1]}x{raster.shape[0]}, image is {w}x{h}")
    rows = np.flatnonzero(raster.any(axis=1))
    if rows.size:  # tint inside the raster's bounding box only (same result, less work)
        cols = np.flatnonzero(raster.any(axis=0))
        r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        sub = raster[r0:r1, c0:c1]
        patch = pixels[r0:r1, c0:c1]
        green = np.array(GREEN, dtype=np.uint16)
        sel = patch[sub].astype(np.uint16)
        blended = (sel * (TINT_ALPHA_DEN - TINT_ALPHA_NUM) + green * TINT_ALPHA_NUM + TINT_ALPHA_DEN // 2) // TINT_ALPHA_DEN
        patch[sub] = blended.astype(np.uint8)
    out = Image.fromarray(pixels)
    r = marker_radius((w, h))
    cx = min(max(x * w, 0.0), float(w))
    cy = min(max(y * h, 0.0), float(h))
    draw = ImageDraw.Draw(out)
    draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=RED, width=max(2, r // 4))
    d = max(1, r // 5)
    draw.ellipse([cx - d, cy - d, cx + d, cy + d], fill=RED)
    buf = io.BytesIO()
    out.save(buf, format="PNG", compress_level=1, optimize=False)
    return buf.getvalue()
