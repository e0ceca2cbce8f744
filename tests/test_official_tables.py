"""The ``official`` table, its ``official_diagnostic`` and the ``pointing`` denominator, with the
counts worked out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from test_aggregate import read_csv, rec, toy_study

from pointfail.aggregate import aggregate
from pointfail.records import OfficialScore, Record, write_records


def _with(r: Record, score: Optional[float], own: Optional[float] = None, note: Optional[str] = None) -> Record:
    return r.model_copy(update={"official": OfficialScore(rule="pb official", score=score, own_score=own, note=note)})


def test_official_table_counts_errors_left_out_and_readings(tmp_path: Path) -> None:
    rs = [
        _with(rec("m", "pb", "a", "hit"), 1.0),                     # agrees
        _with(rec("m", "pb", "b", "miss", dist=3.0), 0.0),          # agrees
        _with(rec("m", "pb", "c", "error"), 0.0, note="no answer"),  # counted wrong, agrees with the headline's 0
        _with(rec("m", "pb", "d", "miss", dist=3.0), None, own=1.0, note="dropped"),  # left out; pointfail reads 1
        _with(rec("m", "pb", "e", "hit"), 0.5),                     # partial: mean over points
        _with(rec("m", "pb", "f", "miss", dist=3.0), 1.0, own=0.0),  # the official parser reads a hit
    ]
    write_records(tmp_path / "st" / "m" / "pb.jsonl", rs)
    files = aggregate(tmp_path / "st")
    off = read_csv(files["official.csv"])[0]
    # official mean over a, b, c, e, f: (1 + 0 + 0 + 0.5 + 1) / 5 = 50 %; d is left out
    # own reading over all six: (1 + 0 + 0 + 1 + 0.5 + 0) / 6 = 41.7 %; headline 2 hits / 6 = 33.3 %
    assert [off[k] for k in ("n_official", "official_score_pct", "left_out", "read_differently",
                             "own_reading_score_pct", "pointfail_n", "pointfail_hit_rate_pct")] == [
        "5", "50.0", "1", "2", "41.7", "6", "33.3"]
    diag = read_csv(files["official_diagnostic.csv"])[0]
    assert [diag[k] for k in ("n", "decided_differently", "left_out", "no_answer", "official_parser",
                              "mean_over_points", "rule")] == ["6", "3", "1", "0", "1", "1", "0"]


def test_official_no_answer_counted_wrong_is_a_reason(tmp_path: Path) -> None:
    rs = [_with(rec("m", "pb", "a", "error"), 0.0), _with(rec("m", "pb", "b", "miss", dist=1.0), 1.0)]
    write_records(tmp_path / "st" / "m" / "pb.jsonl", rs)
    diag = read_csv(aggregate(tmp_path / "st")["official_diagnostic.csv"])[0]
    # b: official 1 against a miss, no other reading recorded: the rule itself
    assert (diag["decided_differently"], diag["rule"], diag["no_answer"]) == ("1", "1", "0")


def test_pointing_keeps_errors_in_n(tmp_path: Path) -> None:
    """The toy study's alpha/b2: 1 hit, 3 misses, 2 no_prediction, 1 error: n = 7, 1/7 = 14.3 %."""
    files = aggregate(toy_study(tmp_path / "toy"))
    row = next(r for r in read_csv(files["pointing.csv"]) if (r["model"], r["benchmark"]) == ("alpha", "b2"))
    assert [row[k] for k in ("n", "n_hits", "point_in_region_pct", "n_misses", "n_no_point", "n_error")] == [
        "7", "1", "14.3", "3", "2", "1"]
    outcomes = next(r for r in read_csv(files["outcomes.csv"]) if (r["model"], r["benchmark"]) == ("alpha", "b2"))
    assert outcomes["n"] == row["n"] and outcomes["hit_rate_pct"] == row["point_in_region_pct"]
