"""``pointfail judge`` and ``pointfail aggregate`` exit as ``pointfail evaluate`` does when samples
ended in an infrastructure error: 4, with INCOMPLETE and the count on the terminal (0 done; 2 unusable
input; 3 a judge left misses or its server is unavailable). ``verify`` says INCOMPLETE too."""

from __future__ import annotations

from pathlib import Path

from judge_fixtures import make_study
from pointfail.cli import main
from pointfail.records import Response, iter_records, records_files, write_records

STUDY_TOML = '[study]\nname = "s"\nprimary_judge = "oracle"\n\n[judge]\noracle_tolerance_px = 8\n'


def _with_errors(tmp_path: Path, n_errors: int) -> Path:
    """make_study's study (4 misses, 2 hits, 1 no_prediction) with ``n_errors`` of its hits turned
    into infrastructure errors (no reply: outcome ``error``, the server's reason kept)."""
    study = make_study(tmp_path, n_misses=4)
    (study / "study.toml").write_text(STUDY_TOML)
    (path,) = records_files(study)
    recs = list(iter_records(path))
    hits = [i for i, r in enumerate(recs) if r.outcome == "hit"]
    for i in hits[:n_errors]:
        recs[i] = recs[i].model_copy(update={"outcome": "error",
                                             "response": Response(raw_text="", error="server: HTTP 400: pinned")})
    write_records(path, recs)
    return study


def test_judge_and_aggregate_exit_4_on_errors_and_say_incomplete(tmp_path, capsys):
    study = _with_errors(tmp_path, 2)
    assert main(["judge", str(study), "--no-progress"]) == 4  # every miss got its verdict; 2 errors left
    cap = capsys.readouterr()
    assert "oracle (primary): 1 files, 4 misses" in cap.out
    assert cap.err.strip().startswith(f"INCOMPLETE {study}: 2 sample(s) ended in an infrastructure error")
    assert main(["judge", str(study), "--no-progress", "--json"]) == 4  # a rerun: nothing to judge, still 4
    capsys.readouterr()
    assert main(["aggregate", str(study)]) == 4
    cap = capsys.readouterr()
    assert f"INCOMPLETE {study}: 2 sample(s) ended in an infrastructure error" in cap.err
    assert "2 INCOMPLETE" in cap.out  # the headline's error cell, as evaluate prints it
    assert "INCOMPLETE STUDY: 2 sample(s)" in (study / "tables" / "headline.md").read_text()
    assert main(["verify", str(study), "--tables-only"]) == 0  # the tables match: verify passes, and says so
    out = capsys.readouterr().out
    assert f"INCOMPLETE {study}: 2 sample(s) ended in an infrastructure error" in out and f"OK {study}" in out


def test_a_complete_study_exits_0(tmp_path, capsys):
    study = _with_errors(tmp_path, 0)
    assert main(["judge", str(study), "--no-progress"]) == 0
    assert main(["aggregate", str(study)]) == 0
    cap = capsys.readouterr()
    assert "INCOMPLETE" not in cap.out + cap.err


def test_errors_come_before_misses_left_without_a_verdict(tmp_path, capsys):
    """As evaluate: 4 (an incomplete study) wins over 3 (a judge left misses), both said."""
    from pointfail.generated.testing.ollama_fake import Action, FakeOllama

    study = _with_errors(tmp_path, 1)
    with FakeOllama([Action(status=500)] * 40) as srv:
        rc = main(["judge", str(study), "--judge", "ollama", "--host", srv.url, "--transport-retries", "0",
                   "--no-progress"])
    cap = capsys.readouterr()
    assert rc == 4 and "judge_unavailable" in cap.out and "INCOMPLETE" in cap.err


def test_unusable_input(tmp_path, capsys):
    """2 for arguments that cannot be used; aggregate's 1 (records that cannot be read) stays."""
    assert main(["judge", str(tmp_path / "nowhere"), "--no-progress"]) == 2
    a, b = _with_errors(tmp_path / "a", 0), _with_errors(tmp_path / "b", 0)
    assert main(["aggregate", str(a), str(b), "--out", str(tmp_path / "t")]) == 2
    assert "--out needs exactly one study" in capsys.readouterr().err
    assert main(["aggregate", str(tmp_path / "nowhere")]) == 1
