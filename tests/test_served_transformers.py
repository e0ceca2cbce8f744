"""A real server: ``transformers serve`` on loopback with the tiny random-weight Qwen2.5-VL checkpoint.

The served backend's records equal the in-process worker backend's (same checkpoint, same inputs,
greedy, same max_new_tokens, same processor pixel budget), parse for parse and byte for byte once the
fields that differ by nature are set aside: ``response.seconds`` (wall time) and ``response.served``
(present only on served records). The checkpoint is built ``plain`` (no control or whitespace tokens
generated), because transformers serve reads replies through its response template, which trims them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointfail.families import get_family
from pointfail.prompts import build_prompt
from pointfail.records import ImageRef, Response, Sample, Target
from pointfail.scoring import build_record
from pointfail.running.served.backend import run_served
from pointfail.running.served.options import ServedOptions
from pointfail.inputs.study import model_spec

pytestmark = pytest.mark.slow



def served_model(base_url, model, family, options=None):
    """A ``kind = "server"`` model, validated as a study's [[models]] table is."""
    return model_spec({"kind": "server", "name": "served", "family": family, "base_url": base_url, "model": model,
                       "options": options if options is not None else {}})


TINY_BUDGET = dict(factor=28, min_pixels=3136, max_pixels=12544)  # the tiny checkpoint's processor settings
SIZES = [(1024, 768), (640, 480), (200, 100), (37, 300), (3840, 2160), (112, 84), (140, 56), (333, 777)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from pointfail.generated.testing.tiny import build_qwen2_5_vl
    from pointfail.generated.testing.transformers_serve import TransformersServe

    root = tmp_path_factory.mktemp("served")
    ckpt = build_qwen2_5_vl(root / "ckpt", plain=True)
    rng = np.random.default_rng(15)
    fam = get_family("qwen2_5_vl")
    samples = []
    for i, (w, h) in enumerate(SIZES):
        p = root / f"img{i}.png"
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(p)
        samples.append(Sample(sample_id=f"s{i}", benchmark="noise", image=ImageRef(path=str(p), width=w, height=h),
                              instruction=f"point to the square number {i}",
                              target=Target(kind="boxes", boxes=[[w * 0.4, h * 0.4, w * 0.6, h * 0.6]])))
    prompts = {s.sample_id: build_prompt(fam, s) for s in samples}
    req = root / "requests.jsonl"
    req.write_text("".join(json.dumps({"sample_id": s.sample_id, "image": s.image.path,
                                       "prompt": prompts[s.sample_id].sent, "task": "point",
                                       "max_new_tokens": 40}) + "\n" for s in samples))
    with TransformersServe(ckpt, log=root / "serve.log") as srv:
        yield dict(root=root, ckpt=ckpt, samples=samples, prompts=prompts, req=req, srv=srv)


def _lines(path: Path) -> dict[str, dict]:
    return {x["sample_id"]: x for x in map(json.loads, path.read_text().splitlines())}


def _records(env, lines: dict[str, dict]):
    out = {}
    for s in env["samples"]:
        resp = Response(**{k: lines[s.sample_id].get(k) for k in Response.model_fields})
        out[s.sample_id] = build_record(study="parity", model="tiny-qwen", family="qwen2_5_vl", sample=s,
                                        prompt=env["prompts"][s.sample_id], response=resp)
    return out


def _comparable(record) -> str:
    """The record's canonical JSON without the fields that differ by nature (wall time, served block)."""
    d = json.loads(record.to_json())
    d["response"].pop("seconds")
    d["response"].pop("served", None)
    return json.dumps(d, sort_keys=True, ensure_ascii=False)


@pytest.fixture(scope="module")
def worker_lines(env):
    from pointfail.running.backends.qwen2_5_vl import load
    from pointfail.running.worker import run_worker

    out = env["root"] / "worker.jsonl"
    run_worker(load(env["ckpt"], "cpu"), env["req"], out, batch_size=1)
    return _lines(out)


def test_served_records_equal_in_process_records(env, worker_lines):
    srv = env["srv"]
    out = env["root"] / "served.jsonl"
    opts = ServedOptions(resize="server", concurrency=2, **TINY_BUDGET)
    s = run_served(served_model(srv.base_url, srv.model, "qwen2_5_vl", options=opts), env["req"], out)
    assert s.answered == len(SIZES) and s.errors == 0
    served = _lines(out)
    local, remote = _records(env, worker_lines), _records(env, served)
    for sid in local:
        assert remote[sid].response.model_input_size == local[sid].response.model_input_size
        assert remote[sid].response.raw_text == local[sid].response.raw_text
        assert remote[sid].parse == local[sid].parse and remote[sid].outcome == local[sid].outcome
        assert _comparable(remote[sid]) == _comparable(local[sid])
        assert served[sid]["served"]["input_size_source"] == "server_budget"
        assert served[sid]["served"]["finish_reason"] in ("stop", "length")
    # the comparison is not vacuous: the replies depend on the image (the tiny model is weakly input-sensitive)
    assert len({r.response.raw_text for r in remote.values()}) > 1


def test_client_resized_images_reach_the_model_at_the_recorded_size(env, worker_lines):
    """Sent at the processor's size for the declared budget: the server's resize is the identity, so
    the model sees as many image tokens as the in-process processor gives the original (prompt_tokens
    agree) and the recorded model-input size is the processor's. Where the original already is at its
    smart_resize size, the whole record is the in-process one."""
    srv = env["srv"]
    out = env["root"] / "served_client.jsonl"
    opts = ServedOptions(resize="client", concurrency=2, **TINY_BUDGET)
    run_served(served_model(srv.base_url, srv.model, "qwen2_5_vl", options=opts), env["req"], out)
    served = _lines(out)
    local, remote = _records(env, worker_lines), _records(env, served)
    for i, (w, h) in enumerate(SIZES):
        sid = f"s{i}"
        assert served[sid]["served"]["input_size_source"] == "client_resized"
        assert served[sid]["served"]["sent_size"] == worker_lines[sid]["model_input_size"]
        assert served[sid]["model_input_size"] == worker_lines[sid]["model_input_size"]
        assert served[sid]["prompt_tokens"] == worker_lines[sid]["prompt_tokens"]
        if [w, h] == worker_lines[sid]["model_input_size"]:  # 112x84, 140x56: already at the processor size
            assert _comparable(remote[sid]) == _comparable(local[sid])


def test_a_server_with_a_smaller_budget_is_observed_and_scored_in_the_frame_it_used(env, worker_lines):
    """The study declares Qwen2.5-VL's published budget (max_pixels 12845056); the tiny checkpoint's
    processor caps at 12544. The client sends e.g. 1036x756 for 1024x768, and the server resizes it
    again, to 112x84 (12 image tokens, not 999). The frame check sees it from the server's own
    usage.prompt_tokens and records the server's size, which is the checkpoint's smart_resize of the
    image sent, never the assumed one; where that equals the checkpoint's resize of the original, it
    is exactly what the in-process backend records."""
    from pointfail.running.served.inputs import PixelBudget

    srv = env["srv"]
    out = env["root"] / "served_family_budget.jsonl"
    s = run_served(served_model(srv.base_url, srv.model, "qwen2_5_vl", options={"pixel_budget": "family", "resize": "client"}),
                   env["req"], out)
    assert s.answered == len(SIZES) and s.errors == 0
    fam = get_family("qwen2_5_vl").resize
    declared, tiny = PixelBudget(28, fam["min_pixels"], fam["max_pixels"]), PixelBudget(**TINY_BUDGET)
    served = _lines(out)
    assert s.frames["1036x756"]["observed_tokens"] == 12 and s.frames["1036x756"]["declared"] == [1036, 756]
    same = 0
    for i, size in enumerate(SIZES):
        line = served[f"s{i}"]
        sent = declared.resize(size)
        seen = tiny.resize(sent)
        assert line["served"]["sent_size"] == list(sent)
        assert line["model_input_size"] == list(seen) and line["served"]["observed_size"] == list(seen)
        assert line["served"]["observed_tokens"] == (seen[0] // 28) * (seen[1] // 28)
        assert line["served"]["input_size_source"] == ("client_resized" if seen == sent else "server_observed")
        if list(seen) == worker_lines[f"s{i}"]["model_input_size"]:
            same += 1
            assert line["prompt_tokens"] == worker_lines[f"s{i}"]["prompt_tokens"]
    assert same >= 5  # 1024x768, 640x480, 37x300, 112x84, 140x56, 333x777
    assert served["s0"]["served"]["input_size_note"].startswith(
        "the server counted 12 image tokens for the 1036x756 image sent, not the 999 of the 1036x756")


def test_auto_sends_originals_and_records_the_servers_own_resize(env, worker_lines):
    """resize "auto" (default): each PNG goes out as it is; the tiny checkpoint's processor resizes it
    under its own budget (12544), which the token count recovers (server_observed where the declared
    family budget differs), so every model-input size is what the in-process backend records."""
    from pointfail.running.served.inputs import PixelBudget

    srv = env["srv"]
    out = env["root"] / "served_auto.jsonl"
    s = run_served(served_model(srv.base_url, srv.model, "qwen2_5_vl", options={"pixel_budget": "family"}),
                   env["req"], out)
    assert s.answered == len(SIZES) and s.errors == 0
    tiny = PixelBudget(**TINY_BUDGET)
    served = _lines(out)
    for i, size in enumerate(SIZES):
        line = served[f"s{i}"]
        seen = tiny.resize(size)
        assert line["served"]["sent_size"] == list(size)
        assert line["served"]["input_size_source"] in ("server_budget", "server_observed")
        assert line["model_input_size"] == list(seen) == worker_lines[f"s{i}"]["model_input_size"]
        assert line["served"]["observed_tokens"] == (seen[0] // 28) * (seen[1] // 28)


def test_preflight_and_the_servers_own_message_against_transformers_serve(env):
    """A wrong model name: the pre-flight stops before the first request naming the path the server is
    pinned to; with the pre-flight off, the server's 400 keeps its reason (transformers serve's body has
    no ``error`` key, so openai's own message would be only "Error code: 400")."""
    from pointfail.running.served.backend import ServerCheckFailed

    srv = env["srv"]
    out = env["root"] / "wrong_name.jsonl"
    model = served_model(srv.base_url, "Qwen/Qwen2.5-VL-3B-Instruct", "qwen2_5_vl", options=dict(TINY_BUDGET))
    with pytest.raises(ServerCheckFailed) as ei:
        run_served(model, env["req"], out)
    assert f"it lists {srv.model!r}" in str(ei.value) and not out.exists()
    with pytest.raises(ServerCheckFailed) as ei:  # pre-flight off: the frame check's first request gets the 400
        run_served(model, env["req"], out, check=False)
    assert (f"BadRequestError: Server is pinned to '{srv.model}'; requested 'Qwen/Qwen2.5-VL-3B-Instruct'."
            in str(ei.value))


def _readme_recipe() -> list[list[str]]:
    import re
    import shlex

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- served-recipe -->\n```\n(.*?)```", text, re.S)
    assert m, "README: the served recipe block is missing"
    return [shlex.split(line) for line in m.group(1).splitlines() if line.strip()]


def test_the_readmes_served_recipe_runs_as_written_against_transformers_serve(env, tmp_path):
    """The README's served section line by line: its server line names transformers serve and the port
    the next lines use; the tiny checkpoint stands in for the real one (its address and name are the
    only words replaced). One command gives records, judged misses, tables, report, browser and the
    summary, and the frame check reads every reply in the frame the server used (the checkpoint caps
    at 12544 pixels, under the family's published budget the command sends)."""
    import os
    import subprocess
    import sys

    serve, generate, evaluate = _readme_recipe()
    assert serve[:2] == ["transformers", "serve"] and serve[-2:] == ["--port", "8000"]
    name = serve[2]
    srv = env["srv"]
    assert generate[0] == evaluate[0] == "pointfail" and evaluate[1] == "evaluate"
    sub = {"http://127.0.0.1:8000/v1": srv.base_url, name: srv.model}
    pyenv = dict(os.environ, HF_HUB_OFFLINE="1")
    for argv in (generate, evaluate):
        cmd = [sys.executable, "-m", "pointfail", *[sub.get(a, a) for a in argv[1:]]]
        done = subprocess.run(cmd, cwd=tmp_path, env=pyenv, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    out = tmp_path / evaluate[evaluate.index("--out") + 1]
    assert "20 samples scored" in done.stdout and "judge oracle:" in done.stdout
    assert "failure profile" in done.stdout and "frame check" in done.stdout
    result = json.loads((out / "evaluation.json").read_text())
    assert result["records"] == 20 and result["outcomes"].get("error", 0) == 0
    assert (out / "tables" / "failure_composition.md").is_file() and (out / "view" / "index.html").is_file()
    assert result["report"] and (tmp_path / result["report"][0]).is_file()  # paths as given: relative to the cwd
    records = [json.loads(x) for x in (tmp_path / result["records_path"]).read_text().splitlines()]
    for r in records:
        served = r["response"]["served"]
        assert served["observed_tokens"] is not None and served["observed_size"] == r["response"]["model_input_size"]
        w, h = served["observed_size"]
        assert w * h <= 12544 and served["input_size_source"] == "server_observed"
    state = json.loads(next((out / "work").rglob("responses.server.json")).read_text())
    assert state["server"]["listed"] == [srv.model] and state["frames"]
