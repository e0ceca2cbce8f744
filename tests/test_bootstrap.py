"""The Makefile's project venv (runner/src/pointfail_runner/bootstrap.py): stamps keyed on content, only
what is missing installed, the bundle's wheels read without reading the whole archive.

The whole path (a pristine Debian python3 with PEP 668, a Python with setuptools 65.5 and no wheel)
is exercised by `make ci-pristine` (a pristine Debian 12 container); here the logic is tested in isolation.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pointfail_runner import bootstrap

REPO = Path(__file__).resolve().parents[1]


def _repo(tmp: Path) -> Path:
    for rel, text in (("runner/requirements.lock", "a==1 --hash=sha256:" + "0" * 64 + "\n"),
                      ("pyproject.toml", "[project]\nname='x'\n"), ("runner/pyproject.toml", "[project]\n"),
                      ("requirements-dev.txt", "pytest==9\n")):
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    return tmp


def test_stamp_digest_moves_with_each_input(tmp_path):
    repo = _repo(tmp_path)
    d = bootstrap.stamp_digest(repo, "runtime", "3.11.2")
    assert d == bootstrap.stamp_digest(repo, "runtime", "3.11.2")
    assert d != bootstrap.stamp_digest(repo, "runtime", "3.12.1")
    assert d != bootstrap.stamp_digest(repo, "dev", "3.11.2")
    # requirements-dev.txt keys the dev set only
    (repo / "requirements-dev.txt").write_text("pytest==10\n")
    assert bootstrap.stamp_digest(repo, "runtime", "3.11.2") == d
    (repo / "runner/requirements.lock").write_text("a==2 --hash=sha256:" + "1" * 64 + "\n")
    assert bootstrap.stamp_digest(repo, "runtime", "3.11.2") != d


@pytest.mark.slow
def test_ensure_installs_only_what_is_missing(tmp_path, monkeypatch):
    repo = _repo(tmp_path / "repo")
    calls: list[list[str]] = []
    monkeypatch.setattr(bootstrap, "_pip", lambda py, args, what: calls.append(args))
    venv = tmp_path / "venv"
    py = bootstrap.ensure(repo, venv, "runtime")  # a real venv (python -m venv), pip calls recorded
    assert py == venv / "bin/python" and py.exists()
    assert [c[0:2] for c in calls] == [["install", "--quiet"], ["install", "--quiet"]]
    assert "--require-hashes" in calls[0] and str(repo / "runner/requirements.lock") in calls[0]
    assert calls[1][-4:] == ["-e", str(repo.resolve()), "-e", str(repo.resolve() / "runner")]
    assert "--no-build-isolation" in calls[1] and "--no-index" in calls[1]
    calls.clear()
    bootstrap.ensure(repo, venv, "runtime")
    assert calls == []  # stamped: nothing to do
    bootstrap.ensure(repo, venv, "dev")
    assert [c[2:] for c in calls] == [list(bootstrap.TORCH), ["-r", str(repo.resolve() / "requirements-dev.txt")]]
    calls.clear()
    (repo / "pyproject.toml").write_text("[project]\nname='y'\n")
    bootstrap.ensure(repo, venv, "dev")
    assert len(calls) == 4  # the runtime set and the dev set both depend on pyproject.toml


@pytest.mark.slow
def test_a_broken_venv_is_made_again(tmp_path, monkeypatch):
    repo = _repo(tmp_path / "repo")
    monkeypatch.setattr(bootstrap, "_pip", lambda py, args, what: None)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/python").write_text("not an interpreter")
    py = bootstrap.ensure(repo, venv, "runtime")
    out = subprocess.run([str(py), "-c", "import sys; print(sys.prefix != sys.base_prefix)"], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "True"


def _tar(path: Path, entries: list[tuple[str, bytes | None]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            if data is None:
                ti.type = tarfile.DIRTYPE
                tar.addfile(ti)
            else:
                ti.size = len(data)
                tar.addfile(ti, io.BytesIO(data))
    return _seal(path)


def _seal(path: Path) -> Path:
    """Write ``<path>.sha256`` as ``make bundle`` does (``sha256sum`` format)."""
    import hashlib

    path.with_name(path.name + ".sha256").write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n")
    return path


def test_extract_bundle_wheels_takes_only_wheel_files_and_stops_after_them(tmp_path):
    b = _tar(tmp_path / "b.tar", [("pointfail-default", None), ("pointfail-default/host-wheels", None),
                                  ("pointfail-default/host-wheels/a-1-py3-none-any.whl", b"A"),
                                  ("pointfail-default/host-wheels/notes.txt", b"x"),
                                  ("pointfail-default/index.json", b"{}"),
                                  ("pointfail-default/host-wheels/late-1-py3-none-any.whl", b"L")])
    out = bootstrap.extract_bundle_wheels(b, tmp_path / "w")
    assert sorted(p.name for p in out.iterdir()) == ["a-1-py3-none-any.whl"]
    assert (out / "a-1-py3-none-any.whl").read_bytes() == b"A"
    with pytest.raises(bootstrap.BootstrapError, match="no host-wheels/ wheels"):
        bootstrap.extract_bundle_wheels(_tar(tmp_path / "e.tar", [("x/index.json", b"{}")]), tmp_path / "w2")
    (tmp_path / "junk.tar").write_bytes(b"not a tar")
    _seal(tmp_path / "junk.tar")
    with pytest.raises(bootstrap.BootstrapError, match="not a readable bundle"):
        bootstrap.extract_bundle_wheels(tmp_path / "junk.tar", tmp_path / "w3")


def test_the_outer_sha256_is_checked_before_a_byte_of_the_bundle_is_read(tmp_path):
    """A bundle modified after it was made, with its inner SHA256SUMS made again to match, passes the
    sums inside it; only ``<bundle>.sha256`` shows it (issue 24). Refused before any member is read."""
    import hashlib

    from pointfail_runner import bundle as bmod

    def bundle(path: Path, index: bytes) -> Path:
        files = {"b/index.json": index}
        sums = "".join(f"{hashlib.sha256(v).hexdigest()}  {k[2:]}\n" for k, v in files.items()).encode()
        return _tar(path, [("b", None), *files.items(), ("b/SHA256SUMS", sums)])

    good = bundle(tmp_path / "good.tar", b'{"study": "s"}')
    root = bmod.unpack(good, tmp_path / "u1", log=(said := []).append)
    assert (root / "index.json").read_bytes() == b'{"study": "s"}'
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    assert said == [f"[bundle] {good}: sha256 {digest} matches good.tar.sha256 (compare it with the digest "
                    "published in artifact.md)"]
    sidecar = good.with_name("good.tar.sha256").read_text()
    bad = bundle(good, b'{"study": "s", "evil": 1}')  # rebuilt, inner sums regenerated ...
    good.with_name("good.tar.sha256").write_text(sidecar)  # ... the published digest kept
    for call in (lambda: bmod.unpack(bad, tmp_path / "u2"), lambda: bootstrap.extract_bundle_wheels(bad, tmp_path / "w")):
        with pytest.raises((bmod.BundleError, bootstrap.BootstrapError), match=f"differs from {digest} in good.tar.sha256"):
            call()
    assert not (tmp_path / "u2").exists() and not (tmp_path / "w").exists()  # nothing read, nothing written
    good.with_name("good.tar.sha256").unlink()
    with pytest.raises(bmod.BundleError, match="no good.tar.sha256 beside it"):
        bmod.unpack(bad, tmp_path / "u3")
    good.with_name("good.tar.sha256").write_text(f"{digest}  other.tar\n")
    with pytest.raises(bmod.BundleError, match="not one '<sha256>  good.tar' line"):
        bmod.unpack(bad, tmp_path / "u4")


def test_script_runs_with_the_standard_library_only():
    # The Makefile runs it with the machine's python3 before anything is installed.
    script = str(REPO / "runner/src/pointfail_runner/bootstrap.py")
    code = f"import runpy, sys; sys.argv = ['bootstrap.py', '--help']; runpy.run_path({script!r}, run_name='__main__')"
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and "runtime" in out.stdout, out.stderr
