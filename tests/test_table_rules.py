"""Table rules that must hold on every committed study (issue 16): numbers mean the same in every
table. Read from the committed tables, which `verify` shows regenerate byte for byte."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STUDIES = sorted(p.parent.parent for p in (REPO / "records").glob("*/tables/headline.csv"))


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_there_is_a_committed_study():
    assert STUDIES, "no committed study with tables"


@pytest.mark.parametrize("study", STUDIES, ids=lambda p: p.name)
def test_tolerance_at_zero_equals_the_headline_hit_rate_cell_for_cell(study):
    head = {(r["model"], r["benchmark"]): r for r in _csv(study / "tables" / "headline.csv")}
    tol = {(r["model"], r["benchmark"]): r for r in _csv(study / "tables" / "tolerance.csv") if r["t_px"] == "0"}
    assert head and set(tol) == set(head)
    for key, h in head.items():
        t = tol[key]
        assert (t["hits_within_t"], t["n"], t["rate_pct"]) == (h["hit"], h["n"], h["hit_rate_pct"]), key
