"""The judge through an OpenAI-compatible server (``--judge openai``) on the scripted loopback fake:
the Ollama judge's protocol through the same ChatJudge code path."""

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from judge_fixtures import make_study
from pointfail.judge.protocol import LABEL_SCHEMA
from pointfail.running.judges.served import OpenAIJudge
from pointfail.running.judges.stage import judge_study
from pointfail.records import read_records
from pointfail.generated.testing.openai_fake import Action, FakeOpenAI

REPO = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8  # never decoded by the fake's label script


def judge(url, **kw):
    kw.setdefault("backoff_initial", 0.01)
    kw.setdefault("backoff_max", 0.05)
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("transport_retries", 3)
    return OpenAIJudge(model="gemma", base_url=url, **kw)


def one(j, image=PNG, instruction="the red mug"):
    return j.judge_one_sync(image, instruction)


def test_clean_label_request_shape():
    with FakeOpenAI(["wrong_instance"], model="gemma") as fk:
        j = one(judge(fk.url))
        chat = fk.chats[0]
    assert (j.status, j.label, j.judge, len(j.attempts), j.transport_failures) == ("labeled", "wrong_instance",
                                                                                  "openai:gemma", 1, 0)
    assert chat["temperature"] == 0.0 and chat["seed"] == 0 and chat["max_tokens"] == 64
    assert chat["response_format"]["json_schema"]["schema"] == LABEL_SCHEMA
    assert '"the red mug"' in chat["user"]
    assert j.options["seed_per_attempt"] == "seed + attempt - 1" and j.options["max_attempts"] == 5


def test_rejected_replies_then_label_seeds_advance_and_every_reply_is_kept():
    replies = ["off_by_pixels or wrong_instance", "", "I think it is hallucinated, not wrong_category", "wrong_category"]
    with FakeOpenAI(replies, model="gemma") as fk:
        j = one(judge(fk.url))
        seeds = [c["seed"] for c in fk.chats]
    assert j.status == "labeled" and j.label == "wrong_category"
    assert [a.reply for a in j.attempts] == replies and [a.attempt for a in j.attempts] == [1, 2, 3, 4]
    assert seeds == [0, 1, 2, 3]


def test_transport_failures_are_retried_apart_from_label_attempts():
    script = [Action(status=429), Action(status=503), Action(drop=True), Action(malformed=True), "hallucinated"]
    with FakeOpenAI(script, model="gemma") as fk:
        j = one(judge(fk.url, transport_retries=6))
        seeds = [c["seed"] for c in fk.chats]
    assert j.status == "labeled" and j.label == "hallucinated"
    assert j.transport_failures == 4 and len(j.attempts) == 1
    assert seeds == [0] * 5  # a retried request is the same attempt


def test_refusals_are_attempts_without_a_label():
    with FakeOpenAI(lambda n, r: Action(refusal="I can't judge this."), model="gemma") as fk:
        j = one(judge(fk.url))
        assert len(fk.chats) == 5
    assert j.status == "unlabeled" and [a.reply for a in j.attempts] == [""] * 5


def test_dead_server_and_unknown_model_mark_the_judge_down():
    with FakeOpenAI(lambda n, r: Action(status=503), model="gemma") as fk:
        j = one(judge(fk.url, transport_retries=2))
        assert len(fk.chats) == 3
    assert j.status == "judge_unavailable" and j.transport_failures == 3 and "503" in j.detail

    async def two_misses(url):
        async with judge(url) as jj:
            return [await jj.judge(PNG, "a"), await jj.judge(PNG, "b")], jj
    with FakeOpenAI(["wrong_instance"], model="other") as fk:
        (first, second), jj = asyncio.run(two_misses(fk.url))
        assert fk.chats == []  # the model list said the model is not there: nothing sent
    assert first.status == second.status == "judge_unavailable" and "not served" in second.detail


def test_stage_with_openai_judge_then_rerun_is_a_no_op(tmp_path):
    study = make_study(tmp_path, n_misses=6)
    labels = ["off_by_pixels", "wrong_instance", "wrong_category"]
    with FakeOpenAI(lambda n, r: labels[n % 3], model="gemma") as fk:
        rep = judge_study(study, judge(fk.url, concurrency=3), role="other")
        assert len(fk.chats) == 6
    assert rep.judged == 6 and rep.status == Counter({"labeled": 6})
    for r in read_records(study / "m" / "suite.jsonl"):
        if r.outcome == "miss":
            (j,) = r.other_judgments
            assert j.judge == "openai:gemma" and j.label in labels and len(j.attempts) == 1
    with FakeOpenAI(None, model="gemma") as fk:
        rep2 = judge_study(study, judge(fk.url), role="other")
        assert fk.chats == []
    assert rep2.judged == 0 and rep2.already == 6


def test_cli_judge_openai(tmp_path):
    study = make_study(tmp_path, n_misses=3)
    with FakeOpenAI(None, default_reply="off_by_pixels", model="gemma") as fk:
        out = subprocess.run([sys.executable, "-m", "pointfail", "judge", str(study), "--judge", "openai", "--role",
                              "other", "--base-url", fk.url, "--model", "gemma", "--json", "--no-progress"],
                             capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["judge"] == "openai:gemma" and rep["labels"] == {"off_by_pixels": 3}


def _study_toml(study: Path, url: str, primary: str = "openai", key_env: str = "", compared: str = "") -> None:
    (study / "study.toml").write_text(
        f'[study]\nname = "study"\nprimary_judge = "{primary}"\n'
        '[[benchmarks]]\nname = "suite"\nloader = "suite"\n'
        f'[judge]\nopenai_base_url = "{url}"\nopenai_model = "gemma"\nlineage = ["gemma"]\n'
        + (f'openai_api_key_env = "{key_env}"\n' if key_env else "") + (f'compared = ["{compared}"]\n' if compared else ""))


def test_reproduce_runs_the_study_named_openai_judge_as_primary(tmp_path, monkeypatch):
    """What ``pointfail-runner reproduce`` does for a study whose primary judge is an OpenAI-compatible
    server: nothing missing before any work when [judge] names a reachable server and the model, then
    its judge stage (the study alone says which judges, in which role) fills Record.judge with the
    served judge's labels and keeps the compared oracle's as another judgment; a key variable the
    study names but the environment lacks, or a server that is not there, stops before any work."""
    from pointfail.running.judges.lineage import judge_plan
    from pointfail.inputs.study import load_study
    from pointfail_runner.prepare import judge_missing, openai_judge_missing
    from pointfail_runner.reproduce import judge_stage

    study = make_study(tmp_path, n_misses=3)
    with FakeOpenAI(None, default_reply="wrong_category", model="gemma") as fk:
        url = fk.url
        _study_toml(study, url, key_env="JUDGE_KEY_15", compared="oracle")
        spec = load_study(study / "study.toml")
        plan = judge_plan(spec.model_dump())
        assert (plan.primary, plan.judges) == ("openai", ("openai", "oracle"))
        monkeypatch.delenv("JUDGE_KEY_15", raising=False)
        assert judge_missing(plan, spec.model_dump(), False) == [
            "judge: JUDGE_KEY_15 (the judge's API key, named by [judge] openai_api_key_env) is not set"]
        monkeypatch.setenv("JUDGE_KEY_15", "sk-test")
        assert judge_missing(plan, spec.model_dump(), False) == []
        logs: list[str] = []
        judge_stage(study, spec, plan, data_root=tmp_path, log=logs.append)
        assert len(fk.chats) == 3
    assert any(ln.startswith("[reproduce] judge openai:gemma (primary): 3 misses, 3 judged") for ln in logs), logs
    assert any(ln.startswith("[reproduce] judge oracle (other): 3 misses, 3 judged") for ln in logs), logs
    misses = [r for r in read_records(study / "m" / "suite.jsonl") if r.outcome == "miss"]
    assert len(misses) == 3 and all(r.judge.judge == "openai:gemma" and r.judge.label == "wrong_category"
                                    for r in misses)
    assert all([o.judge for o in r.other_judgments] == ["oracle"] for r in misses)
    # the server gone: reproduce stops before any work, naming the address
    (problem,) = openai_judge_missing({"openai_base_url": url, "openai_model": "gemma"})
    assert problem.startswith("judge: cannot connect to the judge at") and url in problem
    assert [p.split(" (")[0] for p in openai_judge_missing({})] == [
        "judge: [judge] openai_base_url is not set", "judge: [judge] openai_model is not set"]
