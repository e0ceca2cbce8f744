"""Rows: the few fields of one record that the tables read.

A :class:`Row` is made from each :class:`~pointfail.records.Record` as it is read and handed to every
fold (:mod:`pointfail.aggregate.counting` and the table builders), then dropped: no stage keeps all
the records of a study in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from pointfail.records import Record
from pointfail.scoring import primary_point

__all__ = ["POOLED", "Row", "meta_value", "row_from_record"]

POOLED = "pooled"
"""Benchmark column value of pooled rows (raw counts summed over benchmarks). Reserved: a benchmark
with this name is an error (:class:`pointfail.aggregate.study.AggregateError`)."""


@dataclass(frozen=True, slots=True)
class Row:
    """The fields of one :class:`~pointfail.records.Record` the tables use.

    ``point`` is the primary point (:func:`pointfail.scoring.primary_point`: the first point, else the
    first box's centre), normalized ``(x, y)`` in the unit square; distances are in
    pixels of the original image (``distance_px``) and image diagonals (``distance_norm``);
    ``area_px`` is the target's area in pixels. ``judge_status`` is set for misses only (``pending``
    when no primary judgment exists); ``label`` is the primary judge's failure mode of a labeled miss.
    ``metadata`` holds the record's scalar metadata as canonical strings, sorted by key, and
    ``numeric_keys`` the keys whose value was a number. ``other`` lists ``(judge, status, label)`` of
    further judges of a miss, sorted. ``cluster`` is the bootstrap cluster: the image's sha256, or its
    path when no hash is recorded. ``declined``: the parser read an explicit decline in the family's
    convention (``ParseResult.reason == "declined"``, :mod:`pointfail.families._decline`).
    ``official_rule``/``official_score``/``official_own_score``: the record's ``OfficialScore`` (rule,
    score, and what pointfail's own reading scores where the official parser read the reply otherwise);
    ``official_note``: its note (why the row is scored as it is: a missing answer, no point).
    """

    model: str
    benchmark: str
    sample_id: str
    outcome: str
    task: str
    cluster: str
    judge_status: Optional[str]
    label: Optional[str]
    distance_px: Optional[float]
    distance_norm: Optional[float]
    point: Optional[tuple[float, float]]
    has_box: bool
    box_class: Optional[str]
    iou: Optional[float]
    area_px: Optional[float]
    target_absent: bool
    metadata: tuple[tuple[str, str], ...]
    numeric_keys: frozenset[str]
    official_rule: Optional[str]
    official_score: Optional[float]
    other: tuple[tuple[str, str, Optional[str]], ...] = field(default=())
    declined: bool = False
    official_own_score: Optional[float] = None
    official_note: Optional[str] = None

    @property
    def point_answer_to_box_task(self) -> bool:
        """A box task answered with points and no box: by the answer-form rule
        (:data:`pointfail.aggregate.registry.ANSWER_FORM_NOTE`) an answered, wrong box."""
        return self.task == "box" and not self.has_box and self.point is not None


def meta_value(v: Any) -> Optional[str]:
    """A scalar metadata value as its canonical string (``true``/``false``, the string itself,
    ``str`` of an int, ``repr`` of a float), ``None`` for a list, a dict or ``None``.

    >>> meta_value(True), meta_value(3), meta_value(0.5), meta_value("en"), meta_value([1])
    ('true', '3', '0.5', 'en', None)
    """
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return None


_NO_KEYS: frozenset[str] = frozenset()


def row_from_record(r: Record) -> Row:
    """Reduce a :class:`~pointfail.records.Record` to a :class:`Row`."""
    outcome = r.outcome
    miss = outcome == "miss"
    judge = r.judge if miss else None
    status = label = None
    if miss:
        status = judge.status if judge is not None else "pending"
        if status == "labeled":
            label = judge.label  # type: ignore[union-attr]
    parse = r.parse
    pp = primary_point(parse)
    point = (pp[0], pp[1]) if pp is not None else None
    has_box = parse is not None and bool(parse.boxes)
    g = r.geometry
    box = g.box
    meta: list[tuple[str, str]] = []
    numeric: Optional[list[str]] = None
    md = r.metadata
    for k in sorted(md):
        v = md[k]
        if type(v) is str:  # the common case, first: meta_value would return it unchanged
            meta.append((k, v))
            continue
        sv = meta_value(v)
        if sv is not None:
            meta.append((k, sv))
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                numeric = [k] if numeric is None else numeric + [k]
    other = tuple(sorted((j.judge, j.status, j.label) for j in r.other_judgments)) if miss and r.other_judgments else ()
    official = r.official
    target = r.target
    return Row(
        model=r.model,
        benchmark=r.benchmark,
        sample_id=r.sample_id,
        outcome=outcome,
        task=r.task,
        cluster=r.image.sha256 or r.image.path,
        judge_status=status,
        label=label,
        distance_px=g.distance_px,
        distance_norm=g.distance_norm,
        point=point,
        has_box=has_box,
        box_class=(box.box_class if box is not None else ("malformed" if r.task == "box" else None)),
        iou=box.iou if box is not None else None,
        area_px=target.area_px,
        target_absent=target.kind == "absent",
        metadata=tuple(meta),
        numeric_keys=frozenset(numeric) if numeric else _NO_KEYS,
        official_rule=official.rule if official is not None else None,
        official_score=official.score if official is not None else None,
        other=other,
        declined=parse is not None and parse.reason == "declined",
        official_own_score=official.own_score if official is not None else None,
        official_note=official.note if official is not None else None,
    )
