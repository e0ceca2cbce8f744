"""Prompts: strip answer-format directives written for other models, then wrap the core instruction
in each family's native phrasing.

Benchmark instructions often carry a directive aimed at the model the benchmark was built for, e.g.
Where2Place / RoboPoint::

    <image>
    Point to the free space left of the mug. Your answer should be formatted as a list of tuples,
    i.e. [(x1, y1), (x2, y2), ...], where each tuple contains the x and y coordinates of a point
    satisfying the conditions above. The coordinates should be between 0 and 1, indicating the
    normalized pixel locations of the points in the image.

Sending that to Molmo or Qwen would ask them for a format they were not trained on. So
:func:`strip_directives` removes every match of the small :data:`DIRECTIVES` registry (each pattern
tested against the publishers' real wording), and :func:`build_prompt` sends the core instruction in
the family's own phrasing, keeping all three forms (original, core, sent) for the record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pointfail.records import Prompt, Sample

__all__ = ["Directive", "DIRECTIVES", "PromptError", "absent_possible", "build_prompt", "instruction_given",
           "reference_point_in_frame", "strip_directives"]


class PromptError(ValueError):
    """An instruction that is empty once its directives are stripped (nothing left to ask)."""


@dataclass(frozen=True)
class Directive:
    """One named answer-format directive pattern.

    Attributes:
        name: recorded in ``Prompt.stripped`` when it fired.
        pattern: compiled regex matching the whole directive (case-sensitive, whitespace-tolerant).
        source: where the wording comes from.
    """

    name: str
    pattern: re.Pattern[str]
    source: str


def _ws(text: str) -> str:
    """Turn literal spaces of a regex source into ``\\s+`` so line-wrapped copies still match."""
    return text.replace(" ", r"\s+")


# "The coordinates should ..." sentence: 0-1 normalized, integers 0-999, or 0-1000 variants.
_COORD_SENTENCE = _ws(r"(?: The coordinates should [^.]*\.)?(?: Output \d+ (?:coordinates|points)\.)?")

DIRECTIVES: tuple[Directive, ...] = (
    Directive(
        name="image_placeholder",
        pattern=re.compile(r"^\s*<image>\s*\n?"),
        source="LLaVA/RoboPoint question files: a leading '<image>' line marking where the image goes",
    ),
    Directive(
        name="robopoint_point_list",
        pattern=re.compile(
            _ws(r"Your (?:final )?answer should be formatted as (?:a list of tuples|a tuple), i\.e\.,? ")
            + r"\[\(x1?,\s*y1?\)[^\]]*\]"
            + _ws(r",? where (?:each|the) tuple contains the x and y coordinates of a point"
                  r"(?: satisfying the conditions above)?\.")
            + _COORD_SENTENCE),
        source="Where2Place point_questions.jsonl / RoboPoint PROMPT (points in [0, 1]); "
               "RefSpatial-Bench 'suffix' ([(x1, y1)] variant)",
    ),
    Directive(
        name="robopoint_box_list",
        pattern=re.compile(
            _ws(r"Your (?:final )?answer should be formatted as (?:a list of tuples|a tuple), i\.e\.,? ")
            + r"\[\(x1,\s*y1,\s*x2,\s*y2\)[^\]]*\]"
            + _ws(r",? where (?:each|the) tuple contains the [^.]*?(?:bounding box|bbox)[^.]*\.")
            + _COORD_SENTENCE),
        source="RoboPoint bbox_questions.jsonl style box variant ([(x1, y1, x2, y2), ...])",
    ),
)
"""The directive registry, applied in order."""


def _tidy(text: str) -> str:
    lines = [re.sub(r"[ \t]+", " ", ln).strip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln).strip()


def strip_directives(text: str) -> tuple[str, list[str]]:
    """Remove every answer-format directive of :data:`DIRECTIVES` from ``text``.

    Args:
        text: an instruction as the benchmark wrote it.

    Returns:
        ``(core, stripped)``: the instruction without directives (runs of spaces collapsed, blank
        lines dropped, ends trimmed) and the names of the patterns that fired, in registry order.
        Text with no directive comes back trimmed, with ``[]``.
    """
    core = text
    stripped: list[str] = []
    for d in DIRECTIVES:
        core, n = d.pattern.subn(" " if d.name != "image_placeholder" else "", core)
        if n:
            stripped.append(d.name)
    return _tidy(core), stripped


_FRAME_UNITS = {
    "percent": "in percent of the image width and height",
    "grid": "on a 0-{scale} grid of the image",
    "bins": "in {scale} bins of the image width and height",
    "bin_index": "in {scale} bins of the image width and height",
    "patch_grid": "in patches of the image",
    "unit": "as fractions (0-1) of the image width and height",
    "pixels_original": "in pixels of the image",
    "pixels_resized": "in pixels of the image",
}
"""How a frame's numbers are described to the model (``frames.Frame.kind`` -> phrase)."""


def reference_point_in_frame(family: Any, sample: Sample) -> str | None:
    """A Point-Bench steerable row's existing reference point in ``family``'s own coordinate frame, as
    ``"(x, y) <unit phrase>"``, or ``None`` when the row has no loaded reference point.

    The reference point is not drawn in the image (PointArena's evaluator tells the model where it is
    in text), so a model must be told where it is in the same frame it answers in: a percent-frame
    model (Molmo) given original-image pixels would read them as percent, and a resized-input model
    (Qwen2.5-VL) answers in pixels of the image its processor produced. The point is converted from the
    loader's original-image pixels (``metadata["reference_point_x_px"/"_y_px"]``) to the unit square
    and then to the family's frame with the family's own rounding (``Family._frame_values``);
    resized-input families use ``family.expected_model_input_size(image_size)`` (the processor's
    ``smart_resize``). The unit phrase comes from :data:`_FRAME_UNITS`. Worked case: (5, 5) px of a
    20x10 image is (0.25, 0.5), i.e. ``(25.0, 50.0) in percent of the image width and height`` for
    Molmo and ``(250, 500) on a 0-1000 grid of the image`` for InternVL3.
    """
    md = sample.metadata
    if md.get("reference_point") != "loaded":
        return None
    x, y = md.get("reference_point_x_px"), md.get("reference_point_y_px")
    w, h = sample.image.width, sample.image.height
    if x is None or y is None or not w or not h:
        return None
    xn, yn = float(x) / w, float(y) / h
    frame = family.frame
    model_size = family.expected_model_input_size((w, h)) if frame.kind == "pixels_resized" else None
    fx, fy = family._frame_values(xn, yn, (w, h), model_size)
    unit = _FRAME_UNITS.get(frame.kind, "").format(scale=f"{frame.scale:g}" if frame.scale else "")
    if frame.order == "yx":
        return f"({fy}, {fx}) {unit}, y first"
    return f"({fx}, {fy}) {unit}".rstrip()


def _reference_note(family: Any, sample: Sample) -> str | None:
    point = reference_point_in_frame(family, sample)
    if point is None:
        return None
    return f"The query refers to an existing point that is not drawn in the image, at {point}."


def instruction_given(prompt: Prompt) -> str:
    """The instruction as the evaluated model was asked it, for the judge to quote: the core
    instruction (the benchmark's answer-format directives for other models stripped, the ``<image>``
    placeholder gone, a steerable row's reference point in the model's own frame), without the
    family's output-format template. ``Prompt.original`` is not what the model saw."""
    return prompt.core


def absent_possible(sample: Sample) -> bool:
    """Whether the model is told how to decline for ``sample``: ``metadata["absent_possible"]``, set on
    every row of a suite generated with absent referents, present or not (so a model learns how to
    decline in its own convention without learning which rows are absent)."""
    return bool(sample.metadata.get("absent_possible"))


def build_prompt(family: Any, sample: Sample) -> Prompt:
    """The prompt for one sample and one model family.

    Steps: strip directives from ``sample.instruction``; for RefSpatial also remove the sample's own
    ``metadata["directive_suffix"]`` verbatim if a registry pattern left it (named
    ``refspatial_suffix``); for Point-Bench steerable rows whose reference point was loaded, append a
    sentence giving it in the family's own frame (:func:`reference_point_in_frame`; PointArena's
    evaluator tells models where it is, because the point is not drawn in the image); then wrap the core in ``family.prompt(core, sample.task, absent_possible)``,
    with :func:`absent_possible`.

    Args:
        family: a ``pointfail.families.Family`` or its name (looked up with ``get_family``).
        sample: the loaded sample.

    Returns:
        :class:`Prompt` with ``original`` (the benchmark's text), ``core``, ``sent`` and ``stripped``.

    Raises:
        PromptError: nothing is left of the instruction after stripping.
        KeyError: ``family`` is an unknown family name.
    """
    if isinstance(family, str):
        from pointfail.families import get_family

        family = get_family(family)
    core, stripped = strip_directives(sample.instruction)
    suffix = str(sample.metadata.get("directive_suffix") or "").strip()
    if suffix and suffix in core:
        core = _tidy(core.replace(suffix, " "))
        stripped.append("refspatial_suffix")
    if not core:
        raise PromptError(f"{sample.benchmark}/{sample.sample_id}: instruction is empty after stripping "
                          f"directives {stripped}: {sample.instruction!r}")
    note = _reference_note(family, sample)
    if note:
        core = f"{core} {note}"
    if absent_possible(sample):
        sent = family.prompt(core, sample.task, absent_possible=True)
    else:
        sent = family.prompt(core, sample.task)
    return Prompt(original=sample.instruction, core=core, sent=sent, stripped=stripped)
