"""Counting: streaming folds from rows to per-cell counts.

A *cell* is one (model, benchmark) pair or one (model, ``pooled``) pair. :class:`Counts` folds rows one
at a time into per-cell :class:`Cell` counts, the image clusters of the bootstrap and the tolerance
curve; its memory grows with the number of cells and images, never with the number of records.

Counting rules (``shared/seeds/pointfail-study.txt``, "Computing the metrics"):

* ``n`` = hit + miss + no_prediction + error: every sample whose referent is present (the source
  study divides by all samples). A no_prediction counts against the hit rate exactly like a miss, and
  so does an infrastructure ``error`` (shown in ``Cell.error``; a model that crashes on its hardest
  inputs must not gain hit rate). Samples whose referent is absent never reach these counts: they
  are counted apart (the ``absent`` table).
* A point answer to a box task is a miss counted apart from the failure modes (``malformed_box``),
  never given one (the answer-form rule, :data:`pointfail.aggregate.registry.ANSWER_FORM_NOTE`).
* Pooled cells sum raw counts over benchmarks; no percentage is ever averaged.
* Failure modes count labeled misses; ``unlabeled`` (the judge abstained after five attempts),
  ``judge_unavailable`` (judge outage) and ``pending`` (not judged yet) are counted apart, never
  redistributed.
* Bootstrap 95% intervals resample images (clusters keyed by ``ImageRef.sha256``, or the image path
  when no hash is recorded); a pooled interval resamples each benchmark's images on its own and adds
  the replicates (a stratified bootstrap). Seeds derive from the study seed and the cell's names.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any, Optional, Protocol, TypeVar

from pointfail import metrics
from pointfail.aggregate.rows import POOLED, Row
from pointfail.records import FAILURE_MODES

__all__ = [
    "JUDGE_APART",
    "miss_segment",
    "OUTCOME_CODES",
    "Cell",
    "Counts",
    "DuplicateSample",
    "OutcomeCounts",
    "SampleTable",
    "cell_keys",
    "padded",
    "with_pooled",
]

JUDGE_APART = ("malformed_box", "unlabeled", "judge_unavailable", "pending")
"""Misses counted apart from the failure modes, in table order: point answers to box tasks (the
answer-form rule), then the judge statuses that give no label."""


class OutcomeCounts:
    """hit, miss, no_prediction and error counts of a group of rows (``n`` counts them all: an error
    is a non-hit).

    >>> c = OutcomeCounts()
    >>> for o in ("hit", "miss", "error", "no_prediction"):
    ...     c.add_outcome(o)
    >>> c.n, c.hit, c.error
    (4, 1, 1)
    """

    __slots__ = ("hit", "miss", "no_prediction", "error")

    def __init__(self) -> None:
        self.hit = self.miss = self.no_prediction = self.error = 0

    @property
    def n(self) -> int:
        """Every sample: hit + miss + no_prediction + error."""
        return self.hit + self.miss + self.no_prediction + self.error

    def add_outcome(self, outcome: str) -> None:
        """Count one outcome (``hit``, ``miss``, ``no_prediction`` or ``error``).

        Raises:
            ValueError: any other outcome.
        """
        if outcome == "hit":
            self.hit += 1
        elif outcome == "miss":
            self.miss += 1
        elif outcome == "no_prediction":
            self.no_prediction += 1
        elif outcome == "error":
            self.error += 1
        else:
            raise ValueError(f"unknown outcome {outcome!r}")

    def merge(self, o: "OutcomeCounts") -> None:
        """Add another group's counts."""
        self.hit += o.hit
        self.miss += o.miss
        self.no_prediction += o.no_prediction
        self.error += o.error


def miss_segment(r: Row) -> str:
    """Where a miss counts in the failure composition (and the failure profile's bars): its failure
    mode (:data:`~pointfail.records.FAILURE_MODES`) when the primary judge labeled it, else the
    :data:`JUDGE_APART` key: ``malformed_box`` for a point answer to a box task (whatever the judge
    said), the judge's status (``unlabeled``, ``judge_unavailable``), or ``pending``.

    The one rule: :class:`Cell` counts by it and the failure browser's list filters by it."""
    if r.point_answer_to_box_task:
        return "malformed_box"
    if r.judge_status == "labeled" and r.label in FAILURE_MODES:
        return r.label
    return r.judge_status if r.judge_status in JUDGE_APART else "pending"


class Cell(OutcomeCounts):
    """Counts for one cell: outcomes, failure modes of labeled misses (``modes``, in
    :data:`~pointfail.records.FAILURE_MODES` order) and misses counted apart (``apart``, in
    :data:`JUDGE_APART` order)."""

    __slots__ = ("modes", "apart")

    def __init__(self) -> None:
        super().__init__()
        self.modes: dict[str, int] = {m: 0 for m in FAILURE_MODES}
        self.apart: dict[str, int] = {k: 0 for k in JUDGE_APART}

    @property
    def labeled(self) -> int:
        """Misses with a failure-mode label from the primary judge."""
        return sum(self.modes.values())

    def add(self, r: Row) -> None:
        """Count one row."""
        self.add_outcome(r.outcome)
        if r.outcome == "miss":
            k = miss_segment(r)
            if k in self.modes:
                self.modes[k] += 1
            else:
                self.apart[k] += 1

    def merge(self, o: "OutcomeCounts") -> None:
        """Add another cell's counts."""
        super().merge(o)
        if isinstance(o, Cell):
            for k in self.modes:
                self.modes[k] += o.modes[k]
            for k in self.apart:
                self.apart[k] += o.apart[k]


def cell_keys(models: list[str], benchmarks_of: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(model, benchmark) keys in table order: models sorted, each model's benchmarks sorted, then
    its pooled row.

    >>> cell_keys(["a", "b"], {"a": ["x", "y"], "b": ["x"]})
    [('a', 'x'), ('a', 'y'), ('a', 'pooled'), ('b', 'x'), ('b', 'pooled')]
    """
    out: list[tuple[str, str]] = []
    for m in models:
        out.extend((m, b) for b in benchmarks_of[m])
        out.append((m, POOLED))
    return out


F = TypeVar("F", bound="Mergeable")


class Mergeable(Protocol):
    """A fold whose state can absorb another's (``merge``)."""

    def merge(self, other: Any) -> None:
        """Add ``other``'s state to this one."""


def with_pooled(folds: dict[tuple[str, str], F], new: Callable[[], F]) -> dict[tuple[str, str], F]:
    """Per-cell folds plus, per model, a pooled fold: a fresh ``new()`` merged with each of the
    model's benchmark folds in sorted benchmark order (pooled rows pool samples, never rates).

    >>> from pointfail.metrics import ExactSum
    >>> a, b = ExactSum(), ExactSum()
    >>> a.add(1.0); b.add(0.5)
    >>> with_pooled({("m", "x"): a, ("m", "y"): b}, ExactSum)[("m", "pooled")].value()
    Fraction(3, 2)
    """
    out = dict(folds)
    for m, b in sorted(folds):
        p = out.get((m, POOLED))
        if p is None:
            p = out[(m, POOLED)] = new()
        p.merge(folds[(m, b)])
    return out


OUTCOME_CODES: dict[str, int] = {"hit": 1, "miss": 2, "no_prediction": 3, "error": 4}
"""Per-sample outcome codes of :attr:`Counts.codes` (0: the model has no record of the sample)."""


class DuplicateSample(ValueError):
    """A (model, benchmark, sample_id) folded twice."""


class SampleTable:
    """The samples of one benchmark: a dense index per sample id (shared by every model), and per
    sample its image cluster (the bootstrap's resampling unit) and its target area (the first
    recorded; NaN when none is). Memory: one entry per sample and per image."""

    __slots__ = ("ids", "cluster", "cluster_ids", "cluster_names", "area")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.cluster = array("l")
        self.cluster_ids: dict[str, int] = {}
        self.cluster_names: list[str] = []
        self.area = array("d")

    def __len__(self) -> int:
        return len(self.ids)

    def index(self, r: Row) -> int:
        """The dense index of a row's sample (a new sample takes the next index and the row's
        image cluster and area)."""
        i = self.ids.get(r.sample_id)
        if i is None:
            i = self.ids[r.sample_id] = len(self.ids)
            c = self.cluster_ids.get(r.cluster)
            if c is None:
                c = self.cluster_ids[r.cluster] = len(self.cluster_names)
                self.cluster_names.append(r.cluster)
            self.cluster.append(c)
            self.area.append(math.nan if r.area_px is None else float(r.area_px))
        elif r.area_px is not None and math.isnan(self.area[i]):
            self.area[i] = float(r.area_px)
        return i


def padded(codes: bytearray, n: int) -> bytearray:
    """``codes`` extended with zeros to length ``n``."""
    return codes + bytes(n - len(codes)) if len(codes) < n else codes


class Counts:
    """The core fold every table reads: per-cell counts, bootstrap intervals and tolerance curves.

    Call :meth:`add` for each row, then :meth:`finish` once; after that ``models`` (sorted),
    ``benchmarks`` (sorted), ``benchmarks_of`` (each model's benchmarks, sorted), ``cells`` and
    ``ci`` (``(low, high)`` exact Fractions, ``None`` for a cell without scored samples) hold every
    (model, benchmark) and (model, ``pooled``) key.

    Memory: per cell a :class:`Cell` and a :class:`~pointfail.metrics.ToleranceCounts`; per
    benchmark a :class:`SampleTable`; per (model, benchmark) one byte per sample, the outcome code
    (:data:`OUTCOME_CODES`) that also rejects a sample folded twice and lets the paired and
    quantile tables match samples across models without keeping records.
    """

    def __init__(self, bootstrap_seed: int, bootstrap_resamples: int) -> None:
        self.bootstrap_seed = int(bootstrap_seed)
        self.bootstrap_resamples = int(bootstrap_resamples)
        self.cells: dict[tuple[str, str], Cell] = {}
        self.ci: dict[tuple[str, str], Optional[tuple[Fraction, Fraction]]] = {}
        self.tolerance: dict[tuple[str, str], metrics.ToleranceCounts] = {}
        self.samples: dict[str, SampleTable] = {}
        self.codes: dict[tuple[str, str], bytearray] = {}
        self.models: list[str] = []
        self.benchmarks: list[str] = []
        self.benchmarks_of: dict[str, list[str]] = {}
        self._finished = False

    def add(self, r: Row) -> int:
        """Fold one row into its (model, benchmark) cell. Returns the row's sample index in its
        benchmark's :class:`SampleTable`.

        Raises:
            DuplicateSample: the model already has a row for this sample.
        """
        key = (r.model, r.benchmark)
        c = self.cells.get(key)
        if c is None:
            c = self.cells[key] = Cell()
            self.codes[key] = bytearray()
            self.tolerance[key] = metrics.ToleranceCounts(metrics.TOLERANCES_PX[-1])
        table = self.samples.get(r.benchmark)
        if table is None:
            table = self.samples[r.benchmark] = SampleTable()
        i = table.index(r)
        codes = self.codes[key]
        if i >= len(codes):
            codes.extend(bytes(i + 1 - len(codes)))
        elif codes[i]:
            raise DuplicateSample(f"duplicate sample {r.sample_id!r} for model {r.model!r} on {r.benchmark!r}")
        codes[i] = OUTCOME_CODES[r.outcome]
        c.add(r)
        # box tasks are scored by the box rule at every tolerance (a distance never makes one a hit), so
        # at t = 0 the curve is the hit rate by construction; errors are non-hits at every t
        self.tolerance[key].add(r.outcome, r.distance_px if r.task == "point" else None)
        return i

    def scored(self, model: str, benchmark: str) -> bytearray:
        """The (model, benchmark) outcome codes, one per sample of the benchmark (0 where the model
        has no record)."""
        return padded(self.codes.get((model, benchmark), bytearray()), len(self.samples[benchmark]))

    def _clusters(self, model: str, benchmark: str) -> list[tuple[int, int]]:
        """``(hits, n)`` per image of the cell's samples (errors included, as non-hits), ordered by the
        cluster key."""
        import numpy as np

        table = self.samples[benchmark]
        codes = np.frombuffer(self.scored(model, benchmark), dtype=np.uint8)
        cl = np.frombuffer(table.cluster, dtype=f"i{table.cluster.itemsize}")
        scored = (codes >= 1) & (codes <= 4)
        k = len(table.cluster_names)
        n = np.bincount(cl[scored], minlength=k)
        h = np.bincount(cl[scored & (codes == 1)], minlength=k)
        order = sorted((i for i in range(k) if n[i]), key=table.cluster_names.__getitem__)
        return [(int(h[i]), int(n[i])) for i in order]

    def finish(self) -> None:
        """Add the pooled cells and compute the bootstrap intervals (once)."""
        if self._finished:
            return
        self._finished = True
        keys = list(self.cells)
        self.models = sorted({m for m, _ in keys})
        self.benchmarks = sorted({b for _, b in keys})
        self.benchmarks_of = {m: sorted(b for mm, b in keys if mm == m) for m in self.models}
        seed, resamples = self.bootstrap_seed, self.bootstrap_resamples
        for m in self.models:
            pooled = Cell()
            tol = metrics.ToleranceCounts(metrics.TOLERANCES_PX[-1])
            ph = pn = None
            for b in self.benchmarks_of[m]:
                pooled.merge(self.cells[(m, b)])
                tol.merge(self.tolerance[(m, b)])
                clusters = self._clusters(m, b)
                if clusters:
                    h, n = metrics.bootstrap_replicates(clusters, seed=metrics.derive_seed(seed, m, b), resamples=resamples)
                    self.ci[(m, b)] = metrics.percentile_interval(h, n)
                    ph = h if ph is None else ph + h
                    pn = n if pn is None else pn + n
                else:
                    self.ci[(m, b)] = None
            self.cells[(m, POOLED)] = pooled
            self.tolerance[(m, POOLED)] = tol
            self.ci[(m, POOLED)] = metrics.percentile_interval(ph, pn) if ph is not None else None

    def keys(self) -> list[tuple[str, str]]:
        """Every cell key in table order (:func:`cell_keys`)."""
        return cell_keys(self.models, self.benchmarks_of)

    def tolerance_table(self) -> Iterator[tuple[str, str, int, int, int]]:
        """``(model, benchmark, t, hits_within_t, n)`` for every cell in table order and
        t = 0..50 px (:func:`pointfail.metrics.tolerance_curve`'s rule)."""
        for m, b in self.keys():
            for t, h, n in self.tolerance[(m, b)].curve(metrics.TOLERANCES_PX):
                yield m, b, t, h, n
