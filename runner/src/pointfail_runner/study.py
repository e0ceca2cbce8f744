"""Run a study's models over its benchmarks and write records (issue 4: ``pointfail-runner run
--study FILE``; the study format is :mod:`pointfail.inputs.study`).

For each model (one container at a time, in the study's order) and each benchmark:

1. load the samples with ``pointfail.inputs.benchmarks.load(loader, data_dir)``, where ``data_dir`` is the
   benchmark's folder inside the declared data root (:class:`pointfail.inputs.study.Roots`);
2. build each prompt with ``pointfail.prompts.build_prompt(family, sample)``;
3. run the model's image over the requests with :func:`pointfail_runner.container.run_job` (only the
   images are staged for the container; samples already answered are skipped); a served model
   (``kind = "server"``) answers them through its server instead
   (:func:`pointfail_runner.serving.run_served_job`, same job folder layout; with ``serve``, the runner
   first starts the server as a container on an internal network, one per model for all its
   benchmarks, removed when they are done: :func:`pointfail_runner.serving.serving_container`);
4. read the responses with :func:`pointfail.running.jobs.read_responses` (a hostile line becomes an explained
   ``error`` outcome for its sample; a sample with no line becomes one too), turn each into a record
   with ``pointfail.scoring.build_record`` and write ``records/<study>/<model>/<benchmark>.jsonl``
   atomically (canonical, sorted by sample id): the records stage of
   :func:`pointfail.running.stages.run_stages`, whose judge and aggregate stages ``pointfail judge`` /
   ``pointfail aggregate`` (or ``make reproduce``) run next.

Job folders live under the work root (``work/<study>/<model>/<benchmark>/``, not committed). Every
path comes from :class:`~pointfail.inputs.study.Roots`, so nothing a study names can lead outside the data,
weights, work and records roots.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from pointfail.inputs.study import ContainerModel, Roots, ServerModel, Study, StudyError, inside, load_study

from . import container as cmod
from . import images as imod
from . import locks
from . import serving

__all__ = ["StudyError", "load_study", "missing_inputs", "needs_weights", "run_study", "repo_relative",
           "requests_for", "records_for"]

PROVENANCE_PACKAGES = ("numpy", "pillow", "tokenizers", "torch", "transformers")

REMOTE_CODE_BACKENDS = ("pointfail.running.backends.molmo",)
"""Backends that run the checkpoint's own code (``trust_remote_code``): they load only with a weights
manifest (``weights_manifest`` in the study; :mod:`pointfail.running.backends.manifest`)."""


def locked_model(study: Study, model: ContainerModel, lock_file: Optional[Path] = None) -> ContainerModel:
    """``model`` as it runs: a model whose study pins no ``revision`` runs at the commit the study lock
    (``lock_file``, default ``study.lock`` beside the study file; :mod:`pointfail.inputs.studylock`) holds for
    it, which goes to the worker (Molmo's remote code refuses to run unpinned) and into the provenance.
    A pinned revision, or a model the lock does not hold, is returned unchanged. The one rule for
    ``pointfail-runner run`` (:func:`run_study`) and every executor of a plan
    (:func:`pointfail_runner.executors.pin_models`).

    Raises:
        pointfail.inputs.studylock.LockError: the lock file is unreadable or malformed.
    """
    from pointfail.inputs.studylock import locked_revision

    if model.revision:
        return model
    locked = locked_revision(study.path, "models", model.name, lock_file=lock_file)
    return model.model_copy(update={"revision": locked}) if locked else model


def job_provenance(repo: Path, image_name: str, variant: str, image_id: Optional[str], model: ContainerModel):
    """Provenance of a container model's records (run and merge): pointfail's version, the study's
    checkpoint and revision, the image id, and the pinned versions of :data:`PROVENANCE_PACKAGES`
    plus the sha256 of the image's lock file for ``variant``."""
    from pointfail.records import Provenance

    try:
        import pointfail

        version = getattr(pointfail, "__version__", None)
    except ImportError:  # pragma: no cover
        version = None
    lock = locks.lock_path(repo / "images" / image_name, variant)
    pins = {e.name: e.version for e in locks.parse_lock(lock)} if lock.is_file() else {}
    packages = {k: pins[k] for k in PROVENANCE_PACKAGES if k in pins}
    if lock.is_file():
        packages["lock_sha256"] = locks.file_sha256(lock)
    return Provenance(pointfail_version=version, checkpoint=model.checkpoint or None,
                      model_revision=model.revision or None, image_digest=image_id, packages=packages)


def repo_relative(record, repo: Path):
    """``record`` with its image and mask paths made relative to the checkout when they lie inside it
    (``data/<study>/...``), so committed records name no machine's directories and regenerate
    identically on another machine. Paths outside the checkout are kept as they are.

    The image and target are replaced by copies, never changed in place: a record shares them with
    its sample (``build_record``), and the same samples are scored again for the next model, whose
    relative mask path would then be looked up under the data folder a second time."""
    def rel(p):
        if p and Path(p).is_absolute():
            try:
                return str(Path(p).relative_to(repo))
            except ValueError:
                return p
        return p

    record.image = record.image.model_copy(update={"path": rel(record.image.path)})
    record.target = record.target.model_copy(update={"mask_path": rel(record.target.mask_path)})
    return record


def needs_weights(model: ContainerModel) -> bool:
    """Whether the model runs from a weights folder: its family's backend needs one
    (``Family.needs_weights``: every family but the weight-free baselines), or it names a checkpoint."""
    from pointfail.families import get_family

    return bool(model.checkpoint) or get_family(model.family).needs_weights


def _shown(path: Path, repo: Path) -> Path:
    return path.relative_to(repo) if path.is_relative_to(repo) else path


def missing_inputs(study: Any, models: list, benchmarks: list, roots: Roots, *, repo: Path,
                   require_revisions: bool = False) -> list[str]:
    """Everything the selected models and benchmarks of a study need on disk and lack, one line each
    with the command that provides it: a generated suite's data (``make data``), another benchmark's
    data (``pointfail data fetch BENCH --study FILE --to DIR``), a family without a worker backend, a
    model's weights and, for a backend that runs the checkpoint's own code, its weights manifest
    (``pointfail weights fetch MODEL --study FILE --to DIR``, which writes the manifest the study
    names at the first fetch). Both fetch commands go through the study lock
    (:mod:`pointfail.inputs.studylock`): an unpinned revision is resolved once and locked beside the study.
    With ``require_revisions`` also every weight-backed model whose revision is neither pinned in the
    study nor held by its lock. A served model needs nothing here unless the runner starts its server
    (``serve``): then its checkpoint folder, and for ``engine = "vllm"`` a GPU and the image's vllm
    lock. Empty when the study can run. The one check ``pointfail-runner run``, ``submit`` and ``make
    reproduce`` make."""
    from pointfail.inputs.studylock import LockError, lock_path, read_lock

    repo = Path(repo).resolve()
    study_file = _shown(Path(study.path).resolve(), repo) if study.path is not None else "records/<study>/study.toml"
    missing = []
    try:
        locked = read_lock(lock_path(study.path))["models"] if study.path is not None else {}
    except LockError as e:
        locked = {}
        missing.append(f"study lock: {e}")
    for b in benchmarks:
        missing.extend(_data_missing(b, roots, repo, study.name, study_file))
    for m in models:
        if isinstance(m, ServerModel):
            missing.extend(_serve_missing(m, roots, repo, study_file))
        else:
            missing.extend(_weights_missing(m, study, roots, repo, study_file,
                                            revision_needed=require_revisions and m.name not in locked))
    return missing


def _data_missing(b: Any, roots: Roots, repo: Path, study_name: str, study_file: Any) -> list[str]:
    """The line for benchmark ``b`` when its data folder (``roots.data_dir``) is absent (empty list when
    present): a generated suite's ``make data STUDY=...`` (with the ``pointfail generate`` command where
    the suite draws without Docker), another benchmark's ``pointfail data fetch``. Paths are shown
    relative to ``repo`` where inside it."""
    d = roots.data_dir(b)
    if d.is_dir():
        return []
    shown = _shown(d, repo)
    if b.generator:
        from pointfail.generated.suites import generate_command

        cmd = generate_command(b.generator, b.n, b.seed, b.absent_share, str(shown))
        return [f"data for {b.name}: {shown} <- make data STUDY={study_name}"
                + (f" (or without Docker: {cmd})" if cmd else "")]
    return [f"data for {b.name}: {shown} <- pointfail data fetch {b.name} --study {study_file} --to {shown}"]


def _weights_missing(m: Any, study: Any, roots: Roots, repo: Path, study_file: Any, *,
                     revision_needed: bool) -> list[str]:
    """What worker model ``m`` lacks, one line each: a worker backend for its family; a weights manifest
    the study must name (:data:`REMOTE_CODE_BACKENDS`); its weights folder (with the manifest when that
    is missing too); the manifest file alone; and, with ``revision_needed`` (the caller asks for
    revisions and the study lock does not hold one), a revision when the study pins none. Each with the
    ``pointfail weights fetch`` command that provides it.

    Raises:
        StudyError: the study's ``weights_manifest`` leaves the study's folder (:func:`inside`).
    """
    from pointfail.families import get_family

    missing = []
    fam = get_family(m.family)
    if fam.backend is None:
        missing.append(f"model {m.name}: family {m.family} has no worker backend")
    w = roots.weights_dir(m) if needs_weights(m) else None
    fetch = f"pointfail weights fetch {m.name} --study {study_file}" + (f" --to {_shown(w, repo)}" if w else "")
    if fam.backend in REMOTE_CODE_BACKENDS and not m.weights_manifest:
        missing.append(f"weights manifest for {m.name}: family {m.family} runs the checkpoint's own code; "
                       f"name one in the study (weights_manifest = \"weights/{m.name}.manifest.json\"): "
                       f"{fetch} writes it at the first fetch")
    man = (inside(study.file.parent, m.weights_manifest, f"models {m.name!r} weights_manifest")
           if m.weights_manifest else None)
    man_missing = man is not None and not man.is_file()
    man_shown = _shown(man, repo) if man is not None else ""
    if w is not None and not w.is_dir():
        also = f" and its weights manifest {man_shown}" if man_missing else ""
        missing.append(f"weights for {m.name} ({m.checkpoint or m.family}): {_shown(w, repo)}{also} <- {fetch}")
        return missing
    if man_missing:
        missing.append(f"weights manifest for {m.name}: {man_shown} <- {fetch}")
    if w is not None and revision_needed and not m.revision:
        missing.append(f"revision {m.name}: neither pinned in {study_file} nor in its lock <- {fetch}")
    return missing


def _serve_missing(m: ServerModel, roots: Roots, repo: Path, study_file) -> list[str]:
    """What a served model whose server the runner starts (``serve``) lacks: its checkpoint folder,
    and for ``engine = "vllm"`` a GPU and the image's vllm lock."""
    if m.serve is None:
        return []
    out = []
    w = roots.weights_dir(m)
    if not w.is_dir():
        out.append(f"weights for {m.name} ({m.checkpoint or m.family}), served by {m.serve.engine}: {_shown(w, repo)} <- "
                   f"pointfail weights fetch {m.name} --study {study_file} --to {_shown(w, repo)}")
    if m.serve.engine == "vllm":
        if not cmod.host_has_gpu():
            out.append(f"model {m.name}: serve.engine = \"vllm\" needs a GPU (none found on this machine); serve "
                       "it elsewhere and give base_url instead")
        lock = locks.lock_path(repo / "images" / m.serve.image, serving.VLLM_VARIANT)
        if not lock.is_file():
            out.append(f"model {m.name}: images/{m.serve.image} has no vllm variant ({lock.name}) <- "
                       f"pointfail-runner lock {m.serve.image} --variant vllm")
    return out


def requests_for(family, model, samples, *, resolve: bool = False) -> tuple[dict, list[dict]]:
    """``(prompts, requests)`` for ``samples`` of one model: :func:`pointfail.running.evaluate.worker_requests`
    with the model's ``max_new_tokens`` (the same requests ``pointfail evaluate --base-url`` sends)."""
    from pointfail.running.evaluate import worker_requests

    return worker_requests(family, samples, model.max_new_tokens, resolve=resolve)


def records_for(study_name: str, model, samples, prompts: dict, responses, provenance, data_dir: Path,
                repo: Path) -> list:
    """One record per sample (``pointfail.scoring.build_record``), paths made relative to the
    checkout: ``responses`` is a :class:`pointfail.running.jobs.ResponseLog` (its first valid line per sample;
    an invalid line becomes an ``error`` outcome that says why); a sample with no line at all is an
    ``error`` outcome too, so nothing is lost silently."""
    from pointfail.records import Response
    from pointfail.scoring import build_record

    records = []
    for s in samples:
        r = responses.response_for(s.sample_id)
        resp = (r.as_record_response() if r is not None else
                Response(error="no response line for this sample in responses.jsonl (the worker exited "
                               "without answering it)"))
        records.append(repo_relative(build_record(study=study_name, model=model.name, family=model.family, sample=s,
                                                  prompt=prompts[s.sample_id], response=resp, provenance=provenance,
                                                  base_dir=data_dir), repo))
    return records


class RunCounts(dict):
    """``{model: {benchmark: records written}}`` of :func:`run_study`, with ``errors``:
    ``{model: {benchmark: records whose outcome is error}}`` (only pairs that have some)."""

    def __init__(self) -> None:
        super().__init__()
        from collections import defaultdict

        self.errors: dict[str, dict[str, int]] = defaultdict(dict)

    @property
    def n_errors(self) -> int:
        """Records that ended in an infrastructure error, over every pair."""
        return sum(n for per in self.errors.values() for n in per.values())


def run_study(study_file: Path, *, repo: Path, models: Optional[list[str]] = None,
              benchmarks: Optional[list[str]] = None, data_root: Optional[Path] = None,
              weights_root: Optional[Path] = None, work_root: Optional[Path] = None,
              records_root: Optional[Path] = None, wheelhouse: Optional[Path] = None, variant: Optional[str] = None,
              limit: Optional[int] = None, wall_clock_s: float = 6 * 3600, mem_limit: str = "8g",
              batch_size: Optional[int] = None, progress: bool = True, client=None,
              base_lock: Optional[Path] = None, fix_permissions: bool = False,
              build_options: Optional[dict] = None,
              log: Callable[[str], None] = print, lock_file: Optional[Path] = None,
              retry_errors: bool = False) -> "RunCounts":
    """Run ``study_file`` (see the module docstring) and return ``{model: {benchmark: n_records}}``
    (a :class:`RunCounts`, whose ``errors`` counts the records that ended in an infrastructure error).

    ``retry_errors``: a served model's samples whose response is an error are asked again (done by
    itself when the model entry or the server changed: :func:`pointfail.running.served.backend.run_served`).

    Roots (:class:`pointfail.inputs.study.Roots`): data ``data_root`` (default ``repo/data/<study>``), weights
    ``weights_root`` (default ``repo/weights``), jobs ``work_root`` (default ``repo/work/<study>``),
    records ``records_root`` (default beside the study file). A benchmark's data is
    ``<data root>/<data_dir or name>``, a model's weights ``<weights root>/<weights or name>``; each
    must resolve inside its root. Every missing data or weights folder is listed before any container
    runs.

    A model without a pinned ``revision`` runs at the commit the study lock holds for it
    (``lock_file``, default ``study.lock`` beside the study file; :func:`locked_model`): passed to the
    worker (Molmo's remote code refuses to run unpinned) and recorded in the provenance.

    ``build_options`` are passed on to :func:`pointfail_runner.images.ensure_image` (e.g. a Debian
    ``snapshot``).

    Raises:
        StudyError: a bad study file (every problem named), a path outside its root, missing data or
            weights, a vLLM-served model on a machine without a GPU; ``ContainerFailed``, a served
            model's server going down (``ServerUnavailable``) or failing to start (``ServingFailed``)
            are re-raised as StudyError after the records of the completed jobs were written
            (responses of the failed job are kept for the rerun).
    """
    from pointfail.inputs.benchmarks import load as load_benchmark
    from pointfail.families import get_family
    from pointfail.running.jobs import JobFileError, read_responses
    from pointfail.running.stages import run_stages

    from .engine import ensure_engine

    repo = Path(repo).resolve()
    study = load_study(study_file)
    roots = Roots.for_study(study, repo, data=data_root, weights=weights_root, work=work_root, records=records_root)
    sel_models = study.select_models(models)
    sel_benchmarks = study.select_benchmarks(benchmarks)
    if not sel_models or not sel_benchmarks:
        raise StudyError(f"{study.path}: nothing to run (the study lists {len(study.models)} model(s) and "
                         f"{len(study.benchmarks)} benchmark(s))")
    variant = variant or ("cuda" if cmod.host_has_gpu() else "cpu")

    missing = missing_inputs(study, sel_models, sel_benchmarks, roots, repo=repo)
    data_dirs = {b.name: roots.data_dir(b) for b in sel_benchmarks}
    weights: dict[str, Optional[Path]] = {
        m.name: (roots.weights_dir(m) if isinstance(m, ContainerModel) and needs_weights(m) else
                 roots.weights_dir(m) if isinstance(m, ServerModel) and m.serve is not None else None)
        for m in sel_models}
    if missing:
        raise StudyError("missing before any work:\n  " + "\n  ".join(missing))

    if any(isinstance(m, ContainerModel) or m.serve is not None for m in sel_models):
        client = client or ensure_engine()
    out = RunCounts()
    samples_by_bench = {b.name: load_benchmark(b.loader, data_dirs[b.name], limit=limit or b.limit)
                        for b in sel_benchmarks}
    job_opts = _JobOptions(batch_size=batch_size, mem_limit=mem_limit, wall_clock_s=wall_clock_s, progress=progress,
                           retry_errors=retry_errors, fix_permissions=fix_permissions, log=log)
    with contextlib.ExitStack() as servers:  # servers the runner started, removed on the way out
        for m in sel_models:
            servers.close()  # the previous model's server, if the runner started one
            fam = get_family(m.family)
            m, prov, built = _prepared_model(client, repo, study, m, roots, servers, variant=variant,
                                             wheelhouse=wheelhouse, base_lock=base_lock,
                                             build_options=build_options or {}, lock_file=lock_file, log=log)
            out[m.name] = {}
            for b in sel_benchmarks:
                samples = samples_by_bench[b.name]
                prompts, requests = requests_for(fam, m, samples, resolve=isinstance(m, ServerModel))
                job = roots.job_dir(m, b)
                problems = _answer(client, study, roots, m, b, job, requests, built, weights[m.name], data_dirs[b.name],
                                   job_opts)
                responses_file = cmod.JobPaths(job).responses
                try:
                    got = read_responses(responses_file, [s.sample_id for s in samples])
                except JobFileError as e:
                    raise StudyError(f"model {m.name} on {b.name}: {e}") from e
                for line in [*problems, *got.problems][:50]:
                    log(f"[run] {m.name} on {b.name}: {cmod.printable(line)}")
                records = records_for(study.name, m, samples, prompts, got, prov, data_dirs[b.name], repo)
                dest = roots.records_file(m, b)
                # the records stage of the library's one sequence (judge and aggregate: pointfail judge /
                # aggregate, or make reproduce)
                out[m.name][b.name] = run_stages(roots.records, records=records, records_path=dest,
                                                 aggregate=False).records
                errs = [r for r in records if r.outcome == "error"]
                if errs:
                    out.errors[m.name][b.name] = len(errs)
                    log(f"[run] {m.name} on {b.name}: {len(errs)} of {len(records)} samples ended in an error, e.g. "
                        f"{errs[0].sample_id}: {cmod.printable(errs[0].error or '')[:300]}")
                log(f"[run] wrote {len(records)} records to {dest}")
    return out


@dataclass(frozen=True)
class _JobOptions:
    """:func:`run_study`'s options for one job (a container's or a served model's)."""

    batch_size: Optional[int]
    mem_limit: str
    wall_clock_s: float
    progress: bool
    retry_errors: bool
    fix_permissions: bool
    log: Callable[[str], None]


def _prepared_model(client, repo: Path, study: Study, m, roots: Roots, servers: contextlib.ExitStack, *, variant: str,
                    wheelhouse: Optional[Path], base_lock: Optional[Path], build_options: dict,
                    lock_file: Optional[Path], log: Callable[[str], None]) -> tuple:
    """``(model as it runs, provenance, built image or None)`` for one model of :func:`run_study`: a served
    model whose server the runner starts gets it started (entered on ``servers``) and its URL; a container
    model runs at its locked revision (:func:`locked_model`) in its image (built when missing).

    Raises:
        StudyError: the runner could not start the model's server (``ServingFailed``).
    """
    if isinstance(m, ServerModel):
        prov = serving.provenance(m)
        if m.serve is not None:  # the runner starts the server: one per model, removed after its jobs
            variant_s = serving.VLLM_VARIANT if m.serve.engine == "vllm" else variant
            simage = imod.ensure_image(client, repo, m.serve.image, variant=variant_s, wheelhouse=wheelhouse,
                                       base_lock=base_lock, log=log, **build_options)
            try:
                url = servers.enter_context(serving.serving_container(
                    client, simage.tag, m, weights_dir=roots.weights_dir(m), log_path=roots.work / m.name /
                    "server.log", gpu=m.serve.engine == "vllm" or variant == "cuda", log=log))
            except serving.ServingFailed as e:
                raise StudyError(f"model {m.name}: {e}") from e
            m = m.model_copy(update={"base_url": url, "model": serving.served_name(m)})
            prov = prov.model_copy(update={"image_digest": simage.id})
        return m, prov, None
    m = locked_model(study, m, lock_file)
    built = imod.ensure_image(client, repo, m.image, variant=variant, wheelhouse=wheelhouse,
                              base_lock=base_lock, log=log, **build_options)
    return m, job_provenance(repo, m.image, variant, built.id, m), built


def _answer(client, study: Study, roots: Roots, m, b, job: Path, requests: list[dict], built, weights_dir: Optional[Path],
            data_dir: Path, o: _JobOptions) -> list[str]:
    """Have model ``m`` answer ``requests`` of benchmark ``b`` into the job folder ``job``: through its
    server (:func:`pointfail_runner.serving.run_served_job`) or its container
    (:func:`pointfail_runner.container.run_job`). Returns the job's problems (lines to print).

    Raises:
        StudyError: the server went down, the container failed, the job folder is busy or unusable.
    """
    from pointfail.running.jobs import JobBusy, JobFileError
    from pointfail.running.served.backend import ServerUnavailable
    from pointfail.running.worker import WorkerError

    if isinstance(m, ServerModel):
        try:
            sres = serving.run_served_job(m, job, requests, data_root=data_dir, progress=o.progress,
                                          retry_errors=o.retry_errors, log=o.log)
        except (ServerUnavailable, JobBusy, JobFileError, WorkerError, ValueError) as e:
            raise StudyError(f"model {m.name} on {b.name}: {e}") from e
        return sres.problems
    assert built is not None, "a container model's image is built first"
    extra = ["--revision", m.revision] if m.revision else []
    o.log(f"[run] {m.name} on {b.name}: {len(requests)} samples, image {built.tag}")
    try:
        res = cmod.run_job(client, built.tag, family=m.family, job_dir=job, requests=requests,
                           weights_dir=weights_dir, data_root=data_dir,
                           batch_size=int(o.batch_size or m.batch_size), mem_limit=o.mem_limit,
                           wall_clock_s=o.wall_clock_s, extra_args=extra, progress=o.progress, log=o.log,
                           fix_permissions=o.fix_permissions, weights_root=roots.weights,
                           weights_manifest=(inside(study.file.parent, m.weights_manifest, "weights_manifest")
                                             if m.weights_manifest else None))
    except cmod.ContainerFailed as e:
        raise StudyError(f"model {m.name} on {b.name} failed: {e}") from e
    except JobBusy as e:
        raise StudyError(f"model {m.name} on {b.name}: {e}") from e
    return res.problems
