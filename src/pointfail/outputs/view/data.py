"""What the failure browser shows of each record: the list row (facets for filtering, the annotation
for the thumbnail) and the detail (the whole record plus what the sample page derives from it).

Facets (the sample list's filters), each from the record's own fields:

======================= =====================================================================================
``model``, ``benchmark``  ``Record.model``, ``Record.benchmark``
``outcome``              ``Record.outcome`` (``hit``, ``miss``, ``no_prediction``, ``error``)
``mode``                 the failure mode a labeled miss counts under in the failure composition (none for a
                         point answer to a box task: ``malformed_box``), else none
``judge``                the primary judge's status of a miss (``labeled``, ``unlabeled``,
                         ``judge_unavailable``, ``pending``: a miss without a judgment), none for other outcomes
``category``/``language``  ``Record.metadata["category"]`` / ``["language"]`` when the benchmark tags them
``quartile``             target-area quartile within the benchmark, by ``aggregate.area_quartiles`` (the
                         rule of the breakdowns table), 0 when the target has no area
``across``               the same sample (benchmark, sample id) under the other models: ``single`` (one
                         model only), ``agree`` (every model in the same bar segment), ``modes_differ``
                         (same outcomes, different failure modes or judge states), ``outcomes_differ``;
                         the list's "models disagree" is the last two
======================= =====================================================================================

The bar segment of a record (:func:`segment`) is the failure profile's: ``hit``, one of the four
failure modes, ``malformed_box``, ``unlabeled``, ``judge_unavailable``, ``pending``, ``no_prediction``, or ``error`` (not
in any bar). Its counts are the failure-composition table's, by the same function
(:func:`pointfail.aggregate.counting.miss_segment`).
"""

from __future__ import annotations

from typing import Any, Optional

from pointfail.records import Record

__all__ = ["ACROSS", "ACROSS_LABELS", "OUTCOME_ORDER", "JUDGE_STATES", "segment", "judge_state", "raw_spans", "annotation_json", "utf16_offsets"]

OUTCOME_ORDER: tuple[str, ...] = ("hit", "miss", "no_prediction", "error")
JUDGE_STATES: tuple[str, ...] = ("labeled", "unlabeled", "judge_unavailable", "pending")
ACROSS: tuple[str, ...] = ("single", "agree", "modes_differ", "outcomes_differ")
"""Values of the ``across`` facet, by index (names used in the list's URL)."""
ACROSS_LABELS: tuple[str, ...] = ("one model only", "models agree", "failure modes differ", "outcomes differ")
"""How the list shows each value of :data:`ACROSS`."""


def judge_state(rec: Record) -> Optional[str]:
    """The primary judge's status of a miss (``pending`` when the miss has no judgment yet), ``None``
    for a record that is not a miss (the judge only sees misses)."""
    if rec.outcome != "miss":
        return None
    return rec.judge.status if rec.judge is not None else "pending"


def segment(rec: Record) -> str:
    """The failure-profile segment of a record (module docstring): its outcome unless it is a miss,
    else where the failure-composition table counts the miss
    (:func:`pointfail.aggregate.counting.miss_segment`: a failure mode, ``malformed_box`` for a point
    answer to a box task, or the judge's status). A record whose referent is absent is in no bar (the
    tables count it apart, in ``absent``): its segment is ``absent``, never a failure mode, so the
    browser's failure-mode filter lists exactly what the failure-composition table counts."""
    if rec.target.kind == "absent":
        return "absent"
    if rec.outcome != "miss":  # hit, no_prediction, error (or an outcome a newer pointfail writes)
        return rec.outcome
    from pointfail.aggregate.counting import miss_segment
    from pointfail.aggregate.rows import row_from_record

    return miss_segment(row_from_record(rec))


def utf16_offsets(text: str, spans: list[tuple[int, int]]) -> list[list[int]]:
    """Convert ``[start, end)`` code-point offsets in ``text`` to UTF-16 code-unit offsets (what a
    JavaScript string indexes)."""
    out = []
    for s, e in spans:
        out.append([len(text[:s].encode("utf-16-le")) // 2, len(text[:e].encode("utf-16-le")) // 2])
    return out


def raw_spans(rec: Record) -> list[list[int]]:
    """Where in ``Record.response.raw_text`` the parser read coordinates: ``[[start, end], ...]`` in
    UTF-16 code units, reply order, from the family's own readers
    (:meth:`pointfail.families.Family.spans`). Empty when the family is unknown or nothing was read."""
    text = rec.response.raw_text
    if not text:
        return []
    try:
        from pointfail.families import get_family

        fam = get_family(rec.family)
    except KeyError:
        return []
    spans_of = getattr(fam, "spans", None)
    if spans_of is None:
        return []
    return utf16_offsets(text, spans_of(text))


def _r(v: float) -> float:
    return round(float(v), 2)


def annotation_json(rec: Record, tint: Optional[dict[str, Any]]) -> dict[str, Any]:
    """The annotation of a record for the page to draw over its image, in pixels of the original
    image, from :func:`pointfail.running.judges.render.annotation` (the judge's drawing rules) and the
    primary point of :func:`pointfail.scoring.primary_point`:

    ``{"w", "h", "t": tint (see ImageStore.tint), "m": [[x, y, radius, width, dot, index, primary,
    outside, "#rrggbb"], ...], "b": [[x0, y0, x1, y1], ...], "pb": index of the primary box}``."""
    from pointfail.running.judges.render import annotation
    from pointfail.scoring import primary_point

    w, h = rec.image.width, rec.image.height
    parse = rec.parse
    points = parse.points if parse is not None else []
    boxes = parse.boxes if parse is not None else []
    ann = annotation(points, boxes, (w, h), primary_point(parse))
    return {
        "w": w,
        "h": h,
        "t": tint,
        "m": [[_r(m.x), _r(m.y), m.radius, m.width, m.dot, m.index, int(m.primary), int(m.outside),
               "#{:02x}{:02x}{:02x}".format(*m.color)] for m in ann.markers],
        "b": [[_r(v) for v in b] for b in ann.boxes],
        "pb": ann.primary_box,
    }
