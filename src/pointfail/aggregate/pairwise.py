"""``pairwise``: exact McNemar test and point agreement for every pair of models.

Samples are matched across models by their index in the benchmark's
:class:`~pointfail.aggregate.counting.SampleTable`; hits come from the per-sample outcome codes of
:class:`~pointfail.aggregate.counting.Counts`, and this fold keeps only each model's primary point
per sample (two floats), not the records.
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Optional

from pointfail import metrics
from pointfail.aggregate.registry import TableBuilder, register
from pointfail.aggregate.rows import POOLED, Row
from pointfail.tables import Output, Table, count, decimal, p_value, text

if TYPE_CHECKING:
    import numpy as np

    from pointfail.aggregate.study import Study

__all__ = ["Pairwise"]

_HIT, _ERROR = 1, 4


@register
class Pairwise(TableBuilder):
    """``pairwise``: per benchmark and pooled, for each pair of models (sorted), the 2x2 hit counts
    on the samples both were scored on (an infrastructure error on either side drops the sample),
    the exact McNemar p-value (:func:`pointfail.metrics.mcnemar`) and the mean and median distance
    between their primary points (:func:`pointfail.metrics.agreement`); no file with fewer than two
    models."""

    name = "pairwise"

    def __init__(self) -> None:
        self._points: dict[tuple[str, str], tuple[array[float], array[float]]] = {}

    def add(self, row: Row, sample: int) -> None:
        """Keep a row's primary point (NaN where it has none) at its sample index."""
        if row.point is None:
            return
        key = (row.model, row.benchmark)
        xy = self._points.get(key)
        if xy is None:
            xy = self._points[key] = (array("d"), array("d"))
        xs, ys = xy
        if sample >= len(xs):
            pad = [math.nan] * (sample + 1 - len(xs))
            xs.extend(pad)
            ys.extend(pad)
        xs[sample], ys[sample] = row.point

    def _paired(self, study: "Study", a: str, b: str, bench: str) -> tuple[list[bool], list[bool], list, list]:
        """Hits and primary points (``None`` where none) of two models on the samples of one
        benchmark both were scored on."""
        import numpy as np

        counts = study.counts
        if (a, bench) not in counts.cells or (b, bench) not in counts.cells:
            return [], [], [], []
        ca = np.frombuffer(counts.scored(a, bench), dtype=np.uint8)
        cb = np.frombuffer(counts.scored(b, bench), dtype=np.uint8)
        both = (ca >= 1) & (ca != _ERROR) & (cb >= 1) & (cb != _ERROR)
        return ((ca[both] == _HIT).tolist(), (cb[both] == _HIT).tolist(),
                self._points_at((a, bench), both), self._points_at((b, bench), both))

    def _points_at(self, key: tuple[str, str], mask: "np.ndarray") -> list[Optional[tuple[float, float]]]:
        import numpy as np

        n = len(mask)
        xy = self._points.get(key, (array("d"), array("d")))
        xs, ys = np.full(n, np.nan), np.full(n, np.nan)
        xs[: len(xy[0])] = np.frombuffer(xy[0], dtype=np.float64)
        ys[: len(xy[1])] = np.frombuffer(xy[1], dtype=np.float64)
        return [None if x != x else (x, y) for x, y in zip(xs[mask].tolist(), ys[mask].tolist())]

    def tables(self, study: "Study") -> list[Output]:
        """The pairwise table."""
        models = study.counts.models
        if len(models) < 2:
            return []
        columns = [text("benchmark"), text("model_a"), text("model_b"), count("n_paired"), count("both_hit"),
                   count("a_only"), count("b_only"), count("neither"), p_value("mcnemar_p"), count("n_both_point"),
                   decimal("mean_point_distance", 4), decimal("median_point_distance", 4)]
        rows = []
        for i, a in enumerate(models):
            for bm in models[i + 1:]:
                pooled: tuple[list, list, list, list] = ([], [], [], [])
                for bench in study.counts.benchmarks:
                    paired = self._paired(study, a, bm, bench)
                    if not paired[0]:
                        continue
                    for acc, part in zip(pooled, paired):
                        acc.extend(part)
                    rows.append(self._row(bench, a, bm, *paired))
                if pooled[0]:
                    rows.append(self._row(POOLED, a, bm, *pooled))
        rows.sort(key=lambda r: (r[0] == POOLED, r[0], r[1], r[2]))
        notes = [
            "Paired comparison on the samples both models were scored on (errors on either side excluded): exact McNemar "
            "test, two-sided p = min(1, 2 P(X <= min(a_only, b_only))), X ~ Binomial(a_only + b_only, 1/2) "
            "(= scipy.stats.binomtest(a_only, a_only + b_only, 0.5).pvalue), exact, printed to 4 significant digits.",
            "Point agreement (grounding-metrics document): mean and median Euclidean distance between the two models' "
            "primary points in normalized image units (0 = same point), over samples where both gave a point.",
        ]
        return [Table("pairwise", f"Paired comparisons: {study.name}", notes, columns, rows)]

    @staticmethod
    def _row(bench: str, a: str, b: str, ha: list[bool], hb: list[bool], pa: list, pb: list) -> list[object]:
        mc = metrics.mcnemar(ha, hb)
        ag = metrics.agreement(pa, pb)
        return [bench, a, b, mc["n"], mc["both"], mc["a_only"], mc["b_only"], mc["neither"], mc["p_value"],
                ag["n_pairs"], ag["mean_distance"], ag["median_distance"]]
