"""Judge validity: a judge's labels against the oracle's on the same misses.

For every miss that the oracle labeled (``Record.judge`` or an ``other_judgments`` entry with judge
``oracle``) and that the compared judge has a judgment for, the pair (oracle label, judge verdict) is
counted. Definitions (``n`` = such pairs):

* ``abstentions``: pairs where the judge's status is ``unlabeled``; ``abstention_rate`` = abstentions /
  (abstentions + labeled pairs) (``judge_unavailable`` and ``pending`` are not verdicts and are counted
  apart, in ``unavailable`` and ``pending``).
* ``confusion``: rows = oracle label, columns = judge label plus ``unlabeled``, integer counts, labels in
  ``records.FAILURE_MODES`` order.
* Over the pairs where both labeled (``n_labeled``): ``accuracy`` (share on the diagonal), per label
  ``precision`` = diag / column total and ``recall`` = diag / row total (``None`` when the total is 0),
  and Cohen's kappa (Cohen 1960): ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and
  ``p_e = sum_k (row_k / n) (col_k / n)``; ``None`` when ``p_e == 1`` (both raters used one label only).

:func:`agreement` is the one implementation of these counts: the aggregate's ``judge_agreement`` table
(:mod:`pointfail.aggregate`, the study's primary judge in place of the oracle) calls it too, with a
reference label of ``None`` where the primary judge gave no label (such a pair counts in ``n`` and,
by the compared judge's status, in ``abstentions``/``unavailable``/``pending``, never in the confusion
matrix; ``reference_unlabeled`` counts them).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional, Union

from pointfail.records import FAILURE_MODES, Judgment, Record, iter_records, records_files

ORACLE = "oracle"


def _judgments(rec: Record) -> list[Judgment]:
    out = [rec.judge] if rec.judge is not None else []
    return out + list(rec.other_judgments)


def collect_pairs(records_dir: Union[str, Path]) -> dict[str, list[tuple[str, str, Optional[str]]]]:
    """Per compared judge name, the list of ``(oracle_label, judge_status, judge_label)`` over misses
    the oracle labeled. Reads every records file of ``records_dir`` (:func:`pointfail.records.records_files`).

    Raises:
        RecordError: an invalid records line (file and line named).
    """
    pairs: dict[str, list[tuple[str, str, Optional[str]]]] = {}
    for path in records_files(records_dir):
        for rec in iter_records(path):
            if rec.outcome != "miss":
                continue
            js = _judgments(rec)
            oracle = next((j for j in js if j.judge == ORACLE and j.status == "labeled"), None)
            if oracle is None or oracle.label is None:
                continue
            for j in js:
                if j.judge != ORACLE:
                    pairs.setdefault(j.judge, []).append((oracle.label, j.status, j.label))
    return dict(sorted(pairs.items()))


def agreement(pairs: Iterable[tuple[Optional[str], str, Optional[str]]]) -> dict[str, Any]:
    """Agreement statistics for one judge (definitions in the module docstring). ``pairs`` are
    ``(reference_label | None, judge_status, judge_label)``, any iterable (read once: the aggregate
    passes ``Counter.elements()`` of its fold); the reference is the oracle here and the study's
    primary judge in the aggregate's table.

    Returns:
        ``{"n", "n_labeled", "agree", "abstentions", "abstention_rate", "unavailable", "pending",
        "reference_unlabeled", "accuracy", "kappa", "labels", "confusion": {oracle_label:
        {judge_label|"unlabeled": count}}, "per_label": {label: {"precision", "recall",
        "support"}}}``; ``agree`` = pairs both labeled alike; rates are floats or ``None``.
    """
    labels = list(FAILURE_MODES)
    confusion: dict[str, dict[str, int]] = {o: {j: 0 for j in [*labels, "unlabeled"]} for o in labels}
    n = unavailable = pending = abstentions = reference_unlabeled = 0
    for oracle_label, status, label in pairs:
        n += 1
        if oracle_label is None:
            reference_unlabeled += 1
        if status == "labeled" and label in labels:
            if oracle_label is not None:
                confusion[oracle_label][label] += 1
        elif status == "unlabeled":
            abstentions += 1
            if oracle_label is not None:
                confusion[oracle_label]["unlabeled"] += 1
        elif status == "judge_unavailable":
            unavailable += 1
        else:
            pending += 1
    n_labeled = sum(confusion[o][j] for o in labels for j in labels)
    row = {o: sum(confusion[o][j] for j in labels) for o in labels}
    col = {j: sum(confusion[o][j] for o in labels) for j in labels}
    diag = {k: confusion[k][k] for k in labels}
    per_label = {
        k: {
            "precision": diag[k] / col[k] if col[k] else None,
            "recall": diag[k] / row[k] if row[k] else None,
            "support": row[k],
        }
        for k in labels
    }
    accuracy = kappa = None
    if n_labeled:
        p_o = sum(diag.values()) / n_labeled
        p_e = sum((row[k] / n_labeled) * (col[k] / n_labeled) for k in labels)
        accuracy = p_o
        kappa = (p_o - p_e) / (1 - p_e) if p_e < 1 else None
    verdicts = n_labeled + abstentions
    return {
        "n": n,
        "n_labeled": n_labeled,
        "agree": sum(diag.values()),
        "abstentions": abstentions,
        "abstention_rate": abstentions / verdicts if verdicts else None,
        "unavailable": unavailable,
        "pending": pending,
        "reference_unlabeled": reference_unlabeled,
        "accuracy": accuracy,
        "kappa": kappa,
        "labels": labels,
        "confusion": confusion,
        "per_label": per_label,
    }


def agreement_report(records_dir: Union[str, Path], judge: Optional[str] = None) -> dict[str, Any]:
    """``{judge_name: agreement(...)}`` for every non-oracle judge found (or only ``judge``)."""
    pairs = collect_pairs(records_dir)
    if judge is not None:
        pairs = {judge: pairs.get(judge, [])}
    return {name: agreement(p) for name, p in pairs.items()}


def format_text(report: dict[str, Any], floatfmt: str = ".3f") -> str:
    """Human-readable tables (tabulate, ``github`` format) for :func:`agreement_report`'s result."""
    from tabulate import tabulate

    def f(v: Optional[float]) -> str:
        return "n/a" if v is None else format(v, floatfmt)

    parts = []
    for name, a in report.items():
        labels = a["labels"]
        parts.append(f"## {name} vs oracle")
        parts.append(
            f"misses compared: {a['n']}  labeled by both: {a['n_labeled']}  abstentions: {a['abstentions']} "
            f"(rate {f(a['abstention_rate'])})  unavailable: {a['unavailable']}  pending: {a['pending']}"
        )
        parts.append(f"accuracy: {f(a['accuracy'])}  Cohen's kappa: {f(a['kappa'])}")
        rows = [[o] + [a["confusion"][o][j] for j in labels + ["unlabeled"]] for o in labels]
        parts.append(tabulate(rows, headers=["oracle \\ judge"] + labels + ["unlabeled"], tablefmt="github"))
        rows = [[k, f(v["precision"]), f(v["recall"]), v["support"]] for k, v in a["per_label"].items()]
        parts.append(tabulate(rows, headers=["label", "precision", "recall", "support"], tablefmt="github"))
    return "\n\n".join(parts) + "\n"
