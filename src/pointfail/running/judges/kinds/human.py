"""``human``: a person's labels from the failure browser's review mode (:mod:`pointfail.running.judges.human`),
one judge ``human:<annotator>`` per annotator in the file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pointfail.running.judges.kinds import JudgeKind, JudgeSetupError


class Human(JudgeKind):
    """Settings: ``labels`` (the JSONL file, required) and ``misses`` (the study's misses as
    ``(model, benchmark, sample_id)``, to refuse lines naming none; set by the command). The refused
    lines are on each judge's ``problems`` (the same list for all of a file's annotators)."""

    name = "human"
    summary = "a person's labels (--labels FILE, exported by the browser's review mode)"
    runs_in_study = False

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--labels", metavar="FILE",
                            help="--judge human: the labels file (JSONL, one line per label: model, benchmark, "
                            "sample_id, label, annotator), as the browser's review mode exports it")

    def make(self, settings: Mapping[str, Any]) -> list[Any]:
        from pointfail.running.judges.human import HumanJudge, read_labels

        path = settings.get("labels")
        if not path:
            raise JudgeSetupError("--judge human needs --labels FILE (the review mode's export)")
        try:
            got = read_labels(path, settings.get("misses"))
        except OSError as e:
            raise JudgeSetupError(f"cannot read --labels {path}: {e}") from None
        judges = [HumanJudge(a, labels, Path(path).name, got.problems) for a, labels in sorted(got.labels.items())]
        if not judges:
            shown = "\n  ".join(got.problems[:20])
            raise JudgeSetupError(f"no usable label in {path} ({got.lines} lines read)" + (f":\n  {shown}" if shown else ""))
        return judges


KIND = Human()
