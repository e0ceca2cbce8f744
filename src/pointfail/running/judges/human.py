"""Human labels as a judge: a person's failure-mode labels, read from a JSONL file, stored as verdicts.

The labels come from the failure browser's review mode (``pointfail view``: a person sees a miss's
annotated image, instruction and point, and picks a failure mode or "can't tell"), exported one line
per label::

    {"model": "qwen", "benchmark": "pointerbench-sheets", "sample_id": "s-17", "label": "wrong_instance", "annotator": "alice"}

Each line becomes a :class:`~pointfail.records.Judgment` of judge ``human:<annotator>`` through the judge
stage (:func:`pointfail.running.judges.stage.judge_study`: journaled, atomic, never twice), exactly like a model
judge's reply: ``label`` one of the four failure modes gives ``status="labeled"``; ``cant_tell`` gives
``status="unlabeled"`` (an abstention, counted apart as a model judge's is); the raw line is kept as the
judgment's one attempt (``reply``), its verdict ``accepted`` or ``cant_tell``.

A line is **refused** (listed in :attr:`HumanLabels.problems` with its line number and why, never
guessed at) when it is not a JSON object of those five string fields (extra fields are allowed and
kept in the raw line), its label is unknown, its annotator is not an identifier (``[A-Za-z0-9._-]``, at
most 64 characters, starting with a letter or digit), or it names no miss of the study (a hit, a
``no_prediction``, an unknown sample). Two lines of one annotator about one miss are both refused
(which one is meant cannot be told). Reading is bounded: at most :data:`MAX_LINE_CHARS` characters a
line and :data:`MAX_LABEL_LINES` lines (beyond is refused, with one problem line).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from pointfail.judge.miss import Miss, NoVerdict
from pointfail.records import FAILURE_MODES, JudgeAttempt, Judgment

__all__ = ["CANT_TELL", "HUMAN_LABELS", "HumanJudge", "HumanLabels", "read_labels"]

CANT_TELL = "cant_tell"
"""The label a person gives when the image does not let them decide (an abstention)."""

HUMAN_LABELS = (*FAILURE_MODES, CANT_TELL)
"""Every label a line may carry."""

MAX_LINE_CHARS = 10_000
MAX_LABEL_LINES = 1_000_000

_ANNOTATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_FIELDS = ("model", "benchmark", "sample_id", "label", "annotator")

Key = tuple[str, str, str]


@dataclass
class HumanLabels:
    """The usable labels of a file: ``labels[annotator][(model, benchmark, sample_id)] = (label, raw
    line, line number)``; ``problems``: ``"<file>:<line>: <why>"`` per refused line; ``lines``: lines
    read (blank lines skipped)."""

    path: Path
    labels: dict[str, dict[Key, tuple[str, str, int]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    lines: int = 0


def read_labels(path: Union[str, Path], misses: Optional[set[Key]] = None) -> HumanLabels:
    """Read a labels file (rules in the module docstring).

    Args:
        path: the JSONL file.
        misses: the study's misses as ``(model, benchmark, sample_id)``; a line naming none of them is
            refused. ``None``: not checked.

    Raises:
        OSError: the file cannot be read.
    """
    p = Path(path)
    out = HumanLabels(p)
    seen: dict[tuple[str, Key], list[int]] = {}
    kept: dict[tuple[str, Key], tuple[str, str, int]] = {}
    limit = 4 * MAX_LINE_CHARS + 1  # bytes: a line of MAX_LINE_CHARS characters is at most 4 bytes each
    with open(p, "rb") as fh:
        i = 0
        while True:
            raw_b = fh.readline(limit)
            if not raw_b:
                break
            i += 1
            if i > MAX_LABEL_LINES:
                out.problems.append(f"{p}:{i}: more than {MAX_LABEL_LINES} lines; the rest is not read")
                break
            if len(raw_b) == limit and not raw_b.endswith(b"\n"):
                while raw_b and not raw_b.endswith(b"\n"):  # skip the rest of the line, a bounded read at a time
                    raw_b = fh.readline(limit)
                out.problems.append(f"{p}:{i}: line longer than {MAX_LINE_CHARS} characters")
                continue
            raw = raw_b.decode("utf-8", errors="replace").rstrip("\r\n")
            if not raw.strip():
                continue
            out.lines += 1
            why, key, annotator, label = _check(raw, misses)
            if why is not None:
                out.problems.append(f"{p}:{i}: {why}")
                continue
            assert key is not None and annotator is not None and label is not None
            seen.setdefault((annotator, key), []).append(i)
            kept[(annotator, key)] = (label, raw, i)
    for (annotator, key), lines in sorted(seen.items()):
        if len(lines) > 1:
            out.problems.append(f"{p}:{', '.join(map(str, lines))}: annotator {annotator} labeled "
                                f"{'/'.join(key)} {len(lines)} times; none of these lines is used")
            continue
        out.labels.setdefault(annotator, {})[key] = kept[(annotator, key)]
    return out


def _check(raw: str, misses: Optional[set[Key]]) -> tuple[Optional[str], Optional[Key], Optional[str], Optional[str]]:
    if len(raw) > MAX_LINE_CHARS:
        return f"line longer than {MAX_LINE_CHARS} characters", None, None, None
    try:
        obj = json.loads(raw)
    except ValueError as e:
        return f"not JSON ({e})", None, None, None
    if not isinstance(obj, dict):
        return "not a JSON object", None, None, None
    missing = [f for f in _FIELDS if not isinstance(obj.get(f), str)]
    if missing:
        return f"missing or not a string: {', '.join(missing)}", None, None, None
    label, annotator = obj["label"], obj["annotator"]
    if label not in HUMAN_LABELS:
        return f"unknown label {label[:60]!r} (known: {', '.join(HUMAN_LABELS)})", None, None, None
    if not _ANNOTATOR.fullmatch(annotator):
        return (f"annotator {annotator[:60]!r} is not an identifier (letters, digits, . _ -; at most 64)",
                None, None, None)
    key = (obj["model"], obj["benchmark"], obj["sample_id"])
    if misses is not None and key not in misses:
        return f"no miss {'/'.join(k[:80] for k in key)} in this study", None, None, None
    return None, key, annotator, label


@dataclass
class HumanJudge:
    """One annotator's labels as a :class:`pointfail.judge.miss.Judge` for the judge stage: a miss the
    annotator labeled gets its verdict (module docstring), any other raises
    :class:`~pointfail.judge.miss.NoVerdict` (the stage stores nothing for it).

    Attributes:
        annotator: the annotator's identifier; the judge's name is ``human:<annotator>``.
        labels: ``{(model, benchmark, sample_id): (label, raw line, line number)}``
            (:attr:`HumanLabels.labels` of this annotator).
        source: the labels file's name, recorded in each judgment's ``detail``.
        problems: the file's refused lines (:attr:`HumanLabels.problems`), for the command to list.
    """

    annotator: str
    labels: dict[Key, tuple[str, str, int]]
    source: str = "labels"
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """``human:<annotator>``."""
        return f"human:{self.annotator}"

    async def __aenter__(self) -> "HumanJudge":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def judge_miss(self, miss: Miss) -> Judgment:
        """This annotator's verdict on ``miss``.

        Raises:
            NoVerdict: the annotator did not label it.
        """
        rec = miss.record
        got = self.labels.get((rec.model, rec.benchmark, rec.sample_id))
        if got is None:
            raise NoVerdict(f"{self.name} did not label {rec.sample_id}")
        label, raw, line = got
        detail = f"human label, {self.source} line {line}"
        if label == CANT_TELL:
            return Judgment(judge=self.name, status="unlabeled", detail=detail + ": the annotator could not tell",
                            attempts=[JudgeAttempt(attempt=1, reply=raw, verdict=CANT_TELL)])
        return Judgment(judge=self.name, status="labeled", label=label, detail=detail,  # type: ignore[arg-type]
                        attempts=[JudgeAttempt(attempt=1, reply=raw, verdict="accepted", label=label)])  # type: ignore[arg-type]
