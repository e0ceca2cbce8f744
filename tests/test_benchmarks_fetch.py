"""`pointfail data fetch/sources/check`: argument handling and the errors that stop a download before
any network use (the download itself never runs in tests), plus file verification."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
import builders  # noqa: E402

from pointfail.inputs.benchmarks import BENCHMARKS, BenchmarkError  # noqa: E402
from pointfail.inputs.benchmarks.fetch import SOURCES, FetchError, fetch, git_blob_sha1, verify_files  # noqa: E402
from pointfail.cli import main  # noqa: E402


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_sources_table():
    assert set(SOURCES) <= set(BENCHMARKS) and "suite" not in SOURCES
    for name, src in SOURCES.items():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", src.repo_id), name
        assert src.revision is None or re.fullmatch(r"[0-9a-f]{40}", src.revision), name


def test_fetch_unknown_benchmark(tmp_path, capsys):
    assert main(["data", "fetch", "imagenet", "--to", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark 'imagenet'" in err and "refspatial" in err
    with pytest.raises(BenchmarkError):
        fetch("suite", tmp_path)  # generated locally, never downloaded


def test_fetch_offline_refuses_before_network(tmp_path, capsys):
    assert main(["data", "fetch", "refspatial", "--to", str(tmp_path / "rs")]) == 2
    err = capsys.readouterr().err
    assert "offline (HF_HUB_OFFLINE is set)" in err and SOURCES["refspatial"].revision in err
    assert not (tmp_path / "rs").exists()


def test_fetch_needs_a_pinned_commit(tmp_path):
    with pytest.raises(FetchError, match="no revision is pinned .*--revision"):
        fetch("point-bench", tmp_path)
    with pytest.raises(FetchError, match="not a 40-hex commit"):
        fetch("point-bench", tmp_path, revision="main")
    with pytest.raises(FetchError, match="offline"):
        fetch("point-bench", tmp_path, revision="0" * 40)


def test_fetch_argument_errors(tmp_path, capsys):
    assert main(["data", "fetch", "refspatial"]) == 2  # --to is required without --study
    assert "--to DIR is required without --study" in capsys.readouterr().err
    assert main(["data"]) == 2


def test_sources_lists_every_benchmark(capsys):
    assert main(["data", "sources"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SOURCES)


def test_git_blob_sha1_matches_git(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"pointfail\n")
    if shutil.which("git"):
        want = subprocess.run(["git", "hash-object", str(p)], capture_output=True, text=True, check=True).stdout.strip()
    else:  # the definition: sha1 of "blob <size>\0" + bytes
        want = hashlib.sha1(b"blob 10\0pointfail\n").hexdigest()
    assert git_blob_sha1(p) == want


def test_verify_files(tmp_path):
    (tmp_path / "a").write_bytes(b"x")
    (tmp_path / "b").write_bytes(b"y")
    good = {"a": ("sha256", hashlib.sha256(b"x").hexdigest()), "b": ("git-sha1", git_blob_sha1(tmp_path / "b"))}
    assert verify_files(tmp_path, good) == []
    bad = {**good, "b": ("sha256", "0" * 64), "c": ("sha256", "1" * 64)}
    problems = verify_files(tmp_path, bad)
    assert len(problems) == 2
    assert "sha256" in problems[0] and problems[0].startswith(str(tmp_path / "b"))
    assert problems[1] == f"missing {tmp_path / 'c'}"


def test_data_check(tmp_path, pointerbench_dir, capsys):
    root = builders.where2place(tmp_path / "w2p", n=2)
    assert main(["data", "check", "where2place", str(root)]) == 0
    assert "where2place: 2 samples (point 2); 0 without an image file" in capsys.readouterr().out
    assert main(["data", "check", "pointerbench-text", str(pointerbench_dir)]) == 0
    assert "500 samples (box 134, point 366); 500 without an image file" in capsys.readouterr().out
    assert main(["data", "check", "pointerbench-text", str(pointerbench_dir), "--images"]) == 2
    assert "500 image(s) missing" in capsys.readouterr().err
