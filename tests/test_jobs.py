"""Job files (``pointfail.running.jobs``): the responses reader never crashes on hostile lines, a planted
symlink or FIFO is refused, one job has one worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from pointfail.running.jobs import (
    JobBusy,
    JobFileError,
    JobLock,
    JobResponse,
    ResponseWriter,
    read_responses,
)
from pointfail.limits import MAX_RESPONSE_RAW_TEXT_CHARS
from pointfail.records import canonical_json


def _ok(sid: str, text: str = "[1, 2]") -> bytes:
    return canonical_json({"sample_id": sid, "raw_text": text, "error": None}).encode().rstrip(b"\n")


HOSTILE = {
    # sample id -> (line, what the reader says about it)
    "surrogate": (b'{"sample_id":"surrogate","raw_text":"\\ud800"}\n', "raw_text: Input should be a valid string"),
    "wrongtype": (b'{"sample_id":"wrongtype","raw_text":5}\n', "raw_text: Input should be a valid string"),
    "size0": (b'{"sample_id":"size0","model_input_size":[0,7]}\n', "is not two sizes in 1..1000000 pixels"),
    "inf": (b'{"sample_id":"inf","seconds":1e999}\n', "seconds: Input should be a finite number"),
    "extra": (b'{"sample_id":"extra","raw_text":"x","evil":true}\n', "evil: Extra inputs are not permitted"),
    "bigint": (b'{"sample_id":"bigint","prompt_tokens":' + b"9" * 5000 + b"}\n", "not JSON (Exceeds the limit"),
    "huge": (b'{"raw_text":"' + b"a" * (MAX_RESPONSE_RAW_TEXT_CHARS + 10) + b'","sample_id":"huge"}\n',
             "raw_text: String should have at most 1048576 characters"),
}


def test_hostile_lines_become_explained_errors_for_their_samples(tmp_path):
    p = tmp_path / "responses.jsonl"
    junk = [b"[1, 2, 3]\n", b"\xff\xfe\xfd\n", b"[" * 100_000 + b"\n", b'"just a string"\n', b"{}\n",
            b'{"sample_id": 7}\n', _ok("not-requested") + b"\n"]
    body = _ok("good") + b"\n" + b"".join(line for line, _ in HOSTILE.values()) + b"".join(junk)
    body += _ok("good", "second answer") + b"\n" + b'{"sample_id":"late","raw'  # duplicate, then a torn tail
    p.write_bytes(body)
    wanted = ["good", "late", *HOSTILE]
    log = read_responses(p, wanted)
    assert list(log.responses) == ["good"] and log.responses["good"].raw_text == "[1, 2]"  # first line wins
    assert log.duplicates == 1 and log.cut_tail == len(b'{"sample_id":"late","raw')
    for sid, (_, why) in HOSTILE.items():
        assert why in log.invalid[sid], (sid, log.invalid[sid])
        r = log.response_for(sid)
        assert r.raw_text is None and r.error.startswith("invalid response line ")
    assert log.response_for("late") is None  # no complete line: the sample is asked again on resume
    assert log.answered == {"good", *HOSTILE}
    assert len(log.problems) == len(junk)
    assert any("a JSON list, not an object" in x for x in log.problems)
    assert any("not UTF-8" in x for x in log.problems)
    assert any("JSON nested too deeply" in x for x in log.problems)
    assert any("'not-requested', which was not requested" in x for x in log.problems)


def test_a_line_over_the_cap_is_attributed_from_its_tail(tmp_path):
    p = tmp_path / "responses.jsonl"
    p.write_bytes(b'{"raw_text":"' + b"x" * 3000 + b'","sample_id":"long"}\n' + _ok("b") + b"\n")
    log = read_responses(p, ["long", "b"], max_line_bytes=1000)
    assert "line is 3034 bytes, more than the limit of 1000" in log.invalid["long"] and "b" in log.responses


def test_symlink_and_fifo_in_place_of_the_responses_file_are_refused(tmp_path):
    decoy = tmp_path / "decoy.txt"
    decoy.write_text("host file\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(decoy)
    with pytest.raises(JobFileError, match="is a symlink; the runner never follows"):
        read_responses(link)
    with pytest.raises(JobFileError, match="is a symlink; refused"):
        with ResponseWriter(link):
            pass
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(JobFileError, match=r"not a regular file \(mode p"):
        read_responses(fifo)
    assert decoy.read_text() == "host file\n"


def test_writer_cuts_a_torn_tail_and_writes_invalid_output_as_an_error(tmp_path):
    p = tmp_path / "out" / "responses.jsonl"
    p.parent.mkdir()
    p.write_bytes(_ok("a") + b"\n" + b'{"sample_id": "b", "raw_te')
    with ResponseWriter(p, ["a", "b", "c", "d"]) as w:
        assert w.log.answered == {"a"}
        w.write({"sample_id": "b", "raw_text": "bad \ud800 unicode"})
        w.write({"sample_id": "c", "raw_text": "ok", "model_input_size": (640, 480), "seconds": float("nan")})
        w.write({"sample_id": "d", "raw_text": "fine", "model_input_size": (640, 480), "seconds": 0.5})
    lines = [json.loads(x) for x in p.read_text().splitlines()]
    assert [x["sample_id"] for x in lines] == ["a", "b", "c", "d"]
    assert lines[1]["raw_text"] is None and "invalid response" in lines[1]["error"]
    assert lines[2]["error"].startswith("worker produced an invalid response: ValueError")
    assert lines[3]["model_input_size"] == [640, 480] and lines[3]["error"] is None


def test_one_writer_per_file_and_one_runner_per_lock(tmp_path):
    p = tmp_path / "responses.jsonl"
    with ResponseWriter(p):
        with pytest.raises(JobBusy, match="one job has one worker at a time"):
            with ResponseWriter(p):
                pass
    with ResponseWriter(p):  # released on exit
        pass
    with JobLock(tmp_path / ".lock"):
        with pytest.raises(JobBusy, match="another process holds the job lock"):
            with JobLock(tmp_path / ".lock"):
                pass


@pytest.fixture()
def job(tmp_path: Path):
    rows = []
    for i in range(40):
        img = tmp_path / f"i{i}.png"
        Image.new("RGB", (20 + i, 10), (0, 0, 0)).save(img)
        rows.append({"sample_id": f"s{i:02d}", "image": str(img), "prompt": "Point.", "task": "point",
                     "max_new_tokens": 8})
    req = tmp_path / "requests.jsonl"
    req.write_text("".join(canonical_json(r) for r in rows))
    return req, tmp_path / "out" / "responses.jsonl"


def _worker(req: Path, resp: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pointfail.running.worker", "--family", "center", "--requests", str(req),
                             "--responses", str(resp)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_concurrent_workers_answer_each_sample_once(job):
    req, resp = job
    resp.parent.mkdir()
    with ResponseWriter(resp):  # a worker already holds the job: a second one refuses at once
        p = _worker(req, resp)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 2 and "another worker is writing" in err
    procs = [_worker(req, resp) for _ in range(3)]  # three at once: whoever gets the lock answers
    codes = [p.wait(timeout=300) for p in procs]
    assert 0 in codes and set(codes) <= {0, 2}
    ids = Counter(json.loads(x)["sample_id"] for x in resp.read_text().splitlines())
    assert len(ids) == 40 and set(ids.values()) == {1}


def test_kill_9_mid_run_then_resume_answers_each_sample_once(job):
    req, resp = job
    p = _worker(req, resp)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not resp.exists() or resp.read_bytes().count(b"\n") < 5):
        time.sleep(0.01)
    p.kill()  # SIGKILL
    p.wait()
    first = read_responses(resp)
    assert 5 <= len(first.answered) < 40 or len(first.answered) == 40
    p = _worker(req, resp)
    assert p.wait(timeout=300) == 0
    ids = Counter(json.loads(x)["sample_id"] for x in resp.read_text().splitlines())
    assert len(ids) == 40 and set(ids.values()) == {1}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200) | st.sampled_from([_ok("x"), b'{"sample_id":"x"', b"\n", b"\r", b"{}"]),
                max_size=12))
def test_reader_never_raises_on_any_bytes(tmp_path_factory, chunks):
    p = tmp_path_factory.mktemp("r") / "responses.jsonl"
    p.write_bytes(b"".join(chunks))
    log = read_responses(p, ["x"])
    assert set(log.responses) <= {"x"} and set(log.invalid) <= {"x"}
    for r in log.responses.values():
        assert isinstance(r, JobResponse)


def test_a_reader_with_a_deadline_stops_there_and_says_so(tmp_path):
    """``read_responses(..., deadline=)``: a deadline already past reads nothing and leaves one problem
    naming the wall clock; one in the future reads every line (the runner's final count of a
    container's responses counts against the job's wall clock)."""
    from pointfail.running.jobs import read_responses

    p = tmp_path / "responses.jsonl"
    p.write_text("".join(json.dumps({"sample_id": f"s{i}", "raw_text": "x"}) + "\n" for i in range(3000)))
    late = read_responses(p, None, deadline=time.monotonic() - 1)
    assert late.answered == set() and len(late.problems) == 1
    assert late.problems[0] == f"{p}: stopped reading after 0 bytes (out of time: the job's wall clock ran out)"
    assert len(read_responses(p, None, deadline=time.monotonic() + 60).answered) == 3000
