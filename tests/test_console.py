"""What `verify`, `aggregate` (and `evaluate`, tests/test_evaluate.py) print: the headline first, the
failure profile with count and share in one cell, one line per file written, within 160 columns, every
number the cell of a committed table."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from pointfail.cli import main
from pointfail.commands._console import WIDTH, failure_profile, headline, table, wrap

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "records" / "default"


def _csv(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def _block(lines: list[str], title: str) -> list[list[str]]:
    """The rows of the table under ``title`` (title, header, rule, rows up to the first line that
    is not a row), split on whitespace."""
    i = lines.index(title) + 3
    rows = []
    while i < len(lines) and lines[i] and not lines[i].startswith(("hit rate =", "count (")):
        rows.append(lines[i].split())
        i += 1
    return rows


def test_verify_prints_the_committed_headline_and_profile(capsys):
    assert main(["verify", str(DEFAULT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"OK {DEFAULT}: every table matches")
    assert all(len(ln) <= WIDTH for ln in lines)
    absent = {(r["model"], r["benchmark"]): r["n_absent"] for r in _csv(DEFAULT / "tables" / "absent.csv")}
    want = [[r["model"], r["benchmark"], r["hit_rate_pct"], f"[{r['ci95_low_pct']},", f"{r['ci95_high_pct']}]",
             r["hit"], r["miss"], r["no_prediction"], r["n"], absent[r["model"], r["benchmark"]]]
            for r in _csv(DEFAULT / "tables" / "outcomes.csv")]
    assert _block(lines, "hit rate") == want  # e.g. ocr pooled 91.9 [89.1, 94.7], 331 of n 360, 40 absent
    assert ["ocr", "pooled", "91.9", "[89.1,", "94.7]", "331", "24", "5", "360", "40"] in want
    comp = _csv(DEFAULT / "tables" / "failure_composition.csv")
    modes = ("off_by_pixels", "wrong_instance", "wrong_category", "hallucinated")
    want = [[r["model"], r["benchmark"], r["miss"], r["labeled"],
             *(x for m in modes for x in (r[m], f"({r[m + '_pct']}%)")), r["malformed_box"]] for r in comp]
    assert _block(lines, "failure profile") == want  # malformed_box is the only non-zero column apart
    # the columns counted apart say what they count
    assert "count (share of labeled misses); miss = labeled + malformed_box (point answer to a box task)" in lines
    assert not any("pending" in ln or "unlabeled" in ln for ln in lines)  # all-zero columns are left out


def test_verify_folds_what_it_could_not_check_to_the_width(tmp_path, monkeypatch, capsys):
    """The rehearsal study without its data (a fresh checkout): the NOT CHECKED sentence (longer than
    the width on one line) is folded to the width, whole."""
    import shutil

    study = tmp_path / "pointfail-vlm-rehearsal"
    shutil.copytree(REPO / "records" / "pointfail-vlm-rehearsal", study)
    monkeypatch.chdir(tmp_path)  # the records' data/... mask paths resolve to nothing here
    assert main(["verify", str(study)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(ln) <= WIDTH for ln in lines), max(lines, key=len)
    start = next(i for i, ln in enumerate(lines) if ln.startswith("NOT CHECKED"))
    assert lines[start + 1].startswith("  ") and not lines[start + 1].startswith("   ")
    end = next(i for i, ln in enumerate(lines) if ln.startswith("OK "))
    said = " ".join(ln.strip() for ln in lines[start:end])
    assert said.startswith(f"NOT CHECKED {study}: 80 record(s) whose mask file is not on this machine")
    assert said.endswith("bring the study's data to re-derive them")


def test_aggregate_prints_the_summary_and_one_line_per_table(tmp_path, capsys):
    out = tmp_path / "tables"
    assert main(["aggregate", str(DEFAULT), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines.index("hit rate") < lines.index("failure profile")
    written = [ln for ln in lines if ln.startswith(("table:", "file:"))]
    assert f"table: {out / 'headline'}.{{md,csv}}" in written and f"file:  {out / 'SHA256SUMS'}" in written
    names = {p.name for p in out.iterdir()}
    shown = set()
    for ln in written:
        path = ln.split(None, 1)[1]
        if path.endswith(".{md,csv}"):
            stem = Path(path[: -len(".{md,csv}")]).name
            shown |= {stem + ".md", stem + ".csv"}
        else:
            shown.add(Path(path).name)
    assert shown == names  # every file written is on exactly one line


def test_empty_tables_are_one_line(tmp_path):
    t = tmp_path / "tables"
    t.mkdir()
    assert headline(t) == "hit rate: no scored samples"
    assert failure_profile(t) == "failure profile: no misses"
    (t / "failure_composition.csv").write_text(
        "model,benchmark,miss,labeled,off_by_pixels,wrong_instance,wrong_category,hallucinated,off_by_pixels_pct,"
        "wrong_instance_pct,wrong_category_pct,hallucinated_pct,malformed_box,unlabeled,judge_unavailable,pending\n"
        "m,b,0,0,0,0,0,0,n/a,n/a,n/a,n/a,0,0,0,0\n", encoding="utf-8")
    assert failure_profile(t) == "failure profile: no misses"
    assert table(["a"], [], empty="nothing here") == "nothing here"


def test_every_column_counted_apart_says_what_it_counts(tmp_path):
    t = tmp_path / "tables"
    t.mkdir()
    (t / "failure_composition.csv").write_text(
        "model,benchmark,miss,labeled,off_by_pixels,wrong_instance,wrong_category,hallucinated,off_by_pixels_pct,"
        "wrong_instance_pct,wrong_category_pct,hallucinated_pct,malformed_box,unlabeled,judge_unavailable,pending\n"
        "m,b,14,4,1,1,1,1,25.0,25.0,25.0,25.0,1,2,3,4\n", encoding="utf-8")
    lines = failure_profile(t).splitlines()
    assert lines[3].split() == ["m", "b", "14", "4", *["1", "(25.0%)"] * 4, "1", "2", "3", "4"]
    assert lines[-1] == ("count (share of labeled misses); miss = labeled + malformed_box (point answer to a box "
                         "task) + unlabeled (judge abstained) + judge_unavailable + pending (not judged yet)")


def test_messages_fold_to_the_width_with_each_command_on_one_line():
    """`pointfail view`'s missing-image line (331 characters before) folds to the width; the commands it
    offers, in backticks, stay whole on one line each, so they copy as they are."""
    from pointfail.outputs.view.images import missing_image_hint

    hint = missing_image_hint(DEFAULT, "sheets")
    line = f"[view] 300 records of sheets have no image: {hint}"
    assert len(line) > WIDTH
    lines = wrap(line).splitlines()
    assert len(lines) > 1 and all(len(ln) <= WIDTH for ln in lines)
    assert " ".join(ln.strip() for ln in lines) == line
    commands = line.split("`")[1::2]
    assert commands == ["make data STUDY=default",
                        "pointfail generate sheets --n 150 --seed 20261129 --absent-share 0.1 --out data/default/sheets"]
    assert all(any(f"`{c}`" in ln for ln in lines) for c in commands)


def test_tables_are_cut_to_the_width_widest_column_first():
    rows = [["short", "x" * 300, "y" * 50], ["s", "z", "w"]]
    out = table(["a", "long", "mid"], rows, empty="")
    lines = out.splitlines()
    assert max(len(ln) for ln in lines) == WIDTH
    assert lines[2].split()[0] == "short" and lines[2].split()[2] == "y" * 50  # the narrower columns are whole
    assert lines[2].split()[1] == "x" * (WIDTH - 2 - len("short") - 2 - 50 - 1) + "…"
