"""Plans, shard folders, status and the deterministic merge (issue 18), without a Docker Engine: the
worker's part is played by the real ``center`` backend answering the staged requests in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from pointfail.running.backends.base import WorkItem
from pointfail.running.backends.center import CenterBackend
from pointfail.running.jobs import JobRequest, ResponseWriter
from pointfail.inputs.study import load_study
from pointfail_runner import merge as mmod
from pointfail_runner import plan as pmod
from pointfail_runner import shards as smod
from pointfail_runner.container import IMAGES_MOUNT, JobPaths

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
import builders  # noqa: E402

STUDY = """[study]
name = "tiny"

[[benchmarks]]
name = "alpha"
loader = "suite"

[[benchmarks]]
name = "beta"
loader = "suite"

[[models]]
name = "center"
family = "center"
image = "center"

[[models]]
name = "center2"
family = "center"
image = "center"
max_new_tokens = 16
"""


@pytest.fixture
def study_dir(tmp_path: Path) -> Path:
    """A checkout-like folder: images/ and src/pointfail (for find_repo), records/tiny/study.toml,
    data/tiny/{alpha,beta} (7 and 5 samples)."""
    repo = tmp_path / "repo"
    (repo / "images").mkdir(parents=True)
    (repo / "src" / "pointfail").mkdir(parents=True)
    (repo / "records" / "tiny").mkdir(parents=True)
    (repo / "records" / "tiny" / "study.toml").write_text(STUDY)
    builders.suite(repo / "data" / "tiny" / "alpha", n=7, name="alpha")
    builders.suite(repo / "data" / "tiny" / "beta", n=5, name="beta")
    return repo


def _plan(repo: Path, **kw) -> pmod.Plan:
    return pmod.build_plan(repo / "records/tiny/study.toml", repo=repo, log=lambda s: None, **kw)


def test_split_even_lengths_differ_by_at_most_one():
    assert pmod.split_even(12, 5) == [(0, 2), (2, 4), (4, 7), (7, 9), (9, 12)]
    assert pmod.split_even(3, 3) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError, match="cannot split 2 items into 3"):
        pmod.split_even(2, 3)


def test_plan_cells_span_benchmarks_and_are_deterministic(study_dir, tmp_path):
    plan = _plan(study_dir, shard_size=5)
    # 12 samples per model, target 5 -> 3 shards of 4 (0..3 alpha, 4..6 alpha + 0 beta, 1..4 beta)
    m = plan.model("center")
    assert [s.n_samples for s in m.shards] == [4, 4, 4]
    assert [[(c.benchmark, c.sample_ids[0], len(c.sample_ids)) for c in s.cells] for s in m.shards] == [
        [("alpha", "alpha_0000", 4)],
        [("alpha", "alpha_0004", 3), ("beta", "beta_0000", 1)],
        [("beta", "beta_0001", 4)]]
    assert plan.benchmarks == {"alpha": 7, "beta": 5}
    assert plan.study_file == "records/tiny/study.toml" and plan.shard_size == 5
    # the same inputs give the same bytes; the file reads back to the same plan
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    pmod.write_plan(plan, a)
    pmod.write_plan(_plan(study_dir, shard_size=5), b)
    assert a.read_bytes() == b.read_bytes()
    assert pmod.load_plan(a, repo=study_dir) == plan
    assert json.loads(a.read_text())["schema"] == "pointfail.plan/1"
    # exact shard counts, and the default: one shard (one container) per model
    assert [s.n_samples for s in _plan(study_dir, shards=5).model("center2").shards] == [2, 2, 3, 2, 3]
    assert [len(m.shards) for m in _plan(study_dir).models] == [1, 1]


def test_stale_or_tampered_plans_are_refused(study_dir, tmp_path):
    p = pmod.write_plan(_plan(study_dir, shards=2), tmp_path / "plan.json")
    data = json.loads(p.read_text())
    data["models"][0]["shards"][1]["cells"][0]["sample_ids"].append("alpha_0000")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(pmod.PlanError, match="not a valid plan: .*sorted and unique"):
        pmod.load_plan(bad)
    data = json.loads(p.read_text())
    data["models"][0]["name"] = "../x"
    bad.write_text(json.dumps(data))
    with pytest.raises(pmod.PlanError, match="is not a name"):
        pmod.load_plan(bad)
    study = study_dir / "records/tiny/study.toml"
    study.write_text(study.read_text().replace("max_new_tokens = 16", "max_new_tokens = 17"))
    with pytest.raises(pmod.PlanError, match="made for another version of .*plan again"):
        pmod.load_plan(p, repo=study_dir)


def _stage(repo: Path, plan: pmod.Plan, run_dir: Path, shards=None):
    study = load_study(repo / "records/tiny/study.toml")
    from pointfail.inputs.study import Roots

    roots = Roots.for_study(study, repo, records=run_dir.parent / "records")
    run = smod.open_run(plan, run_dir)
    sel = shards if shards is not None else smod.select_shards(plan)
    smod.stage_shards(plan, run, study=study, roots=roots, shards=sel, log=lambda s: None)
    return study, roots, run


def _answer(run: smod.RunDir, model: str, index: int, plan: pmod.Plan, *, limit=None, twice: bool = False) -> int:
    """Play the worker of one shard: the center backend answers each staged request (the image read
    from the shard's images/ folder, as the container sees /images), appended through the one writer."""
    paths = JobPaths(run.shard(model, index))
    backend = CenterBackend()
    n = 0
    for bench in plan.benchmarks:
        lines = paths.cell_requests(bench).read_text().splitlines()
        with ResponseWriter(paths.cell_responses(bench)) as w:
            for line in lines[:limit]:
                req = JobRequest.model_validate_json(line)
                assert req.image.startswith(f"{IMAGES_MOUNT}/{bench}/")
                img = Image.open(paths.images / req.image[len(IMAGES_MOUNT) + 1:]).convert("RGB")
                out = backend.generate([WorkItem(sample_id=req.sample_id, image=img, image_path=req.image,
                                                 prompt=req.prompt, task=req.task,
                                                 max_new_tokens=req.max_new_tokens)])[0]
                for _ in range(2 if twice else 1):
                    w.write({"sample_id": req.sample_id, **out, "seconds": 0.0, "error": None})
                n += 1
    return n


def _write_model_runs(run: smod.RunDir, plan: pmod.Plan) -> None:
    for m in plan.models:
        run.write_model_run(m.name, smod.ModelRun(image="center", variant="cpu", tag="pointfail/center:cpu-x",
                                                  id="sha256:" + "ab" * 32, reference="sha256:" + "ab" * 32))


def test_stage_writes_one_request_file_per_benchmark_and_only_the_images(study_dir, tmp_path):
    plan = _plan(study_dir, shard_size=5)
    _, _, run = _stage(study_dir, plan, tmp_path / "run")
    assert run.plan.read_bytes() == plan.to_bytes()
    p = JobPaths(run.shard("center", 1))
    reqs = {b: [json.loads(x) for x in p.cell_requests(b).read_text().splitlines()] for b in ("alpha", "beta")}
    assert [r["sample_id"] for r in reqs["alpha"]] == ["alpha_0004", "alpha_0005", "alpha_0006"]
    assert [r["sample_id"] for r in reqs["beta"]] == ["beta_0000"]
    assert reqs["beta"][0]["image"] == "/images/beta/000000.png"
    assert sorted(x.name for x in (p.images / "alpha").iterdir()) == ["000000.png", "000001.png", "000002.png"]
    # shard 0 has no beta sample: an empty request file, so every shard's worker command is the same
    assert JobPaths(run.shard("center", 0)).cell_requests("beta").read_bytes() == b""
    # max_new_tokens comes from the study's model entry
    assert {r["max_new_tokens"] for r in reqs["alpha"]} == {128}
    q = json.loads(JobPaths(run.shard("center2", 1)).cell_requests("alpha").read_text().splitlines()[0])
    assert q["max_new_tokens"] == 16
    # a second plan cannot reuse the run folder
    with pytest.raises(pmod.PlanError, match="holds another plan"):
        smod.open_run(_plan(study_dir, shards=2), tmp_path / "run")


def test_status_and_merge_are_deterministic_whatever_the_sharding(study_dir, tmp_path):
    """The same answers merged from 1 shard and from 3 shards where one shard answered every sample
    twice (a requeued shard) and one was cut short, then finished: byte-identical records."""
    plan1 = _plan(study_dir)
    study, roots1, run1 = _stage(study_dir, plan1, tmp_path / "one" / "run")
    _write_model_runs(run1, plan1)
    for m in plan1.models:
        _answer(run1, m.name, 0, plan1)
    res1 = mmod.merge(plan1, run1, repo=study_dir, study=study, roots=roots1, log=lambda s: None)
    assert res1.written == {("center", "alpha"): 7, ("center", "beta"): 5, ("center2", "alpha"): 7,
                            ("center2", "beta"): 5}
    assert not res1.incomplete and res1.duplicates == 0

    plan3 = _plan(study_dir, shard_size=5)
    _, roots3, run3 = _stage(study_dir, plan3, tmp_path / "three" / "run")
    _write_model_runs(run3, plan3)
    for m in plan3.models:
        _answer(run3, m.name, 0, plan3, twice=True)
        _answer(run3, m.name, 2, plan3)
        _answer(run3, m.name, 1, plan3, limit=1)  # cut short: alpha_0004 and beta_0000 only
    status = {(c.model, c.benchmark, c.shard): (c.answered, c.expected, c.state, c.duplicates)
              for c in mmod.cell_status(plan3, run3)}
    assert status[("center", "alpha", 0)] == (4, 4, "done", 4)
    assert status[("center", "alpha", 1)] == (1, 3, "partial", 0)
    assert status[("center", "beta", 1)] == (1, 1, "done", 0)
    assert mmod.missing_shards(mmod.cell_status(plan3, run3)) == {"center": [1], "center2": [1]}
    part = mmod.merge(plan3, run3, repo=study_dir, study=study, roots=roots3, log=lambda s: None)
    assert part.incomplete == {("center", "alpha"): 2, ("center2", "alpha"): 2}
    assert set(part.written) == {("center", "beta"), ("center2", "beta")}
    # rerun only the missing shard: restaging asks only the unanswered samples again
    _stage(study_dir, plan3, tmp_path / "three" / "run", shards=[(plan3.model("center"), 1),
                                                                  (plan3.model("center2"), 1)])
    assert len(JobPaths(run3.shard("center", 1)).cell_requests("alpha").read_text().splitlines()) == 2
    for m in plan3.models:
        _answer(run3, m.name, 1, plan3)
    assert all(c.state == "done" for c in mmod.cell_status(plan3, run3))
    res3 = mmod.merge(plan3, run3, repo=study_dir, study=study, roots=roots3, log=lambda s: None)
    assert res3.written == res1.written and res3.duplicates == 8  # 4 samples x 2 models answered twice
    for m in ("center", "center2"):
        for b in ("alpha", "beta"):
            one = (roots1.records / m / f"{b}.jsonl").read_bytes()
            assert one == (roots3.records / m / f"{b}.jsonl").read_bytes()
    ids = [json.loads(x)["sample_id"] for x in (roots3.records / "center" / "alpha.jsonl").read_text().splitlines()]
    assert ids == sorted(ids) and len(ids) == len(set(ids)) == 7
    rec = json.loads((roots3.records / "center" / "beta.jsonl").read_text().splitlines()[0])
    assert rec["provenance"]["image_digest"] == "sha256:" + "ab" * 32
    assert rec["image"]["path"] == "data/tiny/beta/data/test/0000.png"


def test_a_hostile_response_line_becomes_an_explained_error_outcome(study_dir, tmp_path):
    plan = _plan(study_dir)
    study, roots, run = _stage(study_dir, plan, tmp_path / "run")
    _write_model_runs(run, plan)
    for m in plan.models:
        _answer(run, m.name, 0, plan)
    out = JobPaths(run.shard("center", 0)).cell_responses("beta")
    lines = out.read_bytes().split(b"\n")
    lines[0] = b'{"sample_id": "beta_0000", "raw_text": 5}'
    out.write_bytes(b"\n".join(lines))
    res = mmod.merge(plan, run, repo=study_dir, study=study, roots=roots, log=lambda s: None)
    assert res.invalid == 1 and res.written[("center", "beta")] == 5
    rec = json.loads((roots.records / "center" / "beta.jsonl").read_text().splitlines()[0])
    assert rec["outcome"] == "error" and "invalid response line 1" in rec["error"]


def test_attempts_give_running_and_failed_states(tmp_path):
    d = tmp_path / "shard"
    d.mkdir()
    assert mmod.last_attempt(d) is None
    with open(d / "attempts.jsonl", "w") as f:
        f.write(json.dumps({"event": "start", "job": "7", "restart": 0, "time": 1.0}) + "\n")
        f.write(json.dumps({"event": "end", "job": "7", "restart": 0, "time": 2.0, "rc": 143}) + "\n")
        f.write("not json\n")
        f.write(json.dumps({"event": "start", "job": "7", "restart": 1, "time": 3.0}) + "\n")
    a = mmod.last_attempt(d)
    assert (a["restart"], a["started"], a["ended"]) == (1, 3.0, None)
    assert mmod._state(1, 3, None, a) == "running"
    assert mmod._state(1, 3, "PENDING", a) == "queued"
    assert mmod._state(3, 3, "RUNNING", a) == "done"
    assert mmod._state(0, 3, None, {"started": 1.0, "ended": 2.0, "rc": 2}) == "failed"
    assert mmod._state(0, 3, "TIMEOUT", None) == "failed"
    assert mmod._state(2, 3, None, None) == "partial"


def test_worker_answers_several_pairs_with_one_model_load(tmp_path):
    """One process, one model load, every cell of a shard: ``--requests``/``--responses`` in pairs;
    nothing is loaded when every pair is already answered."""
    img = tmp_path / "a.png"
    Image.new("RGB", (40, 20), (9, 9, 9)).save(img)
    pairs = []
    for cell, n in (("alpha", 3), ("beta", 0), ("gamma", 2)):
        req = tmp_path / "requests" / f"{cell}.jsonl"
        req.parent.mkdir(exist_ok=True)
        req.write_text("".join(json.dumps({"sample_id": f"{cell}_{i}", "image": str(img), "prompt": "Point.",
                                           "task": "point", "max_new_tokens": 8}) + "\n" for i in range(n)))
        pairs += ["--requests", str(req), "--responses", str(tmp_path / "out" / f"{cell}.jsonl")]
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    run = [sys.executable, "-m", "pointfail.running.worker", "--family", "center", *pairs]
    p = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("loaded family center") == 1
    got = {c: [json.loads(x) for x in (tmp_path / "out" / f"{c}.jsonl").read_text().splitlines()]
           for c in ("alpha", "beta", "gamma")}
    assert [r["sample_id"] for r in got["alpha"]] == ["alpha_0", "alpha_1", "alpha_2"] and got["beta"] == []
    assert got["gamma"][0]["raw_text"] == '{"point": [20, 10]}'
    again = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and "loaded family" not in again.stderr and "no model loaded" in again.stderr
    odd = subprocess.run(run[:-2], capture_output=True, text=True, env=env, timeout=120)
    assert odd.returncode == 2 and "3 --requests but 2 --responses" in odd.stderr


@pytest.mark.docker
@pytest.mark.slow
def test_local_executor_shards_merge_to_the_single_machine_records(study_dir, tmp_path, base_lock):
    """Real containers: the plan's shards (3 per model, 2 at a time, each one container answering
    every cell of its shard) merged, against ``pointfail-runner run`` on one machine: the same records
    but for the measured time per sample (``response.seconds``)."""
    from pointfail_runner.engine import ensure_engine
    from pointfail_runner.executors import local
    from pointfail_runner.merge import study_and_roots
    from pointfail_runner.study import run_study

    repo = Path(__file__).resolve().parents[1]
    client = ensure_engine()
    study_file = study_dir / "records/tiny/study.toml"
    for p in [study_dir / "data", *(study_dir / "data").rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    single = tmp_path / "single"
    run_study(study_file, repo=repo, data_root=study_dir / "data/tiny", work_root=single / "work",
              records_root=single / "records", progress=False, client=client, base_lock=base_lock,
              log=lambda s: None)
    plan = pmod.build_plan(study_file, repo=repo, data_root=study_dir / "data/tiny", shards=3, log=lambda s: None)
    plan_file = pmod.write_plan(plan, tmp_path / "plan.json")
    # a container left on shard 0 by a runner that died (SIGKILL) is removed before the shard runs
    orphan = client.containers.create(_center_image(client, repo), command=["--help"],
                                      labels={"org.pointfail.job": str((tmp_path / "run/center/shards/0").resolve())},
                                      name=f"pointfail-test18-orphan-{os.getpid()}")
    sub = local.submit(plan_file, repo=repo, run_dir=tmp_path / "run", data_root=study_dir / "data/tiny",
                       concurrency=2, client=client, base_lock=base_lock, log=lambda s: None)
    from docker.errors import NotFound

    with pytest.raises(NotFound):
        orphan.reload()
    results = [v for k, v in sub.detail.items() if k != "seconds"]
    assert len(results) == 6 and all(r.answered == r.requested == 4 for r in results)
    hc = results[0].settings["HostConfig"]
    assert (hc["NetworkMode"], hc["ReadonlyRootfs"], hc["CapDrop"], hc["Memory"]) == ("none", True, ["ALL"], 8 << 30)
    assert results[0].settings["Config"]["User"] == "10001:10001"
    cmd = results[0].settings["Config"]["Cmd"]
    assert cmd.count("--requests") == 2  # one container answers every cell of its shard
    study, roots = study_and_roots(plan, repo, data_root=study_dir / "data/tiny", records_root=tmp_path / "merged")
    res = mmod.merge(plan, sub.run, repo=repo, study=study, roots=roots, log=lambda s: None)
    assert not res.incomplete and sum(res.written.values()) == 24
    def untimed(p: Path) -> list[dict]:
        rows = [json.loads(x) for x in p.read_text().splitlines()]
        for r in rows:
            assert r["response"].pop("seconds") >= 0
        return rows

    for m in ("center", "center2"):
        for b in ("alpha", "beta"):
            assert untimed(tmp_path / "merged" / m / f"{b}.jsonl") == untimed(single / "records" / m / f"{b}.jsonl")
    # a second submit finds every cell done and starts no container
    again = local.submit(plan_file, repo=repo, run_dir=tmp_path / "run", data_root=study_dir / "data/tiny",
                         missing=True, client=client, base_lock=base_lock, log=lambda s: None)
    assert again.shards == {}


def test_missing_shards_leaves_running_and_queued_shards_alone():
    c = mmod.CellStatus
    rows = [c("m", "a", 0, 4, 4, 0, 0, "done"), c("m", "b", 0, 2, 0, 0, 0, "pending"),
            c("m", "a", 1, 4, 1, 0, 0, "running"), c("m", "a", 2, 4, 0, 0, 0, "queued"),
            c("m", "a", 3, 4, 2, 0, 0, "failed"), c("n", "a", 0, 4, 3, 0, 0, "partial")]
    assert mmod.missing_shards(rows) == {"m": [0, 3], "n": [0]}


def test_plan_and_run_give_an_unpinned_model_the_revision_its_study_lock_holds(study_dir, tmp_path, monkeypatch):
    """One rule (:func:`pointfail_runner.study.locked_model`) for ``run`` and every executor: a model
    the study leaves unpinned runs at the commit ``study.lock`` holds for it. The executors' model-run
    file passes it to the worker, ``run_study`` passes the same ``--revision``, and the merged records
    name it in their provenance; a model the lock does not hold stays unpinned."""
    from types import SimpleNamespace

    from pointfail.inputs.study import StudyError
    from pointfail.inputs.studylock import SCHEMA, lock_path, write_lock
    from pointfail_runner import container as cmod
    from pointfail_runner import images as imod
    from pointfail_runner.executors import pin_models
    from pointfail_runner.study import run_study

    rev = "c0ffee" + "0" * 34
    study_file = study_dir / "records/tiny/study.toml"
    write_lock(lock_path(study_file), {"schema": SCHEMA, "benchmarks": {}, "models": {
        "center2": {"repo_id": "owner/center2", "repo_type": "model", "revision": rev, "files": {}}}})
    built = imod.BuiltImage(name="center", variant="cpu", tag="pointfail/center:cpu-x", id="sha256:" + "ab" * 32,
                            seconds=0.0, built=False)
    monkeypatch.setattr(imod, "ensure_image", lambda client, repo, name, **kw: built)
    client = SimpleNamespace(images=SimpleNamespace(get=lambda ref: SimpleNamespace(tag=lambda *a: True)))

    plan = _plan(study_dir, shard_size=5)
    study, roots, run = _stage(study_dir, plan, tmp_path / "run")
    pinned = pin_models(plan, run, repo=study_dir, study=study, roots=roots, models=["center", "center2"],
                        variant="cpu", client=client, reference=lambda b, m: b.id, log=lambda s: None)
    assert (pinned["center"].revision, pinned["center2"].revision) == ("", rev)
    args = run.read_model_run("center2").worker_args("center", ["alpha"], device="cpu", requests_mount="/rq",
                                                     responses_mount="/rs", weights_mount="/w")
    assert args[args.index("--revision") + 1] == rev
    assert "--revision" not in run.read_model_run("center").worker_args(
        "center", ["alpha"], device="cpu", requests_mount="/rq", responses_mount="/rs", weights_mount="/w")

    seen = {}

    def run_job(client, tag, *, family, extra_args, **kw):
        seen["extra_args"] = extra_args
        raise cmod.ContainerFailed("stopped by the test", exit_code=1, timed_out=False, log_tail=[])

    monkeypatch.setattr(cmod, "run_job", run_job)
    with pytest.raises(StudyError, match="stopped by the test"):
        run_study(study_file, repo=study_dir, models=["center2"], benchmarks=["alpha"], work_root=tmp_path / "work",
                  records_root=tmp_path / "single", progress=False, client=client, log=lambda s: None)
    assert seen["extra_args"] == ["--revision", rev]

    for m in plan.models:
        for i in range(len(m.shards)):
            _answer(run, m.name, i, plan)
    res = mmod.merge(plan, run, repo=study_dir, study=study, roots=roots, log=lambda s: None)
    assert not res.incomplete
    prov = {m: json.loads((roots.records / m / "alpha.jsonl").read_text().splitlines()[0])["provenance"]
            for m in ("center", "center2")}
    assert (prov["center"].get("model_revision"), prov["center2"]["model_revision"]) == (None, rev)


def _center_image(client, repo: Path) -> str:
    """The content-keyed tag of ``images/center`` for this checkout (the engine has it: run_study built it)."""
    from pointfail_runner import base as base_mod
    from pointfail_runner import locks
    from pointfail_runner.images import image_key

    base = base_mod.find_base(client, base_mod.read_lock(repo / "images/base/base.lock.json"), None)
    assert base is not None and locks.lock_path(repo / "images" / "center", "cpu").is_file()
    tag = f"pointfail/center:cpu-{image_key(repo, 'center', 'cpu', base.id, None)[:12]}"
    client.images.get(tag)
    return tag
