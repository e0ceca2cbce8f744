"""``judge_agreement``: the study's primary judge against every further judge on the same misses;
``judge_validity``: per benchmark, which judge the failure composition rests on and how far the humans
who labeled its misses agree with it."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Optional

from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.rows import Row
from pointfail.aggregate.registry import TableBuilder, register
from pointfail.tables import Output, Table, count, fmt_fraction, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study
    from pointfail.records import Record

__all__ = ["JudgeAgreement", "JudgeValidity"]

UNDEFINED = "undefined"
COEFFICIENT_NOTE = ("kappa: Cohen's kappa; alpha: Krippendorff's alpha (nominal); both over the misses both "
                    "judges labeled, 3 decimals. \"undefined\": nothing to compare, or every label compared is the "
                    "same (chance agreement is then 1 and the coefficient 0/0); `pointfail judge-agreement` says "
                    "which, with bootstrap intervals over images.")


def coefficient(value: Optional[Fraction]) -> str:
    """A coefficient's cell: 3 decimals, half to even on the exact value, or ``undefined``."""
    return UNDEFINED if value is None else fmt_fraction(value, 3)


def percent(agree: int, n: int) -> str:
    """Percent agreement's cell: ``agree / n`` in percent, 1 decimal, or ``undefined`` when ``n == 0``."""
    return UNDEFINED if not n else fmt_fraction(Fraction(agree, n), 1, scale=100)


class _Pairs(dict[str, Counter[tuple[Optional[str], str, Optional[str]]]]):
    """Per further judge, a Counter of ``(primary label, other status, other label)``."""

    def merge(self, other: "_Pairs") -> None:
        for judge, c in other.items():
            self.setdefault(judge, Counter()).update(c)


@register
class JudgeAgreement(TableBuilder):
    """``judge_agreement``: per cell and further judge, the misses compared, those both labeled, those
    labeled alike, percent agreement, Cohen's kappa, Krippendorff's alpha and the abstentions and
    outages of the further judge, counted by :func:`pointfail.judge.agreement.agreement` (the one
    implementation of these counts) from a ``Counter`` of ``(primary label, other status, other
    label)``; no file when no miss has a further judgment."""

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
                   count("agree"), text("agreement_pct"), text("kappa"), text("alpha"), count("other_unlabeled"),
                   count("other_unavailable")]
        rows = []
        pairs = with_pooled(self._pairs, _Pairs)
        for key in study.counts.keys():
            per_judge = pairs.get(key, _Pairs())
            for judge in sorted(per_judge):
                a = agreement(per_judge[judge].elements())
                rows.append([*key, judge, a["n"], a["n_labeled"], a["agree"], percent(a["agree"], a["n_labeled"]),
                             coefficient(a["kappa_exact"]), coefficient(a["alpha_exact"]), a["abstentions"],
                             a["unavailable"]])
        notes = ["Agreement of each further judge with the study's primary judge on the same misses: % of misses "
                 "both labeled that got the same label.", COEFFICIENT_NOTE]
        return [Table("judge_agreement", f"Judge agreement: {study.name}", notes, columns, rows)]


@register
class JudgeValidity(TableBuilder):
    """``judge_validity``: per benchmark and primary judge (the judge whose labels fill the failure
    composition), the misses it labeled and, per human annotator (judges ``human:<annotator>``,
    :mod:`pointfail.running.judges.human`) who labeled some of them, the misses both labeled, percent agreement,
    Cohen's kappa and Krippendorff's alpha (by :func:`pointfail.judge.agreement.agreement`); a benchmark
    no human labeled says so. Pooled over models; no file when no miss has a primary judgment."""

    name = "judge_validity"

    def __init__(self) -> None:
        self._labeled: Counter[tuple[str, str]] = Counter()
        self._misses: Counter[tuple[str, str]] = Counter()
        self._humans: dict[tuple[str, str], _Pairs] = {}

    def observe(self, record: "Record") -> None:
        """Count a miss's primary verdict and the human verdicts beside it."""
        j = record.judge
        if record.outcome != "miss" or j is None:
            return
        key = (record.benchmark, j.judge)
        self._misses[key] += 1
        ref = j.label if j.status == "labeled" else None
        if ref is not None:
            self._labeled[key] += 1
        for o in record.other_judgments:
            if o.judge.startswith("human:"):
                self._humans.setdefault(key, _Pairs()).setdefault(o.judge, Counter())[(ref, o.status, o.label)] += 1

    def tables(self, study: "Study") -> list[Output]:
        """The judge-validity table."""
        if not self._misses:
            return []
        from pointfail.judge.agreement import agreement

        columns = [text("benchmark"), text("primary_judge"), count("misses"), count("labeled"), text("human"),
                   count("human_verdicts"), count("both_labeled"), text("agreement_pct"), text("kappa"), text("alpha")]
        rows: list[list[Any]] = []
        for key in sorted(self._misses):
            humans = self._humans.get(key, _Pairs())
            base = [*key, self._misses[key], self._labeled[key]]
            if not humans:
                rows.append([*base, "no human has labeled these misses", 0, 0, UNDEFINED, UNDEFINED, UNDEFINED])
                continue
            for human in sorted(humans):
                a = agreement(humans[human].elements())
                verdicts = a["n"] - a["unavailable"] - a["pending"]
                rows.append([*base, human, verdicts, a["n_labeled"], percent(a["agree"], a["n_labeled"]),
                             coefficient(a["kappa_exact"]), coefficient(a["alpha_exact"])])
        notes = ["Which judge the failure composition rests on, per benchmark, and its agreement with each person "
                 "who labeled its misses (`pointfail judge STUDY --judge human --labels FILE`, from the browser's "
                 "review mode): human_verdicts counts labels and can't-tell answers; agreement over the misses both "
                 "labeled.", COEFFICIENT_NOTE] + ([f"Judge weights: {study.judge_pin}"] if study.judge_pin else [])
        return [Table("judge_validity", f"Judge validity: {study.name}", notes, columns, rows)]
