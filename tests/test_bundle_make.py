"""make_bundle's checks of the data a bundle holds, before git, pip or docker save run: the engine,
base image, model images and suite renderer are replaced by recording stand-ins (the real bundle is
made by ``make bundle``). A rendered suite that differs from its committed manifest, and a missing
data folder, each stop it with a named BundleError."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pointfail_runner import base, bundle, engine, images, reproduce

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def stand_ins(monkeypatch):
    seen: dict[str, list] = {"images": [], "suites": []}
    monkeypatch.setattr(engine, "ensure_engine", lambda: "client")
    monkeypatch.setattr(base, "ensure_base", lambda client, lock, log=print: SimpleNamespace(tag="base:t", id="b"))

    def image(client, repo, name, variant="cpu", log=print):
        seen["images"].append((name, variant))
        return SimpleNamespace(tag=f"{name}:t", id=name)

    monkeypatch.setattr(images, "ensure_image", image)
    return seen


def test_a_rendered_suite_that_differs_from_its_committed_manifest_is_refused(stand_ins, tmp_path, monkeypatch):
    def render(client, repo, study, tag, data_root, log=print):
        stand_ins["suites"].append((tag, data_root))
        for b in study.benchmarks:
            d = data_root / b.name
            d.mkdir(parents=True)
            committed = json.loads((study.file.parent / "suites" / f"{b.name}.manifest.json").read_text())
            committed["files"] = {}
            (d / "manifest.json").write_text(json.dumps(committed))

    monkeypatch.setattr(reproduce, "make_suites", render)
    lines: list[str] = []
    with pytest.raises(bundle.BundleError, match=r"suite sheets in .* differs from .*sheets\.manifest\.json "
                                                 r".*make data STUDY=default"):
        bundle.make_bundle(tmp_path, REPO / "records/default/study.toml", log=lines.append)
    assert stand_ins["images"] == sorted(stand_ins["images"]) and (reproduce.SUITES_IMAGE, "cpu") in stand_ins["images"]
    assert stand_ins["suites"] == [(f"{reproduce.SUITES_IMAGE}:t", tmp_path / "data" / "default")]
    assert lines == [f"[bundle] rendering the suites in {reproduce.SUITES_IMAGE}:t"]


def test_a_missing_data_folder_is_named(stand_ins, tmp_path, monkeypatch):
    from pointfail.inputs.study import Roots, load_study

    monkeypatch.setattr(reproduce, "make_suites", lambda *a, **k: pytest.fail("no suite to render"))
    study_file = REPO / "records/pointfail-vlm-rehearsal/study.toml"
    study = load_study(study_file)
    roots = Roots.for_study(study, tmp_path)
    for b in study.benchmarks[:-1]:
        roots.data_dir(b).mkdir(parents=True)
    last = study.benchmarks[-1]
    with pytest.raises(bundle.BundleError, match=f"data for {last.name} missing: {roots.data_dir(last)} "
                                                 rf"\(make data STUDY={study.name}, or fetch it\)"):
        bundle.make_bundle(tmp_path, study_file, variant="cuda", log=lambda *_: None)
    assert reproduce.SUITES_IMAGE not in {n for n, _ in stand_ins["images"]}
    assert {v for _, v in stand_ins["images"]} == {"cuda"}
    assert len(stand_ins["images"]) == len({m.image for m in study.models if m.kind == "container"})
