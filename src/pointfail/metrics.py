"""Metrics computed from per-sample outcomes: pointing and grounding accuracy, absent referents,
agreement between two point sets, tolerance curves, bootstrap intervals and McNemar's exact test.

Everything here works on plain Python values (bools, floats, strings) and returns exact
:class:`fractions.Fraction` values for rates and means, so a caller can round once, at display time,
with an explicit format (``pointfail.tables.fmt_fraction``). Exact arithmetic also makes every
result independent of the order of the inputs (a float sum is not).

Sources:

* ``pointing_accuracy``, ``grounding_accuracy``, ``agreement``: the grounding-metrics document
  (``shared/seeds/grounding-metrics-doc.txt``): point-in-region rate, mean miss distance over the
  misses only, IoU sweep at 0.25 / 0.5 / 0.75 / 0.9, absent referents counted apart
  (correctly_declined, hallucinated_a_location, missed_a_present_referent; unanswered items excluded
  from the denominator), pointing agreement as mean and median normalized distance.
* ``tolerance_curve``, ``bootstrap_ci``, ``mcnemar``: issue 6 ("Beyond the study").

Import-light: numpy and scipy are imported inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Optional

IOU_THRESHOLDS: tuple[Fraction, ...] = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(9, 10))
"""The IoU sweep of the grounding-metrics document (0.25, 0.5, 0.75, 0.9), as exact fractions so
that ``iou >= threshold`` compares the recorded float against the exact decimal."""

TOLERANCES_PX: tuple[int, ...] = tuple(range(51))
"""Tolerance curve abscissa: t = 0, 1, ..., 50 pixels of the original image (issue 6)."""


class ExactSum:
    """A running exact sum of finite floats: a fold, one value at a time, in constant memory (the
    integer numerator over a power-of-two denominator grows with the values' exponents only).

    >>> acc = ExactSum()
    >>> for v in (0.5, 0.125, 3.0):
    ...     acc.add(v)
    >>> acc.value(), acc.count, acc.mean()
    (Fraction(29, 8), 3, Fraction(29, 24))

    The result is the exact rational sum of the binary floats, independent of their order
    (``0.1 + 0.2`` sums the two doubles exactly, not the decimals).
    """

    __slots__ = ("_num", "_shift", "count")

    def __init__(self) -> None:
        self._num = 0
        self._shift = 0
        self.count = 0

    def add(self, v: float) -> None:
        """Add one value.

        Raises:
            ValueError: on NaN or infinity.
        """
        if not math.isfinite(v):
            raise ValueError(f"non-finite value {v!r}")
        n, d = float(v).as_integer_ratio()  # d is a power of two
        shift = d.bit_length() - 1
        if shift > self._shift:
            self._num <<= shift - self._shift
            self._shift = shift
        self._num += n << (self._shift - shift)
        self.count += 1

    def extend(self, values: Iterable[float]) -> "ExactSum":
        """Add many values at once (one shift of the total, not one per value). Returns ``self``.

        Raises:
            ValueError: on NaN or infinity.
        """
        parts: list[tuple[int, int]] = []
        top = self._shift
        for v in values:
            if not math.isfinite(v):
                raise ValueError(f"non-finite value {v!r}")
            n, d = float(v).as_integer_ratio()  # d is a power of two
            shift = d.bit_length() - 1
            parts.append((n, shift))
            if shift > top:
                top = shift
        total = self._num << (top - self._shift)
        for n, shift in parts:
            total += n << (top - shift)
        self._num, self._shift = total, top
        self.count += len(parts)
        return self

    def merge(self, other: "ExactSum") -> None:
        """Add another running sum (exactly)."""
        if other._shift > self._shift:
            self._num <<= other._shift - self._shift
            self._shift = other._shift
        self._num += other._num << (self._shift - other._shift)
        self.count += other.count

    def value(self) -> Fraction:
        """The exact sum so far (0 for no values)."""
        return Fraction(self._num, 1 << self._shift)

    def mean(self) -> Optional[Fraction]:
        """The exact mean so far, ``None`` for no values."""
        return self.value() / self.count if self.count else None


def exact_sum(values: Iterable[float]) -> Fraction:
    """Exact sum of finite floats as a :class:`Fraction` (order-independent, no rounding).

    >>> exact_sum([0.5, 0.25, 1])
    Fraction(7, 4)

    Raises:
        ValueError: on NaN or infinity.
    """
    return ExactSum().extend(values).value()


def exact_mean(values: Sequence[float]) -> Optional[Fraction]:
    """Exact arithmetic mean of finite floats, ``None`` for an empty sequence."""
    if not values:
        return None
    return exact_sum(values) / len(values)


def exact_median(values: Sequence[float]) -> Optional[Fraction]:
    """Exact median (mean of the two middle values for an even count), ``None`` when empty."""
    if not values:
        return None
    s = sorted(values)
    k = len(s)
    if k % 2:
        return Fraction(s[k // 2])
    return (Fraction(s[k // 2 - 1]) + Fraction(s[k // 2])) / 2


def pointing_accuracy(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Point-in-region hit rate and mean miss distance (grounding-metrics document, "Pointing is not
    grounding with a small box").

    Args:
        items: one mapping per sample with ``in_region`` (``True`` hit, ``False`` a point outside the
            region, ``None`` no point was given) and ``distance`` (distance from the point to the
            region, in any unit the caller chooses, e.g. normalized image units; ``None`` when
            unknown).

    Returns:
        ``{"n", "n_hits", "n_misses", "n_no_point", "point_in_region", "mean_miss_distance",
        "n_miss_distances"}``. ``point_in_region = n_hits / n`` over all samples (a sample with no
        point is not in the region, as in the study's hit rate), a Fraction, ``None`` when ``n == 0``.
        ``mean_miss_distance`` is the exact mean over the misses only (points outside the region with
        a known distance): averaging over hits as well "would mostly measure how large the objects
        are, not how badly the model missed"; ``None`` when there are no such misses.
    """
    acc = PointingCounts()
    for it in items:
        acc.add(it.get("in_region"), it.get("distance"))
    return acc.result()


class PointingCounts:
    """The fold behind :func:`pointing_accuracy`: add one sample at a time, read the result at the end.

    >>> acc = PointingCounts()
    >>> acc.add(True, 0.0); acc.add(False, 0.25); acc.add(None, None)
    >>> r = acc.result()
    >>> r["point_in_region"], r["mean_miss_distance"]
    (Fraction(1, 3), Fraction(1, 4))
    """

    __slots__ = ("n", "hits", "misses", "no_point", "miss_distance")

    def __init__(self) -> None:
        self.n = self.hits = self.misses = self.no_point = 0
        self.miss_distance = ExactSum()

    def add(self, in_region: Optional[bool], distance: Optional[float]) -> None:
        """One sample: ``in_region`` ``True`` (hit), ``False`` (a point outside; ``distance`` from it
        to the region, ``None`` when unknown) or ``None`` (no point)."""
        self.n += 1
        if in_region is True:
            self.hits += 1
        elif in_region is False:
            self.misses += 1
            if distance is not None:
                self.miss_distance.add(float(distance))
        else:
            self.no_point += 1

    def merge(self, other: "PointingCounts") -> None:
        """Add another fold's samples."""
        self.n += other.n
        self.hits += other.hits
        self.misses += other.misses
        self.no_point += other.no_point
        self.miss_distance.merge(other.miss_distance)

    def result(self) -> dict[str, Any]:
        """The mapping :func:`pointing_accuracy` returns."""
        return {
            "n": self.n,
            "n_hits": self.hits,
            "n_misses": self.misses,
            "n_no_point": self.no_point,
            "point_in_region": Fraction(self.hits, self.n) if self.n else None,
            "mean_miss_distance": self.miss_distance.mean(),
            "n_miss_distances": self.miss_distance.count,
        }


def grounding_accuracy(
    items: Iterable[Mapping[str, Any]], thresholds: Sequence[Fraction | float] = IOU_THRESHOLDS
) -> dict[str, Any]:
    """Grounding accuracy of box/region predictions at several IoU thresholds, with absent
    referents counted apart (grounding-metrics document, "Grounding accuracy").

    Args:
        items: one mapping per expression with ``iou`` (float in [0, 1] or ``None``),
            ``truth_absent`` (the referent is not in the image), ``prediction_absent`` (the model
            gave no region), and optionally ``answered`` (default ``True``; ``False`` for an item
            with no ground-truth answer, or in pointfail for a sample never answered because of an
            infrastructure error).
        thresholds: IoU thresholds; a prediction counts at ``t`` when ``iou >= t`` (compared
            exactly).

    Returns:
        ``{"n_scored", "at": {threshold_str: {"hits", "accuracy"}}, "correctly_declined",
        "hallucinated_a_location", "missed_a_present_referent", "unanswered"}``. ``n_scored`` counts
        present referents that the model located (it has an IoU); the three absent-related counts
        are not IoUs and are reported apart rather than folded into the accuracy; ``unanswered``
        items are excluded from every denominator. ``accuracy`` is a Fraction or ``None``.
        Threshold keys are ``"0.25"``, ``"0.5"``, ``"0.75"``, ``"0.9"`` (``str(float(t))``).
    """
    acc = GroundingCounts(thresholds)
    for it in items:
        acc.add(it.get("iou"), truth_absent=bool(it.get("truth_absent")),
                prediction_absent=bool(it.get("prediction_absent")), answered=it.get("answered", True))
    return acc.result()


class GroundingCounts:
    """The fold behind :func:`grounding_accuracy`: add one expression at a time, read the result at
    the end (same arguments and result as the function).

    >>> acc = GroundingCounts()
    >>> acc.add(0.6); acc.add(0.3); acc.add(None, truth_absent=True, prediction_absent=True)
    >>> r = acc.result()
    >>> r["n_scored"], r["at"]["0.5"]["hits"], r["correctly_declined"]
    (2, 1, 1)
    """

    __slots__ = ("_ths", "_counts", "n_scored", "declined", "halluc", "missed", "unanswered")

    def __init__(self, thresholds: Sequence[Fraction | float] = IOU_THRESHOLDS) -> None:
        self._ths = [Fraction(t) if not isinstance(t, float) else Fraction(str(t)) for t in thresholds]
        self._counts = [0] * len(self._ths)
        self.n_scored = self.declined = self.halluc = self.missed = self.unanswered = 0

    def add(self, iou: Optional[float], *, truth_absent: bool = False, prediction_absent: bool = False,
            answered: bool = True) -> None:
        """One expression (see :func:`grounding_accuracy` for the meaning of each argument)."""
        if not answered:
            self.unanswered += 1
            return
        if truth_absent:
            if prediction_absent:
                self.declined += 1
            else:
                self.halluc += 1
            return
        if prediction_absent:
            self.missed += 1
            return
        self.n_scored += 1
        if iou is None:
            return
        fi = Fraction(float(iou))
        for k, t in enumerate(self._ths):
            if fi >= t:
                self._counts[k] += 1

    def merge(self, other: "GroundingCounts") -> None:
        """Add another fold's expressions (same thresholds)."""
        for k, c in enumerate(other._counts):
            self._counts[k] += c
        self.n_scored += other.n_scored
        self.declined += other.declined
        self.halluc += other.halluc
        self.missed += other.missed
        self.unanswered += other.unanswered

    def result(self) -> dict[str, Any]:
        """The mapping :func:`grounding_accuracy` returns."""
        n = self.n_scored
        at = {
            str(float(t)): {"hits": c, "accuracy": Fraction(c, n) if n else None}
            for t, c in zip(self._ths, self._counts)
        }
        return {
            "n_scored": n,
            "at": at,
            "correctly_declined": self.declined,
            "hallucinated_a_location": self.halluc,
            "missed_a_present_referent": self.missed,
            "unanswered": self.unanswered,
        }


def agreement(
    points_a: Sequence[Optional[Sequence[float]]], points_b: Sequence[Optional[Sequence[float]]]
) -> dict[str, Any]:
    """Agreement between two sets of points on the same items as a distance (grounding-metrics
    document, "Pointing is measured as distance, not overlap"): 0 is perfect, no ceiling.

    Args:
        points_a, points_b: same length; item ``i`` of each is ``(x, y)`` normalized to the unit
            square (origin top-left) or ``None`` when that side gave no point.

    Returns:
        ``{"n_pairs", "n_unpaired", "mean_distance", "median_distance"}``: Euclidean distance in
        normalized image units over the items where both sides have a point (exact Fractions of the
        float distances; ``None`` when there are no pairs); ``n_unpaired`` counts items where one
        or both sides have no point.

    Raises:
        ValueError: when the sequences differ in length.
    """
    if len(points_a) != len(points_b):
        raise ValueError(f"point sets differ in length: {len(points_a)} != {len(points_b)}")
    d: list[float] = []
    unpaired = 0
    for a, b in zip(points_a, points_b):
        if a is None or b is None:
            unpaired += 1
            continue
        d.append(math.hypot(float(a[0]) - float(b[0]), float(a[1]) - float(b[1])))
    return {
        "n_pairs": len(d),
        "n_unpaired": unpaired,
        "mean_distance": exact_mean(d),
        "median_distance": exact_median(d),
    }


def tolerance_curve(
    items: Iterable[tuple[str, Optional[float]]], tolerances: Sequence[int] = TOLERANCES_PX
) -> list[tuple[int, int, int]]:
    """Hit count if a point within ``t`` pixels of the target counted as a hit.

    Args:
        items: ``(outcome, distance_px)`` per scored sample: outcome ``hit`` / ``miss`` /
            ``no_prediction``; ``distance_px`` is the recorded distance from the primary point to the
            nearest target pixel, in pixels of the original image (0 inside).
        tolerances: the thresholds ``t`` in pixels (default 0..50).

    Returns:
        ``[(t, hits_within_t, n), ...]`` in the order of ``tolerances``: a hit always counts, a miss
        counts when ``distance_px <= t``, a no_prediction never counts (nothing to recover); ``n``
        counts all items (the hit-rate denominator).
    """
    acc = ToleranceCounts(max((int(t) for t in tolerances), default=0))
    for outcome, dist in items:
        acc.add(outcome, dist)
    return acc.curve(tolerances)


class ToleranceCounts:
    """The fold behind :func:`tolerance_curve`, in memory independent of the number of samples: a
    miss at distance ``d`` is counted in bucket ``ceil(d)``, since for an integer ``t``,
    ``d <= t`` exactly when ``ceil(d) <= t``; misses farther than ``max_t`` are counted nowhere.

    >>> acc = ToleranceCounts(50)
    >>> for o, d in (("hit", 0.0), ("miss", 2.5), ("miss", 70.0), ("no_prediction", None)):
    ...     acc.add(o, d)
    >>> [x for x in acc.curve((0, 2, 3, 50))]
    [(0, 1, 4), (2, 1, 4), (3, 2, 4), (50, 2, 4)]
    """

    __slots__ = ("max_t", "n", "hits", "_buckets")

    def __init__(self, max_t: int = TOLERANCES_PX[-1]) -> None:
        self.max_t = int(max_t)
        self.n = self.hits = 0
        self._buckets = [0] * (self.max_t + 1)

    def add(self, outcome: str, distance_px: Optional[float]) -> None:
        """One sample: ``outcome`` (``hit`` / ``miss`` / ``no_prediction`` / ``error``; only a hit, or a
        miss within ``t`` for ``t >= 1``, counts) and its recorded ``distance_px`` (pixels of the
        original image, ``None`` when unknown or not applicable)."""
        self.n += 1
        if outcome == "hit":
            self.hits += 1
        elif outcome == "miss" and distance_px is not None:
            k = math.ceil(distance_px) if math.isfinite(distance_px) else self.max_t + 1
            if k <= self.max_t:
                # a miss never counts at t = 0: there the curve is the hit rate by construction
                self._buckets[max(k, 1)] += 1

    def merge(self, other: "ToleranceCounts") -> None:
        """Add another fold's counts (same ``max_t``)."""
        self.n += other.n
        self.hits += other.hits
        for i, c in enumerate(other._buckets):
            self._buckets[i] += c

    def curve(self, tolerances: Sequence[int] = TOLERANCES_PX) -> list[tuple[int, int, int]]:
        """``[(t, hits_within_t, n), ...]`` in the order of ``tolerances`` (each ``<= max_t``).

        Raises:
            ValueError: a tolerance above ``max_t``.
        """
        cum = []
        total = 0
        for c in self._buckets:
            total += c
            cum.append(total)
        out = []
        for t in tolerances:
            t = int(t)
            if t > self.max_t:
                raise ValueError(f"tolerance {t} above the fold's max_t {self.max_t}")
            out.append((t, self.hits + (cum[t] if t >= 0 else 0), self.n))
        return out


def derive_seed(seed: int, *keys: str) -> int:
    """A 64-bit seed derived from ``seed`` and string keys via sha256 (never ``hash()``, which
    depends on ``PYTHONHASHSEED``)."""
    h = hashlib.sha256(("\x1f".join([str(int(seed)), *keys])).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


BOOTSTRAP_BLOCK_DRAWS = 1 << 18
"""Cluster draws made at once by :func:`bootstrap_replicates` (a memory bound, not a result: the
replicates are the same for any block size)."""


def bootstrap_replicates(clusters: Sequence[tuple[int, int]], *, seed: int, resamples: int = 1000) -> tuple[Any, Any]:
    """Cluster bootstrap replicates of a hit count: resample the clusters (images) with replacement.

    Several prompts about the same image are not independent; resampling images with all their
    prompts keeps that dependence. Replicates of several strata (benchmarks) drawn independently add
    up to a stratified bootstrap of the pooled rate (each replicate keeps every benchmark's number of
    images), which is how pooled intervals are computed.

    Args:
        clusters: one ``(hits, n)`` pair per cluster, **in a fixed order** (sort clusters by key
            first: the result depends on the order), ``n >= 1``.
        seed: integer seed; its low 32 bits seed ``numpy.random.RandomState`` (the legacy generator,
            whose stream NEP 19 freezes across numpy versions); derive it with :func:`derive_seed`
            from the study seed and the table cell, never from ``hash()``.
        resamples: number of bootstrap replicates B.

    Returns:
        ``(hits, n)``: two int64 arrays of length B, each replicate's total hits and samples.

    Raises:
        ValueError: when ``clusters`` is empty.
    """
    import numpy as np

    c = len(clusters)
    if c == 0:
        raise ValueError("bootstrap over zero clusters")
    # numpy's legacy RandomState (Mersenne Twister): its stream is frozen across numpy versions
    # (NEP 19), unlike Generator's, so committed intervals regenerate on any numpy.
    rng = np.random.RandomState(int(seed) & 0xFFFFFFFF)
    h = np.fromiter((x[0] for x in clusters), dtype=np.int64, count=c)
    n = np.fromiter((x[1] for x in clusters), dtype=np.int64, count=c)
    hs = np.empty(resamples, dtype=np.int64)
    ns = np.empty(resamples, dtype=np.int64)
    # replicate r draws clusters idx[r]; drawn a block of replicates at a time (the same stream as
    # one (resamples, c) draw), so memory stays at BOOTSTRAP_BLOCK_DRAWS draws, not resamples * c
    step = max(1, BOOTSTRAP_BLOCK_DRAWS // c)
    for r0 in range(0, resamples, step):
        k = min(step, resamples - r0)
        idx = rng.randint(0, c, size=(k, c), dtype=np.int32)
        hs[r0:r0 + k] = h[idx].sum(axis=1)
        ns[r0:r0 + k] = n[idx].sum(axis=1)
    return hs, ns


def percentile_interval(hits: Any, n: Any, level: Fraction = Fraction(95, 100)) -> tuple[Fraction, Fraction]:
    """Percentile interval from bootstrap replicates ``hits[i] / n[i]`` (int arrays of equal length
    B, every ``n[i] > 0``): the exact rates at the nearest-rank positions ``floor(B * a/2)`` and
    ``ceil(B * (1 - a/2)) - 1`` (0-based) of the sorted replicate rates, ``a = 1 - level``.

    Replicates are ordered by their float rate (a stable sort; correctly rounded division is
    monotonic, and two different fractions with denominators below 2**26 never round to the same
    double), and the chosen replicates are returned exactly as ``Fraction(hits, n)``."""
    import numpy as np

    h = np.asarray(hits, dtype=np.int64)
    nn = np.asarray(n, dtype=np.int64)
    order = np.argsort(h / nn, kind="stable")
    b = len(order)
    alpha = 1 - Fraction(level)
    lo_i = int(order[math.floor(b * alpha / 2)])
    hi_i = int(order[math.ceil(b * (1 - alpha / 2)) - 1])
    return Fraction(int(h[lo_i]), int(nn[lo_i])), Fraction(int(h[hi_i]), int(nn[hi_i]))


def bootstrap_ci(
    strata: Sequence[Sequence[tuple[int, int]]],
    *,
    seed: int,
    resamples: int = 1000,
    level: Fraction = Fraction(95, 100),
) -> Optional[tuple[Fraction, Fraction]]:
    """Percentile bootstrap interval for a hit rate, resampling clusters (images), not samples;
    several strata (benchmarks of a pooled rate) are resampled each on its own.

    Args:
        strata: per stratum, one ``(hits, n)`` pair per cluster in a fixed order.
        seed: integer seed; stratum ``k`` uses ``derive_seed(seed, str(k))``.
        resamples, level: see :func:`bootstrap_replicates` and :func:`percentile_interval`.

    Returns:
        ``(low, high)`` exact Fractions, or ``None`` when there are no samples.
    """
    strata = [list(s) for s in strata if len(s)]
    if not strata:
        return None
    tot_h = tot_n = None
    for k, s in enumerate(strata):
        h, n = bootstrap_replicates(s, seed=derive_seed(seed, str(k)), resamples=resamples)
        tot_h = h if tot_h is None else tot_h + h
        tot_n = n if tot_n is None else tot_n + n
    return percentile_interval(tot_h, tot_n, level)


def mcnemar(a_hits: Sequence[bool], b_hits: Sequence[bool]) -> dict[str, Any]:
    """Exact McNemar test for two models scored on the same samples.

    Args:
        a_hits, b_hits: per paired sample, whether model A / model B hit (same order, same length).

    Returns:
        ``{"n", "both", "a_only", "b_only", "neither", "p_value"}``: the 2x2 counts and the exact
        two-sided p-value of the conditional (binomial) McNemar test as an exact Fraction:
        with ``d = a_only + b_only`` discordant pairs and ``k = min(a_only, b_only)``,
        ``p = min(1, 2 * sum_{i <= k} C(d, i) / 2**d)``, 1 when ``d == 0``. This is
        ``scipy.stats.binomtest(a_only, d, 0.5).pvalue`` (two-sided, symmetric null), computed
        in integers so that it is exact and does not import ``scipy.stats`` (seconds per process);
        the tests check the two agree.

    Raises:
        ValueError: when the sequences differ in length.
    """
    if len(a_hits) != len(b_hits):
        raise ValueError(f"paired sequences differ in length: {len(a_hits)} != {len(b_hits)}")
    both = a_only = b_only = neither = 0
    for a, b in zip(a_hits, b_hits):
        if a and b:
            both += 1
        elif a:
            a_only += 1
        elif b:
            b_only += 1
        else:
            neither += 1
    d = a_only + b_only
    if d == 0:
        p = Fraction(1)
    else:
        k = min(a_only, b_only)
        tail = term = 1  # C(d, 0); then C(d, i + 1) = C(d, i) * (d - i) / (i + 1), exact in integers
        for i in range(k):
            term = term * (d - i) // (i + 1)
            tail += term
        p = min(Fraction(1), Fraction(2 * tail, 2**d))
    return {"n": len(a_hits), "both": both, "a_only": a_only, "b_only": b_only, "neither": neither, "p_value": p}
