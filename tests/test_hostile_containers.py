"""Hostile model containers, on a real Docker Engine (issue 12): a container sees the images it needs
and nothing of the answers (no metadata, boxes, masks or scene graphs), and symlinks or FIFOs it
plants in its writable folder between runs are never followed by the runner (root): a decoy tree
outside every root is hashed before and after.

The container is the pinned ``center`` image with its entrypoint replaced by a Python probe (as a
malicious image would be), run with exactly the mounts and settings ``run_job`` gives a model."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("docker")

from hostile import make_decoy, tree_digest  # noqa: E402
from serving_fixtures import family_image  # noqa: E402
from pointfail_runner import container as cmod  # noqa: E402
from pointfail_runner.engine import ensure_engine  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]
PY = "/opt/venv/bin/python"

PROBE = r"""
import json, os, stat, sys
report = {"files": [], "found": [], "images": [], "host_paths": {}}
needles = [n.encode() for n in json.loads(sys.argv[1])]
for top in ("/job", "/requests", "/images", "/weights", "/tmp", "/home", "/root", "/data", "/srv", "/mnt"):
    for dirpath, dirnames, filenames in os.walk(top):
        for f in filenames:
            p = os.path.join(dirpath, f)
            report["files"].append(p)
            try:
                if os.path.getsize(p) > 50_000_000:
                    continue
                data = open(p, "rb").read()
            except OSError:
                continue
            for n in needles:
                if n in data:
                    report["found"].append([p, n.decode()])
for p in json.loads(sys.argv[2]):
    report["host_paths"][p] = os.path.exists(p)
report["images"] = sorted(os.listdir("/images"))
for name in ("metadata.jsonl", "scene_graphs"):
    for dirpath, dirnames, filenames in os.walk("/"):
        if dirpath.startswith(("/proc", "/sys", "/opt/venv", "/usr")):
            dirnames[:] = []
            continue
        if name in filenames or name in dirnames:
            report["found"].append([os.path.join(dirpath, name), name])
json.dump(report, open("/job/probe.json", "w"))
"""

PLANT = r"""
import json, os, sys
targets = json.loads(sys.argv[1])
os.symlink(targets["file"], "/job/responses.jsonl")
os.symlink(targets["dir"], "/job/escape")
os.symlink(targets["file"], "/job/container.log")
os.mkfifo("/job/fifo")
print("planted")
"""


@pytest.fixture(scope="module")
def client():
    c = ensure_engine()
    yield c
    c.close()


@pytest.fixture(scope="module")
def center(client, base_lock) -> str:
    """The pinned centre image, built on the session's base lock (``conftest.base_lock``)."""
    return family_image(client, base_lock, "center").tag


@pytest.fixture()
def suite(tmp_path: Path):
    """A generated sheets suite (PointerBench layout: metadata.jsonl with target boxes, scene graphs)
    under a data root, and its samples."""
    from pointfail.inputs.benchmarks import load
    from pointfail.generated.suites import sheets

    data = tmp_path / "data" / "s" / "sheets"
    sheets.generate(data, n=4, seed=5)
    for dirpath, _, files in os.walk(tmp_path):
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    return data, load("suite", data)


def _requests(samples) -> list[dict]:
    return [{"sample_id": s.sample_id, "image": s.image.path, "prompt": "Point to it.", "task": s.task,
             "max_new_tokens": 16} for s in samples]


def _probe(client, image: str, job: Path, argv: list[str], script: str) -> str:
    kw = cmod.container_kwargs(family="center", job_dir=job, mem_limit="1g", gpu=False)
    kw.update(entrypoint=[PY, "-c", script], command=argv)
    c = client.containers.create(image, **kw)
    try:
        c.start()
        assert c.wait(timeout=300)["StatusCode"] == 0, c.logs().decode()
        return c.logs().decode()
    finally:
        c.remove(force=True)


def test_model_container_sees_only_the_images_not_targets_or_scene_graphs(client, center, suite, tmp_path):
    data, samples = suite
    job = tmp_path / "work" / "center" / "sheets"
    paths = cmod.prepare_job_dir(job)
    staged, errors = cmod.stage_images(_requests(samples), paths, data)
    assert errors == {} and len(staged) == len(samples)
    from pointfail.running.jobs import JobRequest, write_requests

    write_requests(paths.requests, [JobRequest.model_validate(r) for r in staged])
    # what the answers look like on disk: each row's box as written in metadata.jsonl, the scene
    # graphs' schema tag and an element id of each target
    rows = [json.loads(x) for x in (data / "data/test/metadata.jsonl").read_text().splitlines()]
    needles = ["pointfail.scene_graph/1", *{json.dumps(r["bbox"]) for r in rows},
               *{r["target_id"] for r in rows if r.get("target_id")}, '"answer_type"']
    host_paths = [str(data), str(data / "data/test/metadata.jsonl"), str(data.parent)]
    _probe(client, center, job, [json.dumps(needles), json.dumps(host_paths)], PROBE)
    report = json.loads((paths.out / "probe.json").read_text())
    assert report["found"] == []  # no box, no target id, no scene graph, no metadata file anywhere it looked
    assert report["host_paths"] == {p: False for p in host_paths}
    assert len(report["images"]) == len(samples)  # and it did see the images it needs
    assert not any(p.endswith((".json", ".jsonl")) and "/images/" in p for p in report["files"])
    # the real worker answers from those images alone
    (paths.out / "probe.json").unlink()
    res = cmod.run_job(client, center, family="center", job_dir=job, requests=_requests(samples), data_root=data,
                       gpu=False, progress=False, log=lambda s: None)
    assert res.answered == len(samples) and res.exit_code == 0
    mounts = {m["Destination"]: (m["Source"], m["RW"]) for m in res.settings["Mounts"]}
    assert set(mounts) == {"/job", "/requests", "/images", "/weights"}
    assert [d for d, (_, rw) in mounts.items() if rw] == ["/job"]
    assert not any(src == str(data) or src.startswith(str(data) + "/") for src, _ in mounts.values())


def test_symlinks_planted_by_a_container_between_runs_are_never_followed(client, center, suite, tmp_path):
    data, samples = suite
    decoy = make_decoy(tmp_path)
    before = tree_digest(decoy)
    job = tmp_path / "work" / "center" / "sheets"
    cmod.prepare_job_dir(job)
    # run 1: a container that plants links to host paths (and a FIFO) in its writable folder
    out = _probe(client, center, job, [json.dumps({"file": str(decoy / "etc/passwd"), "dir": str(decoy)})], PLANT)
    assert "planted" in out
    paths = cmod.JobPaths(job)
    assert (paths.out / "responses.jsonl").is_symlink() and (paths.out / "escape").is_symlink()
    # run 2, as the runner's own messages invite: refused with a clear error, nothing written anywhere
    with pytest.raises(cmod.ContainerFailed, match="responses.jsonl is a symlink; the runner never follows"):
        cmod.run_job(client, center, family="center", job_dir=job, requests=_requests(samples), data_root=data,
                     gpu=False, progress=False, log=lambda s: None)
    assert tree_digest(decoy) == before
    assert os.lstat(decoy / "etc/passwd").st_uid == os.getuid()  # never chowned to the container user
    # the operator removes the planted responses link (as the error says); the other links stay
    (paths.out / "responses.jsonl").unlink()
    res = cmod.run_job(client, center, family="center", job_dir=job, requests=_requests(samples), data_root=data,
                       gpu=False, progress=False, log=lambda s: None)
    assert res.answered == len(samples)
    ids = Counter(json.loads(x)["sample_id"] for x in paths.responses.read_text().splitlines())
    assert set(ids.values()) == {1} and len(ids) == len(samples)  # each sample once
    assert (paths.out / "escape").is_symlink() and (paths.out / "container.log").is_symlink()  # untouched
    assert tree_digest(decoy) == before


SPARSE = r"""
import json, os, time
with open("/job/responses.jsonl", "w") as f:
    f.write(json.dumps({"sample_id": "x", "raw_text": "(1, 2)"}) + "\n")
    f.truncate(2 << 30)  # 2 GiB that cost the container nothing: a sparse file
print("sparse", flush=True)
time.sleep(120)
"""


def test_a_sparse_responses_file_is_capped_inside_the_wall_clock(client, center, suite, tmp_path):
    """A container that leaves a 2 GiB sparse responses.jsonl is killed as soon as the runner sees it
    (not at the wall clock), the file is refused before a byte is read, and a rerun in a fresh folder
    finishes the job (issue 24)."""
    import io
    import time

    data, samples = suite
    tag = f"pointfail-test/sparse:{os.getpid()}"
    dockerfile = f'FROM {center}\nENTRYPOINT ["{PY}", "-c", {json.dumps(SPARSE)}]\n'
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, network_mode="none")
    try:
        job = tmp_path / "work" / "center" / "sheets"
        t0 = time.monotonic()
        with pytest.raises(cmod.ContainerFailed, match=r"responses.jsonl is 2147483648 bytes, over the cap of") as ei:
            cmod.run_job(client, tag, family="center", job_dir=job, requests=_requests(samples), data_root=data,
                         gpu=False, progress=False, log=lambda s: None, wall_clock_s=300)
        assert time.monotonic() - t0 < 60 and not ei.value.timed_out
        assert cmod.responses_cap(len(samples)) < 2 << 30
    finally:
        client.images.remove(tag, force=True)
    fresh = tmp_path / "work2" / "center" / "sheets"
    res = cmod.run_job(client, center, family="center", job_dir=fresh, requests=_requests(samples), data_root=data,
                       gpu=False, progress=False, log=lambda s: None)
    assert res.answered == len(samples)
