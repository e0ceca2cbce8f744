"""Metrics: fixed cases with the arithmetic written out, hypothesis for order-independence and bounds."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pointfail import metrics
from pointfail.tables import fmt_fraction, fmt_p, fmt_pct, json_number, parse_sha256sums, render_csv, sha256sums


def test_pointing_accuracy_mean_miss_distance_over_misses_only() -> None:
    items = [
        {"in_region": True, "distance": 0.0},
        {"in_region": True, "distance": 0.0},
        {"in_region": True, "distance": 0.0},
        {"in_region": False, "distance": 0.1},
        {"in_region": False, "distance": 0.3},
        {"in_region": None, "distance": None},  # no point: not in the region, no distance
    ]
    r = metrics.pointing_accuracy(items)
    assert (r["n"], r["n_hits"], r["n_misses"], r["n_no_point"]) == (6, 3, 2, 1)
    assert r["point_in_region"] == Fraction(1, 2)  # 3 / 6
    # (0.1 + 0.3) / 2 = 0.2 over the two misses; averaging over hits too would give 0.4 / 5 = 0.08
    assert fmt_fraction(r["mean_miss_distance"], 6) == "0.200000"
    assert metrics.pointing_accuracy([])["point_in_region"] is None


def test_grounding_accuracy_sweep_and_absent() -> None:
    items = [
        {"iou": 0.95, "truth_absent": False, "prediction_absent": False},
        {"iou": 0.75, "truth_absent": False, "prediction_absent": False},  # exactly 0.75 counts at 0.75
        {"iou": 0.5, "truth_absent": False, "prediction_absent": False},
        {"iou": 0.1, "truth_absent": False, "prediction_absent": False},
        {"iou": None, "truth_absent": True, "prediction_absent": True},  # correctly_declined
        {"iou": None, "truth_absent": True, "prediction_absent": False},  # hallucinated_a_location
        {"iou": None, "truth_absent": False, "prediction_absent": True},  # missed_a_present_referent
        {"iou": 0.9, "truth_absent": False, "prediction_absent": False, "answered": False},  # unanswered
    ]
    r = metrics.grounding_accuracy(items)
    assert r["n_scored"] == 4
    assert {t: v["hits"] for t, v in r["at"].items()} == {"0.25": 3, "0.5": 3, "0.75": 2, "0.9": 1}
    assert r["at"]["0.5"]["accuracy"] == Fraction(3, 4)
    assert (r["correctly_declined"], r["hallucinated_a_location"], r["missed_a_present_referent"], r["unanswered"]) == (1, 1, 1, 1)


def test_agreement_mean_and_median_distance() -> None:
    a = [(0.0, 0.0), (0.5, 0.5), (1.0, 0.0), None]
    b = [(0.3, 0.4), (0.5, 0.5), (0.0, 0.0), (0.2, 0.2)]
    r = metrics.agreement(a, b)
    # distances 0.5 (3-4-5), 0.0, 1.0 -> mean 0.5, median 0.5; the None pair is unpaired
    assert (r["n_pairs"], r["n_unpaired"]) == (3, 1)
    assert fmt_fraction(r["mean_distance"], 6) == "0.500000" and fmt_fraction(r["median_distance"], 6) == "0.500000"
    r2 = metrics.agreement([(0, 0), (0, 0)], [(0, 0.1), (0, 0.3)])
    assert fmt_fraction(r2["median_distance"], 4) == "0.2000"  # even count: mean of the middle two
    with pytest.raises(ValueError):
        metrics.agreement([(0, 0)], [])


def test_tolerance_curve() -> None:
    items = [("hit", 0.0), ("miss", 0.5), ("miss", 2.0), ("miss", 50.0), ("miss", 50.5), ("no_prediction", None)]
    curve = {t: (h, n) for t, h, n in metrics.tolerance_curve(items)}
    assert curve[0] == (1, 6)
    assert curve[1] == (2, 6)  # 0.5 px recovered
    assert curve[2] == (3, 6)  # <= 2 px inclusive
    assert curve[49] == (3, 6) and curve[50] == (4, 6)  # 50.5 never within 50
    assert sorted(curve) == list(range(51))


def test_mcnemar_exact() -> None:
    # a_only = 3, b_only = 1: two-sided exact p = 2 * (C(4,3) + C(4,4)) / 2^4 = 2 * 5/16 = 0.625
    r = metrics.mcnemar([1, 1, 1, 0, 1, 0], [0, 0, 0, 1, 1, 0])
    assert (r["both"], r["a_only"], r["b_only"], r["neither"]) == (1, 3, 1, 1)
    assert r["p_value"] == Fraction(5, 8)
    # 10 discordant pairs all one way: p = 2 / 2^10 = 0.001953125
    assert metrics.mcnemar([1] * 10, [0] * 10)["p_value"] == Fraction(2, 1024)
    assert metrics.mcnemar([1, 0], [1, 0])["p_value"] == 1
    # 3 vs 3 discordant: 2 * P(X <= 3 | 6) = 2 * 42/64 > 1 -> capped at 1
    assert metrics.mcnemar([1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1])["p_value"] == 1


@given(st.integers(0, 60), st.integers(0, 60))
@settings(max_examples=80, deadline=None)
def test_mcnemar_equals_scipy_binomtest(a_only: int, b_only: int) -> None:
    from scipy.stats import binomtest

    r = metrics.mcnemar([True] * a_only + [False] * b_only, [False] * a_only + [True] * b_only)
    expect = 1.0 if a_only + b_only == 0 else binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert float(r["p_value"]) == pytest.approx(expect, rel=1e-9)
    assert fmt_p(r["p_value"]) == f"{float(r['p_value']):.4g}"


def test_bootstrap_is_seeded_and_clustered() -> None:
    clusters = [(1, 1)] * 30 + [(0, 1)] * 10 + [(3, 4)] * 5
    a = metrics.bootstrap_ci([clusters], seed=5)
    b = metrics.bootstrap_ci([clusters], seed=5)
    assert a == b
    h5, _ = metrics.bootstrap_replicates(clusters, seed=5)
    h6, _ = metrics.bootstrap_replicates(clusters, seed=6)
    assert h5.tolist() != h6.tolist()
    lo, hi = a
    point = Fraction(30 + 15, 40 + 20)
    assert lo < point < hi
    # a single cluster can only be redrawn as itself
    assert metrics.bootstrap_ci([[(2, 5)]], seed=0) == (Fraction(2, 5), Fraction(2, 5))
    assert metrics.bootstrap_ci([[]], seed=0) is None
    # percentile positions for B = 1000: floor(25) = 25 and ceil(975) - 1 = 974
    h, n = metrics.bootstrap_replicates(clusters, seed=1, resamples=1000)
    rates = sorted(Fraction(int(x), int(y)) for x, y in zip(h, n))
    assert metrics.percentile_interval(h, n) == (rates[25], rates[974])


def test_bootstrap_stream_is_numpys_frozen_legacy_generator() -> None:
    # The replicates come from RandomState(seed).randint (Mersenne Twister, frozen by NEP 19), so
    # committed intervals regenerate on any numpy version: same draws as calling it directly.
    import numpy as np

    clusters = [(1, 1), (0, 1), (2, 3)]
    h, n = metrics.bootstrap_replicates(clusters, seed=42, resamples=7)
    idx = np.random.RandomState(42).randint(0, 3, size=(7, 3), dtype=np.int32)
    assert h.tolist() == [sum(clusters[i][0] for i in row) for row in idx.tolist()]
    assert n.tolist() == [sum(clusters[i][1] for i in row) for row in idx.tolist()]


def test_derive_seed_is_stable() -> None:
    # sha256-based: the same on every machine and hash seed
    assert metrics.derive_seed(0, "m", "b") == int.from_bytes(
        __import__("hashlib").sha256("0\x1fm\x1fb".encode()).digest()[:8], "big"
    )


def test_fmt_fraction_rounds_once_half_even() -> None:
    assert fmt_fraction(Fraction(2, 3), 1, scale=100) == "66.7"
    assert fmt_fraction(Fraction(1, 8), 2) == "0.12"  # 0.125 -> half to even
    assert fmt_fraction(Fraction(3, 8), 2) == "0.38"  # 0.375 -> half to even
    assert fmt_fraction(Fraction(1, 2), 0) == "0" and fmt_fraction(Fraction(3, 2), 0) == "2"
    assert fmt_fraction(Fraction(-1, 3), 2) == "-0.33" and fmt_fraction(Fraction(-1, 1000), 2) == "0.00"
    assert fmt_fraction(None, 1) == "n/a" and fmt_pct(1, 0) == "n/a"
    # 0.285 as a float is 0.28499999999999998...: f"{0.285:.2f}" gives 0.28; the exact fraction 57/200 gives 0.28 (half-even) too
    assert fmt_fraction(Fraction(57, 200), 2) == "0.28"
    assert json_number(Fraction(1, 6), 6) == 0.166667 and repr(json_number(Fraction(1, 6), 6)) == "0.166667"


@given(st.fractions(min_value=-1000, max_value=1000), st.integers(0, 6))
def test_fmt_fraction_matches_decimal(x: Fraction, d: int) -> None:
    from decimal import ROUND_HALF_EVEN, Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 200
        expect = (Decimal(x.numerator) / Decimal(x.denominator)).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_EVEN)
    s = fmt_fraction(x, d)
    assert Decimal(s) == expect
    assert s == (f"{expect:.{d}f}" if expect != 0 else f"{abs(expect):.{d}f}")


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=40), st.randoms())
@settings(max_examples=60)
def test_exact_mean_independent_of_order(xs: list[float], rnd: random.Random) -> None:
    ys = list(xs)
    rnd.shuffle(ys)
    assert metrics.exact_mean(xs) == metrics.exact_mean(ys) == sum(Fraction(v) for v in xs) / len(xs)


@given(st.lists(st.tuples(st.sampled_from(["hit", "miss", "no_prediction"]), st.floats(0, 80)), max_size=40))
@settings(max_examples=60)
def test_tolerance_curve_monotone_and_bounded(items: list) -> None:
    curve = metrics.tolerance_curve(items)
    hits = [h for _, h, _ in curve]
    assert hits == sorted(hits)
    n_hit = sum(o == "hit" for o, _ in items)
    n_pred = sum(o != "no_prediction" for o, _ in items)
    assert hits[0] >= n_hit and hits[-1] <= n_pred and all(n == len(items) for *_, n in curve)


def test_csv_and_sums_render_canonically() -> None:
    assert render_csv(["a", "b"], [["x,y", "ü"]]) == 'a,b\n"x,y",ü\n'.encode("utf-8")
    with pytest.raises(TypeError, match="not a str"):
        render_csv(["a"], [[0.5]])
    sums = sha256sums({"b.csv": b"1", "a.md": b"2"})
    assert list(parse_sha256sums(sums)) == ["a.md", "b.csv"]
    with pytest.raises(ValueError):
        parse_sha256sums(b"nothex  a.md\n")
