"""The ``official`` table, its ``official_diagnostic`` and the ``pointing`` denominator, with the
counts worked out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from test_aggregate import read_csv, rec, toy_study

from pointfail.aggregate import aggregate
from pointfail.records import OfficialScore, Record, write_records


def _with(r: Record, score: Optional[float], own: Optional[float] = None, note: Optional[str] = None) -> Record:
    return r.model_copy(update={"official": OfficialScore(rule="pb official", score=score, own_score=own, note=note)})


def test_official_table_counts_errors_left_out_and_readings(tmp_path: Path) -> None:
    rs = [
        _with(rec("m", "pb", "a", "hit"), 1.0),                     # agrees
        _with(rec("m", "pb", "b", "miss", dist=3.0), 0.0),          # agrees
        _with(rec("m", "pb", "c", "error"), 0.0, note="no answer"),  # counted wrong, agrees with the headline's 0
        _with(rec("m", "pb", "d", "miss", dist=3.0), None, own=1.0, note="dropped"),  # left out; pointfail reads 1
        _with(rec("m", "pb", "e", "hit"), 0.5),                     # partial: mean over points
        _with(rec("m", "pb", "f", "miss", dist=3.0), 1.0, own=0.0),  # the official parser reads a hit
    ]
    write_records(tmp_path / "st" / "m" / "pb.jsonl", rs)
    files = aggregate(tmp_path / "st")
    off = read_csv(files["official.csv"])[0]
    # official mean over a, b, c, e, f: (1 + 0 + 0 + 0.5 + 1) / 5 = 50 %; d is left out
    # own reading over all six: (1 + 0 + 0 + 1 + 0.5 + 0) / 6 = 41.7 %; headline 2 hits / 6 = 33.3 %
    assert [off[k] for k in ("n_official", "official_score_pct", "left_out", "read_differently",
                             "own_reading_score_pct", "pointfail_n", "pointfail_hit_rate_pct")] == [
        "5", "50.0", "1", "2", "41.7", "6", "33.3"]
    diag = read_csv(files["official_diagnostic.csv"])[0]
    assert [diag[k] for k in ("n", "decided_differently", "left_out", "no_answer", "official_parser",
                              "mean_over_points", "rule")] == ["6", "3", "1", "0", "1", "1", "0"]


def test_official_no_answer_counted_wrong_is_a_reason(tmp_path: Path) -> None:
    rs = [_with(rec("m", "pb", "a", "error"), 0.0), _with(rec("m", "pb", "b", "miss", dist=1.0), 1.0)]
    write_records(tmp_path / "st" / "m" / "pb.jsonl", rs)
    diag = read_csv(aggregate(tmp_path / "st")["official_diagnostic.csv"])[0]
    # b: official 1 against a miss, no other reading recorded: the rule itself
    assert (diag["decided_differently"], diag["rule"], diag["no_answer"]) == ("1", "1", "0")


def test_pointing_keeps_errors_in_n(tmp_path: Path) -> None:
    """The toy study's alpha/b2: 1 hit, 3 misses, 2 no_prediction, 1 error: n = 7, 1/7 = 14.3 %."""
    files = aggregate(toy_study(tmp_path / "toy"))
    row = next(r for r in read_csv(files["pointing.csv"]) if (r["model"], r["benchmark"]) == ("alpha", "b2"))
    assert [row[k] for k in ("n", "n_hits", "point_in_region_pct", "n_misses", "n_no_point", "n_error")] == [
        "7", "1", "14.3", "3", "2", "1"]
    outcomes = next(r for r in read_csv(files["outcomes.csv"]) if (r["model"], r["benchmark"]) == ("alpha", "b2"))
    assert outcomes["n"] == row["n"] and outcomes["hit_rate_pct"] == row["point_in_region_pct"]


def test_a_copy_of_the_default_study_with_errors_keeps_them_in_every_n(tmp_path: Path) -> None:
    """The issue's check: turn records of the committed default study into infrastructure errors; the
    pointing n, the headline n and the official n (PointerBench's rule counts a missing answer wrong)
    all stay 135 for ocr/sheets, and the rates fall alike."""
    import shutil

    from pointfail.official import official_score
    from pointfail.records import Geometry, Response, Sample, read_records

    root = Path(__file__).resolve().parents[1] / "records" / "default"
    study = tmp_path / "default"
    shutil.copytree(root, study, ignore=shutil.ignore_patterns("tables"))
    path = study / "ocr" / "sheets.jsonl"
    records = list(read_records(path))
    hits = [r for r in records if r.outcome == "hit"][:5]
    changed = []
    for r in records:
        if r in hits:
            s = Sample(sample_id=r.sample_id, benchmark=r.benchmark, image=r.image, instruction=r.prompt.original,
                       task=r.task, target=r.target, metadata=r.metadata)
            r = r.model_copy(update={"outcome": "error", "error": "worker: out of memory", "parse": None,
                                     "geometry": Geometry(), "response": Response(error="out of memory"),
                                     "official": official_score(s, None)})
        changed.append(r)
    write_records(path, changed)
    files = aggregate(study)
    key = ("ocr", "sheets")
    point = next(r for r in read_csv(files["pointing.csv"]) if (r["model"], r["benchmark"]) == key)
    head = next(r for r in read_csv(files["outcomes.csv"]) if (r["model"], r["benchmark"]) == key)
    off = next(r for r in read_csv(files["official.csv"]) if (r["model"], r["benchmark"]) == key)
    # committed: 130 hits of 135; now 125 of 135 = 92.6 %
    assert (point["n"], point["n_hits"], point["n_error"], point["point_in_region_pct"]) == ("135", "125", "5", "92.6")
    assert (head["n"], head["hit"], head["hit_rate_pct"]) == ("135", "125", "92.6")
    assert (off["n_official"], off["official_score_pct"], off["left_out"]) == ("135", "92.6", "0")


# ------------------------------------------------------------------ ScreenSpot-Pro's per-group report


def _ssp(sid: str, outcome: str, score: float, group: str, app: str, plat: str, ui: str,
         note: Optional[str] = None) -> Record:
    from pointfail.official import RULES

    r = rec("m", "screenspot-pro", sid, outcome, dist=None if outcome != "miss" else 5.0,
            meta={"group": group, "application": app, "platform": plat, "ui_type": ui})
    return r.model_copy(update={"official": OfficialScore(rule=RULES["screenspot-pro"], score=score, note=note)})


def _ssp_rows(tmp_path: Path, rs: list[Record]) -> dict[tuple[str, str], list[str]]:
    write_records(tmp_path / "st" / "m" / "screenspot-pro.jsonl", rs)
    out = read_csv(aggregate(tmp_path / "st")["official_screenspot_pro.csv"])
    cols = ["num_total", "num_correct_action", "wrong_format_num", "action_acc_pct", "text_total", "text_acc_pct",
            "icon_total", "icon_acc_pct"]
    return {(r["grouping"], r["key"]): [r[c] for c in cols] for r in out}


def test_screenspot_pro_groups_as_the_official_script_counts(tmp_path: Path) -> None:
    """calc_metric_for_result_list per block: every sample in num_total, wrong_format (no point, no answer)
    a non-correct, text/icon accuracies over their own ui_type, 0 (not n/a) where a block has none."""
    from pointfail.official import SCREENSPOT_WRONG_FORMAT

    rs = [
        _ssp("a", "hit", 1.0, "CAD", "autocad", "windows", "text"),
        _ssp("b", "miss", 0.0, "CAD", "autocad", "windows", "icon"),
        _ssp("c", "no_prediction", 0.0, "CAD", "solidworks", "windows", "icon", note=SCREENSPOT_WRONG_FORMAT),
        _ssp("d", "error", 0.0, "Dev", "vscode", "macos", "text", note="no answer: counted wrong"),
        _ssp("e", "hit", 1.0, "Dev", "vscode", "macos", "text"),
    ]
    got = _ssp_rows(tmp_path, rs)
    style = "inst_style:instruction gt_type:positive"
    assert list(got) == [
        ("fine_grained", f"plat:macos app:vscode {style}"), ("fine_grained", f"plat:windows app:autocad {style}"),
        ("fine_grained", f"plat:windows app:solidworks {style}"),
        ("seeclick_style", f"plat:macos {style}"), ("seeclick_style", f"plat:windows {style}"),
        ("leaderboard_simple_style", "group:CAD"), ("leaderboard_simple_style", "group:Dev"),
        ("leaderboard_detailed_style", "app:autocad"), ("leaderboard_detailed_style", "app:solidworks"),
        ("leaderboard_detailed_style", "app:vscode"), ("overall", "overall")]
    # overall: 2 correct of 5 = 40 %; c and d wrong_format; text a, d, e: 2/3 = 66.67 %; icon b, c: 0/2
    assert got[("overall", "overall")] == ["5", "2", "2", "40.00", "3", "66.67", "2", "0.00"]
    # CAD: a, b, c: 1/3 = 33.33 %; text a: 1/1; icon b, c: 0/2
    assert got[("leaderboard_simple_style", "group:CAD")] == ["3", "1", "1", "33.33", "1", "100.00", "2", "0.00"]
    # Dev: d, e: 1/2; no icon sample: icon_acc 0, as the script writes (icon_total 0)
    assert got[("leaderboard_simple_style", "group:Dev")] == ["2", "1", "1", "50.00", "2", "50.00", "0", "0.00"]
    assert got[("seeclick_style", f"plat:windows {style}")] == got[("leaderboard_simple_style", "group:CAD")]
    # solidworks: c alone, wrong_format, no text sample
    assert got[("leaderboard_detailed_style", "app:solidworks")] == ["1", "0", "1", "0.00", "0", "0.00", "1", "0.00"]
    assert got[("fine_grained", f"plat:windows app:autocad {style}")] == ["2", "1", "0", "50.00", "1", "100.00", "1",
                                                                         "0.00"]


def test_screenspot_pro_group_none_counts_every_sample(tmp_path: Path) -> None:
    """A sample without a group is group None in the official results, and the script's filter treats
    None as no filter: group:None is the whole set (here 1 correct of 3), beside group:CAD (1 of 1)."""
    rs = [
        _ssp("a", "hit", 1.0, "CAD", "autocad", "windows", "text"),
        _ssp("b", "miss", 0.0, "", "vscode", "macos", "icon"),
        _ssp("c", "miss", 0.0, "", "vscode", "macos", "text"),
    ]
    got = _ssp_rows(tmp_path, rs)
    assert got[("leaderboard_simple_style", "group:CAD")] == ["1", "1", "0", "100.00", "1", "100.00", "0", "0.00"]
    # 1/3 = 33.33 %; text a, c: 1/2 = 50 %; icon b: 0/1
    assert got[("leaderboard_simple_style", "group:None")] == ["3", "1", "0", "33.33", "2", "50.00", "1", "0.00"]
    assert got[("leaderboard_simple_style", "group:None")] == got[("overall", "overall")]


def test_no_screenspot_pro_rows_no_group_table(tmp_path: Path) -> None:
    write_records(tmp_path / "st" / "m" / "pb.jsonl", [_with(rec("m", "pb", "a", "hit"), 1.0)])
    assert "official_screenspot_pro.csv" not in aggregate(tmp_path / "st")


REHEARSAL = Path(__file__).resolve().parents[1] / "records" / "pointfail-vlm-rehearsal"


def _rehearsal_data(root: Path, point_bench: bool = False) -> None:
    """Write the rehearsal's stand-in data under ``root/data/pointfail-vlm-rehearsal`` (the folders its
    records name), each file's sha256 checked against study.lock; Point-Bench's archives unpacked to
    ``masks/`` and ``images/``, as the records were made."""
    import hashlib
    import io
    import json
    import zipfile

    from pointfail.generated.testing.standin import point_bench_files, refspatial_files, where2place_files

    lock = json.loads((REHEARSAL / "study.lock").read_text())["benchmarks"]
    base = root / "data" / "pointfail-vlm-rehearsal"
    out: dict[Path, bytes] = {}
    for name, make in (("where2place", where2place_files), ("refspatial", refspatial_files)):
        files = make()
        for f, digest in lock[name]["files"].items():
            if f in files:
                assert hashlib.sha256(files[f]).hexdigest() == digest, f
                out[base / name / f] = files[f]
    if point_bench:
        pb = point_bench_files()
        for archive, sub in (("selected_masks.zip", "masks"), ("selected_images.zip", "images")):
            assert hashlib.sha256(pb[archive]).hexdigest() == lock["point-bench"]["files"][archive]
            with zipfile.ZipFile(io.BytesIO(pb[archive])) as z:
                for m in z.namelist():
                    if not m.endswith("/"):
                        parts = m.split("/")
                        out[base / "point-bench" / sub / (parts[-1] if sub == "masks" else "/".join(parts[1:]))] = z.read(m)
    for p, data in out.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def test_rehearsal_official_fields_rederive_from_the_study_data(tmp_path: Path) -> None:
    """The rehearsal's Where2Place and RefSpatial data are pointfail's stand-in scenes, whose bytes
    study.lock pins: rebuilt here (sha256 checked against the lock), every one of the 40 records
    re-derives, official field included, from its raw reply and mask. Neither RoboPoint's text2pts
    (no ``(x, y)`` group in any reply) nor RoboRefer's readers (Molmo's single ``<point x= y=>``,
    Qwen's ``point_2d`` JSON, InternVL's ``<box>``) read a point, so the official score is 0 for all
    four models, and pointfail's own reading is kept beside it."""
    from pointfail.integrity import FileFinder, rederive
    from pointfail.records import read_records

    _rehearsal_data(tmp_path)
    finder = FileFinder([tmp_path])
    n = 0
    for path in sorted(REHEARSAL.glob("*/*.jsonl")):
        if path.stem not in ("where2place", "refspatial"):
            continue
        for r in read_records(path):
            assert rederive(r, finder) == ([], True), (path, r.sample_id)
            assert r.official is not None and r.official.score == 0.0 and r.official.own_score is not None
            n += 1
    assert n == 40


def test_rehearsal_verifies_in_full_with_its_data(tmp_path: Path, monkeypatch) -> None:
    """With the stand-in data in the folders its records name, ``verify`` re-derives every record and
    every table of the rehearsal, frame_compliance included: nothing is left unchecked."""
    from pointfail.aggregate.verify import verify

    _rehearsal_data(tmp_path, point_bench=True)
    monkeypatch.chdir(tmp_path)
    result = verify(REHEARSAL)
    assert (result.ok, result.problems, result.not_checked) == (True, [], [])
