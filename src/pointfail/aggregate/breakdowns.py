"""``breakdowns``: hit rate by every metadata axis of each benchmark and by target-area quartile.

Axes (per benchmark): scalar metadata keys with at least two distinct values; not a near-identifier (a
key with more distinct values than half the benchmark's samples, when there are more than four: most
of its values would be one sample each, e.g. a suite's ``target_id``; such axes are named in the
table's notes as left out); numeric keys only with at most :data:`MAX_NUMERIC_LEVELS` distinct values. A row without the key counts under
``(none)``. Area quartiles: nearest-rank quartiles of the distinct samples' ``Target.area_px``
(:func:`area_quartiles`); rows without an area count under ``(no area)``.

The fold keeps, per benchmark, each distinct metadata signature and per model one small integer per
sample (its signature); the counts are made at the end from the per-sample outcome codes and target
areas of :class:`~pointfail.aggregate.counting.Counts`.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

from pointfail.aggregate.counting import OUTCOME_CODES, OutcomeCounts, SampleTable
from pointfail.aggregate.registry import ERROR_NOTE, TableBuilder, register
from pointfail.aggregate.rows import Row
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    import numpy as np

    from pointfail.aggregate.study import Study

__all__ = ["AREA_AXIS", "MAX_NUMERIC_LEVELS", "Breakdowns", "area_quartile", "area_quartiles", "area_thresholds", "sample_quartiles"]

MAX_NUMERIC_LEVELS = 20
"""A numeric metadata axis is broken down only when it has at most this many distinct values (a
level such as ``difficulty: 1..5``); continuous values (coordinates, sizes) are not categories."""

AREA_AXIS = "target_area_quartile"
NONE_VALUE = "(none)"
K = TypeVar("K")
NO_AREA = "(no area)"


def area_thresholds(areas: Iterable[float]) -> tuple[float, float, float]:
    """Nearest-rank quartile thresholds of areas (pixels): ``q_k = sorted_areas[ceil(k * N / 4) - 1]``
    for k = 1, 2, 3.

    >>> area_thresholds([5, 5, 5, 5, 9, 9, 100, 200])
    (5.0, 5.0, 9.0)

    Raises:
        ValueError: no areas.
    """
    s = sorted(float(a) for a in areas)
    if not s:
        raise ValueError("area quartiles of no samples")
    n = len(s)
    q1, q2, q3 = (s[-(-k * n // 4) - 1] for k in (1, 2, 3))
    return q1, q2, q3


def area_quartile(area: float, thresholds: tuple[float, float, float]) -> int:
    """The quartile (1..4) of an area: 1 when ``area <= q_1``, 2 when ``area <= q_2``, 3 when
    ``area <= q_3``, else 4 (tied areas share a quartile)."""
    q1, q2, q3 = thresholds
    return 1 if area <= q1 else 2 if area <= q2 else 3 if area <= q3 else 4


def area_quartiles(areas: Mapping[K, float]) -> tuple[dict[K, int], list[tuple[int, float, float]]]:
    """Assign each sample of one benchmark (``areas``: sample id → target area in pixels) to its
    :func:`area_quartile` under the :func:`area_thresholds` of all the samples.

    >>> assign, ranges = area_quartiles({"a": 10, "b": 20, "c": 30, "d": 40, "e": 40})
    >>> assign["a"], assign["e"], ranges  # N = 5: q1 = s[1] = 20, q2 = s[2] = 30, q3 = s[3] = 40
    (1, 3, [(1, 10.0, 20.0), (2, 30.0, 30.0), (3, 40.0, 40.0)])

    Returns:
        ``({sample_id: quartile}, [(quartile, min_area, max_area), ...])``, both empty for no samples.
    """
    if not areas:
        return {}, []
    th = area_thresholds(areas.values())
    assign = {sid: area_quartile(a, th) for sid, a in areas.items()}
    ranges = []
    for k in (1, 2, 3, 4):
        vals = [float(areas[sid]) for sid, qq in assign.items() if qq == k]
        if vals:
            ranges.append((k, min(vals), max(vals)))
    return assign, ranges


_Signature = tuple[tuple[tuple[str, str], ...], frozenset[str]]


def sample_quartiles(table: SampleTable) -> tuple[list[int], list[tuple[int, float, float]]]:
    """The target-area quartile of every sample of a benchmark (:func:`area_quartiles` over the
    samples that have an area), by sample index of ``table``: ``0`` for a sample without an area.

    Returns:
        ``([quartile per sample index], [(quartile, min_area, max_area), ...])``.
    """
    known = {i: a for i, a in enumerate(table.area) if not math.isnan(a)}
    assign, ranges = area_quartiles(known)
    return [assign.get(i, 0) for i in range(len(table.area))], ranges


class _Bench:
    """The breakdown fold of one benchmark: each distinct metadata *signature* (a row's scalar
    metadata pairs and which of them were numbers) gets an id, and per model each sample keeps the
    id of its row's signature. The counts per axis value are made at the end, from these ids and the
    per-sample outcome codes of :class:`~pointfail.aggregate.counting.Counts`; per row the fold costs
    one dictionary lookup."""

    __slots__ = ("sigs", "sig_of", "unique_left_out")

    def __init__(self) -> None:
        self.sigs: dict[_Signature, int] = {}
        self.sig_of: dict[str, array[int]] = {}
        self.unique_left_out: list[str] = []

    def add(self, r: Row, sample: int) -> None:
        key = (r.metadata, r.numeric_keys)
        sig = self.sigs.get(key)
        if sig is None:
            sig = self.sigs[key] = len(self.sigs) + 1
        col = self.sig_of.get(r.model)
        if col is None:
            col = self.sig_of[r.model] = array("i")
        if sample >= len(col):
            col.extend([0] * (sample + 1 - len(col)))
        col[sample] = sig

    def axes(self, n_samples: int) -> tuple[list[str], list[dict[str, str]]]:
        """The axes (module docstring rules) and each signature's metadata as a dict (index = id);
        the near-identifier keys left out are in :attr:`unique_left_out` afterwards."""
        metas: list[dict[str, str]] = [{}] * (len(self.sigs) + 1)
        values: dict[str, set[str]] = {}
        numeric: set[str] = set()
        for (meta, num), sig in self.sigs.items():
            metas[sig] = dict(meta)
            numeric |= num
            for k, v in meta:
                values.setdefault(k, set()).add(v)
        out = []
        self.unique_left_out = []
        for k in sorted(values):
            distinct = len(values[k])
            if distinct < 2:
                continue
            if n_samples > 4 and 2 * distinct > n_samples:
                self.unique_left_out.append(k)
                continue
            if k in numeric and distinct > MAX_NUMERIC_LEVELS:
                continue
            out.append(k)
        return out, metas


def _tally(codes: "np.ndarray", groups: "np.ndarray", n_groups: int) -> list[OutcomeCounts]:
    """Outcome counts per group index (0..n_groups-1) of the samples with a code."""
    import numpy as np

    per_code = {c: np.bincount(groups[codes == c], minlength=n_groups) for c in OUTCOME_CODES.values()}
    out = []
    for g in range(n_groups):
        oc = OutcomeCounts()
        oc.hit, oc.miss = int(per_code[1][g]), int(per_code[2][g])
        oc.no_prediction, oc.error = int(per_code[3][g]), int(per_code[4][g])
        out.append(oc)
    return out


@register
class Breakdowns(TableBuilder):
    """``breakdowns``: hit rate with (hit/n) per value of each axis, one Markdown section per
    benchmark and axis (rules in the module docstring)."""

    name = "breakdowns"

    def __init__(self) -> None:
        self._benches: dict[str, _Bench] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold one row into its benchmark's breakdown."""
        b = self._benches.get(row.benchmark)
        if b is None:
            b = self._benches[row.benchmark] = _Bench()
        b.add(row, sample)

    def _cells(self, study: "Study", b: str, models: list[str]) -> list[tuple[str, dict[tuple[str, str], OutcomeCounts]]]:
        """Per axis (sorted, the area quartile last), ``(value, model) → counts``: ``(none)`` for
        rows without the key, ``(no area)`` for samples without an area."""
        import numpy as np

        fold = self._benches[b]
        axes, metas = fold.axes(len(study.counts.samples[b]))
        quartile, ranges = sample_quartiles(study.counts.samples[b])
        label = {0: NO_AREA, **{k: f"Q{k} [{lo:.1f}, {hi:.1f}] px" for k, lo, hi in ranges}}
        area_label = [label[q] for q in quartile]
        names = sorted(set(area_label))
        area_group = np.array([names.index(v) for v in area_label], dtype=np.intp)
        per_axis: dict[str, dict[tuple[str, str], OutcomeCounts]] = {ax: {} for ax in axes}
        area_cells: dict[tuple[str, str], OutcomeCounts] = {}
        for m in models:
            codes = np.frombuffer(study.counts.scored(m, b), dtype=np.uint8)
            col = fold.sig_of.get(m, array("i"))
            sig = np.zeros(len(codes), dtype=np.intp)
            sig[: len(col)] = np.frombuffer(col, dtype=np.int32)
            by_sig = _tally(codes, sig, len(metas))
            for ax in axes:
                cells = per_axis[ax]
                for s_id, oc in enumerate(by_sig):
                    if oc.n or oc.error:
                        cells.setdefault((metas[s_id].get(ax, NONE_VALUE), m), OutcomeCounts()).merge(oc)
            if ranges:
                for g, oc in enumerate(_tally(codes, area_group, len(names))):
                    if oc.n or oc.error:
                        area_cells[(names[g], m)] = oc
        out = [(ax, per_axis[ax]) for ax in axes]
        if area_cells:
            out.append((AREA_AXIS, area_cells))
        return out

    def tables(self, study: "Study") -> list[Output]:
        """The breakdowns table."""
        counts = study.counts
        columns = [text("benchmark"), text("axis"), text("value"), text("model"), count("n"), count("hit"),
                   count("miss"), count("no_prediction"), count("error"), pct("hit_rate_pct")]
        rows: list[list[object]] = []
        sections = []
        left_out: list[str] = []
        for b in counts.benchmarks:
            models = [m for m in counts.models if (m, b) in counts.cells]
            per_axis = self._cells(study, b, models)
            if self._benches[b].unique_left_out:
                left_out.append(f"{b}: {', '.join(self._benches[b].unique_left_out)}")
            for ax, cells in per_axis:
                values = sorted({v for v, _ in cells})
                md_rows = []
                for v in values:
                    md = [v]
                    for m in models:
                        c = cells.get((v, m))
                        if c is None:
                            md.append("")
                            continue
                        r = rate(c.hit, c.n)
                        rows.append([b, ax, v, m, c.n, c.hit, c.miss, c.no_prediction, c.error, r])
                        md.append(f"{columns[-1].format(r)} ({c.hit}/{c.n})")
                    md_rows.append(md)
                sections.append((f"{b}: {ax}", [ax, *models], md_rows))
        notes = [
            "Hit rate (%) with (hit/n) per value of every metadata axis a benchmark carries (scalar axes with "
            "at least two values; near-identifiers, axes with more distinct values than half the samples, and "
            f"numeric axes with more than {MAX_NUMERIC_LEVELS} distinct values left out) and per quartile of target area.",
            "Left out as mostly unique: " + ("; ".join(left_out) if left_out else "none") + ".",
            "Area quartiles: nearest-rank quartiles of Target.area_px over the benchmark's distinct samples; "
            "tied areas share a quartile; [min, max] area of the quartile's samples in pixels.",
            ERROR_NOTE,
        ]
        return [Table("breakdowns", f"Breakdowns: {study.name}", notes, columns, rows, md_sections=sections)]
