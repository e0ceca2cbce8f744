"""The frame the server saw: which image to send and which model-input size to record, per sample.

A served model answers in the coordinate frame of the image it *received*, which is not always the
image the benchmark holds (``shared/DESIGN.md``, "Models as users run them"). :func:`plan_input`
decides, from the family's declared frame and the model's :class:`~pointfail.running.served.options.ServedOptions`:

``pixels_resized`` frames (Qwen2.5-VL and GUI models built on it answer in pixels of the image *as the
processor resized it* with ``smart_resize``):

* budget declared (``max_pixels``, or ``pixel_budget = "family"``: see :func:`budget_for`),
  ``resize = "auto"`` (default): planned as ``"server"`` below (the original sent as it is; the
  server's processor makes the ``smart_resize`` itself, which the per-size token check in
  :mod:`pointfail.running.served.backend` confirms); the backend replans as ``"client"`` for an image
  whose format it does not pass through, and when the server reports no token usage.
* budget declared, ``resize = "client"``: the client resizes the image to
  ``smart_resize(H, W, factor, min_pixels, max_pixels)`` itself and sends that, so the server's own
  ``smart_resize`` is the identity; the recorded model-input size is the server's ``smart_resize`` of
  the sent size (equal to it; when it is not, the note says so and the recorded size is the server's).
  Source ``client_resized``.
* budget declared, ``resize = "server"``: the original is sent; the recorded size is
  ``smart_resize`` of the original under the declared budget. Source ``server_budget``.
* no budget declared: the original is sent and the model-input size is ``None`` with source
  ``unknown`` and a note; scoring then records the sample as an error ("resized-input frame without a
  model-input size") instead of guessing.

Any frame, ``downscale_long_edge`` declared (a provider's documented cap, e.g. a hosted API that
downscales images whose long edge exceeds it): an image above the cap is received downscaled to
``round(W * s), round(H * s)`` with ``s = cap / max(W, H)``; the record keeps that size (source
``provider_documented``) and, for pixel frames of the original image, the parser converts with it. For
resized-pixel frames the cap applies before the processor's budget.

Other frames (percent, 0-1000 grid, bins, unit): the original is sent; its size is recorded as
received (source ``original``), and the model-input size is left ``None`` (those frames do not need it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pointfail.frames import smart_resize
from pointfail.running.served.options import ServedOptions

Size = tuple[int, int]

DEFAULT_MIN_PIXELS = 56 * 56
"""``min_pixels`` when a budget declares only ``max_pixels``: the Qwen2-VL/Qwen2.5-VL processors' own
default (3136), also what the released Qwen2.5-VL checkpoints ship."""


@dataclass(frozen=True)
class PixelBudget:
    """A ``smart_resize`` budget: output sides multiples of ``factor``, area in ``[min_pixels, max_pixels]``."""

    factor: int
    min_pixels: int
    max_pixels: int

    def resize(self, size: Size) -> Size:
        """``(W, H)`` -> the ``(W', H')`` that :func:`pointfail.frames.smart_resize` gives under this budget."""
        h, w = smart_resize(int(size[1]), int(size[0]), self.factor, self.min_pixels, self.max_pixels)
        return (w, h)


@dataclass(frozen=True)
class InputPlan:
    """What to send and what to record for one image.

    Attributes:
        send_size: ``(W, H)`` of the image to send (the original size when no resize is needed).
        received_size: ``(W, H)`` the model receives, when known.
        model_input_size: the size recorded in ``Response.model_input_size`` (``None`` when the frame
            does not need it or it is unknown).
        source: see :data:`pointfail.records.InputSizeSource`. note: a sentence when something is
            unknown or not the identity.
    """

    send_size: Size
    received_size: Optional[Size]
    model_input_size: Optional[Size]
    source: str
    note: Optional[str] = None


def budget_for(family: Any, options: ServedOptions) -> Optional[PixelBudget]:
    """The declared pixel budget of ``family`` (a :class:`pointfail.families.Family`) under ``options``,
    or ``None`` when none is declared.

    Declared means: ``options.max_pixels`` (with ``options.factor``, else the family's own ``resize``
    factor, and ``options.min_pixels``, else the family's ``min_pixels``, else 3136); or
    ``options.pixel_budget = "family"``: the settings the family file gives for its checkpoints
    (``Family.resize``, as their authors publish them). A server started with other processor settings
    must declare them.
    """
    fam = getattr(family, "resize", None) or {}
    if options.max_pixels is not None:
        factor = options.factor or fam.get("factor")
        if factor is None:
            return None
        return PixelBudget(int(factor), int(options.min_pixels or fam.get("min_pixels") or DEFAULT_MIN_PIXELS),
                           int(options.max_pixels))
    if options.pixel_budget == "family" and fam:
        return PixelBudget(int(fam["factor"]), int(fam["min_pixels"]), int(fam["max_pixels"]))
    return None


def documented_downscale(size: Size, long_edge: Optional[int]) -> Size:
    """``size`` after a provider's documented long-edge cap (unchanged when within it or no cap)."""
    w, h = int(size[0]), int(size[1])
    if not long_edge or max(w, h) <= long_edge:
        return (w, h)
    s = long_edge / max(w, h)
    return (max(1, round(w * s)), max(1, round(h * s)))


def plan_input(family: Any, image_size: Size, options: ServedOptions, resize: Optional[str] = None) -> InputPlan:
    """Decide the image to send and the sizes to record (rules in the module docstring).

    Args:
        family: the :class:`pointfail.families.Family` (its frame kind and ``resize`` settings).
        image_size: ``(W, H)`` of the original image in pixels.
        options: the model's options (preset already applied).
        resize: ``"auto"``, ``"client"`` or ``"server"`` in place of ``options.resize`` (the
            backend's fallback from ``"auto"`` to ``"client"``); ``"auto"`` plans as ``"server"``.

    Returns:
        An :class:`InputPlan`.

    Raises:
        ValueError: ``smart_resize`` refuses the image (aspect ratio above 200).
    """
    frame_kind = family.frame.kind
    orig = (int(image_size[0]), int(image_size[1]))
    capped = documented_downscale(orig, options.downscale_long_edge)
    provider = capped != orig
    if frame_kind == "pixels_resized":
        budget = budget_for(family, options)
        if budget is None:
            return InputPlan(orig, capped if provider else None, None, "unknown",
                             "pixel budget of the server's processor not declared (options max_pixels, "
                             "or pixel_budget = \"family\"): "
                             "model-input size unknown, not guessed")
        if (resize or options.resize) == "client":
            send = budget.resize(capped)
            seen = budget.resize(documented_downscale(send, options.downscale_long_edge))
            note = None if seen == send else (f"server's smart_resize of the sent {send[0]}x{send[1]} is "
                                              f"{seen[0]}x{seen[1]}, not the identity")
            return InputPlan(send, seen, seen, "client_resized", note)
        seen = budget.resize(capped)
        note = f"provider downscales to {capped[0]}x{capped[1]} before the processor" if provider else None
        return InputPlan(orig, seen, seen, "server_budget", note)
    if provider:
        mis = capped if frame_kind == "pixels_original" else None
        return InputPlan(orig, capped, mis, "provider_documented",
                         f"provider documents downscaling to a long edge of {options.downscale_long_edge} px")
    return InputPlan(orig, orig, None, "original")


@dataclass(frozen=True)
class ImageTokenRule:
    """How many prompt tokens one image of a given model-input size costs on a family's processor.

    Attributes:
        factor: pixels per merged patch side (the ``smart_resize`` factor): an image the processor
            resized to ``W x H`` (both multiples of ``factor``) becomes ``(W / factor) * (H / factor)``
            image tokens.
        wrapper: tokens around them in the chat template (counted once per image).
        source: where the rule comes from, in words.
    """

    factor: int
    wrapper: int
    source: str

    def tokens(self, size: Size) -> int:
        """Image tokens for a model input of ``size`` ``(W, H)`` (sides multiples of ``factor``)."""
        return (int(size[0]) // self.factor) * (int(size[1]) // self.factor)


QWEN2_VL_TOKENS = ("Qwen2-VL/Qwen2.5-VL processor (transformers processing_qwen2_5_vl.py): the image is cut into "
                   "14x14 patches and 2x2 patches are merged, one <|image_pad|> token per merged patch "
                   "(image_grid_thw.prod() // merge_size**2), so one token per 28x28 pixels of the smart_resize'd "
                   "image; the chat template wraps them in <|vision_start|> ... <|vision_end|> (2 tokens)")
QWEN3_VL_TOKENS = ("Qwen3-VL processor: 16x16 patches, 2x2 merged: one token per 32x32 pixels of the smart_resize'd "
                   "image, wrapped in <|vision_start|> ... <|vision_end|> (2 tokens)")


def image_token_rule(family: Any) -> Optional[ImageTokenRule]:
    """The image-token rule of ``family`` (a :class:`pointfail.families.Family`), or ``None`` when the
    frame the family answers in does not depend on the size the server used, or its processor has no
    size-determined rule stated here.

    Resized-pixel frames (Qwen2.5-VL and the GUI models built on it: UI-TARS-1.5, GTA1, OpenCUA) use
    the Qwen2-VL lineage processor: one token per ``factor x factor`` pixels of the resized image
    (``factor`` = the family's ``smart_resize`` factor: 28 = 14-pixel patches merged 2x2), plus 2
    wrapper tokens (:data:`QWEN2_VL_TOKENS`; measured on ``transformers serve``: a 112x84 image adds
    14 = 4 * 3 + 2 tokens to the text-only prompt). Qwen3-VL (factor 32, :data:`QWEN3_VL_TOKENS`) and
    InternVL3 (448x448 tiles of 256 tokens each, 1 to 12 tiles chosen by aspect ratio plus a
    thumbnail, inside ``<img> ... </img>``) answer in normalized frames (0-1000 grid, 0-1000 grid), so
    the size the server used does not change how a reply is read and is not checked.
    """
    if family.frame.kind != "pixels_resized":
        return None
    fam = getattr(family, "resize", None) or {}
    factor = int(fam.get("factor") or 28)
    return ImageTokenRule(factor, 2, QWEN3_VL_TOKENS if factor == 32 else QWEN2_VL_TOKENS)


def sizes_for_tokens(size: Size, tokens: int, factor: int) -> list[Size]:
    """Every model-input size ``(W, H)`` that a ``smart_resize`` of an image of ``size`` gives under
    *some* pixel budget (any ``min_pixels``/``max_pixels``) and that costs exactly ``tokens`` image
    tokens (``(W / factor) * (H / factor)``), sorted. One entry: the token count determines the size
    the server used; several or none: it does not.

    The budget moves ``beta`` (``smart_resize``'s scale, :func:`pointfail.frames.smart_resize` rule 3
    and 4) continuously, and the output changes only where ``h / beta / factor`` or
    ``w / beta / factor`` crosses an integer; every output is found by evaluating the rule at each such
    crossing and between consecutive ones. Linear in ``tokens``.
    """
    import math

    w, h = int(size[0]), int(size[1])
    if tokens < 1 or w < 1 or h < 1:
        return []
    found: set[Size] = set()
    rh, rw = round(h / factor) * factor, round(w / factor) * factor  # rule 2: no budget binds
    if rh and rw:
        found.add((rw, rh))
    # rule 3 (downscale): sides max(f, floor(side / beta / f) * f); crossings at beta = side / (f * k)
    down = sorted({h / (factor * k) for k in range(1, tokens + 1)} | {w / (factor * k) for k in range(1, tokens + 1)})
    # rule 4 (upscale): sides ceil(side * beta / f) * f; crossings at beta = f * k / side
    up = sorted({factor * k / h for k in range(1, tokens + 1)} | {factor * k / w for k in range(1, tokens + 1)})
    for points, fn in ((down, lambda b: (max(factor, math.floor(w / b / factor) * factor),
                                         max(factor, math.floor(h / b / factor) * factor))),
                       (up, lambda b: (math.ceil(w * b / factor) * factor, math.ceil(h * b / factor) * factor))):
        probes = list(points) + [(a + b) / 2 for a, b in zip(points, points[1:])]
        for beta in probes:
            if beta > 0:
                found.add(fn(beta))
    return sorted(s for s in found if (s[0] // factor) * (s[1] // factor) == tokens)
