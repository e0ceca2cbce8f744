"""Target geometry: masks, boxes, polygons, point containment, box overlap and distances.

Coordinate frames (``shared/DESIGN.md``, "Coordinates"; ``docs/architecture.md``):

* A normalized point is ``(x, y)`` in the unit square, origin top-left, x right, y down, continuous.
  Its position in pixels of the original image (``W`` x ``H``) is ``(x * W, y * H)``.
* Pixel column ``i`` covers ``[i, i + 1)`` in pixel units; row ``j`` covers ``[j, j + 1)``.
* Pixel boxes ``[x0, y0, x1, y1]`` are absolute pixels of the original image, continuous
  coordinates; a point is inside when ``x0 <= x <= x1 and y0 <= y <= y1`` (edges inclusive: the
  PointerBench ``eval.py`` and ScreenSpot rule). Corners are sorted first, as PointerBench's scorer
  does.
* Polygons are lists of ``[x, y]`` vertices in the same continuous pixel coordinates.

Rules implemented here (each has fixed-case tests with the arithmetic written out in
``tests/test_geometry.py``):

Point-in-mask (the study's "Scoring a single prediction": a pixel lookup)
    column = floor(x * W), row = floor(y * H), after snapping ``x * W`` to the nearest integer when
    it is within a relative 1e-9 of it, so float error does not move a point across a pixel edge
    (``0.29 * 100 == 28.999999999999996`` is column 29). Exactly ``x == 1.0`` (``x * W == W``)
    belongs to the last column (likewise for y). A point with ``x * W`` or ``y * H`` outside
    ``[0, W]`` / ``[0, H]`` (or not finite) is in no pixel and never in the mask.

Point-in-box
    Inclusive on both edges in pixel units, with the same snapping of ``x * W``.

Polygon containment
    Plain even-odd (crossing-number) rule, written here rather than taken from
    ``matplotlib.path`` because matplotlib leaves points exactly on an edge undefined; here a point on
    an edge or vertex is inside (inclusive, like boxes). Several polygons form a union.

Box overlap (PointerBench ``eval.py``, asymmetric box rule)
    Corners sorted; ``inter = max(0, ix1 - ix0) * max(0, iy1 - iy0)``; areas likewise;
    ``iou = inter / union``, ``coverage = inter / target_area``, ``precision = inter / pred_area``,
    each ``0.0`` when its denominator is 0. ``box_score``: ``hit`` when coverage >= 0.90 and
    precision >= 0.70 (thresholds from the row's ``eval`` when it has them), ``clipped`` (coverage
    too low only), ``oversized`` (precision too low only), ``both``, ``malformed`` (no valid box).

Distances (0 inside, ``None`` when there is no target: absent referent or empty mask)
    Boxes and polygons: the Euclidean distance in pixels from the exact point ``(x * W, y * H)`` to
    the closed region (nearest box / polygon edge).
    Masks: pixel-centre convention. The distance is the Euclidean distance between the centre of
    the pixel the point falls in (``(floor(x*W) + 0.5, floor(y*H) + 0.5)``, same snapping and
    last-column rule as the lookup; for a point outside the image the pixel is the one it would be
    in if the grid went on) and the centre of the nearest mask pixel. For a point inside the image
    this equals ``scipy.ndimage.distance_transform_edt(~mask)`` at that pixel, the Euclidean
    distance transform (tested against it). It is 0 exactly when the lookup says the point is in
    the mask, and a point one pixel beside the mask is 1.0. It is computed exactly from the ends of
    the mask's horizontal runs and the mask pixels in the point's column (the nearest mask pixel to
    any outside pixel is one of those), which costs a small fraction of a full-image transform
    (``bench/score.py`` prints both).
    Normalized distance: pixels divided by the image diagonal ``hypot(W, H)``.

Mask decoding (:func:`load_mask`) is cached by the sha256 of the file bytes, so a benchmark whose
samples share a mask decodes it once; cached arrays are read-only.
"""

from __future__ import annotations

import hashlib
import io
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from pointfail.limits import MAX_MASK_BYTES, MAX_MASK_PIXELS
from pointfail.records import BoxScore, Target
from pointfail.safeio import UnsafeFileError, open_binary, read_regular_file

__all__ = [
    "GeometryError",
    "MaskError",
    "MaskSizeError",
    "ImageError",
    "POINTERBENCH_MIN_COVERAGE",
    "POINTERBENCH_MIN_PRECISION",
    "image_size",
    "load_mask",
    "binarize_mask_image",
    "mask_cache_clear",
    "mask_cache_info",
    "to_pixels",
    "pixel_index",
    "point_in_mask",
    "point_in_box",
    "point_in_polygon",
    "box_overlap",
    "box_iou",
    "box_coverage",
    "box_precision",
    "box_score",
    "box_class",
    "point_box_distance",
    "point_polygon_distance",
    "mask_distance_px",
    "polygon_area",
    "TargetRegion",
]

POINTERBENCH_MIN_COVERAGE = 0.90
"""PointerBench box rule: share of the target box's area the prediction must cover."""
POINTERBENCH_MIN_PRECISION = 0.70
"""PointerBench box rule: share of the predicted box's area that must lie inside the target."""

_SNAP_REL = 1e-9


class GeometryError(ValueError):
    """A target that cannot be used for scoring (bad definition, unreadable file, wrong size)."""


class MaskError(GeometryError):
    """A mask file that cannot be read or decoded, or has an unsupported image mode. The message
    names the file."""


class MaskSizeError(MaskError):
    """A mask whose size differs from its image's. Attributes ``mask_size`` and ``image_size`` are
    ``(width, height)`` in pixels; the message names both."""

    def __init__(self, message: str, mask_size: tuple[int, int], image_size: tuple[int, int]):
        super().__init__(message)
        self.mask_size = mask_size
        self.image_size = image_size


class ImageError(GeometryError):
    """An image file whose size cannot be read (missing, corrupt, not an image)."""


# ---------------------------------------------------------------------------------------------
# images and masks


def image_size(path: str | Path) -> tuple[int, int]:
    """``(width, height)`` in pixels of the image at ``path``, read from the header only (the
    pixels are not decoded).

    Raises:
        ImageError: missing, unreadable or not an image; the message names the file.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with open_binary(path) as f, Image.open(f) as im:  # a FIFO or device is refused, not opened
            w, h = im.size
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        raise ImageError(f"cannot read image {path}: {e}") from None
    if w <= 0 or h <= 0:
        raise ImageError(f"image {path} has an empty size {w}x{h}")
    return int(w), int(h)


def _zero_one_or_threshold(v: np.ndarray, threshold: float) -> np.ndarray:
    """0/1-coded values (every value 0 or 1) → ``v == 1``; otherwise ``v > threshold``."""
    if v.size and int(v.max()) <= 1 and int(v.min()) >= 0:
        return v == 1
    return v > threshold


def binarize_mask_image(img: Any) -> np.ndarray:
    """Binarize a decoded Pillow image into a boolean mask of shape ``(H, W)`` (row, column).

    The rule per encoding (explicit, so a mask means the same thing whatever tool wrote it):

    * JPEG (any mode): converted to 8-bit grey (``L``), in the mask where the value is ``> 127``.
      JPEG is lossy, so values near 0 and 255 are noise; this is the Point-Bench / Where2Place
      convention (masks binarized at > 127).
    * ``1``: in the mask where the bit is set.
    * ``L`` (8-bit grey): a 0/1-coded mask (every value 0 or 1) is in where the value is 1; any
      other mask (0/255 and everything else) is in where the value is ``> 127``.
    * ``I;16`` / ``I`` (16/32-bit grey): 0/1-coded → value 1; else if every value is ``<= 255``
      (an 8-bit mask stored wide) → ``> 127``; else ``> 32767``.
    * ``RGB``: per pixel the largest of the three channels, then the ``L`` rule (so a pure red
      region on black, ``(255, 0, 0)``, is in the mask; its luminance, 76, would not be).
    * ``RGBA`` / ``LA``: if the alpha channel varies, it is the mask (an overlay on transparency):
      in where alpha ``> 127`` (0/1-coded alpha: alpha 1). A fully transparent image (alpha 0
      everywhere) is an empty mask. Any other constant alpha carries no information and the colour
      channels decide, by the ``RGB`` / ``L`` rule (so an alpha-coded mask that is all in or all
      out cannot be told from a colour-coded one: it is read by its colour).
    * ``P`` / ``PA`` (palette): expanded through the palette (and its transparency) to ``RGBA``,
      then the ``RGBA`` rule. The palette index itself is not used, so the order of the palette
      does not matter.
    * Anything else (``F``, ``CMYK`` PNG/TIFF, ...): :class:`MaskError`.

    Only the first frame of a multi-frame file is used. EXIF orientation is not applied: a mask is
    aligned with the stored pixel grid of its image.

    Raises:
        MaskError: unsupported mode.
    """
    fmt = (getattr(img, "format", None) or "").upper()
    mode = img.mode
    if fmt in ("JPEG", "MPO"):
        return np.asarray(img.convert("L")) > 127
    if mode == "1":
        return np.asarray(img, dtype=bool).copy()
    if mode == "L":
        return _zero_one_or_threshold(np.asarray(img), 127)
    if mode in ("I", "I;16", "I;16L", "I;16B", "I;16N"):
        v = np.asarray(img).astype(np.int64)
        if v.size and v.min() >= 0 and v.max() <= 1:
            return v == 1
        if v.size and v.max() <= 255:
            return v > 127
        return v > 32767
    if mode in ("P", "PA"):
        img = img.convert("RGBA")
        mode = "RGBA"
    if mode == "RGB":
        return _zero_one_or_threshold(np.asarray(img).max(axis=2), 127)
    if mode in ("RGBA", "LA"):
        a = np.asarray(img)
        alpha = a[..., -1]
        if alpha.size and alpha.min() != alpha.max():
            return _zero_one_or_threshold(alpha, 127)
        if alpha.size and int(alpha.max()) == 0:
            return np.zeros(alpha.shape, dtype=bool)  # fully transparent: nothing drawn
        colour = a[..., :-1].max(axis=2)
        return _zero_one_or_threshold(colour, 127)
    raise MaskError(
        f"unsupported mask image mode {mode!r} (supported: 1, L, I;16, I, P, PA, RGB, RGBA, LA, and JPEG)"
    )


@dataclass
class _MaskInfo:
    """A decoded mask and lazily computed facts about it (shared through the cache)."""

    mask: np.ndarray  # bool (H, W), read-only
    _area: Optional[int] = None
    _bbox: Optional[tuple[int, int, int, int]] = None  # r0, r1 (excl), c0, c1 (excl)
    _bbox_done: bool = False
    _boundary: Optional[np.ndarray] = None  # (K, 2) float64 (row, col) of boundary pixels
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def area(self) -> int:
        if self._area is None:
            self._area = int(np.count_nonzero(self.mask))
        return self._area

    @property
    def bbox(self) -> Optional[tuple[int, int, int, int]]:
        if not self._bbox_done:
            rows = np.flatnonzero(self.mask.any(axis=1))
            if rows.size:
                r0, r1 = int(rows[0]), int(rows[-1]) + 1
                cols = np.flatnonzero(self.mask[r0:r1].any(axis=0))
                self._bbox = (r0, r1, int(cols[0]), int(cols[-1]) + 1)
            self._bbox_done = True
        return self._bbox

    @property
    def boundary(self) -> np.ndarray:
        """(row, col) of the mask's horizontal run ends: mask pixels whose left or right neighbour
        is outside the mask (or outside the image). With the mask pixels of the query's own column,
        these hold the nearest mask pixel to any non-mask pixel (see :func:`_mask_distance`)."""
        if self._boundary is None:
            with self._lock:
                if self._boundary is None:
                    bb = self.bbox
                    if bb is None:
                        self._boundary = np.zeros((0, 2))
                    else:
                        r0, r1, c0, c1 = bb
                        sub = self.mask[r0:r1, c0:c1]
                        wc = c1 - c0
                        rows = [np.flatnonzero(sub[:, 0]), np.flatnonzero(sub[:, -1])]  # runs at the crop edges
                        cols = [np.zeros(len(rows[0]), np.int64), np.full(len(rows[1]), wc - 1, np.int64)]
                        if wc > 1:
                            # a change between columns k and k+1 ends a run at k or starts one at k+1
                            # (1-D flatnonzero: much faster than 2-D nonzero)
                            idx = np.flatnonzero(sub[:, 1:] ^ sub[:, :-1])
                            rr, kk = np.divmod(idx, wc - 1)
                            rows.append(rr)
                            cols.append(np.where(sub[rr, kk + 1], kk + 1, kk))
                        rr = np.concatenate(rows) + r0
                        cc = np.concatenate(cols) + c0
                        self._boundary = np.stack([rr, cc], axis=1).astype(np.float64)
        return self._boundary


_CACHE_MAX = 256
"""Most decoded masks kept (least recently used evicted first)."""
_CACHE_MAX_BYTES = 512 * 1024 * 1024
"""Most bytes of decoded masks kept (one byte per pixel), so large masks cannot exhaust memory."""
_cache: "OrderedDict[tuple, _MaskInfo]" = OrderedDict()
_cache_lock = threading.Lock()
_cache_stats = {"hits": 0, "misses": 0}


def mask_cache_clear() -> None:
    """Empty the decoded-mask cache (benchmarks use it to time cold decoding)."""
    with _cache_lock:
        _cache.clear()
        _cache_stats["hits"] = 0
        _cache_stats["misses"] = 0


def mask_cache_info() -> dict[str, int]:
    """``{"hits", "misses", "size", "max_size", "bytes", "max_bytes"}`` of the decoded-mask cache."""
    with _cache_lock:
        nbytes = sum(i.mask.nbytes for i in _cache.values())
        return {**_cache_stats, "size": len(_cache), "max_size": _CACHE_MAX, "bytes": nbytes, "max_bytes": _CACHE_MAX_BYTES}


def _cache_get(key: tuple) -> Optional[_MaskInfo]:
    with _cache_lock:
        info = _cache.get(key)
        if info is not None:
            _cache.move_to_end(key)
            _cache_stats["hits"] += 1
        return info


def _cache_put(key: tuple, info: _MaskInfo) -> None:
    with _cache_lock:
        _cache_stats["misses"] += 1
        _cache[key] = info
        _cache.move_to_end(key)
        total = sum(i.mask.nbytes for i in _cache.values())
        while len(_cache) > 1 and (len(_cache) > _CACHE_MAX or total > _CACHE_MAX_BYTES):
            _, old = _cache.popitem(last=False)
            total -= old.mask.nbytes


def _same_aspect(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether sizes ``a`` and ``b`` (W, H) have the same aspect ratio up to rounding each side of
    a rescaled image to whole pixels: ``|wa*hb - wb*ha| <= (max(wa, wb) + max(ha, hb)) / 2``."""
    (wa, ha), (wb, hb) = a, b
    return abs(wa * hb - wb * ha) <= 0.5 * (max(wa, wb) + max(ha, hb))


def _decode(path: Path, data: bytes) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            w, h = im.size
            if w * h > MAX_MASK_PIXELS:  # from the header, before any pixel is decoded
                raise MaskError(f"mask {path} is {w}x{h} pixels, more than the limit of {MAX_MASK_PIXELS} pixels")
            im.load()
            arr = binarize_mask_image(im)
    except MaskError as e:
        raise MaskError(f"mask {path}: {e}") from None
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        raise MaskError(f"mask {path} is not a readable image: {e}") from None
    if arr.ndim != 2 or arr.size == 0:
        raise MaskError(f"mask {path} decoded to an empty or non-2D array of shape {arr.shape}")
    return arr


def _load_mask_info(
    path: str | Path, expected_size: Optional[Sequence[int]] = None, allow_rescale: bool = False
) -> _MaskInfo:
    p = Path(path)
    try:  # type and size are checked on the open file before a byte is read (FIFO, /dev/zero, huge)
        data = read_regular_file(p, MAX_MASK_BYTES)
    except UnsafeFileError as e:
        raise MaskError(f"cannot read mask {e}") from None
    except OSError as e:
        raise MaskError(f"cannot read mask {p}: {e.strerror or e}") from None
    sha = hashlib.sha256(data).hexdigest()
    info = _cache_get((sha, None))
    if info is None:
        arr = _decode(p, data)
        arr.setflags(write=False)
        info = _MaskInfo(arr)
        _cache_put((sha, None), info)
    if expected_size is None:
        return info
    W, H = int(expected_size[0]), int(expected_size[1])
    h, w = info.mask.shape
    if (w, h) == (W, H):
        return info
    if not allow_rescale:
        raise MaskSizeError(
            f"mask {p} is {w}x{h} pixels but its image is {W}x{H} (width x height); "
            "pass allow_rescale=True only if the mask is the same picture at another scale",
            (w, h),
            (W, H),
        )
    if not _same_aspect((w, h), (W, H)):
        raise MaskSizeError(
            f"mask {p} is {w}x{h} pixels but its image is {W}x{H} (width x height), "
            "and the aspect ratios differ, so it cannot be rescaled",
            (w, h),
            (W, H),
        )
    key = (sha, (W, H))
    scaled = _cache_get(key)
    if scaled is None:
        from PIL import Image

        arr = np.asarray(Image.fromarray(info.mask).resize((W, H), Image.Resampling.NEAREST), dtype=bool).copy()
        arr.setflags(write=False)
        scaled = _MaskInfo(arr)
        _cache_put(key, scaled)
    return scaled


def load_mask(
    path: str | Path, expected_size: Optional[Sequence[int]] = None, allow_rescale: bool = False
) -> np.ndarray:
    """Load and binarize a mask file.

    Args:
        path: PNG, JPEG (or any format Pillow reads) mask file.
        expected_size: ``(width, height)`` in pixels of the image the mask belongs to, or ``None``
            to skip the check.
        allow_rescale: the caller declares the mask is the same picture at another scale; a mask
            of the same aspect ratio (up to whole-pixel rounding) is then resized to
            ``expected_size`` with nearest-neighbour sampling of the binarized mask.

    Returns:
        A read-only boolean array of shape ``(H, W)`` (row, column), ``True`` inside the target,
        binarized by the per-encoding rule of :func:`binarize_mask_image`. Decoding is cached by
        the sha256 of the file bytes (the file is re-read and re-hashed on every call, so a changed
        file is decoded again).

    Raises:
        MaskError: missing, unreadable or corrupt file, or an unsupported image mode (names the
            file); not a regular file (a FIFO, ``/dev/zero``, a directory: refused before reading),
            more than :data:`~pointfail.limits.MAX_MASK_BYTES` bytes, or more than
            :data:`~pointfail.limits.MAX_MASK_PIXELS` pixels by its header (refused before decoding).
        MaskSizeError: the size differs from ``expected_size`` and no same-aspect rescale was
            declared (names both sizes as width x height).
    """
    return _load_mask_info(path, expected_size, allow_rescale).mask


# ---------------------------------------------------------------------------------------------
# points


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


def _pixel_of(point_norm: Sequence[float], size: Sequence[int]) -> Optional[tuple[int, int]]:
    px, py = to_pixels(point_norm, size)
    c = pixel_index(px, int(size[0]))
    r = pixel_index(py, int(size[1]))
    if c is None or r is None:
        return None
    return c, r


def point_in_mask(point_norm: Sequence[float], mask: np.ndarray) -> bool:
    """Whether normalized ``(x, y)`` falls in a ``True`` pixel of ``mask`` (bool, shape ``(H, W)``):
    column ``floor(x * W)``, row ``floor(y * H)`` with the snapping and last-pixel rules of
    :func:`to_pixels` / :func:`pixel_index`; a point outside ``[0, 1]`` (or non-finite) is not in
    the mask. Source: the study's "Scoring a single prediction" (a pixel lookup)."""
    h, w = mask.shape
    cr = _pixel_of(point_norm, (w, h))
    if cr is None:
        return False
    return bool(mask[cr[1], cr[0]])


def _sorted_box(box: Sequence[float]) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in box)
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def _valid_box(box: Any) -> bool:
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
    x0, y0, x1, y1 = _sorted_box(box_px)
    return x0 <= x <= x1 and y0 <= y <= y1


def _polygon_array(polygon: Sequence[Sequence[float]]) -> np.ndarray:
    p = np.asarray(polygon, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] < 3 or not np.isfinite(p).all():
        raise GeometryError(f"a polygon needs at least 3 finite [x, y] vertices, got shape {p.shape}")
    return p


def _segment_distances(x: float, y: float, p: np.ndarray) -> np.ndarray:
    a = p
    b = np.roll(p, -1, axis=0)
    d = b - a
    ll = (d**2).sum(axis=1)
    t = np.where(ll > 0, ((x - a[:, 0]) * d[:, 0] + (y - a[:, 1]) * d[:, 1]) / np.where(ll > 0, ll, 1.0), 0.0)
    t = np.clip(t, 0.0, 1.0)
    qx = a[:, 0] + t * d[:, 0]
    qy = a[:, 1] + t * d[:, 1]
    return np.hypot(x - qx, y - qy)


def point_in_polygon(point_px: Sequence[float], polygon: Sequence[Sequence[float]]) -> bool:
    """Whether pixel point ``(x, y)`` lies in ``polygon`` (``[[x, y], ...]`` pixels, closed
    implicitly) by the even-odd rule (a horizontal ray to the right crosses the boundary an odd
    number of times), with points on an edge or vertex counted inside (within 1e-9 pixel), like the
    inclusive box rule. Non-finite coordinates are outside.

    Raises:
        GeometryError: fewer than 3 vertices or non-finite vertices.
    """
    x, y = float(point_px[0]), float(point_px[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        return False
    p = _polygon_array(polygon)
    if float(_segment_distances(x, y, p).min()) <= 1e-9:
        return True
    x0, y0 = p[:, 0], p[:, 1]
    x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
    straddle = (y0 > y) != (y1 > y)
    dy = np.where(straddle, y1 - y0, 1.0)
    xint = x0 + (y - y0) * (x1 - x0) / dy
    return bool(np.count_nonzero(straddle & (x < xint)) % 2 == 1)


def point_box_distance(point_px: Sequence[float], box_px: Sequence[float]) -> float:
    """Euclidean distance in pixels from pixel point ``(x, y)`` to the closed box
    ``[x0, y0, x1, y1]`` (0 inside or on an edge)."""
    x, y = float(point_px[0]), float(point_px[1])
    x0, y0, x1, y1 = _sorted_box(box_px)
    dx = max(x0 - x, 0.0, x - x1)
    dy = max(y0 - y, 0.0, y - y1)
    return math.hypot(dx, dy)


def point_polygon_distance(point_px: Sequence[float], polygon: Sequence[Sequence[float]]) -> float:
    """Euclidean distance in pixels from pixel point ``(x, y)`` to the closed polygon: 0 inside (by
    :func:`point_in_polygon`), else the distance to the nearest edge.

    Raises:
        GeometryError: invalid polygon.
    """
    if point_in_polygon(point_px, polygon):
        return 0.0
    p = _polygon_array(polygon)
    return float(_segment_distances(float(point_px[0]), float(point_px[1]), p).min())


def polygon_area(polygon: Sequence[Sequence[float]]) -> float:
    """Area in square pixels of a simple polygon (shoelace formula, absolute value).

    Raises:
        GeometryError: invalid polygon.
    """
    p = _polygon_array(polygon)
    x, y = p[:, 0], p[:, 1]
    return float(abs(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y)) / 2.0)


def _mask_distance(info: _MaskInfo, point_norm: Sequence[float]) -> Optional[float]:
    mask = info.mask
    h, w = mask.shape
    px, py = to_pixels(point_norm, (w, h))
    if not (math.isfinite(px) and math.isfinite(py)):
        return None
    c = w - 1 if px == w else math.floor(px)
    r = h - 1 if py == h else math.floor(py)
    if 0 <= c < w and 0 <= r < h and mask[r, c]:
        return 0.0
    # The nearest mask pixel m to the point's pixel q = (r, c): if m is in another column, its
    # horizontal neighbour towards c is nearer to q, so it is not in the mask: m ends a horizontal
    # run. Otherwise m is in column c. So the candidates are the run ends (cached per mask, computed
    # only when a point first misses it) and the mask pixels of column c.
    b = info.boundary
    if not len(b):
        return None  # empty mask
    d2 = float(((b[:, 0] - r) ** 2 + (b[:, 1] - c) ** 2).min())
    r0, r1, c0, c1 = info.bbox  # not None: the mask is not empty
    if c0 <= c < c1:
        # the mask pixels of column c lie within the bounding box's rows: scan only those (a
        # strided column read touches one cache line per row)
        rows = np.flatnonzero(mask[r0:r1, c])
        if rows.size:
            d2 = min(d2, float(np.abs(rows + (r0 - r)).min()) ** 2)
    return float(math.sqrt(d2))


def mask_distance_px(point_norm: Sequence[float], mask: np.ndarray) -> Optional[float]:
    """Distance in pixels from normalized ``(x, y)`` to ``mask`` (bool ``(H, W)``) by the pixel-centre
    convention in the module docstring: 0 when the lookup puts the point in the mask, else the
    distance between the centre of the point's pixel and the centre of the nearest mask pixel (for
    in-image points, equal to ``scipy.ndimage.distance_transform_edt(~mask)`` there). ``None`` for an
    empty mask or a non-finite point."""
    return _mask_distance(_MaskInfo(np.asarray(mask, dtype=bool)), point_norm)


# ---------------------------------------------------------------------------------------------
# boxes


def box_overlap(pred_px: Sequence[float], target_px: Sequence[float]) -> tuple[float, float, float]:
    """``(iou, coverage, precision)`` of a predicted box against a target box, both
    ``[x0, y0, x1, y1]`` in pixels (corners sorted first). ``coverage = inter / target_area``,
    ``precision = inter / pred_area``, ``iou = inter / union``; each 0.0 when its denominator is 0.
    Source: PointerBench ``eval.py`` (``_overlap``), same operations in the same order."""
    ax0, ay0, ax1, ay1 = _sorted_box(pred_px)
    bx0, by0, bx1, by1 = _sorted_box(target_px)
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
) -> str:
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
    if pred_px is None or not _valid_box(pred_px):
        return BoxScore(box_class="malformed")
    iou, cov, prec = box_overlap(pred_px, target_px)
    return BoxScore(iou=iou, coverage=cov, precision=prec, box_class=box_class(cov, prec, min_coverage, min_precision))


def _union_area(boxes: Sequence[tuple[float, float, float, float]]) -> float:
    """Exact area of a union of sorted boxes by coordinate compression."""
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


def _clip_polygon_to_box(p: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """Sutherland–Hodgman clipping of polygon ``p`` (n, 2) to an axis-aligned box."""
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


# ---------------------------------------------------------------------------------------------
# target regions


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
        mask_info: Optional[_MaskInfo] = None,
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
            if mask_info is None:
                raise GeometryError("a mask target needs a mask")
            mh, mw = mask_info.mask.shape
            if (mw, mh) != (W, H):
                raise MaskSizeError(
                    f"mask is {mw}x{mh} pixels but its image is {W}x{H} (width x height)", (mw, mh), (W, H)
                )
        if kind == "boxes":
            if not boxes:
                raise GeometryError("a boxes target needs at least one box")
            for b in boxes:
                if not _valid_box(b):
                    raise GeometryError(f"target box must be 4 finite numbers [x0, y0, x1, y1], got {b!r}")
        self.boxes: tuple[tuple[float, float, float, float], ...] = tuple(_sorted_box(b) for b in boxes)
        if kind == "polygon" and not polygons:
            raise GeometryError("a polygon target needs at least one polygon")
        self.polygons: tuple[np.ndarray, ...] = tuple(_polygon_array(p) for p in polygons)
        self.min_coverage = float(min_coverage)
        self.min_precision = float(min_precision)
        self._area: Optional[float] = None

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
        thresholds = {
            "min_coverage": float(ev.get("min_coverage", POINTERBENCH_MIN_COVERAGE)),
            "min_precision": float(ev.get("min_precision", POINTERBENCH_MIN_PRECISION)),
        }
        if target.kind == "mask":
            if not target.mask_path:
                raise GeometryError("mask target has no mask_path")
            p = Path(target.mask_path)
            if base_dir is not None and not p.is_absolute():
                p = Path(base_dir) / p
            info = _load_mask_info(p, image_size, allow_rescale)
            return cls("mask", image_size, mask_info=info, **thresholds)
        if target.kind == "boxes":
            return cls("boxes", image_size, boxes=target.boxes or [], **thresholds)
        if target.kind == "polygon":
            return cls("polygon", image_size, polygons=target.polygons or [], **thresholds)
        return cls("absent", image_size, **thresholds)

    @classmethod
    def from_mask_array(cls, mask: np.ndarray, **kw: Any) -> "TargetRegion":
        """A mask region from a boolean ``(H, W)`` array (the image size is the mask's)."""
        arr = np.array(mask, dtype=bool)
        if arr.ndim != 2 or arr.size == 0:
            raise GeometryError(f"mask must be a non-empty 2-D array, got shape {arr.shape}")
        arr.setflags(write=False)
        h, w = arr.shape
        return cls("mask", (w, h), mask_info=_MaskInfo(arr), **kw)

    # -- queries -----------------------------------------------------------------------------

    @property
    def mask(self) -> Optional[np.ndarray]:
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
            cr = _pixel_of(point_norm, self.image_size)
            return cr is not None and bool(self._mask_info.mask[cr[1], cr[0]])
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
            return _mask_distance(self._mask_info, point_norm)
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
        return self.kind == "mask" and self._mask_info.bbox is None

    @property
    def area_px(self) -> float:
        """Target area in square pixels: mask pixel count; exact area of the union of the boxes;
        sum of the polygons' shoelace areas (overlapping polygons are counted twice); 0 when absent."""
        if self._area is None:
            if self.kind == "mask":
                self._area = float(self._mask_info.area)
            elif self.kind == "boxes":
                self._area = _union_area(self.boxes)
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
            bb = self._mask_info.bbox
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
            allp = np.concatenate(self.polygons)
            return [float(allp[:, 0].min()), float(allp[:, 1].min()), float(allp[:, 0].max()), float(allp[:, 1].max())]
        return None

    def intersection_area_px(self, box_px: Sequence[float]) -> float:
        """Area in square pixels of the target inside pixel box ``[x0, y0, x1, y1]``: exact for boxes
        (union), polygons (Sutherland–Hodgman clip + shoelace, summed) and masks (each mask pixel
        ``[c, c+1) x [r, r+1)`` contributes its overlap with the box); 0 when absent."""
        bx = _sorted_box(box_px)
        if self.kind == "absent":
            return 0.0
        if self.kind == "boxes":
            clipped = [
                (max(b[0], bx[0]), max(b[1], bx[1]), min(b[2], bx[2]), min(b[3], bx[3])) for b in self.boxes
            ]
            return _union_area(clipped)
        if self.kind == "polygon":
            total = 0.0
            for p in self.polygons:
                c = _clip_polygon_to_box(p, bx)
                if len(c) >= 3:
                    total += polygon_area(c)
            return total
        mask = self._mask_info.mask
        h, w = mask.shape
        c0 = max(0, int(math.floor(bx[0])))
        c1 = min(w, int(math.ceil(bx[2])))
        r0 = max(0, int(math.floor(bx[1])))
        r1 = min(h, int(math.ceil(bx[3])))
        if c1 <= c0 or r1 <= r0:
            return 0.0
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
        if pred_px is None or not _valid_box(pred_px):
            return BoxScore(box_class="malformed")
        if self.kind == "boxes" and len(self.boxes) == 1:
            return box_score(pred_px, self.boxes[0], self.min_coverage, self.min_precision)
        ax0, ay0, ax1, ay1 = _sorted_box(pred_px)
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
