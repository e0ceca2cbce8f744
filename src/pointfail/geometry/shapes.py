"""Points, boxes and polygons in pixels of the original image: the one place their arithmetic lives.

Coordinate frames (``docs/architecture.md``, "Coordinates"):

* A normalized point is ``(x, y)`` in the unit square, origin top-left, x right, y down, continuous.
  Its position in pixels of the original image (``W`` x ``H``) is ``(x * W, y * H)``
  (:func:`to_pixels`), snapped to the nearest integer when within a relative 1e-9 of it, so float
  error does not move a point across a pixel edge (``0.29 * 100 == 28.999999999999996`` is 29).
* Pixel column ``i`` covers ``[i, i + 1)`` in pixel units; row ``j`` covers ``[j, j + 1)``
  (:func:`pixel_index`); exactly ``x == 1.0`` belongs to the last column.
* Pixel boxes ``[x0, y0, x1, y1]`` are absolute pixels of the original image, continuous
  coordinates, corners sorted first (:func:`sorted_box`, as PointerBench's scorer does); a point is
  inside when ``x0 <= x <= x1 and y0 <= y <= y1`` (edges inclusive: the PointerBench ``eval.py``
  and ScreenSpot rule).
* Polygons are lists of ``[x, y]`` vertices in the same continuous pixel coordinates, even-odd rule,
  edges and vertices inside (within 1e-9 pixel): written here rather than taken from
  ``matplotlib.path``, which leaves points exactly on an edge undefined.

Boxes and points need no numpy (the families and the judge import them); polygon functions import
numpy when called.

>>> to_pixels((0.29, 0.5), (100, 10))
(29.0, 5.0)
>>> pixel_index(100.0, 100), pixel_index(100.5, 100)
(99, None)
>>> point_in_box((10, 20), [10, 5, 0, 20]), point_box_distance((13, 24), [0, 0, 10, 20])
(True, 5.0)
>>> box_area([4, 4, 0, 2]), box_center([0, 0, 10, 4])
(8.0, (5.0, 2.0))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from pointfail.geometry.errors import GeometryError

if TYPE_CHECKING:
    import numpy as np

    #: A polygon as ``[[x, y], ...]`` pixel vertices: nested sequences or an ``(n, 2)`` array.
    PolygonLike = Sequence[Sequence[float]] | np.ndarray

__all__ = [
    "box_area",
    "box_cells",
    "box_center",
    "clip_polygon_to_box",
    "pixel_index",
    "pixel_of",
    "point_box_distance",
    "point_in_box",
    "point_in_polygon",
    "point_polygon_distance",
    "polygon_area",
    "polygon_array",
    "sorted_box",
    "to_pixels",
    "union_area",
    "valid_box",
]

_SNAP_REL = 1e-9


def _snap(v: float) -> float:
    """``v`` (pixel units) snapped to the nearest integer when within a relative 1e-9 of it."""
    r = round(v)
    if abs(v - r) <= _SNAP_REL * max(1.0, abs(v)):
        return float(r)
    return v


def to_pixels(point_norm: Sequence[float], size: Sequence[int]) -> tuple[float, float]:
    """Normalized ``(x, y)`` → continuous pixel coordinates ``(x * W, y * H)`` of an image of
    ``size = (W, H)``, each snapped to the nearest integer when within a relative 1e-9 of it (so
    ``0.29 * 100`` is 29.0, not 28.999999999999996). Non-finite values pass through."""
    x, y = float(point_norm[0]), float(point_norm[1])
    px, py = x * size[0], y * size[1]
    if math.isfinite(px):
        px = _snap(px)
    if math.isfinite(py):
        py = _snap(py)
    return px, py


def pixel_index(v_px: float, n: int) -> Optional[int]:
    """The pixel (column or row) index that continuous pixel coordinate ``v_px`` falls in, on an axis
    of ``n`` pixels: ``floor(v_px)``, with ``v_px == n`` (normalized 1.0) the last pixel ``n - 1``.
    ``None`` for ``v_px < 0``, ``v_px > n`` or non-finite. Pass values from :func:`to_pixels`."""
    if not math.isfinite(v_px) or v_px < 0 or v_px > n:
        return None
    if v_px == n:
        return n - 1
    return int(math.floor(v_px))


def pixel_of(point_norm: Sequence[float], size: Sequence[int]) -> Optional[tuple[int, int]]:
    """The ``(column, row)`` pixel that normalized ``(x, y)`` falls in on an image of ``size = (W, H)``
    (:func:`to_pixels` then :func:`pixel_index` per axis), ``None`` when it is in no pixel."""
    px, py = to_pixels(point_norm, size)
    c = pixel_index(px, int(size[0]))
    r = pixel_index(py, int(size[1]))
    if c is None or r is None:
        return None
    return c, r


def sorted_box(box: Sequence[float]) -> tuple[float, float, float, float]:
    """``[x0, y0, x1, y1]`` with the corners sorted: ``(min x, min y, max x, max y)``, as floats."""
    x0, y0, x1, y1 = (float(v) for v in box)
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def valid_box(box: Any) -> bool:
    """Whether ``box`` is exactly four finite numbers."""
    try:
        vals = [float(v) for v in box]
    except (TypeError, ValueError):
        return False
    return len(vals) == 4 and all(math.isfinite(v) for v in vals)


def point_in_box(point_px: Sequence[float], box_px: Sequence[float]) -> bool:
    """Whether pixel point ``(x, y)`` lies in box ``[x0, y0, x1, y1]`` (pixels), edges inclusive:
    ``x0 <= x <= x1 and y0 <= y <= y1`` after sorting the corners. Source: PointerBench ``eval.py``
    (``_in_bbox``) and ScreenSpot. Non-finite coordinates are outside."""
    x, y = float(point_px[0]), float(point_px[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        return False
    x0, y0, x1, y1 = sorted_box(box_px)
    return x0 <= x <= x1 and y0 <= y <= y1


def box_area(box: Sequence[float]) -> float:
    """Area in square pixels of a box ``[x0, y0, x1, y1]`` (corners sorted first)."""
    x0, y0, x1, y1 = sorted_box(box)
    return (x1 - x0) * (y1 - y0)


def box_cells(box: Sequence[float], image_size: tuple[int, int]) -> Optional[tuple[int, int, int, int]]:
    """The pixel cells a target box covers: ``(c0, r0, c1, r1)``, inclusive column and row indices
    clipped to the image, or ``None`` when the box lies outside it.

    Args:
        box: ``[x0, y0, x1, y1]`` in absolute pixels of the original image (corners in any order);
            edges inclusive, so column ``i`` (span ``[i, i + 1)``) is covered when it meets ``[x0, x1]``.
        image_size: ``(W, H)`` in pixels.

    >>> box_cells([2.5, 1, 4, 3], (10, 10)), box_cells([20, 0, 30, 5], (10, 10))
    ((2, 1, 4, 3), None)
    """
    w, h = image_size
    x0, y0, x1, y1 = sorted_box(box)
    c0, c1 = max(math.floor(x0), 0), min(math.floor(x1), w - 1)
    r0, r1 = max(math.floor(y0), 0), min(math.floor(y1), h - 1)
    if c0 <= c1 and r0 <= r1:
        return c0, r0, c1, r1
    return None


def box_center(box: Sequence[float]) -> tuple[float, float]:
    """Centre ``((x0 + x1) / 2, (y0 + y1) / 2)`` of a box, in the box's own units (pixels, or the
    unit square for a normalized box)."""
    x0, y0, x1, y1 = (float(v) for v in box)
    return (x0 + x1) / 2.0, (y0 + y1) / 2.0


def point_box_distance(point_px: Sequence[float], box_px: Sequence[float]) -> float:
    """Euclidean distance in pixels from pixel point ``(x, y)`` to the closed box
    ``[x0, y0, x1, y1]`` (0 inside or on an edge)."""
    x, y = float(point_px[0]), float(point_px[1])
    x0, y0, x1, y1 = sorted_box(box_px)
    dx = max(x0 - x, 0.0, x - x1)
    dy = max(y0 - y, 0.0, y - y1)
    return math.hypot(dx, dy)


def polygon_array(polygon: PolygonLike) -> np.ndarray:
    """A polygon as a float ``(n, 2)`` array of ``[x, y]`` pixel vertices.

    Raises:
        GeometryError: fewer than 3 vertices, wrong shape or non-finite vertices.
    """
    import numpy as np

    p = np.asarray(polygon, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] < 3 or not np.isfinite(p).all():
        raise GeometryError(f"a polygon needs at least 3 finite [x, y] vertices, got shape {p.shape}")
    return p


def _segment_distances(x: float, y: float, p: np.ndarray) -> np.ndarray:
    import numpy as np

    a = p
    b = np.roll(p, -1, axis=0)
    d = b - a
    ll = (d**2).sum(axis=1)
    t = np.where(ll > 0, ((x - a[:, 0]) * d[:, 0] + (y - a[:, 1]) * d[:, 1]) / np.where(ll > 0, ll, 1.0), 0.0)
    t = np.clip(t, 0.0, 1.0)
    qx = a[:, 0] + t * d[:, 0]
    qy = a[:, 1] + t * d[:, 1]
    return np.hypot(x - qx, y - qy)


def point_in_polygon(point_px: Sequence[float], polygon: PolygonLike) -> bool:
    """Whether pixel point ``(x, y)`` lies in ``polygon`` (``[[x, y], ...]`` pixels, closed
    implicitly) by the even-odd rule (a horizontal ray to the right crosses the boundary an odd
    number of times), with points on an edge or vertex counted inside (within 1e-9 pixel), like the
    inclusive box rule. Non-finite coordinates are outside.

    Raises:
        GeometryError: fewer than 3 vertices or non-finite vertices.
    """
    import numpy as np

    x, y = float(point_px[0]), float(point_px[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        return False
    p = polygon_array(polygon)
    if float(_segment_distances(x, y, p).min()) <= 1e-9:
        return True
    x0, y0 = p[:, 0], p[:, 1]
    x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
    straddle = (y0 > y) != (y1 > y)
    dy = np.where(straddle, y1 - y0, 1.0)
    xint = x0 + (y - y0) * (x1 - x0) / dy
    return bool(np.count_nonzero(straddle & (x < xint)) % 2 == 1)


def point_polygon_distance(point_px: Sequence[float], polygon: PolygonLike) -> float:
    """Euclidean distance in pixels from pixel point ``(x, y)`` to the closed polygon: 0 inside (by
    :func:`point_in_polygon`), else the distance to the nearest edge.

    Raises:
        GeometryError: invalid polygon.
    """
    if point_in_polygon(point_px, polygon):
        return 0.0
    p = polygon_array(polygon)
    return float(_segment_distances(float(point_px[0]), float(point_px[1]), p).min())


def polygon_area(polygon: PolygonLike) -> float:
    """Area in square pixels of a simple polygon (shoelace formula, absolute value).

    Raises:
        GeometryError: invalid polygon.
    """
    import numpy as np

    p = polygon_array(polygon)
    x, y = p[:, 0], p[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y)) / 2.0)


def union_area(boxes: Sequence[tuple[float, float, float, float]]) -> float:
    """Exact area of a union of sorted boxes by coordinate compression."""
    import numpy as np

    boxes = [b for b in boxes if b[2] > b[0] and b[3] > b[1]]
    if not boxes:
        return 0.0
    if len(boxes) == 1:
        b = boxes[0]
        return (b[2] - b[0]) * (b[3] - b[1])
    xs = np.unique([v for b in boxes for v in (b[0], b[2])])
    ys = np.unique([v for b in boxes for v in (b[1], b[3])])
    covered = np.zeros((len(ys) - 1, len(xs) - 1), dtype=bool)
    for x0, y0, x1, y1 in boxes:
        i0, i1 = np.searchsorted(xs, [x0, x1])
        j0, j1 = np.searchsorted(ys, [y0, y1])
        covered[j0:j1, i0:i1] = True
    cell = np.outer(np.diff(ys), np.diff(xs))
    return float((cell * covered).sum())


def clip_polygon_to_box(p: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """Sutherland–Hodgman clipping of polygon ``p`` (n, 2) to an axis-aligned box."""
    import numpy as np

    x0, y0, x1, y1 = box
    pts = [tuple(v) for v in p]
    for axis, bound, keep_greater in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        if not pts:
            break
        out = []
        n = len(pts)
        for i in range(n):
            cur, nxt = pts[i], pts[(i + 1) % n]
            cin = cur[axis] >= bound if keep_greater else cur[axis] <= bound
            nin = nxt[axis] >= bound if keep_greater else nxt[axis] <= bound
            if cin:
                out.append(cur)
            if cin != nin:
                t = (bound - cur[axis]) / (nxt[axis] - cur[axis])
                out.append((cur[0] + t * (nxt[0] - cur[0]), cur[1] + t * (nxt[1] - cur[1])))
        pts = out
    return np.asarray(pts, dtype=np.float64).reshape(-1, 2)

