"""The worker with the weight-free ``center`` backend: responses format, resume, bad samples, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from pointfail.records import canonical_json
from pointfail.running.worker import WorkerError, answered_ids, load_backend, read_requests, run_worker


def _write_requests(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(canonical_json(r) for r in rows), encoding="utf-8")


def _responses(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture()
def job(tmp_path: Path):
    sizes = [(100, 50), (64, 64), (33, 21)]
    rows = []
    for i, (w, h) in enumerate(sizes):
        p = tmp_path / f"img{i}.png"
        Image.new("RGB", (w, h), (i * 40, 10, 10)).save(p)
        rows.append({"sample_id": f"s{i}", "image": str(p), "prompt": "Point to the thing.", "task": "point",
                     "max_new_tokens": 16})
    bad = tmp_path / "corrupt.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really a png" * 4)
    rows.insert(1, {"sample_id": "bad", "image": str(bad), "prompt": "Point.", "task": "point", "max_new_tokens": 16})
    rows.append({"sample_id": "missing", "image": str(tmp_path / "nope.png"), "prompt": "Point.", "task": "point"})
    req = tmp_path / "requests.jsonl"
    _write_requests(req, rows)
    return tmp_path, req, tmp_path / "out" / "responses.jsonl"


def test_center_in_process_answers_every_sample_and_records_errors(job):
    tmp, req, resp = job
    s = run_worker(load_backend("center", None, "cpu"), req, resp, batch_size=2)
    got = {r["sample_id"]: r for r in _responses(resp)}
    assert sorted(got) == ["bad", "missing", "s0", "s1", "s2"]
    # centre in pixels of the original image: (W/2, H/2); 33x21 -> (16.5, 10.5)
    assert json.loads(got["s0"]["raw_text"]) == {"point": [50, 25]}
    assert json.loads(got["s1"]["raw_text"]) == {"point": [32, 32]}
    assert json.loads(got["s2"]["raw_text"]) == {"point": [16.5, 10.5]}
    assert got["s0"]["error"] is None and got["s0"]["model_input_size"] is None
    assert got["bad"]["raw_text"] is None and got["bad"]["error"].startswith("cannot read image")
    assert got["missing"]["error"].startswith("image not found")
    assert set(got["s0"]) == {"sample_id", "raw_text", "model_input_size", "prompt_tokens", "output_tokens",
                              "seconds", "error"}
    assert (s.total, s.answered, s.errors, s.skipped) == (5, 3, 2, 0)


def test_resume_skips_answered_and_drops_a_cut_line(job):
    tmp, req, resp = job
    resp.parent.mkdir(parents=True)
    # s0 answered earlier; a kill cut the next line short
    resp.write_text(canonical_json({"sample_id": "s0", "raw_text": "x", "model_input_size": None, "prompt_tokens": None,
                                    "output_tokens": None, "seconds": 0.1, "error": None}) + '{"sample_id": "s1", "raw',
                    encoding="utf-8")
    assert answered_ids(resp) == {"s0"}
    assert resp.read_text().endswith("\n")
    s = run_worker(load_backend("center", None, "cpu"), req, resp, batch_size=3)
    ids = [r["sample_id"] for r in _responses(resp)]
    assert sorted(ids) == ["bad", "missing", "s0", "s1", "s2"] and len(ids) == 5
    assert _responses(resp)[0]["raw_text"] == "x"  # the old answer is kept, not redone
    assert s.skipped == 1
    # a third run has nothing to do
    s = run_worker(load_backend("center", None, "cpu"), req, resp, batch_size=3)
    assert (s.skipped, s.answered, s.errors) == (5, 0, 0)
    assert len(_responses(resp)) == 5


class _Flaky:
    """A backend that raises whenever the batch holds sample 's1' (a sample that crashes the model)."""

    name = "flaky"

    def __init__(self):
        self.calls: list[list[str]] = []

    def generate(self, batch):
        self.calls.append([b.sample_id for b in batch])
        if any(b.sample_id == "s1" for b in batch):
            raise RuntimeError("boom on s1")
        return [{"raw_text": "ok", "model_input_size": [1, 1], "prompt_tokens": 3, "output_tokens": 1} for _ in batch]

    def info(self):
        return {}


def test_failed_batch_is_retried_one_by_one(job):
    tmp, req, resp = job
    be = _Flaky()
    s = run_worker(be, req, resp, batch_size=4)
    got = {r["sample_id"]: r for r in _responses(resp)}
    assert got["s1"]["error"] == "RuntimeError: boom on s1"
    assert got["s0"]["raw_text"] == "ok" and got["s2"]["raw_text"] == "ok"
    # batch 1 = s0, bad(corrupt, answered before generate), s1, s2 -> generate([s0, s1, s2]) fails,
    # then s0, s1, s2 one at a time; batch 2 = missing (image error, no generate call)
    assert be.calls == [["s0", "s1", "s2"], ["s0"], ["s1"], ["s2"]]
    assert (s.answered, s.errors) == (2, 3)


def test_requests_without_sample_id_are_an_infrastructure_error(tmp_path):
    req = tmp_path / "r.jsonl"
    req.write_text('{"sample_id": "a", "image": "x", "prompt": "p"}\n{"image": "y"}\n', encoding="utf-8")
    with pytest.raises(WorkerError, match=r"r.jsonl:2: request without a string sample_id"):
        read_requests(req)


def _run_cli(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HF_HUB_OFFLINE", None)  # the worker sets it itself
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "pointfail.running.worker", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_cli_subprocess_center(job):
    tmp, req, resp = job
    p = _run_cli("--family", "center", "--requests", str(req), "--responses", str(resp), "--batch-size", "2")
    assert p.returncode == 0, p.stderr
    assert len(_responses(resp)) == 5
    batch_lines = [ln for ln in p.stderr.splitlines() if " batch " in ln]
    assert len(batch_lines) == 3  # 5 requests in batches of 2


def test_cli_exit_codes_for_infrastructure_failures(tmp_path, job):
    _, req, resp = job
    p = _run_cli("--family", "no_such_family_xyz", "--requests", str(req), "--responses", str(resp))
    assert p.returncode == 2 and "no backend for family" in p.stderr
    p = _run_cli("--family", "center", "--requests", str(tmp_path / "absent.jsonl"), "--responses", str(resp))
    assert p.returncode == 2 and "cannot read requests file" in p.stderr
    assert not resp.exists()


def test_a_full_disk_ends_the_worker_in_one_line_and_keeps_what_was_written(job, monkeypatch, caplog):
    """ENOSPC while a response line is made durable: exit 2, one log line naming the responses file,
    no traceback; the lines fsynced before stay, and a rerun answers the rest exactly once."""
    import errno

    from pointfail.running import worker

    _, req, resp = job
    real_fsync, calls = os.fsync, []

    def full(fd):  # the disk fills at the third response line
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(resp))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full)
    args = ["--family", "center", "--requests", str(req), "--responses", str(resp), "--batch-size", "1"]
    with caplog.at_level("ERROR"):
        assert worker.main(args) == worker.EXIT_INFRA
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [f"infrastructure failure: cannot write {resp}: No space left on device"]
    kept = _responses(resp)
    assert 1 <= len(kept) <= 3 and len({r["sample_id"] for r in kept}) == len(kept)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert worker.main(args) == worker.EXIT_OK
    assert sorted(r["sample_id"] for r in _responses(resp)) == ["bad", "missing", "s0", "s1", "s2"]
