"""The runner starts a served model's server itself (``serve`` in a ``kind = "server"`` model): a container
on an internal Docker network, reached by the served backend, removed in ``finally`` (issue 15, "GPU
path"), against a real Docker Engine.

No GPU here, so vLLM is neither built nor run: the server is a CPU stand-in, ``transformers serve`` in
an image made of the qwen2_5_vl CPU image plus transformers' serving extra
(``tests/fixtures/serve_standin``), serving the tiny random-weight Qwen2.5-VL checkpoint. Everything
else is the runner's own path: ``run_study`` starts the container on a fresh internal network, waits
for ``/health``, runs the served jobs against it, writes records, and removes container and network.
The stand-in replaces only the image the runner would build for the model (``serve.image``'s serving
variant), by patching ``images.ensure_image`` for that one image.

The same study runs the checkpoint through the family image's worker (the in-container backend), so
the served records are compared with the container's: the server runs in the same image (same torch,
same transformers), and the records are identical outside the fields that differ by nature.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("docker")

import serving_fixtures as fx  # noqa: E402
from pointfail.records import read_records  # noqa: E402
from pointfail_runner import images as imod  # noqa: E402
from pointfail_runner import serving  # noqa: E402
from pointfail_runner.engine import ensure_engine  # noqa: E402
from pointfail_runner.study import StudyError, run_study  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = fx.REPO
N = 4


@pytest.fixture(scope="module")
def client():
    c = ensure_engine()
    yield c
    c.close()


@pytest.fixture(scope="module")
def family_image(client, base_lock):
    return fx.family_image(client, base_lock)


@pytest.fixture(scope="module")
def standin_image(client, family_image, tmp_path_factory) -> str:
    return fx.standin_image(client, family_image, tmp_path_factory.mktemp("standin-ctx"))


@pytest.fixture(scope="module")
def study_env(tmp_path_factory):
    import numpy as np
    from PIL import Image

    from pointfail.generated.testing.tiny import build_qwen2_5_vl

    root = tmp_path_factory.mktemp("serving15")
    build_qwen2_5_vl(root / "weights" / "tiny", plain=True)
    test = root / "data" / "pbt" / "data" / "test"
    test.mkdir(parents=True)
    rng = np.random.default_rng(15)
    rows = []
    for i in range(N):
        size = [(1024, 768), (640, 480), (333, 777), (200, 100)][i]
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(test / f"{i:04d}.png")
        box = [10, 10, 60, 40]
        rows.append({"file_name": f"{i:04d}.png", "id": f"pbt_{i:04d}", "instruction": f"Click word {i}.", "bbox": box,
                     "point": [35, 25], "answer_type": "point", "eval": {"type": "point_in_bbox", "bbox": box},
                     "data_type": "word", "category": "word_center", "surface": "memo", "language": "en",
                     "difficulty": "easy", "image_size": list(size)})
    (test / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    study = root / "records" / "study.toml"
    study.parent.mkdir()
    study.write_text('''[study]
name = "serving15"

[[benchmarks]]
name = "pbt"
loader = "pointerbench-text"

[[models]]
name = "container"
family = "qwen2_5_vl"
image = "qwen2_5_vl"
weights = "tiny"
max_new_tokens = 24

[[models]]
name = "served"
kind = "server"
family = "qwen2_5_vl"
max_new_tokens = 24
serve = { engine = "transformers", image = "qwen2_5_vl", weights = "tiny", startup_s = 600 }
options = { resize = "server", factor = 28, min_pixels = 3136, max_pixels = 12544, concurrency = 2, timeout_s = 300 }

[[models]]
name = "broken"
kind = "server"
family = "qwen2_5_vl"
serve = { engine = "transformers", image = "qwen2_5_vl", weights = "empty", startup_s = 600 }
options = { pixel_budget = "family" }
''')
    (root / "weights" / "empty").mkdir()
    return fx.world_readable(root)


def _serving(client, env, label: str) -> tuple[list, list]:
    """This test's server container and network of model ``label`` (another test session on the same
    engine has its own work folder, so its servers are not counted)."""
    class Model:
        name = label

    f = {"label": [f"{k}={v}" for k, v in serving.serving_labels(Model, env / "work" / label).items()]}
    return client.containers.list(all=True, filters=f), client.networks.list(filters=f)


def _run(client, env, models, base_lock, log):
    return run_study(env / "records" / "study.toml", repo=REPO, models=models, data_root=env / "data",
                     weights_root=env / "weights", work_root=env / "work", records_root=env / "records",
                     wheelhouse=fx.WHEELHOUSE, variant="cpu", progress=False, client=client, base_lock=base_lock, log=log)


def test_runner_serves_on_an_internal_network_and_records_equal_the_containers(
        client, study_env, base_lock, family_image, standin_image, monkeypatch):
    real = imod.ensure_image
    seen: dict = {}

    def ensure(c, repo, name, *, variant="cpu", **kw):
        built = real(c, repo, name, variant=variant, **kw)
        if seen.get("container_done"):  # the served model's request for its serving image
            seen["asked"] = (name, variant)
            img = c.images.get(standin_image)
            return imod.BuiltImage(name, variant, standin_image, img.id, 0.0, False)
        return built

    def log(line: str) -> None:
        if "ready after" in line and "served" in line:  # the server is up: look at how it runs
            (ctr,), (net,) = _serving(client, study_env, "served")
            ctr.reload()
            net.reload()
            hc = ctr.attrs["HostConfig"]
            seen["net"] = (net.attrs["Internal"], list(ctr.attrs["NetworkSettings"]["Networks"]))
            seen["conf"] = (hc["ReadonlyRootfs"], hc["CapDrop"], ctr.attrs["Config"]["User"], hc["SecurityOpt"],
                            [(m["Destination"], m["RW"]) for m in ctr.attrs["Mounts"]])
            # nothing outside the network: the server cannot open a connection to the wider world
            code, out = ctr.exec_run(["/opt/venv/bin/python", "-c",
                                      "import socket\ns=socket.socket();s.settimeout(3)\n"
                                      "try:\n s.connect(('1.1.1.1',80));print('OPEN')\n"
                                      "except OSError as e:\n print('BLOCKED', type(e).__name__)"])
            seen["outside"] = out.decode().strip()

    monkeypatch.setattr(imod, "ensure_image", ensure)
    out = _run(client, study_env, ["container"], base_lock, log=lambda s: None)
    assert out == {"container": {"pbt": N}}
    seen["container_done"] = True
    out = _run(client, study_env, ["served"], base_lock, log=log)
    assert out == {"served": {"pbt": N}}
    assert seen["asked"] == ("qwen2_5_vl", "cpu")   # transformers engine: the run's variant (vllm: "vllm")
    internal, nets = seen["net"]
    assert internal is True and len(nets) == 1 and nets[0].startswith("pointfail-serve-served-")
    ro, capdrop, user, secopt, mounts = seen["conf"]
    assert ro is True and capdrop == ["ALL"] and user == serving.cmod.container_user()
    assert "no-new-privileges" in secopt and mounts == [("/weights", False)]
    assert seen["outside"].startswith("BLOCKED")
    assert _serving(client, study_env, "served") == ([], [])  # container and network removed
    assert (study_env / "work" / "served" / "server.log").stat().st_size > 0

    served = {r.sample_id: r for r in read_records(study_env / "records" / "served" / "pbt.jsonl")}
    contained = {r.sample_id: r for r in read_records(study_env / "records" / "container" / "pbt.jsonl")}
    assert sorted(served) == sorted(contained) == [f"pbt_{i:04d}" for i in range(N)]
    for sid, c in contained.items():
        s = served[sid]
        assert s.response.served is not None and s.response.served.input_size_source == "server_budget"
        assert s.response.raw_text == c.response.raw_text and s.response.raw_text
        assert s.response.model_input_size == c.response.model_input_size
        assert (s.parse, s.outcome, s.geometry) == (c.parse, c.outcome, c.geometry)
        assert s.provenance.image_digest is not None  # the serving image, named


def test_a_server_that_cannot_start_is_removed_and_named(client, study_env, base_lock, standin_image, monkeypatch):
    def ensure(c, repo, name, *, variant="cpu", **kw):
        img = c.images.get(standin_image)
        return imod.BuiltImage(name, variant, standin_image, img.id, 0.0, False)

    monkeypatch.setattr(imod, "ensure_image", ensure)
    with pytest.raises(StudyError) as ei:
        _run(client, study_env, ["broken"], base_lock, log=lambda s: None)
    msg = str(ei.value)
    assert "model broken: the transformers server for broken exited with" in msg
    assert "last server log lines:" in msg
    assert _serving(client, study_env, "broken") == ([], [])
    assert not (study_env / "records" / "broken").exists()
