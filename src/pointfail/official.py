"""Each benchmark's own scoring rule, computed beside pointfail's outcome and labelled with its source.

pointfail's headline outcome is the first parsed point in the target (``pointfail.scoring``). The
publishers score differently, and :func:`official_score` computes what their evaluation script would
print for the same reply: the publisher's parser where the official evaluation reads the text itself,
its coordinate arithmetic (``int()`` truncation or raw float comparison, never a rounding step), its
box handling and its denominator. Facts are taken from the publishers' code (cited by file and line
at the commits named below); no code is copied.

* **Where2Place**, RoboPoint ``robopoint/eval/summarize_vqa.py`` (wentaoyuan/RoboPoint adbee8d).
  Parser ``text2pts`` (lines 9-34), applied to every reply whatever the model: each ``(...)`` group of
  2 or 4 comma-separated numbers (pattern on line 10); a number with a ``.`` is a float, else an int
  (line 15). A pair with a float is relative: ``int(x * 640)``, ``int(y * 480)`` (line 55 calls
  ``text2pts`` with its defaults ``width=640, height=480``, whatever the image size); an int pair is
  pixels as written. A 4-tuple is a box: relative when ``x0`` is a float (lines 25-29), then every pixel
  of ``zeros((480, 640))[y0:y1, x0:x1]`` (numpy slice semantics: reversed corners give no pixel,
  negative ends count from the far edge, ends past the grid are cut) is added to the points (lines
  30-33). Score (lines 59-68): mask ``= jpeg / 255`` (graded), the mean over all points of the mask
  value, 0 for a point outside the mask; no point scores 0. A reply the parser raises on (a box
  whose ``x0`` is an int but another corner a float) is skipped (``continue``, lines 54-58): it is
  left out of the mean, and so is a sample with no answer (an infrastructure error).
* **RefSpatial-Bench**, RoboRefer ``Evaluation/summarize_acc.py`` (Zhoues/RoboRefer d97a995). The
  parser depends on the model (lines 113-120): Molmo ``xml2pts`` (lines 37-43: only numbered
  ``x<k>="..." y<k>="..."`` attribute pairs, ``int(float(v) / 100 * W)``: a single ``<point x= y=>``
  reads as nothing); Gemini ``json2pts`` (lines 46-63: the first fenced block, JSON items with a
  ``point`` of ``[y, x]`` on the 0-1000 grid, ``int(v / 1000 * W)``); Qwen/RoboBrain ``text2pts`` with
  ``is_absolute=True`` (values are pixels as written); every other model ``text2pts`` relative (lines
  11-34, the image's own ``W, H``: ``int(x * W)``). A text2pts box adds ``x0 + i, y0 + j`` for every
  cell of ``ones((y1 - y0, x1 - x0))`` (line 31): corners are not sorted, reversed corners raise and
  the question is dropped (lines 80-84), and cells outside the image count as 0 (lines 88-93), never
  clamped. Mask: channel 0, ``> 0`` (lines 75-78). Score: the mean as for Where2Place; the printed
  accuracy is over the evaluated questions (line 98), so dropped questions and missing answers are out
  of n.
* **Point-Bench**, PointArena ``model_evaluator.py`` / ``molmo_evaluator.py`` (pointarena/pointarena
  dcd82f2). Mask: grey ``> 127`` or any channel ``> 127`` (``load_mask``, model_evaluator.py lines
  1202-1224); a point ``(x, y)`` in pixels is in the mask when ``int(x), int(y)`` (truncation toward
  zero) is inside the image and set (``is_point_in_mask``, lines 1226-1249). Non-counting rows keep the
  first point only (molmo_evaluator.py lines 332-334, and alike in every ``call_*``); ``counting`` rows
  need exactly ``count`` points (model_evaluator.py lines 1499-1510), all inside (lines 1512-1518); no
  point (lines 1481-1492) and an error calling the model (lines 1541-1549) are failures, every row is
  in ``total`` (line 1388). Molmo replies are read by ``extract_points`` (molmo_evaluator.py lines
  206-274): four patterns applied one after another over the whole text, every match appended
  (``Click(a.b, c.d)``, ``(a.b, c.d)`` with exactly one decimal, ``x<k>="v" y<k>="v"``, ``p=xxx,yyy``
  in tenths), percent of the image: ``v / 100 * W``, a pair with a value above 100 skipped. The other
  families' evaluators (Qwen's pattern cascade, the JSON of the API models) are not reproduced here:
  pointfail's family parse stands in, converted to pixels exactly (see below).
* **PointerBench** (``pointerbench-*/eval.py``, release 2a112ed) and generated suites in its layout:
  ``point_in_bbox`` rows: the first point is correct when ``min(x0,x1) <= x <= max(x0,x1)`` and the
  same for y (edges inclusive, pixels of the 1024x768 frame). ``iou`` rows: the first box, corners
  sorted, is correct when coverage (intersection / target area) ``>= min_coverage`` (0.9) and
  precision (intersection / predicted area) ``>= min_precision`` (0.7); areas are continuous
  ``(x1-x0)*(y1-y0)``; a zero-area target or prediction gives coverage/precision 0. A missing or
  malformed prediction, and a sample with no answer, are wrong (in n).
* **ScreenSpot-Pro**, ``eval_screenspot_pro.py`` (likaixin2000/ScreenSpot-Pro-GUI-Grounding bd8bbbb):
  the box is divided by ``img_size`` and the model's normalized point compared raw,
  ``x1/W <= x <= x2/W`` and ``y1/H <= y <= y2/H`` (``eval_sample_positive_gt``, lines 137-152). The
  point is the model wrapper's: the first point, or a box answer's centre (``models/qwen2_5vl.py``
  lines 198-208, ``models/internvl.py`` line 140, ``models/osatlas7b.py`` line 169 and most other
  wrappers), i.e. pointfail's primary point. No point is ``wrong_format`` (lines 144-147), counted in
  ``num_total`` (lines 112-131), and so is a sample with no answer. The per-group report
  (fine_grained, seeclick_style, group, application, overall; lines 112-134, 162-331) is the
  ``official_screenspot_pro`` table (:mod:`pointfail.aggregate.official`).

**Exact coordinates.** Where the rule reads pointfail's family parse (PointerBench, Point-Bench for
non-Molmo families, pointfail's own reading below), a pixel coordinate is ``x * W`` as a float, never
rounded; for a family whose frame is pixels of the original image the number the model wrote is
recovered exactly (:func:`rule_pixel`). Truncation happens only where the official code truncates.

**pointfail's own reading.** Where the official parser reads the reply itself, the same rule is also
applied to pointfail's family parse (points as ``int(x * W)``, boxes by the benchmark's box handling);
when the two readings differ, :attr:`OfficialScore.own_score` holds what pointfail's reading would
score, so the table can say how many replies were read differently and what they would give.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Optional, Sequence, Union

from pointfail.geometry.boxrule import box_score
from pointfail.geometry.shapes import point_in_box, sorted_box
from pointfail.limits import MAX_REPLY_CHARS
from pointfail.records import OfficialScore, ParseResult, Sample

__all__ = [
    "FRAMES",
    "official_score",
    "rule_pixel",
    "robopoint_text2pts",
    "roborefer_reading",
    "pointarena_extract_points",
    "RULES",
    "RULE_NAMES",
    "benchmark_rule",
    "use_benchmark_rules",
    "MISSING_COUNTS_AS_WRONG",
    "SCREENSPOT_WRONG_FORMAT",
    "screenspot_correctness",
]

FRAMES: dict[str, str] = {
    "pixels": "absolute pixels of the original image (PointerBench's own format)",
    "unit": "fractions of the image's width and height, 0 to 1",
}
"""The frames coordinates in a replies file can be declared in (``--frame``), with what they mean."""

RULES: dict[str, str] = {
    "where2place": "where2place official (RoboPoint summarize_vqa.py): text2pts, mean over all points "
                   "of mask/255, out-of-image points 0",
    "refspatial": "refspatial official (RoboRefer summarize_acc.py {reader}): mean over all points of "
                  "mask > 0, out-of-image points 0",
    "point-bench": "point-bench official (PointArena model_evaluator.py): first point in mask (>127)",
    "point-bench-counting": "point-bench official (PointArena model_evaluator.py): counting row, exactly "
                            "count points, all in mask (>127)",
    "point_in_bbox": "{bench} official (eval.py): first point in bbox, edges inclusive; missing = wrong",
    "screenspot-pro": "screenspot-pro official (eval_screenspot_pro.py): first point (a box: its centre) in "
                      "box, edges inclusive; missing = wrong",
    "iou": "{bench} official (eval.py): first box with coverage >= {cov} and precision >= {prec}; "
           "missing or malformed = wrong",
}
"""Rule labels written into ``OfficialScore.rule``."""

RULE_NAMES = ("where2place", "refspatial", "point-bench", "screenspot-pro")
"""The rules a benchmark names (``rule`` of its declaration, :class:`pointfail.inputs.benchmarks.Benchmark`):
RoboPoint's mean over points (``where2place``), RoboRefer's (``refspatial``), PointArena's first point in
mask (``point-bench``), ScreenSpot-Pro's normalized point in box (``screenspot-pro``). A benchmark that
names none is scored by each target's ``eval`` (PointerBench's ``point_in_bbox`` and ``iou``), or not at
all."""

_RULE_OF: Optional[Callable[[str], Optional[str]]] = None


def use_benchmark_rules(rule_of: Callable[[str], Optional[str]]) -> None:
    """Install the benchmark -> rule lookup: ``rule_of(benchmark name)`` gives the name (one of
    :data:`RULE_NAMES`) the benchmark's declaration names, or ``None``. The benchmark registry
    (:func:`pointfail.inputs.benchmarks.benchmarks`) installs its own when it is first read; the method
    never imports it."""
    global _RULE_OF
    _RULE_OF = rule_of


def benchmark_rule(benchmark: str) -> Optional[str]:
    """The official rule (a name of :data:`RULE_NAMES`) that scores ``benchmark``: the one its
    declaration names (:func:`use_benchmark_rules`), else the rule of the same name (the publishers'
    own benchmarks are named as their rules, so a record is scored alike whether or not the registry
    was read), else ``None`` (scored by each target's ``eval``)."""
    named = _RULE_OF(benchmark) if _RULE_OF is not None else None
    if named is not None:
        if named not in RULE_NAMES:
            raise ValueError(f"benchmark {benchmark!r} names official rule {named!r}; known: {', '.join(RULE_NAMES)}")
        return named
    return benchmark if benchmark in RULE_NAMES else None

MISSING_COUNTS_AS_WRONG = frozenset({"point-bench", "screenspot-pro"})
"""Benchmarks whose official script counts a sample with no answer as wrong (in n); PointerBench's
``eval.py`` rules (box targets with an ``eval``) do too. RoboPoint's and RoboRefer's scripts leave it
out of their mean."""

# --------------------------------------------------------------------------------- pixel values

#: Decimal places tried when recovering a pixel value a model wrote (:func:`rule_pixel`).
_WRITTEN_DECIMALS = 7


def rule_pixel(v: float, size: int, frame_kind: Optional[str] = None) -> float:
    """The pixel coordinate an official rule compares, for a normalized coordinate ``v`` of an image
    ``size`` pixels wide (or high).

    ``v * size`` as a float, unrounded. For a frame in pixels of the original image
    (``frame_kind == "pixels_original"``) the parse was ``written / size``, and ``written`` is what the
    official code compares: it is recovered as the shortest decimal ``c`` (0 to 6 places) with
    ``c / size == v`` bit for bit, so ``565`` of 768 rows stays 565 even though ``565 / 768 * 768`` is
    ``565.0000000000001``; when none round-trips, ``v * size``. Non-finite values pass through.
    """
    p = float(v) * size
    if frame_kind == "pixels_original" and math.isfinite(p):
        for d in range(_WRITTEN_DECIMALS):
            c = round(p, d)
            if c / size == v:
                return c
    return p


def _frame_kind(parse: ParseResult) -> Optional[str]:
    from pointfail.families import get_family

    try:
        return get_family(parse.family).frame.kind
    except KeyError:
        return None


# ------------------------------------------------------------------------- the official parsers

# A "point item" is ("pt", x, y) in integer pixels; a "box item" is ("box", xs, ys) with ``xs``/``ys``
# Python ranges of pixel columns/rows (the box's cells). A reading is a list of items, or None when the
# official parser raises on the reply (the script skips or drops it).
Item = tuple[str, Any, Any]

# The number pattern of both text2pts parsers, ``[-+]?\d+\.?\d*`` (summarize_vqa.py line 10,
# summarize_acc.py line 12), written in an unambiguous form that matches the same strings in linear time.
_NUM = r"[-+]?\d+(?:\.\d*)?"
_TUPLE = re.compile(rf"\(({_NUM}(?:,\s*{_NUM})*?)\)")
_XML = re.compile(r'(x\d+)="(-?\d+(?:\.\d*)?)"\s+(y\d+)="(-?\d+(?:\.\d*)?)"')
_FENCE = re.compile(r"```(?:\w+)?\n(.*?)```", re.DOTALL)


def _number(tok: str) -> Union[int, float]:
    """As text2pts: a float when the token has a ``.``, else an int."""
    return float(tok) if "." in tok else int(tok)


def robopoint_text2pts(text: str, width: int = 640, height: int = 480, *, variant: str = "robopoint",
                       absolute: bool = False) -> Optional[list[Item]]:
    """``text2pts`` of RoboPoint (``variant="robopoint"``, summarize_vqa.py lines 9-34) or RoboRefer
    (``variant="roborefer"``, summarize_acc.py lines 11-34, ``absolute`` for its Qwen/RoboBrain
    reading), as items (module comment above) in integer pixels.

    Returns ``None`` where the official function raises (RoboPoint: a box with an int ``x0`` and a
    float elsewhere slices with a float; RoboRefer: a box with reversed corners makes a negative
    dimension, an absolute box with floats a float one; RoboRefer absolute: a float pair makes the
    mask index a float, which stops the whole script, reported here as unscored).
    """
    try:
        return _text2pts(text, width, height, variant, absolute)
    except OverflowError:  # int() of an infinite float (a number too long for a float): the script raises
        return None


def _text2pts(text: str, width: int, height: int, variant: str, absolute: bool) -> Optional[list[Item]]:
    items: list[Item] = []
    for m in _TUPLE.finditer(text[:MAX_REPLY_CHARS]):
        vec = [_number(t.strip()) for t in m.group(1).split(",")]
        if len(vec) == 2:
            item = _point_item(vec, width, height, absolute)
        elif len(vec) == 4:
            item = _box_item(vec, width, height, variant, absolute)
        else:
            continue
        if item is None:  # where the official code raises, the whole reply scores 0
            return None
        items.append(item)
    return items


def _point_item(vec: list[Any], width: int, height: int, absolute: bool) -> Optional[Item]:
    """One ``(x, y)`` tuple of :func:`_text2pts`; ``None`` where the official code fails on it."""
    x, y = vec
    if isinstance(x, float) or isinstance(y, float):
        if absolute:
            return None
        x, y = int(x * width), int(y * height)
    return ("pt", x, y)


def _box_item(vec: list[Any], width: int, height: int, variant: str, absolute: bool) -> Optional[Item]:
    """One ``(x0, y0, x1, y1)`` tuple of :func:`_text2pts`; ``None`` where the official code fails on it."""
    x0, y0, x1, y1 = vec
    if variant == "robopoint":
        if isinstance(x0, float):
            x0, y0, x1, y1 = int(x0 * width), int(y0 * height), int(x1 * width), int(y1 * height)
        if not (isinstance(x0, int) and isinstance(y0, int) and isinstance(x1, int) and isinstance(y1, int)):
            return None
        # mask = zeros((height, width)); mask[y0:y1, x0:x1] = 1; its set cells become points
        return ("box", range(width)[x0:x1], range(height)[y0:y1])
    if not absolute:
        x0, y0, x1, y1 = int(x0 * width), int(y0 * height), int(x1 * width), int(y1 * height)
    if not (isinstance(x0, int) and isinstance(y0, int) and isinstance(x1, int) and isinstance(y1, int)):
        return None
    if y1 < y0 or x1 < x0:
        return None
    return ("box", range(x0, x1), range(y0, y1))


def roborefer_xml2pts(text: str, width: int, height: int) -> Optional[list[Item]]:
    """RoboRefer's Molmo reader ``xml2pts`` (summarize_acc.py lines 37-43): numbered attribute pairs
    only, ``int(float(v) / 100 * W)``; ``None`` where that raises (a number too long for a float)."""
    try:
        return [("pt", int(float(x) / 100 * width), int(float(y) / 100 * height))
                for _, x, _, y in _XML.findall(text[:MAX_REPLY_CHARS])]
    except OverflowError:
        return None


def roborefer_json2pts(text: str, width: int, height: int) -> Optional[list[Item]]:
    """RoboRefer's Gemini reader ``json2pts`` (summarize_acc.py lines 46-63): the first fenced block,
    each item's ``point`` ``[y, x]`` on the 0-1000 grid, ``int(v / 1000 * W)``. An unreadable block
    reads as no point; an item the script would raise on (not a mapping, a non-number) drops the
    question (``None``)."""
    m = _FENCE.search(text[:MAX_REPLY_CHARS])
    if not m:
        return []
    try:
        data = json.loads(m.group(1).strip())
    except (ValueError, RecursionError):
        return []
    items: list[Item] = []
    try:
        for item in data:
            if "point" in item and isinstance(item["point"], list) and len(item["point"]) == 2:
                y_norm, x_norm = item["point"]
                if isinstance(x_norm, bool) or isinstance(y_norm, bool) or not all(
                        isinstance(v, (int, float)) for v in (x_norm, y_norm)):
                    return None
                items.append(("pt", int(x_norm / 1000 * width), int(y_norm / 1000 * height)))
    except (TypeError, KeyError, IndexError, ValueError, OverflowError):
        return None
    return items


def roborefer_reader(family: Optional[str]) -> str:
    """The reader RoboRefer's ``main`` picks for a model (summarize_acc.py lines 113-120), by pointfail
    family: ``xml2pts`` (Molmo), ``json2pts`` (Gemini), ``text2pts absolute`` (Qwen), else ``text2pts``
    (relative: RoboPoint, GPT-4o, Claude, RoboRefer; the script names no reading for other models)."""
    f = family or ""
    if f == "molmo":
        return "xml2pts"
    if f == "gemini":
        return "json2pts"
    if f.startswith("qwen"):
        return "text2pts absolute"
    return "text2pts"


def roborefer_reading(text: str, width: int, height: int, family: Optional[str]) -> Optional[list[Item]]:
    """Read a RefSpatial reply as RoboRefer's ``summarize_acc.py`` would for ``family`` (see
    :func:`roborefer_reader`); ``None`` when the script drops the question."""
    reader = roborefer_reader(family)
    if reader == "xml2pts":
        return roborefer_xml2pts(text, width, height)
    if reader == "json2pts":
        return roborefer_json2pts(text, width, height)
    return robopoint_text2pts(text, width, height, variant="roborefer", absolute=reader == "text2pts absolute")


_PA_PATTERNS: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"Click\(([0-9]+\.[0-9]), ?([0-9]+\.[0-9])\)"), 1.0),
    (re.compile(r"\(([0-9]+\.[0-9]),? ?([0-9]+\.[0-9])\)"), 1.0),
    (re.compile(r'x\d*="\s*([0-9]+(?:\.[0-9]+)?)"\s+y\d*="\s*([0-9]+(?:\.[0-9]+)?)"'), 1.0),
    (re.compile(r"(?:\d+|p)\s*=\s*([0-9]{3})\s*,\s*([0-9]{3})"), 10.0),
)


def pointarena_extract_points(text: str, width: int, height: int) -> list[tuple[float, float]]:
    """PointArena's Molmo reader ``extract_points`` (molmo_evaluator.py lines 206-274): the four
    patterns in order over the whole text, every match appended (a ``Click(..)`` also matches the
    bare-pair pattern and is counted twice, as there); values are percent (the ``p=`` form in tenths),
    a pair with a value above 100 is skipped; pixels ``v / 100 * W`` as floats."""
    out: list[tuple[float, float]] = []
    t = text[:MAX_REPLY_CHARS]
    for pat, div in _PA_PATTERNS:
        for m in pat.finditer(t):
            a = (int(m.group(1)) / div) if div != 1.0 else float(m.group(1))
            b = (int(m.group(2)) / div) if div != 1.0 else float(m.group(2))
            if max(a, b) > 100:
                continue
            out.append((a / 100.0 * width, b / 100.0 * height))
    return out


# ----------------------------------------------------------------------------------- the masks

def _mask_file(path: Optional[str]) -> str:
    """The target's mask file; :class:`MaskError` for a target without one."""
    if not path:
        from pointfail.geometry.errors import MaskError

        raise MaskError("the official rule needs a mask target, and this target has no mask_path")
    return path


def _graded_mask(path: Optional[str]) -> Any:
    """RoboPoint's mask: ``np.array(Image.open(..)) / 255.`` (summarize_vqa.py line 59); a colour mask
    (which makes the script's indexing fail) is averaged over its channels here."""
    from pointfail.geometry.masks import mask_pixels

    arr = mask_pixels(_mask_file(path))
    if arr.ndim == 3:
        arr = arr[..., :3].mean(axis=2)
    return arr / 255.0


def _nonzero_mask(path: Optional[str]) -> Any:
    """RoboRefer's mask: channel 0 of a colour mask, ``/ 255 > 0`` (summarize_acc.py lines 75-78)."""
    from pointfail.geometry.masks import mask_pixels

    arr = mask_pixels(_mask_file(path))
    if arr.ndim == 3:
        arr = arr[..., 0]
    return (arr > 0).astype(float)


def _binary_mask(path: Optional[str]) -> Any:
    """PointArena binarization: grey > 127, or any channel > 127 for a multi-channel mask."""
    from pointfail.geometry.masks import mask_pixels

    arr = mask_pixels(_mask_file(path)) > 127
    return arr.any(axis=2) if arr.ndim == 3 else arr


def _mean_over_items(m: Any, items: list[Item]) -> float:
    """The RoboPoint/RoboRefer mean: every point (box cells included) counts once, its mask value when
    ``0 <= x < W`` and ``0 <= y < H``, else 0; no point gives 0. Box cells are summed in closed form
    (the overlap with the mask), never expanded."""
    H, W = m.shape
    total = 0.0
    n = 0
    for kind, a, b in items:
        if kind == "pt":
            n += 1
            if 0 <= a < W and 0 <= b < H:
                total += float(m[b, a])
        else:
            xs, ys = a, b
            n += len(xs) * len(ys)
            if not (len(xs) and len(ys)):
                continue
            x0, x1 = max(xs.start, 0), min(xs.stop, W)
            y0, y1 = max(ys.start, 0), min(ys.stop, H)
            if x1 > x0 and y1 > y0:
                total += float(m[y0:y1, x0:x1].sum())
    return total / n if n else 0.0


def _own_items(parse: ParseResult, W: int, H: int, variant: str) -> list[Item]:
    """pointfail's family parse as the benchmark's items: points ``int(x * W)`` of the exact float;
    boxes (already corner-sorted by the parser) as the benchmark's box cells."""
    kind = _frame_kind(parse)
    items: list[Item] = []
    for x, y in parse.points:
        px, py = rule_pixel(x, W, kind), rule_pixel(y, H, kind)
        if not (math.isfinite(px) and math.isfinite(py)):
            continue
        items.append(("pt", int(px), int(py)))
    for b in parse.boxes:
        corners = [rule_pixel(b[0], W, kind), rule_pixel(b[1], H, kind), rule_pixel(b[2], W, kind),
                   rule_pixel(b[3], H, kind)]
        if not all(math.isfinite(v) for v in corners):
            continue
        x0, y0, x1, y1 = (int(v) for v in corners)
        if variant == "robopoint":
            items.append(("box", range(W)[x0:x1], range(H)[y0:y1]))
        else:
            items.append(("box", range(x0, x1), range(y0, y1)))
    return items


def _item_key(item: Item) -> tuple:
    kind, a, b = item
    if kind == "pt":
        return (kind, a, b)
    return (kind, (a.start, a.stop) if len(a) else None, (b.start, b.stop) if len(b) else None)


def _same(a: list[Item], b: list[Item]) -> bool:
    """Whether two readings give the same points and box cells."""
    return [_item_key(i) for i in a] == [_item_key(i) for i in b]


def _mask_rule(sample: Sample, parse: Optional[ParseResult], raw_text: Optional[str], family: Optional[str],
               name: str) -> Optional[OfficialScore]:
    """Where2Place and RefSpatial (rule ``name``): the official parser on the raw text, the mean over its points."""
    if name == "where2place":
        m = _graded_mask(sample.target.mask_path)
        rule, variant = RULES["where2place"], "robopoint"
        # text2pts is called with its defaults: relative values are scaled to 640 x 480 (line 55)
        official = robopoint_text2pts(raw_text, 640, 480, variant="robopoint") if raw_text is not None else None
        H, W = m.shape  # pointfail's own reading is in the image's own pixels (Where2Place's are 640 x 480)
    else:
        m = _nonzero_mask(sample.target.mask_path)
        H, W = m.shape
        rule, variant = RULES["refspatial"].format(reader=roborefer_reader(family)), "roborefer"
        official = roborefer_reading(raw_text, W, H, family) if raw_text is not None else None
    own_items = _own_items(parse, W, H, variant) if parse is not None else None
    own = _mean_over_items(m, own_items) if own_items is not None else None
    if raw_text is None:  # no text to read (a caller with a parse only): pointfail's reading stands in
        return OfficialScore(rule=rule, score=own)
    if official is None:
        return OfficialScore(rule=rule, score=None, own_score=own,
                             note="the official parser raises on this reply: the script leaves it out")
    score = _mean_over_items(m, official)
    if own_items is None or _same(official, own_items):
        return OfficialScore(rule=rule, score=score)
    return OfficialScore(rule=rule, score=score, own_score=own)


def _point_bench(sample: Sample, parse: Optional[ParseResult], raw_text: Optional[str], family: Optional[str]) -> OfficialScore:
    m = _binary_mask(sample.target.mask_path)
    W, H = sample.image.width, sample.image.height
    kind = _frame_kind(parse) if parse is not None else None

    def inside(p: Sequence[float]) -> bool:
        px, py = p
        if not (math.isfinite(px) and math.isfinite(py)):
            return False
        ix, iy = int(px), int(py)  # int() truncates toward zero, as is_point_in_mask
        return 0 <= ix < W and 0 <= iy < H and ix < m.shape[1] and iy < m.shape[0] and bool(m[iy, ix])

    own_pts = [(rule_pixel(x, W, kind), rule_pixel(y, H, kind)) for x, y in (parse.points if parse is not None else [])]
    pts = pointarena_extract_points(raw_text, W, H) if (family == "molmo" and raw_text is not None) else own_pts
    counting = sample.metadata.get("category") == "counting"
    rule = RULES["point-bench-counting"] if counting else RULES["point-bench"]

    def score(points: list[tuple[float, float]]) -> float:
        if counting:
            count = int(sample.metadata.get("count", 1))
            return 1.0 if len(points) == count and all(inside(p) for p in points) else 0.0
        return 1.0 if points and inside(points[0]) else 0.0

    s = score(pts)
    if pts is own_pts or parse is None:
        return OfficialScore(rule=rule, score=s)
    same = [(int(a), int(b)) for a, b in pts if math.isfinite(a) and math.isfinite(b)] == \
        [(int(a), int(b)) for a, b in own_pts if math.isfinite(a) and math.isfinite(b)]
    return OfficialScore(rule=rule, score=s) if same else OfficialScore(rule=rule, score=s, own_score=score(own_pts))


def official_score(sample: Sample, parse: Optional[ParseResult], region: Any = None, *,
                   raw_text: Optional[str] = None, family: Optional[str] = None,
                   rule: Optional[str] = None) -> Optional[OfficialScore]:
    """The benchmark's own score for one sample: what its official script would count (rules in the
    module docstring).

    Args:
        sample: the loaded sample (its ``benchmark``, ``target``, ``metadata`` and image size).
        parse: pointfail's family parse, normalized to the unit square; ``None`` when the model produced
            no response at all (an infrastructure error) or the reply could not be converted.
        region: the ``pointfail.geometry.TargetRegion`` (accepted for the contract; the official
            rules threshold the mask's raw pixel values themselves, through
            :func:`pointfail.geometry.masks.mask_pixels`).
        raw_text: the model's reply, for the benchmarks whose official evaluation parses the text
            itself (Where2Place, RefSpatial, Point-Bench for Molmo). ``None``: pointfail's parse stands in.
        family: the pointfail family name, which picks RoboRefer's and PointArena's reader.
        rule: the official rule's name (:data:`RULE_NAMES`); ``None``: the one ``sample.benchmark``
            names (:func:`benchmark_rule`).

    Returns:
        :class:`OfficialScore` with ``score`` in [0, 1] (``None`` when the official script leaves the
        row out of its mean, with ``note`` saying why), ``own_score`` when pointfail's reading of the
        reply scores under the same rule differently read, and ``rule`` naming the source. A sample
        with no answer (``parse`` and ``raw_text`` both ``None``) scores 0 where the official script
        counts it wrong (Point-Bench, ScreenSpot-Pro, PointerBench's rules) and has score ``None``
        (left out of the mean, with a ``note``) on Where2Place and RefSpatial. ``None`` when the
        benchmark has no official rule here (e.g. an ``absent`` target).

    Raises:
        MaskError: the mask file of a mask benchmark cannot be read.
        ValueError: a benchmark that names an unknown rule.
    """
    name = rule if rule is not None else benchmark_rule(sample.benchmark)
    target = sample.target
    ev = target.eval or {}
    box_rule = target.kind == "boxes" and bool(target.boxes) and ev.get("type") in ("point_in_bbox", "iou")
    if parse is None and raw_text is None:
        return _no_answer_score(sample, name, box_rule, family)
    if name in ("where2place", "refspatial") and target.kind == "mask":
        return _mask_rule(sample, parse, raw_text, family, name)
    if name == "point-bench" and target.kind == "mask":
        return _point_bench(sample, parse, raw_text, family)
    if not box_rule:
        return None
    if parse is None:  # a reply pointfail could not convert: the box rules read pointfail's parse
        return OfficialScore(rule=_box_rule_name(sample.benchmark, ev, name), score=0.0, note=_NO_ANSWER_WRONG)
    if ev["type"] == "point_in_bbox":
        return _point_in_box_score(sample, parse, name)
    return _iou_box_score(sample, parse, name)


def _no_answer_score(sample: Sample, name: Optional[str], box_rule: bool,
                     family: Optional[str]) -> Optional[OfficialScore]:
    """The official score of a sample with no answer at all (no parse and no reply text).

    Point-Bench (its counting category under its own rule name) and the box rules (ScreenSpot-Pro,
    point_in_bbox, IoU) count it wrong: score 0. Where2Place's and RefSpatial's scripts leave it out of
    their mean: score ``None`` with a note. ``None`` when ``name`` (the rule's name) has no official rule
    for the sample's target kind. ``box_rule``: the target is boxes under a ``point_in_bbox`` or ``iou``
    eval; ``family`` picks RoboRefer's reader for the RefSpatial rule's label.
    """
    kind = sample.target.kind
    if name == "point-bench" and kind == "mask":
        counting = sample.metadata.get("category") == "counting"
        return OfficialScore(rule=RULES["point-bench-counting" if counting else "point-bench"], score=0.0,
                             note="no answer: a failure in the script's total")
    if box_rule:
        return OfficialScore(rule=_box_rule_name(sample.benchmark, sample.target.eval or {}, name), score=0.0,
                             note=_NO_ANSWER_WRONG)
    if name == "where2place" and kind == "mask":
        return OfficialScore(rule=RULES["where2place"], score=None, note=_LEFT_OUT_NO_ANSWER)
    if name == "refspatial" and kind == "mask":
        return OfficialScore(rule=RULES["refspatial"].format(reader=roborefer_reader(family)), score=None,
                             note=_LEFT_OUT_NO_ANSWER)
    return None


def _point_in_box_score(sample: Sample, parse: ParseResult, name: Optional[str]) -> OfficialScore:
    """Score 1/0 of a ``point_in_bbox`` box target (the eval's ``bbox`` or the first target box, pixels
    ``[x0, y0, x1, y1]`` in the image frame).

    ScreenSpot-Pro (``eval_sample_positive_gt``): the box divided by the image size, pointfail's primary
    point (a box answer's centre, in the unit square) compared raw; no point is ``wrong_format``
    (:data:`SCREENSPOT_WRONG_FORMAT`). The other rules: the first parsed point, read in pixels through
    :func:`rule_pixel` for the parse's frame kind, inside the box (:func:`point_in_box`).
    """
    W, H = sample.image.width, sample.image.height
    ev = sample.target.eval or {}
    box = ev.get("bbox") or sample.target.boxes[0]  # type: ignore[index]
    label = _box_rule_name(sample.benchmark, ev, name)
    if name == "screenspot-pro":
        # eval_sample_positive_gt: the box divided by img_size, the normalized point compared raw;
        # the model wrappers answer a box with its centre (pointfail's primary point)
        from pointfail.scoring import primary_point

        x0, y0, x1, y1 = (float(v) for v in box)
        pt = primary_point(parse)
        if pt is None:
            return OfficialScore(rule=label, score=0.0, note=SCREENSPOT_WRONG_FORMAT)
        ok = (x0 / W <= pt[0] <= x1 / W) and (y0 / H <= pt[1] <= y1 / H)
    else:
        kind = _frame_kind(parse)
        ok = bool(parse.points) and point_in_box(
            (rule_pixel(parse.points[0][0], W, kind), rule_pixel(parse.points[0][1], H, kind)), box)
    return OfficialScore(rule=label, score=1.0 if ok else 0.0)


def _iou_box_score(sample: Sample, parse: ParseResult, name: Optional[str]) -> OfficialScore:
    """Score 1/0 of an ``iou`` box target: the first parsed box, read in pixels through :func:`rule_pixel`,
    is a hit under :func:`box_score` with the eval's ``min_coverage`` (default 0.9) and ``min_precision``
    (default 0.7); no parsed box is a miss."""
    W, H = sample.image.width, sample.image.height
    ev = sample.target.eval or {}
    box = ev.get("bbox") or sample.target.boxes[0]  # type: ignore[index]
    cov, prec = float(ev.get("min_coverage", 0.9)), float(ev.get("min_precision", 0.7))
    pred = None
    if parse.boxes:
        kind = _frame_kind(parse)
        b = parse.boxes[0]
        pred = [rule_pixel(b[0], W, kind), rule_pixel(b[1], H, kind), rule_pixel(b[2], W, kind),
                rule_pixel(b[3], H, kind)]
    bs = box_score(pred, box, cov, prec)
    return OfficialScore(rule=_box_rule_name(sample.benchmark, ev, name), score=1.0 if bs.box_class == "hit" else 0.0)


_LEFT_OUT_NO_ANSWER = "no answer: the script leaves it out of its mean"
_NO_ANSWER_WRONG = "no answer: counted wrong"

SCREENSPOT_WRONG_FORMAT = "wrong_format: no point"
"""``OfficialScore.note`` of a ScreenSpot-Pro reply with no point (``eval_sample_positive_gt`` returns
``wrong_format`` when the model's ``point`` is ``None``, eval_screenspot_pro.py lines 144-147)."""


def screenspot_correctness(score: Optional[float], note: Optional[str]) -> str:
    """The ``correctness`` eval_screenspot_pro.py gives one positive sample (lines 137-152, 419-432):
    ``correct`` (score 1), ``wrong_format`` (no point: :data:`SCREENSPOT_WRONG_FORMAT`, or no answer at
    all, which the official loop would see as ``point is None``), else ``wrong``. ``score`` and ``note``
    are the row's :class:`OfficialScore` under the ScreenSpot-Pro rule."""
    if score == 1.0:
        return "correct"
    if note is not None and (note == SCREENSPOT_WRONG_FORMAT or note.startswith("no answer")):
        return "wrong_format"
    return "wrong"


def _box_rule_name(bench: str, ev: dict, name: Optional[str]) -> str:
    if ev.get("type") == "iou":
        return RULES["iou"].format(bench=bench, cov=float(ev.get("min_coverage", 0.9)),
                                   prec=float(ev.get("min_precision", 0.7)))
    return RULES["screenspot-pro"] if name == "screenspot-pro" else RULES["point_in_bbox"].format(bench=bench)


# ---------------------------------------------------------------------------------------------
# PointerBench predictions (score-predictions; the file is read by pointfail.inputs.replies.read_replies)

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
            :func:`pointfail.inputs.replies.read_replies` found).
        axes: metadata axes to break the summary down by; an axis absent from every sample is left
            out, a sample lacking a present axis counts under ``"?"`` (as the official scorers).
        frame: what the coordinates are, declared by the caller, never guessed (:data:`FRAMES`):
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
