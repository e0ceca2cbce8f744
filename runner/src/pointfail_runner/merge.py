"""Status of a plan's cells and the deterministic merge of per-shard responses into the study's
records (issue 18: ``pointfail-runner status`` and ``pointfail-runner merge``).

Everything is read from the run folder on shared storage (:mod:`pointfail_runner.shards`), through
:func:`pointfail.running.jobs.read_responses` (a line a container wrote is untrusted: a hostile line becomes an
explained ``error`` outcome for its sample, a symlink is refused, never followed):

* **status**: per cell (model x benchmark shard), how many of its samples have a response line;
  ``done`` when all have, else ``running`` (the scheduler says so, or the shard's last attempt
  started and has not ended), ``queued`` (the scheduler holds it pending or requeued), ``failed``
  (the scheduler reports a failed state, or the last attempt ended non-zero), ``partial`` (stopped
  with some answered) or ``pending`` (nothing yet).
* **merge**: for each model and benchmark whose cells are all done, the responses of its cells are
  collected (the first valid line of a sample wins; the later lines of a shard that ran twice, as a
  requeued shard does, are counted and ignored), every sample of the benchmark is turned into a record
  exactly once with the same code as the single-machine runner
  (:func:`pointfail_runner.study.records_for`) and written sorted by ``sample_id``
  (:func:`pointfail.records.write_records`, the records stage of
  :func:`pointfail.running.stages.run_stages`). The records are those ``pointfail-runner run`` writes on
  one machine from the same answers (byte for byte; only the measured ``response.seconds`` differs
  between any two runs), whatever the shard sizes, the order shards ran in, or how often a shard
  ran, so the tables ``aggregate`` makes from them are byte-identical. A benchmark with a missing cell is not written; the cells to rerun are listed
  (``pointfail-runner submit --missing``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .plan import Plan, PlanError
from .shards import ATTEMPTS_NAME, RunDir

MAX_ATTEMPTS_BYTES = 1 << 20

STATES = ("done", "running", "queued", "failed", "partial", "pending")


@dataclass
class CellStatus:
    """One cell: ``model``, ``benchmark``, ``shard`` index, ``expected`` samples, ``answered``
    (a response line, valid or explained), ``invalid`` (lines that failed validation: their samples
    become error outcomes), ``duplicates`` (later lines of answered samples), ``state`` (module
    docstring) and a ``note`` (the last attempt, the scheduler's word)."""

    model: str
    benchmark: str
    shard: int
    expected: int
    answered: int
    invalid: int
    duplicates: int
    state: str
    note: str = ""


def last_attempt(shard_dir: Path) -> Optional[dict]:
    """The state of a shard's last scheduler attempt from ``attempts.jsonl`` (written by the Slurm
    launcher): ``{"job", "restart", "started", "ended", "rc"}``, or ``None`` when it never started.
    Lines that are not JSON objects are ignored; at most :data:`MAX_ATTEMPTS_BYTES` are read."""
    p = Path(shard_dir) / ATTEMPTS_NAME
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_ATTEMPTS_BYTES)
    attempts: dict[tuple, dict] = {}
    order: list[tuple] = []
    for raw in data.split(b"\n"):
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        key = (str(ev.get("job")), str(ev.get("restart")))
        if key not in attempts:
            attempts[key] = {"job": ev.get("job"), "restart": ev.get("restart"), "started": None, "ended": None,
                             "rc": None}
            order.append(key)
        a = attempts[key]
        if ev.get("event") == "start":
            a["started"] = ev.get("time")
        elif ev.get("event") == "end":
            a["ended"], a["rc"] = ev.get("time"), ev.get("rc")
    return attempts[order[-1]] if order else None


def cell_status(plan: Plan, run: RunDir, *,
                scheduler: Optional[Callable[[str, int], Optional[str]]] = None) -> list[CellStatus]:
    """The status of every cell of ``plan`` in ``run`` (plan order). ``scheduler(model, shard)``
    gives the scheduler's state of a shard when known (``RUNNING``, ``PENDING``, ``FAILED``, ...).

    Raises:
        pointfail.running.jobs.JobFileError: a responses file is a symlink or not a regular file.
    """
    from pointfail.running.jobs import read_responses

    from .container import JobPaths

    out = []
    for m in plan.models:
        for s in m.shards:
            shard_dir = run.shard(m.name, s.index)
            paths = JobPaths(shard_dir)
            att = last_attempt(shard_dir)
            sched = scheduler(m.name, s.index) if scheduler else None
            for c in s.cells:
                got = read_responses(paths.cell_responses(c.benchmark), c.sample_ids)
                answered = len(got.answered)
                n = len(c.sample_ids)
                note = []
                if sched:
                    note.append(f"scheduler: {sched}")
                if att:
                    note.append(f"attempt {att['job']} restart {att['restart']}: "
                                + (f"exit {att['rc']}" if att["ended"] else "started"))
                state = _state(answered, n, sched, att)
                out.append(CellStatus(m.name, c.benchmark, s.index, n, answered, len(got.invalid), got.duplicates,
                                      state, "; ".join(note)))
    return out


RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "STAGE_OUT", "SIGNALING", "RESIZING"})
QUEUED_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "RESV_DEL_HOLD"})
FAILED_STATES = frozenset({"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "CANCELLED", "BOOT_FAIL", "DEADLINE",
                           "PREEMPTED"})


def _state(answered: int, expected: int, sched: Optional[str], attempt: Optional[dict]) -> str:
    if answered >= expected:
        return "done"
    if sched in RUNNING_STATES:
        return "running"
    if sched in QUEUED_STATES:
        return "queued"
    if sched in FAILED_STATES:
        return "failed"
    if attempt and attempt["started"] and not attempt["ended"]:
        return "running"
    if attempt and attempt["ended"] and attempt["rc"] not in (0, None):
        return "failed"
    return "partial" if answered else "pending"


def missing_shards(statuses: list[CellStatus]) -> dict[str, list[int]]:
    """``{model: [shard indices]}`` of shards to rerun: a cell is not done and the shard is neither
    running nor queued (a shard the scheduler still holds is not submitted twice)."""
    busy = {(c.model, c.shard) for c in statuses if c.state in ("running", "queued")}
    out: dict[str, list[int]] = {}
    for c in statuses:
        if c.state != "done" and (c.model, c.shard) not in busy and c.shard not in out.get(c.model, []):
            out.setdefault(c.model, []).append(c.shard)
    return out


@dataclass
class MergeResult:
    """What a merge wrote: ``written`` ``{(model, benchmark): records}``, ``incomplete``
    ``{(model, benchmark): samples without a response}`` (not written), ``duplicates`` (lines of
    samples answered twice, ignored), ``invalid`` (samples whose line failed validation: error
    outcomes)."""

    written: dict[tuple[str, str], int] = field(default_factory=dict)
    incomplete: dict[tuple[str, str], int] = field(default_factory=dict)
    duplicates: int = 0
    invalid: int = 0


def merge(plan: Plan, run: RunDir, *, repo: Path, study, roots, log: Callable[[str], None] = print) -> MergeResult:
    """Merge the run's responses into records under ``roots.records`` (module docstring).

    Args:
        study: the validated study (:class:`pointfail.inputs.study.Study`) the plan was made from.
        roots: :class:`pointfail.inputs.study.Roots` (data to rebuild the samples and prompts; records to
            write into).

    Raises:
        PlanError: the data no longer matches the plan, or a model has no ``model-run.json`` (never
            submitted).
        pointfail.running.jobs.JobFileError: a responses file is a symlink or not a regular file.
    """
    from pointfail.families import get_family
    from pointfail.running.jobs import ResponseLog, read_responses
    from pointfail.running.stages import run_stages

    from .container import JobPaths
    from .shards import load_samples
    from .study import job_provenance, records_for, requests_for

    repo = Path(repo).resolve()
    samples = load_samples(plan, study, roots)
    result = MergeResult()
    for m in plan.models:
        spec = study.model(m.name)
        fam = get_family(m.family)
        mr = run.read_model_run(m.name)
        # the revision the shards ran at (model-run.json: the study's, else its lock's; see pin_models)
        prov = job_provenance(repo, mr.image, mr.variant, mr.id, spec.model_copy(update={"revision": mr.revision}))
        for bench in plan.benchmarks:
            combined = ResponseLog()
            missing = 0
            for s in m.shards:
                for c in s.cells:
                    if c.benchmark != bench:
                        continue
                    got = read_responses(JobPaths(run.shard(m.name, s.index)).cell_responses(bench), c.sample_ids)
                    combined.responses.update(got.responses)
                    combined.invalid.update(got.invalid)
                    result.duplicates += got.duplicates
                    result.invalid += len(got.invalid)
                    missing += len(set(c.sample_ids) - got.answered)
            if missing:
                result.incomplete[(m.name, bench)] = missing
                log(f"[merge] {m.name}/{bench}: {missing} sample(s) without a response; not written")
                continue
            ordered = [samples[bench][sid] for sid in sorted(samples[bench])]
            prompts, requests = requests_for(fam, spec, ordered)
            records = records_for(plan.study, spec, ordered, prompts, combined, prov,
                                  roots.data_dir(study.benchmark(bench)), repo)
            dest = roots.records_file(spec, study.benchmark(bench))
            result.written[(m.name, bench)] = run_stages(roots.records, records=records, records_path=dest,
                                                         aggregate=False).records  # the records stage
            log(f"[merge] {m.name}/{bench}: {len(records)} records -> {dest}")
    if result.duplicates:
        log(f"[merge] {result.duplicates} later line(s) of samples answered twice (re-run shards) ignored")
    return result


def study_and_roots(plan: Plan, repo: Path, *, data_root: Optional[Path] = None,
                    weights_root: Optional[Path] = None, records_root: Optional[Path] = None):
    """The validated study a plan names and its :class:`pointfail.inputs.study.Roots`. Raises
    :class:`PlanError`."""
    from pointfail.inputs.study import Roots, StudyError, load_study

    from .plan import study_path

    try:
        study = load_study(study_path(plan, repo))
        roots = Roots.for_study(study, repo, data=data_root, weights=weights_root, records=records_root)
    except StudyError as e:
        raise PlanError(str(e)) from None
    return study, roots
