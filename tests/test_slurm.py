"""The Slurm executor (issue 18).

* The batch script on its own: its ``#SBATCH`` directives, the runtimes' argument lists, and the
  launcher's behaviour (shard from ``SLURM_ARRAY_TASK_ID``, attempts recorded, ``SIGTERM`` forwarded)
  with a stand-in ``srun``.
* A real single-node Slurm cluster started by the test itself (Debian's ``munged``, ``slurmctld``,
  ``slurmd`` on loopback, 4 CPUs of slots): the default study's runs submitted as one job array per
  model with the node-local Docker executor, several shards running at once, one shard requeued in the
  middle of its run (``scontrol requeue``), one cancelled (``scancel``) and rerun with
  ``submit --missing``; after ``merge``, the oracle judge and ``aggregate``, the tables are
  byte-identical to the committed single-machine tables of ``records/default``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

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
    assert a[a.index("/img/c.sif") + 1:a.index("/img/c.sif") + 4] == ["/opt/venv/bin/python", "-m", "pointfail.worker"]
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
    assert argv[w:w + 7] == ["/opt/venv/bin/python", "-m", "pointfail.worker", "--family", "center", "--weights",
                             "/weights"]
    assert argv.count("--requests") == 2 and "/requests/beta.jsonl" in argv
    events = [json.loads(x) for x in (shard / "attempts.jsonl").read_text().splitlines()]
    assert [(e["event"], e["job"], e["task"], e["restart"], e.get("rc")) for e in events] == [
        ("start", "42", "1", 0, None), ("end", "42", "1", 0, 143)]
    from pointfail_runner.merge import last_attempt

    assert last_attempt(shard)["rc"] == 143
    assert not (run.root / "center" / "shards" / "0" / "attempts.jsonl").exists()


# ------------------------------------------------------------------ a real cluster, the default study


def _ensure_slurm_packages() -> None:
    from pointfail_runner.prereqs import SLURM_PACKAGES, ensure_packages

    if not all(shutil.which(x) for x in ("slurmctld", "slurmd", "munged", "sbatch")):
        ensure_packages(SLURM_PACKAGES)  # root on Debian installs them, else a clear error with the command


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from slurm_cluster import SlurmCluster

    _ensure_slurm_packages()
    with SlurmCluster(tmp_path_factory.mktemp("slurm"), cpus=4) as c:
        yield c


def _default_data() -> Path:
    """data/default as the committed records were made from it (every image's sha256 is the one the
    committed records name), rendered in the pinned suites image as ``make data`` does when it is not."""
    from pointfail.records import read_records, sha256_file
    from pointfail_runner import reproduce

    def matches() -> bool:
        for b in ("sheets", "text", "web"):
            for r in read_records(REPO / "records/default/center" / f"{b}.jsonl"):
                p = REPO / r.image.path
                if not p.is_file() or sha256_file(p) != r.image.sha256:
                    return False
        return True

    if not matches():
        reproduce.data(REPO, REPO / "records/default/study.toml")
    assert matches(), "data/default does not hold the images the committed records were made from"
    return REPO / "data" / "default"


def _squeue(cluster, *job_ids: str) -> Optional[dict[tuple[str, int], str]]:
    """``{(job, index): state}`` of the arrays' tasks squeue still lists; ``None`` when squeue did not
    answer (a loaded controller), which is not the same as an empty queue."""
    out = {}
    for j in job_ids:
        r = cluster.run("squeue", "-h", "-r", "-j", j, "-o", "%F %K %T", check=False)
        if r.returncode != 0:
            return None
        for line in r.stdout.splitlines():
            job, idx, state = line.split()
            out[(job, int(idx))] = state
    return out


def _answered(run, model: str, index: int, plan) -> int:
    from pointfail.jobs import read_responses
    from pointfail_runner.container import JobPaths

    p = JobPaths(run.shard(model, index))
    return sum(len(read_responses(p.cell_responses(c.benchmark), c.sample_ids).answered)
               for c in plan.model(model).shards[index].cells)


@pytest.mark.docker
@pytest.mark.slow
def test_default_study_as_slurm_arrays_merges_to_the_committed_tables(cluster, tmp_path):
    from pointfail_runner.engine import ensure_engine
    from pointfail_runner.merge import cell_status, merge, study_and_roots
    from pointfail_runner.reproduce import compare_tables

    client = ensure_engine()
    _default_data()
    plan = pmod.build_plan(REPO / "records/default/study.toml", repo=REPO, shard_size=100, log=lambda s: None)
    assert [len(m.shards) for m in plan.models] == [4, 4]
    plan_file = pmod.write_plan(plan, tmp_path / "plan.json")
    run_dir = tmp_path / "run"
    settings = slurm.SlurmSettings(runtime="docker", cpus_per_task=1, mem="2G", time_limit="00:40:00",
                                   python=sys.executable, wall_clock_s=2400)
    sub = slurm.submit(plan_file, repo=REPO, run_dir=run_dir, settings=settings, client=client, env=cluster.env)
    run = sub.run
    jobs = {m: d["job_id"] for m, d in sub.detail.items()}
    assert set(jobs) == {"center", "ocr"} and sub.shards == {"center": [0, 1, 2, 3], "ocr": [0, 1, 2, 3]}

    # watch the arrays: how many shards run at once (Slurm's view and the engine's), requeue one ocr
    # shard in the middle of its run and cancel another
    most_running, most_containers = 0, 0
    requeued = cancelled = None
    t0 = time.monotonic()
    while True:
        q = _squeue(cluster, *jobs.values())
        if q is None:
            time.sleep(1.0)
            continue
        running = [k for k, s in q.items() if s == "RUNNING"]
        most_running = max(most_running, len(running))
        live = client.containers.list(filters={"label": "org.pointfail.family"})
        most_containers = max(most_containers, sum(1 for c in live
                                                   if c.labels.get("org.pointfail.job", "").startswith(str(run.root))))
        for job, idx in running:
            if job != jobs["ocr"] or (requeued and cancelled):
                continue
            n = _answered(run, "ocr", idx, plan)
            if 5 <= n < plan.model("ocr").shards[idx].n_samples - 10:
                if requeued is None:
                    cluster.run("scontrol", "requeue", f"{job}_{idx}")
                    requeued = (idx, n)
                elif cancelled is None and idx != requeued[0]:
                    cluster.run("scancel", f"{job}_{idx}")
                    cancelled = (idx, n)
        if not q:
            break
        assert time.monotonic() - t0 < 7200, f"arrays still queued after two hours: {q}\n{cluster.logs()}"
        time.sleep(1.0)
    assert most_running >= 3, f"at most {most_running} shards ran at once"
    assert most_containers >= 2, f"at most {most_containers} shard containers ran at once"
    assert requeued and cancelled, "no ocr shard was caught mid-run"

    # the requeued shard ran twice (restart 0 killed by SIGTERM, restart 1 finished) and resumed
    attempts = [json.loads(x) for x in (run.shard("ocr", requeued[0]) / "attempts.jsonl").read_text().splitlines()]
    ends = [(a["restart"], a["rc"]) for a in attempts if a["event"] == "end"]
    assert ends[0][0] == 0 and ends[0][1] != 0 and ends[-1] == (1, 0), attempts
    assert not [c for c in client.containers.list(all=True, filters={"label": "org.pointfail.family"})
                if c.labels.get("org.pointfail.job", "").startswith(str(run.root))], "a shard container was left"
    # the cancelled shard is the only one not done; rerun only it
    states = cell_status(plan, run, scheduler=slurm.scheduler_states(run, plan, env=cluster.env))
    assert {(c.model, c.shard) for c in states if c.state != "done"} == {("ocr", cancelled[0])}
    again = slurm.submit(plan_file, repo=REPO, run_dir=run_dir, settings=settings, client=client, env=cluster.env,
                         missing=True)
    assert again.shards == {"ocr": [cancelled[0]]}
    while _squeue(cluster, again.detail["ocr"]["job_id"]) != {}:
        assert time.monotonic() - t0 < 7200
        time.sleep(1.0)
    assert all(c.state == "done" for c in cell_status(plan, run))

    # merge, judge (oracle), aggregate: the committed tables, byte for byte
    records = tmp_path / "records" / "default"
    records.mkdir(parents=True)
    shutil.copyfile(REPO / "records/default/study.toml", records / "study.toml")
    study, roots = study_and_roots(plan, REPO, records_root=records)
    res = merge(plan, run, repo=REPO, study=study, roots=roots, log=lambda s: None)
    assert not res.incomplete and sum(res.written.values()) == 800
    for cmd in (["judge", str(records), "--judge", "oracle", "--data-root", str(REPO), "--no-progress"],
                ["aggregate", str(records)]):
        p = subprocess.run([sys.executable, "-m", "pointfail", *cmd], capture_output=True, text=True, timeout=1800)
        assert p.returncode == 0, p.stdout + p.stderr
    assert compare_tables(records / "tables", REPO / "records/default/tables") == []
