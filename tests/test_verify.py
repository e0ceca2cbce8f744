"""`pointfail verify`: byte-identical regeneration across hash seeds, locales, time zones and shuffled
record lines; one changed byte in one record fails with a diff naming the table.

The toy records here are hand-made (fields set, not parsed from a reply), so these tests compare
tables only (``--tables-only`` / ``checks=()``); re-derivation and record digests are tested on the
committed default study in ``tests/test_integrity.py``."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pointfail.aggregate import aggregate, verify
from pointfail.cli import main
from test_aggregate import toy_study


def _locales() -> set[str]:
    try:
        out = subprocess.run(["locale", "-a"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {line.strip().lower().replace("utf-8", "utf8") for line in out.splitlines()}


def second_locale() -> str:
    """A second locale besides C.UTF-8: Turkish (dotless i, comma decimal separator) when it is
    generated on this machine (``localedef -i tr_TR -f UTF-8 tr_TR.UTF-8``), else plain ``C``
    (POSIX, ASCII), which every system has."""
    return "tr_TR.UTF-8" if "tr_tr.utf8" in _locales() else "C"


def run_cli(args: list[str], *, hashseed: str, locale: str, tz: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(PYTHONHASHSEED=hashseed, LC_ALL=locale, LANG=locale, TZ=tz)
    return subprocess.run([sys.executable, "-m", "pointfail", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def shuffle_lines(study: Path, seed: int) -> None:
    for p in sorted(study.glob("*/*.jsonl")):
        lines = p.read_text(encoding="utf-8").splitlines(keepends=True)
        random.Random(seed).shuffle(lines)
        p.write_text("".join(lines), encoding="utf-8")


@pytest.fixture
def study(tmp_path: Path) -> Path:
    return toy_study(tmp_path / "toy")


@pytest.mark.slow
def test_verify_across_hashseed_locale_tz_and_shuffled_lines(study: Path) -> None:
    loc2 = second_locale()
    agg = run_cli(["aggregate", str(study)], hashseed="0", locale="C.UTF-8", tz="UTC", cwd=study.parent)
    assert agg.returncode == 4, agg.stderr  # written; the toy study holds an error record (incomplete)
    committed = {p.name: p.read_bytes() for p in (study / "tables").iterdir()}
    before = {p: p.read_bytes() for p in study.glob("*/*.jsonl")}
    shuffle_lines(study, seed=7)
    # the records really were reordered (same lines, different order)
    changed = [p for p in before if p.read_bytes() != before[p]]
    assert changed and all(sorted(p.read_bytes().splitlines()) == sorted(before[p].splitlines()) for p in before)
    for hashseed, loc, tz in (("1", loc2, "Asia/Kathmandu"), ("0", "C.UTF-8", "America/St_Johns"), ("1", "C.UTF-8", "UTC")):
        res = run_cli(["verify", "--tables-only", str(study)], hashseed=hashseed, locale=loc, tz=tz, cwd=study.parent)
        assert res.returncode == 0, (hashseed, loc, tz, res.stdout, res.stderr)
        assert "OK " in res.stdout and "75.0 [25.0, 100.0]" in res.stdout
    # verify wrote nothing into the committed tables
    assert {p.name: p.read_bytes() for p in (study / "tables").iterdir()} == committed


def test_one_changed_byte_fails_with_diff(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aggregate(study)
    p = study / "alpha" / "b2.jsonl"
    data = p.read_bytes()
    old = b'"distance_px":40.0'
    assert data.count(old) == 1
    p.write_bytes(data.replace(old, b'"distance_px":49.0'))  # one byte: 0 -> 9
    rc = main(["verify", "--tables-only", str(study)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "tables/tolerance.csv: differs from the regenerated table" in out
    assert "tables/pointing.csv: differs" in out
    assert "--- committed/tolerance.csv" in out and "+++ regenerated/tolerance.csv" in out
    # at t = 40..48 px the 40 px miss no longer counts: alpha b2 falls from 4/7 hits to 3/7 (the
    # infrastructure error is one of the 7, a non-hit)
    assert "-alpha,b2,40,4,7,57.1\n" in out and "+alpha,b2,40,3,7,42.9\n" in out
    # the headline (hit rates) is unchanged by a distance
    assert "headline" not in out


def test_schema_failure_names_file_and_line(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aggregate(study)
    p = study / "beta" / "b2.jsonl"
    lines = p.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace('"outcome":"no_prediction"', '"outcome":"no_predictiom"')
    p.write_text("".join(lines), encoding="utf-8")
    rc = main(["verify", "--tables-only", str(study)])
    out = capsys.readouterr().out
    assert rc == 1
    assert f"{p}:3: schema: outcome" in out


def test_tampered_table_and_sums_still_fail(study: Path) -> None:
    files = aggregate(study)
    t = study / "tables"
    edited = files["headline.csv"].replace(b"alpha,b1,4,3,75.0", b"alpha,b1,4,3,85.0")
    (t / "headline.csv").write_bytes(edited)
    res = verify(study, checks=())
    assert not res.ok
    assert any("headline.csv: does not match its line in the committed SHA256SUMS" in s for s in res.problems)
    assert "-alpha,b1,4,3,85.0" in res.diffs["headline.csv"]
    # also rewrite SHA256SUMS to match the edit: regeneration still catches it
    from pointfail.tables import sha256sums

    committed = {p.name: p.read_bytes() for p in t.iterdir() if p.name != "SHA256SUMS"}
    (t / "SHA256SUMS").write_bytes(sha256sums(committed))
    res = verify(study, checks=())
    assert not res.ok and set(res.diffs) == {"headline.csv", "SHA256SUMS"}


def test_missing_and_unexpected_tables(study: Path) -> None:
    aggregate(study)
    (study / "tables" / "pairwise.md").unlink()
    (study / "tables" / "extra.csv").write_text("x\n")
    res = verify(study, checks=())
    assert not res.ok
    joined = "\n".join(res.problems)
    assert "pairwise.md: missing" in joined and "extra.csv: unexpected" in joined


def test_verify_records_root_with_several_studies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = toy_study(tmp_path / "records" / "one")
    b = toy_study(tmp_path / "records" / "two")
    assert main(["aggregate", str(tmp_path / "records")]) == 4  # written; each toy study holds an error record
    assert main(["verify", "--tables-only", str(tmp_path / "records")]) == 0
    out = capsys.readouterr().out
    assert f"OK {a}" in out and f"OK {b}" in out
    (b / "tables" / "outcomes.csv").write_bytes(b"x\n")
    assert main(["verify", "--tables-only", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert f"OK {a}" in out and f"FAIL {b}" in out


def test_verify_without_committed_tables(study: Path) -> None:
    res = verify(study, checks=())
    assert not res.ok and "no committed tables" in res.problems[0]


def test_records_root_skips_studies_without_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = toy_study(tmp_path / "records" / "one")
    (tmp_path / "records" / "planned").mkdir()
    (tmp_path / "records" / "planned" / "study.toml").write_text('[study]\nname = "planned"\n')
    aggregate(a)
    assert main(["verify", "--tables-only", str(tmp_path / "records")]) == 0
    out = capsys.readouterr().out
    assert f"SKIP {tmp_path / 'records' / 'planned'}: study.toml but no records yet" in out and f"OK {a}" in out
    # named explicitly, a study without records is an error
    assert main(["verify", "--tables-only", str(tmp_path / "records" / "planned")]) == 1
    assert "no records files" in capsys.readouterr().out


class _NoMisses:
    """A record check for the test below: every miss is a problem."""

    def __init__(self, study_dir: Path) -> None:
        self.found: list[str] = []

    def observe(self, record, path, line) -> None:  # type: ignore[no-untyped-def]
        if record.outcome == "miss":
            self.found.append(f"{path.name}:{line}: {record.sample_id} is a miss")

    def problems(self) -> list[str]:
        return self.found


def test_verify_runs_further_record_checks_in_the_same_scan(study: Path) -> None:
    aggregate(study)
    assert verify(study, checks=()).ok
    res = verify(study, checks=["test_verify:_NoMisses"])
    assert not res.ok and res.checks == ["test_verify:_NoMisses"]
    # alpha/b1 has one miss (s4, line 4), alpha/b2 three (t2..t4), beta/b2 one (t7)
    assert res.problems == ["b1.jsonl:4: s4 is a miss", "b2.jsonl:2: t2 is a miss", "b2.jsonl:3: t3 is a miss",
                            "b2.jsonl:4: t4 is a miss", "b2.jsonl:7: t7 is a miss"]
    assert res.diffs == {}


def test_every_table_is_checked_without_the_mask_files(tmp_path, monkeypatch):
    """The rehearsal's mask files live under data/, which a fresh checkout lacks. The frame_compliance
    table reads the readings each record stores (no mask), so verify checks every table byte for byte;
    what it cannot do without the masks, re-derive those records' outcomes and readings, it says by
    count (the 80 rehearsal records all have mask targets)."""
    import shutil

    study = tmp_path / "pointfail-vlm-rehearsal"
    shutil.copytree(Path(__file__).resolve().parents[1] / "records/pointfail-vlm-rehearsal", study)
    monkeypatch.chdir(tmp_path)  # the records' data/... mask paths resolve to nothing here
    res = verify(study)
    assert res.ok, res.problems
    assert len(res.not_checked) == 1 and res.not_checked[0].startswith("80 record(s) whose mask file is not on")
    (study / "tables/frame_compliance.md").write_text("tampered\n")
    bad = verify(study)
    assert not bad.ok and any("frame_compliance.md" in p for p in bad.problems)