"""The Ollama judge client against a real HTTP server on loopback (pointfail.generated.testing.ollama_fake)."""

import asyncio

import pytest

from pointfail.generated.testing.ollama_fake import DIGEST, Action, FakeOllama
from pointfail.running.judges.client import DEFAULT_MODEL, OllamaJudge, resolve_host
from pointfail.judge.protocol import LABEL_SCHEMA

PNG = b"\x89PNG\r\n\x1a\nnot-really"


def judge_for(srv, **kw):
    kw.setdefault("backoff_initial", 0.01)
    kw.setdefault("backoff_max", 0.05)
    kw.setdefault("timeout_s", 5.0)
    return OllamaJudge(host=srv.url if srv else kw.pop("host"), **kw)


def test_clean_label_records_options_digest_and_reply():
    with FakeOllama(["wrong_category"]) as srv:
        j = judge_for(srv).judge_one_sync(PNG, "point to the mug")
    assert (j.status, j.label, j.judge, j.judge_digest) == ("labeled", "wrong_category", f"ollama:{DEFAULT_MODEL}", DIGEST)
    assert [(a.attempt, a.reply, a.verdict, a.label) for a in j.attempts] == [(1, "wrong_category", "accepted", "wrong_category")]
    assert j.options["temperature"] == 0.0 and j.options["seed"] == 0
    assert j.options["num_ctx"] == 8192 and j.options["num_predict"] == 64
    assert j.transport_failures == 0
    (chat,) = srv.chats
    assert chat["instruction"] == "point to the mug" and chat["images"] == 1
    assert chat["options"] == {"temperature": 0.0, "seed": 0, "num_ctx": 8192, "num_predict": 64}
    assert chat["format"] == LABEL_SCHEMA and chat["think"] is False
    assert "/api/tags" in srv.other_requests and "/api/version" in srv.other_requests


def test_bad_replies_then_label_every_reply_stored_seed_varies():
    script = ["wrong_instance or wrong_category", "not hallucinated", "", "I am unsure.", "Answer: **off-by-pixels**."]
    with FakeOllama(script) as srv:
        j = judge_for(srv).judge_one_sync(PNG, "x")
    assert j.status == "labeled" and j.label == "off_by_pixels"
    assert [a.reply for a in j.attempts] == script
    assert [a.verdict for a in j.attempts] == [
        "rejected_two_labels", "rejected_negated", "rejected_empty", "rejected_no_label", "accepted"]
    assert [a.attempt for a in j.attempts] == [1, 2, 3, 4, 5]
    assert [c["options"]["seed"] for c in srv.chats] == [0, 1, 2, 3, 4]


def test_five_bad_replies_is_unlabeled_and_no_sixth_request():
    with FakeOllama(default="wrong_instance, maybe wrong_category") as srv:
        j = judge_for(srv).judge_one_sync(PNG, "x")
    assert j.status == "unlabeled" and j.label is None
    assert len(j.attempts) == 5 and len(srv.chats) == 5
    assert all(a.verdict == "rejected_two_labels" for a in j.attempts)
    assert all(a.reply == "wrong_instance, maybe wrong_category" for a in j.attempts)


def test_transport_failures_do_not_consume_label_attempts():
    # 503, 500, drop, then 4 bad replies, then a 503 burst, then a clean label: 5 label attempts total
    script = [Action(status=503), Action(status=500), Action(drop=True), "nope", "nope", "nope", "nope",
              Action(status=503), Action(status=503), "hallucinated"]
    with FakeOllama(script) as srv:
        j = judge_for(srv, transport_retries=3).judge_one_sync(PNG, "x")
    assert j.status == "labeled" and j.label == "hallucinated"
    assert len(j.attempts) == 5
    assert j.transport_failures == 5
    assert [c["outcome"] for c in srv.chats][:3] == ["http_503", "http_500", "dropped"]


def test_timeout_is_a_transport_failure():
    with FakeOllama([Action(reply="hallucinated", delay=1.5), "wrong_instance"]) as srv:
        j = judge_for(srv, timeout_s=0.3).judge_one_sync(PNG, "x")
    assert j.status == "labeled" and j.label == "wrong_instance" and j.transport_failures == 1


def test_server_stays_unavailable():
    with FakeOllama(default=Action(status=503)) as srv:
        j = judge_for(srv, transport_retries=2).judge_one_sync(PNG, "x")
    assert j.status == "judge_unavailable" and j.label is None and j.attempts == []
    assert j.transport_failures == 3 and len(srv.chats) == 3  # 1 try + 2 retries
    assert "503" in j.detail


def test_no_server_at_all():
    # a port nothing listens on: bind, read the port, close
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    j = judge_for(None, host=f"http://127.0.0.1:{port}", transport_retries=1).judge_one_sync(PNG, "x")
    assert j.status == "judge_unavailable" and "not sent" in j.detail


def test_unknown_model_is_unavailable_not_retried():
    with FakeOllama(model="other:1b") as srv:
        j = judge_for(srv).judge_one_sync(PNG, "x")
    assert j.status == "judge_unavailable" and "not found" in j.detail and j.transport_failures == 0
    assert j.judge_digest is None


def test_requests_overlap_bounded_by_concurrency():
    async def run(srv):
        async with judge_for(srv, concurrency=4) as jd:
            return await jd.judge_many([(PNG, f"item {i}", False) for i in range(12)])

    with FakeOllama(default=Action(reply="hallucinated", delay=0.15)) as srv:
        out = asyncio.run(run(srv))
    assert [j.label for j in out] == ["hallucinated"] * 12
    assert 1 < srv.max_in_flight <= 4


def test_host_from_environment(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://judge-host:1234")
    assert resolve_host(None) == "http://judge-host:1234"
    assert resolve_host("http://other:1") == "http://other:1"
    monkeypatch.delenv("OLLAMA_HOST")
    assert resolve_host(None) == "http://127.0.0.1:11434"


def test_bad_arguments():
    with pytest.raises(ValueError):
        OllamaJudge(host="http://x", concurrency=0)
    with pytest.raises(RuntimeError):
        asyncio.run(OllamaJudge(host="http://x").judge(PNG, "x"))


def test_resume_after_outage_keeps_earlier_replies_and_counts_them():
    # first session: two bad replies, then the server stays at 503 -> judge_unavailable with 2 attempts
    with FakeOllama(["nope", "not hallucinated"], default=Action(status=503)) as srv:
        first = judge_for(srv, transport_retries=1).judge_one_sync(PNG, "x")
    assert first.status == "judge_unavailable" and [a.attempt for a in first.attempts] == [1, 2]
    assert first.transport_failures == 2
    # second session resumes: attempts 3..5 at most, seeds continue, replies appended
    with FakeOllama(default="still unsure") as srv:
        jd = judge_for(srv)

        async def run():
            async with jd:
                return await jd.judge(PNG, "x", resume=first)

        second = asyncio.run(run())
        seeds = [c["options"]["seed"] for c in srv.chats]
    assert second.status == "unlabeled"
    assert [a.attempt for a in second.attempts] == [1, 2, 3, 4, 5]
    assert [a.reply for a in second.attempts] == ["nope", "not hallucinated"] + ["still unsure"] * 3
    assert seeds == [2, 3, 4] and second.transport_failures == 2
