"""``official``: each benchmark's own scoring rule beside pointfail's hit rate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pointfail import metrics
from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.registry import ERROR_NOTE, TableBuilder, register
from pointfail.aggregate.rows import POOLED, Row
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["Official"]

POOLED_RULE = "(each benchmark's own rule)"


class _OfficialCell:
    __slots__ = ("scores", "rules")

    def __init__(self) -> None:
        self.scores = metrics.ExactSum()
        self.rules: set[str] = set()

    def merge(self, other: "_OfficialCell") -> None:
        self.scores.merge(other.scores)
        self.rules |= other.rules


@register
class Official(TableBuilder):
    """``official``: the mean ``OfficialScore.score`` over the scored samples that carry one (exact,
    :class:`pointfail.metrics.ExactSum`), with the rule names, beside pointfail's n and hit rate; no
    file when no record carries an official score."""

    name = "official"

    def __init__(self) -> None:
        self._any = False
        self._cells: dict[tuple[str, str], _OfficialCell] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a row's official score into its cell."""
        if row.official_score is None:
            return
        self._any = True
        if row.outcome == "error":
            return
        key = (row.model, row.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = _OfficialCell()
        c.scores.add(row.official_score)
        c.rules.add(row.official_rule or "")

    def tables(self, study: "Study") -> list[Output]:
        """The official-rule table."""
        if not self._any:
            return []
        columns = [text("model"), text("benchmark"), count("n_official"), pct("official_score_pct"), count("pointfail_n"),
                   pct("pointfail_hit_rate_pct"), text("rule")]
        rows = []
        cells = with_pooled(self._cells, _OfficialCell)
        for key in study.counts.keys():
            o = cells.get(key)
            if o is None:
                continue
            c = study.counts.cells[key]
            rule = POOLED_RULE if key[1] == POOLED else "; ".join(sorted(o.rules))
            rows.append([*key, o.scores.count, o.scores.mean(), c.n, rate(c.hit, c.n), rule])
        notes = [
            "Each benchmark's own scoring rule (OfficialScore in the records, mean over scored samples with one) beside "
            "pointfail's point-in-target hit rate; pooled rows pool the samples, not the percentages.",
            ERROR_NOTE,
        ]
        return [Table("official", f"Official-rule scores: {study.name}", notes, columns, rows)]
