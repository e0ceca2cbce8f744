"""Per-model coordinate-frame compliance: the official score beside the score each other reading of
the same numbers would give. **Diagnostic, never used for ranking.**

The PointerBench paper reports frame compliance per model (its Table 13: the official score, in the
frame the prompt asked for, beside the score after converting 0-1000 replies to the requested
1024x768 frame, "not used for ranking"). :func:`pointfail.scoring.frame_compliance` does it for one
reply; :func:`compliance_counts` sums it over a model's records on a benchmark:

* ``n``: the benchmark's point-task samples with a present referent (errors included, counted as
  non-hits, as in the headline);
* ``official``: the hits under the family's declared frame (the scored outcome: ``hit``);
* for each reading of :data:`pointfail.scoring.COMPLIANCE_READINGS` (``unit``, ``percent_100``,
  ``grid_1000``, ``pixels_original``, ``pixels_resized``): the samples whose primary point, re-read
  that way, would have hit. ``None`` for a reading that is the declared frame itself, or that the
  family's frame makes inapplicable (token frames: PaliGemma, Florence-2, Kosmos-2 write token
  indices), or for ``pixels_resized`` when no sample recorded a model-input size.

Box tasks are left out (their score is the box rule, not a point lookup), and so are absent
referents (no reading can hit them); the table's notes say so.

The readings of each sample are computed once, when its record is made
(:func:`pointfail.scoring.frame_readings`, stored in ``Record.frame_compliance``); this fold only
counts them: it parses no reply and reads no mask. A record that should carry readings and does not
(one built by hand, not by ``build_record``) counts in ``not_computed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from pointfail.records import READING_FIELDS, Record

__all__ = ["READINGS", "ComplianceCounts", "compliance_counts"]


READINGS: tuple[str, ...] = READING_FIELDS
"""The readings reported, in column order (the names of ``scoring.COMPLIANCE_READINGS``, the fields
of :class:`pointfail.records.FrameReadings`)."""


class ComplianceCounts:
    """The fold behind :func:`compliance_counts`: add one record at a time, merge cells, read
    :meth:`result` at the end."""

    __slots__ = ("n", "official", "errors", "not_computed", "declared", "hits", "applicable")

    def __init__(self) -> None:
        self.n = self.official = self.errors = self.not_computed = 0
        self.declared: Optional[str] = None
        self.hits: dict[str, int] = dict.fromkeys(READINGS, 0)
        self.applicable: dict[str, bool] = dict.fromkeys(READINGS, False)

    def add(self, rec: Record) -> None:
        """Fold one record's stored readings (box tasks and absent referents are skipped)."""
        if rec.task != "point" or rec.target.kind == "absent":
            return
        self.n += 1
        if rec.outcome == "error":
            self.errors += 1
            return
        self.official += rec.outcome == "hit"
        fc = rec.frame_compliance
        if fc is None or fc.not_computed is not None:
            self.not_computed += 1
            return
        self.declared = fc.declared_frame
        hits, applicable = self.hits, self.applicable
        for r in READINGS:
            v = getattr(fc, r)
            if v is not None:
                applicable[r] = True
                hits[r] += v

    def merge(self, other: "ComplianceCounts") -> None:
        """Add another cell's counts (pooled rows)."""
        self.n += other.n
        self.official += other.official
        self.errors += other.errors
        self.not_computed += other.not_computed
        self.declared = self.declared or other.declared
        for r in READINGS:
            self.hits[r] += other.hits[r]
            self.applicable[r] = self.applicable[r] or other.applicable[r]

    def result(self) -> dict[str, Any]:
        """``{"n", "official", "errors", "not_computed", "declared_frame", "readings": {name: hits | None}}``."""
        return {
            "n": self.n,
            "official": self.official,
            "errors": self.errors,
            "not_computed": self.not_computed,
            "declared_frame": self.declared,
            "readings": {r: (self.hits[r] if self.applicable[r] else None) for r in READINGS},
        }


def compliance_counts(records: Iterable[Record]) -> dict[str, Any]:
    """Sum the frame-compliance diagnostic over one model's records on one benchmark, from the
    readings each record stores (``Record.frame_compliance``).

    Args:
        records: the records of one (model, benchmark) cell.

    Returns:
        ``{"n", "official", "errors", "not_computed", "declared_frame", "readings": {name: hits | None}}``
        with integer counts (:meth:`ComplianceCounts.result`).
    """
    acc = ComplianceCounts()
    for rec in records:
        acc.add(rec)
    return acc.result()
