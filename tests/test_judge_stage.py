"""The judge stage over a study's records: misses only, once each, crash-safe, with the oracle and with
an Ollama judge on the fake server."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from judge_fixtures import expected_oracle, make_study
from pointfail.generated.testing.ollama_fake import Action, FakeOllama
from pointfail.running.judges.client import OllamaJudge
from pointfail.running.judges.stage import JOURNAL_SUFFIX, judge_study
from pointfail.records import read_records

REPO = Path(__file__).resolve().parents[1]


def recs(study):
    return {r.sample_id: r for r in read_records(study / "m" / "suite.jsonl")}


def ollama(srv_or_url, **kw):
    url = srv_or_url if isinstance(srv_or_url, str) else srv_or_url.url
    kw.setdefault("backoff_initial", 0.01)
    kw.setdefault("backoff_max", 0.05)
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("transport_retries", 2)
    return OllamaJudge(host=url, **kw)


def item(body_or_instruction):
    return int(body_or_instruction.rsplit(" ", 1)[1])


def test_oracle_stage_labels_misses_only_and_rerun_is_a_no_op(tmp_path):
    study = make_study(tmp_path, n_misses=8)
    rep = judge_study(study, "oracle")
    assert (rep.misses, rep.judged, rep.already) == (8, 8, 0)
    assert rep.labels == Counter({"off_by_pixels": 2, "wrong_instance": 2, "wrong_category": 2, "hallucinated": 2})
    r = recs(study)
    for sid, rec in r.items():
        if rec.outcome == "miss":
            assert rec.judge.judge == "oracle" and rec.judge.label == expected_oracle(sid)
        else:
            assert rec.judge is None and rec.other_judgments == []
    # canonical order on disk, and a rerun changes nothing
    path = study / "m" / "suite.jsonl"
    before = path.read_bytes()
    ids = [json.loads(line)["sample_id"] for line in before.splitlines()]
    assert ids == sorted(ids)
    rep2 = judge_study(study, "oracle")
    assert (rep2.judged, rep2.already) == (0, 8)
    assert path.read_bytes() == before
    assert not list(study.rglob("*" + JOURNAL_SUFFIX)) and not list(study.rglob("*.tmp"))


def test_oracle_missing_scene_graph_is_pending_with_reason(tmp_path):
    study = make_study(tmp_path, n_misses=2)
    (tmp_path / "data" / "test" / "scene_graphs" / "0001.json").unlink()
    rep = judge_study(study, "oracle")
    assert rep.status == Counter({"labeled": 1, "pending": 1})
    r = recs(study)
    assert r["miss-001"].judge.status == "pending" and "no scene graph" in r["miss-001"].judge.detail
    assert r["miss-000"].judge.status == "labeled"


def scripted(behaviour):
    """A script keyed on the miss number in the instruction ('point to item i') and the per-miss
    request count."""
    seen = Counter()

    def script(n, body):
        from pointfail.generated.testing.ollama_fake import instruction_of

        i = item(instruction_of(body))
        k = seen[i]
        seen[i] += 1
        seq = behaviour.get(i, ["hallucinated"])
        return seq[min(k, len(seq) - 1)]

    return script


def test_ollama_stage_scripted_replies(tmp_path):
    study = make_study(tmp_path, n_misses=10)
    behaviour = {
        0: ["wrong_instance"],  # clean label
        1: ["I think the answer is wrong_category because the heading is not a button."],  # in a sentence
        2: ["wrong_instance or wrong_category"],  # two labels, five times -> unlabeled
        3: ["not hallucinated", "hallucinated"],  # negated, then clean
        4: [""],  # empty, five times -> unlabeled
        5: ["```json\n{\"label\": \"off_by_pixels\"}\n```"],  # markdown
        6: [Action(reply="wrong_instance", delay=0.3)],  # slow
        7: [Action(status=503), Action(status=503), "hallucinated"],  # burst of 503
        8: [Action(drop=True), "wrong_category"],  # dropped connection
        9: [Action(status=500), "Label: **Hallucinated**."],
    }
    with FakeOllama(scripted(behaviour)) as srv:
        rep = judge_study(study, ollama(srv, concurrency=4))
        chats = list(srv.chats)
        max_in_flight = srv.max_in_flight
    r = recs(study)
    want = {0: "wrong_instance", 1: "wrong_category", 2: None, 3: "hallucinated", 4: None,
            5: "off_by_pixels", 6: "wrong_instance", 7: "hallucinated", 8: "wrong_category", 9: "hallucinated"}
    for i, label in want.items():
        j = r[f"miss-{i:03d}"].judge
        assert j.label == label, i
        assert j.status == ("labeled" if label else "unlabeled")
        assert 1 <= len(j.attempts) <= 5
        # every raw reply the server gave for this miss is stored, in order, with its attempt number
        replies = [c["reply"] for c in chats if c["instruction"] == f"point to item {i}" and c["outcome"] == "reply"]
        assert [a.reply for a in j.attempts] == replies
        assert [a.attempt for a in j.attempts] == list(range(1, len(replies) + 1))
    assert len(r["miss-002"].judge.attempts) == 5 and len(r["miss-004"].judge.attempts) == 5
    assert {a.verdict for a in r["miss-004"].judge.attempts} == {"rejected_empty"}
    assert [a.verdict for a in r["miss-003"].judge.attempts] == ["rejected_negated", "accepted"]
    assert r["miss-007"].judge.transport_failures == 2 and len(r["miss-007"].judge.attempts) == 1
    assert r["miss-008"].judge.transport_failures == 1 and r["miss-009"].judge.transport_failures == 1
    # hits and no_prediction never reach the judge
    assert {c["instruction"] for c in chats} == {f"point to item {i}" for i in range(10)}
    assert r["hit-000"].judge is None and r["nopred-000"].judge is None
    assert rep.status == Counter({"labeled": 8, "unlabeled": 2})
    assert max_in_flight > 1


def test_server_dies_mid_stage_then_rerun_loses_nothing_and_judges_nothing_twice(tmp_path):
    study = make_study(tmp_path, n_misses=12)
    # the 5th chat request kills the server; requests take 0.1 s so several are in flight
    def script(n, body):
        return Action(die=True) if n == 4 else Action(reply="wrong_instance", delay=0.1)

    with FakeOllama(script) as srv1:
        rep1 = judge_study(study, ollama(srv1, concurrency=2))
        answered1 = Counter(c["instruction"] for c in srv1.answered())
    assert rep1.status["judge_unavailable"] > 0 and rep1.status["labeled"] > 0
    r1 = recs(study)
    labeled1 = {sid for sid, rec in r1.items() if rec.judge and rec.judge.status == "labeled"}
    unavailable1 = {sid for sid, rec in r1.items() if rec.judge and rec.judge.status == "judge_unavailable"}
    assert len(labeled1) + len(unavailable1) == 12  # every miss has a recorded outcome
    assert len(labeled1) == sum(answered1.values())
    with FakeOllama(default="wrong_instance") as srv2:
        rep2 = judge_study(study, ollama(srv2, concurrency=2))
        answered2 = Counter(c["instruction"] for c in srv2.answered())
    assert rep2.already == len(labeled1) and rep2.judged == len(unavailable1)
    r2 = recs(study)
    assert all(r2[f"miss-{k:03d}"].judge.status == "labeled" for k in range(12))
    # across both runs each miss got exactly one answered request: none lost, none judged twice
    total = answered1 + answered2
    assert total == Counter({f"point to item {k}": 1 for k in range(12)})
    # a verdict from the first run is kept byte for byte
    for sid in labeled1:
        assert r2[sid].judge == r1[sid].judge


def test_killed_process_resumes_from_journal(tmp_path):
    study = make_study(tmp_path, n_misses=6)
    path = study / "m" / "suite.jsonl"
    before = path.read_bytes()
    journal = path.with_name(path.name + JOURNAL_SUFFIX)
    with FakeOllama(default=Action(reply="hallucinated", delay=0.4)) as srv1:
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "pointfail", "judge", str(study), "--judge", "ollama", "--host", srv1.url,
             "--concurrency", "1", "--no-progress"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            if journal.exists() and len(journal.read_bytes().splitlines()) >= 2:
                break
            if proc.poll() is not None:
                pytest.fail(f"judge exited early: {proc.stderr.read().decode()}")
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        answered1 = Counter(c["instruction"] for c in srv1.answered())
    assert path.read_bytes() == before  # the records file is only ever replaced whole
    journaled = {json.loads(line)["sample_id"] for line in journal.read_bytes().splitlines()}
    assert len(journaled) >= 2
    with FakeOllama(default="hallucinated") as srv2:
        rep = judge_study(study, ollama(srv2, concurrency=3))
        asked2 = {c["instruction"] for c in srv2.chats}
    assert rep.resumed == len(journaled)
    r = recs(study)
    assert all(r[f"miss-{k:03d}"].judge.label == "hallucinated" for k in range(6))
    journaled_instr = {f"point to item {int(s.split('-')[1])}" for s in journaled}
    assert journaled_instr <= set(answered1)  # each journaled verdict is a reply server 1 really sent
    assert not (asked2 & journaled_instr)  # journaled verdicts are not asked again
    # a request answered by the first server but killed before its journal line may be asked again;
    # every miss is labeled exactly once in the records either way
    assert len(asked2) + len(journaled) == 6
    assert not journal.exists()


def test_other_role_beside_oracle_and_agreement(tmp_path):
    from pointfail.judge.agreement import collect_units, pair_agreement

    study = make_study(tmp_path, n_misses=8)
    judge_study(study, "oracle")
    # the fake judge answers the oracle's label, except it calls every wrong_category hallucinated
    # and abstains on item 3 (hallucinated per oracle)
    def script(n, body):
        from pointfail.generated.testing.ollama_fake import instruction_of

        i = item(instruction_of(body))
        if i == 3:
            return "?"
        lab = expected_oracle(f"miss-{i:03d}")
        return "hallucinated" if lab == "wrong_category" else lab

    with FakeOllama(script) as srv:
        rep = judge_study(study, ollama(srv, concurrency=4), role="other")
    assert rep.status == Counter({"labeled": 7, "unlabeled": 1})
    r = recs(study)
    for k in range(8):
        rec = r[f"miss-{k:03d}"]
        assert rec.judge.judge == "oracle"
        assert [j.judge for j in rec.other_judgments] == ["ollama:gemma4:31b"]
    a = pair_agreement(collect_units(study), "oracle", "ollama:gemma4:31b")
    assert a["compared"] == 8 and a["n"] == 7 and a["confusion"]["hallucinated"]["unlabeled"] == 1
    assert a["confusion"]["wrong_category"]["hallucinated"] == 2
    # 7 both labeled, 5 on the diagonal
    assert a["percent_agreement"] == pytest.approx(5 / 7)


def test_missing_image_is_pending_and_stage_goes_on(tmp_path):
    study = make_study(tmp_path, n_misses=3)
    (tmp_path / "data" / "test" / "0001.png").unlink()
    with FakeOllama(default="wrong_instance") as srv:
        rep = judge_study(study, ollama(srv))
    r = recs(study)
    assert r["miss-001"].judge.status == "pending" and "not found" in r["miss-001"].judge.detail
    assert r["miss-000"].judge.label == "wrong_instance" and r["miss-002"].judge.label == "wrong_instance"
    assert rep.status == Counter({"labeled": 2, "pending": 1})


def test_several_records_files_judged_concurrently(tmp_path):
    import shutil

    study = make_study(tmp_path, n_misses=4)
    shutil.copytree(study / "m", study / "m2")
    (study / "tables").mkdir()
    shutil.copy(study / "m" / "suite.jsonl", study / "tables" / "not-records.jsonl")  # skipped
    with FakeOllama(default=Action(reply="wrong_category", delay=0.1)) as srv:
        rep = judge_study(study, ollama(srv, concurrency=8))
        n = len(srv.chats)
        peak = srv.max_in_flight
    assert rep.files == 2 and rep.misses == 8 and n == 8 and peak > 4  # both files' misses overlap
    for sub in ("m", "m2"):
        r = {x.sample_id: x for x in read_records(study / sub / "suite.jsonl")}
        assert all(r[f"miss-{k:03d}"].judge.label == "wrong_category" for k in range(4))
    assert all(x.judge is None for x in read_records(study / "tables" / "not-records.jsonl"))


def test_journal_of_another_judge_is_applied_not_dropped(tmp_path):
    from pointfail.judge.oracle import oracle_judgment
    from pointfail.records import append_jsonl

    study = make_study(tmp_path, n_misses=2)
    path = study / "m" / "suite.jsonl"
    journal = path.with_name(path.name + JOURNAL_SUFFIX)
    # an interrupted oracle run left one verdict in its journal
    graph = json.loads((tmp_path / "data" / "test" / "scene_graphs" / "0000.json").read_text())
    j = oracle_judgment(graph, "button:a", (54, 20), 8.0)
    from pointfail.integrity import record_digest

    digest = record_digest(recs(study)["miss-000"])  # verdicts are keyed by the record they were made for
    append_jsonl(journal, {"sample_id": "miss-000", "record_sha256": digest, "role": "primary",
                           "judgment": j.model_dump(mode="json")})
    with FakeOllama(default="hallucinated") as srv:
        rep = judge_study(study, ollama(srv), role="other")
    assert rep.resumed == 1 and not journal.exists()
    r = recs(study)
    assert r["miss-000"].judge == j
    assert r["miss-001"].judge is None
    assert [o.label for o in r["miss-000"].other_judgments] == ["hallucinated"]


def test_absent_target_prompt_says_so(tmp_path):
    from pointfail.records import Target, write_records

    study = make_study(tmp_path, n_misses=2)
    path = study / "m" / "suite.jsonl"
    rs = read_records(path)
    for r in rs:
        if r.sample_id == "miss-001":
            r.target = Target(kind="absent")
    write_records(path, rs)
    prompts = {}

    def script(n, body):
        from pointfail.generated.testing.ollama_fake import instruction_of

        prompts[instruction_of(body)] = body["messages"][0]["content"]
        return "hallucinated"

    with FakeOllama(script) as srv:
        judge_study(study, ollama(srv))
    assert "nothing is tinted green" in prompts["point to item 1"]
    assert "area tinted green is the correct target" in prompts["point to item 0"]


def test_second_stage_on_same_study_is_refused(tmp_path):
    import fcntl

    from pointfail.running.judges.stage import LOCK_NAME, StageBusy

    study = make_study(tmp_path, n_misses=1)
    with open(study / LOCK_NAME, "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        with pytest.raises(StageBusy, match="another judge stage"):
            judge_study(study, "oracle")
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
    assert judge_study(study, "oracle").judged == 1


def test_judge_modules_are_import_light():
    code = (
        "import sys, pointfail.running.judges.stage, pointfail.running.judges.render, pointfail.running.judges.client, "
        "pointfail.judge.agreement, pointfail.commands.judge; "
        "print(sorted(m for m in ('ollama', 'httpx', 'tenacity', 'torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(REPO / "src")))
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_box_task_misses_are_judged_at_the_box_centre(tmp_path):
    """A box answer that fails the coverage/precision rule has no point; the oracle judges it at its
    box's centre: a clipped box on button:a (centre (30, 20) px, inside the target) is off_by_pixels,
    a box around button:b (centre (120, 20) px) is wrong_instance."""
    from pointfail.records import ParseResult, read_records, write_records

    study = make_study(tmp_path, n_misses=2, n_hits=0, with_no_prediction=False)
    path = study / "m" / "suite.jsonl"
    rs = read_records(path)
    boxes = {"miss-000": [20 / 200, 10 / 100, 40 / 200, 30 / 100], "miss-001": [110 / 200, 10 / 100, 130 / 200, 30 / 100]}
    for r in rs:
        r.task = "box"
        r.parse = ParseResult(family="center", frame="unit", boxes=[boxes[r.sample_id]])
    write_records(path, rs)
    rep = judge_study(study, "oracle")
    assert rep.status == Counter({"labeled": 2})
    got = {r.sample_id: r.judge.label for r in read_records(path)}
    assert got == {"miss-000": "off_by_pixels", "miss-001": "wrong_instance"}


def test_stale_journal_is_not_applied_to_regenerated_records(tmp_path):
    """A journal left by an interrupted run, then the records regenerated (a new raw reply for the
    same sample): its verdict was made for the old record and must not label the new one."""
    from pointfail.integrity import record_digest
    from pointfail.records import Judgment, append_jsonl, write_records

    study = make_study(tmp_path, n_misses=2)
    path = study / "m" / "suite.jsonl"
    journal = path.with_name(path.name + JOURNAL_SUFFIX)
    old = recs(study)
    for sid in ("miss-000", "miss-001"):
        append_jsonl(journal, {"sample_id": sid, "record_sha256": record_digest(old[sid]), "role": "primary",
                               "judgment": Judgment(judge="oracle", status="labeled", label="wrong_category").model_dump(mode="json")})
    # the records are regenerated: miss-001's reply changed
    new = [r if r.sample_id != "miss-001" else r.model_copy(update={
        "response": r.response.model_copy(update={"raw_text": (r.response.raw_text or "") + " "})}) for r in old.values()]
    write_records(path, new)
    rep = judge_study(study, "oracle")
    assert rep.resumed == 1 and rep.stale == 1 and not journal.exists()
    r = recs(study)
    assert r["miss-000"].judge.label == "wrong_category"  # journaled for this very record: applied
    assert r["miss-001"].judge != Judgment(judge="oracle", status="labeled", label="wrong_category")  # judged afresh
