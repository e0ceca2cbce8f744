"""Agreement coefficients against outside references: scikit-learn's ``cohen_kappa_score`` and the
``krippendorff`` package (test-only dependencies, pinned in requirements-dev.txt), on generated label
sets; plus the arithmetic of the undefined cases and of the image bootstrap."""

from __future__ import annotations

from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from pointfail.judge.agreement import Unit, group_alpha, pair_agreement
from pointfail.judge.coefficients import (
    alpha_from_coincidence,
    bootstrap_matrices,
    coincidence,
    kappa_from_confusion,
    replicate_stats,
)
from pointfail.records import FAILURE_MODES

L = list(FAILURE_MODES)
labels = st.sampled_from(range(4))


def confusion(a, b):
    m = [[0] * 4 for _ in range(4)]
    for x, y in zip(a, b):
        m[x][y] += 1
    return m


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(labels, labels), min_size=1, max_size=60))
def test_kappa_and_two_rater_alpha_match_the_references(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    m = confusion(a, b)
    kappa, why = kappa_from_confusion(m, L)
    if len(set(a)) == 1 and set(a) == set(b):
        assert kappa is None and "same label" in why
    else:
        assert float(kappa) == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3]), abs=1e-12)
    alpha, why_a = alpha_from_coincidence([[m[i][j] + m[j][i] for j in range(4)] for i in range(4)], L)
    if len(set(a) | set(b)) == 1:
        assert alpha is None and "no disagreement is possible" in why_a
    else:
        ref = krippendorff.alpha(reliability_data=np.array([a, b], dtype=float), level_of_measurement="nominal")
        assert float(alpha) == pytest.approx(ref, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), labels), min_size=4, max_size=4), min_size=2, max_size=40))
def test_alpha_with_missing_values_over_many_raters_matches_krippendorff(units):
    # units x 4 raters, None = that rater did not label the unit
    counts = [[sum(1 for v in u if v == k) for k in range(4)] for u in units]
    value, why = alpha_from_coincidence(coincidence(counts), L)
    pairable = [u for u in units if sum(v is not None for v in u) >= 2]
    used = {v for u in pairable for v in u if v is not None}
    if not pairable:
        assert value is None and why.startswith("no miss has labels")
        return
    if len(used) == 1:
        assert value is None and "no disagreement" in why
        return
    data = np.array([[np.nan if u[r] is None else float(u[r]) for u in units] for r in range(4)])
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert float(value) == pytest.approx(ref, abs=1e-12)


def test_hand_computed_alpha():
    # 2 raters, 4 units: (O,O) (O,I) (I,I) (H,H): o = M + M^T: o[O][O]=2, o[O][I]=o[I][O]=1, o[I][I]=2, o[H][H]=2
    # n_c: O 3, I 3, H 2; n = 8; expected = 64 - (9 + 9 + 4) = 42; observed = 8 - 6 = 2
    # alpha = 1 - 7 * 2 / 42 = 2/3
    m = confusion([0, 0, 1, 3], [0, 1, 1, 3])
    assert alpha_from_coincidence([[m[i][j] + m[j][i] for j in range(4)] for i in range(4)], L) == (Fraction(2, 3), None)
    # kappa: p_o = 3/4; rows O 2, I 1, H 1; cols O 1, I 2, H 1: p_e = (2 + 2 + 1) / 16 = 5/16
    # kappa = (12/16 - 5/16) / (11/16) = 7/11
    assert kappa_from_confusion(m, L) == (Fraction(7, 11), None)


def _units(pairs_by_image):
    out = []
    for img, pairs in pairs_by_image.items():
        for k, (x, y) in enumerate(pairs):
            out.append(Unit("m", "b", f"{img}-{k}", img, {"A": ("labeled", x), "B": ("labeled", y)}))
    return out


def test_pair_agreement_values_and_words_for_undefined():
    O, I, C, H = L
    units = _units({"i1": [(O, O), (O, I)], "i2": [(I, I)], "i3": [(H, H)]})
    units.append(Unit("m", "b", "x", "i4", {"A": ("unlabeled", None), "B": ("labeled", C)}))
    units.append(Unit("m", "b", "y", "i4", {"A": ("judge_unavailable", None), "B": ("labeled", C)}))
    p = pair_agreement(units, "A", "B", resamples=200)
    assert (p["n"], p["compared"], p["images"]) == (4, 6, 3)
    assert p["percent_agreement"] == 0.75 and p["cohen_kappa"] == pytest.approx(7 / 11)
    assert p["krippendorff_alpha"] == pytest.approx(2 / 3)
    assert p["confusion"]["unlabeled"][C] == 1 and p["not_verdicts"]["a"] == {"judge_unavailable": 1}
    assert p["per_mode"][O] == {"precision": 1.0, "recall": 0.5, "support_a": 2, "support_b": 1}
    lo, hi = p["cohen_kappa_interval"]
    assert lo <= hi and lo <= 7 / 11 <= hi + 1e-12
    same = pair_agreement(_units({"i1": [(H, H)], "i2": [(H, H)]}), "A", "B", resamples=50)
    assert same["percent_agreement"] == 1.0
    assert same["cohen_kappa"] is None and "same label (hallucinated)" in same["cohen_kappa_undefined"]
    assert same["krippendorff_alpha"] is None and "no disagreement is possible" in same["krippendorff_alpha_undefined"]
    none = pair_agreement(units, "A", "Z", resamples=50)
    assert none["n"] == 0 and none["percent_agreement_undefined"] == "no miss was labeled by both"


def test_bootstrap_resamples_whole_images():
    # one image holding 3 agreeing pairs, one holding 1 disagreeing pair: every replicate's n is a
    # sum of whole images (multiples of 3 plus multiples of 1 with 2 images drawn), and the same seed
    # gives the same replicates
    mats = np.zeros((2, 4, 4))
    mats[0, 0, 0] = 3
    mats[1, 0, 1] = 1
    r1 = bootstrap_matrices(mats, seed=7, resamples=300)
    r2 = bootstrap_matrices(mats, seed=7, resamples=300)
    assert np.array_equal(r1, r2)
    ns = r1.sum(axis=(1, 2))
    assert set(ns.tolist()) <= {2.0, 4.0, 6.0}  # (1+1), (3+1), (3+3)
    stats = replicate_stats(r1, symmetric=False)
    assert np.all(np.isnan(stats["kappa"][ns == 6.0]))  # both drew the agreeing image: p_e = 1


def test_group_alpha_over_three_judges():
    O, I = L[0], L[1]
    units = [Unit("m", "b", str(k), f"i{k}", {"A": ("labeled", O), "B": ("labeled", O if k % 2 else I),
                                              "C": ("labeled", O)}) for k in range(6)]
    g = group_alpha(units, ["A", "B", "C"], resamples=100)
    data = np.array([[0.0] * 6, [0.0 if k % 2 else 1.0 for k in range(6)], [0.0] * 6])
    assert g["units"] == 6 and g["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
