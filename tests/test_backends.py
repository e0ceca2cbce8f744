"""Backend loading rules that need no model: remote-code pinning (molmo), weights and device checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pointfail.running.backends import backend_modules
from pointfail.running.backends.base import BackendError
from pointfail.running.backends.molmo import load as load_molmo
from pointfail.running.backends.molmo import pinned_revision
from pointfail.running.worker import WorkerError, load_backend

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def weights(tmp_path: Path) -> Path:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "molmo"}), encoding="utf-8")
    return tmp_path


def test_every_backend_module_exists_and_has_load():
    """The family registry is the list of backends: every family with one names an importable module
    with ``load``, and every module in pointfail/running/backends that defines ``load`` is some family's
    backend (the others are helpers: base, hf, manifest)."""
    import importlib
    import pkgutil

    import pointfail.running.backends as pkg

    mods = backend_modules()
    assert {"center", "ocr", "qwen2_5_vl", "qwen3_vl", "internvl3", "molmo", "molmo2"} <= set(mods)
    for family, module in mods.items():
        assert callable(importlib.import_module(module).load), family
    loaders = {m.name for m in pkgutil.iter_modules(pkg.__path__)
               if callable(getattr(importlib.import_module(f"pointfail.running.backends.{m.name}"), "load", None))}
    assert {m.rsplit(".", 1)[1] for m in mods.values()} == loaders


def test_molmo_refuses_remote_code_without_a_pinned_revision(weights, monkeypatch):
    monkeypatch.delenv("POINTFAIL_MODEL_REVISION", raising=False)
    with pytest.raises(BackendError, match="refusing without a pinned revision"):
        load_molmo(str(weights), "cpu")
    with pytest.raises(BackendError, match="not a full 40-hex commit"):
        load_molmo(str(weights), "cpu", revision="main")
    with pytest.raises(BackendError, match="not a full 40-hex commit"):
        pinned_revision(weights, SHA[:12])


def test_molmo_revision_must_match_a_snapshot_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("POINTFAIL_MODEL_REVISION", raising=False)
    snap = tmp_path / ("f" * 40)
    snap.mkdir()
    with pytest.raises(BackendError, match="not the pinned revision"):
        pinned_revision(snap, SHA)
    assert pinned_revision(snap, "f" * 40) == "f" * 40
    monkeypatch.setenv("POINTFAIL_MODEL_REVISION", SHA)
    assert pinned_revision(tmp_path, None) == SHA


def test_worker_reports_refusal_as_infrastructure_failure(weights, monkeypatch):
    monkeypatch.delenv("POINTFAIL_MODEL_REVISION", raising=False)
    with pytest.raises(WorkerError, match="trust_remote_code"):
        load_backend("molmo", str(weights), "cpu")


def test_missing_weights_are_a_clear_error(tmp_path):
    with pytest.raises(WorkerError, match="has no config.json"):
        load_backend("qwen2_5_vl", str(tmp_path), "cpu")
    with pytest.raises(WorkerError, match="--weights DIR is required"):
        load_backend("internvl3", None, "cpu")


# ------------------------------------------------------------------ remote code pinned to content


def _remote_code_weights(root: Path) -> Path:
    w = root / "molmo-w"
    w.mkdir()
    (w / "config.json").write_text(json.dumps({"model_type": "molmo", "auto_map": {
        "AutoModelForCausalLM": "modeling_molmo.MolmoForCausalLM"}}), encoding="utf-8")
    # the checkpoint's own code: importing it leaves a marker, so a test can tell whether it ran
    (w / "modeling_molmo.py").write_text(f"open({str(root / 'ran.txt')!r}, 'w').write('ran')\n", encoding="utf-8")
    (w / "model.safetensors").write_bytes(b"\x00" * 64)
    return w


def test_molmo_refuses_remote_code_without_a_manifest(tmp_path, monkeypatch):
    monkeypatch.delenv("POINTFAIL_WEIGHTS_MANIFEST", raising=False)
    w = _remote_code_weights(tmp_path)
    with pytest.raises(BackendError, match="refusing without a weights manifest"):
        load_molmo(str(w), "cpu", revision=SHA)


def test_planted_or_changed_code_is_refused_before_it_runs(tmp_path):
    from pointfail.running.backends.manifest import verify_weights, write_weights_manifest

    w = _remote_code_weights(tmp_path)
    man = tmp_path / "molmo.manifest.json"
    m = write_weights_manifest(w, man)
    assert sorted(m["files"]) == ["config.json", "model.safetensors", "modeling_molmo.py"]
    assert verify_weights(w, man) == 3
    (w / "sub").mkdir()
    (w / "sub" / "helper.py").write_text("import os\n")  # planted after download
    with pytest.raises(BackendError, match=r"sub/helper.py: not in the manifest"):
        load_molmo(str(w), "cpu", revision=SHA, weights_manifest=str(man))
    (w / "sub" / "helper.py").unlink()
    (w / "modeling_molmo.py").write_text("open('/tmp/x', 'w')\n")  # changed code, same name
    with pytest.raises(BackendError, match=r"modeling_molmo.py: content differs from the manifest"):
        load_molmo(str(w), "cpu", revision=SHA, weights_manifest=str(man))
    (w / "modeling_molmo.py").unlink()
    (w / "modeling_molmo.py").symlink_to(tmp_path / "elsewhere.py")
    with pytest.raises(BackendError, match=r"modeling_molmo.py \(a symlink\)"):
        verify_weights(w, man)
    assert not (tmp_path / "ran.txt").exists()  # nothing from the folder ran


def test_a_matching_manifest_lets_loading_proceed(tmp_path):
    from pointfail.running.backends.manifest import write_weights_manifest

    w = _remote_code_weights(tmp_path)
    man = tmp_path / "molmo.manifest.json"
    write_weights_manifest(w, man)
    with pytest.raises(Exception) as ei:  # past the gate: transformers itself fails on this fake checkpoint
        load_molmo(str(w), "cpu", revision=SHA, weights_manifest=str(man))
    assert not isinstance(ei.value, BackendError) and "processor" in str(ei.value)


def test_weights_manifest_command(tmp_path):
    import subprocess
    import sys

    w = _remote_code_weights(tmp_path)
    out = tmp_path / "m.json"
    p = subprocess.run([sys.executable, "-m", "pointfail", "weights-manifest", str(w), "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "3 files" in p.stdout
    (w / "extra.py").write_text("x = 1\n")
    p = subprocess.run([sys.executable, "-m", "pointfail", "weights-manifest", str(w), "--check", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "extra.py: not in the manifest" in p.stderr


def test_ocr_backend_names_the_debian_packages_it_misses(monkeypatch):
    """Before any work, the ocr backend says which Debian package brings what is missing."""
    import pytesseract

    from pointfail.running.backends import ocr as ocr_backend

    monkeypatch.setattr(ocr_backend.shutil, "which", lambda cmd: None)
    with pytest.raises(BackendError, match=r"Debian package tesseract-ocr\): apt-get install tesseract-ocr$"):
        ocr_backend.load(langs="eng")
    monkeypatch.setattr(ocr_backend.shutil, "which", lambda cmd: "/usr/bin/tesseract")
    monkeypatch.setattr(pytesseract, "get_languages", lambda config="": ["eng", "osd"])
    with pytest.raises(BackendError, match=r"missing: deu, nld .*apt-get install tesseract-ocr-deu tesseract-ocr-nld$"):
        ocr_backend.load(langs="eng+deu+nld")
