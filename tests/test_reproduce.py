"""The reproduce driver's pure parts: generator commands, manifest and table comparison, prereqs."""

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


def _manifest(path, files, versions):
    path.write_text(json.dumps({"files": files, "versions": versions}))
    return path


def test_compare_manifest_names_files_then_environment(tmp_path):
    a = _manifest(tmp_path / "a.json", {"data/test/0000.png": "aa" * 32, "data/test/metadata.jsonl": "bb" * 32},
                  {"pillow": "13.0.0", "browser": "156"})
    same = _manifest(tmp_path / "b.json", {"data/test/0000.png": "aa" * 32, "data/test/metadata.jsonl": "bb" * 32},
                     {"pillow": "13.0.0", "browser": "156"})
    assert reproduce.compare_manifest(same, a) == []
    other = _manifest(tmp_path / "c.json", {"data/test/0000.png": "cc" * 32, "data/test/metadata.jsonl": "bb" * 32},
                      {"pillow": "13.0.0", "browser": "157"})
    diffs = reproduce.compare_manifest(other, a)
    assert diffs[0] == f"data/test/0000.png: committed {'aa' * 6}, regenerated {'cc' * 6}"
    assert diffs[1] == "environment browser: committed '156', here '157'"
    assert len(diffs) == 2


def test_compare_tables_gives_a_unified_diff_per_differing_table(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "hit_rate.md").write_text("| m | 50.0 |\n")
    (new / "hit_rate.md").write_text("| m | 50.0 |\n")
    assert reproduce.compare_tables(new, old) == []
    (new / "hit_rate.md").write_text("| m | 51.0 |\n")
    (new / "extra.csv").write_text("x\n")
    diffs = reproduce.compare_tables(new, old)
    assert diffs[0] == "extra.csv: only in regenerated tables"
    assert "-| m | 50.0 |" in diffs[1] and "+| m | 51.0 |" in diffs[1]


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
    assert "pointfail data fetch point-bench" in err
    assert "huggingface-cli download Qwen/Qwen2.5-VL-3B-Instruct --revision 66285546d2b821cf421d4f5eb2576359d3770cd3" in err


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
