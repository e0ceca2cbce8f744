"""images/judge: the Dockerfile is exec-form, non-root and pinned; the model lock script works against a
server speaking the Ollama API."""

import json
import re
import subprocess
import sys
from pathlib import Path

from pointfail.generated.testing.ollama_fake import DIGEST, FakeOllama

JUDGE = Path(__file__).resolve().parents[1] / "images" / "judge"


def instructions():
    text = (JUDGE / "Dockerfile").read_text()
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_exec_form_non_root_pinned():
    ins = instructions()
    args = {rest.split("=", 1)[0]: rest.split("=", 1)[1] for w, rest in ins if w == "ARG" and "=" in rest}
    assert re.fullmatch(r"ollama/ollama:0\.20\.\d+@sha256:[0-9a-f]{64}", args["OLLAMA_IMAGE"])
    assert args["JUDGE_MODEL"] == "gemma4:31b"
    assert [rest for w, rest in ins if w == "FROM"] == ["${OLLAMA_IMAGE}"]
    for word, rest in ins:
        if word in ("RUN", "CMD", "ENTRYPOINT"):
            assert isinstance(json.loads(rest), list), (word, rest)  # exec form, no shell
        if word == "HEALTHCHECK":
            assert isinstance(json.loads(rest.split(" CMD ", 1)[1]), list)
    users = [rest for w, rest in ins if w == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert json.loads([r for w, r in ins if w == "ENTRYPOINT"][0]) == ["/bin/ollama"]
    assert json.loads([r for w, r in ins if w == "CMD"][0]) == ["serve"]
    env = " ".join(r for w, r in ins if w == "ENV")
    assert "OLLAMA_MODELS=/models" in env and "OLLAMA_NOPRUNE=1" in env


def test_makefile_uses_the_same_pins():
    mk = (JUDGE / "Makefile").read_text()
    df = (JUDGE / "Dockerfile").read_text()
    pin = re.search(r"ollama/ollama:[^\s@]+@sha256:[0-9a-f]{64}", df).group(0)
    assert pin in mk and "JUDGE_MODEL   ?= gemma4:31b" in mk
    lock = json.loads((JUDGE / "model.lock").read_text())
    assert lock["model"] == "gemma4:31b" and lock["ollama_image"] == pin


def test_lock_model_records_then_checks(tmp_path):
    lock = tmp_path / "model.lock"
    lock.write_text(json.dumps({"model": "gemma4:31b", "digest": None}))
    cmd = [sys.executable, str(JUDGE / "lock_model.py"), "--lock", str(lock), "--host"]
    with FakeOllama() as srv:
        first = subprocess.run(cmd + [srv.url], capture_output=True, text=True, timeout=60)
        assert first.returncode == 0, first.stderr
        assert json.loads(lock.read_text())["digest"] == DIGEST
        again = subprocess.run(cmd + [srv.url], capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "matches" in again.stdout
        lock.write_text(json.dumps({"model": "gemma4:31b", "digest": "sha256:" + "00" * 32}))
        moved = subprocess.run(cmd + [srv.url], capture_output=True, text=True, timeout=60)
        assert moved.returncode == 1 and "pins" in moved.stderr
    with FakeOllama(model="other:1b") as srv:
        missing = subprocess.run(cmd + [srv.url], capture_output=True, text=True, timeout=60)
        assert missing.returncode == 1 and "not on the server" in missing.stderr
