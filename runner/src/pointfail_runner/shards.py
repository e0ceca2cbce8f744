"""The run folder of a plan on shared storage, and running one shard of it (issue 18).

Every executor (local Docker, Slurm arrays, Kubernetes Indexed Jobs) works in one **run folder**,
which must be on storage that every machine running shards sees at the same path (Slurm) or
mounts as the same volume (Kubernetes)::

    <run>/plan.json                       the plan (canonical bytes; the node step reads it)
    <run>/<model>/model-run.json          the pinned image, weights, worker options (:class:`ModelRun`)
    <run>/<model>/shards/<i>/             shard i: a job folder (:class:`pointfail_runner.container.JobPaths`)
        .lock                             one runner per shard at a time
        requests/<benchmark>.jsonl        one file per benchmark of the plan (empty when the shard has
                                          no sample of it, so every shard's worker command is the same)
        images/<benchmark>/<n>.<ext>      the staged images, nothing else of the benchmark's data
        out/<benchmark>.jsonl             the container's one writable folder: responses per cell
        container.log                     the container's log (capped)
        attempts.jsonl                    one line per start and end of a scheduler attempt
    <run>/<model>/slurm/, <run>/<model>/k8s/   the executor's scripts, manifests and logs

Staging (:func:`stage_shards`, run by ``submit`` on the submitting machine) writes the requests and
copies the images; the shard's container then needs nothing but the run folder and the weights.
:func:`run_shard` is the node step of the Docker executors (``pointfail-runner shard``): it runs the
pinned image over a staged shard on the node's Docker Engine with the hardened settings of
:func:`pointfail_runner.container.hardened_kwargs`; a ``SIGTERM`` from the scheduler (cancel,
requeue, time limit) removes the container before the step exits, so a requeued shard never races
an orphan container for its responses.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from .plan import Plan, PlanError, PlanModel, load_plan

PLAN_NAME = "plan.json"
RUN_NAME = "model-run.json"
ATTEMPTS_NAME = "attempts.jsonl"


class ModelRun(BaseModel):
    """How a model's shards run, written by ``submit`` into ``<run>/<model>/model-run.json``.

    The image is pinned by content: ``id`` is the Docker image id (``sha256:<64 hex>``, the digest of
    the image's configuration), ``tag`` the content-keyed tag it was built as, ``variant`` cpu|cuda,
    ``reference`` what the executor hands its runtime (the id for Docker; a registry reference by
    digest or a squashfs/SIF file for pyxis and Apptainer; a registry reference by digest for
    Kubernetes), ``archive`` a ``docker save`` tarball nodes load the image from when they lack it.
    ``weights`` is the model's weights folder (absolute, on shared storage; ``None`` for weight-free
    baselines), ``batch_size`` and ``revision`` go to the worker, ``weights_manifest`` says each shard
    holds the model's weights manifest beside its requests (remote-code families check the weights
    against it before importing their code)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str
    variant: str
    tag: str
    id: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    reference: str
    archive: Optional[str] = None
    weights: Optional[str] = None
    batch_size: int = Field(default=1, ge=1)
    revision: str = ""
    weights_manifest: bool = False

    def worker_args(self, family: str, cells: Iterable[str], *, device: str, requests_mount: str,
                    responses_mount: str, weights_mount: str) -> list[str]:
        """The worker's arguments for a shard (``python -m pointfail.running.worker ...``): one
        ``--requests``/``--responses`` pair per cell, in plan order."""
        args = ["--family", family, "--weights", weights_mount]
        for c in cells:
            args += ["--requests", f"{requests_mount}/{c}.jsonl", "--responses", f"{responses_mount}/{c}.jsonl"]
        args += ["--batch-size", str(self.batch_size), "--device", device]
        if self.revision:
            args += ["--revision", self.revision]
        if self.weights_manifest:
            args += ["--weights-manifest", f"{requests_mount}/weights.manifest.json"]
        return args


@dataclass(frozen=True)
class RunDir:
    """The paths of a run folder (module docstring)."""

    root: Path

    @property
    def plan(self) -> Path:
        return self.root / PLAN_NAME

    def model_dir(self, model: str) -> Path:
        return self.root / model

    def model_run(self, model: str) -> Path:
        return self.root / model / RUN_NAME

    def shard(self, model: str, index: int) -> Path:
        return self.root / model / "shards" / str(index)

    def executor_dir(self, model: str, executor: str) -> Path:
        return self.root / model / executor

    def read_model_run(self, model: str) -> ModelRun:
        """How the model's shards run. Raises :class:`PlanError` when submit has not written it."""
        p = self.model_run(model)
        try:
            return ModelRun.model_validate_json(p.read_bytes())
        except OSError:
            raise PlanError(f"no pinned image for {model} in {p}: run pointfail-runner submit first") from None
        except ValueError as e:
            raise PlanError(f"{p} is not a valid image pin: {e}") from None

    def write_model_run(self, model: str, pin: ModelRun) -> None:
        from pointfail.records import canonical_json
        from pointfail.safeio import atomic_write_bytes

        atomic_write_bytes(self.model_run(model), canonical_json(pin.model_dump(mode="json")).encode("utf-8"))


def open_run(plan: Plan, run_dir: Path) -> RunDir:
    """Create ``run_dir`` for ``plan`` (writing ``plan.json``), or reopen it when it holds the same
    plan. Raises :class:`PlanError` when it holds another plan (start a new run folder)."""
    from pointfail.safeio import atomic_write_bytes

    run = RunDir(Path(run_dir).resolve())
    data = plan.to_bytes()
    if run.plan.exists():
        if run.plan.read_bytes() != data:
            raise PlanError(f"{run.root} holds another plan ({run.plan}); give a new --run-dir or plan again into it")
        return run
    run.root.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(run.plan, data)
    return run


def load_run(run_dir: Path) -> tuple[Plan, RunDir]:
    """The plan of an existing run folder. Raises :class:`PlanError`."""
    run = RunDir(Path(run_dir).resolve())
    if not run.plan.is_file():
        raise PlanError(f"{run.root} is not a run folder (no {PLAN_NAME}): run pointfail-runner submit first")
    return load_plan(run.plan), run


def select_shards(plan: Plan, models: Optional[list[str]] = None,
                  only: Optional[dict[str, list[int]]] = None) -> list[tuple[PlanModel, int]]:
    """``(model, shard index)`` pairs in plan order: every shard of the named models (all models for
    ``None``), restricted to ``only[model]`` indices when given."""
    ms = [plan.model(n) for n in models] if models else list(plan.models)
    out = []
    for m in ms:
        for s in m.shards:
            if only is None or s.index in only.get(m.name, ()):
                out.append((m, s.index))
    return out


def cell_requests(plan: Plan, model: PlanModel, index: int, samples: dict, prompts_for) -> dict[str, list[dict]]:
    """The requests of each cell of shard ``index`` (host image paths), one list per benchmark of the
    plan (empty for benchmarks the shard does not touch). ``samples[benchmark][sample_id]`` is the
    loaded :class:`~pointfail.records.Sample`; ``prompts_for(samples)`` builds the worker requests
    (:func:`pointfail_runner.study.requests_for`)."""
    shard = model.shards[index]
    by_bench = {c.benchmark: c.sample_ids for c in shard.cells}
    out: dict[str, list[dict]] = {}
    for bench in plan.benchmarks:
        ids = by_bench.get(bench, [])
        _, reqs = prompts_for([samples[bench][sid] for sid in ids])
        out[bench] = reqs
    return out


def load_samples(plan: Plan, study, roots) -> dict[str, dict]:
    """``{benchmark: {sample_id: Sample}}`` for the plan's benchmarks, loaded from the data root.
    Raises :class:`PlanError` when a benchmark's sample ids are not the plan's (the data changed
    since planning)."""
    from pointfail.inputs.benchmarks import load as load_benchmark

    out = {}
    for bench, n in plan.benchmarks.items():
        spec = study.benchmark(bench)
        d = roots.data_dir(spec)
        if not d.is_dir():
            raise PlanError(f"data for {bench}: {d} is missing (make data STUDY={plan.study})")
        samples = load_benchmark(spec.loader, d, limit=spec.limit)
        out[bench] = {s.sample_id: s for s in samples}
        planned = {sid for m in plan.models for s in m.shards for c in s.cells if c.benchmark == bench
                   for sid in c.sample_ids}
        if len(out[bench]) != n or not planned <= set(out[bench]):
            raise PlanError(f"benchmark {bench}: the data in {d} has {len(out[bench])} samples, the plan {n} "
                            "(other ids): the data changed since planning; plan again")
    return out


def stage_shards(plan: Plan, run: RunDir, *, study, roots, shards: Iterable[tuple[PlanModel, int]],
                 log: Callable[[str], None] = print) -> int:
    """Write the requests and stage the images of each of ``shards`` into its shard folder (module
    docstring); samples already answered there are not requested again. Returns the number of
    requests written. Raises :class:`PlanError` for data that no longer matches the plan and
    :class:`~pointfail_runner.container.ContainerFailed` for a shard folder the runner refuses (a
    symlink in place of a runner-owned folder)."""
    from pointfail.families import get_family

    from . import container as cmod
    from .study import requests_for

    samples = load_samples(plan, study, roots)
    data_roots = {b: roots.data_dir(study.benchmark(b)) for b in plan.benchmarks}
    total = 0
    for m, i in shards:
        spec = study.model(m.name)
        fam = get_family(m.family)
        cells = cell_requests(plan, m, i, samples, lambda ss: requests_for(fam, spec, ss))
        staged = cmod.stage_cells(run.shard(m.name, i), cells, data_roots)
        manifest = weights_manifest(study, spec)
        if manifest is not None:
            cmod.stage_weights_manifest(staged.paths, manifest)
        total += staged.pending
        log(f"[stage] {m.name} shard {i}: {staged.pending} requests to answer, {staged.skipped} already answered")
    return total


def weights_manifest(study, model) -> Optional[Path]:
    """The model's weights manifest (``weights_manifest`` in the study, inside the study's folder), or
    ``None``."""
    from pointfail.inputs.study import inside

    return inside(study.dir, model.weights_manifest, f"models {model.name!r} weights_manifest") \
        if getattr(model, "weights_manifest", None) else None


def gpu_devices_from_env(env: Optional[Mapping[str, str]] = None) -> Optional[list[str]]:
    """The GPUs a scheduler allocated to this step, as device ids for the Docker Engine: Slurm's
    ``SLURM_STEP_GPUS`` / ``SLURM_JOB_GPUS`` (physical indices, comma-separated). ``None`` when the
    scheduler allocated none."""
    environ = os.environ if env is None else env
    for key in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
        v = environ.get(key, "").strip()
        if v:
            return [x for x in v.split(",") if x]
    return None


def ensure_pinned_image(client, pin: ModelRun, log: Callable[[str], None] = print) -> str:
    """Make sure the node's Engine has the pinned image (by id), loading it from ``pin.archive`` (a
    ``docker save`` tarball on shared storage) when it has not. Returns the id.

    Raises:
        PlanError: the image is absent and there is no archive, or the archive holds another image.
    """
    from docker.errors import ImageNotFound

    try:
        client.images.get(pin.id)
        return pin.id
    except ImageNotFound:
        pass
    if not pin.archive:
        raise PlanError(f"image {pin.id} ({pin.tag}) is not on this node's Docker Engine and the run has no image "
                        "archive: submit with --ship-images, or build the images on every node")
    log(f"[shard] loading {pin.tag} from {pin.archive}")
    with open(pin.archive, "rb") as f:
        client.images.load(f)
    try:
        client.images.get(pin.id)
    except ImageNotFound:
        raise PlanError(f"{pin.archive} does not hold image {pin.id}") from None
    return pin.id


def pin_tag(study: str, model: str) -> str:
    """The extra tag a run puts on its pinned image (``pointfail-run/<study>:<model>``), so a later
    build that prunes older ``pointfail/<image>`` tags does not delete an image a queued shard needs."""
    return f"pointfail-run/{study}:{model}"


def _terminate_on_sigterm() -> None:
    """Turn the first ``SIGTERM`` into ``SystemExit(143)`` (so ``finally`` removes the container) and
    ignore later ones (Slurm signals every process of the step, and the launcher forwards its own:
    a second signal must not interrupt the clean-up)."""

    def handler(signum, frame):  # noqa: ARG001 - signal handler signature
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def run_shard(run: RunDir, model: str, index: int, *, client=None, mem_limit: str = "8g",
              wall_clock_s: float = 6 * 3600, gpu: Optional[bool] = None, progress: bool = False,
              log: Callable[[str], None] = print):
    """Run the pinned image of ``model`` over staged shard ``index`` on this machine's Docker Engine
    (the node step of the local and Slurm-Docker executors). GPUs: those the scheduler allocated
    (:func:`gpu_devices_from_env`), else every GPU when ``gpu`` (default: the host has one).

    A ``SIGTERM`` raises ``SystemExit(143)`` here, so the container is killed and removed before the
    process ends (the scheduler's cancel, requeue and time limit send it first).

    Returns:
        :class:`pointfail_runner.container.JobResult`.

    Raises:
        PlanError: no such model or shard, no pinned image.
        ContainerFailed: the container failed (responses so far are kept; a rerun resumes).
    """
    from . import container as cmod
    from .engine import ensure_engine

    plan = load_plan(run.plan)
    m = plan.model(model)
    if not 0 <= index < len(m.shards):
        raise PlanError(f"model {model} has shards 0..{len(m.shards) - 1}, not {index}")
    pin = run.read_model_run(model)
    if threading.current_thread() is threading.main_thread():  # handlers can only be set there
        _terminate_on_sigterm()
    client = client or ensure_engine(start=False)
    ensure_pinned_image(client, pin, log=log)
    devices = gpu_devices_from_env()
    use_gpu: bool | list[str] = devices if devices else (gpu if gpu is not None else cmod.host_has_gpu())
    t0 = time.monotonic()
    shard = m.shards[index]
    cells: dict[str, set[str]] = {b: set() for b in plan.benchmarks}
    for c in shard.cells:
        cells[c.benchmark] = set(c.sample_ids)
    command = pin.worker_args(m.family, list(cells), device="cuda" if use_gpu else "cpu", requests_mount=cmod.REQUESTS_MOUNT,
                              responses_mount=cmod.JOB_MOUNT, weights_mount=cmod.WEIGHTS_MOUNT)
    res = cmod.run_staged(client, pin.id, family=m.family, job_dir=run.shard(model, index), cells=cells,
                          command=command, weights_dir=Path(pin.weights) if pin.weights else None,
                          mem_limit=mem_limit, wall_clock_s=wall_clock_s, gpu=use_gpu, progress=progress, log=log)
    log(f"[shard] {model} shard {index}: {res.answered}/{res.requested} answered in {time.monotonic() - t0:.1f} s")
    return res
