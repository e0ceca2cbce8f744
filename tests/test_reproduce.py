"""The reproduce driver's pure parts: generator commands, manifest and table comparison, prereqs."""

import hashlib
import json
from pathlib import Path

import pytest

from pointfail_runner import prereqs, reproduce
from pointfail_runner.cli import main as runner_main

REPO = Path(__file__).resolve().parents[1]


def test_generator_command_for_each_suite_kind():
    assert reproduce.generator_command({"name": "sheets", "generator": "sheets", "n": 150, "seed": 7}) == [
        "sheets", "--n", "150", "--seed", "7", "--out", "/out/sheets"]
    assert reproduce.generator_command(
        {"name": "web", "generator": "web", "n": 5, "seed": 1, "pages": "debian-docs"})[-2:] == ["--pages", "debian-docs"]
    # a study benchmark with absent referents passes its share to the generator
    assert reproduce.generator_command(
        {"name": "text", "generator": "text", "n": 5, "seed": 1, "absent_share": 0.1})[-2:] == ["--absent-share", "0.1"]


def _manifest(path, files, environment):
    path.write_text(json.dumps({"schema": "pointfail.suite_manifest/2", "suite": "web", "files": files,
                                "environment": environment}))
    return path


def test_compare_manifest_separates_content_from_drift_and_sets_the_exit_code(tmp_path, capsys):
    files = {"data/test/0000.png": "aa" * 32, "data/test/metadata.jsonl": "bb" * 32}
    a = _manifest(tmp_path / "a.json", files, {"pillow": "13.0.0", "browser": "156"})
    same = _manifest(tmp_path / "b.json", files, {"pillow": "13.0.0", "browser": "156"})
    cmp = reproduce.compare_manifest(same, a)
    assert cmp.content_matches and cmp.environment == []
    assert reproduce.summarize("s", [reproduce.SuiteCheck("web", a, cmp)], [], tmp_path) == reproduce.EXIT_OK

    # a newer browser that renders the same pixels: drift, printed, exit 0
    newer = _manifest(tmp_path / "c.json", files, {"pillow": "13.0.0", "browser": "157"})
    cmp = reproduce.compare_manifest(newer, a)
    assert cmp.content_matches
    capsys.readouterr()
    rc = reproduce.summarize("s", [reproduce.SuiteCheck("web", a, cmp)], [], tmp_path)
    out = capsys.readouterr().out
    assert rc == reproduce.EXIT_OK
    assert "suite web: browser: '156' -> '157'" in out and "OK: study s reproduced (with environment drift" in out

    # one changed image: named with the version change, tables still compared; exit 3, or 4 with a table diff
    changed = _manifest(tmp_path / "d.json", dict(files, **{"data/test/0000.png": "cc" * 32}),
                        {"pillow": "13.0.0", "browser": "157"})
    cmp = reproduce.compare_manifest(changed, a)
    assert cmp.content == [f"data/test/0000.png: committed {'aa' * 6}, regenerated {'cc' * 6}"]
    checks = [reproduce.SuiteCheck("web", a, cmp)]
    rc = reproduce.summarize("s", checks, [], tmp_path)
    out = capsys.readouterr().out
    assert rc == reproduce.EXIT_CONTENT_DRIFT == 3
    assert "CONTENT DRIFT" in out and "data/test/0000.png: committed" in out and "browser: '156' -> '157'" in out
    assert "suite content drifted; every table still matches" in out
    rc = reproduce.summarize("s", checks, ["--- committed/headline.md"], tmp_path)
    assert rc == reproduce.EXIT_TABLES_DIFFER == 4
    assert "tables differ (suite content drifted too" in capsys.readouterr().out


def test_compare_tables_gives_a_unified_diff_per_differing_table(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "hit_rate.md").write_text("| m | 50.0 |\n")
    (new / "hit_rate.md").write_text("| m | 50.0 |\n")
    assert reproduce.compare_tables(new, old) == []
    (new / "hit_rate.md").write_text("| m | 51.0 |\n")
    (new / "extra.csv").write_text("x\n")
    diffs = reproduce.compare_tables(new, old)
    assert diffs[0] == f"{old / 'extra.csv'}: missing (regeneration produces it)"
    assert "-| m | 50.0 |" in diffs[1] and "+| m | 51.0 |" in diffs[1] and len(diffs) == 2
    # the committed SHA256SUMS is checked as pointfail verify checks it; records.sha256 is left out
    digest = hashlib.sha256(b"a\n").hexdigest()  # the committed digests match the committed records.sha256
    (old / "SHA256SUMS").write_text("0" * 64 + "  hit_rate.md\n" + digest + "  records.sha256\n")
    (old / "records.sha256").write_text("a\n")
    (new / "records.sha256").write_text("b\n")
    diffs = reproduce.compare_tables(new, old)
    assert f"{old / 'hit_rate.md'}: does not match its line in the committed SHA256SUMS" in diffs
    assert not any("records.sha256" in d for d in diffs)


def test_missing_packages_reports_an_unknown_package():
    assert prereqs.missing_packages(("surely-not-a-debian-package-pointfail",)) == [
        "surely-not-a-debian-package-pointfail"]


def test_check_only_prints_the_install_command(capsys):
    with pytest.raises(prereqs.PrereqError) as e:
        prereqs.ensure_packages(("surely-not-a-debian-package-pointfail",), install=False)
    assert "apt-get install -y --no-install-recommends surely-not-a-debian-package-pointfail" in str(e.value)


def test_source_study_stops_before_any_work_with_what_is_missing(capsys):
    rc = runner_main(["--repo", str(REPO), "reproduce", "--study", str(REPO / "records/pointfail-vlm/study.toml"),
                      "--no-install"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "missing before any work" in err
    for name in ("point-bench", "where2place", "refspatial", "molmo-7b-d", "molmoe-1b", "qwen2.5-vl-3b", "internvl3-2b"):
        assert name in err
    assert "pointfail data fetch point-bench --study records/pointfail-vlm/study.toml" in err
    assert "pointfail weights fetch qwen2.5-vl-3b --study records/pointfail-vlm/study.toml" in err
    # every printed command exists: tests/test_standin_hub.py runs each against the stand-in hub


def test_committed_default_tables_regenerate_in_another_directory(tmp_path):
    """make reproduce aggregates under work/, so table bytes must not depend on the directory name:
    the study's name comes from its study.toml."""
    import shutil
    import subprocess
    import sys

    src = REPO / "records" / "default"
    dst = tmp_path / "records-elsewhere"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("tables", "report"))
    out = subprocess.run([sys.executable, "-m", "pointfail", "aggregate", str(dst)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert reproduce.compare_tables(dst / "tables", src / "tables") == []
    assert (dst / "tables" / "headline.md").read_text().startswith("# Hit rate (%): default\n")
