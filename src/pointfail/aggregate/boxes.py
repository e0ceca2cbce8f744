"""Tables of box tasks and absent referents: PointerBench box outcome classes (``box_outcomes``), the
grounding-metrics IoU sweep (``grounding``) and absent referents (``absent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pointfail import metrics
from pointfail.aggregate.registry import ANSWER_FORM_NOTE, TableBuilder, register
from pointfail.aggregate.counting import cell_keys, with_pooled
from pointfail.aggregate.rows import Row
from pointfail.scoring import absence_count
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["BOX_CLASSES", "Absent", "BoxOutcomes"]

BOX_CLASSES = ("hit", "clipped", "oversized", "both", "malformed")
"""PointerBench box outcome classes, in table order."""

IOU_KEYS = ("0.25", "0.5", "0.75", "0.9")
"""The IoU sweep's thresholds as :func:`pointfail.metrics.grounding_accuracy` names them."""


class _BoxCell:
    __slots__ = ("rows", "errors", "declined", "classes", "grounding")

    def __init__(self) -> None:
        self.rows = self.errors = self.declined = 0
        self.classes = {k: 0 for k in BOX_CLASSES}
        self.grounding = metrics.GroundingCounts()

    def merge(self, other: "_BoxCell") -> None:
        self.rows += other.rows
        self.errors += other.errors
        self.declined += other.declined
        for k in BOX_CLASSES:
            self.classes[k] += other.classes[k]
        self.grounding.merge(other.grounding)


@register
class BoxOutcomes(TableBuilder):
    """``box_outcomes`` and ``grounding`` (box tasks with a present referent; no file when the study
    has none)."""

    name = "box_outcomes"

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], _BoxCell] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a box-task row into its cell. By the answer-form rule a point answer is an answered,
        wrong box (class ``malformed``, IoU 0: no IoU reaches any threshold); an infrastructure error
        is a non-hit in ``n`` like everywhere, with no box (its own column); only an explicit decline
        is ``missed_a_present_referent``."""
        if row.task != "box":
            return
        key = (row.model, row.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = _BoxCell()
        c.rows += 1
        if row.outcome == "error":
            c.errors += 1
        else:
            c.classes[row.box_class or "malformed"] += 1
        c.declined += row.declined
        c.grounding.add(row.iou or 0.0, prediction_absent=row.declined)

    def tables(self, study: "Study") -> list[Output]:
        """The two box tables."""
        if not self._cells:
            return []
        columns = [text("model"), text("benchmark"), count("n_box"), *[count(k) for k in BOX_CLASSES], count("error"),
                   *[pct(f"{k}_pct") for k in BOX_CLASSES]]
        g_columns = [text("model"), text("benchmark"), count("n_box"), count("n_scored"),
                     *[pct(f"iou>={t}_pct") for t in IOU_KEYS], count("missed_a_present_referent"), count("error")]
        rows, g_rows = [], []
        cells = with_pooled(self._cells, _BoxCell)
        for key in study.counts.keys():
            c = cells.get(key)
            if c is None:
                continue
            n = c.rows
            rows.append([*key, n, *[c.classes[k] for k in BOX_CLASSES], c.errors, *[rate(c.classes[k], n) for k in BOX_CLASSES]])
            ga = c.grounding.result()
            g_rows.append([*key, n, ga["n_scored"], *[ga["at"][t]["accuracy"] for t in IOU_KEYS],
                           ga["missed_a_present_referent"], c.errors])
        notes = [
            "PointerBench box outcome classes: hit (coverage >= 0.90 and precision >= 0.70), clipped (coverage too low), "
            "oversized (precision too low), both, malformed (no valid box, e.g. a point answer; a failure). % of n_box.",
            "n_box = every box-task sample whose referent is present: the five classes + error (infrastructure errors, "
            "non-hits with no class).",
            ANSWER_FORM_NOTE,
        ]
        g_notes = [
            "Grounding-metrics `grounding_accuracy` over box tasks: % of n_scored with IoU >= t, where n_scored = n_box "
            "minus the explicit declines (missed_a_present_referent: the model said the referent is not there, "
            "counted apart as the grounding-metrics document does, not an IoU).",
            "Every other answer is in n_scored: a box at its IoU; a point answer, a reply with no box, or an "
            "infrastructure error (also shown in `error`) at IoU 0. So the accuracy is 0, never n/a, when no box "
            "was given.",
            "Absent referents are counted apart in absent.md.",
            ANSWER_FORM_NOTE,
        ]
        return [
            Table("box_outcomes", f"Box outcomes: {study.name}", notes, columns, rows),
            Table("grounding", f"Grounding accuracy (IoU sweep): {study.name}", g_notes, g_columns, g_rows),
        ]


@register
class Absent(TableBuilder):
    """``absent``: samples whose referent is absent (targets of kind ``absent``), counted apart from
    every hit rate as the grounding-metrics document does, beside the explicit declines of present
    referents (``missed_a_present_referent``); no file when the study has neither."""

    name = "absent"
    absent_rows = True

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], _AbsentCell] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a row by :func:`pointfail.scoring.absence_count`."""
        kind = absence_count(row.target_absent, row.outcome, row.declined)
        if kind is None and not (row.target_absent and row.outcome == "error"):
            return
        key = (row.model, row.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = _AbsentCell()
        c.counts["error" if kind is None else kind] += 1

    def tables(self, study: "Study") -> list[Output]:
        """The absent-referents table."""
        if not self._cells:
            return []
        columns = [text("model"), text("benchmark"), count("n_absent"), *[count(k) for k in _ABSENT_KEYS[:3]],
                   count("error"), pct("correctly_declined_pct"), pct("hallucinated_pct"), count("missed_a_present_referent")]
        rows = []
        cells = with_pooled(self._cells, _AbsentCell)
        models = sorted({m for m, _ in self._cells})
        for key in cell_keys(models, {m: sorted(b for mm, b in self._cells if mm == m) for m in models}):
            k = cells[key].counts
            n = sum(k[x] for x in (*_ABSENT_KEYS[:3], "error"))
            rows.append([*key, n, *[k[x] for x in _ABSENT_KEYS[:3]], k["error"],
                         rate(k["correctly_declined"], n), rate(k["hallucinated_a_location"], n),
                         k["missed_a_present_referent"]])
        notes = [
            "Samples whose referent is absent from the image (the suite's scene graph proves it), counted apart from "
            "every hit rate as the grounding-metrics document does. n_absent = correctly_declined + "
            "hallucinated_a_location + no_location_no_decline + error.",
            "correctly_declined: the model declined in its family's convention (the prompt told it how); "
            "hallucinated_a_location: it gave a point or box anyway (the oracle labels it `hallucinated`); "
            "no_location_no_decline: no location and no readable decline (not credited as declining); "
            "error: infrastructure errors (non-answers, in n_absent). % are of n_absent.",
            "missed_a_present_referent: samples whose referent IS present but the model declined (they are also "
            "non-hits in the headline).",
        ]
        return [Table("absent", f"Absent referents: {study.name}", notes, columns, rows)]


_ABSENT_KEYS = ("correctly_declined", "hallucinated_a_location", "no_location_no_decline", "missed_a_present_referent")


class _AbsentCell:
    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts = {k: 0 for k in (*_ABSENT_KEYS, "error")}

    def merge(self, other: "_AbsentCell") -> None:
        for k in self.counts:
            self.counts[k] += other.counts[k]
