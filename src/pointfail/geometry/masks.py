"""Mask files: decoding, the one binarization rule, the one decoded-mask cache, lookups and distances.

Every reader of a mask file goes through here: the scorer (:func:`load_mask`, via
:class:`~pointfail.geometry.regions.TargetRegion`), the benchmark loaders (:func:`check_mask`,
which measures a mask's area with the scorer's own binarization, so a mask is empty to the loader
exactly when it is empty to the scorer), the judge's renderer, and the official-rule scorers
(:func:`mask_pixels`: the undecided pixel values, for rules that threshold them their own way).
Decoding is cached by the sha256 of the file bytes in one cache, so a benchmark whose samples share
a mask decodes it once; cached arrays are read-only.

Point-in-mask (the study's "Scoring a single prediction": a pixel lookup)
    column = floor(x * W), row = floor(y * H) with the snapping and last-pixel rules of
    :func:`pointfail.geometry.shapes.to_pixels`; a point outside ``[0, W]`` / ``[0, H]`` (or not
    finite) is in no pixel and never in the mask.

Distances (pixel-centre convention)
    The Euclidean distance between the centre of the pixel the point falls in
    (``(floor(x*W) + 0.5, floor(y*H) + 0.5)``, same snapping and last-column rule as the lookup; for
    a point outside the image the pixel is the one it would be in if the grid went on) and the
    centre of the nearest mask pixel. For a point inside the image this equals
    ``scipy.ndimage.distance_transform_edt(~mask)`` at that pixel (tested against it). It is 0
    exactly when the lookup says the point is in the mask, and a point one pixel beside the mask is
    1.0. It is computed exactly from the ends of the mask's horizontal runs and the mask pixels in
    the point's column (the nearest mask pixel to any outside pixel is one of those), a small
    fraction of a full-image transform (``bench/score.py`` prints both).

>>> import numpy as np
>>> m = np.zeros((4, 4), dtype=bool); m[1, 1] = True
>>> point_in_mask((0.3, 0.3), m), point_in_mask((0.6, 0.3), m), mask_distance_px((0.9, 0.3), m)
(True, False, 2.0)
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
from typing import Any, NamedTuple, Optional

import numpy as np

from pointfail.geometry.errors import ImageError, MaskError, MaskSizeError
from pointfail.geometry.shapes import pixel_of, to_pixels
from pointfail.limits import MAX_MASK_BYTES, MAX_MASK_PIXELS
from pointfail.safeio import UnsafeFileError, open_binary, read_regular_file

__all__ = [
    "MASK_CACHE_MAX",
    "MASK_CACHE_MAX_BYTES",
    "MaskCheck",
    "MaskInfo",
    "binarize_mask_image",
    "check_mask",
    "image_size",
    "load_mask",
    "load_mask_info",
    "mask_cache_clear",
    "mask_cache_info",
    "mask_distance",
    "mask_distance_px",
    "mask_pixels",
    "point_in_mask",
]


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


def _wide_grey(v: np.ndarray) -> np.ndarray:
    """The ``I;16`` / ``I`` rule of :func:`binarize_mask_image` on int64 values ``(H, W)``."""
    if v.size and v.min() >= 0 and v.max() <= 1:
        return v == 1
    if v.size and v.max() <= 255:
        return v > 127
    return v > 32767


def _with_alpha(a: np.ndarray) -> np.ndarray:
    """The ``RGBA`` / ``LA`` rule of :func:`binarize_mask_image` on ``(H, W, C)`` values, alpha last."""
    alpha = a[..., -1]
    if alpha.size and alpha.min() != alpha.max():
        return _zero_one_or_threshold(alpha, 127)
    if alpha.size and int(alpha.max()) == 0:
        return np.zeros(alpha.shape, dtype=bool)  # fully transparent: nothing drawn
    colour = a[..., :-1].max(axis=2)
    return _zero_one_or_threshold(colour, 127)


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
        return _wide_grey(np.asarray(img).astype(np.int64))
    if mode in ("P", "PA"):
        img = img.convert("RGBA")
        mode = "RGBA"
    if mode == "RGB":
        return _zero_one_or_threshold(np.asarray(img).max(axis=2), 127)
    if mode in ("RGBA", "LA"):
        return _with_alpha(np.asarray(img))
    raise MaskError(
        f"unsupported mask image mode {mode!r} (supported: 1, L, I;16, I, P, PA, RGB, RGBA, LA, and JPEG)"
    )


@dataclass
class MaskInfo:
    """A decoded boolean mask ``(H, W)`` and lazily computed facts about it: area, bounding box and
    the ends of its horizontal runs (for distances). Shared through the decoded-mask cache."""

    mask: np.ndarray  # bool (H, W), read-only
    sha256: Optional[str] = None  # of the mask file's bytes, when it came from a file
    _area: Optional[int] = None
    _bbox: Optional[tuple[int, int, int, int]] = None  # r0, r1 (excl), c0, c1 (excl)
    _bbox_done: bool = False
    _boundary: Optional[np.ndarray] = None  # (K, 2) float64 (row, col) of boundary pixels
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def nbytes(self) -> int:
        """Bytes held by the decoded mask (one per pixel)."""
        return int(self.mask.nbytes)

    @property
    def area(self) -> int:
        """Pixels in the mask."""
        if self._area is None:
            self._area = int(np.count_nonzero(self.mask))
        return self._area

    @property
    def bbox(self) -> Optional[tuple[int, int, int, int]]:
        """``(r0, r1, c0, c1)`` (end-exclusive rows and columns) of the mask pixels, ``None`` when empty."""
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
        these hold the nearest mask pixel to any non-mask pixel (see :func:`mask_distance`)."""
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


MASK_CACHE_MAX = 256
"""Most decoded masks kept (least recently used evicted first)."""
MASK_CACHE_MAX_BYTES = 512 * 1024 * 1024
"""Most bytes of decoded masks kept (one byte per pixel), so large masks cannot exhaust memory."""
_cache: "OrderedDict[tuple, Any]" = OrderedDict()
"""Decoded masks (:class:`MaskInfo`) and raw pixel arrays (:func:`mask_pixels`), keyed by the file's
sha256 and what was decoded; anything with ``nbytes``."""
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
        nbytes = sum(i.nbytes for i in _cache.values())
        return {**_cache_stats, "size": len(_cache), "max_size": MASK_CACHE_MAX, "bytes": nbytes, "max_bytes": MASK_CACHE_MAX_BYTES}


def _cache_get(key: tuple) -> Any:
    with _cache_lock:
        info = _cache.get(key)
        if info is not None:
            _cache.move_to_end(key)
            _cache_stats["hits"] += 1
        return info


def _cache_put(key: tuple, info: Any) -> None:
    with _cache_lock:
        _cache_stats["misses"] += 1
        _cache[key] = info
        _cache.move_to_end(key)
        total = sum(i.nbytes for i in _cache.values())
        while len(_cache) > 1 and (len(_cache) > MASK_CACHE_MAX or total > MASK_CACHE_MAX_BYTES):
            _, old = _cache.popitem(last=False)
            total -= old.nbytes


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


def _read_mask_bytes(p: Path) -> bytes:
    """The bytes of a mask file; its type and size are checked on the open file before a byte is read
    (a FIFO, ``/dev/zero``, a directory or a file over :data:`~pointfail.limits.MAX_MASK_BYTES`)."""
    try:
        return read_regular_file(p, MAX_MASK_BYTES)
    except UnsafeFileError as e:
        raise MaskError(f"cannot read mask {e}") from None
    except OSError as e:
        raise MaskError(f"cannot read mask {p}: {e.strerror or e}") from None


def load_mask_info(
    path: str | Path, expected_size: Optional[Sequence[int]] = None, allow_rescale: bool = False
) -> MaskInfo:
    """:func:`load_mask` returning the cached :class:`MaskInfo` (the mask with its area, bounding box
    and the sha256 of the file), which the scorer and the loaders share.

    Raises:
        MaskError, MaskSizeError: as :func:`load_mask`.
    """
    p = Path(path)
    data = _read_mask_bytes(p)
    sha = hashlib.sha256(data).hexdigest()
    info = _cache_get((sha, None))
    if info is None:
        arr = _decode(p, data)
        arr.setflags(write=False)
        info = MaskInfo(arr, sha)
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
        scaled = MaskInfo(arr, sha)
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
    return load_mask_info(path, expected_size, allow_rescale).mask




def point_in_mask(point_norm: Sequence[float], mask: np.ndarray) -> bool:
    """Whether normalized ``(x, y)`` falls in a ``True`` pixel of ``mask`` (bool, shape ``(H, W)``):
    column ``floor(x * W)``, row ``floor(y * H)`` with the snapping and last-pixel rules of
    :func:`to_pixels` / :func:`pixel_index`; a point outside ``[0, 1]`` (or non-finite) is not in
    the mask. Source: the study's "Scoring a single prediction" (a pixel lookup)."""
    h, w = mask.shape
    cr = pixel_of(point_norm, (w, h))
    if cr is None:
        return False
    return bool(mask[cr[1], cr[0]])



def mask_distance(info: MaskInfo, point_norm: Sequence[float]) -> Optional[float]:
    """:func:`mask_distance_px` on a decoded mask (its boundary cached on ``info``): pixels from
    normalized ``(x, y)`` to the nearest mask pixel, 0 inside, ``None`` for an empty mask or a
    non-finite point."""
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
    bbox = info.bbox
    if bbox is None:
        return None  # empty mask (no boundary either)
    r0, r1, c0, c1 = bbox
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
    return mask_distance(MaskInfo(np.asarray(mask, dtype=bool)), point_norm)



def mask_pixels(path: str | Path) -> np.ndarray:
    """The pixel values of a mask file as decoded, not binarized: ``(H, W)`` for a grey image (a
    ``1``-mode image as 0/255 grey), ``(H, W, C)`` with channels. Read-only and cached with the decoded
    masks. For the official scorers, which threshold masks by their own published rules
    (:mod:`pointfail.official`).

    Raises:
        MaskError: missing, unreadable or corrupt file (names the file).
    """
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    data = _read_mask_bytes(p)
    key = (hashlib.sha256(data).hexdigest(), "pixels")
    arr = _cache_get(key)
    if arr is None:
        try:
            with Image.open(io.BytesIO(data)) as im:
                w, h = im.size
                if w * h > MAX_MASK_PIXELS:  # from the header, before any pixel is decoded
                    raise MaskError(f"mask {p} is {w}x{h} pixels, more than the limit of {MAX_MASK_PIXELS} pixels")
                arr = np.array(im.convert("L") if im.mode == "1" else im)
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
            raise MaskError(f"mask {p} is not a readable image: {e}") from None
        arr.setflags(write=False)
        _cache_put(key, arr)
    return arr


class MaskCheck(NamedTuple):
    """What :func:`check_mask` found: ``sha256`` of the file bytes (``None`` when they cannot be
    read), ``area_px`` (pixels inside the mask; ``None`` when the mask is unusable) and ``problem``
    (``None`` for a usable mask, else one line naming the file and what is wrong)."""

    sha256: Optional[str]
    area_px: Optional[float]
    problem: Optional[str]


def check_mask(path: str | Path, image_size_px: Sequence[int]) -> MaskCheck:
    """Check a mask file against its image and measure it, without raising: the loaders' check.

    The mask is binarized by the scorer's own rule (:func:`binarize_mask_image`, through the shared
    cache), so a mask is empty to a loader exactly when nothing could hit it when scored, and its
    area is the scorer's pixel count. Its size must be the image's ``(W, H)``; the header is read
    before any pixel is decoded.

    A per-sample mask problem (unreadable or corrupt file, wrong size, empty mask) is *returned*: the
    loader keeps the sample and the scorer records it as an ``error`` outcome with the reason.

    Returns:
        :class:`MaskCheck`; ``problem`` is e.g. ``"mask DIR/masks/a.png is 21x10, its image is
        20x10"``, ``"unreadable mask ...: <reason>"`` or ``"mask ... is empty (no pixel in the
        target after binarization)"``.
    """
    W, H = int(image_size_px[0]), int(image_size_px[1])
    try:
        w, h = image_size(path)
    except ImageError as e:
        return MaskCheck(_sha256_or_none(path), None, f"unreadable mask {path}: {e}")
    if (w, h) != (W, H):
        return MaskCheck(_sha256_or_none(path), None, f"mask {path} is {w}x{h}, its image is {W}x{H}")
    try:
        info = load_mask_info(path, (W, H))
    except MaskError as e:
        return MaskCheck(_sha256_or_none(path), None, f"unreadable mask {path}: {e}")
    if info.area == 0:
        return MaskCheck(info.sha256, None, f"mask {path} is empty (no pixel in the target after binarization)")
    return MaskCheck(info.sha256, float(info.area), None)


def _sha256_or_none(path: str | Path) -> Optional[str]:
    from pointfail.records import sha256_file

    try:
        return sha256_file(path)
    except OSError:
        return None
