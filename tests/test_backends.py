"""Backend loading rules that need no model: remote-code pinning (molmo), weights and device checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pointfail.backends import BACKENDS
from pointfail.backends.base import BackendError
from pointfail.backends.molmo import load as load_molmo
from pointfail.backends.molmo import pinned_revision
from pointfail.worker import WorkerError, load_backend

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def weights(tmp_path: Path) -> Path:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "molmo"}), encoding="utf-8")
    return tmp_path


def test_every_backend_module_exists_and_has_load():
    import importlib

    for name in BACKENDS:
        assert callable(importlib.import_module(f"pointfail.backends.{name}").load), name


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
