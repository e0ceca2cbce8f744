"""The served backend against the scripted loopback OpenAI-compatible server (pointfail.generated.testing.openai_fake):
retries, refusals, errors, resumption after kill -9, structured output, and the frame the server saw."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from pointfail.families import get_family
from pointfail.frames import smart_resize
from pointfail.prompts import build_prompt
from pointfail.records import ImageRef, Response, Sample, Target
from pointfail.scoring import build_record
from pointfail.running.served.backend import ServerCheckFailed, ServerUnavailable, run_served
from pointfail.running.served.inputs import PixelBudget, documented_downscale, plan_input
from pointfail.running.served.options import ServedOptions, response_format
from pointfail.inputs.study import model_spec
from pointfail.generated.testing.openai_fake import Action, FakeOpenAI, qwen_tokens

FAST = dict(backoff_initial=0.01, backoff_max=0.05)


def served_model(base_url, model, family, options=None):
    """A ``kind = "server"`` model, validated as a study's [[models]] table is."""
    return model_spec({"kind": "server", "name": "served", "family": family, "base_url": base_url, "model": model,
                       "options": options if options is not None else {}})


def _requests(path: Path, image: Path, n: int, prompt: str = "point to it", task: str = "point") -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"sample_id": f"s{i:03d}", "image": str(image), "prompt": f"{prompt} #s{i:03d}#",
                                "task": task, "max_new_tokens": 32}) + "\n")
    return path


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _resp(line: dict) -> Response:
    return Response(**{k: line.get(k) for k in Response.model_fields})


_SID = re.compile(r"#(s\d+)#")


def _sid(req) -> str:
    return _SID.search(req.user).group(1)


@pytest.fixture
def small_png(tmp_path):
    p = tmp_path / "img.png"
    Image.new("RGB", (200, 100), (255, 255, 255)).save(p)
    return p


def test_bursts_timeout_dead_connection_100_samples(tmp_path, small_png):
    """100 samples; 429 and 503 bursts, one timeout, one dead connection, one malformed body: every
    sample is answered exactly once, with its own reply, and the failures are counted per sample."""
    plan = {}  # request index -> action; the rest answer with the sample's id

    for n in range(5, 12):
        plan[n] = Action(status=429, retry_after=0.01)
    for n in range(30, 36):
        plan[n] = Action(status=503)
    plan[50] = Action(delay=4.0)          # longer than the client's timeout
    plan[60] = Action(drop=True)          # dead connection
    plan[70] = Action(malformed=True)

    def script(n, req):
        return plan.get(n) or json.dumps({"point": [1, 2], "id": _sid(req)})

    req = _requests(tmp_path / "req.jsonl", small_png, 100)
    out = tmp_path / "resp.jsonl"
    with FakeOpenAI(script, model="m") as fk:
        model = served_model(fk.url, "m", "json_pixels", options=ServedOptions(concurrency=8, timeout_s=2.0, **FAST))
        s = run_served(model, req, out)
        max_in_flight = fk.max_in_flight
        results = [c["result"] for c in fk.chats]
    lines = _lines(out)
    ids = [x["sample_id"] for x in lines]
    assert sorted(ids) == [f"s{i:03d}" for i in range(100)]  # each exactly once
    assert all(x["error"] is None for x in lines)
    for x in lines:  # each line carries the reply to its own sample
        assert json.loads(x["raw_text"])["id"] == x["sample_id"]
    failures = sum(x["served"]["transport_failures"] for x in lines)
    # 7 + 6 + 1 + 1 scripted failures the server logs, the scripted timeout, and any request that a
    # loaded machine could not answer within the timeout (also a timeout, also retried)
    # None: the delayed one, still asleep; client_gone: a reply written after the client timed out
    assert Counter(r for r in results if r not in ("answered", None, "client_gone")) == \
        {"status 429": 7, "status 503": 6, "dropped": 1, "malformed": 1}
    assert failures == s.transport_failures >= 16
    assert s.requests == 100 + failures == len(results)
    assert sum(x["served"]["requests"] for x in lines) == s.requests
    assert s.answered == 100 and s.errors == 0 and s.pending == 0
    assert 1 < max_in_flight <= 8


def test_refusal_and_content_filter_are_recorded_not_retried(tmp_path, small_png):
    script = [Action(refusal="I can't help with that."), Action(reply="", finish_reason="content_filter")]
    req = _requests(tmp_path / "req.jsonl", small_png, 2)
    out = tmp_path / "resp.jsonl"
    with FakeOpenAI(script, model="m") as fk:
        s = run_served(served_model(fk.url, "m", "json_pixels", options=ServedOptions(concurrency=1, **FAST)), req, out)
        assert len(fk.chats) == 2  # no retry
    by = {x["sample_id"]: x for x in _lines(out)}
    assert by["s000"]["served"]["refusal"] == "I can't help with that." and by["s000"]["raw_text"] == ""
    assert by["s001"]["served"]["finish_reason"] == "content_filter" and by["s001"]["error"] is None
    assert s.refused == 2
    # a refusal is a model outcome: no point -> no_prediction, never an infrastructure error
    fam = get_family("json_pixels")
    sample = Sample(sample_id="s000", benchmark="b", image=ImageRef(path=str(small_png), width=200, height=100),
                    instruction="the button", target=Target(kind="boxes", boxes=[[0, 0, 10, 10]]))
    rec = build_record(study="t", model="m", family="json_pixels", sample=sample, prompt=build_prompt(fam, sample),
                       response=_resp(by["s000"]))
    assert rec.outcome == "no_prediction" and rec.response.served.refusal == "I can't help with that."
    assert json.loads(rec.to_json())["response"]["served"]["refusal"] == "I can't help with that."


def test_unknown_model_name_stops_before_the_first_request_listing_the_served_names(tmp_path, small_png):
    req = _requests(tmp_path / "req.jsonl", small_png, 3)
    out = tmp_path / "resp.jsonl"
    with FakeOpenAI(None, model="m") as fk:
        t0 = time.monotonic()
        with pytest.raises(ServerCheckFailed) as ei:
            run_served(served_model(fk.url, "other-model", "json_pixels", options=ServedOptions(**FAST)), req, out)
        assert time.monotonic() - t0 < 5
        assert len(fk.chats) == 0
    msg = str(ei.value)
    assert "does not serve a model named 'other-model'; it lists 'm'" in msg and "nothing was sent" in msg
    assert ei.value.pending == ["s000", "s001", "s002"]
    assert not out.exists()  # nothing written


def test_refused_connection_and_silent_host_stop_in_seconds(tmp_path, small_png):
    import socket

    req = _requests(tmp_path / "req.jsonl", small_png, 2)
    from pointfail.generated.testing.transformers_serve import free_port

    port = free_port()  # nothing listens there
    t0 = time.monotonic()
    with pytest.raises(ServerCheckFailed, match=r"cannot reach the server at http://127\.0\.0\.1:\d+/v1 \(ConnectError"):
        run_served(served_model(f"http://127.0.0.1:{port}/v1", "m", "json_pixels",
                                options=ServedOptions(retries=6, **FAST)), req, tmp_path / "a.jsonl")
    assert time.monotonic() - t0 < 5  # one attempt, no retries
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        t0 = time.monotonic()
        with pytest.raises(ServerCheckFailed, match=r"no answer in 2 s"):
            run_served(served_model(url, "m", "json_pixels", options=ServedOptions(timeout_s=2.0, **FAST)), req,
                       tmp_path / "b.jsonl")
        assert time.monotonic() - t0 < 6


def test_client_errors_keep_the_servers_message_and_rerun_with_retry_errors_redoes_them(tmp_path, small_png):
    req = _requests(tmp_path / "req.jsonl", small_png, 3)
    with open(req, "a") as f:
        f.write(json.dumps({"sample_id": "bad-image", "image": str(tmp_path / "missing.png"), "prompt": "x"}) + "\n")
    out = tmp_path / "resp.jsonl"
    with FakeOpenAI(None, model="m") as fk:  # the pre-flight off: the 404s reach the records
        s = run_served(served_model(fk.url, "other-model", "json_pixels", options=ServedOptions(**FAST)), req, out,
                       check=False)
        assert len(fk.chats) == 0  # 404 answered before the script; one request per sample
    by = {x["sample_id"]: x for x in _lines(out)}
    assert by["bad-image"]["error"].startswith("image not found")
    for i in range(3):
        e = by[f"s{i:03d}"]
        assert e["error"] == "server: HTTP 404: NotFoundError: model 'other-model' not found"
        assert e["served"]["requests"] == 1
    assert s.errors == 4
    with FakeOpenAI(None, default_reply="fixed", model="m") as fk:
        fixed = served_model(fk.url, "m", "json_pixels", options=ServedOptions(**FAST))
        # the name fixed: the model entry changed, so a plain rerun asks the error samples again
        again = run_served(fixed, req, out)
        assert again.retried_errors == 4 and again.answered == 3 and again.errors == 1
        assert len(fk.chats) == 3
        # nothing changed: a plain rerun keeps the remaining error; --retry-errors asks it again
        same = run_served(fixed, req, out)
        assert same.skipped == 4 and same.retried_errors == 0 and len(fk.chats) == 3
        redo = run_served(fixed, req, out, retry_errors=True)
        assert redo.retried_errors == 1 and redo.errors == 1 and len(fk.chats) == 3  # the image is missing: no request
    by = {x["sample_id"]: x for x in _lines(out)}
    assert len(_lines(out)) == 4
    assert [by[f"s{i:03d}"]["raw_text"] for i in range(3)] == ["fixed"] * 3
    assert by["bad-image"]["error"].startswith("image not found")


def test_server_down_leaves_samples_for_the_rerun(tmp_path, small_png):
    """Transport retries run out: nothing is written for the samples left, the run says which, and a
    rerun against a live server answers exactly those."""
    req = _requests(tmp_path / "req.jsonl", small_png, 6)
    out = tmp_path / "resp.jsonl"
    with FakeOpenAI(lambda n, r: Action(status=503) if n >= 2 else "first", model="m") as fk:
        model = served_model(fk.url, "m", "json_pixels", options=ServedOptions(concurrency=1, retries=2, **FAST))
        with pytest.raises(ServerUnavailable) as ei:
            run_served(model, req, out)
    assert len(ei.value.pending) == 4
    assert [x["sample_id"] for x in _lines(out)] == ["s000", "s001"]
    with FakeOpenAI(None, default_reply="second", model="m") as fk:
        s = run_served(served_model(fk.url, "m", "json_pixels", options=ServedOptions(**FAST)), req, out)
        assert len(fk.chats) == 4
    assert s.skipped == 2 and s.answered == 4
    lines = _lines(out)
    assert sorted(x["sample_id"] for x in lines) == [f"s{i:03d}" for i in range(6)]
    assert [x["raw_text"] for x in lines] == ["first"] * 2 + ["second"] * 4



def test_responses_go_through_the_job_files_module(tmp_path, small_png):
    """Served responses are job responses: written by jobs.ResponseWriter (one writer per file: a second
    run on the same file is refused while one holds it), read back by jobs.read_responses with their
    "served" object, and a reply the job format refuses becomes that sample's error response."""
    from pointfail.running.jobs import ResponseWriter, read_responses
    from pointfail.running.worker import WorkerError

    req = _requests(tmp_path / "req.jsonl", small_png, 3)
    out = tmp_path / "resp.jsonl"
    from pointfail.limits import MAX_RESPONSE_RAW_TEXT_CHARS

    script = ["a", "x" * (MAX_RESPONSE_RAW_TEXT_CHARS + 1), "c"]
    with FakeOpenAI(script, model="m") as fk:
        model = served_model(fk.url, "m", "json_pixels", options=ServedOptions(concurrency=1, **FAST))
        with ResponseWriter(out):
            with pytest.raises(WorkerError, match="one job has one worker"):
                run_served(model, req, out)
        assert fk.chats == []  # refused before any request
        s = run_served(model, req, out)
    log = read_responses(out, [f"s{i:03d}" for i in range(3)])
    assert sorted(log.responses) == ["s000", "s001", "s002"] and not log.invalid and not log.problems
    assert log.responses["s000"].served.sent_size == [200, 100] and log.responses["s000"].raw_text == "a"
    assert log.responses["s000"].as_record_response().served.requests == 1
    assert log.responses["s001"].error.startswith("worker produced an invalid response: raw_text")
    assert s.answered == 2 and s.errors == 1
    # a hostile "served" object in a line is an explained invalid line for its sample, never an exception
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"sample_id": "s000", "raw_text": "a", "served": {"requests": -1, "x": 1}}) + "\n")
    log = read_responses(bad, ["s000"])
    assert "served" in log.invalid["s000"] and log.response_for("s000").error.startswith("invalid response line 1")

def test_kill_9_and_rerun_loses_nothing(tmp_path, small_png):
    """The CLI is killed with SIGKILL mid-run; the rerun answers the rest: 100 distinct sample ids, each once."""
    req = _requests(tmp_path / "req.jsonl", small_png, 100)
    out = tmp_path / "resp.jsonl"

    def script(n, r):
        if n % 17 == 3:
            return Action(status=503)
        return json.dumps({"point": [1, 1], "id": _sid(r)})

    with FakeOpenAI(script, model="m", latency=0.05) as fk:
        opts = json.dumps({"concurrency": 4, "backoff_initial": 0.01, "backoff_max": 0.05})
        cmd = [sys.executable, "-m", "pointfail.running.served", "--base-url", fk.url, "--model", "m", "--family",
               "json_pixels", "--requests", str(req), "--responses", str(out), "--options", opts, "--no-progress"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not out.exists() or len(out.read_bytes().splitlines()) < 20):
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        first = len(_lines(out))
        assert 20 <= first < 100
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["skipped"] == first and summary["answered"] == 100 - first
    lines = _lines(out)
    assert len(lines) == 100 and len({x["sample_id"] for x in lines}) == 100
    assert all(json.loads(x["raw_text"])["id"] == x["sample_id"] for x in lines)


def test_structured_output_and_pointerbench_preset(tmp_path, small_png):
    fam = get_family("json_pixels")
    sample = Sample(sample_id="s000", benchmark="b", image=ImageRef(path=str(small_png), width=200, height=100),
                    instruction="the OK button", target=Target(kind="boxes", boxes=[[40, 20, 60, 40]]))
    prompt = build_prompt(fam, sample)
    req = tmp_path / "req.jsonl"
    req.write_text(json.dumps({"sample_id": "s000", "image": str(small_png), "prompt": prompt.sent, "task": "point",
                               "max_new_tokens": 128}) + "\n")
    out = tmp_path / "resp.jsonl"
    with FakeOpenAI(['{"point": [50, 30]}'], model="m") as fk:
        run_served(served_model(fk.url, "m", "json_pixels", options=ServedOptions(preset="pointerbench-frontier")),
                   req, out)
        chat = fk.chats[0]
    from pointfail.families.json_pixels import SYSTEM_PROMPT

    assert chat["system"] == SYSTEM_PROMPT            # the paper's system prompt, as a system message
    assert SYSTEM_PROMPT not in chat["user"] and "the OK button" in chat["user"]
    assert chat["max_tokens"] == 512                 # reasoning-disabled cap
    assert chat["image_size"] == (200, 100)          # original submitted directly
    assert chat["response_format"] == response_format("json_pixels", "point")
    assert chat["response_format"]["json_schema"]["schema"]["required"] == ["point"]
    line = _lines(out)[0]
    assert line["served"]["preset"] == "pointerbench-frontier"
    assert line["served"]["response_format"] == "json_schema:pointerbench_point"
    assert line["served"]["system_prompt"] is True
    rec = build_record(study="t", model="m", family="json_pixels", sample=sample, prompt=prompt,
                       response=_resp(line))
    assert rec.outcome == "hit" and rec.parse.points == [[0.25, 0.3]]


def test_options_validation():
    with pytest.raises(ValueError):
        ServedOptions(preset="pointerbench-frontier").for_family("qwen2_5_vl")
    with pytest.raises(ValueError):
        ServedOptions(structured=True).for_family("molmo")
    with pytest.raises(ValueError):
        ServedOptions(min_pixels=100)
    with pytest.raises(ValueError):
        ServedOptions(bogus=1)
    assert response_format("qwen2_5_vl", "box")["json_schema"]["name"] == "qwen_bbox_2d"


# ---- the frame the server saw -----------------------------------------------------------------

W, H = 3840, 2160
BOX = [3000, 1500, 3100, 1560]          # the target in pixels of the 3840x2160 original
BUDGET = PixelBudget(28, 3136, 1003520)  # the Qwen2-VL processor's default budget


def _qwen_server(budget_of_server):
    """A fake Qwen2.5-VL server: it resizes what it receives with its own smart_resize budget and
    answers the target's centre in pixels of that resized image."""
    def script(n, req):
        rw, rh = req.image_size
        sw, sh = budget_of_server.resize((rw, rh)) if budget_of_server else (rw, rh)
        cx, cy = (BOX[0] + BOX[2]) / 2 / W * sw, (BOX[1] + BOX[3]) / 2 / H * sh
        return f'```json\n[\n\t{{"point_2d": [{round(cx)}, {round(cy)}], "label": "button"}}\n]\n```'
    return script


@pytest.fixture(scope="module")
def screenshot(tmp_path_factory):
    p = tmp_path_factory.mktemp("shot") / "screen.png"
    Image.new("RGB", (W, H), (240, 240, 240)).save(p)
    return p


def _run_one(tmp_path, screenshot, family, script, options, image_tokens=qwen_tokens):
    fam = get_family(family)
    sample = Sample(sample_id="shot", benchmark="b", image=ImageRef(path=str(screenshot), width=W, height=H),
                    instruction="the Save button", target=Target(kind="boxes", boxes=[BOX]))
    prompt = build_prompt(fam, sample)
    req = tmp_path / "req.jsonl"
    req.write_text(json.dumps({"sample_id": "shot", "image": str(screenshot), "prompt": prompt.sent,
                               "task": "point", "max_new_tokens": 64}) + "\n")
    out = tmp_path / "resp.jsonl"
    with FakeOpenAI(script, model="m", image_tokens=image_tokens) as fk:
        run_served(served_model(fk.url, "m", family, options=options), req, out)
        received = fk.chats[0]["image_size"]
    line = _lines(out)[0]
    rec = build_record(study="t", model="m", family=family, sample=sample, prompt=prompt, response=_resp(line))
    return line, rec, received


def test_served_frame_client_resized_maps_back_to_original_pixels(tmp_path, screenshot):
    """Sent at the processor size: the server's resize is the identity, and the reply in resized
    pixels maps back to the right pixels of the 3840x2160 original."""
    h, w = smart_resize(H, W, 28, 3136, 1003520)
    assert (w, h) == (1316, 728)
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", _qwen_server(BUDGET),
                                   ServedOptions(max_pixels=1003520, resize="client"))
    assert received == (1316, 728)
    assert line["model_input_size"] == [1316, 728]
    assert line["served"]["input_size_source"] == "client_resized" and line["served"]["sent_size"] == [1316, 728]
    assert rec.outcome == "hit"
    px = rec.parse.points[0][0] * W, rec.parse.points[0][1] * H
    # the centre (3050, 1530) quantized to one resized pixel: 3840/1316 = 2.92 px per resized pixel
    assert abs(px[0] - 3050) <= W / 1316 and abs(px[1] - 1530) <= H / 728


def test_served_frame_full_size_server_budget(tmp_path, screenshot):
    """Sent at full size to a server that resizes by its own budget: the record shows that size."""
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", _qwen_server(BUDGET),
                                   ServedOptions(max_pixels=1003520, resize="server"),
                                   image_tokens=lambda size: qwen_tokens(BUDGET.resize(size)) if size else 0)
    assert received == (3840, 2160)
    assert line["model_input_size"] == [1316, 728] and line["served"]["input_size_source"] == "server_budget"
    assert line["served"]["sent_size"] == [3840, 2160] and line["served"]["received_size"] == [1316, 728]
    assert rec.outcome == "hit"


def _server_budget_tokens(budget):
    return lambda size: qwen_tokens(budget.resize(size)) if size else 0


def _sent_urls(script):
    """``script`` that also keeps the data URL of each answered request's image."""
    urls: list[str] = []

    def wrapped(n, req):
        part = req.body["messages"][-1]["content"][0]
        urls.append(part["image_url"]["url"])
        return script(n, req)
    return wrapped, urls


def _decoded(url):
    import base64

    head, b64 = url.split(",", 1)
    return head, base64.b64decode(b64)


def test_served_auto_sends_the_file_bytes_as_they_are(tmp_path, screenshot):
    """Default resize "auto": the PNG's own bytes go out (no decode, no re-encode); the record keeps the
    original as sent and the server's smart_resize under the budget (1316x728, the 1222 image tokens the
    server's count confirms) as the frame; the reply read in it is a hit."""
    assert ServedOptions().resize == "auto"
    script, urls = _sent_urls(_qwen_server(BUDGET))
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", script, ServedOptions(max_pixels=1003520),
                                   image_tokens=_server_budget_tokens(BUDGET))
    head, data = _decoded(urls[0])
    assert head == "data:image/png;base64" and data == Path(screenshot).read_bytes()
    assert received == (3840, 2160)
    served = line["served"]
    assert served["input_size_source"] == "server_budget" and served["sent_size"] == [3840, 2160]
    assert served["received_size"] == [1316, 728] and line["model_input_size"] == [1316, 728]
    assert served["observed_tokens"] == (1316 // 28) * (728 // 28) == 1222
    assert rec.outcome == "hit"


def test_served_auto_jpeg_sent_as_jpeg(tmp_path):
    """A JPEG passes through too, labelled image/jpeg."""
    p = tmp_path / "screen.jpg"
    Image.new("RGB", (W, H), (200, 220, 240)).save(p, quality=90)
    script, urls = _sent_urls(_qwen_server(BUDGET))
    line, rec, received = _run_one(tmp_path, p, "qwen2_5_vl", script, ServedOptions(max_pixels=1003520),
                                   image_tokens=_server_budget_tokens(BUDGET))
    head, data = _decoded(urls[0])
    assert head == "data:image/jpeg;base64" and data == p.read_bytes()
    assert line["model_input_size"] == [1316, 728] and rec.outcome == "hit"


def test_served_auto_resizes_other_formats_on_the_client(tmp_path):
    """A format not passed through (BMP) is decoded anyway, so it is resized with it: sent as a PNG at
    the smart_resize size, the server's resize the identity (source client_resized)."""
    p = tmp_path / "screen.bmp"
    Image.new("RGB", (W, H), (240, 240, 240)).save(p)
    script, urls = _sent_urls(_qwen_server(BUDGET))
    line, rec, received = _run_one(tmp_path, p, "qwen2_5_vl", script, ServedOptions(max_pixels=1003520),
                                   image_tokens=_server_budget_tokens(BUDGET))
    assert _decoded(urls[0])[0] == "data:image/png;base64" and received == (1316, 728)
    assert line["served"]["input_size_source"] == "client_resized" and line["served"]["sent_size"] == [1316, 728]
    assert line["model_input_size"] == [1316, 728] and rec.outcome == "hit"


def test_served_auto_falls_back_to_client_resize_without_usage(tmp_path, screenshot):
    """A server whose prompt_tokens do not grow with the image: the frame of an original it resizes
    itself would be assumed, so the client resizes (1316x728 sent and received) instead."""
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", _qwen_server(BUDGET),
                                   ServedOptions(max_pixels=1003520), image_tokens=lambda size: 0)
    assert received == (1316, 728)
    served = line["served"]
    assert served["input_size_source"] == "client_resized" and served["sent_size"] == [1316, 728]
    assert served["observed_tokens"] is None and line["model_input_size"] == [1316, 728]
    assert rec.outcome == "hit"


def test_served_auto_budget_differing_from_the_server_is_observed(tmp_path, screenshot):
    """--pixel-budget declares 1003520 but the server resizes under 602112: its token count (36 x 20 =
    720 of 1008x560) is the only smart_resize output with that count, so the record keeps the frame
    the server used (server_observed) and the reply is read in it."""
    server = PixelBudget(28, 3136, 602112)
    assert server.resize((W, H)) == (1008, 560)
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", _qwen_server(server),
                                   ServedOptions(max_pixels=1003520), image_tokens=_server_budget_tokens(server))
    assert received == (3840, 2160)
    served = line["served"]
    assert served["input_size_source"] == "server_observed" and served["observed_tokens"] == 720
    assert line["model_input_size"] == [1008, 560] and rec.outcome == "hit"


def test_served_frame_unknown_budget_is_observed_from_the_token_count(tmp_path, screenshot):
    """No budget declared: the server's own token count for the 3840x2160 image (1222 = 47 x 26 + 2
    wrapper) is met by one smart_resize output only, 1316x728, which is recorded as observed."""
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", _qwen_server(BUDGET), ServedOptions(),
                                   image_tokens=_server_budget_tokens(BUDGET))
    assert received == (3840, 2160)
    assert line["served"]["input_size_source"] == "server_observed"
    assert line["served"]["observed_tokens"] == 47 * 26 and line["served"]["observed_size"] == [1316, 728]
    assert line["model_input_size"] == [1316, 728] and "(no pixel budget declared)" in line["served"]["input_size_note"]
    assert rec.outcome == "hit"


def test_served_frame_unknown_budget_without_usage_is_said_not_guessed(tmp_path, screenshot):
    """A server whose prompt_tokens do not move with the image says nothing about its frame; with no
    budget declared the size stays unknown and the sample is an error, not a guess."""
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", _qwen_server(BUDGET), ServedOptions(),
                                   image_tokens=lambda size: 0)
    assert line["model_input_size"] is None and line["served"]["input_size_source"] == "unknown"
    assert line["served"]["observed_tokens"] is None and line["served"]["observed_size"] is None
    assert "not declared" in line["served"]["input_size_note"]
    assert rec.outcome == "error" and "model_input_size" in rec.error


def test_served_frame_smaller_server_budget_is_recovered_and_scored_in_its_frame(tmp_path, screenshot):
    """Declared: max_pixels 1003520 (the client sends 1316x728). The server runs with max_pixels 12544:
    beta = sqrt(1316 * 728 / 12544) = 8.74, floor(1316 / 8.74 / 28) = 5, floor(728 / 8.74 / 28) = 2, so it
    sees 140x56 and counts 10 image tokens; 140x56 is the one smart_resize output of 1316x728 with 10
    tokens, so it is recovered, and the reply, in pixels of 140x56, is read in that frame and hits."""
    small = PixelBudget(28, 3136, 12544)
    seen = small.resize(BUDGET.resize((W, H)))
    line, rec, received = _run_one(tmp_path, screenshot, "qwen2_5_vl", _qwen_server(small),
                                   ServedOptions(max_pixels=1003520, resize="client"), image_tokens=_server_budget_tokens(small))
    assert received == (1316, 728) and seen == (140, 56)
    assert line["served"]["received_size"] == [140, 56] and line["model_input_size"] == [140, 56]
    assert line["served"]["observed_tokens"] == 5 * 2 and line["served"]["input_size_source"] == "server_observed"
    assert "not the 1222 of the 1316x728 the declared pixel budget gives" in line["served"]["input_size_note"]
    assert rec.outcome == "hit"


def test_served_frame_that_the_tokens_do_not_determine_stops_naming_the_servers_option(tmp_path, screenshot):
    fam = get_family("qwen2_5_vl")
    req = tmp_path / "req.jsonl"
    req.write_text("".join(json.dumps({"sample_id": f"s{i}", "image": str(screenshot), "prompt": "p", "task": "point"})
                           + "\n" for i in range(3)))
    with FakeOpenAI(None, model="m", image_tokens=lambda size: 9 if size else 0) as fk:  # 7 tokens: no 16:9 output
        with pytest.raises(ServerCheckFailed) as ei:
            run_served(served_model(fk.url, "m", fam.name, options=ServedOptions(pixel_budget="family", resize="client")), req,
                       tmp_path / "out.jsonl")
        assert fk.chats == [] and len(fk.calibrations) == 2
    msg = str(ei.value)
    assert "the server counted 7 image tokens for the 3836x2156 image sent" in msg
    assert "--mm-processor-kwargs" in msg and "preprocessor_config.json" in msg
    assert "3 of 3 samples have no response yet" in msg and sorted(ei.value.pending) == ["s0", "s1", "s2"]


def test_served_frame_provider_documented_downscale(tmp_path, screenshot):
    """A provider that caps the long edge at 1568 px: the model answers in pixels of the image it
    received; the record keeps that size and the pixel frame converts with it."""
    def provider(n, req):
        rw, rh = documented_downscale(req.image_size, 1568)
        cx, cy = (BOX[0] + BOX[2]) / 2 / W * rw, (BOX[1] + BOX[3]) / 2 / H * rh
        return f'{{"point": [{round(cx)}, {round(cy)}]}}'

    line, rec, received = _run_one(tmp_path, screenshot, "json_pixels", provider, ServedOptions(downscale_long_edge=1568))
    assert received == (3840, 2160)
    assert line["model_input_size"] == [1568, 882] and line["served"]["input_size_source"] == "provider_documented"
    assert rec.outcome == "hit"
    # without the documented size the same reply lands short: the bug the record prevents
    bare = build_record(study="t", model="m", family="json_pixels", sample=rec_sample(rec, screenshot),
                        prompt=rec.prompt, response=Response(raw_text=line["raw_text"]))
    assert bare.outcome == "miss" and bare.parse.points[0][0] < 0.5


def rec_sample(rec, screenshot):
    return Sample(sample_id=rec.sample_id, benchmark=rec.benchmark, image=rec.image, instruction="x", target=rec.target)


def test_plan_input_rules():
    o = ServedOptions(max_pixels=1003520, resize="client")
    p = plan_input(get_family("qwen2_5_vl"), (W, H), o)
    assert p.send_size == p.model_input_size == (1316, 728) and p.note is None
    # smart_resize of a smart_resize'd size is the identity for this budget (what makes the server's resize a no-op)
    assert BUDGET.resize((1316, 728)) == (1316, 728)
    # "auto" (default) plans the original as sent, the server's smart_resize as the frame; "client" overrides it
    a = plan_input(get_family("qwen2_5_vl"), (W, H), ServedOptions(max_pixels=1003520))
    assert (a.send_size, a.model_input_size, a.source) == ((3840, 2160), (1316, 728), "server_budget")
    c = plan_input(get_family("qwen2_5_vl"), (W, H), ServedOptions(max_pixels=1003520), "client")
    assert (c.send_size, c.source) == ((1316, 728), "client_resized")
    assert plan_input(get_family("qwen3_vl"), (W, H), o).model_input_size is None
    assert plan_input(get_family("json_pixels"), (1024, 768), ServedOptions(downscale_long_edge=1568)).source == "original"
    # the family's published settings, when the server runs the checkpoint with them
    fam = get_family("qwen2_5_vl")
    assert plan_input(fam, (W, H), ServedOptions(pixel_budget="family")).model_input_size == \
        fam.expected_model_input_size((W, H))


# ---- pointfail evaluate --base-url -----------------------------------------------------------


@pytest.fixture(scope="module")
def sheets(tmp_path_factory):
    from pointfail.cli import main

    out = tmp_path_factory.mktemp("suite") / "sheets"
    assert main(["generate", "sheets", "--n", "6", "--seed", "1", "--out", str(out)]) == 0
    return out


def _evaluate(url, model, data, out, *extra):
    from pointfail.cli import main

    return main(["evaluate", "--base-url", url, "--model", model, "--family", "molmo", "--benchmark", "suite",
                 "--data", str(data), "--out", str(out), "--no-report", "--no-progress", *extra])


def test_evaluate_base_url_exit_codes_and_rerun_of_errors(tmp_path, sheets, capsys):
    """One command through a served model: a wrong name exits 3 before anything is sent or scored;
    a server that refuses some samples (HTTP 400, its message kept) exits 4 with the records written;
    the fixed server and --retry-errors redo exactly those and exit 0."""
    out = tmp_path / "res"
    point = '<point x="50" y="50" alt="c">c</point>'
    with FakeOpenAI(None, default_reply=point, model="m") as fk:
        assert _evaluate(fk.url, "wrong", sheets, out) == 3
        assert fk.chats == [] and not (out / "m").exists()
    err = capsys.readouterr().err
    assert "does not serve a model named 'wrong'; it lists 'm'" in err

    def script(n, req):
        return Action(status=400) if n < 2 else point

    with FakeOpenAI(script, default_reply=point, model="m") as fk:
        assert _evaluate(fk.url, "m", sheets, out, "--concurrency", "1") == 4
        res = json.loads((out / "evaluation.json").read_text())
        assert res["outcomes"]["error"] == 2 and res["records"] == 6
        errs = [json.loads(x) for x in (out / "m" / "sheets.jsonl").read_text().splitlines()]
        assert sum(1 for r in errs if r["outcome"] == "error" and "scripted 400" in r["error"]) == 2
        assert "2 of 6 samples ended in an error" in capsys.readouterr().err
        assert _evaluate(fk.url, "m", sheets, out, "--concurrency", "1") == 4  # same entry, same server: kept
        assert len(fk.chats) == 6
        assert _evaluate(fk.url, "m", sheets, out, "--retry-errors") == 0
        assert len(fk.chats) == 8
    res = json.loads((out / "evaluation.json").read_text())
    assert res["outcomes"].get("error", 0) == 0 and res["records"] == 6 and res["served"]["retried_errors"] == 2
    # errors again, then another server (a restart on another port): asked again without being told
    with FakeOpenAI(lambda n, r: Action(status=400), model="m") as fk:
        assert _evaluate(fk.url, "m", sheets, out / "again") == 4
    with FakeOpenAI(None, default_reply=point, model="m") as fk:
        assert _evaluate(fk.url, "m", sheets, out / "again") == 0
        assert len(fk.chats) == 6
    assert res["judge"] == "oracle"


def test_the_served_modules_help_describes_its_requests_file():
    """``python -m pointfail.running.served --help`` names every field of a request line (the job
    format's :class:`pointfail.running.jobs.JobRequest`, nothing else), gives an example line that the
    job format accepts, and says its exit codes."""
    import re

    from pointfail.running.jobs import JobRequest
    from pointfail.running.served.__main__ import EPILOG

    block = EPILOG.split("\n\n")[0].splitlines()[1:]
    listed = [line.split()[0] for line in block if line.startswith("  ")]
    assert listed == list(JobRequest.model_fields)
    example = re.search(r"^e\.g\. (\{.*\})$", EPILOG, re.M).group(1)
    assert JobRequest.model_validate(json.loads(example)).sample_id == "pfs_0001"
    assert "exit codes: 0 every request has a response; 2 bad arguments or files; 3 the server" in EPILOG
