"""The default study on a real single-node Slurm cluster started by the test itself (issue 18):
Debian's ``munged``, ``slurmctld`` and ``slurmd`` on loopback with 4 CPUs of slots
(:mod:`slurm_cluster`); the study's runs submitted as one job array per model with the node-local
Docker executor, several shards running at once, one shard requeued in the middle of its run
(``scontrol requeue``), one cancelled (``scancel``) and rerun with ``submit --missing``; after
``merge``, the oracle judge and ``aggregate``, the tables are byte-identical to the committed
single-machine tables of ``records/default``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest
from docker.errors import NotFound

from pointfail_runner import plan as pmod
from pointfail_runner.executors import slurm

REPO = Path(__file__).resolve().parents[1]


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


@pytest.fixture
def run_dir(tmp_path, cluster):
    """The run folder on "shared storage"; afterwards, pass or fail, the cluster's jobs are cancelled and
    any shard container of this run still in the engine is removed."""
    from pointfail_runner.engine import ensure_engine

    d = tmp_path / "run"
    yield d
    cluster.run("scancel", "--full", "-u", "root", check=False)
    client = ensure_engine()
    try:
        for cid in _shard_containers(client, d, all=True):
            try:
                client.api.remove_container(cid, force=True)
            except NotFound:  # gone meanwhile
                pass
    finally:
        client.close()


def _shard_containers(client, root, *, all: bool = False) -> list[str]:
    """Ids of the worker containers whose job folder is under ``root``: this run's shards only (another
    test session on the same engine has its own), read from one list call (the high-level list inspects
    each container, and one removed meanwhile by its own run raises NotFound)."""
    return [c["Id"] for c in client.api.containers(all=all, filters={"label": "org.pointfail.family"})
            if (c.get("Labels") or {}).get("org.pointfail.job", "").startswith(str(root))]


def _default_data(base_lock: Path) -> Path:
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

    # always rendered and checked against the committed suite manifests: an older data/default can
    # hold the same images with other rows (e.g. before absent referents), which the image hashes miss
    code = reproduce.data(REPO, REPO / "records/default/study.toml", base_lock=base_lock, log=lambda s: None)
    assert code == reproduce.EXIT_OK, "the rendered suites differ from the committed manifests"
    assert matches(), "data/default does not hold the images the committed records were made from"
    return REPO / "data" / "default"


def _squeue(cluster, *job_ids: str) -> Optional[dict[tuple[str, int], str]]:
    """``{(job, index): state}`` of the arrays' tasks squeue still lists; ``None`` when squeue did not
    answer (a loaded controller), which is not the same as an empty queue. A job the controller has
    purged (``MinJobAge`` after it ended) is an error to ``squeue -j``: it lists nothing."""
    out = {}
    for j in job_ids:
        r = cluster.run("squeue", "-h", "-r", "-j", j, "-o", "%F %K %T", check=False)
        if r.returncode != 0 and "Invalid job id" in r.stderr:
            continue
        if r.returncode != 0:
            return None
        for line in r.stdout.splitlines():
            job, idx, state = line.split()
            out[(job, int(idx))] = state
    return out


def _answered(run, model: str, index: int, plan) -> int:
    from pointfail.running.jobs import read_responses
    from pointfail_runner.container import JobPaths

    p = JobPaths(run.shard(model, index))
    return sum(len(read_responses(p.cell_responses(c.benchmark), c.sample_ids).answered)
               for c in plan.model(model).shards[index].cells)


@pytest.mark.docker
@pytest.mark.slow
def test_default_study_as_slurm_arrays_merges_to_the_committed_tables(cluster, run_dir, tmp_path, base_lock):
    from pointfail_runner.engine import ensure_engine
    from pointfail_runner.merge import cell_status, merge, study_and_roots
    from pointfail_runner.reproduce import compare_tables

    client = ensure_engine()
    _default_data(base_lock)
    plan = pmod.build_plan(REPO / "records/default/study.toml", repo=REPO, shard_size=100, log=lambda s: None)
    assert [len(m.shards) for m in plan.models] == [4, 4]
    plan_file = pmod.write_plan(plan, tmp_path / "plan.json")
    # limits far above the ~5 min the shards take on an idle 2-core machine: on a shared one (load 15)
    # an ocr shard of 100 sheets took over 40 min
    settings = slurm.SlurmSettings(runtime="docker", cpus_per_task=1, mem="2G", time_limit="03:00:00",
                                   python=sys.executable, wall_clock_s=3 * 3600)
    sub = slurm.submit(plan_file, repo=REPO, run_dir=run_dir, settings=settings, client=client, env=cluster.env,
                       base_lock=base_lock)
    run = sub.run
    jobs = {m: d["job_id"] for m, d in sub.detail.items()}
    assert set(jobs) == {"center", "ocr"} and sub.shards == {"center": [0, 1, 2, 3], "ocr": [0, 1, 2, 3]}

    # watch the arrays: how many shards run at once (Slurm's view and the engine's), requeue one ocr
    # shard in the middle of its run and cancel another
    most_running, most_containers = 0, 0
    requeued = cancelled = None
    t0 = time.monotonic()
    while True:
        assert time.monotonic() - t0 < 4 * 3600, f"arrays not done after four hours\n{cluster.logs()}"
        q = _squeue(cluster, *jobs.values())
        if q is None:
            time.sleep(1.0)
            continue
        running = [k for k, s in q.items() if s == "RUNNING"]
        most_running = max(most_running, len(running))
        most_containers = max(most_containers, len(_shard_containers(client, run.root)))
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
        time.sleep(1.0)
    assert most_running >= 3, f"at most {most_running} shards ran at once"
    assert most_containers >= 2, f"at most {most_containers} shard containers ran at once"
    assert requeued and cancelled, "no ocr shard was caught mid-run"

    # the requeued shard ran twice (restart 0 killed by SIGTERM, restart 1 finished) and resumed
    attempts = [json.loads(x) for x in (run.shard("ocr", requeued[0]) / "attempts.jsonl").read_text().splitlines()]
    ends = [(a["restart"], a["rc"]) for a in attempts if a["event"] == "end"]
    assert ends[0][0] == 0 and ends[0][1] != 0 and ends[-1] == (1, 0), attempts
    assert not _shard_containers(client, run.root, all=True), "a shard container was left"
    # the cancelled shard is the only one not done; rerun only it
    states = cell_status(plan, run, scheduler=slurm.scheduler_states(run, plan, env=cluster.env))
    assert {(c.model, c.shard) for c in states if c.state != "done"} == {("ocr", cancelled[0])}
    again = slurm.submit(plan_file, repo=REPO, run_dir=run_dir, settings=settings, client=client, env=cluster.env,
                         base_lock=base_lock, missing=True)
    assert again.shards == {"ocr": [cancelled[0]]}
    while _squeue(cluster, again.detail["ocr"]["job_id"]) != {}:
        assert time.monotonic() - t0 < 4 * 3600, f"rerun not done after four hours\n{cluster.logs()}"
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
