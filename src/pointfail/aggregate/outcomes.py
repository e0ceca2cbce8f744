"""Tables read from the per-cell counts alone: headline hit rates, outcomes, failure composition and
``summary.json``."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from pointfail.aggregate.counting import JUDGE_APART, Cell
from pointfail.aggregate.registry import ANSWER_FORM_NOTE, ERROR_NOTE, TableBuilder, register
from pointfail.aggregate.rows import POOLED, Row
from pointfail.records import FAILURE_MODES
from pointfail.tables import NA, JsonDocument, Output, Table, count, json_number, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["SUMMARY_SCHEMA", "FailureByCategory", "FailureComposition", "Headline", "Outcomes", "Summary"]

SUMMARY_SCHEMA = "pointfail.summary/1"

CI_LOW = pct("ci95_low_pct")
CI_HIGH = pct("ci95_high_pct")
RATE = pct("hit_rate_pct")


def _ci(study: "Study", key: tuple[str, str]) -> tuple[Optional[Fraction], Optional[Fraction]]:
    ci = study.counts.ci[key]
    return (None, None) if ci is None else ci


@register
class Headline(TableBuilder):
    """``headline``: hit rate (%) per model × benchmark and pooled, with the bootstrap 95% interval;
    the Markdown file is a pivot (models × benchmarks), the CSV one row per cell."""

    name = "headline"

    def tables(self, study: "Study") -> list[Output]:
        """The headline table."""
        counts = study.counts
        cols = counts.benchmarks + [POOLED]
        columns = [text("model"), text("benchmark"), count("n"), count("hit"), RATE, CI_LOW, CI_HIGH]
        rows_md, rows = [], []
        for m in counts.models:
            md = [m]
            for b in cols:
                c = counts.cells.get((m, b))
                if c is None:
                    md.append("")
                    continue
                lo, hi = _ci(study, (m, b))
                r = rate(c.hit, c.n)
                md.append(f"{RATE.format(r)} [{CI_LOW.format(lo)}, {CI_HIGH.format(hi)}]" if c.n else NA)
                rows.append([m, b, c.n, c.hit, r, lo, hi])
            rows_md.append(md)
        notes = [
            "Point-in-target hit rate (%) = hit / n, with a bootstrap 95% interval [low, high]; box tasks are "
            "hits by the PointerBench box rule.",
            ERROR_NOTE,
            ANSWER_FORM_NOTE,
            "`pooled` sums raw counts over the model's benchmarks (never an average of percentages).",
            f"Intervals: percentile bootstrap resampling images (not prompts), {study.bootstrap_resamples} "
            f"resamples, seed {study.bootstrap_seed}; pooled intervals resample each benchmark's images apart.",
        ]
        return [Table("headline", f"Hit rate (%): {study.name}", notes, columns, rows, md_sections=[(None, ["model", *cols], rows_md)])]


@register
class Outcomes(TableBuilder):
    """``outcomes``: n, hit, miss, no_prediction, error, hit rate, CI per model × benchmark/pooled."""

    name = "outcomes"

    def tables(self, study: "Study") -> list[Output]:
        """The outcomes table."""
        columns = [text("model"), text("benchmark"), count("n"), count("hit"), count("miss"), count("no_prediction"),
                   count("error"), RATE, CI_LOW, CI_HIGH, pct("no_prediction_pct")]
        rows = []
        for m, b in study.counts.keys():
            c = study.counts.cells[(m, b)]
            lo, hi = _ci(study, (m, b))
            rows.append([m, b, c.n, c.hit, c.miss, c.no_prediction, c.error, rate(c.hit, c.n), lo, hi, rate(c.no_prediction, c.n)])
        notes = [ERROR_NOTE, ANSWER_FORM_NOTE, "Rates are % of n, rounded once to 0.1 (half to even).",
                 "`pooled` sums raw counts."]
        return [Table("outcomes", f"Outcomes: {study.name}", notes, columns, rows)]


@register
class FailureComposition(TableBuilder):
    """``failure_composition``: the four failure-mode counts and shares over labeled misses;
    unlabeled, judge_unavailable and pending counted apart."""

    name = "failure_composition"

    def tables(self, study: "Study") -> list[Output]:
        """The failure composition table."""
        columns = [text("model"), text("benchmark"), count("miss"), count("labeled"),
                   *[count(k) for k in FAILURE_MODES], *[pct(f"{k}_pct") for k in FAILURE_MODES],
                   *[count(k) for k in JUDGE_APART]]
        rows = []
        for m, b in study.counts.keys():
            c = study.counts.cells[(m, b)]
            lab = c.labeled
            rows.append(
                [m, b, c.miss, lab]
                + [c.modes[k] for k in FAILURE_MODES]
                + [rate(c.modes[k], lab) for k in FAILURE_MODES]
                + [c.apart[k] for k in JUDGE_APART]
            )
        notes = [
            "Failure modes of misses, least to most severe; shares (%) are over labeled misses only.",
            "`malformed_box`: point answers to box tasks (answer-form rule below); `unlabeled`: the judge gave no "
            "single clean label in five attempts (abstention); `judge_unavailable`: judge outage; `pending`: not "
            "judged yet. Counted apart, never redistributed: miss = labeled + malformed_box + unlabeled + "
            "judge_unavailable + pending.",
            ERROR_NOTE,
            ANSWER_FORM_NOTE,
        ] + ([f"Judge: {study.judge_note}"] if study.judge_note else []) + (
            [f"Judge weights: {study.judge_pin}"] if study.judge_pin else [])
        return [Table("failure_composition", f"Failure composition: {study.name}", notes, columns, rows)]


@register
class FailureByCategory(TableBuilder):
    """``failure_by_category``: failure modes by the benchmark's ``category`` axis, one Markdown section
    per benchmark (the question the PointerBench paper's per-category tables answer); no file when no
    benchmark has categories."""

    name = "failure_by_category"

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str, str], Cell] = {}

    def add(self, row: "Row", sample: int) -> None:
        """Count a row under its benchmark's category (``(none)`` without one)."""
        cat = dict(row.metadata).get("category")
        if cat is None:
            return
        key = (row.benchmark, cat, row.model)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = Cell()
        c.add(row)

    def tables(self, study: "Study") -> list[Output]:
        """The failure mode x category table."""
        if not self._cells:
            return []
        columns = [text("benchmark"), text("category"), text("model"), count("n"), count("miss"), count("labeled"),
                   *[count(k) for k in FAILURE_MODES], *[pct(f"{k}_pct") for k in FAILURE_MODES],
                   *[count(k) for k in JUDGE_APART]]
        rows, sections = [], []
        for b in sorted({k[0] for k in self._cells}):
            md_rows = []
            for (bb, cat, m), c in sorted(self._cells.items()):
                if bb != b:
                    continue
                lab = c.labeled
                shares = [rate(c.modes[k], lab) for k in FAILURE_MODES]
                rows.append([b, cat, m, c.n, c.miss, lab, *[c.modes[k] for k in FAILURE_MODES], *shares,
                             *[c.apart[k] for k in JUDGE_APART]])
                md_rows.append([cat, m, str(c.n), str(c.miss), str(lab),
                                *[f"{columns[6 + len(FAILURE_MODES) + i].format(v)} ({c.modes[k]})"
                                  for i, (k, v) in enumerate(zip(FAILURE_MODES, shares))],
                                *[str(c.apart[k]) for k in JUDGE_APART]])
            sections.append((b, ["category", "model", "n", "miss", "labeled", *[f"{k}_pct" for k in FAILURE_MODES],
                                 *JUDGE_APART], md_rows))
        notes = [
            "Failure modes of misses per category of each benchmark (the row's `category` metadata); shares (%) "
            "are over labeled misses, with the count in parentheses.",
            "Misses counted apart as in failure_composition: miss = labeled + " + " + ".join(JUDGE_APART) + ".",
            ERROR_NOTE,
            ANSWER_FORM_NOTE,
        ]
        return [Table("failure_by_category", f"Failure modes by category: {study.name}", notes, columns, rows,
                      md_sections=sections)]


@register
class Summary(TableBuilder):
    """``summary.json``: per model, benchmark and pooled counts and rates, the counting rules and the
    bootstrap settings."""

    name = "summary"

    def tables(self, study: "Study") -> list[Output]:
        """The summary document."""
        counts = study.counts

        def cell_json(m: str, b: str) -> dict[str, Any]:
            c: Cell = counts.cells[(m, b)]
            ci = counts.ci[(m, b)]
            d: dict[str, Any] = {
                "n": c.n,
                "hit": c.hit,
                "miss": c.miss,
                "no_prediction": c.no_prediction,
                "errors": c.error,
                "hit_rate": json_number(Fraction(c.hit, c.n), 6) if c.n else None,
                "hit_rate_ci95": [json_number(ci[0], 6), json_number(ci[1], 6)] if ci else None,
                "labeled": c.labeled,
            }
            d.update(c.modes)
            d.update(c.apart)
            return d

        out: dict[str, Any] = {
            "schema": SUMMARY_SCHEMA,
            "study": study.name,
            "rules": {
                "n": "hit + miss + no_prediction; errors counted apart, excluded from n",
                "hit_rate": "hit / n, rounded once to 6 decimals",
                "pooled": "raw counts summed over benchmarks",
                "failure_modes": "counts of labeled misses; unlabeled, judge_unavailable and pending apart",
            },
            "bootstrap": {"seed": study.bootstrap_seed, "resamples": study.bootstrap_resamples, "level": 0.95, "cluster": "image"},
            "models": {
                m: {"benchmarks": {b: cell_json(m, b) for b in counts.benchmarks_of[m]}, POOLED: cell_json(m, POOLED)}
                for m in counts.models
            },
        }
        if study.notes:  # only when a study has them, so other studies' summaries keep their bytes
            out["notes"] = study.notes
        return [JsonDocument("summary.json", out)]
