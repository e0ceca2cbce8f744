"""``official``: each benchmark's own scoring rule beside pointfail's hit rate, and
``official_diagnostic``: the rows the two rules decide differently, and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from pointfail import metrics
from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.registry import ERROR_NOTE, TableBuilder, register
from pointfail.aggregate.rows import POOLED, Row
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["Official", "REASONS"]

POOLED_RULE = "(each benchmark's own rule)"

REASONS = ("left_out", "no_answer", "official_parser", "mean_over_points", "rule")
"""Why a row's official score differs from pointfail's headline (1 for a hit, 0 otherwise), first
matching reason wins: ``left_out``: the official script leaves the row out of its mean (a missing
answer or a reply its parser raises on, RoboPoint/RoboRefer); ``no_answer``: an infrastructure error
the official script counts (as wrong); ``official_parser``: the official parser reads the reply
differently and pointfail's reading, under the same rule, agrees with the headline;
``mean_over_points``: a partial score, the mean over several points or box cells (Where2Place,
RefSpatial); ``rule``: the rule itself decides otherwise (every point counted, counting rows, ``int()``
truncation against continuous pixels, mask binarization, edges)."""


class _OfficialCell:
    __slots__ = ("scores", "own", "rules", "left_out", "read_differently", "differ", "reasons")

    def __init__(self) -> None:
        self.scores = metrics.ExactSum()
        self.own = metrics.ExactSum()
        self.rules: set[str] = set()
        self.left_out = 0
        self.read_differently = 0
        self.differ = 0
        self.reasons = dict.fromkeys(REASONS, 0)

    def merge(self, other: "_OfficialCell") -> None:
        self.scores.merge(other.scores)
        self.own.merge(other.own)
        self.rules |= other.rules
        self.left_out += other.left_out
        self.read_differently += other.read_differently
        self.differ += other.differ
        for k, v in other.reasons.items():
            self.reasons[k] += v


def _reason(row: Row, headline: float) -> Optional[str]:
    """Why the official score and the headline decide the row differently (:data:`REASONS`), ``None``
    when they agree."""
    score = row.official_score
    if score is None:
        return "left_out"
    if score == headline:
        return None
    if row.outcome == "error":
        return "no_answer"
    if row.official_own_score is not None and row.official_own_score == headline:
        return "official_parser"
    if 0.0 < score < 1.0:
        return "mean_over_points"
    return "rule"


@register
class Official(TableBuilder):
    """``official``: per model and benchmark, the mean ``OfficialScore.score`` over the rows the
    official script counts (exact, :class:`pointfail.metrics.ExactSum`; infrastructure errors included
    where the script counts a missing answer, left out where it skips it), the replies the official
    parser read differently from pointfail's family parser and what pointfail's reading would score
    under the same rule, beside pointfail's n and hit rate. ``official_diagnostic``: per model and
    benchmark, how many rows the official rule and the headline decide differently, by
    :data:`REASONS`. No file when no record carries an official score."""

    name = "official"

    def __init__(self) -> None:
        self._any = False
        self._cells: dict[tuple[str, str], _OfficialCell] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a row's official score into its cell."""
        if row.official_rule is None:
            return
        self._any = True
        key = (row.model, row.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = _OfficialCell()
        c.rules.add(row.official_rule)
        if row.official_score is None:
            c.left_out += 1
        else:
            c.scores.add(row.official_score)
        if row.official_own_score is not None:
            c.read_differently += 1
        own = row.official_own_score if row.official_own_score is not None else row.official_score
        if own is not None:
            c.own.add(own)
        reason = _reason(row, 1.0 if row.outcome == "hit" else 0.0)
        if reason is not None:
            c.differ += 1
            c.reasons[reason] += 1

    def tables(self, study: "Study") -> list[Output]:
        """The official-rule table and its diagnostic."""
        if not self._any:
            return []
        columns = [text("model"), text("benchmark"), count("n_official"), pct("official_score_pct"),
                   count("left_out"), count("read_differently"), pct("own_reading_score_pct"), count("pointfail_n"),
                   pct("pointfail_hit_rate_pct"), text("rule")]
        diag_columns = [text("model"), text("benchmark"), count("n"), count("decided_differently"),
                        *[count(r) for r in REASONS]]
        rows, diag = [], []
        cells = with_pooled(self._cells, _OfficialCell)
        for key in study.counts.keys():
            o = cells.get(key)
            if o is None:
                continue
            c = study.counts.cells[key]
            rule = POOLED_RULE if key[1] == POOLED else "; ".join(sorted(o.rules))
            rows.append([*key, o.scores.count, o.scores.mean(), o.left_out, o.read_differently, o.own.mean(), c.n,
                         rate(c.hit, c.n), rule])
            diag.append([*key, o.scores.count + o.left_out, o.differ, *[o.reasons[r] for r in REASONS]])
        notes = [
            "Each benchmark's own scoring rule, as its official evaluation script computes it (OfficialScore in the "
            "records: the publisher's parser where the script reads the text itself, its int() truncation or raw "
            "float comparison, its box handling; sources in pointfail.benchmarks.official), beside pointfail's "
            "point-in-target hit rate; pooled rows pool the samples, not the percentages.",
            "n_official: the rows the official script counts. Infrastructure errors are in it as wrong where the "
            "script counts a missing answer (Point-Bench, ScreenSpot-Pro, PointerBench) and in left_out where it "
            "skips it (Where2Place, RefSpatial), with the replies its parser raises on.",
            "read_differently: replies the official parser reads otherwise than pointfail's family parser; "
            "own_reading_score_pct: the same rule over the same rows with pointfail's reading of those replies "
            "(left_out rows pointfail can read included).",
            ERROR_NOTE,
        ]
        diag_notes = [
            "DIAGNOSTIC, beside official.md: per model and benchmark, the rows whose official score differs from "
            "pointfail's headline (1 for a hit, 0 otherwise), and why, the first matching reason: "
            "left_out (the official script leaves the row out of its mean), no_answer (an infrastructure error the "
            "script counts wrong), official_parser (the official parser reads the reply otherwise, and pointfail's "
            "reading under the same rule agrees with the headline), mean_over_points (a partial score: the mean "
            "over several points or box cells), rule (the rule itself: every point counted, counting rows, int() "
            "truncation against continuous pixels, mask binarization, edges).",
            "n: rows with an official rule (n_official + left_out).",
        ]
        return [Table("official", f"Official-rule scores: {study.name}", notes, columns, rows),
                Table("official_diagnostic", f"Official rule against the headline, row by row: {study.name}",
                      diag_notes, diag_columns, diag)]
