"""Tables of box tasks and absent referents: PointerBench box outcome classes (``box_outcomes``), the
grounding-metrics IoU sweep (``grounding``) and absent referents (``absent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pointfail import metrics
from pointfail.aggregate.registry import TableBuilder, register
from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.rows import Row
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["BOX_CLASSES", "Absent", "BoxOutcomes"]

BOX_CLASSES = ("hit", "clipped", "oversized", "both", "malformed")
"""PointerBench box outcome classes, in table order."""

IOU_KEYS = ("0.25", "0.5", "0.75", "0.9")
"""The IoU sweep's thresholds as :func:`pointfail.metrics.grounding_accuracy` names them."""


class _BoxCell:
    __slots__ = ("rows", "classes", "grounding")

    def __init__(self) -> None:
        self.rows = 0
        self.classes = {k: 0 for k in BOX_CLASSES}
        self.grounding = metrics.GroundingCounts()

    def merge(self, other: "_BoxCell") -> None:
        self.rows += other.rows
        for k in BOX_CLASSES:
            self.classes[k] += other.classes[k]
        self.grounding.merge(other.grounding)


@register
class BoxOutcomes(TableBuilder):
    """``box_outcomes`` and ``grounding`` (box tasks only; no file when the study has none)."""

    name = "box_outcomes"

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], _BoxCell] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a box-task row into its cell."""
        if row.task != "box":
            return
        answered = row.outcome != "error"
        key = (row.model, row.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = _BoxCell()
        c.rows += 1
        if answered:
            c.classes[row.box_class or "malformed"] += 1
        c.grounding.add(row.iou, truth_absent=row.target_absent, prediction_absent=not row.has_box, answered=answered)

    def tables(self, study: "Study") -> list[Output]:
        """The two box tables."""
        if not self._cells:
            return []
        columns = [text("model"), text("benchmark"), count("n_box"), *[count(k) for k in BOX_CLASSES],
                   *[pct(f"{k}_pct") for k in BOX_CLASSES], count("error")]
        g_columns = [text("model"), text("benchmark"), count("n_scored"), *[pct(f"iou>={t}_pct") for t in IOU_KEYS],
                     count("correctly_declined"), count("hallucinated_a_location"), count("missed_a_present_referent"),
                     count("unanswered")]
        rows, g_rows = [], []
        cells = with_pooled(self._cells, _BoxCell)
        for key in study.counts.keys():
            c = cells.get(key)
            if c is None:
                continue
            n = sum(c.classes.values())
            rows.append([*key, n, *[c.classes[k] for k in BOX_CLASSES], *[rate(c.classes[k], n) for k in BOX_CLASSES], c.rows - n])
            ga = c.grounding.result()
            g_rows.append([*key, ga["n_scored"], *[ga["at"][t]["accuracy"] for t in IOU_KEYS],
                           *[ga[k] for k in ("correctly_declined", "hallucinated_a_location", "missed_a_present_referent", "unanswered")]])
        notes = [
            "PointerBench box outcome classes: hit (coverage >= 0.90 and precision >= 0.70), clipped (coverage too low), "
            "oversized (precision too low), both, malformed (no valid box; counted as a failure). % of n_box.",
            "error: infrastructure errors, excluded from n_box.",
        ]
        g_notes = [
            "Grounding-metrics `grounding_accuracy` over box tasks: % of located present referents (n_scored) with IoU >= t.",
            "Not IoUs, so counted apart: correctly_declined / hallucinated_a_location (referent absent), "
            "missed_a_present_referent (referent present, no box given). unanswered = infrastructure errors, excluded.",
        ]
        return [
            Table("box_outcomes", f"Box outcomes: {study.name}", notes, columns, rows),
            Table("grounding", f"Grounding accuracy (IoU sweep): {study.name}", g_notes, g_columns, g_rows),
        ]


@register
class Absent(TableBuilder):
    """``absent``: samples whose referent is absent (targets of kind ``absent``), counted apart as the
    grounding-metrics document does; no file when the study has none."""

    name = "absent"

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], metrics.GroundingCounts] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold an absent-referent row into its cell."""
        if not row.target_absent:
            return
        key = (row.model, row.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = metrics.GroundingCounts()
        c.add(None, truth_absent=True, prediction_absent=row.point is None and not row.has_box, answered=row.outcome != "error")

    def tables(self, study: "Study") -> list[Output]:
        """The absent-referents table."""
        if not self._cells:
            return []
        columns = [text("model"), text("benchmark"), count("n_absent"), count("correctly_declined"),
                   count("hallucinated_a_location"), pct("declined_pct"), count("unanswered")]
        rows = []
        cells = with_pooled(self._cells, metrics.GroundingCounts)
        for key in study.counts.keys():
            c = cells.get(key)
            if c is None:
                continue
            ga = c.result()
            n = ga["correctly_declined"] + ga["hallucinated_a_location"]
            rows.append([*key, n, ga["correctly_declined"], ga["hallucinated_a_location"], rate(ga["correctly_declined"], n), ga["unanswered"]])
        notes = [
            "Samples whose referent is absent from the image (Target.kind = absent), counted apart as the grounding-metrics "
            "document does: correctly_declined (no point or box given), hallucinated_a_location (a location given anyway).",
            "unanswered: infrastructure errors, excluded from n_absent.",
        ]
        return [Table("absent", f"Absent referents: {study.name}", notes, columns, rows)]
