"""Scoring: one outcome per sample from a parsed answer and its target, records, and the scoring API.

Outcome rules (``shared/DESIGN.md`` "Outcomes"; the study's "Task and outcomes" and "Computing the
metrics"; PointerBench's box rule). Exactly one outcome per sample:

* ``no_prediction``: the parse holds no point and no box (nothing parseable; the parse's
  ``reason`` says why, e.g. ``truncated``, ``no_coordinates``, ``non_finite_number``).
* Point task: the **primary point** is the first parsed point; if the answer holds only boxes, it
  is the centre of the first box (a box answer to a point task is scored by its centre). ``hit``
  when the primary point is in the target (pixel lookup for masks, inclusive box edges, even-odd
  polygons with inclusive edges: see :mod:`pointfail.geometry`), else ``miss``.
* Box task: the **primary box** is the first parsed box, scored by the PointerBench rule
  (coverage >= 0.90 and precision >= 0.70, or the row's own ``eval`` thresholds): ``hit`` when the
  rule passes, else ``miss``, with the box class (hit, clipped, oversized, both) in
  ``Geometry.box``.
  **A point answer to a box task** (points but no box) is a ``miss`` with box class
  ``malformed``: a point has no area, and PointerBench's official scorer finds no box in it and
  counts it wrong (its paper: specialists whose native output is a point "receive 0.0% on all 134
  region tasks"). It is a miss, not ``no_prediction``, because the model did answer.
  For box tasks ``Geometry.in_target`` and the distances describe the primary point (first point,
  else the primary box's centre) as diagnostics; the outcome comes from the box rule alone.
* **Absent target** (the referent is not in the image; the correct answer is to decline): any
  point or box is a ``miss`` (``in_target`` False, distances ``None``, no box score); no point and
  no box is ``no_prediction``. Aggregation counts absent rows apart (correctly declined,
  hallucinated a location), as the grounding-metrics document asks.
* ``error`` (infrastructure) is never produced by :func:`score_parse`; :func:`build_record` sets it
  when the worker reported an error, or when the target cannot be used (unreadable, empty or
  wrong-size mask) or the frame conversion lacks what it needs (e.g. the model-input size).

Geometry: ``distance_px`` in pixels of the original image (0 inside; pixel-centre convention for
masks, exact for boxes and polygons), ``distance_norm`` = ``distance_px`` / image diagonal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from pointfail.frames import Frame

from pointfail.geometry import GeometryError, TargetRegion, to_pixels  # masks (numpy) only when a mask is scored
from pointfail.geometry.shapes import box_center, valid_box
from pointfail.records import (
    READING_FIELDS,
    BoxScore,
    FrameReadings,
    Geometry,
    OfficialScore,
    Outcome,
    ParseResult,
    Prompt,
    Provenance,
    Record,
    Response,
    Sample,
    Target,
)

__all__ = [
    "primary_point",
    "primary_box",
    "score_parse",
    "build_record",
    "ScoreResult",
    "score_prediction",
    "scorePrediction",
    "frame_compliance",
    "frame_readings",
    "target_from_args",
    "COMPLIANCE_READINGS",
    "ABSENCE_OUTCOMES",
    "absence_count",
    "absence_outcome",
]


def _finite(vals: Sequence[float]) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in vals)


def primary_point(parse: Optional[ParseResult]) -> Optional[list[float]]:
    """The primary point of an answer, normalized ``[x, y]`` (unit square, origin top-left): the
    first parsed point, else the centre of the first parsed box, else ``None`` (also when that first
    point or box is not finite).

    The one definition of the point that is scored, judged (a box answer is judged at its centre:
    a clipped box around the right element is a near miss, a box around another element is judged
    by what that element is) and compared between models (the pairwise table).

    >>> primary_point(ParseResult(family="f", frame="unit", points=[[0.25, 0.5], [0.9, 0.9]]))
    [0.25, 0.5]
    >>> primary_point(ParseResult(family="f", frame="unit", boxes=[[0.0, 0.5, 0.5, 1.0]]))
    [0.25, 0.75]
    >>> primary_point(ParseResult(family="f", frame="unit", reason="no_coordinates")) is None
    True
    """
    if parse is None:
        return None
    if parse.points:
        p = parse.points[0]
        return [float(p[0]), float(p[1])] if len(p) >= 2 and _finite(p[:2]) else None
    if parse.boxes:
        b = parse.boxes[0]
        return list(box_center(b)) if valid_box(b) else None
    return None


def primary_box(parse: Optional[ParseResult]) -> Optional[list[float]]:
    """The primary box, normalized ``[x0, y0, x1, y1]``: the first parsed box, else ``None``."""
    if parse is None or not parse.boxes:
        return None
    return [float(v) for v in parse.boxes[0]]


def _box_to_px(box_norm: Sequence[float], size: Sequence[int]) -> list[float]:
    x0, y0 = to_pixels(box_norm[:2], size)
    x1, y1 = to_pixels(box_norm[2:4], size)
    return [x0, y0, x1, y1]


def score_parse(
    parse: Optional[ParseResult], region: TargetRegion, task: str, image_size: Sequence[int]
) -> tuple[Outcome, Geometry]:
    """Score one parsed answer against its target.

    Args:
        parse: the family parser's result (normalized points/boxes), or ``None`` (nothing parsed).
        region: the target (:meth:`pointfail.geometry.TargetRegion.from_target`).
        task: ``"point"`` or ``"box"``.
        image_size: ``(W, H)`` pixels of the original image; must equal ``region.image_size``.

    Returns:
        ``(outcome, geometry)`` with outcome ``hit`` | ``miss`` | ``no_prediction`` by the rules in
        the module docstring; ``geometry`` holds ``in_target`` and the distances of the primary point
        (``None`` without a point), and for box tasks the ``BoxScore`` of the primary box
        (``malformed`` when there is none; ``None`` for an absent target).

    Raises:
        ValueError: unknown task, or ``image_size`` differs from the region's.
    """
    if task not in ("point", "box"):
        raise ValueError(f"task must be 'point' or 'box', got {task!r}")
    size = (int(image_size[0]), int(image_size[1]))
    if size != region.image_size:
        raise ValueError(f"image size {size} differs from the target region's {region.image_size}")
    point = primary_point(parse)
    box = primary_box(parse) if task == "box" else None
    absent = region.kind == "absent"

    geometry = Geometry()
    if point is not None:
        geometry.in_target = region.contains(point)
        # 0 inside for every target kind (geometry: "0 exactly when the lookup says the point is
        # in the mask"; boxes and polygons are closed), so a hit needs no distance search
        geometry.distance_px = 0.0 if geometry.in_target else region.distance_px(point)
        geometry.distance_norm = None if geometry.distance_px is None else geometry.distance_px / region.diagonal_px

    if task == "box":
        if not absent:
            geometry.box = region.box_score(_box_to_px(box, size) if box is not None else None)
        if point is None and box is None:
            return "no_prediction", geometry
        if absent or geometry.box is None:
            return "miss", geometry
        return ("hit" if geometry.box.box_class == "hit" else "miss"), geometry

    if point is None:
        return "no_prediction", geometry
    return ("hit" if geometry.in_target else "miss"), geometry


ABSENCE_OUTCOMES: tuple[str, ...] = (
    "correctly_declined",
    "hallucinated_a_location",
    "no_location_no_decline",
    "missed_a_present_referent",
)
"""What :func:`absence_outcome` returns, besides ``None``."""


def absence_outcome(target_kind: str, outcome: str, parse: Optional[ParseResult]) -> Optional[str]:
    """The absent-referent count a sample belongs to, apart from the hit rate (the grounding-metrics
    document's table: "correctly_declined: nothing matched, and the model pointed at nothing;
    hallucinated_a_location: nothing matched, and the model pointed anyway; missed_a_present_referent:
    something matched, and the model declined").

    A decline is explicit: the family parser read one in the family's convention
    (``parse.reason == "declined"``, :mod:`pointfail.families._decline`). A reply with no location and
    no decline (unreadable, empty, truncated) is not credited as declining: for an absent referent it
    is ``no_location_no_decline``.

    Args:
        target_kind: ``Target.kind`` (``absent`` or a present kind).
        outcome: the sample's outcome (``hit`` | ``miss`` | ``no_prediction`` | ``error``).
        parse: the parse result (``None`` for errors).

    Returns:
        For an absent referent: ``correctly_declined``, ``hallucinated_a_location`` (any point or box:
        the outcome is ``miss``) or ``no_location_no_decline``; for a present referent:
        ``missed_a_present_referent`` when the model declined, else ``None``. ``None`` for ``error``
        (infrastructure errors are counted in their own column).
    """
    return absence_count(target_kind == "absent", outcome, parse is not None and parse.reason == "declined")


def absence_count(target_absent: bool, outcome: str, declined: bool) -> Optional[str]:
    """:func:`absence_outcome` from its three facts: whether the referent is absent, the outcome, and
    whether the parser read an explicit decline (the aggregate's rows carry exactly these)."""
    if outcome == "error":
        return None
    if target_absent:
        if outcome in ("hit", "miss"):
            return "hallucinated_a_location"
        return "correctly_declined" if declined else "no_location_no_decline"
    return "missed_a_present_referent" if declined else None


def _official_score(sample: Sample, parse: Optional[ParseResult], region: Optional[TargetRegion],
                    raw_text: Optional[str], family: str) -> Optional[OfficialScore]:
    """The benchmark's own rule (:func:`pointfail.official.official_score`), reading the raw
    reply where the official evaluation parses text itself; ``parse=None`` is a sample with no answer."""
    from pointfail.official import official_score

    if region is None:  # an error record: the target was never checked, so an unreadable mask scores nothing
        try:
            return official_score(sample, parse, region, raw_text=raw_text, family=family)
        except GeometryError:
            return None
    return official_score(sample, parse, region, raw_text=raw_text, family=family)


def _resolve_family(family: Any) -> Any:
    if isinstance(family, str):
        from pointfail.families import get_family

        return get_family(family)
    return family


def build_record(
    *,
    study: str,
    model: str,
    family: Any,
    sample: Sample,
    prompt: Prompt,
    response: Response,
    provenance: Optional[Provenance] = None,
    base_dir: Optional[str | Path] = None,
    allow_rescale: bool = False,
) -> Record:
    """Turn one worker response into a :class:`~pointfail.records.Record`: parse the raw text with
    the family, score it against the sample's target, and fill the benchmark's official score
    (when ``pointfail.official`` exists). The judge fields stay empty.

    Args:
        study, model: names used in ``records/<study>/<model>/<benchmark>.jsonl``.
        family: a family name (``get_family``) or a ``Family`` object.
        sample, prompt, response: the benchmark row, what was sent, what the worker wrote.
        provenance: versions and digests (default: empty).
        base_dir: directory that a relative ``target.mask_path`` is resolved against.
        allow_rescale: accept a same-aspect mask of another size (see ``geometry.load_mask``).

    Returns:
        The record, its frame-compliance readings (``Record.frame_compliance``,
        :func:`frame_readings`) filled for a point task with a present referent. ``outcome == "error"`` (never scored, counted apart as an infrastructure error)
        with ``Record.error`` explaining it, in two cases:

        * the worker reported an error (``response.error`` set): ``Record.error`` is
          ``"worker: <response.error>"`` and the parse is ``None``;
        * the sample cannot be scored for reasons outside the model's text: an unreadable mask, a
          mask whose size differs from the image (both sizes named), an empty mask (no pixel in the
          target: no point could hit it), a target missing its data, or
          a resized-input frame without the model-input size. ``Record.error`` is
          ``"scoring: <reason>"``; the raw text is kept and so is the parse when there is one.

        ``response`` is stored exactly as the worker wrote it: ``response.error`` stays the
        worker's own error, never a scoring reason.

    Raises:
        KeyError: unknown family name.
    """
    from pointfail.frames import FrameError

    fam = _resolve_family(family)
    size = (int(sample.image.width), int(sample.image.height))
    common = dict(
        study=study,
        model=model,
        family=fam.name,
        benchmark=sample.benchmark,
        sample_id=sample.sample_id,
        task=sample.task,
        image=sample.image,
        target=sample.target,
        metadata=sample.metadata,
        scene_graph=sample.scene_graph_path,
        prompt=prompt,
        response=response,
        provenance=provenance or Provenance(),
    )
    if response.error:
        # no answer: the official score counts it as the official script does (wrong, or out of its mean)
        return Record(**common, parse=None, outcome="error", error=f"worker: {response.error}",
                      official=_official_score(sample, None, None, None, fam.name))

    mis = tuple(response.model_input_size) if response.model_input_size else None
    try:
        sink: Optional[list[list[float]]] = [] if _one_parse(fam) else None
        parse = fam.parse(response.raw_text or "", size, mis, task=sample.task, raw_sink=sink)
    except FrameError as e:
        # the reply exists: an official evaluation that parses the text itself still reads it
        return Record(**common, parse=None, outcome="error", error=f"scoring: {e}",
                      official=_official_score(sample, None, None, response.raw_text or "", fam.name))
    try:
        region = TargetRegion.from_target(sample.target, size, base_dir, allow_rescale=allow_rescale)
    except GeometryError as e:
        return Record(**common, parse=parse, outcome="error", error=f"scoring: {e}")
    outcome, geometry = score_parse(parse, region, sample.task, size)
    # a hit proves the mask is not empty; otherwise check (cached bounding box, free after a miss)
    if outcome != "hit" and region.mask_empty:
        return Record(**common, parse=parse, outcome="error",
                      error=f"scoring: mask {sample.target.mask_path} is empty (no pixel in the target after "
                            f"binarization; see geometry.binarize_mask_image)")
    official = _official_score(sample, parse, region, response.raw_text or "", fam.name)
    bad = _non_finite(geometry, official)
    if bad:  # never a record that cannot be written (the parser already drops overflowing coordinates)
        return Record(**common, parse=parse, outcome="error",
                      error=f"scoring: {bad} is not a finite number (coordinates too large to measure)")
    readings = (frame_readings(fam, response.raw_text or "", size, region, mis,
                               raw_primary=(sink[0] if sink else None) if sink is not None else _PARSE)
                if sample.task == "point" and sample.target.kind != "absent" else None)
    return Record(**common, parse=parse, outcome=outcome, geometry=geometry, official=official,
                  frame_compliance=readings)


def _non_finite(geometry: Geometry, official: Optional[OfficialScore]) -> Optional[str]:
    """The name of the first geometry or official-score value that is NaN or infinite, else ``None``."""
    values = {"geometry.distance_px": geometry.distance_px, "geometry.distance_norm": geometry.distance_norm,
              "official.score": official.score if official is not None else None}
    if geometry.box is not None:
        values.update({f"geometry.box.{k}": getattr(geometry.box, k) for k in ("iou", "coverage", "precision")})
    for name, v in values.items():
        if v is not None and not math.isfinite(v):
            return name
    return None


class ScoreResult(BaseModel):
    """The result of scoring one raw model reply (:func:`score_prediction`).

    Coordinates: ``primary``, ``points`` and ``boxes`` are normalized (unit square, origin
    top-left, x right, y down), as parsed in the family's declared frame; ``image_size`` and the
    distances are in pixels of the original image.

    Attributes:
        family, frame: the family and the coordinate frame its parser used.
        task: ``point`` or ``box``.
        image_size: ``(W, H)`` pixels.
        outcome: ``hit`` | ``miss`` | ``no_prediction`` (rules in :mod:`pointfail.scoring`).
        primary: the primary point ``[x, y]`` or ``None``.
        points / boxes: every parsed point / box, in the order written.
        in_target: whether the primary point is in the target (``None`` without a point).
        distance_px / distance_norm: primary point to target (0 inside; ``None`` without a point or
            target).
        box: the box rule's scores for box tasks, else ``None``.
        flags / ignored / reason / truncated: the parse diagnostics.
        parse / geometry: the full ``ParseResult`` and ``Geometry`` (as stored in records).

    Read it by attribute (``r.primary``) or by key as the source write-up does (``r["primary"]``,
    ``r["inMask"]``): the keys are those of :meth:`to_dict` plus ``inMask``.
    """

    model_config = ConfigDict(extra="forbid")

    family: str
    frame: str
    task: str
    image_size: tuple[int, int]
    outcome: str
    primary: Optional[list[float]] = None
    points: list[list[float]] = Field(default_factory=list)
    boxes: list[list[float]] = Field(default_factory=list)
    in_target: Optional[bool] = None
    distance_px: Optional[float] = None
    distance_norm: Optional[float] = None
    box: Optional[BoxScore] = None
    flags: list[str] = Field(default_factory=list)
    ignored: list[str] = Field(default_factory=list)
    reason: Optional[str] = None
    truncated: bool = False
    parse: ParseResult
    geometry: Geometry

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (snake_case keys, ``parse``/``geometry`` left out as they repeat the
        top-level fields); what ``pointfail score`` prints."""
        d = self.model_dump(mode="json", exclude={"parse", "geometry"})
        d["image_size"] = list(self.image_size)
        return d

    @property
    def inMask(self) -> bool:  # noqa: N802 - the write-up's name
        """The write-up's ``inMask``: whether the primary point is in the target (``False``, not
        ``None``, when there is no point)."""
        return bool(self.in_target)

    def keys(self) -> list[str]:
        """The keys of the mapping view: those of :meth:`to_dict`, then ``inMask``."""
        return [*self.to_dict(), "inMask"]

    def __getitem__(self, key: str) -> Any:
        """The mapping view the write-up reads results with (``result["primary"]``,
        ``result["inMask"]``): the values of :meth:`to_dict` (JSON-ready: ``box`` is a dict there,
        a :class:`~pointfail.records.BoxScore` as the attribute) plus ``inMask``.

        Raises:
            KeyError: a key that is not in :meth:`keys`.
        """
        if key == "inMask":
            return self.inMask
        d = self.to_dict()
        if key not in d:
            raise KeyError(key)
        return d[key]

    def __contains__(self, key: object) -> bool:
        return key in self.keys()


def target_from_args(
    mask_path: Optional[str | Path],
    box: Optional[Sequence[float]],
    target: Optional[Target],
) -> Target:
    """The one target of ``score_prediction``'s arguments: a ``Target`` as given, a mask file
    (``mask_path``), or a box in pixels of the original image ``[x0, y0, x1, y1]``.

    Raises:
        ValueError: none or more than one given, or a box that is not 4 finite numbers.
    """
    given = [v is not None for v in (mask_path, box, target)]
    if sum(given) != 1:
        raise ValueError("give exactly one target: mask_path, box (pixels [x0, y0, x1, y1]) or target")
    if target is not None:
        return target
    if mask_path is not None:
        return Target(kind="mask", mask_path=str(mask_path))
    vals = [float(v) for v in box]  # type: ignore[union-attr]
    if len(vals) != 4 or not _finite(vals):
        raise ValueError(f"box must be 4 finite pixel values [x0, y0, x1, y1], got {box!r}")
    return Target(kind="boxes", boxes=[vals])


def score_prediction(
    family: Any,
    raw_text: str,
    *,
    image_path: Optional[str | Path] = None,
    image_size: Optional[Sequence[int]] = None,
    model_input_size: Optional[Sequence[int]] = None,
    mask_path: Optional[str | Path] = None,
    box: Optional[Sequence[float]] = None,
    target: Optional[Target] = None,
    task: str = "point",
    allow_rescale: bool = False,
) -> ScoreResult:
    """Parse one raw model reply in its family's coordinate convention and score it.

    Args:
        family: family name (see ``pointfail families``) or a ``Family`` object.
        raw_text: the model's reply, verbatim.
        image_path: the original image; its size is read from the file header.
        image_size: ``(W, H)`` pixels, instead of (or checked against) ``image_path``. With neither,
            a mask target's own size is used.
        model_input_size: ``(W, H)`` of the resized model input, for ``pixels_resized`` frames
            (Qwen2.5-VL, UI-TARS-1.5, GTA1, OpenCUA).
        mask_path / box / target: exactly one target: a mask file, a pixel box
            ``[x0, y0, x1, y1]`` of the original image, or a :class:`~pointfail.records.Target`.
        task: ``point`` or ``box``.
        allow_rescale: accept a same-aspect mask of another size.

    Returns:
        :class:`ScoreResult`: attributes (``r.outcome``, ``r.primary``, ``r.in_target``) or, as the
        write-up reads it, keys (``r["primary"]``, ``r["inMask"]``). :func:`scorePrediction` is this
        function under the write-up's names.

    Raises:
        KeyError: unknown family.
        ValueError: no or several targets, no way to know the image size, sizes that disagree.
        pointfail.geometry.ImageError / MaskError / MaskSizeError: unreadable image or mask, or a
            mask of the wrong size.
        pointfail.geometry.GeometryError: an empty mask (no pixel in the target: nothing could hit
            it; :func:`build_record` records the same case as an ``error`` outcome).
        pointfail.frames.FrameError: a resized-input frame without ``model_input_size``.
    """
    tgt = target_from_args(mask_path, box, target)
    size: Optional[tuple[int, int]] = None
    if image_path is not None:
        from pointfail.geometry import image_size as _read_image_size

        size = _read_image_size(image_path)
        if image_size is not None and tuple(int(v) for v in image_size) != size:
            raise ValueError(f"image_size {tuple(image_size)} differs from {image_path}'s size {size}")
    elif image_size is not None:
        size = (int(image_size[0]), int(image_size[1]))
    elif tgt.kind == "mask" and tgt.mask_path:
        from pointfail.geometry import load_mask

        h, w = load_mask(tgt.mask_path).shape
        size = (w, h)
    else:
        raise ValueError("the image size is needed: give image_path or image_size")
    region = TargetRegion.from_target(tgt, size, allow_rescale=allow_rescale)
    fam = _resolve_family(family)
    mis = (int(model_input_size[0]), int(model_input_size[1])) if model_input_size is not None else None
    parse = fam.parse(raw_text, size, mis, task=task)
    outcome, geometry = score_parse(parse, region, task, size)
    if outcome != "hit" and region.mask_empty:  # a hit proves the mask is not empty
        raise GeometryError(f"mask {tgt.mask_path} is empty (no pixel in the target after binarization)")
    return ScoreResult(
        family=fam.name,
        frame=parse.frame,
        task=task,
        image_size=size,
        outcome=outcome,
        primary=primary_point(parse),
        points=parse.points,
        boxes=parse.boxes,
        in_target=geometry.in_target,
        distance_px=geometry.distance_px,
        distance_norm=geometry.distance_norm,
        box=geometry.box,
        flags=parse.flags,
        ignored=parse.ignored,
        reason=parse.reason,
        truncated=parse.truncated,
        parse=parse,
        geometry=geometry,
    )


_CAMEL_KW = {
    "imageSize": "image_size",
    "modelInputSize": "model_input_size",
    "box": "box",
    "target": "target",
    "task": "task",
    "allowRescale": "allow_rescale",
}


def scorePrediction(  # noqa: N802 - the study's documented name
    family: Any,
    rawText: str,  # noqa: N803
    imagePath: Optional[str | Path] = None,  # noqa: N803
    maskPath: Optional[str | Path] = None,  # noqa: N803
    **kw: Any,
) -> ScoreResult:
    """:func:`score_prediction` under the name and argument names of the source write-up
    (``shared/seeds/pointfail-study.txt``, "Running it"), whose call works exactly as written::

        from pointfail import scorePrediction

        result = scorePrediction(family="molmo", rawText='<point x="50.0" y="50.0">mug</point>',
                                 imagePath="image.png", maskPath="mask.png")
        print(result["primary"], result["inMask"])

    It is the same function (the same parse, score and result): ``family`` -> ``family``, ``rawText``
    -> ``raw_text``, ``imagePath`` -> ``image_path``, ``maskPath`` -> ``mask_path``, and the keyword
    arguments ``imageSize``, ``modelInputSize``, ``box`` (pixels, instead of ``maskPath``),
    ``target``, ``task``, ``allowRescale``. New code may call :func:`score_prediction` directly.

    Returns:
        The :class:`ScoreResult`, read as the write-up does (``result["primary"]``: the normalized
        primary point ``[x, y]`` or ``None``; ``result["inMask"]``: whether it is in the target,
        ``False`` when there is no point) or by attribute (``result.primary``, ``result.in_target``).

    Raises:
        TypeError: an unknown keyword argument. Otherwise as :func:`score_prediction`.
    """
    unknown = sorted(set(kw) - set(_CAMEL_KW))
    if unknown:
        raise TypeError(f"scorePrediction() got unexpected keyword argument(s): {', '.join(unknown)}")
    return score_prediction(
        family,
        rawText,
        image_path=imagePath,
        mask_path=maskPath,
        **{_CAMEL_KW[k]: v for k, v in kw.items()},
    )


# --------------------------------------------------------------------------- compliance diagnostic

COMPLIANCE_READINGS: tuple[tuple[str, str, Optional[float], str], ...] = (
    ("unit", "unit", 1.0, "0-1 floats of the original image"),
    ("percent_100", "percent", 100.0, "0-100 percent of the original image"),
    ("grid_1000", "grid", 1000.0, "0-1000 grid over the original image"),
    ("pixels_original", "pixels_original", None, "absolute pixels of the original image"),
    ("pixels_resized", "pixels_resized", None, "absolute pixels of the resized model input"),
)
"""The alternative readings :func:`frame_compliance` tries: ``(name, frame kind, scale, meaning)``.
``pixels_resized`` is tried only when the model-input size is known."""

_TOKEN_FRAME_KINDS = ("bins", "patch_grid", "bin_index")

_IDENTITY: dict[int, tuple[Any, Any]] = {}


def _identity_family(fam: Any) -> Any:
    """A copy of ``fam`` whose frame is the identity (``unit``, scale 1, the declared x/y order): its
    parse yields the numbers as the model wrote them. Made once per family object (keyed by its id,
    the object kept beside it so the id is not reused)."""
    import copy

    from pointfail.frames import Frame

    hit = _IDENTITY.get(id(fam))
    if hit is not None and hit[0] is fam and hit[1].frame.order == fam.frame.order:
        return hit[1]
    identity = copy.copy(fam)
    identity.frame = Frame("raw_numbers", "unit", 1.0, fam.frame.order, "the numbers as written")
    _IDENTITY[id(fam)] = (fam, identity)
    return identity


_OTHER_FRAMES: dict[tuple[str, Optional[float], bool], list[Frame]] = {}


def _other_frames(declared: Frame, resized_known: bool) -> list[Frame]:
    """The readings of :data:`COMPLIANCE_READINGS` other than the declared frame, as frames (made once
    per declared kind and scale): none for token frames, ``pixels_resized`` only when the model-input
    size is known (``resized_known``)."""
    from pointfail.frames import Frame

    key = (declared.kind, declared.scale, resized_known)
    frames = _OTHER_FRAMES.get(key)
    if frames is None:
        frames = []
        if declared.kind not in _TOKEN_FRAME_KINDS:
            for name, kind, scale, meaning in COMPLIANCE_READINGS:
                if kind == declared.kind and (scale is None or scale == declared.scale):
                    continue
                if kind == "pixels_resized" and not resized_known:
                    continue
                frames.append(Frame(name, kind, scale, "xy", meaning))
        _OTHER_FRAMES[key] = frames
    return frames


def _compliance_frames(declared: Frame, mis: Optional[tuple[int, int]]) -> list[tuple[Frame, bool, str]]:
    """The frames :func:`frame_compliance` reads a reply under: the declared one first, then every
    other reading (:func:`_other_frames`)."""
    return [(declared, True, declared.doc or declared.kind),
            *((f, False, f.doc or f.kind) for f in _other_frames(declared, mis is not None))]


def _raw_primary(fam: Any, raw_text: str, size: tuple[int, int]) -> tuple[Optional[list[float]], ParseResult]:
    """The numbers the model wrote for its primary point (the family's parser with the identity frame,
    :func:`_identity_family`; first point, else centre of the first box), and that parse."""
    raw_parse = _identity_family(fam).parse(raw_text, size, None, task="point")
    return primary_point(raw_parse), raw_parse


def _compliance_reading(frame: Frame, is_declared: bool, meaning: str, raw: Optional[list[float]],
                        size: tuple[int, int], mis: Optional[tuple[int, int]], region: TargetRegion,
                        distances: bool) -> dict[str, Any]:
    """One reading of :func:`frame_compliance`: the raw primary point under ``frame``, inside or not."""
    from pointfail.frames import FrameError

    r: dict[str, Any] = {"frame": frame.name, "kind": frame.kind, "declared": is_declared,
                         "meaning": meaning, "primary": None, "hit": None, "distance_px": None,
                         "error": None}
    if raw is None:
        return r
    try:
        pt = [float(v) for v in frame.to_unit(raw[0], raw[1], size, mis)]
    except FrameError as e:
        r["error"] = str(e)
    else:
        r["primary"] = pt
        r["hit"] = region.contains(pt)
        if distances:
            r["distance_px"] = region.distance_px(pt)
    return r


def frame_compliance(
    family: Any,
    raw_text: str,
    image_size: Sequence[int],
    region: TargetRegion,
    model_input_size: Optional[Sequence[int]] = None,
    *,
    distances: bool = True,
) -> dict[str, Any]:
    """Coordinate-frame compliance diagnostic: would the primary point have hit under other readings
    of the same numbers? **Diagnostic only**: it never changes the outcome, which is always the
    family's declared frame (``shared/DESIGN.md``, "Coordinates"; the PointerBench paper's
    "Coordinate-frame compliance" section and its Table 13, where converting 0-1000 replies to the
    requested 1024x768 frame is reported apart and "not used for ranking").

    Method: the reply is parsed with the family's own parser, but with its frame replaced by the
    identity (``unit``, scale 1, the declared x/y order), which yields the numbers the model wrote for
    the primary point, ``raw = (x, y)`` (first point, else centre of the first box; the same rule as
    the outcome). Each reading converts ``raw`` with :meth:`pointfail.frames.Frame.to_unit` and
    checks it against ``region`` by the usual containment rule:

    * the family's declared frame (``declared: True``; its ``hit`` equals the scored outcome's),
    * then, for every reading of :data:`COMPLIANCE_READINGS` of another kind or scale than the
      declared one: ``unit`` (``v``), ``percent_100`` (``v / 100``), ``grid_1000`` (``v / 1000``),
      ``pixels_original`` (``x / W``, ``y / H``), ``pixels_resized`` (``x / Wr``, ``y / Hr``; only
      when ``model_input_size`` is given).

    Families whose frame is a token vocabulary (``bin_index``: PaliGemma; ``bins``: Florence-2; ``patch_grid``:
    Kosmos-2) write token indices, not free numbers; only their declared reading is reported
    (``alternatives`` says so).

    Args:
        family: a family name or ``Family`` object.
        raw_text: the model's reply, verbatim.
        image_size: ``(W, H)`` pixels of the original image; must equal ``region.image_size``.
        region: the target (:meth:`pointfail.geometry.TargetRegion.from_target`).
        model_input_size: ``(Wr, Hr)`` of the resized model input, when known.
        distances: compute each reading's ``distance_px`` (``False``: left ``None``; the
            aggregate table counts hits only).

    Returns:
        A JSON-ready dict::

            {"diagnostic": True, "note": "...", "family": "json_pixels",
             "declared_frame": "pixels_original", "raw_primary": [500.0, 500.0] | None,
             "reason": None | "<why no point was parsed>",
             "alternatives": "computed" | "not applicable: ...",
             "readings": [{"frame": "pixels_original", "kind": "pixels_original", "declared": True,
                           "meaning": "...", "primary": [x, y] | None, "hit": bool | None,
                           "distance_px": float | None, "error": None | "<why not computed>"}, ...],
             "hit_frames": ["grid_1000", ...]}          # readings under which the point is inside

        ``raw_primary`` is ``None`` (and every ``hit`` ``None``) when no point was parsed.
        For an absent target every ``hit`` is False (any point is a miss).

    Raises:
        KeyError: unknown family.
        ValueError: ``image_size`` differs from the region's.
    """
    fam = _resolve_family(family)
    size = (int(image_size[0]), int(image_size[1]))
    if size != region.image_size:
        raise ValueError(f"image size {size} differs from the target region's {region.image_size}")
    mis = (int(model_input_size[0]), int(model_input_size[1])) if model_input_size is not None else None
    declared = fam.frame
    raw, raw_parse = _raw_primary(fam, raw_text, size)

    token_frame = declared.kind in _TOKEN_FRAME_KINDS
    frames = _compliance_frames(declared, mis)
    readings = [_compliance_reading(frame, is_declared, meaning, raw, size, mis, region, distances)
                for frame, is_declared, meaning in frames]
    return {
        "diagnostic": True,
        "note": "diagnostic only: other readings of the same numbers; the outcome is always scored in "
                "the family's declared frame",
        "family": fam.name,
        "declared_frame": declared.name,
        "raw_primary": raw,
        "reason": raw_parse.reason,
        "alternatives": ("not applicable: the family writes token indices (frame kind "
                         f"{declared.kind!r}), not free numbers") if token_frame else "computed",
        "readings": readings,
        "hit_frames": [r["frame"] for r in readings if r["hit"]],
    }


_PARSE: Any = object()


def _one_parse(fam: Any) -> bool:
    """Whether ``fam``'s parse can give the written primary point beside the converted one
    (``Family.parse``'s ``raw_sink``): the default ``convert`` only (Kosmos-2's is its own)."""
    from pointfail.families import Family

    return isinstance(fam, Family) and type(fam).convert is Family.convert


def frame_readings(family: Any, raw_text: str, image_size: Sequence[int], region: TargetRegion,
                   model_input_size: Optional[Sequence[int]] = None, *,
                   raw_primary: Any = _PARSE) -> FrameReadings:
    """The frame-compliance readings a record stores (``Record.frame_compliance``): for each reading of
    :data:`COMPLIANCE_READINGS` that :func:`frame_compliance` tries besides the declared one (the same
    frames, the same raw primary point and conversion, the hits only: no distances, no per-reading
    dicts; a token frame is not parsed at all, it has no other reading), whether
    the primary point re-read that way is in ``region`` (``False`` when no point was parsed or the
    reading cannot convert it); ``None`` for a reading it does not try (the declared frame, token
    frames, ``pixels_resized`` without a model-input size). Called once per record, by
    :func:`build_record`, so the aggregate's diagnostic table never parses a reply or reads a mask.

    Args: as :func:`frame_compliance` (``image_size`` ``(W, H)`` pixels of the original image,
        ``model_input_size`` ``(Wr, Hr)`` pixels of the resized input when known).

        raw_primary: the written primary point when the caller's parse already gave it
        (``Family.parse``'s ``raw_sink``; ``None``: no point); by default the reply is parsed again
        under the identity frame.

    Returns:
        A :class:`~pointfail.records.FrameReadings`; ``not_computed`` says why when
        :func:`frame_compliance` raised (``ValueError``, ``GeometryError``, ``OSError``: e.g. the image size differs from the region's),
        every reading then ``None``.

    Raises:
        KeyError: unknown family.
    """
    from pointfail.frames import FrameError

    fam = _resolve_family(family)
    declared = fam.frame
    try:
        size = (int(image_size[0]), int(image_size[1]))
        if size != region.image_size:
            raise ValueError(f"image size {size} differs from the target region's {region.image_size}")
        mis = (int(model_input_size[0]), int(model_input_size[1])) if model_input_size is not None else None
        others = _other_frames(declared, mis is not None)
        raw = None if not others else (
            _raw_primary(fam, raw_text, size)[0] if raw_primary is _PARSE else raw_primary)
        hits: dict[str, Optional[bool]] = dict.fromkeys(READING_FIELDS)
        for frame in others:
            hit = False
            if raw is not None:
                try:
                    pt = [float(v) for v in frame.to_unit(raw[0], raw[1], size, mis)]
                except FrameError:
                    pass
                else:
                    hit = region.contains(pt)
            hits[frame.name] = hit
    except (GeometryError, OSError, ValueError) as e:
        return FrameReadings(declared_frame=declared.name, not_computed=str(e))
    return FrameReadings.model_validate({"declared_frame": declared.name, **hits})
