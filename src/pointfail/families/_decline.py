"""Declines: how a model says the referent is not in the image (helper module, not a family).

Absent referents are measured apart from the hit rate (the grounding-metrics document's
``correctly_declined`` / ``hallucinated_a_location`` / ``missed_a_present_referent``), so a parser must
tell an explicit decline from a reply it cannot read. A family declares its convention with three
class attributes of :class:`pointfail.families.Family`:

* ``decline_prompt``: the sentence appended to the prompt of every sample whose suite may hold absent
  referents (``Sample.metadata["absent_possible"]``), telling the model how to decline in the family's
  own answer format; ``None`` for families prompted with task tokens only (PaliGemma ``detect``,
  Kosmos-2 ``<grounding>``, Florence-2 task tokens), whose prompt cannot carry an instruction.
* ``decline_answer``: the exact reply that the sentence asks for (tests and generators write it).
* ``declines_by_silence``: the family declines by answering with no location at all (the task-token
  families: a detection with nothing found writes no location tokens), so a reply with no
  coordinates is its decline.

A reply is read as a decline (``ParseResult.reason == "declined"``, flag ``declined``) only when it
holds no point and no box and either matches :data:`DECLINE_PATTERNS` (the generic English phrases
every family's models use, plus the JSON forms the prompts ask for) or the family declines by
silence. Every pattern is a plain alternation without nested repetition: linear time.
"""

from __future__ import annotations

import re

__all__ = ["DECLINE_PATTERNS", "NOT_PRESENT", "reads_as_decline"]

NOT_PRESENT = "not present"
"""The decline answer asked of families with no decline syntax of their own."""

DECLINE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # the English phrases models write when the referent is missing ("not present", "There are none.",
    # "There is no such button", "I cannot find ...", "The link does not appear on the page")
    ("english", re.compile(
        r"\bnot\s+(?:present|visible|shown|found|in\s+the\s+(?:image|screenshot|screen|picture|page))\b"
        r"|\bthere\s+(?:is|are)\s+(?:no|none)\b"
        r"|\bno\s+such\b"
        r"|\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to)\s+(?:find|locate|see|identify)\b"
        r"|\b(?:does|do)\s*(?:not|n't)\s+(?:exist|appear)\b",
        re.I)),
    # PointerBench-style JSON with a null location: {"point": null} / {"bbox": null}
    ("json_null", re.compile(r"[\"']?\b(?:point|bbox|point_2d|bbox_2d|box_2d)\b[\"']?\s*:\s*null\b", re.I)),
    # an empty JSON list as the whole answer (Qwen-VL and Gemini grounding lists with nothing found)
    ("empty_list", re.compile(r"\A\s*\[\s*\]\s*\Z")),
)
"""``(name, pattern)`` pairs; a reply with no coordinates that matches any of them is a decline."""


def reads_as_decline(answer: str) -> bool:
    """True when ``answer`` (the reply after reasoning and fences were stripped) says the referent is
    absent by one of :data:`DECLINE_PATTERNS`. The caller checks first that nothing was parsed."""
    return any(p.search(answer) for _, p in DECLINE_PATTERNS)
