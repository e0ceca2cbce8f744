"""Human labels as a judge: ``pointfail judge STUDY --judge human --labels FILE``."""

from __future__ import annotations

import json

from judge_fixtures import make_study
from pointfail.cli import main
from pointfail.records import read_records

O, I, C, H = "off_by_pixels", "wrong_instance", "wrong_category", "hallucinated"


def line(sid, label, annotator="alice", **kw):
    return json.dumps({"model": "m", "benchmark": "suite", "sample_id": sid, "label": label,
                       "annotator": annotator, **kw})


def test_labels_become_verdicts_and_bad_lines_are_listed(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=4)  # oracle labels O, I, C, H for miss-000..003
    assert main(["judge", str(study), "--no-progress"]) == 0
    labels = tmp_path / "labels.jsonl"
    lines = [
        line("miss-000", O),                      # 1 agrees with the oracle
        line("miss-001", C),                      # 2 disagrees
        line("miss-002", "cant_tell"),            # 3 an abstention
        line("hit-000", O),                       # 4 not a miss
        line("miss-003", "hallucinated?"),        # 5 unknown label
        "{not json",                              # 6
        line("miss-003", H, annotator="bob"),     # 7 bob: two lines about miss-003, neither used
        line("miss-003", I, annotator="bob"),     # 8
        line("miss-000", O, annotator="bob", note="extra fields are kept in the raw line"),  # 9
        "",                                       # blank: skipped
        line("miss-001", I, annotator="no spaces allowed"),  # 11
    ]
    labels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = {r.sample_id: r.judge for r in read_records(study / "m" / "suite.jsonl")}
    capsys.readouterr()
    rc = main(["judge", str(study), "--judge", "human", "--labels", str(labels), "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 3  # some lines were refused
    assert "human:alice (other): 1 files, 4 misses" in cap.out and "human:bob (other)" in cap.out
    err = cap.err
    assert "5 problems in" in err
    for needle in (":4: no miss m/suite/hit-000 in this study", ":5: unknown label 'hallucinated?'", ":6: not JSON",
                   ":7, 8: annotator bob labeled m/suite/miss-003 2 times; none of these lines is used",
                   ":11: annotator 'no spaces allowed' is not an identifier"):
        assert needle in err, needle
    recs = {r.sample_id: r for r in read_records(study / "m" / "suite.jsonl")}
    # the primary (oracle) verdicts are untouched; the humans are further judges
    assert {k: r.judge for k, r in recs.items()} == before
    others = {k: {j.judge: j for j in r.other_judgments} for k, r in recs.items()}
    a0 = others["miss-000"]["human:alice"]
    assert (a0.status, a0.label, a0.attempts[0].reply, a0.attempts[0].verdict) == ("labeled", O, lines[0], "accepted")
    assert "labels.jsonl line 1" in a0.detail
    a2 = others["miss-002"]["human:alice"]
    assert (a2.status, a2.label, a2.attempts[0].verdict) == ("unlabeled", None, "cant_tell")
    assert set(others["miss-000"]) == {"human:alice", "human:bob"} and others["miss-000"]["human:bob"].attempts[0].reply == lines[8]
    assert "human:bob" not in others["miss-003"] and others["miss-003"] == {}
    assert others["hit-000"] == {}

    # agreement of the person with the oracle, over the misses both labeled (miss-000, miss-001)
    assert main(["judge-agreement", str(study), "--between", "oracle", "human:alice", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert (p["n"], p["compared"], p["percent_agreement"]) == (2, 3, 0.5)
    assert p["confusion"][C]["unlabeled"] == 1  # alice could not tell on the oracle's wrong_category
    # rerunning the same file judges nothing again
    assert main(["judge", str(study), "--judge", "human", "--labels", str(labels), "--no-progress", "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert [(r["judge"], r["already"], r["judged"]) for r in out["reports"]] == [("human:alice", 3, 0), ("human:bob", 1, 0)]
    assert len(out["refused"]) == 5


def test_two_annotators_cannot_both_be_primary_and_a_missing_file_is_a_usage_error(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=2)
    labels = tmp_path / "l.jsonl"
    labels.write_text(line("miss-000", O) + "\n" + line("miss-000", I, annotator="bob") + "\n")
    assert main(["judge", str(study), "--judge", "human", "--labels", str(labels), "--role", "primary"]) == 2
    assert "cannot all be the primary judge" in capsys.readouterr().err
    assert main(["judge", str(study), "--judge", "human"]) == 2
    assert "--judge human needs --labels FILE" in capsys.readouterr().err
    assert main(["judge", str(study), "--judge", "human", "--labels", str(tmp_path / "none.jsonl")]) == 2
    assert "cannot read --labels" in capsys.readouterr().err


def test_one_annotator_as_primary_judge(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=2)
    labels = tmp_path / "l.jsonl"
    labels.write_text(line("miss-000", O) + "\n" + line("miss-001", I) + "\n")
    assert main(["judge", str(study), "--judge", "human", "--labels", str(labels), "--role", "primary",
                 "--no-progress"]) == 0
    recs = {r.sample_id: r for r in read_records(study / "m" / "suite.jsonl")}
    assert (recs["miss-000"].judge.judge, recs["miss-000"].failure_mode) == ("human:alice", O)
    assert recs["miss-001"].failure_mode == I


def test_an_overlong_line_is_refused_without_reading_it_whole(tmp_path):
    from pointfail.running.judges.human import MAX_LINE_CHARS, read_labels

    p = tmp_path / "l.jsonl"
    p.write_text("x" * (5 * MAX_LINE_CHARS) + "\n" + line("miss-000", O) + "\n")
    got = read_labels(p)
    assert got.problems == [f"{p}:1: line longer than {MAX_LINE_CHARS} characters"]
    assert list(got.labels["alice"]) == [("m", "suite", "miss-000")]
