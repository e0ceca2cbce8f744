"""Debian packages in images (issue 11): recorded versions, a moving archive, drift reported.

The pure parts (lock format, madison parsing, drift, snapshot sources) run anywhere; the install and
check steps run for real inside the project's base image against the machine's Debian mirror.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pointfail_runner import aptpins

REPO = Path(__file__).resolve().parents[1]

MADISON = """\
  chromium | 156.0.8078.114-1~deb12u1 | http://mirror/debian-security bookworm-security/main amd64 Packages
  chromium | 150.0.7871.100-1~deb12u1 | http://mirror/debian bookworm/main amd64 Packages
  chromium | 150.0.7871.100-1~deb12u1 | http://mirror/debian bookworm/main Sources
     hello |     2.10-3 | http://mirror/debian bookworm/main amd64 Packages
"""


def test_parse_madison_keeps_binary_versions_in_archive_order():
    assert aptpins.parse_madison(MADISON) == {
        "chromium": ["156.0.8078.114-1~deb12u1", "150.0.7871.100-1~deb12u1"], "hello": ["2.10-3"]}
    assert aptpins.parse_madison("") == {}


def test_drift_names_both_versions_and_one_sided_packages():
    recorded = {"chromium": "156.0.8078.108-1~deb12u1", "fonts-dejavu-core": "2.37-6", "gone": "1.0"}
    installed = {"chromium": "156.0.8078.114-1~deb12u1", "fonts-dejavu-core": "2.37-6", "new": "2.0"}
    entries = aptpins.drift(recorded, installed)
    assert entries == [("chromium", "156.0.8078.108-1~deb12u1", "156.0.8078.114-1~deb12u1"),
                       ("gone", "1.0", None), ("new", None, "2.0")]
    assert aptpins.drift_lines(entries) == ["chromium: 156.0.8078.108-1~deb12u1 -> 156.0.8078.114-1~deb12u1",
                                            "gone: 1.0 -> (none)", "new: (none) -> 2.0"]
    assert aptpins.drift(recorded, dict(recorded)) == []


def test_snapshot_sources_layout_and_validation():
    text = aptpins.snapshot_sources("http://snap.example/", "20250520T000000Z")
    assert text.splitlines() == [
        "deb [check-valid-until=no] http://snap.example/archive/debian/20250520T000000Z bookworm main",
        "deb [check-valid-until=no] http://snap.example/archive/debian/20250520T000000Z bookworm-updates main",
        "deb [check-valid-until=no] http://snap.example/archive/debian-security/20250520T000000Z bookworm-security main",
    ]
    with pytest.raises(aptpins.AptPinError, match="must look like 20250520T000000Z"):
        aptpins.snapshot_sources("http://snap.example", "2025-05-20")
    with pytest.raises(aptpins.AptPinError, match="SNAPSHOT_MIRROR"):
        aptpins.snapshot_sources("", "20250520T000000Z")


def test_read_lock_shapes_and_canonical_text(tmp_path):
    assert aptpins.read_lock(tmp_path / "absent.lock") == aptpins.empty_lock()
    assert aptpins.read_lock(None)["requested"] == []
    bad = tmp_path / "bad.lock"
    bad.write_text('{"requested": "chromium", "installed": {}}')
    with pytest.raises(aptpins.AptPinError, match="'requested' must be a list"):
        aptpins.read_lock(bad)
    bad.write_text('{"requested": [], "installed": {"x": 1}}')
    with pytest.raises(aptpins.AptPinError, match="'installed' must map"):
        aptpins.read_lock(bad)
    bad.write_text("not json")
    with pytest.raises(aptpins.AptPinError, match="not a JSON debian.lock"):
        aptpins.read_lock(bad)
    lock = {"requested": ["b", "a", "a"], "installed": {"z": "1", "a": "2"}}
    assert aptpins.lock_text(lock) == (
        '{\n  "installed": {\n    "a": "2",\n    "z": "1"\n  },\n  "release": "bookworm",\n'
        '  "requested": [\n    "a",\n    "b"\n  ]\n}\n')


def test_committed_debian_locks_record_every_requested_package():
    from pointfail_runner import images

    for name in images.image_names(REPO):
        lock = images.debian_lock(REPO / "images" / name)
        assert set(lock["requested"]) <= set(lock["installed"]), name
        text = (REPO / "images" / name / "debian.lock").read_text() if lock["requested"] else None
        assert text is None or text == aptpins.lock_text(lock), f"{name}: debian.lock is not canonical"
    assert images.debian_lock(REPO / "images/suites")["installed"]["chromium"].startswith("156.")


# ------------------------------------------------------------------------------ real apt in the base

docker_only = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    pytest.importorskip("docker")
    from pointfail_runner.base import ensure_base
    from pointfail_runner.engine import ensure_engine

    client = ensure_engine()
    lock = tmp_path_factory.mktemp("base11") / "base.lock.json"
    shutil.copy(REPO / "images/base/base.lock.json", lock)
    return client, ensure_base(client, lock, log=lambda s: None)


def _install_in_base(client, base_id: str, lock: dict, tmp: Path) -> tuple[int, str, dict]:
    tmp.mkdir(mode=0o755)
    shutil.copy(aptpins.__file__, tmp / "aptpins.py")
    (tmp / "debian.lock").write_text(aptpins.lock_text(lock))
    c = client.containers.create(base_id, ["/usr/bin/python3", "/in/aptpins.py", "install", "/in/debian.lock",
                                           "--report", "/tmp/report.json"],
                                 user="0:0", volumes={str(tmp): {"bind": "/in", "mode": "ro"}})
    try:
        c.start()
        code = c.wait(timeout=600)["StatusCode"]
        logs = c.logs().decode()
        import io
        import tarfile

        stream, _ = c.get_archive("/tmp/report.json")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            report = json.loads(tar.extractfile(tar.getmembers()[0]).read())
        return code, logs, report
    finally:
        c.remove(force=True)


@pytest.mark.docker
@pytest.mark.slow
def test_install_takes_the_archive_version_when_the_recorded_one_is_gone(base, tmp_path):
    client, local = base
    # A recorded version no archive has: the build still succeeds, with the archive's version, and says so.
    lock = {"requested": ["hello"], "installed": {"hello": "0.0-1"}}
    code, logs, report = _install_in_base(client, local.id, lock, tmp_path / "gone")
    assert code == 0, logs
    have = report["installed"]["hello"]
    assert have != "0.0-1" and report["drift"] == [["hello", "0.0-1", have]] and report["exact"] is False
    assert "[debian] recorded hello=0.0-1 is no longer in the archive" in logs
    assert f"[debian] drift: hello: 0.0-1 -> {have}" in logs
    # Recording that version makes the next install exact, with no drift.
    lock["installed"] = report["installed"]
    code, logs, report = _install_in_base(client, local.id, lock, tmp_path / "exact")
    assert code == 0, logs
    assert report["drift"] == [] and report["exact"] is True and report["installed"] == lock["installed"]


@pytest.mark.docker
@pytest.mark.slow
def test_check_pins_lists_recorded_versions_the_archive_lacks(base, tmp_path):
    from pointfail_runner import images

    client, _ = base
    repo = tmp_path / "repo"
    (repo / "images/base").mkdir(parents=True)
    shutil.copy(REPO / "images/base/base.lock.json", repo / "images/base/base.lock.json")
    (repo / "images/demo").mkdir()
    (repo / "images/demo/requirements.in").write_text("numpy==2.4.6\n")
    (repo / "images/demo/debian.lock").write_text(aptpins.lock_text(
        {"requested": ["hello"], "installed": {"hello": "0.0-1"}}))
    lines: list[str] = []
    assert images.check_pins(repo, client=client, log=lines.append) == 1
    text = "\n".join(lines)
    assert "[check-pins] gone: demo: hello 0.0-1 (archive has: 2." in text
    assert "[check-pins] base: " in text and "0 no longer in the archive" in text
