"""The runner's served-model pieces that need no Docker Engine: the server command lines (vLLM with the
study's pixel budget, transformers serve), the serving container's confinement, the ``vllm`` image
variant in the build code, what a study run refuses before any work, and a served job's folder (images
outside the data folder answered with an error, resumption, the job lock)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from pointfail.running.jobs import JobBusy, JobLock, read_responses
from pointfail.inputs.study import parse_study
from pointfail.generated.testing.openai_fake import FakeOpenAI
from pointfail_runner import cli, locks, serving
from pointfail_runner.container import JobPaths, container_user
from pointfail_runner.study import StudyError, run_study

REPO = Path(__file__).resolve().parents[1]
HEAD = '[study]\nname = "s"\n[[benchmarks]]\nname = "b"\nloader = "pointerbench-text"\n'


def _model(serve: str, options: str = "", family: str = "qwen2_5_vl"):
    s = parse_study(HEAD + f'[[models]]\nkind = "server"\nname = "q"\nfamily = "{family}"\nserve = {serve}\n'
                    + (f"options = {options}\n" if options else ""))
    return s.models[0]


def test_vllm_command_carries_the_declared_pixel_budget():
    m = _model('{ engine = "vllm", image = "qwen2_5_vl", args = ["--max-model-len", "8192"] }',
               '{ max_pixels = 1003520, min_pixels = 3136 }')
    argv = serving.vllm_argv(m)
    assert argv[:3] == ["/opt/venv/bin/vllm", "serve", "/weights"]
    assert argv[argv.index("--served-model-name") + 1] == "q" == serving.served_name(m)
    assert json.loads(argv[argv.index("--mm-processor-kwargs") + 1]) == {"max_pixels": 1003520, "min_pixels": 3136}
    assert argv[-2:] == ["--max-model-len", "8192"] and "--seed" in argv
    # pixel_budget = "family": the family file's published settings go to the server too
    fam = _model('{ engine = "vllm", image = "qwen2_5_vl" }', '{ pixel_budget = "family" }')
    from pointfail.families import get_family

    r = get_family("qwen2_5_vl").resize
    assert json.loads(serving.vllm_argv(fam)[serving.vllm_argv(fam).index("--mm-processor-kwargs") + 1]) == \
        {"max_pixels": r["max_pixels"], "min_pixels": r["min_pixels"]}
    # no budget declared: the server keeps the checkpoint's own, and the records say the size is unknown
    assert "--mm-processor-kwargs" not in serving.vllm_argv(_model('{ engine = "vllm", image = "qwen2_5_vl" }'))


def test_transformers_serve_command_and_model_name():
    m = _model('{ engine = "transformers", image = "qwen2_5_vl" }')
    assert serving.transformers_argv(m)[:4] == ["/opt/venv/bin/python", "-m", "pointfail.running.served.transformers_server",
                                                "/weights"]
    assert serving.served_name(m) == "/weights"  # transformers serve is pinned to the checkpoint path


def test_server_container_is_confined_to_an_internal_network(tmp_path):
    m = _model('{ engine = "vllm", image = "qwen2_5_vl" }')
    kw = serving.server_kwargs("img", m, weights_dir=tmp_path, network="pf-net", gpu=True, mem_limit="16g")
    assert kw["network"] == "pf-net" and "network_mode" not in kw
    assert kw["read_only"] is True and kw["cap_drop"] == ["ALL"] and kw["user"] == container_user()
    assert kw["security_opt"] == ["no-new-privileges"] and kw["mem_limit"] == kw["memswap_limit"] == "16g"
    assert kw["volumes"] == {str(tmp_path.resolve()): {"bind": "/weights", "mode": "ro"}}
    assert kw["entrypoint"] == ["/opt/venv/bin/vllm"] and kw["command"][:2] == ["serve", "/weights"]
    assert kw["environment"]["HF_HUB_OFFLINE"] == "1" and kw["device_requests"][0].capabilities == [["gpu"]]
    assert "device_requests" not in serving.server_kwargs("img", m, weights_dir=tmp_path, network="n", gpu=False,
                                                          mem_limit="1g")


def test_vllm_is_a_variant_of_the_family_images_that_have_one(tmp_path):
    assert "vllm" in locks.VARIANTS
    q = REPO / "images" / "qwen2_5_vl"
    assert locks.has_variant(q, "vllm") and locks.lock_path(q, "vllm").name == "requirements-vllm.lock"
    assert not locks.has_variant(REPO / "images" / "center", "vllm")
    assert cli._image_variants(q, "vllm") == ["vllm"] and cli._image_variants(REPO / "images" / "center", "vllm") == []
    assert cli._image_variants(q, "all") == ["cpu", "cuda"]  # "all" never builds the serving variant
    assert cli._image_variants(REPO / "images" / "center", "all") == ["cpu"]
    from pointfail_runner.images import image_names

    assert "vllm" not in image_names(REPO)
    assert "vllm==" in (q / "requirements-vllm.in").read_text()
    pins = {e.name: e.version for e in locks.parse_lock(locks.lock_path(q, "vllm"))}  # every entry hashed
    assert pins["vllm"] == "0.33.0" and not pins["torch"].endswith("+cpu") and "transformers" in pins


def test_a_vllm_served_model_without_a_gpu_stops_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv("POINTFAIL_GPU", "0")
    study = tmp_path / "records" / "study.toml"
    study.parent.mkdir()
    study.write_text(HEAD + '[[models]]\nkind = "server"\nname = "q"\nfamily = "qwen2_5_vl"\n'
                     'serve = { engine = "vllm", image = "qwen2_5_vl", weights = "qwen" }\n')
    (tmp_path / "data" / "b").mkdir(parents=True)
    with pytest.raises(StudyError) as ei:
        run_study(study, repo=REPO, data_root=tmp_path / "data", weights_root=tmp_path / "weights",
                  work_root=tmp_path / "work", client=object(), log=lambda s: None)
    msg = str(ei.value)
    assert msg.startswith("missing before any work:")
    assert f"weights for q (qwen2_5_vl), served by vllm: {(tmp_path / 'weights' / 'qwen').resolve()}" in msg
    assert 'model q: serve.engine = "vllm" needs a GPU (none found on this machine)' in msg
    if not locks.lock_path(REPO / "images" / "qwen2_5_vl", "vllm").is_file():
        assert "pointfail-runner lock qwen2_5_vl --variant vllm" in msg


def test_served_job_folder(tmp_path):
    """Same layout as a container job; an image outside the data folder is answered with an error by the
    runner and never sent; a rerun skips what is answered; the job lock keeps a second runner out."""
    data = tmp_path / "data"
    data.mkdir()
    inside, outside = data / "a.png", tmp_path / "secret.png"
    for p in (inside, outside):
        Image.new("RGB", (64, 48), "white").save(p)
    reqs = [{"sample_id": "in", "image": str(inside), "prompt": "p", "task": "point", "max_new_tokens": 8},
            {"sample_id": "out", "image": str(outside), "prompt": "p", "task": "point", "max_new_tokens": 8}]
    with FakeOpenAI(None, default_reply='{"point": [1, 2]}', model="m") as fk:
        m = parse_study(HEAD + f'[[models]]\nkind = "server"\nname = "q"\nfamily = "json_pixels"\n'
                        f'base_url = "{fk.url}"\nmodel = "m"\n').models[0]
        job = tmp_path / "work" / "q" / "b"
        res = serving.run_served_job(m, job, reqs, data_root=data, progress=False, log=lambda s: None)
        assert len(fk.chats) == 1 and fk.chats[0]["image_size"] == (64, 48)
        again = serving.run_served_job(m, job, reqs, data_root=data, progress=False, log=lambda s: None)
        assert len(fk.chats) == 1 and again.skipped == 2
        assert (again.summary.requests, again.summary.skipped, again.summary.answered) == (0, 1, 0)
        with JobLock(JobPaths(job).lock):
            with pytest.raises(JobBusy):
                serving.run_served_job(m, job, reqs, data_root=data, progress=False, log=lambda s: None)
    assert (res.requested, res.answered, res.skipped) == (2, 2, 0)
    assert res.problems == [f"out: image {outside} resolves to {outside.resolve()}, outside the data folder "
                            f"{data.resolve()}"]
    log = read_responses(JobPaths(job).responses, ["in", "out"])
    assert log.responses["in"].raw_text == '{"point": [1, 2]}' and log.responses["in"].served.requests == 1
    assert log.responses["out"].error.startswith("image ") and "outside the data folder" in log.responses["out"].error
    assert [json.loads(x)["sample_id"] for x in JobPaths(job).requests.read_text().splitlines()] == ["in"]
