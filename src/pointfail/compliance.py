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
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional

from pointfail.records import Record

__all__ = ["READINGS", "compliance_counts"]


READINGS: tuple[str, ...] = ("unit", "percent_100", "grid_1000", "pixels_original", "pixels_resized")
"""The readings reported, in column order (the names of ``scoring.COMPLIANCE_READINGS``)."""


def compliance_counts(records: Iterable[Record], base_dir: Optional[str | Path] = None) -> dict[str, Any]:
    """Sum the frame-compliance diagnostic over one model's records on one benchmark.

    Args:
        records: the records of one (model, benchmark) cell.
        base_dir: directory a relative mask path is resolved against (masks must be readable to
            re-score; a sample whose target cannot be built is counted in ``not_computed``).

    Returns:
        ``{"n", "official", "errors", "not_computed", "declared_frame", "readings": {name: hits | None}}``
        with integer counts.
    """
    from pointfail.geometry import GeometryError, TargetRegion
    from pointfail.scoring import frame_compliance

    n = official = errors = not_computed = 0
    hits: dict[str, Optional[int]] = {r: 0 for r in READINGS}
    applicable: dict[str, bool] = {r: False for r in READINGS}
    declared = None
    for rec in records:
        if rec.task != "point" or rec.target.kind == "absent":
            continue
        n += 1
        if rec.outcome == "error":
            errors += 1
            continue
        official += rec.outcome == "hit"
        size = (rec.image.width, rec.image.height)
        try:
            region = TargetRegion.from_target(rec.target, size, base_dir=base_dir)
            d = frame_compliance(rec.family, rec.response.raw_text or "", size, region,
                                 rec.response.model_input_size)
        except (GeometryError, OSError, ValueError, KeyError):
            not_computed += 1
            continue
        declared = d["declared_frame"]
        for r in d["readings"]:
            if r["declared"] or r["frame"] not in hits:
                continue
            applicable[r["frame"]] = True
            hits[r["frame"]] = (hits[r["frame"]] or 0) + bool(r["hit"])
    return {
        "n": n,
        "official": official,
        "errors": errors,
        "not_computed": not_computed,
        "declared_frame": declared,
        "readings": {r: (hits[r] if applicable[r] else None) for r in READINGS},
    }
