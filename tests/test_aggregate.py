"""Aggregation: hand-computed expected tables for small record sets built with pointfail.records.

The toy study (``toy_study``) has two models on two benchmarks:

alpha / b1 (4 samples): hit, hit, hit, miss (off_by_pixels, 3 px)         -> 3/4 = 75.0 %
alpha / b2 (7 samples): hit, miss (wrong_instance, 10 px), miss (unlabeled, 20 px),
                        miss (judge_unavailable, 40 px), no_prediction, no_prediction, error
                        -> n = 6 (the error is excluded), 1/6 = 16.7 %
alpha pooled: (3 + 1) / (4 + 6) = 4/10 = 40.0 %, while the average of the two
              percentages would be (75 + 16.67) / 2 = 45.8 %.
beta / b1 (no_prediction-heavy): no_pred, no_pred, no_pred, hit           -> 1/4 = 25.0 %
beta / b2: hit, no_pred x5, miss (not judged yet: pending, 200 px)        -> 1/7 = 14.3 %
beta pooled: 2/11 = 18.18.. -> 18.2 %   (average of percentages: 19.6 %)
"""

from __future__ import annotations

import csv
import io
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional

import pytest

from pointfail.aggregate import (
    AggregateError,
    aggregate,
    area_quartiles,
    build_tables,
    load_study,
    row_from_record,
)
from pointfail.records import (
    BoxScore,
    Geometry,
    ImageRef,
    Judgment,
    OfficialScore,
    ParseResult,
    Prompt,
    Record,
    Response,
    Target,
    write_records,
)


def rec(
    model: str,
    bench: str,
    sid: str,
    outcome: str,
    *,
    label: Optional[str] = None,
    status: Optional[str] = None,
    dist: Optional[float] = None,
    image: Optional[str] = None,
    image_sha: Optional[str] = None,
    meta: Optional[dict[str, Any]] = None,
    area: Optional[float] = None,
    task: str = "point",
    box_class: Optional[str] = None,
    iou: Optional[float] = None,
    point: tuple[float, float] = (0.5, 0.5),
    official: Optional[float] = None,
    absent: bool = False,
    declined: bool = False,
    other: tuple[Judgment, ...] = (),
    study: str = "toy",
    size: tuple[int, int] = (100, 100),
) -> Record:
    """A schema-valid record with just the fields aggregation reads filled in."""
    w, h = size
    parse = None
    response = Response(raw_text="raw")
    if outcome in ("hit", "miss"):
        if task == "box":
            parse = ParseResult(family="center", frame="unit", boxes=[[0.1, 0.1, 0.2, 0.2]])
        else:
            parse = ParseResult(family="center", frame="unit", points=[list(point)])
    elif outcome == "no_prediction":
        parse = ParseResult(family="center", frame="unit", reason="declined" if declined else "no_coordinates")
    else:
        response = Response(error="worker: out of memory")
    judge = None
    if outcome == "miss" and (status or label):
        judge = Judgment(judge="oracle", status=status or "labeled", label=label)
    geom = Geometry()
    if outcome in ("hit", "miss"):
        d = 0.0 if outcome == "hit" else dist
        geom = Geometry(
            in_target=outcome == "hit",
            distance_px=d,
            distance_norm=None if d is None else d / math.hypot(w, h),
            box=BoxScore(iou=iou, box_class=box_class) if task == "box" else None,
        )
    return Record(
        study=study,
        model=model,
        family="center",
        benchmark=bench,
        sample_id=sid,
        task=task,
        image=ImageRef(path=f"images/{image or sid}.png", width=w, height=h, sha256=image_sha),
        target=Target(kind="absent") if absent else Target(kind="boxes", boxes=[[10, 10, 20, 20]], area_px=area),
        metadata=meta or {},
        prompt=Prompt(original="point to it", core="point to it", sent="point to it"),
        response=response,
        parse=parse,
        outcome=outcome,
        geometry=geom,
        official=OfficialScore(rule="test: in-box", score=official) if official is not None else None,
        judge=judge,
        other_judgments=list(other),
    )


def toy_records() -> dict[tuple[str, str], list[Record]]:
    a1 = [
        rec("alpha", "b1", "s1", "hit", meta={"language": "en"}, area=10),
        rec("alpha", "b1", "s2", "hit", meta={"language": "en"}, area=20),
        rec("alpha", "b1", "s3", "hit", meta={"language": "de"}, area=30),
        rec("alpha", "b1", "s4", "miss", label="off_by_pixels", dist=3.0, meta={"language": "de"}, area=40),
    ]
    a2 = [
        rec("alpha", "b2", "t1", "hit"),
        rec("alpha", "b2", "t2", "miss", label="wrong_instance", dist=10.0),
        rec("alpha", "b2", "t3", "miss", status="unlabeled", dist=20.0),
        rec("alpha", "b2", "t4", "miss", status="judge_unavailable", dist=40.0),
        rec("alpha", "b2", "t5", "no_prediction"),
        rec("alpha", "b2", "t6", "no_prediction"),
        rec("alpha", "b2", "t7", "error"),
    ]
    b1 = [
        rec("beta", "b1", "s1", "no_prediction", meta={"language": "en"}, area=10),
        rec("beta", "b1", "s2", "no_prediction", meta={"language": "en"}, area=20),
        rec("beta", "b1", "s3", "no_prediction", meta={"language": "de"}, area=30),
        rec("beta", "b1", "s4", "hit", meta={"language": "de"}, area=40),
    ]
    b2 = [rec("beta", "b2", "t1", "hit")] + [rec("beta", "b2", f"t{i}", "no_prediction") for i in range(2, 7)]
    b2.append(rec("beta", "b2", "t7", "miss", dist=200.0))
    return {("alpha", "b1"): a1, ("alpha", "b2"): a2, ("beta", "b1"): b1, ("beta", "b2"): b2}


def toy_study(d: Path) -> Path:
    """Write the toy study under ``d`` (``d/<model>/<benchmark>.jsonl``)."""
    for (m, b), rs in toy_records().items():
        write_records(d / m / f"{b}.jsonl", rs)
    return d


def read_csv(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    return toy_study(tmp_path / "toy")


def test_outcomes_table_hand_computed(toy: Path) -> None:
    files = aggregate(toy)
    rows = {(r["model"], r["benchmark"]): r for r in read_csv(files["outcomes.csv"])}
    cols = ["n", "hit", "miss", "no_prediction", "error", "hit_rate_pct", "no_prediction_pct"]
    got = {k: [v[c] for c in cols] for k, v in rows.items()}
    assert got == {
        ("alpha", "b1"): ["4", "3", "1", "0", "0", "75.0", "0.0"],
        # n = 7 samples, the error included as a non-hit; 1/7 = 14.29 %; 2/7 = 28.57 %
        ("alpha", "b2"): ["7", "1", "3", "2", "1", "14.3", "28.6"],
        # pooled 4/11 = 36.36 %, not (75.0 + 14.3) / 2 = 44.6 %
        ("alpha", "pooled"): ["11", "4", "4", "2", "1", "36.4", "18.2"],
        ("beta", "b1"): ["4", "1", "0", "3", "0", "25.0", "75.0"],
        # 1/7 = 14.29 %, 5/7 = 71.43 %
        ("beta", "b2"): ["7", "1", "1", "5", "0", "14.3", "71.4"],
        # 2/11 = 18.18 % (average of percentages would be 19.6 %); 8/11 = 72.73 %
        ("beta", "pooled"): ["11", "2", "1", "8", "0", "18.2", "72.7"],
    }
    # row order: models sorted, benchmarks sorted, pooled last
    assert list(rows) == [("alpha", "b1"), ("alpha", "b2"), ("alpha", "pooled"), ("beta", "b1"), ("beta", "b2"), ("beta", "pooled")]
    assert (toy / "tables" / "outcomes.csv").read_bytes() == files["outcomes.csv"]
    md = files["outcomes.md"].decode()
    assert "count as non-hits" in md and "| alpha   | pooled      | 11  |" in md


def test_failure_composition_hand_computed(toy: Path) -> None:
    files = aggregate(toy)
    rows = {(r["model"], r["benchmark"]): r for r in read_csv(files["failure_composition.csv"])}
    a2 = rows[("alpha", "b2")]
    # 3 misses: 1 labeled wrong_instance, 1 unlabeled, 1 judge_unavailable -> share over labeled = 1/1
    assert (a2["miss"], a2["labeled"], a2["wrong_instance"], a2["wrong_instance_pct"]) == ("3", "1", "1", "100.0")
    assert (a2["unlabeled"], a2["judge_unavailable"], a2["pending"], a2["off_by_pixels_pct"]) == ("1", "1", "0", "0.0")
    ap = rows[("alpha", "pooled")]
    # pooled labeled = off_by_pixels 1 + wrong_instance 1 = 2 -> 50.0 % each; abstentions not redistributed
    assert (ap["labeled"], ap["off_by_pixels_pct"], ap["wrong_instance_pct"], ap["hallucinated_pct"]) == ("2", "50.0", "50.0", "0.0")
    bp = rows[("beta", "pooled")]
    # one miss, never judged: pending; no labeled miss -> shares n/a
    assert (bp["miss"], bp["labeled"], bp["pending"], bp["hallucinated_pct"]) == ("1", "0", "1", "n/a")
    for r in rows.values():
        assert int(r["miss"]) == (int(r["labeled"]) + int(r["malformed_box"]) + int(r["unlabeled"])
                                  + int(r["judge_unavailable"]) + int(r["pending"]))


def test_summary_json(toy: Path) -> None:
    s = json.loads(aggregate(toy)["summary.json"])
    ap = s["models"]["alpha"]["pooled"]
    assert (ap["n"], ap["hit"], ap["miss"], ap["no_prediction"], ap["errors"]) == (11, 4, 4, 2, 1)
    assert ap["hit_rate"] == 0.363636  # 4/11: the error is a non-hit
    assert (ap["off_by_pixels"], ap["wrong_instance"], ap["wrong_category"], ap["hallucinated"]) == (1, 1, 0, 0)
    assert (ap["unlabeled"], ap["judge_unavailable"]) == (1, 1)
    assert s["models"]["alpha"]["benchmarks"]["b2"]["hit_rate"] == 0.142857  # 1/7 rounded once to 6 places
    assert s["models"]["beta"]["pooled"]["hit_rate"] == 0.181818


def test_headline_and_tolerance(toy: Path) -> None:
    files = aggregate(toy)
    head = {(r["model"], r["benchmark"]): r["hit_rate_pct"] for r in read_csv(files["headline.csv"])}
    assert head[("alpha", "pooled")] == "36.4" and head[("beta", "b2")] == "14.3"
    tol = {(r["model"], r["benchmark"], int(r["t_px"])): (r["hits_within_t"], r["n"], r["rate_pct"]) for r in read_csv(files["tolerance.csv"])}
    assert tol[("alpha", "b1", 0)] == ("3", "4", "75.0")
    assert tol[("alpha", "b1", 2)] == ("3", "4", "75.0")
    assert tol[("alpha", "b1", 3)] == ("4", "4", "100.0")  # the 3 px miss is recovered at t = 3
    # alpha pooled at t = 10: 4 hits + misses at 3 and 10 px = 6 of 11 (the error is in n); t = 50: + 20
    # and 40 px = 8 of 11
    assert tol[("alpha", "pooled", 10)] == ("6", "11", "54.5")
    assert tol[("alpha", "pooled", 50)] == ("8", "11", "72.7")
    # t = 0 is the headline hit rate, cell for cell
    head_n = {(r["model"], r["benchmark"]): (r["hit"], r["n"], r["hit_rate_pct"]) for r in read_csv(files["headline.csv"])}
    assert {k[:2]: v for k, v in tol.items() if k[2] == 0} == head_n
    # beta's 200 px miss and its no_predictions never count
    assert tol[("beta", "pooled", 50)] == ("2", "11", "18.2")
    assert len([k for k in tol if k[:2] == ("alpha", "b1")]) == 51


def test_pairwise_mcnemar(toy: Path) -> None:
    rows = read_csv(aggregate(toy)["pairwise.csv"])
    b1 = next(r for r in rows if r["benchmark"] == "b1")
    # alpha hits s1..s3, beta hits s4: a_only 3, b_only 1; p = 2 * P(X >= 3 | n=4, 1/2) = 2 * 5/16 = 0.625
    assert (b1["n_paired"], b1["both_hit"], b1["a_only"], b1["b_only"], b1["neither"], b1["mcnemar_p"]) == ("4", "0", "3", "1", "0", "0.625")
    b2 = next(r for r in rows if r["benchmark"] == "b2")
    assert b2["n_paired"] == "6"  # t7 is an error for alpha: excluded from the pairing
    # both gave a point only on t1 (both hits at (0.5, 0.5)) -> distance 0
    assert (b2["n_both_point"], b2["mean_point_distance"], b2["median_point_distance"]) == ("1", "0.0000", "0.0000")
    assert rows[-1]["benchmark"] == "pooled" and rows[-1]["n_paired"] == "10"


def test_breakdowns_by_axis_and_area_quartile(toy: Path) -> None:
    rows = read_csv(aggregate(toy)["breakdowns.csv"])
    lang = {(r["model"], r["value"]): (r["hit"], r["n"], r["hit_rate_pct"]) for r in rows if r["axis"] == "language"}
    assert lang == {
        ("alpha", "de"): ("1", "2", "50.0"),
        ("alpha", "en"): ("2", "2", "100.0"),
        ("beta", "de"): ("1", "2", "50.0"),
        ("beta", "en"): ("0", "2", "0.0"),
    }
    area = [(r["model"], r["value"], r["hit"]) for r in rows if r["axis"] == "target_area_quartile"]
    # areas 10, 20, 30, 40: nearest-rank quartiles 10 / 20 / 30 -> one sample per quartile
    assert ("alpha", "Q4 [40.0, 40.0] px", "0") in area and ("beta", "Q4 [40.0, 40.0] px", "1") in area
    assert len(area) == 8


def test_area_quartiles_ties() -> None:
    rows = [row_from_record(rec("m", "b", f"s{i}", "hit", area=a)) for i, a in enumerate([5, 5, 5, 5, 9, 9, 100, 200])]
    assign, ranges = area_quartiles({r.sample_id: r.area_px for r in rows})
    # sorted 5 5 5 5 9 9 100 200, N = 8: q1 = s[1] = 5, q2 = s[3] = 5, q3 = s[5] = 9
    assert ranges == [(1, 5.0, 5.0), (3, 9.0, 9.0), (4, 100.0, 200.0)]
    assert assign["s6"] == 4 and assign["s0"] == 1


def test_bootstrap_ci_clusters_images(tmp_path: Path) -> None:
    # 4 prompts on ONE image: resampling images can only redraw that image, so the interval is the
    # point estimate 2/4; 4 prompts on 4 images give a real spread.
    one = [rec("m", "b", f"s{i}", "hit" if i < 2 else "miss", image="same", label="hallucinated", dist=50.0) for i in range(4)]
    four = [rec("m", "c", f"s{i}", "hit" if i < 2 else "miss", label="hallucinated", dist=50.0) for i in range(4)]
    write_records(tmp_path / "st" / "m" / "b.jsonl", one)
    write_records(tmp_path / "st" / "m" / "c.jsonl", four)
    rows = {r["benchmark"]: r for r in read_csv(aggregate(tmp_path / "st")["outcomes.csv"])}
    assert (rows["b"]["ci95_low_pct"], rows["b"]["ci95_high_pct"]) == ("50.0", "50.0")
    lo, hi = float(rows["c"]["ci95_low_pct"]), float(rows["c"]["ci95_high_pct"])
    assert lo < 50.0 < hi and 0.0 <= lo and hi <= 100.0


def test_box_official_absent_and_judge_agreement(tmp_path: Path) -> None:
    oth = Judgment(judge="ollama:gemma", status="labeled", label="wrong_instance")
    rs = [
        rec("m", "bx", "x1", "hit", task="box", box_class="hit", iou=0.8, official=1.0),
        rec("m", "bx", "x2", "miss", task="box", box_class="clipped", iou=0.5, official=0.0, label="wrong_instance", other=(oth,)),
        rec("m", "bx", "x3", "miss", task="box", box_class="oversized", iou=0.25, official=0.0, label="off_by_pixels", other=(oth,)),
        rec("m", "bx", "x4", "no_prediction", task="box", official=0.0, declined=True),
        rec("m", "ab", "a1", "no_prediction", absent=True, declined=True),
        rec("m", "ab", "a2", "miss", absent=True, label="hallucinated"),
        rec("m", "ab", "a3", "error", absent=True),
        rec("m", "ab", "a4", "no_prediction", absent=True),
    ]
    write_records(tmp_path / "st" / "m" / "bx.jsonl", rs[:4])
    write_records(tmp_path / "st" / "m" / "ab.jsonl", rs[4:])
    files = aggregate(tmp_path / "st")
    box = read_csv(files["box_outcomes.csv"])[0]
    assert [box[k] for k in ("n_box", "hit", "clipped", "oversized", "both", "malformed", "hit_pct")] == ["4", "1", "1", "1", "0", "1", "25.0"]
    g = read_csv(files["grounding.csv"])[0]
    # located present referents: x1 (0.8), x2 (0.5), x3 (0.25): >=0.25 3/3, >=0.5 2/3, >=0.75 1/3, >=0.9 0/3
    assert [g[k] for k in ("n_scored", "iou>=0.25_pct", "iou>=0.5_pct", "iou>=0.75_pct", "iou>=0.9_pct", "missed_a_present_referent")] == ["3", "100.0", "66.7", "33.3", "0.0", "1"]
    ab = {r["benchmark"]: r for r in read_csv(files["absent.csv"])}
    # a1 declined, a2 located (hallucinated), a3 error, a4 no location but no decline: n_absent 4
    assert [ab["ab"][k] for k in ("n_absent", "correctly_declined", "hallucinated_a_location", "no_location_no_decline",
                                  "error", "correctly_declined_pct")] == ["4", "1", "1", "1", "1", "25.0"]
    # x4 declined a present referent
    assert ab["bx"]["missed_a_present_referent"] == "1" and ab["pooled"]["n_absent"] == "4"
    # absent referents are in no hit rate: the outcomes table has no `ab` row
    assert "ab" not in {r["benchmark"] for r in read_csv(files["outcomes.csv"])}
    off = read_csv(files["official.csv"])[0]
    assert (off["benchmark"], off["n_official"], off["official_score_pct"], off["pointfail_hit_rate_pct"]) == ("bx", "4", "25.0", "25.0")
    ja = next(r for r in read_csv(files["judge_agreement.csv"]) if r["benchmark"] == "bx")
    assert (ja["both_labeled"], ja["agree"], ja["agreement_pct"]) == ("2", "1", "50.0")


def test_optional_tables_absent_for_point_only(toy: Path) -> None:
    files = aggregate(toy)
    assert not {"box_outcomes.csv", "absent.csv", "official.csv", "judge_agreement.csv"} & set(files)
    sums = files["SHA256SUMS"].decode().splitlines()
    assert [line.split("  ")[1] for line in sums] == sorted(n for n in files if n != "SHA256SUMS")


def test_duplicate_sample_rejected(tmp_path: Path) -> None:
    write_records(tmp_path / "st" / "m" / "b.jsonl", [rec("m", "b", "s1", "hit")])
    write_records(tmp_path / "st" / "m2" / "b.jsonl", [rec("m", "b", "s1", "hit")])
    with pytest.raises(AggregateError, match="duplicate sample 's1'"):
        load_study(tmp_path / "st")


def test_tables_do_not_depend_on_line_order(toy: Path, tmp_path: Path) -> None:
    a = build_tables(load_study(toy))
    other = tmp_path / "shuffled"
    for (m, b), rs in toy_records().items():
        p = other / m / f"{b}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(r.to_json() for r in reversed(rs)), encoding="utf-8")
    bb = build_tables(load_study(other))
    # the study name is part of the titles; compare with it normalized
    assert {k: v.replace(b"shuffled", b"toy") for k, v in bb.items() if k != "SHA256SUMS"} == {k: v for k, v in a.items() if k != "SHA256SUMS"}


def test_cli_aggregate_out_and_schema_error(toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pointfail.cli import main

    out = tmp_path / "elsewhere"
    assert main(["aggregate", str(toy), "--out", str(out)]) == 4  # written; alpha/b2/t7 is an error: incomplete
    assert (out / "SHA256SUMS").is_file() and not (toy / "tables").exists()
    p = toy / "alpha" / "b1.jsonl"
    p.write_text(p.read_text(encoding="utf-8").replace('"schema_version":2', '"schema_version":3', 1), encoding="utf-8")
    assert main(["aggregate", str(toy)]) == 1
    err = capsys.readouterr().err
    assert f"{p}:1: schema: schema_version" in err


def test_breakdown_axes_skip_identifiers_and_continuous_numbers(tmp_path: Path) -> None:
    rs = [
        rec("m", "b", f"s{i:02d}", "hit" if i % 2 else "miss", dist=5.0,
            meta={"source_id": f"src-{i}", "x_px": float(min(i, 28)), "level": i % 3, "app": "A" if i < 10 else "B", "const": "same"})
        for i in range(30)
    ]
    write_records(tmp_path / "st" / "m" / "b.jsonl", rs)
    rows = read_csv(aggregate(tmp_path / "st")["breakdowns.csv"])
    # source_id: 30 values for 30 samples (identifier); x_px: 29 numeric values (> 20, continuous);
    # const: one value. Kept: app (2 values), level (3 numeric levels).
    assert sorted({r["axis"] for r in rows}) == ["app", "level"]
    lvl = {r["value"]: (r["hit"], r["n"]) for r in rows if r["axis"] == "level"}
    # level 0: i = 0, 3, ..., 27 (10 samples, odd i hit: 3, 9, 15, 21, 27 -> 5)
    assert lvl == {"0": ("5", "10"), "1": ("5", "10"), "2": ("5", "10")}


def test_rewrite_removes_only_stale_tables(toy: Path) -> None:
    aggregate(toy)
    t = toy / "tables"
    (t / "notes.md").write_text("kept\n")  # not a table: never touched
    assert (t / "pairwise.csv").is_file()
    import shutil

    shutil.rmtree(toy / "beta")  # one model left: no pairwise table any more
    files = aggregate(toy)
    assert "pairwise.csv" not in files and not (t / "pairwise.csv").exists()
    assert (t / "notes.md").read_text() == "kept\n"


def test_study_toml_bootstrap_settings(toy: Path) -> None:
    (toy / "study.toml").write_text('[study]\nname = "toy"\n\n[aggregate]\nbootstrap_seed = 3\nbootstrap_resamples = 200\n')
    files = aggregate(toy)
    assert json.loads(files["summary.json"])["bootstrap"] == {"seed": 3, "resamples": 200, "level": 0.95, "cluster": "image"}
    assert "200 resamples, seed 3" in files["headline.md"].decode()


def test_registry_a_new_builder_adds_a_table_without_touching_the_others(toy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Extending the registry: one class, registered, folds rows and returns rows + column specs;
    the rendering (Markdown, CSV, SHA256SUMS) comes from pointfail.tables."""
    from pointfail.aggregate import registry
    from pointfail.tables import Table, count, text

    before = build_tables(load_study(toy))
    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))

    @registry.register
    class Tasks(registry.TableBuilder):
        name = "tasks"

        def __init__(self) -> None:
            self.n: dict[str, int] = {}

        def add(self, row, sample):  # type: ignore[no-untyped-def]
            self.n[row.model] = self.n.get(row.model, 0) + 1

        def tables(self, study):  # type: ignore[no-untyped-def]
            rows = [[m, self.n[m]] for m in sorted(self.n)]
            return [Table("tasks", f"Records per model: {study.name}", ["a note"], [text("model"), count("records")], rows)]

    files = build_tables(load_study(toy))
    assert files["tasks.csv"] == b"model,records\nalpha,11\nbeta,11\n"
    assert files["tasks.md"].decode().startswith("# Records per model: toy\n\n- a note\n")
    assert {k: v for k, v in files.items() if k not in ("tasks.csv", "tasks.md", "SHA256SUMS")} == {
        k: v for k, v in before.items() if k != "SHA256SUMS"
    }
    assert b"  tasks.csv\n" in files["SHA256SUMS"]


def test_a_second_builder_with_the_same_name_is_refused() -> None:
    from pointfail.aggregate import registry

    class Again(registry.TableBuilder):
        name = "headline"

    with pytest.raises(ValueError, match="two table builders named 'headline'"):
        registry.register(Again)


def test_pooled_folds_merge_the_benchmark_cells() -> None:
    from pointfail.aggregate.counting import with_pooled
    from pointfail.metrics import ExactSum

    a, b, c = ExactSum(), ExactSum(), ExactSum()
    a.extend([0.25, 0.5])
    b.add(1.0)
    c.add(2.0)
    out = with_pooled({("m", "x"): a, ("m", "y"): b, ("n", "x"): c}, ExactSum)
    assert out[("m", "pooled")].value() == Fraction(7, 4) and out[("m", "pooled")].count == 3
    assert out[("n", "pooled")].value() == 2


def test_duplicate_sample_in_one_file_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "st" / "m" / "b.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text(rec("m", "b", "s1", "hit").to_json() * 2, encoding="utf-8")
    with pytest.raises(AggregateError, match=r"duplicate sample 's1' for model 'm' on 'b' \(also in .*b\.jsonl\)"):
        load_study(tmp_path / "st")


def test_point_answer_to_box_task_is_one_thing_in_every_table(tmp_path: Path) -> None:
    """A box task answered with a point: a miss, box class malformed, IoU 0 in the grounding sweep
    (accuracy 0, not n/a), never a decline, and no failure mode (counted in malformed_box)."""
    rs = [rec("m", "bx", f"x{i}", "miss", task="box", box_class="malformed", label="off_by_pixels") for i in range(3)]
    for r in rs:  # the parse holds a point and no box
        r.parse = ParseResult(family="center", frame="unit", points=[[0.5, 0.5]])
        r.geometry.box = BoxScore(iou=None, box_class="malformed")
    write_records(tmp_path / "st" / "m" / "bx.jsonl", rs)
    files = aggregate(tmp_path / "st")
    g = read_csv(files["grounding.csv"])[0]
    assert [g[k] for k in ("n_box", "n_scored", "iou>=0.25_pct", "missed_a_present_referent")] == ["3", "3", "0.0", "0"]
    fc = read_csv(files["failure_composition.csv"])[0]
    assert (fc["miss"], fc["labeled"], fc["malformed_box"], fc["off_by_pixels"]) == ("3", "0", "3", "0")
    box = read_csv(files["box_outcomes.csv"])[0]
    assert box["malformed"] == "3"
    for name in ("grounding.md", "failure_composition.md", "box_outcomes.md", "outcomes.md", "headline.md"):
        assert "Answer-form rule" in files[name].decode(), name


def test_errors_mark_the_study_incomplete(toy: Path) -> None:
    files = aggregate(toy)  # alpha/b2/t7 is an infrastructure error
    for name, data in files.items():
        if name.endswith(".md"):
            assert "INCOMPLETE STUDY: 1 sample(s)" in data.decode(), name
    from pointfail.aggregate import verify

    res = verify(toy, checks=())  # hand-made records: tables only (re-derivation: tests/test_integrity.py)
    assert res.ok and res.incomplete and res.errors == 1


def test_breakdowns_leave_out_mostly_unique_axes(tmp_path: Path) -> None:
    # 6 samples, `target_id` takes 4 values (more than half): left out and named; `language` kept
    rs = [rec("m", "b", f"s{i}", "hit", meta={"target_id": f"t{min(i, 3)}", "language": "en" if i % 2 else "de"})
          for i in range(6)]
    write_records(tmp_path / "st" / "m" / "b.jsonl", rs)
    files = aggregate(tmp_path / "st")
    axes = {r["axis"] for r in read_csv(files["breakdowns.csv"])}
    assert "language" in axes and "target_id" not in axes
    assert "Left out as mostly unique: b: target_id." in files["breakdowns.md"].decode()


def test_failure_by_category(toy: Path, tmp_path: Path) -> None:
    rs = [rec("m", "b", "s1", "miss", label="wrong_instance", meta={"category": "cell"}),
          rec("m", "b", "s2", "miss", label="hallucinated", meta={"category": "cell"}),
          rec("m", "b", "s3", "hit", meta={"category": "word"})]
    write_records(tmp_path / "st" / "m" / "b.jsonl", rs)
    rows = {r["category"]: r for r in read_csv(aggregate(tmp_path / "st")["failure_by_category.csv"])}
    assert (rows["cell"]["n"], rows["cell"]["wrong_instance_pct"], rows["cell"]["hallucinated_pct"]) == ("2", "50.0", "50.0")
    assert (rows["word"]["n"], rows["word"]["miss"], rows["word"]["off_by_pixels_pct"]) == ("1", "0", "n/a")
