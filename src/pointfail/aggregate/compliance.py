"""``frame_compliance``: per model and benchmark, the official score beside the score under each
other reading of the same numbers (:mod:`pointfail.compliance`). Diagnostic, never used for ranking."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.registry import TableBuilder, register
from pointfail.compliance import READINGS, ComplianceCounts
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study
    from pointfail.records import Record

__all__ = ["FrameCompliance"]


@register
class FrameCompliance(TableBuilder):
    """``frame_compliance`` (point tasks; no file when the study has none)."""

    name = "frame_compliance"

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], ComplianceCounts] = {}

    def observe(self, record: "Record") -> None:
        """Fold one record into its (model, benchmark) cell."""
        key = (record.model, record.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = ComplianceCounts()
        c.add(record)

    def tables(self, study: "Study") -> list[Output]:
        """The diagnostic table."""
        cells = with_pooled(self._cells, ComplianceCounts)
        columns = [text("model"), text("benchmark"), text("declared_frame"), count("n"), count("official_hits"),
                   pct("official_pct"), *[pct(f"{r}_pct") for r in READINGS], count("not_computed")]
        rows = []
        for key in study.counts.keys():
            c = cells.get(key)
            if c is None or not c.n:
                continue
            r = c.result()
            rows.append([*key, r["declared_frame"] or "", r["n"], r["official"], rate(r["official"], r["n"]),
                         *[None if r["readings"][x] is None else rate(r["readings"][x], r["n"]) for x in READINGS],
                         r["not_computed"]])
        if not rows:
            return []
        notes = [
            "DIAGNOSTIC, NOT USED FOR RANKING (as the PointerBench paper reports frame compliance): the official "
            "score is the hit rate in the family's declared frame; each other column re-reads the same numbers "
            "another way (unit 0-1, percent 0-100, grid 0-1000, pixels of the original image, pixels of the "
            "recorded model input) and says how many would have hit. n/a: the reading is the declared one, or "
            "does not apply (token frames: PaliGemma, Florence-2, Kosmos-2), or no model-input size was recorded.",
            "Point tasks with a present referent only; n includes infrastructure errors (non-hits under every "
            "reading); not_computed: targets that could not be rebuilt (an unreadable mask).",
        ]
        return [Table("frame_compliance", f"Coordinate-frame compliance (diagnostic): {study.name}", notes, columns, rows)]
