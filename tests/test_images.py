"""The container path against a real Docker Engine (issue 4, "What it must show").

Started with :func:`pointfail_runner.engine.ensure_engine` (installs Debian's docker.io and starts
dockerd when none answers). Images are shared by every test in the session; the base is reused when
the engine holds the one ``images/base/base.lock.json`` names, and built from Debian packages
otherwise (into a temporary lock, so the committed lock is left alone). Images are rebuilt only when
their Dockerfile, lock, the pointfail source or the base changed (content-keyed tags).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("docker")

from pointfail_runner import container as cmod  # noqa: E402
from pointfail_runner import images as imod  # noqa: E402
from pointfail_runner import locks  # noqa: E402
from pointfail_runner import aptpins  # noqa: E402
from pointfail_runner.base import base_tag, find_base, read_apt_mirror, read_lock  # noqa: E402
from pointfail_runner.engine import ensure_engine  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
WHEELHOUSE = REPO / "wheelhouse"
TINY_FAMILY = "qwen2_5_vl"


@pytest.fixture(scope="session")
def client():
    c = ensure_engine()
    yield c
    c.close()


@pytest.fixture(scope="session")
def local_base(client, base_lock):
    return find_base(client, read_lock(base_lock))


@pytest.fixture(scope="session")
def build(client, base_lock):
    cache: dict[str, imod.BuiltImage] = {}

    def _build(name: str) -> imod.BuiltImage:
        if name not in cache:
            image_dir = REPO / "images" / name
            try:
                locks.verify_wheelhouse(image_dir, WHEELHOUSE, "cpu")
            except locks.LockError:
                locks.download_wheels(image_dir, WHEELHOUSE, "cpu")
            cache[name] = imod.build_image(client, REPO, name, variant="cpu", wheelhouse=WHEELHOUSE,
                                           base_lock=base_lock, log=lambda s: None)
        return cache[name]

    return _build


def _run(client, image: str, argv: list[str], entrypoint=None) -> str:
    """Run a short command in ``image`` (no network) and return its output. Output that does not end
    in a newline can reach the engine's log a moment after the exit, so logs are read until stable."""
    import time

    c = client.containers.create(image, argv, entrypoint=entrypoint, network_mode="none")
    try:
        c.start()
        assert c.wait(timeout=300)["StatusCode"] == 0, c.logs().decode()
        out = c.logs(stdout=True, stderr=True)
        for _ in range(20):
            if out.endswith(b"\n"):
                break
            time.sleep(0.1)
            out = c.logs(stdout=True, stderr=True)
        return out.decode()
    finally:
        c.remove(force=True)


def _world_readable(root: Path) -> Path:
    """pytest's temporary directories are private (0700); the containers run as uid 10001."""
    for p in [root, *root.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


@pytest.fixture(scope="session")
def sheets_suite(tmp_path_factory) -> Path:
    from pointfail.generated.suites import sheets

    out = tmp_path_factory.mktemp("suite") / "sheets"
    sheets.generate(out, n=6, seed=3)
    return _world_readable(out)


@pytest.fixture(scope="session")
def tiny_weights(tmp_path_factory) -> Path:
    from pointfail.generated.testing import tiny

    return _world_readable(tiny.build(TINY_FAMILY, tmp_path_factory.mktemp("tiny") / TINY_FAMILY, seed=0))


def test_base_from_debian_packages(client, base_lock, local_base):
    lock = json.loads(base_lock.read_text())
    assert lock == json.loads((REPO / "images/base/base.lock.json").read_text())  # reproducing never rewrites it
    img = client.images.get(local_base.id)
    assert local_base.tag == base_tag(lock) and local_base.tag in img.tags
    py = "import sys, pwd, ensurepip; print(sys.version_info[:2], pwd.getpwnam('pointfail').pw_uid)"
    assert _run(client, local_base.id, ["/usr/bin/python3", "-c", py]).strip() == "(3, 11) 10001"
    # The Debian versions dpkg reports inside the image are the ones its label holds, and the drift is
    # exactly where they differ from the recorded lock.
    v = _run(client, local_base.id, ["dpkg-query", "-W", "--showformat=${Version}\\n", "python3"]).strip()
    assert v == local_base.packages["python3"]
    assert local_base.drift == tuple((p, a, b) for p, a, b in aptpins.drift(lock["packages"], local_base.packages))
    assert read_apt_mirror() not in base_lock.read_text()  # the mirror's host name is never recorded


def _labels_ok(client, built: imod.BuiltImage, lockfile: Path):
    attrs = client.images.get(built.tag).attrs
    labels = attrs["Config"]["Labels"]
    assert labels["org.pointfail.lock-sha256"] == locks.file_sha256(lockfile)
    # The tag's content key is made of the Dockerfile, the lock, the source hash in the label and the
    # base id: the label names the source the image was really built from.
    base_id = labels["org.pointfail.base-id"]
    assert base_id.startswith("sha256:") and client.images.get(base_id).id == base_id
    assert labels["org.pointfail.source-sha256"] == imod.source_sha256(REPO)
    assert built.tag.endswith(imod.image_key(REPO, built.name, built.variant, base_id)[:12])
    # the Debian install report is in the labels: what the image holds and how it drifted from debian.lock
    deb = imod.debian_lock(REPO / "images" / built.name)
    installed = json.loads(labels["org.pointfail.debian-packages"])
    assert [tuple(e) for e in json.loads(labels["org.pointfail.debian-drift"])] == aptpins.drift(deb["installed"], installed)
    assert set(deb["requested"]) <= set(installed)
    assert len(labels["org.opencontainers.image.revision"].split("-")[0]) == 40
    assert attrs["Config"]["User"] == "10001:10001"
    assert isinstance(attrs["Config"]["Entrypoint"], list)  # exec form
    return attrs


def test_scorer_image_has_no_torch_and_scores(client, build):
    built = build("scorer")
    _labels_ok(client, built, REPO / "images/scorer/requirements.lock")
    code = "import importlib.util as u, pointfail, numpy, PIL, scipy; print(u.find_spec('torch') is None)"
    assert _run(client, built.tag, ["-c", code], entrypoint=["/opt/venv/bin/python"]).strip() == "True"
    # pointfail's own CLI in the image: a point at (10, 10) px inside the box [0, 0, 50, 50] is a hit.
    out = _run(client, built.tag, ["score", "--family", "json_pixels", "--image-size", "100", "100",
                                   "--box", "0", "0", "50", "50", "--text", '{"point": [10, 10]}'])
    assert json.loads(out)["outcome"] == "hit"


def test_ocr_image_has_tesseract_and_languages(client, build):
    built = build("ocr")
    _labels_ok(client, built, REPO / "images/ocr/requirements.lock")
    langs = _run(client, built.tag, ["--list-langs"], entrypoint=["tesseract"]).split()
    assert {"eng", "deu", "fra", "spa", "ita", "nld"} <= set(langs)
    code = "import pytesseract; print(pytesseract.get_tesseract_version().major)"
    assert _run(client, built.tag, ["-c", code], entrypoint=["/opt/venv/bin/python"]).strip() == "5"


def test_family_image_cpu_torch(client, build):
    built = build(TINY_FAMILY)
    attrs = _labels_ok(client, built, REPO / f"images/{TINY_FAMILY}/requirements-cpu.lock")
    assert attrs["Config"]["Labels"]["org.pointfail.torch-variant"] == "cpu"
    code = "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.is_available())"
    out = _run(client, built.tag, ["-c", code], entrypoint=["/opt/venv/bin/python"]).split()
    pins = {e.name: e.version for e in locks.parse_lock(REPO / f"images/{TINY_FAMILY}/requirements-cpu.lock")}
    assert out == [pins["torch"], pins["transformers"], "False"]


def _requests(suite: Path, n: int, max_new_tokens: int = 16) -> list[dict]:
    pngs = sorted((suite / "data/test").glob("*.png"))
    return [{"sample_id": f"s{i:03d}", "image": str(pngs[i % len(pngs)]),
             "prompt": "Point to the cell C3.", "task": "point", "max_new_tokens": max_new_tokens}
            for i in range(n)]


def _no_containers_left(client, job: Path) -> bool:
    return client.containers.list(all=True, filters={"label": f"org.pointfail.job={job.resolve()}"}) == []


def test_container_security_settings_and_responses(client, build, sheets_suite, tiny_weights, tmp_path):
    built = build(TINY_FAMILY)
    job = tmp_path / "job"
    res = cmod.run_job(client, built.tag, family=TINY_FAMILY, job_dir=job, requests=_requests(sheets_suite, 4),
                       weights_dir=tiny_weights, data_root=sheets_suite, batch_size=2, mem_limit="4g",
                       wall_clock_s=600, gpu=False, progress=False, log=lambda s: None)
    hc, cfg = res.settings["HostConfig"], res.settings["Config"]
    assert hc["NetworkMode"] == "none" and hc["ReadonlyRootfs"] is True
    assert hc["CapDrop"] == ["ALL"] and hc["SecurityOpt"] == ["no-new-privileges"]
    assert hc["Memory"] == 4 * 1024**3 and "/tmp" in hc["Tmpfs"]
    assert cfg["User"] == "10001:10001"
    modes = {m["Destination"]: m["RW"] for m in res.settings["Mounts"]}
    assert modes == {"/job": True, "/requests": False, "/images": False, "/weights": False}
    assert _no_containers_left(client, job)
    lines = [json.loads(x) for x in (job / "out/responses.jsonl").read_text().splitlines()]
    assert sorted(r["sample_id"] for r in lines) == ["s000", "s001", "s002", "s003"]
    for r in lines:
        assert r["error"] is None and isinstance(r["raw_text"], str)
        assert len(r["model_input_size"]) == 2 and r["output_tokens"] >= 1
    assert res.answered == 4 and res.skipped == 0


def test_kill_mid_run_then_rerun_answers_each_sample_once(client, build, sheets_suite, tiny_weights, tmp_path):
    built = build(TINY_FAMILY)
    job, n = tmp_path / "job", 30
    reqs = _requests(sheets_suite, n, max_new_tokens=48)

    def kill_after_three(done, ctr):
        if done >= 3:
            ctr.kill()

    with pytest.raises(cmod.ContainerFailed) as ei:
        cmod.run_job(client, built.tag, family=TINY_FAMILY, job_dir=job, requests=reqs, weights_dir=tiny_weights,
                     data_root=sheets_suite, batch_size=1, gpu=False, progress=False, log=lambda s: None,
                     on_progress=kill_after_three)
    assert ei.value.exit_code == 137 and not ei.value.timed_out
    first = cmod.answered_ids(job / "out/responses.jsonl")
    assert 3 <= len(first) < n
    assert _no_containers_left(client, job)
    res = cmod.run_job(client, built.tag, family=TINY_FAMILY, job_dir=job, requests=reqs, weights_dir=tiny_weights,
                       data_root=sheets_suite, batch_size=4, gpu=False, progress=False, log=lambda s: None)
    assert res.skipped == len(first) and res.answered == n
    ids = Counter(json.loads(x)["sample_id"] for x in (job / "out/responses.jsonl").read_text().splitlines() if x.strip())
    assert set(ids) == {r["sample_id"] for r in reqs} and set(ids.values()) == {1}
    again = cmod.run_job(client, built.tag, family=TINY_FAMILY, job_dir=job, requests=reqs, weights_dir=tiny_weights,
                         data_root=sheets_suite, progress=False, log=lambda s: None)
    assert again.exit_code == 0 and again.seconds == 0.0  # nothing left: no container started


def test_wall_clock_limit_kills_and_removes(client, build, sheets_suite, tiny_weights, tmp_path):
    built = build(TINY_FAMILY)
    job = tmp_path / "job"
    with pytest.raises(cmod.ContainerFailed) as ei:
        cmod.run_job(client, built.tag, family=TINY_FAMILY, job_dir=job, requests=_requests(sheets_suite, 50, 64),
                     weights_dir=tiny_weights, data_root=sheets_suite, gpu=False, wall_clock_s=2,
                     progress=False, log=lambda s: None)
    assert ei.value.timed_out and "wall-clock limit of 2 s" in str(ei.value)
    assert _no_containers_left(client, job)


def test_failed_container_reports_its_last_log_lines(client, build, sheets_suite, tmp_path):
    built = build("center")
    job = tmp_path / "job"
    with pytest.raises(cmod.ContainerFailed) as ei:
        cmod.run_job(client, built.tag, family="no_such_family", job_dir=job, requests=_requests(sheets_suite, 2),
                     data_root=sheets_suite, gpu=False, progress=False, log=lambda s: None)
    assert ei.value.exit_code == 2
    assert any("no_such_family" in line for line in ei.value.log_tail)
    assert "no_such_family" in (job / "container.log").read_text()


def test_study_end_to_end_into_records(client, build, base_lock, sheets_suite, tiny_weights, tmp_path):
    from pointfail.records import read_records
    from pointfail_runner.study import run_study

    for name in ("center", "ocr", TINY_FAMILY):
        build(name)
    st = tmp_path / "study.toml"
    st.write_text(
        '[study]\nname = "e2e"\n[[benchmarks]]\nname = "sheets"\nloader = "suite"\n'
        '[[models]]\nname = "center"\nfamily = "center"\nimage = "center"\n'
        '[[models]]\nname = "ocr"\nfamily = "ocr"\nimage = "ocr"\n'
        f'[[models]]\nname = "tiny-qwen"\nfamily = "{TINY_FAMILY}"\nimage = "{TINY_FAMILY}"\n'
        f'checkpoint = "tiny-random"\nweights = "{tiny_weights.name}"\nmax_new_tokens = 12\n')
    counts = run_study(st, repo=REPO, records_root=tmp_path / "records", work_root=tmp_path / "work",
                       data_root=sheets_suite.parent, weights_root=tiny_weights.parent,
                       wheelhouse=WHEELHOUSE, variant="cpu", progress=False, client=client, base_lock=base_lock,
                       limit=3, log=lambda s: None)
    assert counts == {"center": {"sheets": 3}, "ocr": {"sheets": 3}, "tiny-qwen": {"sheets": 3}}
    center = read_records(tmp_path / "records/center/sheets.jsonl")
    assert [r.parse.points[0] for r in center] == [[0.5, 0.5]] * 3  # the centre of every image
    for model in ("center", "ocr", "tiny-qwen"):
        recs = read_records(tmp_path / f"records/{model}/sheets.jsonl")
        assert [r.sample_id for r in recs] == sorted(r.sample_id for r in recs)
        assert all(r.outcome in ("hit", "miss", "no_prediction") for r in recs)
        assert all(r.provenance.image_digest and r.provenance.image_digest.startswith("sha256:") for r in recs)
    # Tesseract ran inside the no-network, read-only container and every answer parsed as json_pixels
    # (how often the OCR baseline hits is its own test's business, in-process).
    ocr = read_records(tmp_path / "records/ocr/sheets.jsonl")
    assert all(r.response.error is None and r.outcome in ("hit", "miss") for r in ocr)
    qwen = read_records(tmp_path / "records/tiny-qwen/sheets.jsonl")
    assert all(r.response.model_input_size and r.provenance.packages["torch"] == "2.13.0+cpu" for r in qwen)
