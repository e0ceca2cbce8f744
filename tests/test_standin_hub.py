"""The stand-in hub with the real huggingface_hub client, the study lock, and the commands that
``make reproduce STUDY=pointfail-vlm`` prints when data and weights are missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pointfail.inputs.studylock import read_lock, verify_tree
from pointfail.generated.testing.hub import HubRepo, StandInHub, git_blob_id, load_catalog

REPO = Path(__file__).resolve().parents[1]
HUB_DIR = REPO / "tests" / "fixtures" / "standin_hub"


def _env(hub: StandInHub, tmp: Path) -> dict[str, str]:
    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HOME=str(tmp / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1")
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("TRANSFORMERS_OFFLINE", None)  # huggingface_hub reads it as HF_HUB_OFFLINE too
    return env


def _pointfail(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pointfail", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_hub_answers_the_real_client_with_hub_headers_and_errors(tmp_path):
    repo = HubRepo("acme/scenes", "dataset", {"data.json": b"[]\n", "images/a.png": b"\x89PNG fake"})
    with StandInHub([repo]) as hub:
        code = (
            "from huggingface_hub import HfApi, snapshot_download\n"
            "from huggingface_hub.errors import RevisionNotFoundError, RepositoryNotFoundError\n"
            "api = HfApi()\n"
            "i = api.repo_info('acme/scenes', repo_type='dataset', files_metadata=True)\n"
            "print(i.sha); print(sorted((s.rfilename, s.blob_id, s.lfs.sha256 if s.lfs else None) for s in i.siblings))\n"
            f"snapshot_download('acme/scenes', repo_type='dataset', revision=i.sha, local_dir={str(tmp_path / 'out')!r})\n"
            "for bad in (lambda: api.repo_info('acme/scenes', repo_type='dataset', revision='0' * 40),\n"
            "            lambda: api.repo_info('acme/none', repo_type='dataset')):\n"
            "    try:\n        bad()\n    except (RevisionNotFoundError, RepositoryNotFoundError) as e:\n"
            "        print(type(e).__name__)\n")
        r = subprocess.run([sys.executable, "-c", code], env=_env(hub, tmp_path), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == repo.commit and len(repo.commit) == 40
    import hashlib

    assert lines[1] == str(sorted([("data.json", git_blob_id(b"[]\n"), None),
                                   ("images/a.png", repo._meta["images/a.png"]["blob_id"],
                                    hashlib.sha256(b"\x89PNG fake").hexdigest())]))
    assert lines[2:] == ["RevisionNotFoundError", "RepositoryNotFoundError"]
    assert (tmp_path / "out" / "data.json").read_bytes() == b"[]\n"
    assert (tmp_path / "out" / "images" / "a.png").read_bytes() == b"\x89PNG fake"


def test_catalogue_labels_every_repository_a_stand_in():
    repos = load_catalog(HUB_DIR)
    ids = {r.repo_id for r in repos}
    assert {"allenai/Molmo-7B-D-0924", "allenai/MolmoE-1B-0924", "Qwen/Qwen2.5-VL-3B-Instruct", "OpenGVLab/InternVL3-2B-hf",
            "PointArena/pointarena-data", "wentao-yuan/where2place", "BAAI/RefSpatial-Bench"} <= ids
    for r in repos:
        assert b"STAND-IN" in r.files["README.md"] and "STAND-IN" in r.note
    # the pinned commits of the study and of pointfail's source table are served
    commits = {r.repo_id: r.commit for r in repos}
    assert commits["Qwen/Qwen2.5-VL-3B-Instruct"] == "66285546d2b821cf421d4f5eb2576359d3770cd3"
    assert commits["BAAI/RefSpatial-Bench"] == "a7f69fa42fc0cc635f432e67def2856778c0eecd"


def _missing_commands(checkout: Path) -> list[str]:
    from pointfail.inputs.study import Roots
    from pointfail_runner.study import load_study, missing_inputs

    study = load_study(checkout / "records/pointfail-vlm/study.toml")
    roots = Roots.for_study(study, checkout, data=checkout / "data" / "pointfail-vlm")
    lines = missing_inputs(study, study.models, study.benchmarks, roots, repo=checkout, require_revisions=True)
    return [ln.split(" <- ", 1)[1] for ln in lines]


def test_every_command_the_source_study_prints_succeeds_against_the_stand_in_hub(tmp_path):
    """`make reproduce STUDY=pointfail-vlm` lists what is missing with a command each; run each one,
    as printed, with HF_ENDPOINT at the stand-in hub: all succeed, the lock pins every repository
    (the study's pinned commits kept, the others resolved from main once), a second run uses the lock,
    and a file that does not match the lock is refused."""
    checkout = tmp_path / "checkout"
    (checkout / "records" / "pointfail-vlm").mkdir(parents=True)
    shutil.copy(REPO / "records/pointfail-vlm/study.toml", checkout / "records/pointfail-vlm/study.toml")
    cmds = _missing_commands(checkout)
    assert len(cmds) == 7 and all(c.startswith(("pointfail data fetch ", "pointfail weights fetch ")) for c in cmds)
    with StandInHub.from_directory(HUB_DIR) as hub:
        env = _env(hub, tmp_path)
        for c in cmds:
            r = _pointfail(c.split()[1:], checkout, env)
            assert r.returncode == 0, (c, r.stderr[-2000:])
            assert "resolved from main" in r.stdout or "pinned" in r.stdout
        assert _missing_commands(checkout) == []
        lock_file = checkout / "records/pointfail-vlm/study.lock"
        lock = read_lock(lock_file)
        assert sorted(lock["benchmarks"]) == ["point-bench", "refspatial", "where2place"]
        assert sorted(lock["models"]) == ["internvl3-2b", "molmo-7b-d", "molmoe-1b", "qwen2.5-vl-3b"]
        served = {r.repo_id: r for r in hub.repos.values()}
        assert lock["models"]["qwen2.5-vl-3b"]["revision"] == "66285546d2b821cf421d4f5eb2576359d3770cd3"
        assert lock["benchmarks"]["refspatial"]["revision"] == "a7f69fa42fc0cc635f432e67def2856778c0eecd"
        molmo = lock["models"]["molmo-7b-d"]
        assert molmo["revision"] == served["allenai/Molmo-7B-D-0924"].commit
        assert "modeling_molmo.py" in molmo["files"] and "model.safetensors" in molmo["files"]
        weights = checkout / "weights/Molmo-7B-D-0924"
        assert verify_tree(weights, molmo["files"]) == []
        # a second fetch uses the lock: same commit, files checked
        before = lock_file.read_bytes()
        r = _pointfail(["weights", "fetch", "molmo-7b-d", "--study", "records/pointfail-vlm/study.toml"], checkout, env)
        assert r.returncode == 0 and "(from study.lock)" in r.stdout and "files match the lock" in r.stdout
        assert lock_file.read_bytes() == before
        # a lock that disagrees with what the hub serves is not rewritten: the fetch is refused
        lock["models"]["molmo-7b-d"]["files"]["config.json"] = "0" * 64
        lock_file.write_text(json.dumps(lock))
        r = _pointfail(["weights", "fetch", "molmo-7b-d", "--study", "records/pointfail-vlm/study.toml"], checkout, env)
        assert r.returncode == 2 and "refusing" in r.stderr and "config.json" in r.stderr
    # and a file changed on disk is named by the run's check
    (weights / "config.json").write_text("{}")
    problems = verify_tree(weights, read_lock(lock_file)["models"]["molmo-7b-d"]["files"])
    assert len(problems) == 1 and "config.json" in problems[0]


def test_offline_fetch_is_refused_before_the_network(tmp_path):
    checkout = tmp_path / "c"
    (checkout / "records" / "pointfail-vlm").mkdir(parents=True)
    shutil.copy(REPO / "records/pointfail-vlm/study.toml", checkout / "records/pointfail-vlm/study.toml")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = _pointfail(["data", "fetch", "point-bench", "--study", "records/pointfail-vlm/study.toml"], checkout, env)
    assert r.returncode == 2 and "offline" in r.stderr
    assert not (checkout / "records/pointfail-vlm/study.lock").exists()


@pytest.mark.parametrize("name", ["molmo-7b-d", "molmoe-1b", "qwen2.5-vl-3b", "internvl3-2b"])
def test_stand_in_checkpoints_answer_in_their_family_format(name, tmp_path):
    """Each stand-in checkpoint loads through its family's real backend (Molmo v1: remote code via
    trust_remote_code) and writes its wired answer, which the family's parser reads as one point."""
    from PIL import Image

    from pointfail.running.backends.base import WorkItem
    from pointfail.families import get_family
    from pointfail.generated.testing.standin import ANSWERS, MODELS

    family = MODELS[name][0]
    import importlib

    backend = importlib.import_module(f"pointfail.running.backends.{family}")
    kw = {}
    if family == "molmo":  # remote code: a pinned revision and a manifest of the exact files
        from pointfail.running.backends.manifest import write_weights_manifest

        write_weights_manifest(HUB_DIR / "models" / name, tmp_path / "manifest.json")
        kw = {"revision": "a" * 40, "weights_manifest": str(tmp_path / "manifest.json")}
    b = backend.load(str(HUB_DIR / "models" / name), "cpu", **kw)
    import io
    import zipfile

    with zipfile.ZipFile(HUB_DIR / "datasets/point-bench/selected_images.zip") as zf:
        img = Image.open(io.BytesIO(zf.read("selected_images/spatial/spatial_04.png"))).convert("RGB")
    out = b.generate([WorkItem(sample_id="s", image=img, image_path="s.png", prompt="Point to the red block",
                               max_new_tokens=32)])[0]
    assert out["raw_text"] == "".join(ANSWERS[name])
    parse = get_family(family).parse(out["raw_text"], (96, 64), out["model_input_size"])
    assert len(parse.points) == 1


@pytest.mark.slow
def test_committed_stand_in_hub_rebuilds_byte_for_byte(tmp_path):
    """tests/fixtures/standin_hub is what `python -m pointfail.generated.testing.standin` writes (seeded scenes
    and weights; pinned Pillow, torch and transformers)."""
    from pointfail.generated.testing.standin import build_catalog

    out = build_catalog(tmp_path / "hub")
    committed = {p.relative_to(HUB_DIR).as_posix(): p.read_bytes() for p in HUB_DIR.rglob("*") if p.is_file()}
    rebuilt = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert sorted(rebuilt) == sorted(committed)
    assert [k for k in sorted(rebuilt) if rebuilt[k] != committed[k]] == []
