"""Each benchmark's own scoring rule, computed beside pointfail's outcome and labelled with its source.

pointfail's headline outcome is the first parsed point in the target (``pointfail.scoring``). The
publishers score differently, and :func:`official_score` reproduces their rules (facts taken from
their evaluators; no code copied):

* **Where2Place** (RoboPoint ``robopoint/eval/summarize_vqa.py``): every predicted point counts; a
  point's value is the JPEG mask's grey value / 255 at pixel ``(int(x*W), int(y*H))``, 0 when the
  pixel is outside the image; a predicted box contributes every pixel it covers; the score is the
  mean over all of them (0 with no prediction).
* **RefSpatial-Bench** (RoboRefer): the same mean over all predicted points of the in-mask value.
* **Point-Bench** (PointArena ``model_evaluator.py``): mask binarized at ``> 127`` (any channel of a
  colour mask); the pixel is ``(int(x), int(y))`` in pixels (truncation toward zero), outside the
  image is a miss. Non-counting rows keep only the first point; ``counting`` rows need exactly
  ``count`` points, all inside. No point is a failure.
* **PointerBench** (``pointerbench-*/eval.py``, release 2a112ed) and generated suites in its layout:
  ``point_in_bbox`` rows: the first point is correct when ``min(x0,x1) <= x <= max(x0,x1)`` and the
  same for y (edges inclusive, pixels of the 1024x768 frame). ``iou`` rows: the first box, corners
  sorted, is correct when coverage (intersection / target area) ``>= min_coverage`` (0.9) and
  precision (intersection / predicted area) ``>= min_precision`` (0.7); areas are continuous
  ``(x1-x0)*(y1-y0)``; a zero-area target or prediction gives coverage/precision 0. A missing or
  malformed prediction is wrong.
* **ScreenSpot-Pro** (``eval_screenspot_pro.py``): the point and the box are both divided by
  ``img_size`` and the first point is correct when ``x1 <= x <= x2`` and ``y1 <= y <= y2`` (edges
  inclusive), the same test as in pixels.

Pixel coordinates are computed from the normalized parse as ``x * W`` rounded to 6 decimals, so a
point written exactly on an inclusive edge (e.g. ``565`` of 768 rows) is not lost to float noise.
"""

from __future__ import annotations

from typing import Any, Optional

from pointfail.geometry.boxrule import box_score
from pointfail.geometry.shapes import point_in_box, sorted_box
from pointfail.records import OfficialScore, ParseResult, Sample

__all__ = [
    "official_score",
    "RULES",
]

RULES: dict[str, str] = {
    "where2place": "where2place official (RoboPoint summarize_vqa.py): mean over all predicted points "
                   "of mask/255, out-of-image points 0",
    "refspatial": "refspatial official (RoboRefer): mean over all predicted points of the in-mask value",
    "point-bench": "point-bench official (PointArena model_evaluator.py): first point in mask (>127)",
    "point-bench-counting": "point-bench official (PointArena model_evaluator.py): counting row, exactly "
                            "count points, all in mask (>127)",
    "point_in_bbox": "{bench} official (eval.py): first point in bbox, edges inclusive; missing = wrong",
    "screenspot-pro": "screenspot-pro official (eval_screenspot_pro.py): first point in box, edges "
                      "inclusive; missing = wrong",
    "iou": "{bench} official (eval.py): first box with coverage >= {cov} and precision >= {prec}; "
           "missing or malformed = wrong",
}
"""Rule labels written into ``OfficialScore.rule``."""


def _mask_file(path: Optional[str]) -> str:
    """The target's mask file; :class:`MaskError` for a target without one."""
    if not path:
        from pointfail.geometry.errors import MaskError

        raise MaskError("the official rule needs a mask target, and this target has no mask_path")
    return path


def _graded_mask(path: Optional[str]) -> Any:
    """Grey values / 255 (RoboPoint reads the JPEG as ``np.array(Image.open(..)) / 255.``); a colour
    mask is averaged over its channels first."""
    from pointfail.geometry.masks import mask_pixels

    arr = mask_pixels(_mask_file(path))
    if arr.ndim == 3:
        arr = arr[..., :3].mean(axis=2)
    return arr / 255.0


def _binary_mask(path: Optional[str]) -> Any:
    """PointArena binarization: grey > 127, or any channel > 127 for a multi-channel mask."""
    from pointfail.geometry.masks import mask_pixels

    arr = mask_pixels(_mask_file(path)) > 127
    return arr.any(axis=2) if arr.ndim == 3 else arr


def _px(v: float, size: int) -> float:
    return round(float(v) * size, 6)


def _mean_mask_value(sample: Sample, parse: ParseResult) -> float:
    m = _graded_mask(sample.target.mask_path)
    H, W = m.shape
    values: list[float] = []
    for x, y in parse.points:
        px, py = int(_px(x, W)), int(_px(y, H))
        values.append(float(m[py, px]) if 0 <= px < W and 0 <= py < H else 0.0)
    for bx0, by0, bx1, by1 in parse.boxes:
        x0, x1 = sorted((int(_px(bx0, W)), int(_px(bx1, W))))
        y0, y1 = sorted((int(_px(by0, H)), int(_px(by1, H))))
        x0, x1 = max(0, x0), min(W, x1)
        y0, y1 = max(0, y0), min(H, y1)
        if x1 > x0 and y1 > y0:
            values.extend(float(v) for v in m[y0:y1, x0:x1].ravel())
    return sum(values) / len(values) if values else 0.0


def _point_bench(sample: Sample, parse: ParseResult) -> OfficialScore:
    m = _binary_mask(sample.target.mask_path)
    W, H = sample.image.width, sample.image.height

    def inside(p: list[float]) -> bool:
        px, py = int(_px(p[0], W)), int(_px(p[1], H))  # int() truncates toward zero, as PointArena
        return 0 <= px < W and 0 <= py < H and px < m.shape[1] and py < m.shape[0] and bool(m[py, px])

    if sample.metadata.get("category") == "counting":
        count = int(sample.metadata.get("count", 1))
        pts = parse.points
        ok = len(pts) == count and all(inside(p) for p in pts)
        return OfficialScore(rule=RULES["point-bench-counting"], score=1.0 if ok else 0.0)
    ok = bool(parse.points) and inside(parse.points[0])
    return OfficialScore(rule=RULES["point-bench"], score=1.0 if ok else 0.0)


def official_score(sample: Sample, parse: Optional[ParseResult], region: Any = None) -> Optional[OfficialScore]:
    """The benchmark's own score for one sample (rules in the module docstring).

    Args:
        sample: the loaded sample (its ``benchmark``, ``target``, ``metadata`` and image size).
        parse: the parsed answer, normalized to the unit square; ``None`` when the model produced no
            response at all (infrastructure error), which is never scored.
        region: the ``pointfail.geometry.TargetRegion`` (accepted for the contract; the official
            rules threshold the mask's raw pixel values themselves, through
            :func:`pointfail.geometry.masks.mask_pixels`, because they differ from pointfail's own
            test: graded values, truncation instead of continuous pixels).

    Returns:
        :class:`OfficialScore` with ``score`` in [0, 1] and ``rule`` naming the source, or ``None``
        when ``parse`` is ``None`` or the benchmark has no official rule here (e.g. an ``absent``
        target).

    Raises:
        MaskError: the mask file of a mask benchmark cannot be read.
    """
    if parse is None:
        return None
    bench = sample.benchmark
    target = sample.target
    if bench == "where2place" and target.kind == "mask":
        return OfficialScore(rule=RULES["where2place"], score=_mean_mask_value(sample, parse))
    if bench == "refspatial" and target.kind == "mask":
        return OfficialScore(rule=RULES["refspatial"], score=_mean_mask_value(sample, parse))
    if bench == "point-bench" and target.kind == "mask":
        return _point_bench(sample, parse)
    ev = target.eval or {}
    if target.kind == "boxes" and target.boxes and ev.get("type") in ("point_in_bbox", "iou"):
        W, H = sample.image.width, sample.image.height
        box = ev.get("bbox") or target.boxes[0]
        if ev["type"] == "point_in_bbox":
            ok = bool(parse.points) and point_in_box(
                (_px(parse.points[0][0], W), _px(parse.points[0][1], H)), box)
            rule = (RULES["screenspot-pro"] if bench == "screenspot-pro"
                    else RULES["point_in_bbox"].format(bench=bench))
            return OfficialScore(rule=rule, score=1.0 if ok else 0.0)
        cov, prec = float(ev.get("min_coverage", 0.9)), float(ev.get("min_precision", 0.7))
        pred = None
        if parse.boxes:
            b = parse.boxes[0]
            pred = [_px(b[0], W), _px(b[1], H), _px(b[2], W), _px(b[3], H)]
        bs = box_score(pred, box, cov, prec)
        return OfficialScore(rule=RULES["iou"].format(bench=bench, cov=cov, prec=prec),
                             score=1.0 if bs.box_class == "hit" else 0.0)
    return None


# ---------------------------------------------------------------------------------------------
# PointerBench predictions (score-predictions; the file is read by pointfail.replies.read_replies)

_POINT_KEYS = ("point", "pred", "coordinate", "prediction")
_BOX_KEYS = ("bbox", "box", "pred", "prediction")


def _numbers(value: Any) -> list[float]:
    import re

    if isinstance(value, str):
        return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", value)]
    if isinstance(value, (list, tuple)):
        return [float(x) for x in value if isinstance(x, (int, float))]
    return []


def prediction_point(pred: dict) -> Optional[tuple[float, float]]:
    """The point of a PointerBench prediction object, read as the official scorers do: the first two
    values of ``point``/``pred``/``coordinate``/``prediction`` (a list of length >= 2), else flat
    ``x``/``y``. ``None`` when there is none or a value is not a number (malformed = wrong)."""
    try:
        for key in _POINT_KEYS:
            v = pred.get(key)
            if isinstance(v, (list, tuple)) and len(v) >= 2:
                return float(v[0]), float(v[1])
        if "x" in pred and "y" in pred:
            return float(pred["x"]), float(pred["y"])
    except (TypeError, ValueError):
        return None
    return None


def prediction_box(pred: dict) -> Optional[list[float]]:
    """The box of a PointerBench prediction object, read as ``pointerbench-text/eval.py`` does: the
    first four numbers of ``bbox``/``box``/``pred``/``prediction`` (a list, or a string holding
    numbers), else flat ``x0,y0,x1,y1``, else the first four numbers in ``text``/``raw``/``answer``;
    corners sorted. ``None`` when there is none (malformed = wrong)."""
    try:
        for key in _BOX_KEYS:
            nums = _numbers(pred.get(key))
            if len(nums) >= 4:
                return list(sorted_box(nums[:4]))
        if all(k in pred for k in ("x0", "y0", "x1", "y1")):
            return list(sorted_box([float(pred[k]) for k in ("x0", "y0", "x1", "y1")]))
        nums = _numbers(pred.get("text") or pred.get("raw") or pred.get("answer"))
        if len(nums) >= 4:
            return list(sorted_box(nums[:4]))
    except (TypeError, ValueError):
        return None
    return None




def score_pointerbench_predictions(samples: list[Sample], predictions: dict[str, dict],
                                   axes: tuple[str, ...], frame: str = "pixels") -> tuple[list[dict], dict]:
    """Score a PointerBench predictions file against loaded samples with the official rules.

    Args:
        samples: PointerBench (or suite) samples; each has one target box and its ``eval``.
        predictions: prediction objects by id (the ``obj`` of each reply that
            :func:`pointfail.replies.read_replies` found).
        axes: metadata axes to break the summary down by; an axis absent from every sample is left
            out, a sample lacking a present axis counts under ``"?"`` (as the official scorers).
        frame: what the coordinates are, declared by the caller, never guessed (:data:`pointfail.replies.FRAMES`):
            ``pixels`` (PointerBench's own) or ``unit`` (fractions, multiplied by each sample's image
            width and height before the official pixel rules).

    Returns:
        ``(rows, summary)``. Each row: ``id``, ``answer_type``, ``hit`` (bool), ``missing`` (no
        usable prediction), and for box rows ``box_class`` plus ``iou``/``coverage``/``precision``.
        ``box_class`` is ``no_prediction`` when the id has no prediction object at all, ``malformed``
        when it has one without a usable box (both are wrong, as the official rule has it). Summary:
        ``n``, ``hits``, ``accuracy`` (hits / n, rounded to 4 places as the official scorers print
        it), ``missing_predictions``, ``box_classes`` (counts over box rows), ``frame`` and
        ``by_<axis>``: ``{value: {"n", "hits", "acc"}}`` sorted by value.

    Raises:
        ValueError: an unknown frame.
    """
    from pointfail.replies import FRAMES

    if frame not in FRAMES:
        raise ValueError(f"frame must be one of {', '.join(FRAMES)}, got {frame!r}")
    rows: list[dict] = []
    present = [a for a in axes if any(a in s.metadata for s in samples)]
    by: dict[str, dict[str, list[int]]] = {a: {} for a in present}
    hits = missing = 0
    box_classes: dict[str, int] = {}
    for s in samples:
        ev = s.target.eval or {}
        gt = ev.get("bbox") or (s.target.boxes[0] if s.target.boxes else None)
        if gt is None:
            raise ValueError(f"sample {s.sample_id}: the box rule needs a target box (eval.bbox or target.boxes)")
        pred = predictions.get(s.sample_id)
        sx, sy = (s.image.width, s.image.height) if frame == "unit" else (1, 1)
        answer_type = s.metadata.get("answer_type") or ("bbox" if ev.get("type") == "iou" else "point")
        row: dict[str, Any] = {"id": s.sample_id, "answer_type": answer_type}
        if answer_type == "bbox":
            box = prediction_box(pred) if pred else None
            if box is not None:
                box = [box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy]
            bs = box_score(box, gt, float(ev.get("min_coverage", 0.9)), float(ev.get("min_precision", 0.7)))
            ok = bs.box_class == "hit"
            box_class = "no_prediction" if pred is None else bs.box_class
            row.update(box_class=box_class, iou=bs.iou, coverage=bs.coverage, precision=bs.precision,
                       missing=box is None)
            box_classes[box_class] = box_classes.get(box_class, 0) + 1
        else:
            pt = prediction_point(pred) if pred else None
            if pt is not None:
                pt = (pt[0] * sx, pt[1] * sy)
            ok = pt is not None and point_in_box(pt, gt)
            row["missing"] = pt is None
        row["hit"] = bool(ok)
        hits += int(ok)
        missing += int(row["missing"])
        for a in present:
            cell = by[a].setdefault(str(s.metadata.get(a, "?")), [0, 0])
            cell[0] += int(ok)
            cell[1] += 1
        rows.append(row)
    n = len(samples)
    summary: dict[str, Any] = {
        "n": n, "hits": hits, "accuracy": round(hits / n, 4) if n else 0.0,
        "missing_predictions": missing, "box_classes": dict(sorted(box_classes.items())), "frame": frame,
    }
    for a in present:
        summary[f"by_{a}"] = {k: {"n": v[1], "hits": v[0], "acc": round(v[0] / v[1], 4)}
                              for k, v in sorted(by[a].items())}
    return rows, summary
