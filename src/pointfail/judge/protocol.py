"""The judge protocol: the fixed prompt and the strict single-label reading rule.

Source: ``shared/seeds/pointfail-study.txt``, section "The judge": for each miss the judge receives the
annotated image and a fixed prompt that restates the original instruction, explains that the green area
is the correct target and the red marker is where the model pointed, gives a one-line definition of each
of the four labels, and asks for exactly one label. A reply is accepted only if exactly one of the four
label names can be read from it; anything else is rejected and asked again, up to five attempts
(:data:`MAX_LABEL_ATTEMPTS`), after which the miss is ``unlabeled``.

The reading rule (:func:`read_label`), in order:

1. ``rejected_empty``: the reply is empty or whitespace only.
2. The reply is NFKC-normalized and lower-cased; each label name is searched with any run of
   ``_``, ``-`` or whitespace (or nothing) between its words, and not glued to a letter or digit on
   either side (``wrong_instances`` is not ``wrong_instance``; ``**Hallucinated**.`` is
   ``hallucinated``). Markdown and punctuation around a name therefore do not matter.
3. ``rejected_no_label``: no label name occurs.
4. ``rejected_two_labels``: two or more *different* label names occur (repeating the same one is fine).
5. ``rejected_negated``: an occurrence of the one label is negated: a negation word (``not``, ``no``,
   ``never``, ``none``, ``neither``, ``nor``, ``without``, ``non``, ``cannot`` and the ``n't`` forms
   ``isn't``, ``doesn't``, ``can't``, ``won't``, ...; apostrophe optional) comes before
   it with at most two words between, inside the same clause (clauses end at ``. , ; : ! ? \\n``).
   ``not hallucinated`` and ``It is not a wrong instance`` are negated; ``Not sure, but
   hallucinated`` is not (the comma ends the clause).
6. ``accepted``: otherwise, with that label.

Bounds (issue 12): only the first :data:`~pointfail.limits.MAX_JUDGE_REPLY_CHARS` characters of a
reply are read (a label is one word), and reading is linear in that length: clause starts are found
once, and each occurrence's negation is looked for only over the three words before it
(:func:`_window_start`). :func:`cap_reply` is how a reply is stored.

The verdict names are those of :class:`pointfail.records.JudgeAttempt`.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from typing import Any, Optional

from pointfail.limits import MAX_JUDGE_REPLY_CHARS
from pointfail.records import FAILURE_MODES, FailureMode

MAX_LABEL_ATTEMPTS = 5
"""Label attempts per miss before it is recorded ``unlabeled`` (the study's "up to five attempts")."""

VERDICTS: tuple[str, ...] = (
    "accepted",
    "rejected_two_labels",
    "rejected_negated",
    "rejected_no_label",
    "rejected_empty",
)
"""Every verdict :func:`read_label` can return (as documented on ``records.JudgeAttempt``)."""

LABEL_DEFINITIONS: dict[str, str] = {
    "off_by_pixels": "the red marker is just outside the green target, a near miss by a few pixels.",
    "wrong_instance": "the red marker is on another object of the same kind as the target "
    "(right category, wrong instance).",
    "wrong_category": "the red marker is on an object of a different kind than the target.",
    "hallucinated": "the red marker is on nothing in particular: background or empty space, "
    "not on any meaningful object.",
}
"""One line per failure mode, least to most severe (the study's taxonomy)."""

PROMPT_TEMPLATE = """You are grading one answer of a pointing model.

The model was given this image and the instruction:
"{instruction}"

{target_sentence}{outside_note}

Classify the miss with exactly one of these labels:
- off_by_pixels: {off_by_pixels}
- wrong_instance: {wrong_instance}
- wrong_category: {wrong_category}
- hallucinated: {hallucinated}

Reply with exactly one label name and nothing else."""

TARGET_SENTENCE = (
    "In the attached image, the area tinted green is the correct target. The red marker is where the "
    "model pointed. The model's point is outside the green target: it missed."
)
ABSENT_SENTENCE = (
    "The thing the instruction refers to is not in this image, so nothing is tinted green; the correct "
    "answer was to decline. The red marker is where the model pointed anyway."
)

OUTSIDE_NOTE = (
    " The model's point lies outside the image; the red marker is drawn at the nearest image edge."
)


def build_prompt(instruction: str, *, point_outside_image: bool = False, target_absent: bool = False) -> str:
    """The fixed judge prompt for one miss.

    Args:
        instruction: the instruction the evaluated model was asked
            (:func:`pointfail.prompts.instruction_given`: the core instruction without directives
            written for other models, with any reference point in that model's frame), quoted verbatim.
        point_outside_image: add one sentence saying the predicted point lies outside the image (the
            renderer then draws the marker at the nearest edge).
        target_absent: the referent is not in the image (an ``absent`` target): the sentence about the
            green target is replaced by one saying nothing is tinted and the model should have declined.

    Returns:
        The prompt text; identical inputs give identical text.
    """
    return PROMPT_TEMPLATE.format(
        instruction=instruction.strip(),
        target_sentence=ABSENT_SENTENCE if target_absent else TARGET_SENTENCE,
        outside_note=OUTSIDE_NOTE if point_outside_image else "",
        **LABEL_DEFINITIONS,
    )


JUDGE_PROMPT = PROMPT_TEMPLATE
"""The fixed prompt template (fields ``instruction``, ``target_sentence``, ``outside_note`` and one per
label); use
:func:`build_prompt` to fill it."""

LABEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": list(FAILURE_MODES)}},
    "required": ["label"],
}
"""Structured-output schema sent as Ollama's ``format``. Servers do not always honour it, so replies
are still read with :func:`read_label` (a reply ``{"label": "hallucinated"}`` reads as
``hallucinated``)."""

_SEP = r"[\s_\-]*+"
_LABEL_PATTERNS: dict[FailureMode, re.Pattern[str]] = {
    label: re.compile(r"(?<![a-z0-9])" + _SEP.join(map(re.escape, label.split("_"))) + r"(?![a-z0-9])")
    for label in FAILURE_MODES
}
_NEGATION = re.compile(
    r"(?<![a-z0-9])(?:not|no|never|none|neither|nor|without|non|cannot"
    r"|(?:is|are|was|were|do|does|did|has|have|had|could|would|should|ca|wo)n'?t)"
    r"(?![a-z0-9])(?:[^a-z0-9]*+[a-z0-9][a-z0-9']*+){0,2}[^a-z0-9]*+$"
)
"""A negation word, then at most two words (runs of letters, digits and apostrophes), then only
separators up to the label. Written with possessive quantifiers and a word that must start with a
letter or digit, so it matches exactly the strings of the plain form
``NEG(?:[^a-z0-9]+[a-z0-9']+){0,2}[^a-z0-9]*$`` without its backtracking over apostrophes (checked
against that form in ``tests/test_judge_protocol.py``)."""
_CLAUSE_END = re.compile(r"[.,;:!?\n]")
_RUN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789'")


def _window_start(text: str, lo: int, hi: int) -> int:
    """Where a negation of the label at ``hi`` can start: the start of the third run of letters,
    digits and apostrophes (holding a letter or digit) before ``hi``, not before ``lo`` (the clause
    start). Scans back over those three runs only, so reading a reply stays linear in its length."""
    i, runs = hi, 0
    while i > lo:
        while i > lo and text[i - 1] not in _RUN_CHARS:
            i -= 1
        j, alnum = i, False
        while j > lo and text[j - 1] in _RUN_CHARS:
            alnum = alnum or text[j - 1] != "'"
            j -= 1
        i = j
        if alnum:
            runs += 1
            if runs == 3:
                return j
    return lo


def cap_reply(reply: Optional[str]) -> str:
    """The reply as stored in a record: at most :data:`~pointfail.limits.MAX_JUDGE_REPLY_CHARS`
    characters, with ``…[cut: N chars]`` appended when it was longer (``N`` = its full length)."""
    reply = reply or ""
    if len(reply) <= MAX_JUDGE_REPLY_CHARS:
        return reply
    return reply[:MAX_JUDGE_REPLY_CHARS] + f"…[cut: {len(reply)} chars]"


def _normalize(reply: str) -> str:
    text = unicodedata.normalize("NFKC", reply).lower()
    return text.replace("\u2019", "'")


def read_label(reply: Optional[str]) -> tuple[Optional[FailureMode], str]:
    """Read a failure-mode label from a judge's raw reply by the strict single-label rule.

    Args:
        reply: the raw reply text (``None`` is treated as empty).

    Returns:
        ``(label, verdict)``: ``label`` is one of ``records.FAILURE_MODES`` when ``verdict`` is
        ``accepted``, else ``None``; ``verdict`` is one of :data:`VERDICTS`. The rule is in the module
        docstring. Never raises on any string.
    """
    if reply is None or not reply.strip():
        return None, "rejected_empty"
    text = _normalize(reply[:MAX_JUDGE_REPLY_CHARS])
    found: dict[FailureMode, list[re.Match[str]]] = {}
    for label, pattern in _LABEL_PATTERNS.items():
        matches = list(pattern.finditer(text))
        if matches:
            found[label] = matches
    if not found:
        return None, "rejected_no_label"
    if len(found) > 1:
        return None, "rejected_two_labels"
    (label, matches), = found.items()
    clause_ends = [c.end() for c in _CLAUSE_END.finditer(text)]
    for m in matches:
        k = bisect.bisect_right(clause_ends, m.start())  # the clause holding this occurrence
        cut = clause_ends[k - 1] if k else 0
        if _NEGATION.search(text, _window_start(text, cut, m.start()), m.start()):
            return None, "rejected_negated"
    return label, "accepted"
