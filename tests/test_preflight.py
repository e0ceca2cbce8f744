"""Nothing learned late: `make reproduce` loads every benchmark row from the publisher's files and checks
every weights folder against the lock before the engine, the base or any image is touched."""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STUDY = "pointfail-vlm-rehearsal"


def _checkout(tmp_path: Path) -> Path:
    """A checkout holding the rehearsal study, its lock and the stand-in hub (copied: the hub must be
    inside the checkout)."""
    c = tmp_path / "checkout"
    (c / "records" / STUDY).mkdir(parents=True)
    for f in ("study.toml", "study.lock"):
        shutil.copy(REPO / "records" / STUDY / f, c / "records" / STUDY / f)
    shutil.copytree(REPO / "records" / STUDY / "weights", c / "records" / STUDY / "weights")
    shutil.copytree(REPO / "tests/fixtures/standin_hub", c / "tests/fixtures/standin_hub")
    return c


def _fetched(tmp_path: Path, monkeypatch) -> tuple[Path, object]:
    """The checkout with every benchmark and checkpoint fetched from the stand-in hub through the
    committed lock (the real huggingface_hub client, in subprocesses)."""
    from pointfail_runner import prepare
    from pointfail_runner.study import load_study

    c = _checkout(tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), str(REPO / "runner/src"),
                                                      os.environ.get("PYTHONPATH", "")]))
    study = load_study(c / "records" / STUDY / "study.toml")
    with prepare.stand_ins(c, study.model_dump(), log=lambda *_: None) as env:
        prepare.fetch_stage(c, study, study.path, c / "data" / STUDY, c / "records" / STUDY / "study.lock", env,
                            download=True, log=lambda *_: None)
    return c, study


@pytest.mark.slow
def test_preflight_loads_every_row_and_names_what_breaks(tmp_path, monkeypatch):
    from pointfail_runner.reproduce import preflight

    c, study = _fetched(tmp_path, monkeypatch)
    data, lock = c / "data" / STUDY, c / "records" / STUDY / "study.lock"
    lines: list[str] = []
    ok = preflight(c, study, data, lock, log=lines.append)
    assert ok.problems == [] and ok.loaded == {"point-bench": 10, "where2place": 4, "refspatial": 6}
    assert (data / "point-bench" / "_unpacked" / "selected_masks.zip" / "selected_masks" / "spatial").is_dir()
    assert sum("files match its weights manifest" in ln for ln in lines) == 2  # the two Molmo v1 checkpoints

    # a mask missing from the published archive: the lock names the archive, the loader the row,
    # the file and the publisher's layout
    z = data / "point-bench" / "selected_masks.zip"
    with zipfile.ZipFile(z) as src:
        kept = {i.filename: src.read(i) for i in src.infolist()
                if not i.is_dir() and i.filename != "selected_masks/spatial/spatial_04_mask.png"}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for n, b in kept.items():
            out.writestr(n, b)
    z.write_bytes(buf.getvalue())
    # and a weights file changed on disk
    (c / "weights" / STUDY / "Molmo-7B-D-0924-standin" / "config.json").write_text("{}")
    bad = preflight(c, study, data, lock, log=lambda *_: None)
    text = "\n".join(bad.problems)
    assert "benchmark point-bench" in text and "selected_masks.zip: sha256" in text
    assert "data.json row 4" in text and "selected_masks/spatial/spatial_04_mask.png" in text
    assert "PointArena/pointarena-data" in text and "selected_masks.zip" in text and "docs/releases.md" in text
    assert "model molmo-7b-d" in text and "config.json" in text
    assert bad.loaded == {"where2place": 4, "refspatial": 6}
    assert bad.seconds < 30


@pytest.mark.slow
def test_reproduce_stops_before_the_engine_when_a_benchmark_does_not_load(tmp_path, monkeypatch):
    """The whole `make reproduce` entry point on the rehearsal with one study size wrong: it stops in
    the preflight, naming the benchmark, and never asks for the Docker Engine."""
    from pointfail_runner import engine, reproduce

    c = _checkout(tmp_path)
    toml = c / "records" / STUDY / "study.toml"
    toml.write_text(toml.read_text().replace('name = "where2place"\nloader = "where2place"\nsize = 4',
                                             'name = "where2place"\nloader = "where2place"\nsize = 100'))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), str(REPO / "runner/src"),
                                                      os.environ.get("PYTHONPATH", "")]))

    def no_engine(*a, **k):
        raise AssertionError("the Docker Engine was asked for before the preflight")

    monkeypatch.setattr(engine, "ensure_engine", no_engine)
    with pytest.raises(reproduce.ReproduceError) as e:
        reproduce.reproduce(c, toml, variant="cpu", install=False, log=lambda *_: None)
    msg = str(e.value)
    assert "stopped before any image was built" in msg
    assert "benchmark where2place" in msg and "4 samples load, the study says size = 100" in msg
    assert "wentao-yuan/where2place" in msg


def test_the_judge_digest_is_pinned_at_first_contact_and_a_different_one_refused(tmp_path):
    """The first run that reaches the Ollama judge records its model digest in study.lock; a later
    run against a server with other weights under the same tag is refused before any miss is sent."""
    import json

    from pointfail.inputs.studylock import LockError, pin_judge, read_lock
    from pointfail.generated.testing.ollama_fake import DIGEST, FakeOllama
    from pointfail_runner.reproduce import judge_digest

    lock = tmp_path / "study.lock"
    with FakeOllama(lambda n, body: "hallucinated", model="gemma4:31b") as fake:
        digest = judge_digest(fake.url, "gemma4:31b")
        assert digest == DIGEST
        assert judge_digest(fake.url, "llama3:8b") is None
        assert pin_judge(lock, "ollama", "gemma4:31b", digest) == "recorded"
    assert read_lock(lock)["judge"] == {"ollama": {"model": "gemma4:31b", "digest": DIGEST}}
    assert json.loads(lock.read_text())["schema"] == "pointfail.study_lock/1"
    assert pin_judge(lock, "ollama", "gemma4:31b", DIGEST) == "matches"
    other = "sha256:" + "cd" * 32
    with pytest.raises(LockError, match="refusing"):
        pin_judge(lock, "ollama", "gemma4:31b", other)
    with pytest.raises(LockError, match="the study pins"):
        pin_judge(tmp_path / "new.lock", "ollama", "gemma4:31b", DIGEST, expected=other)
    with pytest.raises(LockError, match="no digest"):
        pin_judge(tmp_path / "new.lock", "ollama", "gemma4:31b", None)
    assert not (tmp_path / "new.lock").exists()
