"""``judge_agreement``: the study's primary judge against every further judge on the same misses."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Optional

from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.rows import Row
from pointfail.aggregate.registry import TableBuilder, register
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["JudgeAgreement"]


class _Pairs(dict[str, Counter[tuple[Optional[str], str, Optional[str]]]]):
    """Per further judge, a Counter of ``(primary label, other status, other label)``."""

    def merge(self, other: "_Pairs") -> None:
        for judge, c in other.items():
            self.setdefault(judge, Counter()).update(c)


@register
class JudgeAgreement(TableBuilder):
    """``judge_agreement``: per cell and further judge, the misses compared, those both labeled, those
    labeled alike and the abstentions and outages of the further judge, counted by
    :func:`pointfail.judge.agreement.agreement` (the one implementation of these counts) from a
    ``Counter`` of ``(primary label, other status, other label)``; no file when no miss has a
    further judgment."""

    name = "judge_agreement"

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, str], _Pairs] = {}

    def add(self, row: Row, sample: int) -> None:
        """Count a miss's further judgments into its cell."""
        if row.outcome != "miss" or not row.other:
            return
        per_judge = self._pairs.setdefault((row.model, row.benchmark), _Pairs())
        for judge, status, label in row.other:
            per_judge.setdefault(judge, Counter())[(row.label, status, label)] += 1

    def tables(self, study: "Study") -> list[Output]:
        """The judge-agreement table."""
        if not self._pairs:
            return []
        from pointfail.judge.agreement import agreement

        columns = [text("model"), text("benchmark"), text("other_judge"), count("misses"), count("both_labeled"),
                   count("agree"), pct("agreement_pct"), count("other_unlabeled"), count("other_unavailable")]
        rows = []
        pairs = with_pooled(self._pairs, _Pairs)
        for key in study.counts.keys():
            per_judge = pairs.get(key, _Pairs())
            for judge in sorted(per_judge):
                a = agreement(per_judge[judge].elements())
                rows.append([*key, judge, a["n"], a["n_labeled"], a["agree"], rate(a["agree"], a["n_labeled"]),
                             a["abstentions"], a["unavailable"]])
        notes = ["Agreement of each further judge with the study's primary judge on the same misses: % of misses both labeled that got the same label."]
        return [Table("judge_agreement", f"Judge agreement: {study.name}", notes, columns, rows)]
