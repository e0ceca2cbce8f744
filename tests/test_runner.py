"""Runner logic that needs no Docker Engine: apt source parsing, dpkg status, lock files and the
wheelhouse check, job-directory resume bookkeeping, study files, image path mapping, build keys."""

from __future__ import annotations

import hashlib
import os
import json
from pathlib import Path

import pytest

from pointfail_runner import base, container, images, locks, study


def _write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_apt_sources_one_line_and_deb822(tmp_path):
    _write(tmp_path / "etc/apt/sources.list",
           "# comment\ndeb-src http://src.example/debian bookworm main\n"
           "deb [signed-by=/k.gpg arch=amd64] http://one.example/debian bookworm main contrib\n")
    _write(tmp_path / "etc/apt/sources.list.d/b.sources",
           "Types: deb\nURIs: http://two.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"
           "\nTypes: deb\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\nComponents: main\n")
    _write(tmp_path / "etc/apt/sources.list.d/a.sources",
           "Enabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: bookworm\nComponents: main\n")
    _write(tmp_path / "etc/apt/sources.list.d/c.list.disabled", "deb http://never.example/debian bookworm main\n")
    srcs = base.apt_sources(tmp_path)
    # sources.list first (its deb-src line is not a deb source), then .d files sorted by name; the
    # disabled paragraph and the file with another suffix are skipped.
    assert [s.uri for s in srcs] == ["http://one.example/debian", "http://two.example/debian",
                                     "http://sec.example/debian-security"]
    assert srcs[0].components == ("main", "contrib")
    assert base.read_apt_mirror("bookworm", tmp_path) == "http://one.example/debian"
    assert base.read_apt_mirror("bookworm-security", tmp_path) == "http://sec.example/debian-security"


def test_apt_mirror_deb822_only_and_missing(tmp_path):
    _write(tmp_path / "etc/apt/sources.list.d/debian.sources",
           "Types: deb\nURIs: http://m.example/debian/\nSuites: bookworm\nComponents: contrib main\n")
    assert base.read_apt_mirror("bookworm", tmp_path) == "http://m.example/debian"  # trailing / dropped
    with pytest.raises(base.BaseImageError, match="no apt source for suite 'trixie'.*m.example"):
        base.read_apt_mirror("trixie", tmp_path)


def test_dpkg_versions(tmp_path):
    _write(tmp_path / "var/lib/dpkg/status",
           "Package: python3\nStatus: install ok installed\nVersion: 3.11.2-1+b1\nDescription: x\n continued\n\n"
           "Package: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n\n"
           "Package: apt\nStatus: install ok installed\nVersion: 2.6.1\n")
    assert base.dpkg_versions(tmp_path) == {"apt": "2.6.1", "python3": "3.11.2-1+b1"}


def test_committed_base_lock_has_no_host_name():
    """The base lock pins the image and the Debian package versions but never names the mirror."""
    lock = json.loads((Path(__file__).parents[1] / "images/base/base.lock.json").read_text())
    assert lock["image_id"].startswith("sha256:") and len(lock["image_id"]) == 71
    assert lock["packages"]["python3"].startswith("3.11")
    assert lock["upstream_image"].startswith("debian:bookworm-") and "@sha256:" in lock["upstream_image"]
    assert "http" not in json.dumps(lock)


def test_parse_lock_and_hash_required(tmp_path):
    h1, h2 = "a" * 64, "b" * 64
    p = _write(tmp_path / "requirements.lock",
               f"# header\nNumPy==2.4.6 \\\n    --hash=sha256:{h1} \\\n    --hash=sha256:{h2}\n"
               f"typing_extensions==4.16.0 --hash=sha256:{h1}\n")
    assert locks.parse_lock(p) == [locks.LockEntry("numpy", "2.4.6", (h1, h2)),
                                   locks.LockEntry("typing-extensions", "4.16.0", (h1,))]
    _write(p, "numpy==2.4.6\n")
    with pytest.raises(locks.LockError, match="numpy has no --hash"):
        locks.parse_lock(p)
    with pytest.raises(locks.LockError, match="missing; run: pointfail-runner lock"):
        locks.parse_lock(tmp_path / "nope/requirements.lock")


def test_verify_wheelhouse(tmp_path):
    img = tmp_path / "images/demo"
    wheel = b"not really a wheel"
    h = hashlib.sha256(wheel).hexdigest()
    _write(img / "requirements.lock", f"demo==1.0 --hash=sha256:{h}\nother==2.0 --hash=sha256:{'c' * 64}\n")
    wh = tmp_path / "wheelhouse"
    with pytest.raises(locks.LockError, match=r"lacks 2 wheel\(s\).*demo==1.0, other==2.0.*make wheels"):
        locks.verify_wheelhouse(img, wh)
    (wh / "demo/cpu").mkdir(parents=True)
    (wh / "demo/cpu/demo-1.0-py3-none-any.whl").write_bytes(wheel)
    (wh / "demo/cpu/tampered-2.0-py3-none-any.whl").write_bytes(b"other bytes")
    with pytest.raises(locks.LockError, match=r"lacks 1 wheel\(s\).*other==2.0"):
        locks.verify_wheelhouse(img, wh)
    _write(img / "requirements.lock", f"demo==1.0 --hash=sha256:{h}\n")
    assert locks.verify_wheelhouse(img, wh) == {h: wh / "demo/cpu/demo-1.0-py3-none-any.whl"}


def test_committed_locks_are_complete_and_torch_free_where_promised():
    repo = Path(__file__).parents[1]
    for name in ("scorer", "center", "ocr"):
        names = {e.name for e in locks.parse_lock(repo / f"images/{name}/requirements.lock")}
        assert {"numpy", "pillow", "scipy", "pydantic", "tabulate"} <= names
        assert "torch" not in names and "transformers" not in names
    tf = {e.name: e.version for e in locks.parse_lock(repo / "images/qwen2_5_vl/requirements-cpu.lock")}
    assert tf["torch"] == "2.13.0+cpu" and tf["transformers"].startswith("5.")
    molmo = {e.name: e.version for e in locks.parse_lock(repo / "images/molmo/requirements-cpu.lock")}
    major, minor = (int(x) for x in molmo["transformers"].split(".")[:2])
    assert major == 4 and 40 <= minor <= 59  # Molmo v1's remote code: the 4.4x-4.5x line


def test_lock_paths_by_variant(tmp_path):
    _write(tmp_path / "t/requirements-cpu.in", "torch\n")
    _write(tmp_path / "p/requirements.in", "numpy\n")
    assert locks.uses_torch(tmp_path / "t") and not locks.uses_torch(tmp_path / "p")
    assert locks.lock_path(tmp_path / "t", "cuda").name == "requirements-cuda.lock"
    assert locks.lock_path(tmp_path / "p", "cuda").name == "requirements.lock"


def test_answered_ids_ignores_cut_last_line(tmp_path):
    p = tmp_path / "responses.jsonl"
    p.write_bytes(b'{"sample_id": "a", "raw_text": "x"}\n{"sample_id": "b", "error": "oom"}\n{"sample_id": "c", "raw_')
    assert container.answered_ids(p) == {"a", "b"}
    assert container.answered_ids(tmp_path / "missing.jsonl") == set()


def test_progress_counts_only_new_complete_lines(tmp_path):
    p = tmp_path / "responses.jsonl"
    prog = container._Progress(p, {"a", "b", "c"})
    assert prog.poll() == 0
    p.write_bytes(b'{"sample_id": "a"}\n{"sample_id": "zz"}\n{"sample_')
    assert prog.poll() == 1  # "zz" was not requested; the third line is not complete yet
    with open(p, "ab") as f:
        f.write(b'id": "b"}\n{"sample_id": "a"}\n')
    assert prog.poll() == 1 and prog.done == {"a", "b"}  # a repeated id is not counted twice


def test_stage_images_copies_only_images_inside_the_data_folder(tmp_path):
    data = tmp_path / "suite"
    (data / "data/test").mkdir(parents=True)
    (data / "data/test/0001.png").write_bytes(b"png bytes")
    (data / "data/test/metadata.jsonl").write_text('{"bbox": [1, 2, 3, 4]}\n')
    (tmp_path / "secret.txt").write_text("not for the container")
    (data / "data/test/escape.png").symlink_to(tmp_path / "secret.txt")
    paths = container.prepare_job_dir(tmp_path / "job")
    reqs = [{"sample_id": "a", "image": str(data / "data/test/0001.png")},
            {"sample_id": "b", "image": str(data / "data/test/escape.png")},
            {"sample_id": "c", "image": str(data / "data/test/missing.png")},
            {"sample_id": "d", "image": str(data / "data/test/metadata.jsonl")}]
    staged, errors = container.stage_images(reqs, paths, data)
    # neutral names by position; a non-image suffix becomes .img; the metadata file is only staged because
    # a request named it (the runner never does)
    assert [r["image"] for r in staged] == ["/images/000000.png", "/images/000003.img"]
    assert (paths.images / "000000.png").read_bytes() == b"png bytes"
    assert "outside the data folder" in errors["b"] and "cannot be staged" in errors["c"]
    assert sorted(p.name for p in paths.images.iterdir()) == ["000000.png", "000003.img"]


def test_load_study_checks_fields(tmp_path):
    ok = _write(tmp_path / "study.toml", '[study]\nname = "s"\n[[benchmarks]]\nname = "sheets"\nloader = "suite"\n'
                '[[models]]\nname = "center"\nfamily = "center"\nimage = "center"\n')
    s = study.load_study(ok)
    assert s.name == "s" and [m.name for m in s.models] == ["center"]
    assert s.select_models(["center"]) == s.models
    with pytest.raises(study.StudyError, match="unknown model\\(s\\) 'nope'; the study has: center"):
        s.select_models(["nope"])
    bad = _write(tmp_path / "bad.toml", '[study]\nname = "s"\n[[models]]\nname = "m"\nfamily = "qwen2_5_vl"\n')
    with pytest.raises(study.StudyError, match=r"bad.toml:\n  models\[0\]\.image: Field required"):
        study.load_study(bad)
    with pytest.raises(study.StudyError, match=r"study\.name: Field required"):
        study.load_study(_write(tmp_path / "noname.toml", "[study]\n"))


def test_build_key_changes_with_each_input():
    parts = dict(dockerfile=b"FROM x\n", lock=b"a==1\n", debian=b"{}\n", installer=b"print()\n", src_sha="src1",
                 base_id="sha256:base1", snapshot=None)
    k = images.build_key(**parts)
    assert k == images.build_key(**dict(parts))
    changed = {name: images.build_key(**dict(parts, **{name: value})) for name, value in (
        ("dockerfile", b"FROM y\n"), ("lock", b"a==2\n"), ("debian", b'{"requested": ["x"]}\n'),
        ("installer", b"pass\n"), ("src_sha", "src2"), ("base_id", "sha256:base2"), ("snapshot", "20250520T000000Z"))}
    assert len(set(changed.values()) | {k}) == 8  # every input moves the key
    # parts are hashed one by one: moving bytes from one part to the next is another key
    assert images.build_key(**dict(parts, dockerfile=b"FROM x\na", lock=b"==1\n")) != k


def test_images_share_one_dockerfile_unless_they_differ():
    repo = Path(__file__).parents[1]
    names = images.image_names(repo)
    assert {"center", "ocr", "scorer", "suites", "molmo", "molmo2", "qwen2_5_vl", "qwen3_vl", "internvl3"} <= set(names)
    own = {n for n in names if images.dockerfile_for(repo / "images" / n) != repo / "images/Dockerfile"}
    assert own == {"scorer", "suites"}  # other entry points; every model family and baseline shares the rest


def test_only_images_with_debian_packages_build_with_a_network():
    repo = Path(__file__).parents[1]
    nets = {n: images.needs_network(repo / "images" / n) for n in images.image_names(repo)}
    assert nets["ocr"] is True and nets["suites"] is True  # Tesseract; Chromium, fonts and pages from Debian
    pure_python = ("scorer", "center", "molmo", "molmo2", "qwen2_5_vl", "qwen3_vl", "internvl3")
    assert {n: nets[n] for n in pure_python} == {n: False for n in pure_python}


def test_source_sha256_ignores_pycache(tmp_path):
    _write(tmp_path / "pyproject.toml", "[project]\n")
    _write(tmp_path / "src/pointfail/a.py", "x = 1\n")
    h = images.source_sha256(tmp_path)
    _write(tmp_path / "src/pointfail/__pycache__/a.cpython-311.pyc", "junk")
    assert images.source_sha256(tmp_path) == h
    _write(tmp_path / "src/pointfail/a.py", "x = 2\n")
    assert images.source_sha256(tmp_path) != h


def test_runner_package_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys, pointfail_runner.cli, pointfail_runner.container, pointfail_runner.study, "
            "pointfail_runner.images; print(sorted(m for m in ('torch', 'transformers', 'docker') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # the docker SDK, too, is imported only when a command needs it


def test_container_kwargs_lock_the_container_down(tmp_path, monkeypatch):
    pytest.importorskip("docker")
    job, w = tmp_path / "job", tmp_path / "w"
    kw = container.container_kwargs(family="qwen2_5_vl", job_dir=job, weights_dir=w, batch_size=4, mem_limit="6g",
                                    gpu=False)
    assert kw["network_mode"] == "none" and kw["read_only"] is True and kw["cap_drop"] == ["ALL"]
    assert kw["security_opt"] == ["no-new-privileges"] and kw["mem_limit"] == kw["memswap_limit"] == "6g"
    assert "/tmp" in kw["tmpfs"] and "device_requests" not in kw
    # the container writes only out/; it reads its requests, the staged images and the weights; no data folder
    assert kw["volumes"] == {str(job.resolve() / "out"): {"bind": "/job", "mode": "rw"},
                             str(job.resolve() / "requests"): {"bind": "/requests", "mode": "ro"},
                             str(job.resolve() / "images"): {"bind": "/images", "mode": "ro"},
                             str(w.resolve()): {"bind": "/weights", "mode": "ro"}}
    assert kw["command"][4:8] == ["--requests", "/requests/requests.jsonl", "--responses", "/job/responses.jsonl"]
    assert kw["command"][:2] == ["--family", "qwen2_5_vl"] and kw["command"][-2:] == ["--device", "cpu"]
    assert kw["user"] != "0:0" and not kw["user"].startswith("0:")
    gpu = container.container_kwargs(family="x", job_dir=job, weights_dir=w, gpu=True)
    assert gpu["command"][-2:] == ["--device", "cuda"]
    assert gpu["device_requests"][0]["Count"] == -1 and gpu["device_requests"][0]["Capabilities"] == [["gpu"]]
    monkeypatch.setenv("POINTFAIL_GPU", "0")
    assert container.host_has_gpu() is False


def test_unreadable_by_reads_permission_bits(tmp_path):
    root = tmp_path / "weights"
    (root / "sub").mkdir(parents=True)
    f = root / "sub" / "model.safetensors"
    f.write_bytes(b"x")
    for p, mode in ((root, 0o755), (root / "sub", 0o755), (f, 0o644)):
        p.chmod(mode)
    assert container.unreadable_by(root, 10001, 10001) is None
    f.chmod(0o600)
    assert container.unreadable_by(root, 10001, 10001) == f
    f.chmod(0o644)
    root.chmod(0o700)  # what pytest's tmp_path gives: the container user could not enter it
    assert container.unreadable_by(root, 10001, 10001) == root
    assert container.unreadable_by(root, os.getuid(), os.getgid()) is None  # the owner can


def test_ensure_engine_never_starts_a_local_engine_for_a_remote_host(tmp_path, monkeypatch):
    pytest.importorskip("docker")
    from pointfail_runner.engine import EngineError, ensure_engine

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(EngineError, match="does not answer; not starting a local engine"):
        ensure_engine(timeout=1)
    with pytest.raises(EngineError, match="no Docker Engine answers; start one"):
        ensure_engine(timeout=1, start=False)


def test_grant_read_adds_only_read_and_search_for_others(tmp_path):
    root = tmp_path / "suite"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.png").write_bytes(b"x")
    (root / "run.sh").write_bytes(b"x")
    root.chmod(0o700)
    (root / "d").chmod(0o700)
    (root / "d" / "a.png").chmod(0o600)
    (root / "run.sh").chmod(0o700)
    container.grant_read(root)
    modes = {p.name: p.stat().st_mode & 0o777 for p in [root, root / "d", root / "d/a.png", root / "run.sh"]}
    assert modes == {"suite": 0o705, "d": 0o705, "a.png": 0o604, "run.sh": 0o705}
    assert container.unreadable_by(root, 10001, 10001) is None


def test_missing_generated_data_names_make_data_and_the_no_docker_command(tmp_path):
    """Before any work the runner names what brings a missing suite: `make data`, and for the
    Pillow-drawn suites the `pointfail generate` line with every option the study gives (as the
    failure browser does for the same folder)."""
    from pathlib import Path

    from pointfail.inputs.study import Roots
    from pointfail_runner.study import load_study, missing_inputs

    repo = Path(__file__).resolve().parents[1]
    study = load_study(repo / "records" / "default" / "study.toml")
    roots = Roots.for_study(study, repo, data=tmp_path / "data", weights=tmp_path / "weights")
    lines = {ln.split(":")[0]: ln for ln in missing_inputs(study, study.models, study.benchmarks, roots, repo=repo)}
    d = tmp_path / "data"
    assert lines["data for sheets"] == (
        f"data for sheets: {d / 'sheets'} <- make data STUDY=default (or without Docker: pointfail generate sheets "
        f"--n 150 --seed 20261129 --absent-share 0.1 --out {d / 'sheets'})")
    assert lines["data for web"] == f"data for web: {d / 'web'} <- make data STUDY=default"  # needs the browser


def test_an_engine_the_runner_starts_does_not_inherit_the_callers_temporary_folder(tmp_path, monkeypatch):
    """``ensure_engine`` starts ``dockerd`` without TMPDIR/TEMP/TMP: a test's or a benchmark's
    temporary folder is deleted while the engine runs on, and containerd's shims (which inherit it) then
    fail every ``exec`` with "open <TMPDIR>/runc-process...: no such file" (seen in a full test run)."""
    from pointfail_runner import engine

    seen = {}

    class _Proc:
        returncode = None

        def poll(self):
            return None

    def popen(argv, **kw):
        seen["argv"], seen["env"] = argv, kw.get("env")
        return _Proc()

    pings = iter([None, "client"])
    monkeypatch.setattr(engine, "_ping", lambda timeout: next(pings))
    monkeypatch.setattr(engine.os, "geteuid", lambda: 0)
    monkeypatch.setattr(engine, "_is_debian", lambda: True)
    monkeypatch.setattr(engine.shutil, "which", lambda name: "/usr/sbin/dockerd")
    monkeypatch.setattr(engine.subprocess, "Popen", popen)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    for k in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.setenv(k, str(tmp_path))
    monkeypatch.setenv("PATH_SEEN_BY_DOCKERD", "yes")
    assert engine.ensure_engine(timeout=5, log_path=tmp_path / "dockerd.log") == "client"
    assert seen["argv"] == ["/usr/sbin/dockerd"]
    assert not {"TMPDIR", "TEMP", "TMP"} & set(seen["env"]) and seen["env"]["PATH_SEEN_BY_DOCKERD"] == "yes"


def test_missing_inputs_names_data_weights_manifests_revisions_and_a_broken_lock(tmp_path):
    """The source study with a broken lock, one benchmark's data and three weights folders present, and
    molmo-7b-d's weights_manifest taken out: every line names what is missing and the command that
    brings it (paths shown relative to the checkout)."""
    from pointfail.inputs.study import Roots
    from pointfail_runner.study import load_study, missing_inputs

    repo = Path(__file__).resolve().parents[1]
    sd = tmp_path / "records" / "s"
    sd.mkdir(parents=True)
    text = (repo / "records/pointfail-vlm/study.toml").read_text(encoding="utf-8")
    manifest = 'weights_manifest = "weights/molmo-7b-d.manifest.json"  # written by the first weights fetch\n'
    assert manifest in text
    (sd / "study.toml").write_text(text.replace(manifest, ""), encoding="utf-8")
    (sd / "study.lock").write_text("{not json")
    (tmp_path / "data" / "where2place").mkdir(parents=True)
    for w in ("MolmoE-1B-0924", "Qwen2.5-VL-3B-Instruct", "InternVL3-2B-hf"):
        (tmp_path / "weights" / w).mkdir(parents=True)

    def lines():
        s = load_study(sd / "study.toml")
        roots = Roots.for_study(s, tmp_path, data=tmp_path / "data", weights=tmp_path / "weights")
        return missing_inputs(s, s.models, s.benchmarks, roots, repo=tmp_path, require_revisions=True)

    st = "--study records/s/study.toml"
    fetch = {m: f"pointfail weights fetch {m} {st} --to weights/{w}" for m, w in [
        ("molmo-7b-d", "Molmo-7B-D-0924"), ("molmoe-1b", "MolmoE-1B-0924"), ("internvl3-2b", "InternVL3-2B-hf")]}
    got = lines()
    assert got[0].startswith(f"study lock: {sd / 'study.lock'}: cannot read the study lock: ")
    assert got[1:] == [
        f"data for point-bench: data/point-bench <- pointfail data fetch point-bench {st} --to data/point-bench",
        f"data for refspatial: data/refspatial <- pointfail data fetch refspatial {st} --to data/refspatial",
        "weights manifest for molmo-7b-d: family molmo runs the checkpoint's own code; name one in the study "
        f"(weights_manifest = \"weights/molmo-7b-d.manifest.json\"): {fetch['molmo-7b-d']} writes it at the first fetch",
        f"weights for molmo-7b-d (allenai/Molmo-7B-D-0924): weights/Molmo-7B-D-0924 <- {fetch['molmo-7b-d']}",
        f"weights manifest for molmoe-1b: records/s/weights/molmoe-1b.manifest.json <- {fetch['molmoe-1b']}",
        f"revision molmoe-1b: neither pinned in records/s/study.toml nor in its lock <- {fetch['molmoe-1b']}",
        f"revision internvl3-2b: neither pinned in records/s/study.toml nor in its lock <- {fetch['internvl3-2b']}"]
    # with its manifest named again, molmo-7b-d's missing weights line names the manifest too
    (sd / "study.toml").write_text(text, encoding="utf-8")
    assert [ln for ln in lines() if ln.startswith(("weights for molmo-7b-d", "weights manifest for molmo-7b-d"))] == [
        "weights for molmo-7b-d (allenai/Molmo-7B-D-0924): weights/Molmo-7B-D-0924 and its weights manifest "
        f"records/s/weights/molmo-7b-d.manifest.json <- {fetch['molmo-7b-d']}"]
