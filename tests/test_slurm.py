"""The Slurm executor's batch script on its own (issue 18): its ``#SBATCH`` directives, the
runtimes' argument lists, and the launcher's behaviour (shard from ``SLURM_ARRAY_TASK_ID``, attempts
recorded, ``SIGTERM`` forwarded) with a stand-in ``srun``. ``tests/test_slurm_cluster.py`` runs the
default study on a real single-node Slurm cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pointfail_runner import plan as pmod
from pointfail_runner import shards as smod
from pointfail_runner.executors import slurm

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
import builders  # noqa: E402
from test_plan_merge import STUDY  # noqa: E402  (the same two-benchmark study)

REPO = Path(__file__).resolve().parents[1]



def _tiny_plan(tmp_path: Path, shards: int = 3) -> tuple[pmod.Plan, smod.RunDir]:
    repo = tmp_path / "repo"
    (repo / "records" / "tiny").mkdir(parents=True)
    (repo / "records" / "tiny" / "study.toml").write_text(STUDY)
    builders.suite(repo / "data" / "tiny" / "alpha", n=4, name="alpha")
    builders.suite(repo / "data" / "tiny" / "beta", n=2, name="beta")
    plan = pmod.build_plan(repo / "records/tiny/study.toml", repo=repo, shards=shards, log=lambda s: None)
    run = smod.open_run(plan, tmp_path / "run")
    for i in range(shards):
        (run.shard("center", i)).mkdir(parents=True)
    return plan, run


def _mr(reference: str) -> smod.ModelRun:
    return smod.ModelRun(image="center", variant="cpu", tag="pointfail/center:cpu-x", id="sha256:" + "cd" * 32,
                         reference=reference)


def _directives(text: str) -> list[str]:
    return [line[len("#SBATCH "):] for line in text.splitlines() if line.startswith("#SBATCH ")]


def test_batch_script_directives_and_runtimes(tmp_path):
    plan, run = _tiny_plan(tmp_path)
    m = plan.model("center")
    s = slurm.SlurmSettings(runtime="docker", partition="cpu", max_parallel=2, time_limit="00:30:00", mem="2G",
                            python="/shared/venv/bin/python")
    text = slurm.batch_script(s, plan, run, m, _mr("sha256:" + "cd" * 32), [0, 2])
    assert text.startswith("#!/usr/bin/env python3\n#SBATCH ")
    d = _directives(text)
    assert "--array=0,2%2" in d and "--requeue" in d and "--time=00:30:00" in d and "--mem=2G" in d
    assert "--partition=cpu" in d and not any(x.startswith("--gres") for x in d)
    assert f"--output={run.root}/center/slurm/logs/%A_%a.out" in d
    cmd = slurm.step_command(s, plan, run, m, _mr("x"))
    assert cmd == ["/shared/venv/bin/python", "-m", "pointfail_runner", "shard", "--run-dir", str(run.root),
                   "--model", "center", "--index", "{index}", "--mem-limit", "2g", "--wall-clock", "21600"]
    compile(text, "array.sbatch", "exec")  # the script is Python; the directives are comments to it
    # GPUs per model become a gres request
    gm = m.model_copy(update={"gpus": 2})
    assert "--gres=gpu:2" in _directives(slurm.batch_script(s, plan, run, gm, _mr("x"), [0]))
    # apptainer: contained, no network, read-only binds except out/
    a = slurm.step_command(slurm.SlurmSettings(runtime="apptainer"), plan, run, m, _mr("/img/c.sif"))
    assert a[:9] == ["apptainer", "exec", "--containall", "--cleanenv", "--no-home", "--no-privs", "--net",
                     "--network", "none"]
    binds = [a[i + 1] for i, x in enumerate(a) if x == "--bind"]
    assert f"{run.root}/center/shards/{{index}}/requests:/requests:ro" in binds
    assert f"{run.root}/center/shards/{{index}}/out:/job:rw" in binds
    assert a[a.index("/img/c.sif") + 1:a.index("/img/c.sif") + 4] == ["/opt/venv/bin/python", "-m", "pointfail.running.worker"]
    with pytest.raises(pmod.PlanError, match="one --option per entry"):
        slurm.batch_script(slurm.SlurmSettings(sbatch_args=["--x\n#SBATCH --y"]), plan, run, m, _mr("x"), [0])


def test_launcher_runs_its_shard_records_attempts_and_forwards_sigterm(tmp_path):
    """The batch script run as Slurm runs it (python3, SLURM_* in the environment), with a stand-in
    srun that reports its arguments and waits for SIGTERM as a pyxis step would."""
    plan, run = _tiny_plan(tmp_path)
    report = tmp_path / "srun-report.json"
    fake = tmp_path / "srun"
    fake.write_text(f"""#!{sys.executable}
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))
json.dump({{"argv": sys.argv[1:], "offline": os.environ.get("HF_HUB_OFFLINE")}}, open({str(report)!r}, "w"))
time.sleep(60)
""")
    fake.chmod(0o755)
    s = slurm.SlurmSettings(runtime="pyxis", srun=str(fake), image_dir="/images")
    script = tmp_path / "array.sbatch"
    script.write_text(slurm.batch_script(s, plan, run, plan.model("center"), _mr("/images/c.sqsh"), [0, 1, 2]))
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_JOB_ID="42", SLURM_RESTART_COUNT="0")
    p = subprocess.Popen(["python3", str(script)], env=env)
    t0 = time.monotonic()
    while not report.exists() and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 143
    got = json.loads(report.read_text())
    argv = got["argv"]
    assert got["offline"] == "1"
    assert argv[:2] == ["--ntasks=1", "--container-image=/images/c.sqsh"]
    shard = run.root / "center" / "shards" / "1"
    assert f"--container-mounts={shard}/requests:/requests:ro,{shard}/images:/images:ro,{shard}/out:/job," \
           f"{shard}/no-weights:/weights:ro" in argv
    assert {"--container-readonly", "--no-container-remap-root", "--no-container-mount-home"} <= set(argv)
    w = argv.index("/opt/venv/bin/python")
    assert argv[w:w + 7] == ["/opt/venv/bin/python", "-m", "pointfail.running.worker", "--family", "center", "--weights",
                             "/weights"]
    assert argv.count("--requests") == 2 and "/requests/beta.jsonl" in argv
    events = [json.loads(x) for x in (shard / "attempts.jsonl").read_text().splitlines()]
    assert [(e["event"], e["job"], e["task"], e["restart"], e.get("rc")) for e in events] == [
        ("start", "42", "1", 0, None), ("end", "42", "1", 0, 143)]
    from pointfail_runner.merge import last_attempt

    assert last_attempt(shard)["rc"] == 143
    assert not (run.root / "center" / "shards" / "0" / "attempts.jsonl").exists()
