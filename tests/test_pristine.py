"""run_pristine without an engine: a recording stand-in for the docker SDK's client shows the mounts,
environment, network and labels the pristine container is created with, that its log is streamed
line by line, and that the clone's folder is removed or kept (the real run is ``make ci-pristine``)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pointfail_runner import pristine


class _Container:
    def __init__(self, chunks: list[bytes], code: int | None, status: str):
        self.chunks, self.code, self.status, self.calls = chunks, code, status, []

    def start(self):
        self.calls.append("start")

    def logs(self, stream, follow, since):
        self.calls.append(("logs", since))
        return iter(self.chunks)

    def reload(self):
        self.calls.append("reload")

    def kill(self):
        self.calls.append("kill")

    def wait(self, timeout):
        self.calls.append("wait")
        return {"StatusCode": self.code}

    def remove(self, force):
        self.calls.append("remove")


class _Client:
    def __init__(self, container: _Container):
        self.container, self.created = container, None
        self.containers = self

    def create(self, image, **kw):
        self.created = {"image": image, **kw}
        return self.container


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """pristine_image and fresh_clone replaced (no engine, no git), temporary folders under tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(pristine, "pristine_image", lambda client, repo, log=print: "pointfail-pristine:test")

    def clone(repo, parent):
        (parent / "clone").mkdir()
        return parent / "clone"

    monkeypatch.setattr(pristine, "fresh_clone", clone)
    repo = tmp_path / "work" / "repo"
    repo.mkdir(parents=True)
    return repo


def test_online_run_streams_the_log_mounts_and_removes_the_clone(isolated, tmp_path, monkeypatch):
    ca = tmp_path / "ca.crt"
    ca.write_text("cert")
    monkeypatch.setattr(pristine, "CA_BUNDLE", str(ca))
    (tmp_path / "work" / "shared").mkdir()
    extra = tmp_path / "bundle-dir"
    extra.mkdir()
    c = _Container([b"one\ntwo\n", b"three\n"], 0, "exited")
    client = _Client(c)
    lines: list[str] = []
    rc = pristine.run_pristine(client, isolated, ["make", "test"], mounts=(str(extra), f"{extra}:rw"),
                               env={"EXTRA": "1"}, engine_socket="/run/other.sock", log=lines.append)
    assert rc == 0
    kw = client.created
    parent = Path(kw["labels"]["org.pointfail.pristine"])
    assert kw["image"] == "pointfail-pristine:test" and kw["command"] == ["make", "test"]
    assert kw["working_dir"] == str(parent / "clone") and kw["user"] == "0:0" and kw["network_mode"] == "default"
    assert kw["volumes"] == {
        str(parent): {"bind": str(parent), "mode": "rw"},
        "/run/other.sock": {"bind": "/var/run/docker.sock", "mode": "rw"},
        str((tmp_path / "work" / "shared").resolve()): {"bind": str((tmp_path / "work" / "shared").resolve()),
                                                         "mode": "ro"},
        str(extra.resolve()): {"bind": str(extra.resolve()), "mode": "rw"},  # the later ":rw" entry wins
        str(ca): {"bind": str(ca), "mode": "ro"},
    }
    assert kw["environment"] == {"TMPDIR": str(parent / "tmp"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                                 "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "SSL_CERT_FILE": str(ca),
                                 "PIP_CERT": str(ca), "REQUESTS_CA_BUNDLE": str(ca), "EXTRA": "1"}
    assert lines[1:4] == ["one", "two", "three"]
    assert lines[0].startswith("[pristine] make test in ") and lines[0].endswith("network: default)")
    assert lines[-1].startswith("[pristine] exit 0 after ")
    assert c.calls == ["start", ("logs", None), "reload", "wait", "remove"]
    assert not parent.exists()


def test_offline_run_closes_apt_and_pip_kills_a_running_container_and_keeps_the_clone(isolated, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.setattr(pristine, "CA_BUNDLE", str(tmp_path / "absent.crt"))
    c = _Container([], None, "running")
    client = _Client(c)
    lines: list[str] = []
    rc = pristine.run_pristine(client, isolated, ["make", "reproduce"], offline=True, keep=True, log=lines.append)
    assert rc == 1  # no status code: a failure
    kw = client.created
    parent = Path(kw["labels"]["org.pointfail.pristine"])
    closed = parent / "offline-sources.list"
    assert closed.read_text() == "deb http://127.0.0.1:9/debian bookworm main\n"
    assert kw["network_mode"] == "none"
    assert kw["volumes"] == {str(parent): {"bind": str(parent), "mode": "rw"},
                             "/var/run/docker.sock": {"bind": "/var/run/docker.sock", "mode": "rw"},
                             str(closed): {"bind": "/etc/apt/sources.list", "mode": "ro"}}
    assert kw["environment"] == {"TMPDIR": str(parent / "tmp"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                                 "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
                                 "PIP_INDEX_URL": "http://127.0.0.1:9/simple/", "PIP_RETRIES": "0", "PIP_TIMEOUT": "5"}
    assert c.calls == ["start", ("logs", None), "reload", "kill", "wait", "remove"]
    assert f"[pristine] clone kept at {parent / 'clone'}" in lines and parent.is_dir()
    assert (parent / "tmp").is_dir() and parent.stat().st_mode & 0o777 == 0o755
    assert lines[0].endswith("network: none)")
