"""The real clients (served backend over ``openai``, the Ollama judge over ``ollama``, the OpenAI judge)
against a hostile server on 127.0.0.1 (``tests/hostile.py``: drip, endless body, huge headers, redirect,
lone surrogate, non-finite usage, content parts, deep JSON, truncated body, connection reset, an error
of the server's own): each ends within its deadline with one explained outcome per sample, nothing lost
and nothing twice, and a rerun against a good server finishes the job (issue 24). Timings and peak RSS
are measured in ``bench/hostile.py``, not asserted here."""

from __future__ import annotations

import json
import resource
import time
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from hostile import HostileServer
from judge_fixtures import make_study
from pointfail.running.judges.client import OllamaJudge
from pointfail.running.judges.served import OpenAIJudge
from pointfail.running.judges.stage import judge_study
from pointfail.records import read_records
from pointfail.running.served.backend import ServerUnavailable, run_served
from pointfail.running.served.options import ServedOptions
from pointfail.inputs.study import model_spec

DEADLINE = 1.0
CAP = 64 * 1024
N = 4
ANSWER = '{"point": [10, 20]}'

# what one sample ends as, by mode: "answered" (with the repair flags), "error" (final, with words from
# the reason), or "down" (retried until the retries ran out: the server is marked down, the samples left
# for a rerun)
SERVED = {
    "good": ("answered", []),
    "surrogate": ("answered", ["invalid_unicode_replaced"]),
    "nonfinite": ("answered", ["non_finite_usage_dropped"]),
    "list_content": ("answered", ["content_parts_ignored", "content_parts_joined"]),
    "number_content": ("error", ["message.content is a int"]),
    "redirect": ("error", ["redirect", HostileServer.REDIRECT_TARGET]),
    "endless": ("error", [f"over the cap of {CAP} bytes"]),
    "error": ("error", ["HTTP 400", "hostile says: image too large"]),
    "drip": ("down", ["DeadlineExceeded", f"deadline of {DEADLINE:g} s"]),
    "deep": ("down", ["nested too deeply"]),
    "truncated": ("down", []),
    "reset": ("down", []),
    "huge_headers": ("down", []),
}


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.fixture
def requests_file(tmp_path: Path) -> Path:
    img = tmp_path / "img.png"
    Image.new("RGB", (64, 48), (255, 255, 255)).save(img)
    p = tmp_path / "req.jsonl"
    p.write_text("".join(json.dumps({"sample_id": f"s{i}", "image": str(img), "prompt": "point to it",
                                     "task": "point", "max_new_tokens": 16}) + "\n" for i in range(N)))
    return p


def _served(url: str) -> object:
    opts = ServedOptions(concurrency=2, timeout_s=DEADLINE, retries=1, backoff_initial=0.01, backoff_max=0.02,
                         max_body_bytes=CAP)
    return model_spec({"kind": "server", "name": "served", "family": "json_pixels", "base_url": url + "/v1",
                       "model": "m", "options": opts})


def _lines(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


@pytest.mark.parametrize("mode", sorted(SERVED))
def test_served_client_against_a_hostile_server(tmp_path, requests_file, mode):
    kind, words = SERVED[mode]
    out = tmp_path / "resp.jsonl"
    rss0 = _maxrss_mib()
    with HostileServer(mode, reply=ANSWER) as srv:
        t0 = time.monotonic()
        if kind == "down":
            with pytest.raises(ServerUnavailable) as ei:
                run_served(_served(srv.url), requests_file, out)
            assert all(w in str(ei.value) for w in words), str(ei.value)
            assert len(ei.value.pending) + len(_lines(out)) == N
        else:
            run_served(_served(srv.url), requests_file, out)
        took = time.monotonic() - t0
        # at most two rounds of two requests in flight, each bounded by the deadline
        assert took < 4 * DEADLINE + 5, took
        assert _maxrss_mib() - rss0 < 150
        lines = _lines(out)
        if kind == "answered":
            assert len(lines) == N and all(x["error"] is None for x in lines)
            for x in lines:
                assert x["served"].get("flags", []) == words
                assert x["raw_text"] == (ANSWER + "\ufffd" if mode == "surrogate" else ANSWER)
                assert x["prompt_tokens"] == (None if mode == "nonfinite" else 10)
        elif kind == "error":
            assert len(lines) == N
            for x in lines:
                assert x["raw_text"] is None and all(w in x["error"] for w in words), x["error"]
        srv.mode = "good"  # the rerun, against a server that behaves
        run_served(_served(srv.url), requests_file, out)
    again = _lines(out)
    ids = Counter(x["sample_id"] for x in again)
    assert ids == Counter({f"s{i}": 1 for i in range(N)})  # nothing lost, nothing twice
    if kind == "down":
        assert all(x["error"] is None and x["raw_text"] == ANSWER for x in again)
    else:
        assert again == lines  # a rerun asks nothing again


def test_a_drip_is_given_up_at_the_deadline_not_per_read(tmp_path, requests_file):
    """A byte every 0.2 s never trips a per-read timeout; the total deadline does, once per request."""
    out = tmp_path / "resp.jsonl"
    with HostileServer("drip", drip_s=0.05) as srv:
        opts = ServedOptions(concurrency=1, timeout_s=DEADLINE, retries=0, max_body_bytes=CAP)
        model = model_spec({"kind": "server", "name": "served", "family": "json_pixels",
                            "base_url": srv.url + "/v1", "model": "m", "options": opts})
        t0 = time.monotonic()
        with pytest.raises(ServerUnavailable, match="within the deadline of 1 s"):
            run_served(model, requests_file, out)
        assert time.monotonic() - t0 < DEADLINE + 3
        assert srv.chats == {"drip": 1}  # retries 0: one request, the rest not sent
        assert srv.bytes_sent > 5  # it did keep sending


# ---------------------------------------------------------------------------------------------- judges

JUDGED = {
    "good": ("labeled", None),
    "surrogate": ("labeled", "invalid_unicode_replaced"),
    "redirect": ("judge_unavailable", HostileServer.REDIRECT_TARGET),
    "endless": ("judge_unavailable", f"over the cap of {CAP} bytes"),
    "error": ("judge_unavailable", "hostile says: image too large"),
    "drip": ("judge_unavailable", f"deadline of {DEADLINE:g} s"),
    "deep": ("judge_unavailable", None),
    "truncated": ("judge_unavailable", None),
    "reset": ("judge_unavailable", None),
    "huge_headers": ("judge_unavailable", None),
}


def _judge(kind: str, url: str):
    kw = dict(concurrency=2, transport_retries=1, backoff_initial=0.01, backoff_max=0.02, timeout_s=DEADLINE,
              max_body_bytes=CAP)
    if kind == "ollama":
        return OllamaJudge(host=url, model="m", **kw)
    return OpenAIJudge(base_url=url + "/v1", model="m", **kw)


@pytest.mark.parametrize("kind", ["ollama", "openai"])
@pytest.mark.parametrize("mode", sorted(JUDGED))
def test_judges_against_a_hostile_server(tmp_path, kind, mode):
    status, words = JUDGED[mode]
    study = make_study(tmp_path, n_misses=4, n_hits=1)
    rss0 = _maxrss_mib()
    with HostileServer(mode, reply="hallucinated") as srv:
        t0 = time.monotonic()
        judge_study(study, _judge(kind, srv.url), role="other")
        assert time.monotonic() - t0 < 4 * DEADLINE + 5
        assert _maxrss_mib() - rss0 < 150
        recs = read_records(study / "m" / "suite.jsonl")  # the batch was written, every record
        assert len(recs) == 6
        misses = [r for r in recs if r.outcome == "miss"]
        assert len(misses) == 4
        for r in misses:
            (j,) = r.other_judgments  # one verdict per miss, never two
            assert j.status == status, (j.status, j.detail)
            if status == "labeled":
                assert j.label == "hallucinated"
                if words:
                    assert j.attempts[-1].flags == [words] and j.attempts[-1].reply == "hallucinated\ufffd"
            elif words:
                assert words in (j.detail or ""), j.detail
        srv.mode = "good"  # the rerun fills in what the outage left
        judge_study(study, _judge(kind, srv.url), role="other")
    recs = read_records(study / "m" / "suite.jsonl")
    misses = [r for r in recs if r.outcome == "miss"]
    assert len(recs) == 6 and len(misses) == 4
    assert all(len(r.other_judgments) == 1 and r.other_judgments[0].status == "labeled" for r in misses)


@pytest.mark.parametrize("mode", ["list_content", "number_content", "nonfinite"])
def test_openai_judge_reads_content_parts_and_refuses_other_types(tmp_path, mode):
    study = make_study(tmp_path, n_misses=2, n_hits=0, with_no_prediction=False)
    with HostileServer(mode, reply="hallucinated") as srv:
        judge_study(study, _judge("openai", srv.url), role="other")
    for r in read_records(study / "m" / "suite.jsonl"):
        (j,) = r.other_judgments
        if mode == "number_content":
            assert j.status == "judge_unavailable" and "message.content is a int" in j.detail
        else:
            assert j.status == "labeled" and j.label == "hallucinated", j
