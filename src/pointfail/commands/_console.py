"""What the study commands print on the terminal: one summary, read from the tables folder.

``pointfail evaluate``, ``verify`` and ``aggregate`` end with :func:`study_summary`, and
``pointfail families`` (like the summary) renders its table with :func:`table`, so every table a
person reads in the terminal fits :data:`WIDTH` columns. The summary is, in this order:

1. the headline: per model × benchmark the hit rate (%) with its bootstrap 95% interval, and the
   counts it is made of (hit, miss, no_prediction, error, n), ``INCOMPLETE`` with the error count
   where a cell has infrastructure errors, and the samples whose referent is absent (counted apart,
   in no hit rate) where the study has any;
2. the failure profile: misses by failure mode, each cell the count with its share of labeled misses
   (``4 (30.8%)``), modes as columns, the misses without a mode (``malformed_box``, ``unlabeled``,
   ``judge_unavailable``, ``pending``) as columns only where there are any;
3. lines a command adds (the replies it could not use, the judge), then one line per file written.

A table with nothing in it is said in one line. The numbers are the cells of ``outcomes.csv``,
``failure_composition.csv`` and ``absent.csv`` exactly as ``aggregate`` wrote them (no second
computation, no second rounding); the full tables, with their notes, stay in ``tables/``.
"""

from __future__ import annotations

import csv
import io

TYPE_CHECKING = False  # typing and pathlib are not imported at run time: ``--help`` stays light
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

__all__ = ["FAILURE_MODES", "WIDTH", "failure_profile", "headline", "study_summary", "table", "wrap", "written"]

WIDTH = 160
"""Terminal columns every printed table fits (cells are shortened with ``…`` to fit)."""

FAILURE_MODES = ("off_by_pixels", "wrong_instance", "wrong_category", "hallucinated")
"""The failure-mode columns of ``failure_composition.csv``, least to most severe."""

UNMODED = ("malformed_box", "unlabeled", "judge_unavailable", "pending")
"""Misses without a failure mode, counted apart (columns of ``failure_composition.csv``)."""


def _cut(cell: str, width: int) -> str:
    return cell if len(cell) <= width else cell[: max(width - 1, 0)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str, fmt: str = "simple",
          width: int = WIDTH) -> str:
    """Rows as a ``tabulate`` table no line of which is wider than ``width`` characters, or the
    one line ``empty`` when there are no rows.

    Cells are printed as given (``disable_numparse``); when the table is too wide, the column with
    the most room beyond its header is shortened (cells cut with ``…``), down to the next one's
    width at a time, until it fits or every column is down to its header's width.
    Multi-line cells are not expected (each is flattened to one line).
    """
    from tabulate import tabulate

    if not rows:
        return empty
    cells = [[" ".join(str(c).split()) for c in r] for r in rows]
    caps = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    while True:
        out = tabulate([[_cut(c, caps[i]) for i, c in enumerate(r)] for r in cells], headers=list(headers),
                       tablefmt=fmt, disable_numparse=True)
        over = max(len(line) for line in out.splitlines()) - width
        if over <= 0:
            return out
        room = sorted(((caps[j] - len(headers[j]), j) for j in range(len(caps))), reverse=True)
        if room[0][0] <= 0:
            return out  # every column is down to its header: nothing left to shorten
        gap = room[0][0] - (room[1][0] if len(room) > 1 else 0)  # shorten the widest to the next one's width
        i = room[0][1]
        caps[i] -= max(1, min(over, gap))


def _read_csv(tables_dir: Path, name: str) -> list[dict[str, str]]:
    p = tables_dir / name
    if not p.is_file():
        return []
    return list(csv.DictReader(io.StringIO(p.read_text(encoding="utf-8"))))


def _single_benchmark_models(rows: Sequence[Mapping[str, str]]) -> set[str]:
    """Models with one benchmark, whose ``pooled`` row repeats that benchmark's row."""
    per: dict[str, int] = {}
    for r in rows:
        if r["benchmark"] != "pooled":
            per[r["model"]] = per.get(r["model"], 0) + 1
    return {m for m, k in per.items() if k == 1}


def _shown(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    single = _single_benchmark_models(rows)
    return [r for r in rows if not (r["benchmark"] == "pooled" and r["model"] in single)]


def headline(tables_dir: Path) -> str:
    """The headline block (see the module docstring) from ``tables_dir/outcomes.csv`` and
    ``absent.csv``; one line when the study has no scored sample."""
    rows = _shown(_read_csv(tables_dir, "outcomes.csv"))
    absent = {(r["model"], r["benchmark"]): r["n_absent"] for r in _read_csv(tables_dir, "absent.csv")}
    with_errors = any(int(r["error"]) for r in rows)
    with_absent = any(int(absent.get((r["model"], r["benchmark"]), "0")) for r in rows)
    headers = ["model", "benchmark", "hit rate % [95% CI]", "hit", "miss", "no_prediction"]
    headers += ["error"] * with_errors + ["n"] + ["absent"] * with_absent
    body = []
    for r in rows:
        line = [r["model"], r["benchmark"], f"{r['hit_rate_pct']} [{r['ci95_low_pct']}, {r['ci95_high_pct']}]",
                r["hit"], r["miss"], r["no_prediction"]]
        if with_errors:
            line.append(f"{r['error']} INCOMPLETE" if int(r["error"]) else "0")
        line.append(r["n"])
        if with_absent:
            line.append(absent.get((r["model"], r["benchmark"]), "0"))
        body.append(line)
    out = table(headers, body, empty="hit rate: no scored samples")
    if not body:
        return out
    notes = ["hit rate = hit / n; n = samples whose referent is present (hit + miss + no_prediction + error)"]
    if with_absent:
        notes.append("absent: samples whose referent is not in the image, counted apart in no hit rate (absent.md)")
    if with_errors:
        notes.append("INCOMPLETE: samples that ended in an infrastructure error (outcome error) count as non-hits; "
                     "rerun them for final numbers")
    return "hit rate\n" + out + "\n" + "\n".join(notes)


def failure_profile(tables_dir: Path) -> str:
    """The failure-profile block (see the module docstring) from ``tables_dir/failure_composition.csv``;
    one line when there is no miss, or no miss with a failure mode."""
    rows = _shown(_read_csv(tables_dir, "failure_composition.csv"))
    misses = sum(int(r["miss"]) for r in rows if r["benchmark"] != "pooled")
    if not misses:
        return "failure profile: no misses"
    if not any(int(r["labeled"]) for r in rows):
        apart = {k: sum(int(r[k]) for r in rows if r["benchmark"] != "pooled") for k in UNMODED}
        why = ", ".join(f"{k} {v}" for k, v in apart.items() if v)
        return f"failure profile: none of the {misses} misses has a failure mode ({why})"
    extra = [k for k in UNMODED if any(int(r[k]) for r in rows)]
    body = []
    for r in rows:
        labeled = int(r["labeled"])
        cells = [f"{r[m]} ({r[m + '_pct']}%)" if labeled else r[m] for m in FAILURE_MODES]
        body.append([r["model"], r["benchmark"], r["miss"], r["labeled"], *cells, *(r[k] for k in extra)])
    out = table(["model", "benchmark", "miss", "labeled", *FAILURE_MODES, *extra], body, empty="")
    note = "count (share of labeled misses); miss = labeled" + "".join(f" + {_apart(k)}" for k in extra)
    return "failure profile\n" + out + "\n" + note


def _apart(key: str) -> str:
    """A column counted apart with what it means, in the failure browser's words
    (:data:`pointfail.outputs.view.style.SEGMENT_LABELS`): ``malformed_box (point answer to a box task)``,
    ``unlabeled (judge abstained)``, ``judge_unavailable``, ``pending (not judged yet)``."""
    from pointfail.outputs.view.style import SEGMENT_LABELS

    label = SEGMENT_LABELS[key]
    if label.startswith(key + " "):
        return label
    return key if label.replace(" ", "_") == key else f"{key} ({label})"


def wrap(line: str, *, width: int = WIDTH, indent: str = "  ") -> str:
    """A message line folded at spaces to ``width`` columns, continuation lines indented by ``indent``;
    words are never split (a path longer than the width stays whole on its own line), nor is a
    command in backticks (it is copied as one line, even when that line is longer than ``width``)."""
    import re
    import textwrap

    held = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", "\0"), line)  # NUL: not a break point
    return textwrap.fill(held, width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False).replace("\0", " ")


def written(files: Sequence[tuple[str, object]]) -> str:
    """One line per file (or folder) written: ``label: path``, labels aligned."""
    if not files:
        return ""
    w = max(len(label) for label, _ in files) + 1
    return "\n".join(f"{label + ':':<{w}} {path}" for label, path in files)


def study_summary(tables_dir: Path, *, details: Sequence[str] = (),
                  files: Sequence[tuple[str, object]] = ()) -> str:
    """The whole summary of a study whose tables are in ``tables_dir``: :func:`headline`,
    :func:`failure_profile`, then ``details`` (lines a command adds), then :func:`written` of
    ``files``; blocks separated by a blank line, no trailing newline."""
    blocks = [headline(tables_dir), failure_profile(tables_dir)]
    if details:
        blocks.append("\n".join(details))
    if files:
        blocks.append(written(files))
    return "\n\n".join(blocks)
