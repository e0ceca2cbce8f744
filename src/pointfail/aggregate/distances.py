"""Tables of distances: grounding-metrics pointing accuracy (``pointing``) and the tolerance curve
(``tolerance``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pointfail import metrics
from pointfail.aggregate.registry import ERROR_NOTE, TableBuilder, register
from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.rows import Row
from pointfail.tables import Output, Table, count, decimal, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["TOLERANCE_MD_COLUMNS", "Pointing", "Tolerance"]

TOLERANCE_MD_COLUMNS = (0, 1, 2, 5, 10, 20, 30, 50)
"""Tolerances (px) shown in ``tolerance.md``; ``tolerance.csv`` holds every t = 0..50."""

_IN_REGION = {"hit": True, "miss": False}


class _ErrorCount:
    """Infrastructure errors of a cell (a fold for :func:`with_pooled`)."""

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def merge(self, other: "_ErrorCount") -> None:
        self.n += other.n


@register
class Pointing(TableBuilder):
    """``pointing``: grounding-metrics ``pointing_accuracy`` over point tasks, mean miss distance in
    image diagonals and in pixels (folds of :class:`pointfail.metrics.PointingCounts`, pooled by merging)."""

    name = "pointing"

    def __init__(self) -> None:
        self._norm: dict[tuple[str, str], metrics.PointingCounts] = {}
        self._px: dict[tuple[str, str], metrics.PointingCounts] = {}
        self._errors: dict[tuple[str, str], _ErrorCount] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a point-task row into its cell; an infrastructure error is in n (the note's
        denominator), counted in ``n_error``, never a hit."""
        if row.task != "point":
            return
        key = (row.model, row.benchmark)
        f = self._norm.get(key)
        if f is None:
            f = self._norm[key] = metrics.PointingCounts()
            self._px[key] = metrics.PointingCounts()
            self._errors[key] = _ErrorCount()
        if row.outcome == "error":
            self._errors[key].n += 1
            return
        in_region = _IN_REGION.get(row.outcome)
        f.add(in_region, row.distance_norm)
        self._px[key].add(in_region, row.distance_px)

    def tables(self, study: "Study") -> list[Output]:
        """The pointing table, none when no cell has a scored point task."""
        columns = [text("model"), text("benchmark"), count("n"), count("n_hits"), pct("point_in_region_pct"),
                   count("n_misses"), count("n_no_point"), count("n_error"), decimal("mean_miss_distance_norm", 4),
                   decimal("mean_miss_distance_px", 1)]
        rows = []
        norm = with_pooled(self._norm, metrics.PointingCounts)
        pixels = with_pooled(self._px, metrics.PointingCounts)
        errors = with_pooled(self._errors, _ErrorCount)
        for key in study.counts.keys():
            if key not in norm:
                continue
            pa, px = norm[key].result(), pixels[key].result()
            n = pa["n"] + errors[key].n
            rows.append([*key, n, pa["n_hits"], rate(pa["n_hits"], n), pa["n_misses"], pa["n_no_point"],
                         errors[key].n, pa["mean_miss_distance"], px["mean_miss_distance"]])
        if not rows:
            return []
        notes = [
            "Grounding-metrics `pointing_accuracy` over point tasks: point_in_region = n_hits / n (a sample with no "
            "point is not in the region; n = n_hits + n_misses + n_no_point + n_error).",
            "mean_miss_distance is over misses only (distance from the primary point to the nearest target pixel), "
            "in image diagonals (`_norm`) and in pixels of the original image (`_px`).",
            ERROR_NOTE,
        ]
        return [Table("pointing", f"Pointing accuracy: {study.name}", notes, columns, rows)]


@register
class Tolerance(TableBuilder):
    """``tolerance``: hit rate if a point within t px counted, t = 0..50 (from
    :meth:`pointfail.aggregate.counting.Counts.tolerance_table`)."""

    name = "tolerance"

    def tables(self, study: "Study") -> list[Output]:
        """The tolerance table: every t in the CSV, :data:`TOLERANCE_MD_COLUMNS` in the Markdown."""
        columns = [text("model"), text("benchmark"), count("t_px"), count("hits_within_t"), count("n"), pct("rate_pct")]
        tab = list(study.counts.tolerance_table())
        rows = [[m, b, t, h, n, rate(h, n)] for m, b, t, h, n in tab]
        by = {(m, b, t): rate(h, n) for m, b, t, h, n in tab}
        md_rows = [[m, b] + [columns[-1].format(by[(m, b, t)]) for t in TOLERANCE_MD_COLUMNS] for m, b in study.counts.keys()]
        notes = [
            "Hit rate (%) if a point within t pixels (of the original image) of the target counted as a hit: "
            "hits plus point-task misses with recorded distance_px <= t (t >= 1), over n; no_prediction and errors "
            "never count. Box tasks are scored by their own rule (the PointerBench box rule) at every t: a box-task "
            "miss never becomes a hit by distance. So t=0 is the headline hit rate, cell for cell.",
            "tolerance.csv holds every t = 0..50.",
            ERROR_NOTE,
        ]
        md = [(None, ["model", "benchmark", *[f"t={t}" for t in TOLERANCE_MD_COLUMNS]], md_rows)]
        return [Table("tolerance", f"Tolerance curve: {study.name}", notes, columns, rows, md_sections=md)]
