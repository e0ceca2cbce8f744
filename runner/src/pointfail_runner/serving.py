"""Served models in a study run (``kind = "server"`` in ``study.toml``; issue 15).

Two pieces, both used by :func:`pointfail_runner.study.run_study`:

* :func:`run_served_job`: one (model, benchmark) job of a served model, in the same job folder layout
  as a container job (:class:`pointfail_runner.container.JobPaths`: ``requests/requests.jsonl``,
  ``out/responses.jsonl``, the runner's ``.lock``). The requests keep the images' paths on this
  machine (the served backend opens them here; each must resolve inside the benchmark's data folder,
  else the sample gets an error response saying so), and :func:`pointfail.running.served.backend.run_served`
  appends the responses through :class:`pointfail.running.jobs.ResponseWriter`. Samples already answered are
  skipped, so a killed run that is run again answers every sample exactly once.
* :func:`serving_container`: for a model with ``serve`` (:class:`pointfail.inputs.study.ServeSpec`), the
  runner starts the server itself: a container of the family image's serving variant (``vllm``:
  ``vllm serve``, with the GPU; ``transformers``: ``transformers serve``) with the checkpoint mounted
  read-only at ``/weights``, on a fresh *internal* Docker network (no route out of it: the server can
  reach nothing but this network), read-only root, non-root user, all capabilities dropped, memory and
  process limits. The runner waits for ``GET /health`` (the container's log goes to ``server.log``,
  capped), hands the served backend ``http://<container address>:8000/v1``, and removes the container
  and the network in ``finally``, whatever happened.

The host reaches a container on an internal bridge network at the container's address (the bridge
has the network's gateway address on the host). A runner that itself runs inside a container of the
same engine (``pointfail-runner pristine``, a CI job container given the host's socket) is not on that
bridge and the engine isolates bridge networks from each other, so :func:`serving_container` attaches
the runner's own container (:func:`pointfail_runner.engine.own_container`) to the internal network for
the server's lifetime, and detaches it before removing the network.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from . import container as cmod

SERVER_PORT = 8000
WEIGHTS_MOUNT = "/weights"
VLLM_VARIANT = "vllm"
"""The image variant that carries vLLM (``images/<family>/requirements-vllm.lock``, CUDA)."""


class ServingFailed(RuntimeError):
    """The serving container could not be started, exited, or did not answer ``/health`` in time;
    ``log_tail`` holds its last log lines (made printable)."""

    def __init__(self, message: str, log_tail: Optional[list[str]] = None):
        tail = log_tail or []
        super().__init__(message + ("\nlast server log lines:\n" + "\n".join(tail) if tail else ""))
        self.log_tail = tail


# ------------------------------------------------------------------------------------ served jobs


@dataclass
class ServedJobResult:
    """What a served job did: ``requested`` samples, ``answered`` (now in the responses file),
    ``skipped`` (answered before this run), the backend's ``summary``
    (:class:`pointfail.running.served.backend.ServedSummary`, ``None`` when nothing was left to ask) and
    ``problems`` (images outside the data folder)."""

    requested: int
    answered: int
    skipped: int
    summary: Any = None
    problems: list[str] = field(default_factory=list)


def provenance(model: Any):
    """Provenance of a served model's records: the checkpoint (the study's ``checkpoint``, else the
    server's model name), its revision, no image digest (the server is not an image of ours, or, with
    ``serve``, its image is named in the log), and the version of the ``openai`` client."""
    import openai

    from pointfail.records import Provenance

    try:
        import pointfail

        version = getattr(pointfail, "__version__", None)
    except ImportError:  # pragma: no cover
        version = None
    return Provenance(pointfail_version=version, checkpoint=model.checkpoint or model.model,
                      model_revision=model.revision or None, image_digest=None,
                      packages={"openai": openai.__version__})


def _outside(requests: list[dict], data_root: Optional[Path]) -> tuple[list[dict], dict[str, str]]:
    """Requests whose image resolves inside ``data_root`` (image given as its resolved path), and
    ``{sample_id: reason}`` for the others."""
    if data_root is None:
        return [{**r, "image": str(Path(r["image"]).resolve())} for r in requests], {}
    root = Path(data_root).resolve()
    kept, bad = [], {}
    for r in requests:
        src = Path(r["image"]).resolve()
        if not src.is_relative_to(root):
            bad[r["sample_id"]] = f"image {r['image']} resolves to {src}, outside the data folder {root}"
        else:
            kept.append({**r, "image": str(src)})
    return kept, bad


def run_served_job(model: Any, job_dir: Path, requests: list[dict], *, data_root: Optional[Path] = None,
                   base_url: Optional[str] = None, progress: bool = True, retry_errors: bool = False,
                   log: Callable[[str], None] = print) -> ServedJobResult:
    """Answer one job of a served model (layout and rules in the module docstring).

    Args:
        model: the study's :class:`pointfail.inputs.study.ServerModel` (options already validated).
        job_dir: ``work/<study>/<model>/<benchmark>``.
        requests: request dicts (``sample_id``, ``image`` as a path on this machine, ``prompt``,
            ``task``, ``max_new_tokens``).
        data_root: every image must resolve inside it (else an error response for that sample).
        base_url: the server's address when the runner started it (``serve``); default the model's
            ``base_url``.
        retry_errors: ask the samples whose response is an error again (also done by itself when the
            model entry or the server changed: :func:`pointfail.running.served.backend.run_served`).

    Returns:
        :class:`ServedJobResult`.

    Raises:
        pointfail.running.served.backend.ServerUnavailable: the server went down (responses so far kept).
        pointfail.running.jobs.JobBusy: another runner holds this job's lock, or another writer its responses.
        pointfail.running.jobs.JobFileError, pointfail.running.worker.WorkerError: a symlink or other non-regular file
            in place of a job file.
        ValueError: an API key variable that is not set.
    """
    from pointfail.running.jobs import (
        JobLock,
        JobRequest,
        ResponseWriter,
        error_response,
        read_responses,
        write_requests,
    )
    from pointfail.running.served.backend import run_served

    paths = cmod.prepare_job_dir(Path(job_dir).resolve())
    if base_url is not None:
        model = model.model_copy(update={"base_url": base_url})
    wanted = [r["sample_id"] for r in requests]
    with JobLock(paths.lock, "job"):
        before = read_responses(paths.responses, wanted).answered
        kept, bad = _outside(requests, data_root)
        problems = [f"{sid}: {why}" for sid, why in sorted(bad.items())]
        fresh = {sid: why for sid, why in bad.items() if sid not in before}
        if fresh:
            with ResponseWriter(paths.responses) as w:
                for sid, why in sorted(fresh.items()):
                    w.write(error_response(sid, why))
        write_requests(paths.requests, [JobRequest.model_validate(r) for r in kept])
        # the backend decides what to ask: samples without a response, and error responses again when
        # retry_errors or the model entry / the server changed (pointfail.running.served.backend.run_served)
        summary = run_served(model, paths.requests, paths.responses, progress=progress, retry_errors=retry_errors)
        if summary.requests:
            log(f"[run] {model.name}: {len(kept)} samples through {model.model} at {model.base_url}: "
                f"{summary.answered} answered ({summary.refused} refused or filtered), "
                f"{summary.errors} errors, {summary.skipped} already answered, {summary.retried_errors} earlier "
                f"errors asked again, {summary.requests} requests, {summary.transport_failures} transport failures")
        else:
            log(f"[run] {model.name}: all {len(wanted)} samples already answered in {paths.responses}")
        answered = len(read_responses(paths.responses, wanted).answered)
    return ServedJobResult(len(wanted), answered, len(before), summary, problems)


# --------------------------------------------------------------------------------- the server


def budget_kwargs(model: Any) -> Optional[dict[str, int]]:
    """The processor budget the study declares for ``model`` (``options.max_pixels``/``min_pixels``, or
    ``pixel_budget = "family"``: :func:`pointfail.running.served.inputs.budget_for`) as image-processor keyword
    arguments ``{"min_pixels", "max_pixels"}``; ``None`` when none is declared. A server the runner
    starts is given exactly this budget, so the frame the backend records is the one the server uses."""
    from pointfail.families import get_family
    from pointfail.running.served.inputs import budget_for

    budget = budget_for(get_family(model.family), model.options)
    if budget is None:
        return None
    return {"min_pixels": budget.min_pixels, "max_pixels": budget.max_pixels}


def vllm_argv(model: Any) -> list[str]:
    """``vllm serve`` for ``model`` (a ``ServerModel`` with ``serve.engine = "vllm"``): the checkpoint at
    ``/weights`` served as ``model.model`` on port 8000, seed 0, the checkpoint's generation config
    ignored (``--generation-config vllm``: greedy when the request says temperature 0, as the
    in-container backend), the declared pixel budget as ``--mm-processor-kwargs``, then
    ``serve.args``."""
    argv = ["/opt/venv/bin/vllm", "serve", WEIGHTS_MOUNT, "--host", "0.0.0.0", "--port", str(SERVER_PORT),
            "--served-model-name", model.model, "--seed", "0", "--generation-config", "vllm"]
    kw = budget_kwargs(model)
    if kw:
        argv += ["--mm-processor-kwargs", json.dumps(kw, sort_keys=True)]
    return argv + list(model.serve.args)


def transformers_argv(model: Any) -> list[str]:
    """``transformers serve`` pinned to the checkpoint at ``/weights`` (requests then name the model
    ``/weights``), port 8000, then ``serve.args``, through :mod:`pointfail.running.served.transformers_server`
    (the image-only processor where the image has no torchvision, as the in-container backends load
    it). The processor budget is the checkpoint's own (its processor config); the study's options must
    declare the same."""
    return ["/opt/venv/bin/python", "-m", "pointfail.running.served.transformers_server", WEIGHTS_MOUNT, "--host", "0.0.0.0",
            "--port", str(SERVER_PORT), *model.serve.args]


ENGINES: dict[str, Callable[[Any], list[str]]] = {"vllm": vllm_argv, "transformers": transformers_argv}
"""``serve.engine`` -> the server's command line."""


def served_name(model: Any) -> str:
    """The model name requests must carry: ``/weights`` for ``transformers serve`` (pinned to the
    checkpoint path), else the study's ``model`` (vLLM's ``--served-model-name``)."""
    return WEIGHTS_MOUNT if model.serve.engine == "transformers" else model.model


def serving_labels(model: Any, work_dir: Optional[Path] = None) -> dict[str, str]:
    """The labels of a model's server container and of its network: ``org.pointfail.serving`` (the
    model's name) and, with ``work_dir``, ``org.pointfail.work`` (the model's work folder, resolved),
    which tells apart the servers of two runs of the same study on one engine."""
    labels = {"org.pointfail.serving": model.name}
    if work_dir is not None:
        labels["org.pointfail.work"] = str(Path(work_dir).resolve())
    return labels


def server_kwargs(image: str, model: Any, *, weights_dir: Path, network: str, gpu: bool, mem_limit: str,
                  shm_size: str = "2g", pids_limit: int = 4096, work_dir: Optional[Path] = None) -> dict:
    """``client.containers.create`` keyword arguments for the serving container: the confinement of
    :func:`pointfail_runner.container.hardened_kwargs` with the internal ``network`` in place of no
    network, a larger process limit (a server's threads count against it) and ``/dev/shm`` of
    ``shm_size``; the weights read-only at ``/weights``; the server command of :data:`ENGINES` as the
    entrypoint; the GPU through ``device_requests`` when ``gpu``. Labels: :func:`serving_labels` and
    ``org.pointfail.engine``."""
    from docker.types import DeviceRequest

    argv = ENGINES[model.serve.engine](model)
    kw = cmod.hardened_kwargs(mem_limit=mem_limit, pids_limit=pids_limit)
    kw.pop("network_mode")
    kw.update(
        entrypoint=argv[:1], command=argv[1:], network=network, shm_size=shm_size,
        volumes={str(Path(weights_dir).resolve()): {"bind": WEIGHTS_MOUNT, "mode": "ro"}},
        environment={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": "/tmp/hf", "HOME": "/tmp",
                     "XDG_CACHE_HOME": "/tmp/cache", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
                     "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"},
        labels={**serving_labels(model, work_dir), "org.pointfail.engine": model.serve.engine},
        name=f"pointfail-serve-{model.name}-{uuid.uuid4().hex[:8]}",
    )
    if gpu:
        kw["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return kw


def _wait_for_health(container: Any, root: str, model: Any, t0: float, startup: float, poll_s: float,
                     log_path: Path, sink: Any) -> None:
    """Poll ``root/health`` every ``poll_s`` seconds until it answers 200.

    Raises:
        ServingFailed: the container exited first, or ``startup`` seconds passed since ``t0``
            (``time.monotonic()``), with the log's last 20 lines.
    """
    import httpx

    while True:
        container.reload()
        if container.status in ("exited", "dead"):
            code = container.attrs["State"]["ExitCode"]
            raise ServingFailed(f"the {model.serve.engine} server for {model.name} exited with {code} before "
                                f"answering /health (log: {log_path})", list(sink.tail)[-20:])
        try:
            if httpx.get(f"{root}/health", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() - t0 > startup:
            raise ServingFailed(f"the {model.serve.engine} server for {model.name} did not answer /health in "
                                f"{startup:.0f} s (log: {log_path})", list(sink.tail)[-20:])
        time.sleep(poll_s)


def _remove_container(container: Any, log: Callable[[str], None]) -> None:
    """Remove the server's container (forced); one already gone is fine, engine trouble is logged."""
    from docker.errors import APIError, NotFound

    try:
        container.remove(force=True)
    except NotFound:
        pass
    except APIError as e:  # pragma: no cover - engine trouble; say so, go on to the network
        log(f"[serve] could not remove {container.name}: {e}")


@contextmanager
def serving_container(client, image: str, model: Any, *, weights_dir: Path, log_path: Path, gpu: bool = False,
                      mem_limit: str = "32g", startup_s: Optional[float] = None, poll_s: float = 0.5,
                      log: Callable[[str], None] = print) -> Iterator[str]:
    """Start ``model``'s server from ``image`` (see the module docstring) and yield its API root
    ``http://<address>:8000/v1``; on exit (normal or not) remove the container, then the network. Both
    carry :func:`serving_labels` with ``log_path``'s folder as the work folder.

    Args:
        client: ``docker.DockerClient``.
        image: the serving image's tag (the family image's ``vllm`` variant, or one that carries
            ``transformers[serving]``).
        model: a ``ServerModel`` with ``serve``.
        weights_dir: the checkpoint folder on this machine (mounted read-only).
        log_path: the server's log file (capped at
            :data:`~pointfail.limits.MAX_CONTAINER_LOG_BYTES`, opened ``O_NOFOLLOW``).
        startup_s: seconds to wait for ``/health`` (default ``model.serve.startup_s``).

    Raises:
        ServingFailed: the engine refused the container or network, the server exited, or ``/health``
            did not answer 200 in time.
    """
    from docker.errors import APIError, NotFound

    from .engine import own_container

    startup = float(startup_s if startup_s is not None else model.serve.startup_s)
    net_name = f"pointfail-serve-{model.name}-{uuid.uuid4().hex[:8]}"
    network = container = me = None
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sink = cmod.LogSink(log_path, lambda line: None)
    streamer: Optional[threading.Thread] = None
    try:
        try:
            network = client.networks.create(net_name, driver="bridge", internal=True, check_duplicate=True,
                                             labels=serving_labels(model, log_path.parent))
            container = client.containers.create(image, **server_kwargs(
                image, model, weights_dir=weights_dir, network=net_name, gpu=gpu, mem_limit=mem_limit,
                work_dir=log_path.parent))
            container.start()
            me = own_container(client)
            if me is not None:  # a runner in a container: join the server's network (module docstring)
                network.connect(me)
        except APIError as e:
            raise ServingFailed(f"could not start the {model.serve.engine} server for {model.name} from {image}: "
                                f"{e}") from e
        streamer = sink.follow(container)
        container.reload()
        address = container.attrs["NetworkSettings"]["Networks"][net_name]["IPAddress"]
        root = f"http://{address}:{SERVER_PORT}"
        log(f"[serve] {model.name}: {model.serve.engine} server {container.name} ({image}) on internal network "
            f"{net_name} at {root}{f' (this runner, container {me.name}, attached to it)' if me is not None else ''}; "
            f"waiting for /health (up to {startup:.0f} s)")
        t0 = time.monotonic()
        _wait_for_health(container, root, model, t0, startup, poll_s, log_path, sink)
        log(f"[serve] {model.name}: ready after {time.monotonic() - t0:.1f} s")
        yield f"{root}/v1"
    finally:
        if container is not None:
            _remove_container(container, log)
        if streamer is not None:
            streamer.join(timeout=5)
        sink.close()
        if network is not None and me is not None:
            try:
                network.disconnect(me, force=True)
            except (NotFound, APIError) as e:  # pragma: no cover - engine trouble; removal below says more
                log(f"[serve] could not detach {me.name} from {net_name}: {e}")
        if network is not None:
            try:
                network.remove()
            except NotFound:
                pass
