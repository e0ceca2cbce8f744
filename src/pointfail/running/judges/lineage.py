"""Which judges label a study's misses, and whether a model judge is out of the evaluated models' lineage.

The source study's judge is "out-of-family: none of the evaluated models is a Gemma derivative, so no
model is graded by a system that shares its training lineage or output habits" (pointfail-study.txt,
"The judge"). So a study that uses a model judge declares the judge's lineage, ``[judge] lineage =
["gemma"]``, and pointfail compares it with every evaluated model's lineage: the family's
:attr:`pointfail.families.Family.lineage` (the developers' model line and the language models its
checkpoints are built on) plus the model's own ``lineage = [...]`` in the study. A shared name refuses
the study before any work unless the study says ``[judge] allow_in_lineage = true``; the failure
composition table then says which models were graded in-lineage (:func:`lineage_note`).

Judges (``[study] primary_judge`` and ``[judge] compared``) are the judge registry's kinds
(:mod:`pointfail.running.judges.kinds`): ``oracle`` (exact, from scene graphs: only generated suites have them,
``needs_scene_graphs``), ``ollama`` and ``openai`` (``model_judge``), and any kind added as a file. The
primary judge's labels fill the tables; compared judges fill ``Record.other_judgments`` and
``judge_agreement``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["JudgePlan", "LineageError", "judge_plan", "lineage_clashes", "lineage_note", "model_judges"]


def model_judges() -> tuple[str, ...]:
    """The registry's kinds that are model judges (``JudgeKind.model_judge``)."""
    from pointfail.running.judges.kinds import list_kinds

    return tuple(k.name for k in list_kinds() if k.model_judge)


def _known_kinds(names: tuple[str, ...]) -> set[str]:
    """Those of ``names`` that are judge kinds (each looked up alone: only its module is entered)."""
    from pointfail.running.judges.kinds import get_kind

    known = set()
    for name in names:
        try:
            get_kind(name)
        except KeyError:
            continue
        known.add(name)
    return known


class LineageError(ValueError):
    """The study's judges cannot be used as written: an unknown judge, the oracle with no scene graphs,
    a model judge without a declared lineage, or a judge sharing lineage with an evaluated model
    without ``allow_in_lineage = true``."""


@dataclass(frozen=True)
class JudgePlan:
    """``primary`` judge, ``compared`` judges (in order), the judge model's name (``model``: the
    ``[judge]`` ``ollama_model``/``openai_model`` of the model judge, if any), its declared
    ``lineage``, and ``allow_in_lineage``."""

    primary: str
    compared: tuple[str, ...]
    model: Optional[str]
    lineage: tuple[str, ...]
    allow_in_lineage: bool

    @property
    def judges(self) -> tuple[str, ...]:
        """Primary first, then the compared ones."""
        return (self.primary, *self.compared)


def _models(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return list(raw.get("models", []))


def model_lineage(model: dict[str, Any]) -> tuple[str, ...]:
    """A study model's lineage: its family's :attr:`~pointfail.families.Family.lineage` plus the
    model's own ``lineage`` list, lower-cased, sorted, without duplicates."""
    from pointfail.families import get_family

    try:
        fam = tuple(getattr(get_family(model["family"]), "lineage", ()))
    except KeyError:
        fam = ()
    return tuple(sorted({x.lower() for x in (*fam, *model.get("lineage", []))}))


def judge_plan(raw: dict[str, Any]) -> JudgePlan:
    """The judges of a study (its TOML as a mapping) and their lineage.

    Raises:
        LineageError: see the class (every rule is checked before any work).
    """
    study = raw.get("study", {})
    jcfg = raw.get("judge", {})
    primary = study.get("primary_judge") or "oracle"
    compared = tuple(jcfg.get("compared", []))
    from pointfail.running.judges.kinds import get_kind, kind_names

    known = _known_kinds((primary, *compared))
    problems = [f"unknown judge {j!r} (known: {', '.join(kind_names())})" for j in (primary, *compared)
                if j not in known]
    if primary in compared:
        problems.append(f"judge {primary!r} is both primary and compared")
    graphs = [j for j in (primary, *compared) if j in known and get_kind(j).needs_scene_graphs]
    if graphs and not any(b.get("loader") == "suite" for b in raw.get("benchmarks", [])):
        problems.append(f"the {graphs[0]} judge needs scene graphs, which only generated suites (loader = \"suite\") "
                        "have; this study has none: name a model judge (primary_judge = \"ollama\")")
    model_judges_used = [j for j in (primary, *compared) if j in known and get_kind(j).model_judge]
    model = None
    if model_judges_used:
        model = get_kind(model_judges_used[0]).model_name(jcfg)
    lineage = tuple(sorted({str(x).lower() for x in jcfg.get("lineage", [])}))
    if model_judges_used and not lineage:
        problems.append(f"[judge] lineage is not declared for the {model_judges_used[0]} judge ({model}): declare the "
                        "model lines it derives from, e.g. lineage = [\"gemma\"], so out-of-family can be checked")
    allow = bool(jcfg.get("allow_in_lineage", False))
    plan = JudgePlan(primary, compared, model, lineage, allow)
    if not problems and model_judges_used:
        clashes = lineage_clashes(raw, plan)
        if clashes and not allow:
            problems.append("the judge shares lineage with evaluated models: "
                            + "; ".join(f"{m} ({', '.join(c)})" for m, c in clashes)
                            + ". Use an out-of-lineage judge, or say [judge] allow_in_lineage = true (the tables "
                            "will say so)")
    if problems:
        raise LineageError("study judges:\n  " + "\n  ".join(problems))
    return plan


def lineage_clashes(raw: dict[str, Any], plan: JudgePlan) -> list[tuple[str, tuple[str, ...]]]:
    """``[(model name, shared lineage names)]`` for every study model sharing a lineage with the
    judge, in study order."""
    out = []
    for m in _models(raw):
        shared = tuple(sorted(set(model_lineage(m)) & set(plan.lineage)))
        if shared:
            out.append((m.get("name", "?"), shared))
    return out


def lineage_note(raw: dict[str, Any]) -> Optional[str]:
    """One sentence for the failure composition table: the model judge, its declared lineage and
    whether it is out of every evaluated model's lineage (or, with ``allow_in_lineage``, which models
    it shares a lineage with). ``None`` when no model judge labels the study (the oracle is exact) or
    the judges are not valid (:func:`judge_plan` raises then, before any work)."""
    try:
        plan = judge_plan(raw)
    except LineageError:
        return None
    mj = model_judges()
    used = [j for j in plan.judges if j in mj]
    if not used:
        return None
    role = "primary" if plan.primary in mj else "compared"
    who = f"{used[0]} judge {plan.model or '(model not named)'} ({role}), lineage {', '.join(plan.lineage)}"
    clashes = lineage_clashes(raw, plan)
    if not clashes:
        return f"{who}: out of the lineage of every evaluated model."
    return (f"{who}: IN-LINEAGE for " + "; ".join(f"{m} (shares {', '.join(c)})" for m, c in clashes)
            + ", allowed explicitly by the study (allow_in_lineage = true).")
