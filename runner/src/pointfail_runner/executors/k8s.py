"""The Kubernetes executor: one Indexed Job per model, completion index = shard
(``pointfail-runner submit --executor k8s``; issue 18).

For each model ``submit`` writes ``<run>/<model>/k8s/job.json`` and, once per run,
``<run>/k8s-networkpolicy.json``, for ``kubectl apply -f`` (JSON is YAML; sorted keys, so the files
are canonical); with ``apply = true`` it runs ``kubectl apply`` itself (argument list, no shell). The
manifests:

* ``batch/v1`` Job, ``completionMode: Indexed``, ``completions`` = the model's shards,
  ``parallelism`` (a setting), ``backoffLimitPerIndex`` (a failed shard is retried on its own),
  ``podFailurePolicy`` that does not retry a worker's infrastructure failure (exit code 2), a
  per-shard ``activeDeadlineSeconds`` on the pod, ``ttlSecondsAfterFinished``;
* the image by registry digest (``<registry>/pointfail/<image>@sha256:...``);
* the run folder is a PersistentVolumeClaim (``run_claim``) holding the run folder at
  ``run_subpath``; each pod mounts its own shard's folders with ``subPathExpr`` and the completion
  index (``$(POINTFAIL_SHARD)``, from the ``batch.kubernetes.io/job-completion-index`` annotation
  through the downward API): ``requests/`` and ``images/`` read-only, ``out/`` read-write; the weights
  read-only from ``weights_claim``; an in-memory ``emptyDir`` at ``/tmp``;
* the worker's arguments are the same for every index (every shard has one request file per
  benchmark), so one pod template serves all shards;
* hardened: ``runAsNonRoot``, user and group 10001 (``fsGroup`` too), ``readOnlyRootFilesystem``,
  ``allowPrivilegeEscalation: false``, capabilities ``drop: [ALL]``, ``seccompProfile: RuntimeDefault``,
  no service account token, no service links, memory and CPU limits, ``nvidia.com/gpu`` (a setting)
  for the model's GPUs; a NetworkPolicy denies all ingress and egress of the model pods (enforced by
  a CNI that implements NetworkPolicy).

The manifests are validated offline against the Kubernetes API schema in the tests
(``kubernetes-validate``, strict).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Optional

from pydantic import BaseModel, ConfigDict, Field

from ..plan import PlanError
from . import Executor, Submission, load_settings, pin_models, prepare

PART_OF = "pointfail"
ROLE_LABEL = "pointfail.org/role"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


class K8sSettings(BaseModel):
    """``[k8s]`` of the cluster settings file (every key optional except where a real submit needs it).

    ``namespace``; ``registry`` (images are referenced ``<registry>/pointfail/<image>@<digest>``;
    ``push`` pushes them first); ``run_claim`` / ``run_subpath``: the PVC that holds the run folder and
    the run folder's path inside it; ``weights_claim`` / ``weights_subpath``: the PVC with the weights
    (``<weights_subpath>/<model's weights folder name>``); ``parallelism`` shards of a model at once;
    ``cpu`` / ``memory`` per shard (requests = limits); ``gpu_resource``; ``active_deadline_seconds``
    per shard; ``backoff_limit_per_index``; ``node_selector``; ``runtime_class`` (e.g. gVisor);
    ``apply`` and ``kubectl``."""

    model_config = ConfigDict(extra="forbid")

    namespace: str = Field(default="default", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    registry: Optional[str] = None
    push: bool = False
    run_claim: str = Field(default="pointfail-runs", pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
    run_subpath: str = ""
    weights_claim: Optional[str] = None
    weights_subpath: str = ""
    parallelism: int = Field(default=4, ge=1)
    cpu: str = "2"
    memory: str = "16Gi"
    gpu_resource: str = "nvidia.com/gpu"
    active_deadline_seconds: int = Field(default=6 * 3600, ge=1)
    backoff_limit_per_index: int = Field(default=3, ge=0)
    ttl_seconds_after_finished: int = Field(default=7 * 24 * 3600, ge=0)
    node_selector: dict[str, str] = Field(default_factory=dict)
    runtime_class: Optional[str] = None
    apply: bool = False
    kubectl: str = "kubectl"

    @classmethod
    def load(cls, path: Optional[Path], **overrides) -> "K8sSettings":
        """From ``[k8s]`` of ``path`` with ``overrides`` (those not ``None``) on top. Raises
        :class:`PlanError` naming each bad key."""
        return load_settings(cls, path, "k8s", overrides)


def dns_label(*parts: str, limit: int = 63) -> str:
    """A DNS-1123 label from ``parts`` (lower case, ``[a-z0-9-]``, at most ``limit`` characters; a
    name that had to be cut or changed ends with 8 hex of its sha256, so distinct inputs stay
    distinct). Job names must be labels; study and model names may hold ``.`` and ``_``."""
    raw = "-".join(parts)
    name = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    if name != raw or len(name) > limit:
        h = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[:limit - 9].rstrip('-')}-{h}"
    return name


def labels(plan, model: Optional[str] = None) -> dict[str, str]:
    """The labels of a run's objects (values are label-safe: names are identifiers)."""
    out = {"app.kubernetes.io/part-of": PART_OF, ROLE_LABEL: "model", "pointfail.org/study": plan.study}
    if model:
        out["pointfail.org/model"] = model
    return out


def network_policy(plan, settings: K8sSettings) -> dict:
    """A NetworkPolicy that denies all ingress and egress of the study's model pods."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": dns_label("pointfail", plan.study, "no-network"), "namespace": settings.namespace,
                         "labels": labels(plan)},
            "spec": {"podSelector": {"matchLabels": {ROLE_LABEL: "model", "pointfail.org/study": plan.study}},
                     "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []}}


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def job_manifest(plan, model, mr, settings: K8sSettings, *, run_relative: str = "") -> dict:
    """The Indexed Job of ``model`` (module docstring). ``mr`` is its
    :class:`~pointfail_runner.shards.ModelRun` (``reference`` = the image by digest);
    ``run_relative`` the run folder's path inside ``run_claim`` (default ``settings.run_subpath``)."""
    from ..container import CONTAINER_UID, IMAGES_MOUNT, JOB_MOUNT, REQUESTS_MOUNT, WEIGHTS_MOUNT
    from .slurm import WORKER_ENV

    base = _join(run_relative or settings.run_subpath, model.name, "shards", "$(POINTFAIL_SHARD)")
    device = "cuda" if model.gpus else "cpu"
    args = mr.worker_args(model.family, list(plan.benchmarks), device=device, requests_mount=REQUESTS_MOUNT,
                          responses_mount=JOB_MOUNT, weights_mount=WEIGHTS_MOUNT)
    mounts = [{"name": "run", "mountPath": REQUESTS_MOUNT, "subPathExpr": _join(base, "requests"), "readOnly": True},
              {"name": "run", "mountPath": IMAGES_MOUNT, "subPathExpr": _join(base, "images"), "readOnly": True},
              {"name": "run", "mountPath": JOB_MOUNT, "subPathExpr": _join(base, "out")},
              {"name": "tmp", "mountPath": "/tmp"}]
    volumes = [{"name": "run", "persistentVolumeClaim": {"claimName": settings.run_claim}},
               {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]
    if mr.weights:
        if not settings.weights_claim:
            raise PlanError(f"model {model.name} needs weights: set [k8s] weights_claim (the PVC with the weights)")
        volumes.append({"name": "weights", "persistentVolumeClaim": {"claimName": settings.weights_claim,
                                                                     "readOnly": True}})
        mounts.append({"name": "weights", "mountPath": WEIGHTS_MOUNT, "readOnly": True,
                       "subPath": _join(settings.weights_subpath, Path(mr.weights).name)})
    else:
        mounts.append({"name": "run", "mountPath": WEIGHTS_MOUNT, "subPathExpr": _join(base, "no-weights"),
                       "readOnly": True})
    resources = {"requests": {"cpu": settings.cpu, "memory": settings.memory},
                 "limits": {"cpu": settings.cpu, "memory": settings.memory}}
    if model.gpus:
        resources["limits"][settings.gpu_resource] = str(model.gpus)
        resources["requests"][settings.gpu_resource] = str(model.gpus)
    env = [{"name": "POINTFAIL_SHARD",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}}}]
    env += [{"name": k, "value": v} for k, v in WORKER_ENV.items()]
    container = {"name": "worker", "image": mr.reference, "imagePullPolicy": "IfNotPresent", "args": args,
                 "env": env, "volumeMounts": mounts, "resources": resources, "workingDir": "/tmp",
                 "securityContext": {"runAsNonRoot": True, "runAsUser": CONTAINER_UID, "runAsGroup": CONTAINER_UID,
                                     "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                     "privileged": False, "capabilities": {"drop": ["ALL"]},
                                     "seccompProfile": {"type": "RuntimeDefault"}}}
    pod = {"restartPolicy": "Never", "automountServiceAccountToken": False, "enableServiceLinks": False,
           "hostNetwork": False, "hostPID": False, "hostIPC": False,
           "activeDeadlineSeconds": settings.active_deadline_seconds,
           "securityContext": {"runAsNonRoot": True, "runAsUser": CONTAINER_UID, "runAsGroup": CONTAINER_UID,
                               "fsGroup": CONTAINER_UID, "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [container], "volumes": volumes}
    if settings.node_selector:
        pod["nodeSelector"] = dict(settings.node_selector)
    if settings.runtime_class:
        pod["runtimeClassName"] = settings.runtime_class
    n = len(model.shards)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": dns_label("pointfail", plan.study, model.name), "namespace": settings.namespace,
                         "labels": labels(plan, model.name)},
            "spec": {"completionMode": "Indexed", "completions": n, "parallelism": min(settings.parallelism, n),
                     "backoffLimitPerIndex": settings.backoff_limit_per_index, "maxFailedIndexes": n,
                     "podFailurePolicy": {"rules": [{"action": "FailIndex", "onExitCodes": {
                         "containerName": "worker", "operator": "In", "values": [2]}}]},
                     "ttlSecondsAfterFinished": settings.ttl_seconds_after_finished,
                     "template": {"metadata": {"labels": labels(plan, model.name)}, "spec": pod}}}


def _dump(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"


def write_manifests(plan, run, runs: dict, settings: K8sSettings, models: list[str]) -> list[Path]:
    """Write ``<run>/k8s-networkpolicy.json`` and ``<run>/<model>/k8s/job.json`` for ``models``
    (``runs``: their :class:`~pointfail_runner.shards.ModelRun`). Returns the files written."""
    out = []
    np = run.root / "k8s-networkpolicy.json"
    np.write_text(_dump(network_policy(plan, settings)), encoding="utf-8")
    out.append(np)
    for name in models:
        d = run.executor_dir(name, "k8s")
        d.mkdir(parents=True, exist_ok=True)
        p = d / "job.json"
        p.write_text(_dump(job_manifest(plan, plan.model(name), runs[name], settings)), encoding="utf-8")
        out.append(p)
    return out


def submit(plan_file: Path, *, repo: Path, run_dir: Optional[Path] = None, data_root: Optional[Path] = None,
           weights_root: Optional[Path] = None, models: Optional[list[str]] = None, missing: bool = False,
           variant: str = "cpu", settings: Optional[K8sSettings] = None, client=None,
           base_lock: Optional[Path] = None, log: Callable[[str], None] = print) -> Submission:
    """Pin (push when asked), stage and write one Indexed Job per model; apply them when ``apply``.

    With ``missing``, each Job still has one completion per shard of the model (a Job's indices are
    0..completions-1): a shard whose cells are all answered starts, finds nothing to do and exits
    without loading its model. ``detail`` holds the manifest files.

    Raises:
        PlanError: no registry, an image without a digest there, a weight-backed model without
            ``weights_claim``, or ``kubectl apply`` failed.
    """
    from ..engine import ensure_engine
    from ..shards import stage_shards
    from . import registry_reference

    settings = settings or K8sSettings()
    registry = settings.registry
    if not registry:
        raise PlanError("the k8s executor needs [k8s] registry (images are pulled by digest from it)")
    plan, run, study, roots, shards = prepare(plan_file, repo=repo, run_dir=run_dir, data_root=data_root,
                                              weights_root=weights_root, models=models, missing=missing, log=log)
    names = sorted({m.name for m, _ in shards}, key=[m.name for m in plan.models].index)
    if not names:
        return Submission(run, {}, {})
    client = client or ensure_engine()
    runs = pin_models(plan, run, repo=repo, study=study, roots=roots, models=names, variant=variant, client=client,
                      reference=lambda built, name: registry_reference(client, built, registry,
                                                                       push=settings.push, log=log),
                      base_lock=base_lock, log=log)
    stage_shards(plan, run, study=study, roots=roots, shards=shards, log=log)
    files = write_manifests(plan, run, runs, settings, names)
    for f in files:
        log(f"[k8s] wrote {f}")
    if settings.apply:
        if shutil.which(settings.kubectl) is None:
            raise PlanError(f"apply = true but {settings.kubectl} is not on PATH; apply with: kubectl apply -f "
                            + " -f ".join(map(str, files)))
        for f in files:
            r = subprocess.run([settings.kubectl, "apply", "-f", str(f)], capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise PlanError(f"kubectl apply -f {f} failed: {r.stderr.strip()}")
            log(f"[k8s] {r.stdout.strip()}")
    by_model: dict[str, list[int]] = {}
    for m, i in shards:
        by_model.setdefault(m.name, []).append(i)
    return Submission(run, by_model, {"manifests": [str(f) for f in files]})


def submit_command(plan_file: Path, args, common: dict) -> int:
    """``pointfail-runner submit --executor k8s``: one Indexed Job per model (``--cluster``, ``--registry``)."""
    submit(plan_file, settings=K8sSettings.load(args.cluster, registry=args.registry), **common)
    return 0


EXECUTOR = Executor("k8s", "one Kubernetes Indexed Job per model (completion index = shard)", submit_command)
