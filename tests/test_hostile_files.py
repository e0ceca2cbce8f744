"""Hostile files (issue 24): deep JSON where a file is read, booleans as coordinates, a flood of bad
reply lines, ``--out`` that would overwrite or fill what is read, a full disk, and a record holding a
lone surrogate in a batch: each a listed problem or one line, never a traceback, nothing else lost."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from pointfail.cli import main
from pointfail.records import ImageRef, ParseResult, Prompt, Record, Response, Target, read_records, write_records
from pointfail.inputs.replies import MAX_LISTED_PROBLEMS, read_replies

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_json_in_a_replies_file_is_a_listed_problem(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps({"id": "a", "text": "x"}) + "\n" + DEEP + "\n" + json.dumps({"id": "b", "text": "y"}) + "\n")
    rf = read_replies(p)
    assert sorted(rf.replies) == ["a", "b"]
    assert [(x.where, x.kind, x.detail) for x in rf.problems] == [("line 2", "unparseable", "JSON nested too deeply to read")]
    q = tmp_path / "l.json"  # the JSON-list layout, nested too deeply: read line by line, listed
    q.write_text("[" + DEEP + "]")
    rf = read_replies(q)
    assert rf.replies == {} and [x.kind for x in rf.problems] == ["unparseable"]


def test_booleans_are_not_coordinates(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(json.dumps(o) for o in (
        {"id": "a", "point": [True, False]},           # would be pixel (1, 0) through float()
        {"id": "b", "x": True, "y": 3},
        {"id": "c", "point": [4, 5]},
        {"id": "d", "point": [True, 1], "text": "(4, 5)"},  # the text is still the reply
    )) + "\n")
    rf = read_replies(p)
    assert sorted(rf.replies) == ["c", "d"] and rf.replies["d"].coordinates == {}
    assert [(x.where, x.kind) for x in rf.problems] == [("line 1", "bad_coordinates"), ("line 2", "bad_coordinates"),
                                                         ("line 4", "bad_coordinates")]
    assert "booleans are not coordinates (point)" in rf.problems[0].detail
    assert "(x)" in rf.problems[1].detail


def test_a_flood_of_bad_lines_is_listed_up_to_the_cap_and_counted(tmp_path):
    n = MAX_LISTED_PROBLEMS + 2345
    p = tmp_path / "r.jsonl"
    p.write_text("{not json\n" * n + json.dumps({"id": "a", "text": "x"}) + "\n")
    rf = read_replies(p)
    assert len(rf.problems) == MAX_LISTED_PROBLEMS and rf.left_off == {"unparseable": 2345}
    assert rf.counts()["unparseable"] == n and rf.entries == n + 1 and list(rf.replies) == ["a"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    d = tmp_path_factory.mktemp("suite") / "sheets"
    assert main(["generate", "sheets", "--n", "4", "--seed", "3", "--out", str(d)]) == 0
    return d


def _evaluate(suite: Path, replies: Path, out: Path) -> list[str]:
    return ["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies), "--out", str(out),
            "--family", "molmo", "--no-report", "--no-view", "--judge", "none", "--no-progress"]


def test_evaluate_bounds_its_problem_list_and_refuses_bad_out(suite, tmp_path, capsys):
    rows = [json.loads(x) for x in (suite / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    replies = tmp_path / "m.jsonl"
    bad = MAX_LISTED_PROBLEMS + 500
    replies.write_text(DEEP + "\n" + "{bad\n" * bad
                       + "".join(json.dumps({"id": r["id"], "text": '<point x="50" y="50">x</point>'}) + "\n"
                                 for r in rows))
    out = tmp_path / "out"
    assert main(_evaluate(suite, replies, out)) == 0
    res = json.loads((out / "evaluation.json").read_text())
    assert len(res["problems"]) == MAX_LISTED_PROBLEMS
    assert res["problems_left_off"] == bad + 1 - MAX_LISTED_PROBLEMS
    assert res["replies"]["unparseable"] == bad + 1 and res["records"] == len(rows)
    assert res["problems"][0]["detail"] == "JSON nested too deeply to read"
    assert f"{bad + 1 - 10} more" in capsys.readouterr().out  # SHOW_PROBLEMS lines printed, the rest counted

    a_file = tmp_path / "a-file"
    a_file.write_text("keep me")
    assert main(_evaluate(suite, replies, a_file)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists and is not a folder" in err and "Traceback" not in err
    assert a_file.read_text() == "keep me"
    before = sorted(str(p) for p in suite.rglob("*"))
    assert main(_evaluate(suite, replies, suite / "data" / "results")) == 2
    assert "inside the benchmark's data folder" in capsys.readouterr().err
    assert sorted(str(p) for p in suite.rglob("*")) == before


def test_a_full_disk_is_one_line_naming_the_file_and_nothing_half_written(suite, tmp_path, capsys, monkeypatch):
    rows = [json.loads(x) for x in (suite / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    replies = tmp_path / "m.jsonl"
    replies.write_text("".join(json.dumps({"id": r["id"], "text": '<point x="50" y="50">x</point>'}) + "\n"
                               for r in rows))
    out = tmp_path / "out"
    real_fsync = os.fsync

    def full(fd):  # the disk fills when the records file is flushed
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    assert main(_evaluate(suite, replies, out)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "cannot write" in err and "No space left on device" in err and str(out) in err
    assert not any(p.name.endswith(".tmp") for p in out.rglob("*"))  # the temporary files removed
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert main(_evaluate(suite, replies, out)) == 0  # the rerun finishes
    assert len(read_records(out / "m" / "sheets.jsonl")) == len(rows)


def _record(sid: str, text: str) -> Record:
    return Record(study="s", model="m", family="center", benchmark="b", sample_id=sid,
                  image=ImageRef(path="i.png", width=10, height=10), target=Target(kind="boxes", boxes=[[0, 0, 5, 5]]),
                  prompt=Prompt(original="p", core="p", sent="p"), response=Response(raw_text=text),
                  parse=ParseResult(family="center", frame="unit", points=[[0.5, 0.5]]), outcome="miss")


def test_one_record_with_a_lone_surrogate_never_costs_the_batch(tmp_path):
    p = tmp_path / "r.jsonl"
    recs = [_record("a", "fine"), _record("b", "bad \udcff reply"), _record("c", "fine too")]
    assert write_records(p, recs) == 3
    back = read_records(p)
    assert [r.sample_id for r in back] == ["a", "b", "c"]
    assert [r.response.raw_text for r in back] == ["fine", "bad \ufffd reply", "fine too"]


def test_deep_json_in_a_study_lock_and_benchmark_metadata_is_a_clear_error(tmp_path):
    from pointfail.inputs.benchmarks import BenchmarkError
    from pointfail.inputs.benchmarks._common import read_json, read_jsonl
    from pointfail.inputs.studylock import LockError, read_lock

    lock = tmp_path / "study.lock"
    lock.write_text(DEEP)
    with pytest.raises(LockError, match="nested too deeply"):
        read_lock(lock)
    meta = tmp_path / "metadata.jsonl"
    meta.write_text('{"id": 1}\n' + DEEP + "\n")
    with pytest.raises(BenchmarkError, match=r"metadata.jsonl:2: JSON nested too deeply"):
        read_jsonl(meta, "b")
    with pytest.raises(BenchmarkError, match="nested too deeply"):
        read_json(lock, "b")


def test_a_study_lock_breaking_the_format_names_every_entry(tmp_path):
    """read_lock lists every broken entry, one line each, and refuses the lock; a well-formed one comes back."""
    from pointfail.inputs.studylock import SCHEMA, LockError, read_lock

    rev, h = "a" * 40, "b" * 64
    good = {"repo_id": "o/r", "repo_type": "dataset", "revision": rev, "files": {"d/x.zip": h},
            "archives": {"d/x.zip": {"sha256": h, "members": ["m.png"]}}}
    lock = tmp_path / "study.lock"
    lock.write_text(json.dumps({"schema": SCHEMA, "benchmarks": {"ok": good}, "judge": {"j": {"model": "m", "digest": "d"}}}))
    assert read_lock(lock)["benchmarks"]["ok"] == good and read_lock(lock)["models"] == {}
    lock.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(LockError, match="not a "):
        read_lock(lock)
    lock.write_text(json.dumps({"schema": SCHEMA, "models": [], "benchmarks": {
        "short": {"revision": "main", "files": {}},
        "paths": {**good, "files": {"/abs": h, "a/../b": h, "c": "nothex"}, "archives": {}},
        "arch": {**good, "archives": {"d/x.zip": {"sha256": "0" * 64, "members": []}}}},
        "judge": {"j": {"model": 1}}}))
    with pytest.raises(LockError) as e:
        read_lock(lock)
    assert str(e.value).split("\n  ")[1:] == [
        "benchmarks.short: needs repo_id, repo_type, a 40-hex revision and files",
        "benchmarks.paths: bad file entries ['/abs', 'a/../b', 'c']",
        "benchmarks.arch: archives must map a locked file to its sha256 and member list",
        "models: not an object",
        "judge: must map a judge to its model and digest"]
