"""A study with a served tiny Qwen2.5-VL (``transformers serve`` on loopback) through ``pointfail-runner
run``: its records equal the in-container backend's on the same checkpoint and inputs (greedy, same
max_new_tokens, same processor budget), parse for parse and byte for byte outside the fields that
differ by nature (wall time, the served block, provenance); a kill -9 of the runner mid-run and a rerun
lose nothing and answer nothing twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointfail.records import read_records

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
N = 6


def _pointerbench(root: Path) -> Path:
    test = root / "data" / "test"
    test.mkdir(parents=True)
    rng = np.random.default_rng(7)
    rows = []
    for i in range(N):
        name = f"{i:04d}.png"
        Image.fromarray(rng.integers(0, 256, (768, 1024, 3), dtype=np.uint8)).save(test / name)
        box = [100 + 50 * i, 200, 180 + 50 * i, 260]
        rows.append({"file_name": name, "id": f"pbt_{i:04d}", "instruction": f"Click word {i}.", "bbox": box,
                     "point": [(box[0] + box[2]) / 2, 230], "answer_type": "point",
                     "eval": {"type": "point_in_bbox", "bbox": box}, "data_type": "word", "category": "word_center",
                     "surface": "memo", "language": "en", "difficulty": "easy", "image_size": [1024, 768]})
    (test / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _study(root: Path, data: Path, ckpt: Path, base_url: str, model: str) -> Path:
    p = root / "study.toml"
    p.write_text(f'''[study]
name = "served15"

[[benchmarks]]
name = "pbt"
loader = "pointerbench-text"
data_dir = "{data.name}"

[[models]]
name = "container"
family = "qwen2_5_vl"
image = "qwen2_5_vl"
weights = "{ckpt.name}"
max_new_tokens = 24

[[models]]
name = "served"
kind = "server"
family = "qwen2_5_vl"
base_url = "{base_url}"
model = "{model}"
max_new_tokens = 24
options = {{ resize = "server", factor = 28, min_pixels = 3136, max_pixels = 12544, concurrency = 2 }}
''')
    return p


def _runner(study: Path, root: Path, *models: str) -> list[str]:
    # data_dir and weights in the study are relative to the declared data and weights roots
    return [sys.executable, "-m", "pointfail_runner", "--repo", str(REPO), "run", "--study", str(study), "--work",
            str(root / "work"), "--records", str(root / "records"), "--data-root", str(root), "--weights-root",
            str(root), "--variant", "cpu", "--no-progress", "--models", *models]


def _comparable(record) -> str:
    d = json.loads(record.to_json())
    d["response"].pop("seconds")
    d["response"].pop("served", None)
    for k in ("provenance", "model"):
        d.pop(k)
    return json.dumps(d, sort_keys=True, ensure_ascii=False)


@pytest.fixture(scope="module")
def served_env(tmp_path_factory):
    from pointfail.generated.testing.tiny import build_qwen2_5_vl
    from pointfail.generated.testing.transformers_serve import TransformersServe

    root = tmp_path_factory.mktemp("served_runner")
    os.chmod(root, 0o755)
    ckpt = build_qwen2_5_vl(root / "ckpt", plain=True)
    data = _pointerbench(root / "pbt")
    for d, _, files in os.walk(root):  # readable by the container user
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    with TransformersServe(ckpt, log=root / "serve.log") as srv:
        yield dict(root=root, study=_study(root, data, ckpt, srv.base_url, srv.model))


def test_served_study_kill_9_and_rerun(served_env):
    root, study = served_env["root"], served_env["study"]
    cmd = _runner(study, root, "served")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    responses = root / "work" / "served" / "pbt" / "out" / "responses.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (not responses.exists() or len(responses.read_bytes().splitlines()) < 2):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = len(responses.read_bytes().splitlines())
    assert 2 <= first < N, "kill came too late to test resumption"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert f"{first} already answered" in done.stdout
    lines = [json.loads(x) for x in responses.read_text().splitlines()]
    assert sorted(x["sample_id"] for x in lines) == [f"pbt_{i:04d}" for i in range(N)]  # each exactly once
    recs = read_records(root / "records" / "served" / "pbt.jsonl")
    assert len(recs) == N and all(r.response.served is not None for r in recs)
    assert all(r.response.model_input_size is not None and r.outcome != "error" for r in recs)


@pytest.mark.docker
def test_served_records_equal_in_container_records(served_env, base_lock):
    """The must-show parity: the served study's records (``pointfail-runner run``, transformers serve on
    loopback, host torch) against the in-container backend's (the qwen2_5_vl CPU image's worker, its own
    torch), same checkpoint and inputs. The container side runs through the same ``run_study`` in process
    with the session's base lock (the conftest ``base_lock`` fixture)."""
    import serving_fixtures as fx
    from pointfail_runner.engine import ensure_engine
    from pointfail_runner.study import run_study

    root, study = served_env["root"], served_env["study"]
    served_file = root / "records" / "served" / "pbt.jsonl"
    if not served_file.exists():
        subprocess.run(_runner(study, root, "served"), check=True, capture_output=True, timeout=600, cwd=REPO)
    client = ensure_engine()
    lock = base_lock
    fx.family_image(client, lock)
    out = run_study(study, repo=REPO, models=["container"], data_root=root, weights_root=root,
                    work_root=root / "work", records_root=root / "records", wheelhouse=fx.WHEELHOUSE,
                    variant="cpu", progress=False, client=client, base_lock=lock, log=lambda s: None)
    assert out == {"container": {"pbt": N}}
    served = {r.sample_id: r for r in read_records(served_file)}
    contained = {r.sample_id: r for r in read_records(root / "records" / "container" / "pbt.jsonl")}
    assert sorted(served) == sorted(contained) and len(served) == N
    for sid, c in contained.items():
        s = served[sid]
        assert s.response.raw_text == c.response.raw_text
        assert s.response.model_input_size == c.response.model_input_size
        assert s.parse == c.parse and s.outcome == c.outcome
        assert _comparable(s) == _comparable(c)
        assert c.response.served is None and s.response.served.input_size_source == "server_budget"
