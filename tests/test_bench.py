"""Every benchmark in ``bench/`` stays alive: each runs with ``--quick`` (tiny inputs, a few seconds)
and prints its ratios (min / median / max over interleaved rounds) and the load average.

Nothing here asserts a time: what the ratios say belongs to the benchmarks' own output and
artifact.md. What is asserted: the benchmark exits 0, prints at least one ratio line whose three
numbers are finite and ordered (min <= median <= max), and prints the load average.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
RATIO = re.compile(r"ratio min / median / max (\S+) / (\S+) / (\S+) over (\d+) rounds")

NEEDS_DOCKER = {"runner.py", "shards.py"}
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def _marks(name: str) -> list:
    marks: list = []
    if name in NEEDS_DOCKER:
        marks += [pytest.mark.docker, pytest.mark.slow]
    if name in ("runner_inprocess.py", "served.py", "judge.py", "parse.py", "ocr.py"):
        marks.append(pytest.mark.slow)
    return marks


def test_every_benchmark_is_listed() -> None:
    """The set of benchmarks is what ``bench/`` holds (a new one is picked up, none is forgotten)."""
    assert "aggregate.py" in SCRIPTS and "score.py" in SCRIPTS and "cli.py" in SCRIPTS
    assert len(SCRIPTS) >= 12


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in SCRIPTS])
def test_quick_runs_and_prints_ratios(name: str, tmp_path: Path) -> None:
    if name == "ocr.py" and shutil.which("tesseract") is None:
        pytest.skip("tesseract binary not installed (Debian tesseract-ocr; `pointfail_runner prereqs` installs it)")
    if name == "shards.py" and not (REPO / "data" / "default").is_dir():
        pytest.skip("data/default not generated (make data)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TMPDIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "runner" / "src"),
                                          os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(BENCH / name), "--quick"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1800)
    out = proc.stdout
    assert proc.returncode == 0, f"{name} --quick exited {proc.returncode}:\n{out[-3000:]}\n{proc.stderr[-3000:]}"
    ratios = RATIO.findall(out)
    assert ratios, f"{name} --quick printed no ratio line:\n{out[-3000:]}"
    for lo, med, hi, n in ratios:
        a, b, c = float(lo), float(med), float(hi)
        assert all(math.isfinite(v) and v >= 0 for v in (a, b, c)), (name, lo, med, hi)
        assert a <= b <= c, (name, lo, med, hi)
        assert int(n) >= 1
    assert "load average 1/5/15 min:" in out, f"{name} --quick printed no load average"
