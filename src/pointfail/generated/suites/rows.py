"""One generated sample: its random stream, its category, how its target is named, and its metadata row.

Determinism: a sample's random stream is ``random.Random(f"{suite}:{seed}:{index}:{attempt}")``
(:func:`sample_rng`; string seeds are hashed with SHA-512 by :mod:`random`, independent of
``PYTHONHASHSEED``), and the category of every index is fixed in advance (:func:`category_schedule`).

A suite's categories are a dispatch table ``{category: writer}``: a writer takes the suite's view of
one rendered image (its layout, elements and random stream), draws a target of its category, words
the instruction and returns a :class:`Named` (instruction, the id of the one element it names,
answer type); it raises :class:`~pointfail.generated.suites.errors.SuiteError` when no target of its category
can be named uniquely in this layout (the index is then retried with the next attempt's stream).
Every instruction is resolved again against the scene with :func:`require_unique
<pointfail.generated.suites.scene.require_unique>` before it is kept.

Rows (``data/test/metadata.jsonl``): PointerBench's fields (``id``, ``file_name``, ``instruction``,
``bbox``, ``point``, ``answer_type``, ``eval``, ``image_size``) plus ``target_id`` and
``scene_graph`` and the suite's own fields (:func:`build_row`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from pointfail.geometry.boxrule import POINTERBENCH_MIN_COVERAGE, POINTERBENCH_MIN_PRECISION
from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.scene import IMAGE_SIZE, Scene, inside_image

__all__ = [
    "BOX_EVAL",
    "QUOTES",
    "Named",
    "SampleSpec",
    "build_row",
    "category_schedule",
    "choose_category",
    "quote",
    "reference_point",
    "row_eval",
    "sample_rng",
]

BOX_EVAL: dict[str, Any] = {"type": "iou", "min_coverage": POINTERBENCH_MIN_COVERAGE,
                            "min_precision": POINTERBENCH_MIN_PRECISION}
"""PointerBench's box rule for ``answer_type == "bbox"`` rows (coverage >= 0.90 and precision >= 0.70,
:mod:`pointfail.geometry.boxrule`), written into each row's ``eval`` with the box."""

QUOTES: tuple[tuple[str, str], ...] = (('"', '"'), ("'", "'"), ("`", "`"), ("«", "»"))
"""Quotation mark pairs an instruction may put around a quoted value (the real PointerBench rows
use all four)."""


def sample_rng(suite: str, seed: int, index: int, attempt: int = 0) -> random.Random:
    """The random stream for one sample attempt: ``random.Random("suite:seed:index:attempt")``.
    String seeds go through SHA-512 in :mod:`random` (seed version 2), so the stream is the same on
    every run and platform."""
    return random.Random(f"{suite}:{seed}:{index}:{attempt}")


def category_schedule(weights: dict[str, int], n: int, suite: str, seed: int) -> list[str]:
    """The category of each of ``n`` samples: quotas proportional to ``weights`` by the largest-
    remainder method (ties broken by category name), shuffled with ``random.Random(f"{suite}:{seed}:
    schedule")``. Fixing the category per index (rather than drawing it per attempt) keeps the
    suite's mix at the weights even though some categories need more layout attempts than others.

    Example: weights {"a": 3, "b": 1}, n = 6 -> quotas 4.5 and 1.5 -> floors 4 and 1, one left over,
    equal remainders, so "a" (first by name) gets it: 5 x "a", 1 x "b".
    """
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("weights must have a positive sum")
    names = sorted(weights)
    exact = {c: n * weights[c] / total for c in names}
    quota = {c: int(exact[c]) for c in names}
    left = n - sum(quota.values())
    for c in sorted(names, key=lambda c: (-(exact[c] - quota[c]), c))[:left]:
        quota[c] += 1
    out = [c for c in names for _ in range(quota[c])]
    random.Random(f"{suite}:{seed}:schedule").shuffle(out)
    return out


def quote(rng: random.Random, s: str) -> str:
    """``s`` between one pair of :data:`QUOTES` drawn with ``rng`` (one ``rng.choice`` call)."""
    a, b = rng.choice(QUOTES)
    return f"{a}{s}{b}"


def choose_category(rng: random.Random, weights: dict[str, tuple[str, int]], category: str | None) -> tuple[str, str]:
    """``(category, data_type)`` from a suite's ``{category: (data_type, weight)}`` table: ``category``
    itself when given, else one drawn with ``rng.choices`` over the categories sorted by name with
    their weights. Raises ``KeyError`` for a category not in ``weights``."""
    if category is None:
        cats = sorted(weights)
        category = rng.choices(cats, weights=[weights[c][1] for c in cats])[0]
    return category, weights[category][0]


@dataclass(frozen=True)
class Named:
    """What a category writer returns: the ``instruction``, ``target_id`` (the scene graph id of the
    one element the instruction names) and ``answer_type`` (``point`` or ``bbox``)."""

    instruction: str
    target_id: str
    answer_type: str = "point"


def reference_point(box: list[int]) -> list[int]:
    """Reference point of a box: integer centre ``[(x0 + x1) // 2, (y0 + y1) // 2]`` (PointerBench
    rows carry such a point beside the box).

    >>> reference_point([146, 324, 231, 330])
    [188, 327]
    """
    return [(box[0] + box[2]) // 2, (box[1] + box[3]) // 2]


def row_eval(answer_type: str, box: list[int]) -> dict[str, Any]:
    """A row's ``eval``: ``{"type": "point_in_bbox", "bbox": box}`` for ``answer_type`` ``point``, the
    :data:`BOX_EVAL` rule with the box for ``bbox`` (the exact shapes of PointerBench's own rows).

    >>> row_eval("bbox", [1, 2, 3, 4])
    {'type': 'iou', 'min_coverage': 0.9, 'min_precision': 0.7, 'bbox': [1, 2, 3, 4]}
    """
    if answer_type == "bbox":
        return dict(BOX_EVAL, bbox=box)
    return {"type": "point_in_bbox", "bbox": box}


@dataclass
class SampleSpec:
    """What a generator produced for one index: the scene plus the row fields.

    ``fields`` holds the suite-specific row fields (data_type, category, language, ...);
    ``target_id`` names the target element; ``answer_type`` is ``point`` or ``bbox``.
    """

    scene: Scene
    target_id: str
    instruction: str
    answer_type: str
    fields: dict[str, Any]


def build_row(sample_id: str, stem: str, spec: SampleSpec) -> dict[str, Any]:
    """One metadata row in PointerBench's format plus ``target_id`` and ``scene_graph``.

    The target box is the target element's box; ``point`` is its :func:`reference_point`; ``eval``
    is :func:`row_eval`.

    Raises:
        SuiteError: target id not in the scene, or its box outside the frame.
    """
    els = spec.scene.by_id()
    if spec.target_id not in els:
        raise SuiteError(f"{sample_id}: target {spec.target_id!r} is not a scene graph element")
    box = [int(v) for v in els[spec.target_id].box]
    if not inside_image(box):
        raise SuiteError(f"{sample_id}: target box {box} is outside the {IMAGE_SIZE} frame")
    if spec.answer_type not in ("point", "bbox"):
        raise SuiteError(f"{sample_id}: unknown answer_type {spec.answer_type!r}")
    row = {
        "id": sample_id,
        "file_name": f"{stem}.png",
        "instruction": spec.instruction,
        "bbox": box,
        "point": reference_point(box),
        "answer_type": spec.answer_type,
        "eval": row_eval(spec.answer_type, box),
        "image_size": list(IMAGE_SIZE),
        "target_id": spec.target_id,
        "scene_graph": f"scene_graphs/{stem}.json",
    }
    for k, v in spec.fields.items():
        if k in row:
            raise SuiteError(f"{sample_id}: generator field {k!r} would overwrite a row field")
        row[k] = v
    return row
