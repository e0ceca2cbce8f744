"""``import pointfail`` (and the scoring path) must not pull in heavy or optional packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("torch", "transformers", "docker", "ollama")


def _loaded_after(code: str) -> list[str]:
    probe = (
        "import json, sys\n"
        f"{code}\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_probe_detects_a_heavy_import():
    # the probe itself works: importing one of the packages is seen
    assert "docker" in _loaded_after("import docker")


def test_import_pointfail_is_light():
    assert _loaded_after("import pointfail") == []


def test_scoring_path_is_light():
    code = (
        "import pointfail\n"
        "from pointfail import scorePrediction, score_prediction\n"
        "import pointfail.geometry, pointfail.scoring, pointfail.commands.score\n"
        "r = score_prediction('molmo', '<point x=\"5\" y=\"5\">a</point>', image_size=(10, 10), box=[0, 0, 10, 10])\n"
        "assert r.outcome == 'hit'\n"
    )
    assert _loaded_after(code) == []
