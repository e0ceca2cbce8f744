"""Judge validity: agreement between any two judges of a study, and among all of them.

A study's misses carry verdicts from several judges: the primary one (``Record.judge``) and the
further ones (``Record.other_judgments``), each named as stored: ``oracle``, ``ollama:<model>``,
``openai:<model>``, ``human:<annotator>``. Agreement is measured over the misses that both judges of
a pair **labeled** (status ``labeled``); an abstention (``unlabeled``: a model judge with no clean label
in five attempts, a person's "can't tell") is a verdict that gives no label, counted in the confusion
matrix's ``unlabeled`` row and column but in no coefficient; ``judge_unavailable`` and ``pending`` are not
verdicts and are counted apart.

Per pair ``A``, ``B`` (:func:`pair_agreement`): the confusion matrix (rows ``A``, columns ``B``, labels in
``records.FAILURE_MODES`` order plus ``unlabeled``), per failure mode precision (diag / column total)
and recall (diag / row total) with ``A`` as the reference, percent agreement, Cohen's kappa and
Krippendorff's alpha (nominal), each exact with a 95% percentile bootstrap interval that resamples
images (a miss's image sha256, else its path), and "undefined" with the reason in words where a
coefficient does not exist (:mod:`pointfail.judge.coefficients` has the formulas). Over all judges of a
study (and over the human annotators alone), Krippendorff's alpha with missing values
(:func:`group_alpha`). Seeds derive from the study's ``[aggregate] bootstrap_seed`` and the judges'
names (:func:`pointfail.metrics.derive_seed`), so every interval regenerates.

:func:`agreement` is the per-cell count the aggregate's ``judge_agreement`` table makes (the study's
primary judge against each further judge), from ``(reference label | None, status, label)`` pairs:

* ``abstentions``: pairs where the judge's status is ``unlabeled``; ``abstention_rate`` = abstentions /
  (abstentions + labeled pairs) (``judge_unavailable`` and ``pending`` counted in ``unavailable`` and
  ``pending``).
* ``confusion``: rows = reference label, columns = judge label plus ``unlabeled``.
* Over the pairs both labeled (``n_labeled``): ``accuracy``, per label ``precision``/``recall``
  (``None`` when the total is 0), Cohen's ``kappa`` and Krippendorff's ``alpha`` (``None`` when
  undefined, with ``kappa_undefined``/``alpha_undefined`` saying why). A pair whose reference gave no
  label counts in ``n`` and ``reference_unlabeled``, never in the confusion matrix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional, Union

from pointfail.judge.repeats import base_name, self_consistency
from pointfail.records import FAILURE_MODES, iter_records, records_files

ORACLE = "oracle"
HUMAN_PREFIX = "human:"
"""Judge names of human annotators: ``human:<annotator>`` (:mod:`pointfail.running.judges.human`)."""
UNLABELED = "unlabeled"
LEVEL = 0.95


class AgreementError(ValueError):
    """A judge name that matches no judge of the study (or more than one); the message lists them."""


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
    from pointfail.judge.coefficients import alpha_from_coincidence, kappa_from_confusion

    m = [[confusion[o][j] for j in labels] for o in labels]
    accuracy = sum(diag.values()) / n_labeled if n_labeled else None
    kappa_x, kappa_why = kappa_from_confusion(m, labels)
    alpha_x, alpha_why = alpha_from_coincidence([[m[i][j] + m[j][i] for j in range(len(labels))]
                                                 for i in range(len(labels))], labels)
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
        "kappa": float(kappa_x) if kappa_x is not None else None,
        "kappa_exact": kappa_x,
        "kappa_undefined": kappa_why,
        "alpha": float(alpha_x) if alpha_x is not None else None,
        "alpha_exact": alpha_x,
        "alpha_undefined": alpha_why,
        "labels": labels,
        "confusion": confusion,
        "per_label": per_label,
    }




@dataclass(frozen=True)
class Unit:
    """One miss and every verdict on it: ``verdicts`` maps a judge name to ``(status, label)``;
    ``cluster`` is its image (sha256, else path), the bootstrap's resampling unit."""

    model: str
    benchmark: str
    sample_id: str
    cluster: str
    verdicts: dict[str, tuple[str, Optional[str]]] = field(default_factory=dict)


def collect_units(records_dir: Union[str, Path]) -> list[Unit]:
    """Every miss of ``records_dir`` with at least one judgment (:func:`pointfail.records.records_files`,
    sorted), in file and line order.

    Raises:
        RecordError: an invalid records line (file and line named).
    """
    units = []
    for path in records_files(records_dir):
        for rec in iter_records(path):
            if rec.outcome != "miss":
                continue
            js = ([rec.judge] if rec.judge is not None else []) + list(rec.other_judgments)
            if not js:
                continue
            units.append(Unit(rec.model, rec.benchmark, rec.sample_id, rec.image.sha256 or rec.image.path,
                              {j.judge: (j.status, j.label) for j in js}))
    return units


def judge_names(units: Iterable[Unit]) -> list[str]:
    """Every judge name found, sorted."""
    return sorted({name for u in units for name in u.verdicts})


def resolve_judge(name: str, names: list[str]) -> str:
    """A judge name as the user wrote it, as stored: the exact name, or a kind (``ollama``, ``openai``,
    ``human``) that prefixes exactly one stored name (``ollama`` → ``ollama:gemma4:31b``).

    Raises:
        AgreementError: no such judge, or a kind that matches several (they are listed).
    """
    if name in names:
        return name
    matches = [n for n in names if n.startswith(name + ":")]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(names) or "none"
    if matches:
        raise AgreementError(f"judge {name!r} matches {len(matches)} judges ({', '.join(matches)}): name one")
    raise AgreementError(f"no judge {name!r} in these records (judges found: {known})")


def _coef(value: tuple[Optional[Fraction], Optional[str]], reps: Any, level: float) -> dict[str, Any]:
    from pointfail.judge.coefficients import percentile

    x, why = value
    interval, defined = (None, 0)
    if x is not None and reps is not None:
        interval, defined = percentile(reps, level)
    return {"value": x, "undefined": why, "interval": interval, "defined_resamples": defined}


def _seed(seed: int, *keys: str) -> int:
    from pointfail.metrics import derive_seed

    return derive_seed(seed, "judge-agreement", *keys)


def pair_agreement(units: list[Unit], a: str, b: str, *, seed: int = 0, resamples: int = 1000,
                   level: float = LEVEL) -> dict[str, Any]:
    """Agreement of judges ``a`` and ``b`` (names as stored) over the misses both judged (rules in the
    module docstring).

    Returns:
        ``{"a", "b", "n" (misses both labeled), "compared" (misses both have a verdict on), "images"
        (distinct images among the ``n``), "labels", "confusion" ({a_label|"unlabeled": {b_label|
        "unlabeled": count}}), "not_verdicts" ({"a"|"b": {status: count}} for judge_unavailable and
        pending), "per_mode" ({label: {"precision", "recall", "support_a", "support_b"}}, ``None`` when
        a total is 0), "percent_agreement", "cohen_kappa", "krippendorff_alpha" (floats or ``None``),
        each with ``<name>_interval`` ([low, high] or ``None``), ``<name>_undefined`` (the reason in
        words, or ``None``) and ``<name>_exact`` (a Fraction, for tables), "bootstrap" ({"unit":
        "image", "resamples", "seed", "level", "defined_resamples": {name: count}})}``.
    """
    import numpy as np

    from pointfail.judge.coefficients import (
        alpha_from_coincidence,
        bootstrap_matrices,
        kappa_from_confusion,
        percent_from_confusion,
        replicate_stats,
    )

    labels: list[str] = list(FAILURE_MODES)
    axis = [*labels, UNLABELED]
    index: dict[str, int] = {k: i for i, k in enumerate(labels)}
    confusion = {x: {y: 0 for y in axis} for x in axis}
    not_verdicts: dict[str, dict[str, int]] = {"a": {}, "b": {}}
    per_cluster: dict[str, Any] = {}
    compared = 0
    for u in units:
        va, vb = u.verdicts.get(a), u.verdicts.get(b)
        if va is None or vb is None:
            continue
        compared += 1
        cells: list[Optional[str]] = []
        for side, (status, label) in (("a", va), ("b", vb)):
            if status == "labeled" and label in index:
                cells.append(label)
            elif status == UNLABELED:
                cells.append(UNLABELED)
            else:
                not_verdicts[side][status] = not_verdicts[side].get(status, 0) + 1
                cells.append(None)
        if cells[0] is None or cells[1] is None:
            continue
        confusion[cells[0]][cells[1]] += 1
        if cells[0] != UNLABELED and cells[1] != UNLABELED:
            mat = per_cluster.setdefault(u.cluster, np.zeros((len(labels), len(labels))))
            mat[index[cells[0]], index[cells[1]]] += 1
    m = [[confusion[x][y] for y in labels] for x in labels]
    n = sum(map(sum, m))
    rows = [sum(r) for r in m]
    cols = [sum(m[i][j] for i in range(len(labels))) for j in range(len(labels))]
    per_mode = {
        k: {"precision": m[i][i] / cols[i] if cols[i] else None, "recall": m[i][i] / rows[i] if rows[i] else None,
            "support_a": rows[i], "support_b": cols[i]}
        for i, k in enumerate(labels)
    }
    reps = None
    pair_seed = _seed(seed, a, b)
    if per_cluster:
        mats = bootstrap_matrices([per_cluster[c] for c in sorted(per_cluster)], seed=pair_seed, resamples=resamples)
        reps = replicate_stats(mats, symmetric=False)
    sym = [[m[i][j] + m[j][i] for j in range(len(labels))] for i in range(len(labels))]
    coefs = {
        "percent_agreement": _coef(percent_from_confusion(m), reps and reps["percent"], level),
        "cohen_kappa": _coef(kappa_from_confusion(m, labels), reps and reps["kappa"], level),
        "krippendorff_alpha": _coef(alpha_from_coincidence(sym, labels), reps and reps["alpha"], level),
    }
    out: dict[str, Any] = {"a": a, "b": b, "n": n, "compared": compared, "images": len(per_cluster),
                           "labels": labels, "confusion": confusion, "not_verdicts": not_verdicts,
                           "per_mode": per_mode}
    for name, c in coefs.items():
        out[name] = float(c["value"]) if c["value"] is not None else None
        out[f"{name}_exact"] = c["value"]
        out[f"{name}_interval"] = list(c["interval"]) if c["interval"] is not None else None
        out[f"{name}_undefined"] = c["undefined"]
    out["bootstrap"] = {"unit": "image", "resamples": resamples, "seed": pair_seed, "level": level,
                        "defined_resamples": {k: c["defined_resamples"] for k, c in coefs.items()}}
    return out


def group_alpha(units: list[Unit], judges: list[str], *, seed: int = 0, resamples: int = 1000,
                level: float = LEVEL) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) over ``judges`` together, with missing values: each miss is a
    unit, each judge that labeled it gives one value; misses labeled by fewer than two of them are not
    pairable. Bootstrap over images as :func:`pair_agreement`.

    Returns:
        ``{"judges", "units" (pairable misses), "values" (labels in them), "krippendorff_alpha",
        "krippendorff_alpha_interval", "krippendorff_alpha_undefined", "krippendorff_alpha_exact",
        "bootstrap"}``.
    """
    import numpy as np

    from pointfail.judge.coefficients import alpha_from_coincidence, bootstrap_matrices, coincidence, replicate_stats

    labels = list(FAILURE_MODES)
    index = {k: i for i, k in enumerate(labels)}
    counts_all = []
    per_cluster: dict[str, Any] = {}
    for u in units:
        counts = [0] * len(labels)
        for j in judges:
            v = u.verdicts.get(j)
            if v is not None and v[0] == "labeled" and v[1] in index:
                counts[index[v[1]]] += 1
        if sum(counts) < 2:
            continue
        counts_all.append(counts)
        unit_o = np.array([[float(x) for x in r] for r in coincidence([counts])])
        per_cluster[u.cluster] = per_cluster.get(u.cluster, 0) + unit_o
    total = coincidence(counts_all) if counts_all else [[Fraction(0)] * len(labels) for _ in labels]
    value = alpha_from_coincidence(total, labels)
    if not counts_all:
        value = (None, f"no miss was labeled by two or more of {', '.join(judges)}")
    reps = None
    gseed = _seed(seed, *judges)
    if per_cluster:
        mats = bootstrap_matrices([per_cluster[c] for c in sorted(per_cluster)], seed=gseed, resamples=resamples)
        reps = replicate_stats(mats, symmetric=True)["alpha"]
    c = _coef(value, reps, level)
    return {"judges": list(judges), "units": len(counts_all), "values": sum(map(sum, counts_all)),
            "krippendorff_alpha": float(c["value"]) if c["value"] is not None else None,
            "krippendorff_alpha_exact": c["value"],
            "krippendorff_alpha_interval": list(c["interval"]) if c["interval"] is not None else None,
            "krippendorff_alpha_undefined": c["undefined"],
            "bootstrap": {"unit": "image", "resamples": resamples, "seed": gseed, "level": level,
                          "defined_resamples": c["defined_resamples"]}}


def agreement_report(records_dir: Union[str, Path], between: Optional[tuple[str, str]] = None, *,
                     seed: int = 0, resamples: int = 1000) -> dict[str, Any]:
    """Agreement of two judges (``between``, names as the user wrote them: :func:`resolve_judge`) or of
    every pair of the study's judges, plus alpha over all judges and over the human annotators.

    Returns:
        ``{"judges": [names], "pairs": [pair_agreement(...)], "all_judges": group_alpha(...) | None
        (fewer than three judges, or ``between``), "humans": group_alpha(...) | None (fewer than two
        human annotators, or ``between``), "self_consistency": [per judge with repeats,
        :func:`pointfail.judge.repeats.self_consistency`]}``; repeats (``<name>@repeat<r>``) are left
        out of the pairs and of the group alphas.

    Raises:
        RecordError: an invalid records line. AgreementError: ``between`` names no single judge, or
            the same one twice.
    """
    units = collect_units(records_dir)
    names = judge_names(units)
    kw = {"seed": seed, "resamples": resamples}
    if between is not None:
        a, b_ = (resolve_judge(x, names) for x in between)
        if a == b_:
            raise AgreementError(f"--between names the same judge twice ({a})")
        pairs = [(a, b_)]
    else:
        firsts = [n for n in names if base_name(n) is None]  # repeats are read as self-consistency
        pairs = [(x, y) for i, x in enumerate(firsts) for y in firsts[i + 1:]]
    firsts = [n for n in names if base_name(n) is None]
    humans = [n for n in firsts if n.startswith(HUMAN_PREFIX)]
    repeated = sorted({rb[0] for n in names if (rb := base_name(n)) is not None and rb[0] in names})
    return {
        "judges": names,
        "pairs": [pair_agreement(units, a, b, **kw) for a, b in pairs],
        "all_judges": group_alpha(units, firsts, **kw) if between is None and len(firsts) >= 3 else None,
        "humans": group_alpha(units, humans, **kw) if between is None and len(humans) >= 2 else None,
        "self_consistency": [self_consistency(units, b) for b in repeated] if between is None else [],
    }


def report_json(report: dict[str, Any]) -> dict[str, Any]:
    """:func:`agreement_report`'s result without the exact Fractions (``*_exact``), for ``--json``."""
    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if not k.endswith("_exact")}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    return clean(report)


_COEFS = (("percent agreement", "percent_agreement"), ("Cohen's kappa", "cohen_kappa"),
          ("Krippendorff's alpha (nominal)", "krippendorff_alpha"))


def _coef_text(d: dict[str, Any], key: str) -> str:
    from pointfail.judge.coefficients import Coefficient

    interval = d.get(f"{key}_interval")
    return Coefficient(d.get(f"{key}_exact"), d.get(f"{key}_undefined"),
                       tuple(interval) if interval else None).text()


def format_text(report: dict[str, Any]) -> str:
    """Readable tables (tabulate, ``github`` format) for :func:`agreement_report`'s result; an undefined
    coefficient reads ``undefined: <reason>``."""
    from tabulate import tabulate

    def f(v: Optional[float]) -> str:
        return "undefined (no such label)" if v is None else format(v, ".3f")

    parts = []
    for p in report["pairs"]:
        axis = [*p["labels"], UNLABELED]
        parts.append(f"## {p['a']} vs {p['b']}")
        nv = "; ".join(f"{p[s]} {k}: {v}" for s in ("a", "b") for k, v in sorted(p["not_verdicts"][s].items()))
        parts.append(f"misses both judged: {p['compared']}  both labeled: {p['n']} (on {p['images']} images)"
                     + (f"  not verdicts: {nv}" if nv else ""))
        b = p["bootstrap"]
        parts.append("\n".join(f"{title}: {_coef_text(p, key)}" for title, key in _COEFS)
                     + f"\n(intervals: {int(b['level'] * 100)}% percentile bootstrap over images, "
                     f"{b['resamples']} resamples)")
        rows = [[x] + [p["confusion"][x][y] for y in axis] for x in axis]
        parts.append(tabulate(rows, headers=[f"{p['a']} \\ {p['b']}"] + axis, tablefmt="github"))
        rows = [[k, f(v["precision"]), f(v["recall"]), v["support_a"], v["support_b"]] for k, v in p["per_mode"].items()]
        parts.append(tabulate(rows, headers=["failure mode", f"precision (vs {p['a']})", f"recall (vs {p['a']})",
                                             f"n {p['a']}", f"n {p['b']}"], tablefmt="github"))
    for c in report.get("self_consistency", []):
        rows = [[m, v["misses"], v["changed"], "undefined (no miss)" if v["change_rate"] is None else
                 format(v["change_rate"], ".3f")] for m, v in c["per_mode"].items()]
        parts.append(f"## self-consistency of {c['judge']} ({1 + len(c['repeats'])} runs)\n"
                     + tabulate(rows, headers=["failure mode (first run)", "misses", "changed", "change rate"],
                                tablefmt="github"))
    for key, title in (("all_judges", "all judges"), ("humans", "human annotators")):
        g = report.get(key)
        if g:
            parts.append(f"## Krippendorff's alpha over {title} ({', '.join(g['judges'])})\n"
                         f"misses labeled by two or more: {g['units']}  alpha: {_coef_text(g, 'krippendorff_alpha')}")
    return "\n\n".join(parts) + "\n"
