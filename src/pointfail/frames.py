"""Coordinate frames: how a model family's numbers map to the unit square, and ``smart_resize``.

pointfail's normalized coordinates are ``(x, y)`` in the unit square, origin top-left, x right, y down,
continuous (pixel column ``i`` covers ``[i, i+1)`` in pixel units). Every family declares one
:class:`Frame` in its family file; its parser converts with that declaration and never guesses the
frame from the size of the numbers (``shared/DESIGN.md``, "Coordinates").

Frame kinds and their conversion to the unit square (``v`` is the value the model wrote, ``W, H``
the original image size, ``Wr, Hr`` the model-input size the processor produced):

===================  ===================================  ==========================================
kind                 ``to_unit``                          used by
===================  ===================================  ==========================================
``percent``          ``v / 100``                          Molmo (0-100 percent of the image)
``grid``             ``v / 1000``                         Qwen3-VL, InternVL3, Gemini, Molmo2, ...
``bins``             ``(n + 0.5) / N`` (centre of bin n)  Florence-2 (N = 1000)
``bin_index``        ``n / (N - 1)`` (edge to edge)       PaliGemma (N = 1024 ``<loc>`` tokens)
``patch_grid``       ``(i + 0.5) / N`` (patch centre)     Kosmos-2 (N = 32 patches per side)
``unit``             ``v``                                ShowUI (0-1 floats)
``pixels_original``  ``v / W`` (resp. ``/ H``)            PointerBench JSON convention (API models)
``pixels_resized``   ``v / Wr`` (resp. ``/ Hr``)          Qwen2.5-VL and GUI models built on it
===================  ===================================  ==========================================

Decisions, with their sources:

* **Bins → centre of bin** (``bins``, Florence-2). A bin token ``n`` stands for the interval
  ``[n/N, (n+1)/N)``; its value is the centre ``(n + 0.5) / N``, as Florence-2's own post-processor
  dequantizes (its coordinate quantizer in ``floor`` mode adds 0.5 to the bin index before scaling).
  ``from_unit`` writes ``floor(x * N)`` clamped to ``[0, N-1]``.
* **Bin index → endpoint grid** (``bin_index``, PaliGemma). Google's big_vision PaliGemma code writes
  a coordinate ``v`` in ``[0, 1]`` as the token ``round(v * (N - 1))`` (N = 1024: ``<loc0000>`` is the
  top/left edge, ``<loc1023>`` the bottom/right edge) and reads token ``n`` back as ``n / (N - 1)``;
  we follow the authors' rule both ways. (Reading it as a bin centre, ``(n + 0.5) / N``, is off by up
  to ``0.5 / N``, 1.875 px on a 3840-px side.) ``from_unit`` writes ``round(x * (N - 1))`` clamped to
  ``[0, N-1]``.
* **Kosmos-2 patch index → patch centre.** ``<patch_index_k>`` names patch ``k`` of a 32x32 grid,
  row-major: column ``k % 32``, row ``k // 32``. A point is the patch centre ``((col + 0.5) / 32,
  (row + 0.5) / 32)``, as the transformers Kosmos-2 processor (``patch_index_to_coordinate``) does for
  box corners in different rows and columns. The family turns index pairs into boxes (whole cells
  when the corners share a row or a column, :mod:`pointfail.families.kosmos2`); this frame converts
  ``(col, row)`` patch coordinates.
* **Pixels are continuous.** A pixel value ``v`` maps to ``v / W`` with no half-pixel shift, the
  PointerBench/ScreenSpot convention (the predicted pixel coordinate is compared with the target box
  in pixel units directly).
* **Original pixels are the pixels received.** When a served model's provider documents downscaling
  the image (``pointfail.running.served.inputs``), the model answers in pixels of the image it received; that
  size is recorded as the model-input size and ``pixels_original`` converts with it (``v / Wr``).
  Without one, ``W, H`` are the original's.
* **Resized-input pixels** need the size the processor actually produced for that image (recorded
  by the worker in ``Response.model_input_size``); a missing size raises :class:`FrameError`, never a
  silent guess.

Values outside the frame's range (negative, > 100 %, beyond the image) are converted linearly and
kept: such a point is a miss, never clamped into the image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

__all__ = ["Frame", "FrameError", "FRAME_KINDS", "check_size", "smart_resize", "SMART_RESIZE_DEFAULTS"]

FRAME_KINDS: tuple[str, ...] = (
    "percent",
    "grid",
    "bins",
    "unit",
    "pixels_original",
    "pixels_resized",
    "patch_grid",
    "bin_index",
)
"""Every frame kind :class:`Frame` understands."""


class FrameError(ValueError):
    """A coordinate conversion that cannot be done with what the caller supplied (for example a
    ``pixels_resized`` frame without ``model_input_size``, or a non-positive image size). This is a
    caller/configuration error, not a property of the model's text."""


Size = tuple[float, float]


def check_size(size, what: str) -> tuple[float, float]:
    """``size`` as ``(width, height)`` floats, both finite and positive (``what`` names it in the error).

    Raises:
        FrameError: ``size`` is ``None``, not a pair of numbers, or not finite and positive.
    """
    if size is None:
        raise FrameError(f"{what} is required")
    try:
        w, h = size
        w, h = float(w), float(h)
    except (TypeError, ValueError):
        raise FrameError(f"{what} must be (width, height), got {size!r}") from None
    if not (math.isfinite(w) and math.isfinite(h)) or w <= 0 or h <= 0:
        raise FrameError(f"{what} must be positive finite (width, height), got {size!r}")
    return w, h


@dataclass(frozen=True)
class Frame:
    """A family's declared coordinate frame.

    Attributes:
        name: identifier recorded in ``ParseResult.frame`` (e.g. ``"percent_100"``, ``"grid_1000"``).
        kind: one of :data:`FRAME_KINDS`.
        scale: the frame's extent: 100 (percent), 1000 (grid), N bins, N tokens per axis (``bin_index``:
            values run 0..N-1), N patches per side, 1 (unit);
            ``None`` for pixel frames (their extent is the image or model-input size).
        order: the order the model *writes* coordinates in: ``"xy"`` or ``"yx"`` (Gemini points and
            boxes, PaliGemma loc tokens). :meth:`to_unit`/:meth:`from_unit` always take and return
            ``(x, y)``; families reorder with :meth:`as_xy` before converting.
        doc: one line saying what the numbers mean and where the convention comes from.

    Raises:
        ValueError: at construction, for an unknown kind or order, or a missing/non-positive scale.
    """

    name: str
    kind: str
    scale: Optional[float] = None
    order: str = "xy"
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FRAME_KINDS:
            raise ValueError(f"unknown frame kind {self.kind!r}; known: {', '.join(FRAME_KINDS)}")
        if self.order not in ("xy", "yx"):
            raise ValueError(f"frame order must be 'xy' or 'yx', got {self.order!r}")
        if self.kind in ("percent", "grid", "bins", "unit", "patch_grid", "bin_index"):
            if self.scale is None or not self.scale > 0:
                raise ValueError(f"frame kind {self.kind!r} needs a positive scale")

    @property
    def needs_model_input_size(self) -> bool:
        """True for ``pixels_resized`` frames (conversion needs the processor's output size)."""
        return self.kind == "pixels_resized"

    def as_xy(self, a: float, b: float) -> tuple[float, float]:
        """Reorder two numbers from the order the model wrote them to ``(x, y)``."""
        return (b, a) if self.order == "yx" else (a, b)

    def _extent(self, image_size, model_input_size) -> tuple[float, float]:
        if self.kind == "pixels_original":
            # pixels of the image the model received: the original, unless a served model's provider
            # documented downscaling it (pointfail.running.served.inputs records that size as model_input_size)
            if model_input_size is not None:
                return check_size(model_input_size, "model_input_size")
            return check_size(image_size, "image_size")
        if self.kind == "pixels_resized":
            if model_input_size is None:
                raise FrameError(
                    f"frame {self.name!r} is in pixels of the resized model input: model_input_size "
                    "(width, height) as recorded by the worker is required to convert it"
                )
            return check_size(model_input_size, "model_input_size")
        s = float(self.scale)  # type: ignore[arg-type]
        if self.kind == "bin_index":
            return s - 1.0, s - 1.0
        return s, s

    def to_unit(
        self, x: float, y: float, image_size: Optional[Size] = None, model_input_size: Optional[Size] = None
    ) -> tuple[float, float]:
        """Convert one point ``(x, y)`` written in this frame to the unit square.

        Args:
            x, y: the model's numbers, already in ``(x, y)`` order (see :meth:`as_xy`).
            image_size: ``(W, H)`` of the original image in pixels (required for ``pixels_original``).
            model_input_size: ``(Wr, Hr)`` the processor produced (required for ``pixels_resized``).

        Returns:
            ``(x, y)`` normalized, origin top-left; values outside ``[0, 1]`` are kept.

        Raises:
            FrameError: a required size is missing or not positive.
        """
        ex, ey = self._extent(image_size, model_input_size)
        if self.kind in ("bins", "patch_grid"):
            return (x + 0.5) / ex, (y + 0.5) / ey
        return x / ex, y / ey

    def from_unit(
        self, x: float, y: float, image_size: Optional[Size] = None, model_input_size: Optional[Size] = None
    ) -> tuple[float, float]:
        """Inverse of :meth:`to_unit`: a normalized ``(x, y)`` in this frame's numbers (continuous,
        unrounded), except for ``bins``/``patch_grid``, which return the integer bin/patch index
        ``floor(v * N)`` clamped to ``[0, N-1]``, and ``bin_index``, which returns the token
        ``round(v * (N - 1))`` clamped to ``[0, N-1]`` (as floats). Used by generators and round-trip
        tests; families round to their real precision when formatting.

        Raises:
            FrameError: a required size is missing or not positive.
        """
        ex, ey = self._extent(image_size, model_input_size)
        if self.kind in ("bins", "patch_grid"):
            n = int(self.scale)  # type: ignore[arg-type]
            return (
                float(min(max(math.floor(x * ex), 0), n - 1)),
                float(min(max(math.floor(y * ey), 0), n - 1)),
            )
        if self.kind == "bin_index":
            n = int(self.scale)  # type: ignore[arg-type]
            return (
                float(min(max(round(x * ex), 0), n - 1)),
                float(min(max(round(y * ey), 0), n - 1)),
            )
        return x * ex, y * ey

    def quantum(self, image_size: Optional[Size] = None, model_input_size: Optional[Size] = None) -> tuple[float, float]:
        """Size of one frame unit in normalized coordinates ``(qx, qy)``: ``1/scale`` for scaled
        frames (``1/(N-1)`` for ``bin_index``), ``1/W, 1/H`` for pixel frames. Round-trip tolerances
        are multiples of it."""
        ex, ey = self._extent(image_size, model_input_size)
        return 1.0 / ex, 1.0 / ey


# --------------------------------------------------------------------------------------------------
# smart_resize
# --------------------------------------------------------------------------------------------------

SMART_RESIZE_DEFAULTS: dict[str, dict[str, int]] = {
    # transformers' Qwen2VLImageProcessor class defaults (also used by Qwen2.5-VL): patch 14, merge 2.
    "qwen2_vl_processor_default": {"factor": 28, "min_pixels": 56 * 56, "max_pixels": 28 * 28 * 1280},
    # Qwen2.5-VL-*-Instruct preprocessor_config.json: patch 14, merge 2, min_pixels 3136,
    # max_pixels 12845056.
    "qwen2_5_vl": {"factor": 28, "min_pixels": 3136, "max_pixels": 12845056},
    # Qwen3-VL-*-Instruct preprocessor_config.json: patch_size 16, merge_size 2 -> factor 32,
    # size {"shortest_edge": 65536, "longest_edge": 16777216}, processed by transformers'
    # Qwen2VLImageProcessor (auto mapping "qwen3_vl"), i.e. this same smart_resize. Parsing still uses
    # the size the worker recorded, never this recomputation.
    "qwen3_vl": {"factor": 32, "min_pixels": 65536, "max_pixels": 16777216},
    # GTA1 model cards (Salesforce/GTA1-*): AutoProcessor.from_pretrained(..., min_pixels=3136,
    # max_pixels=4096 * 2160), and the card's own smart_resize call uses the processor's patch 14 x
    # merge 2 and those bounds. Not Qwen2.5-VL's 12845056: a 5120x2880 screenshot becomes 3948x2212
    # here, 4760x2688 under Qwen2.5-VL's setting (17 % apart).
    "gta1": {"factor": 28, "min_pixels": 3136, "max_pixels": 4096 * 2160},
    # UI-TARS-1.5 (ByteDance's ui-tars package, ui_tars.action_parser: IMAGE_FACTOR 28,
    # MIN_PIXELS 100 * 28 * 28, MAX_PIXELS 16384 * 28 * 28).
    "ui_tars_1_5": {"factor": 28, "min_pixels": 100 * 28 * 28, "max_pixels": 16384 * 28 * 28},
}
"""Known (factor, min_pixels, max_pixels) settings. ``factor = patch_size * merge_size``."""


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = 56 * 56,
    max_pixels: int = 14 * 14 * 4 * 1280,
    *,
    min_side_check: bool = False,
) -> tuple[int, int]:
    """The Qwen2-VL / Qwen2.5-VL / Qwen3-VL image processors' resize rule: the ``(height, width)`` in
    pixels the model actually sees for an image of ``height x width`` pixels.

    Rule (transformers ``models/qwen2_vl/image_processing_qwen2_vl.py::smart_resize``, 5.x; the same
    formula as ``qwen-vl-utils``):

    1. ``max(h, w) / min(h, w) > 200`` → ``ValueError``.
    2. ``h_bar = round(h / factor) * factor``, ``w_bar`` likewise (Python ``round``: ties to even).
    3. If ``h_bar * w_bar > max_pixels``: ``beta = sqrt(h * w / max_pixels)``,
       ``h_bar = max(factor, floor(h / beta / factor) * factor)``, ``w_bar`` likewise.
    4. Else if ``h_bar * w_bar < min_pixels``: ``beta = sqrt(min_pixels / (h * w))``,
       ``h_bar = ceil(h * beta / factor) * factor``, ``w_bar`` likewise.

    Defaults are the function's own defaults in transformers (factor 28 = patch 14 x merge 2,
    ``min_pixels = 56*56 = 3136``, ``max_pixels = 14*14*4*1280 = 1003520``). Qwen2.5-VL checkpoints ship
    ``max_pixels = 12845056``; Qwen3-VL uses factor 32 (patch 16 x merge 2): see
    :data:`SMART_RESIZE_DEFAULTS`.

    Args:
        height, width: original image size in pixels (positive integers).
        factor: both output sides are multiples of it.
        min_pixels, max_pixels: bounds on ``h_bar * w_bar``.
        min_side_check: reproduce the older transformers 4.4x line, which raised
            ``ValueError("height:.. or width:.. must be larger than factor:..")`` when either side is
            smaller than ``factor``; 5.x no longer raises and upsizes such images via step 4.

    Returns:
        ``(h_bar, w_bar)`` in pixels.

    Raises:
        ValueError: non-positive or non-integer sizes, aspect ratio above 200, or (with
            ``min_side_check``) a side smaller than ``factor``.
    """
    for name, v in (("height", height), ("width", width), ("factor", factor)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if min_side_check and (height < factor or width < factor):
        raise ValueError(f"height:{height} or width:{width} must be larger than factor:{factor}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(
            f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}"
        )
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar
