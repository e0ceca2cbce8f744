"""Chance-corrected agreement on nominal labels: Cohen's kappa, Krippendorff's alpha, percent agreement.

Exact point values (``fractions.Fraction``, from integer counts) and percentile bootstrap intervals
that resample images (clusters), never single misses: several prompts about one image are not
independent. Nothing here imports a statistics library; ``tests/test_judge_coefficients.py`` checks
every value against scikit-learn's ``cohen_kappa_score`` and the ``krippendorff`` package.

Definitions (``K`` labels; ``M`` a ``K x K`` confusion matrix of two raters over ``N`` items both
labeled, rows rater A, columns rater B):

* **percent agreement** ``p_o = trace(M) / N``.
* **Cohen's kappa** (Cohen 1960, "A coefficient of agreement for nominal scales"):
  ``(p_o - p_e) / (1 - p_e)`` with ``p_e = sum_k row_k col_k / N^2``. Undefined when ``N == 0``
  (nothing to compare) or ``p_e == 1`` (both raters gave every item one and the same label).
* **Krippendorff's alpha, nominal** (Krippendorff, "Content Analysis", ch. 12; "Computing
  Krippendorff's Alpha-Reliability", 2011): from the coincidence matrix ``o`` (``K x K``): each unit
  ``u`` with ``m_u >= 2`` values adds, for every ordered pair of values from different raters,
  ``1 / (m_u - 1)``; units with fewer than two values are not pairable and add nothing. With
  ``n_c = sum_k o_ck`` and ``n = sum_c n_c``: ``alpha = 1 - (n - 1) * (n - trace(o)) / (n^2 -
  sum_c n_c^2)``. Undefined when no unit is pairable (``n == 0``) or only one label occurs among the
  pairable values (``n^2 == sum_c n_c^2``: no disagreement is possible, so none is expected). For two
  raters and no missing values ``o = M + M^T``.

Every undefined coefficient comes with its reason in words (:class:`Coefficient`), never NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Sequence

__all__ = [
    "Coefficient",
    "alpha_from_coincidence",
    "bootstrap_matrices",
    "coincidence",
    "kappa_from_confusion",
    "percent_from_confusion",
    "percentile",
]

Matrix = Sequence[Sequence[Any]]


@dataclass(frozen=True)
class Coefficient:
    """One agreement coefficient: ``value`` (exact, ``None`` when undefined), ``undefined`` (why, in
    words, when it is), ``interval`` (the bootstrap percentile interval as floats, ``None`` when
    fewer than two resamples were defined) and ``defined_resamples`` (resamples where it was
    defined: an interval over fewer than all of them says so)."""

    value: Optional[Fraction]
    undefined: Optional[str] = None
    interval: Optional[tuple[float, float]] = None
    defined_resamples: int = 0

    def text(self, digits: int = 3) -> str:
        """``0.512 [0.401, 0.617]`` or ``undefined: <reason>``."""
        from pointfail.tables import fmt_fraction

        if self.value is None:
            return f"undefined: {self.undefined}"
        s = fmt_fraction(self.value, digits)
        if self.interval is not None:
            lo, hi = (fmt_fraction(Fraction(v), digits) for v in self.interval)
            s += f" [{lo}, {hi}]"
        return s


def _labels_used(totals: dict[str, int]) -> str:
    used = [k for k, v in totals.items() if v]
    return ", ".join(used)


def percent_from_confusion(m: Matrix) -> tuple[Optional[Fraction], Optional[str]]:
    """``(trace / N, None)``, or ``(None, reason)`` when ``N == 0``."""
    n = sum(sum(r) for r in m)
    if n == 0:
        return None, "no miss was labeled by both"
    return Fraction(sum(m[i][i] for i in range(len(m))), n), None


def kappa_from_confusion(m: Matrix, labels: Sequence[str] = ()) -> tuple[Optional[Fraction], Optional[str]]:
    """Cohen's kappa of a ``K x K`` integer confusion matrix (module docstring), exact.

    Returns:
        ``(kappa, None)`` or ``(None, reason)``: ``labels`` (``K`` names) only name the one label in
        the reason of the ``p_e == 1`` case.
    """
    k = len(m)
    n = sum(sum(r) for r in m)
    if n == 0:
        return None, "no miss was labeled by both"
    rows = [sum(m[i]) for i in range(k)]
    cols = [sum(m[i][j] for i in range(k)) for j in range(k)]
    p_o = Fraction(sum(m[i][i] for i in range(k)), n)
    p_e = Fraction(sum(rows[i] * cols[i] for i in range(k)), n * n)
    if p_e == 1:
        only = next((labels[i] for i in range(k) if rows[i]), "one label") if labels else "one label"
        return None, (f"both gave every one of the {n} misses the same label ({only}): chance agreement is 1, "
                      "so kappa is 0/0")
    return (p_o - p_e) / (1 - p_e), None


def _add_unit(acc: list[list[int]], u: Sequence[int]) -> None:
    """Add one unit's integer pairings ``n_uc n_uk - [c == k] n_uc`` to ``acc`` (``K x K``)."""
    k = len(u)
    for c in range(k):
        if not u[c]:
            continue
        for d in range(k):
            acc[c][d] += u[c] * u[d] - (u[c] if c == d else 0)


def coincidence(units: Sequence[Sequence[int]]) -> list[list[Fraction]]:
    """Krippendorff's coincidence matrix from per-unit value counts.

    Args:
        units: per unit, a length-``K`` list of how many raters gave each label (raters without a
            label for the unit are simply not counted).

    Returns:
        The ``K x K`` matrix ``o`` (exact): unit ``u`` with ``m_u`` values adds
        ``(n_uc n_uk - [c == k] n_uc) / (m_u - 1)`` to ``o[c][k]``; units with ``m_u < 2`` add nothing.
    """
    if not units:
        return []
    k = len(units[0])
    by_m: dict[int, list[list[int]]] = {}  # integer sums per unit size m, divided by m - 1 once at the end
    for u in units:
        m = sum(u)
        if m < 2:
            continue
        _add_unit(by_m.setdefault(m, [[0] * k for _ in range(k)]), u)
    o = [[Fraction(0)] * k for _ in range(k)]
    for m, acc in by_m.items():
        for c in range(k):
            for d in range(k):
                if acc[c][d]:
                    o[c][d] += Fraction(acc[c][d], m - 1)
    return o


def alpha_from_coincidence(o: Matrix, labels: Sequence[str] = ()) -> tuple[Optional[Fraction], Optional[str]]:
    """Krippendorff's alpha (nominal) of a coincidence matrix (module docstring), exact.

    Returns:
        ``(alpha, None)`` or ``(None, reason)``.
    """
    k = len(o)
    nc = [sum((Fraction(x) for x in o[c]), Fraction(0)) for c in range(k)]
    n = sum(nc, Fraction(0))
    if n == 0:
        return None, "no miss has labels from two judges to compare"
    expected = n * n - sum((x * x for x in nc), Fraction(0))
    if expected == 0:
        only = next((labels[c] for c in range(k) if nc[c]), "one label") if labels else "one label"
        return None, (f"every label compared is the same ({only}): no disagreement is possible, so alpha "
                      "(observed over expected disagreement) is 0/0")
    observed = n - sum((Fraction(o[c][c]) for c in range(k)), Fraction(0))
    return 1 - (n - 1) * observed / expected, None


BLOCK_DRAWS = 1 << 18
"""Cluster draws made at once by :func:`bootstrap_matrices` (a memory bound; the replicates are the
same for any block size)."""


def bootstrap_matrices(clusters: Any, *, seed: int, resamples: int) -> Any:
    """Cluster bootstrap of summed matrices: ``resamples`` replicates, each the sum of ``C`` clusters'
    matrices drawn with replacement.

    Args:
        clusters: float array ``(C, K, K)``, one matrix per cluster (image), **in a fixed order**.
        seed: integer; its low 32 bits seed ``numpy.random.RandomState`` (the legacy generator, whose
            stream numpy keeps fixed across versions, NEP 19), as :func:`pointfail.metrics.bootstrap_replicates`.
        resamples: replicates ``B``.

    Returns:
        float array ``(B, K, K)``.

    Raises:
        ValueError: no clusters.
    """
    import numpy as np

    x = np.asarray(clusters, dtype=np.float64)
    c = x.shape[0]
    if c == 0:
        raise ValueError("bootstrap over zero clusters")
    flat = x.reshape(c, -1)
    rng = np.random.RandomState(int(seed) & 0xFFFFFFFF)
    out = np.empty((resamples, flat.shape[1]), dtype=np.float64)
    step = max(1, BLOCK_DRAWS // c)
    for r0 in range(0, resamples, step):
        kk = min(step, resamples - r0)
        idx = rng.randint(0, c, size=(kk, c), dtype=np.int32)
        w = np.zeros((kk, c), dtype=np.float64)
        np.add.at(w, (np.repeat(np.arange(kk), c), idx.ravel()), 1.0)
        out[r0:r0 + kk] = w @ flat
    return out.reshape(resamples, *x.shape[1:])


def replicate_stats(mats: Any, *, symmetric: bool) -> dict[str, Any]:
    """Per replicate ``(B, K, K)``: ``percent`` and ``kappa`` of confusion matrices (``symmetric``
    False) and ``alpha`` of their coincidence matrices (``M + M^T`` for confusion matrices, the
    matrices themselves when ``symmetric``); NaN where undefined (dropped before :func:`percentile`)."""
    import numpy as np

    m = np.asarray(mats, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: dict[str, Any] = {}
        o = m if symmetric else m + np.swapaxes(m, 1, 2)
        nc = o.sum(axis=2)
        n = nc.sum(axis=1)
        expected = n * n - (nc * nc).sum(axis=1)
        observed = n - np.trace(o, axis1=1, axis2=2)
        alpha = 1 - (n - 1) * observed / expected
        alpha[(n == 0) | (np.abs(expected) < 1e-9)] = np.nan
        out["alpha"] = alpha
        if not symmetric:
            nn = m.sum(axis=(1, 2))
            p_o = np.trace(m, axis1=1, axis2=2) / nn
            p_e = (m.sum(axis=2) * m.sum(axis=1)).sum(axis=1) / (nn * nn)
            kappa = (p_o - p_e) / (1 - p_e)
            kappa[(nn == 0) | (np.abs(1 - p_e) < 1e-12)] = np.nan
            p_o[nn == 0] = np.nan
            out["percent"] = p_o
            out["kappa"] = kappa
    return out


def percentile(values: Any, level: float = 0.95) -> tuple[Optional[tuple[float, float]], int]:
    """Percentile interval of the defined (non-NaN) replicate values: the sorted values at the
    nearest-rank positions ``floor(b * a/2)`` and ``ceil(b * (1 - a/2)) - 1`` (0-based, ``b`` defined
    replicates, ``a = 1 - level``; the rule of :func:`pointfail.metrics.percentile_interval`).

    Returns:
        ``((low, high), b)``, or ``(None, b)`` when ``b < 2``.
    """
    import numpy as np

    v = np.sort(np.asarray(values, dtype=np.float64)[~np.isnan(values)], kind="stable")
    b = len(v)
    if b < 2:
        return None, b
    a = 1 - Fraction(str(level))
    lo = float(v[math.floor(b * a / 2)])
    hi = float(v[math.ceil(b * (1 - a / 2)) - 1])
    return (lo, hi), b
