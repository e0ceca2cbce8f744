"""Draw the README's failure-mode pictures from a study's gallery examples.

    python docs/failure_modes.py [records/default] [docs/img]

For each failure mode, one labeled miss of the default study (:data:`PICKS`, chosen among the
oracle's labels for a legible picture; for another study, the gallery's example:
``pointfail.outputs.report.gallery_examples``), drawn as the report's gallery draws it
(``pointfail.outputs.report.example_picture``: target tinted green, the model's point in red), cropped around
the target and the point, scaled to 360 pixels wide, written as ``<out>/failure-<mode>.png``. Needs
the study's images (``make data``, or ``pointfail generate`` with the study's seeds) and the report
extra.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pointfail.records import FAILURE_MODES, read_records
from pointfail.outputs.report import example_picture, gallery_examples

WIDTH = 360
PICKS = {
    "off_by_pixels": ("center", "sheets", "pfs_0100"),
    "wrong_instance": ("center", "sheets", "pfs_0000"),
    "wrong_category": ("center", "sheets", "pfs_0005"),
    "hallucinated": ("center", "text", "pft_0006"),
}
"""Failure mode -> (model, benchmark, sample id) of records/default drawn for the README."""


def _pick(study: str, mode: str):
    if Path(study).name == "default":
        model, bench, sid = PICKS[mode]
        rec = next(r for r in read_records(Path(study) / model / f"{bench}.jsonl") if r.sample_id == sid)
        assert rec.failure_mode == mode, (mode, rec.failure_mode)
        return rec
    examples = gallery_examples(study)
    return next((slots[mode] for _, slots in sorted(examples.items()) if slots.get(mode) is not None), None)


def main(study: str = "records/default", out: str = "docs/img") -> int:
    Path(out).mkdir(parents=True, exist_ok=True)
    for mode in FAILURE_MODES:
        rec = _pick(study, mode)
        if rec is None:
            print(f"{mode}: no example in {study}", file=sys.stderr)
            return 1
        pic, crop, note = example_picture(rec, study)
        if note:
            print(f"{mode}: {note}", file=sys.stderr)
            return 1
        part = pic.crop(crop)
        part = part.resize((WIDTH, max(1, round(part.height * WIDTH / part.width))))
        dest = Path(out) / f"failure-{mode}.png"
        part.save(dest, format="PNG", optimize=True)
        print(f"{dest}: {rec.model} on {rec.benchmark} {rec.sample_id}: {rec.prompt.original!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
