"""Self-consistency of a model judge: each miss judged ``K`` times, how often the label changes.

``pointfail judge STUDY --judge ollama --repeats K`` runs the judge once in its role (primary or other,
named as always, e.g. ``ollama:gemma4:31b``) and ``K - 1`` more times as further judges named
``<name>@repeat<r>`` (``r = 2..K``), each a complete judgment stored in ``Record.other_judgments``
with every attempt's raw reply, like any judge's. Repeat ``r`` sends seeds ``seed + (r - 1) *
max_attempts + k - 1`` for its attempts ``k``, so no two repeats share a seed; with greedy decoding
(temperature 0, the study's default) a deterministic server gives the same reply whatever the seed,
so ``--temperature`` above 0 is what makes repeats differ when the server samples.

:func:`self_consistency` reads the repeats back: per failure mode the first run gave, the misses with
at least one repeat and how many of them got a different verdict (another label, or no label) in
some repeat.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Optional

from pointfail.judge.miss import Miss
from pointfail.records import FAILURE_MODES, Judgment

__all__ = ["REPEAT_SEP", "Repeat", "base_name", "repeat_name", "self_consistency"]

REPEAT_SEP = "@repeat"
_REPEAT = re.compile(r"^(?P<base>.+)@repeat(?P<r>[0-9]+)$")


def repeat_name(base: str, r: int) -> str:
    """``<base>@repeat<r>``."""
    return f"{base}{REPEAT_SEP}{r}"


def base_name(name: str) -> Optional[tuple[str, int]]:
    """``(base, r)`` for a repeat's name, else ``None``."""
    m = _REPEAT.match(name)
    return (m.group("base"), int(m.group("r"))) if m else None


@dataclass
class Repeat:
    """Repeat ``r`` of a judge: the inner judge (made with this repeat's seed) under the name
    ``<inner name>@repeat<r>``. Resumes its own ``judge_unavailable`` verdicts as the inner judge does."""

    inner: Any
    r: int

    @property
    def name(self) -> str:
        """``<inner name>@repeat<r>``."""
        return repeat_name(self.inner.name, self.r)

    async def __aenter__(self) -> "Repeat":
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.inner.__aexit__(*exc)

    async def judge_miss(self, miss: Miss) -> Judgment:
        """The inner judge's verdict, renamed (its resume slot renamed to the inner judge's name)."""
        resume = miss.resume.model_copy(update={"judge": self.inner.name}) if miss.resume is not None else None
        j = await self.inner.judge_miss(replace(miss, resume=resume))
        return j.model_copy(update={"judge": self.name})


def self_consistency(units: list[Any], base: str) -> dict[str, Any]:
    """How often judge ``base``'s verdict changes across its repeats (module docstring).

    Args:
        units: :func:`pointfail.judge.agreement.collect_units`.
        base: the judge's name as stored (its first run).

    Returns:
        ``{"judge", "repeats" (repeat names found), "misses" (base labeled, at least one repeat
        verdict), "changed", "change_rate" (None when misses is 0), "per_mode": {mode: {"misses",
        "changed", "change_rate"}}}``.
    """
    names = sorted({n for u in units for n in u.verdicts if (b := base_name(n)) is not None and b[0] == base},
                   key=lambda n: base_name(n)[1])  # type: ignore[index]
    per = {m: [0, 0] for m in FAILURE_MODES}
    for u in units:
        first = u.verdicts.get(base)
        if first is None or first[0] != "labeled" or first[1] not in per:
            continue
        reps = [u.verdicts[n] for n in names if n in u.verdicts and u.verdicts[n][0] in ("labeled", "unlabeled")]
        if not reps:
            continue
        per[first[1]][0] += 1
        if any(v[1] != first[1] for v in reps):
            per[first[1]][1] += 1
    misses = sum(v[0] for v in per.values())
    changed = sum(v[1] for v in per.values())
    return {"judge": base, "repeats": names, "misses": misses, "changed": changed,
            "change_rate": changed / misses if misses else None,
            "per_mode": {m: {"misses": a, "changed": c, "change_rate": c / a if a else None} for m, (a, c) in per.items()}}
