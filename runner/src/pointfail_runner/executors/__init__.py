"""Executors of a plan: ``pointfail-runner submit --executor local|slurm|k8s`` (issue 18).

Every executor is one file: a module here that declares ``EXECUTOR = Executor(name, summary,
submit_command)``, found by :func:`pointfail.discovery.discover` as model families are
(:func:`executors`); ``pointfail-runner submit --executor`` offers and dispatches to what it finds.

Every executor does the same first steps, here, on the submitting machine:

1. open the run folder (``<run>/plan.json``; a run folder holds one plan);
2. pin each model's image: build it if needed (:func:`pointfail_runner.images.ensure_image`), tag it
   ``pointfail-run/<study>:<model>`` so a later build that prunes older tags cannot delete it, and
   write ``<run>/<model>/model-run.json`` (:class:`~pointfail_runner.shards.ModelRun`: the image id,
   the reference the executor's runtime uses, the weights folder, batch size, revision);
3. stage the selected shards (requests and images into each shard folder);

and then hands the shards to its engine: :mod:`.local` (this machine's Docker Engine, N shards at a
time), :mod:`.slurm` (one ``sbatch`` job array per model; array index = shard) or :mod:`.k8s` (one
Indexed Job per model; completion index = shard). ``--missing`` restricts the shards to those with a
cell that is not done (:func:`pointfail_runner.merge.missing_shards`).

What each executor can enforce of the hardened container settings
(:func:`pointfail_runner.container.hardened_kwargs`) is written in :data:`ENFORCEMENT` (and in the
README and ``artifact.md``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from pointfail.discovery import Registry

from ..plan import PlanError

if TYPE_CHECKING:
    from ..images import BuiltImage

ENFORCEMENT: dict[str, dict[str, str]] = {
    "local": {
        "network": "none (network_mode=none)",
        "root filesystem": "read-only, tmpfs /tmp",
        "user": "10001 (non-root)",
        "capabilities": "all dropped, no-new-privileges",
        "memory": "limit with no swap (mem_limit = memswap_limit)",
        "processes": "pids limit",
    },
    "slurm/docker": {
        "network": "none (the node's Docker Engine, same settings as local)",
        "root filesystem": "read-only, tmpfs /tmp",
        "user": "10001 (non-root)",
        "capabilities": "all dropped, no-new-privileges",
        "memory": "Docker's limit (the container is outside the job's cgroup, so Slurm's --mem does not bind it)",
        "processes": "pids limit",
    },
    "slurm/pyxis": {
        "network": "NOT enforced: enroot containers share the node's network namespace",
        "root filesystem": "read-only (--container-readonly)",
        "user": "the submitting user, not remapped to root (--no-container-remap-root)",
        "capabilities": "none beyond the user's (unprivileged user namespace); no-new-privileges is enroot's default",
        "memory": "the job's cgroup (--mem, when the cluster constrains RAM with cgroups)",
        "processes": "the job's cgroup",
    },
    "slurm/apptainer": {
        "network": "none with --net --network none where the site's apptainer.conf allows it; else the node's",
        "root filesystem": "read-only (a SIF image is immutable; no --writable-tmpfs)",
        "user": "the submitting user (no root inside)",
        "capabilities": "none for an unprivileged user; --no-privs drops them for root",
        "memory": "the job's cgroup (--mem)",
        "processes": "the job's cgroup",
    },
    "k8s": {
        "network": "a deny-all NetworkPolicy for the model pods (enforced only by a CNI that implements "
                   "NetworkPolicy)",
        "root filesystem": "readOnlyRootFilesystem, an emptyDir /tmp",
        "user": "runAsNonRoot, runAsUser 10001",
        "capabilities": "drop ALL, allowPrivilegeEscalation false, seccomp RuntimeDefault",
        "memory": "resources.limits.memory",
        "processes": "the node's pod pids limit (kubelet podPidsLimit; not settable per pod)",
    },
}
"""Per executor, how each hardened setting is (or is not) enforced."""


def load_cluster_settings(path: Optional[Path], table: str) -> dict:
    """The ``[<table>]`` table of a cluster settings TOML file (``{}`` without a file). Raises
    :class:`PlanError` for an unreadable file."""
    if path is None:
        return {}
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise PlanError(f"cannot read cluster settings {path}: {e}") from None
    v = raw.get(table, {})
    if not isinstance(v, dict):
        raise PlanError(f"{path}: [{table}] must be a table")
    return v


def load_settings(cls, path: Optional[Path], table: str, overrides: dict):
    """``cls`` (a pydantic settings model) from ``[<table>]`` of ``path`` with ``overrides`` (those not
    ``None``) on top. Raises :class:`PlanError` naming each bad key."""
    from pydantic import ValidationError

    raw = {**load_cluster_settings(path, table), **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return cls.model_validate(raw)
    except ValidationError as e:
        raise PlanError(f"[{table}] settings: " + "; ".join(
            f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors(include_url=False))) from None


@dataclass
class Submission:
    """What ``submit`` did: the run folder, the shards handed to the executor per model, and the
    executor's own result (job ids for Slurm, manifest files for Kubernetes, run results for local)."""

    run: object
    shards: dict[str, list[int]]
    detail: dict


def prepare(plan_file: Path, *, repo: Path, run_dir: Optional[Path], data_root: Optional[Path] = None,
            weights_root: Optional[Path] = None, models: Optional[list[str]] = None, missing: bool = False,
            scheduler: Optional[Callable] = None, log: Callable[[str], None] = print):
    """Steps 1 and the shard selection of the module docstring: ``(plan, run, study, roots, shards)``
    where ``shards`` is the list of ``(PlanModel, index)`` to run. ``scheduler(run, plan)`` gives the
    executor's view of its shards for ``missing`` (shards it still runs or holds are left alone).
    Raises :class:`PlanError`."""
    from ..merge import cell_status, missing_shards, study_and_roots
    from ..plan import load_plan
    from ..shards import open_run, select_shards

    repo = Path(repo).resolve()
    plan = load_plan(plan_file, repo=repo)
    study, roots = study_and_roots(plan, repo, data_root=data_root, weights_root=weights_root)
    run = open_run(plan, Path(run_dir) if run_dir else default_run_dir(plan_file))
    only = None
    if missing:
        only = missing_shards(cell_status(plan, run, scheduler=scheduler(run, plan) if scheduler else None))
    shards = select_shards(plan, models, only)
    if missing:
        log(f"[submit] {len(shards)} shard(s) with a cell not done: "
            + (", ".join(f"{m.name}[{i}]" for m, i in shards) or "none"))
    return plan, run, study, roots, shards


def default_run_dir(plan_file: Path) -> Path:
    """The run folder when none is given: ``run/`` beside the plan file."""
    return Path(plan_file).resolve().parent / "run"


def pin_models(plan, run, *, repo: Path, study, roots, models: list[str], variant: str, client,
               reference: Callable[[BuiltImage, str], str], archive: Optional[Callable[[BuiltImage, str], Optional[str]]] = None,
               base_lock: Optional[Path] = None, log: Callable[[str], None] = print) -> dict:
    """Step 2 of the module docstring for ``models``: ``{model: ModelRun}``. ``reference(built,
    model)`` gives the runtime's image reference for a :class:`~pointfail_runner.images.BuiltImage`;
    ``archive(built, model)`` optionally a ``docker save`` tarball path nodes load the image from.
    ``base_lock`` names the base image images are built on (default ``images/base/base.lock.json``).

    Raises:
        PlanError: a weights folder or weights manifest is missing (:func:`pointfail_runner.study.missing_inputs`).
    """
    from .. import images as imod
    from ..shards import ModelRun, pin_tag
    from ..shards import weights_manifest
    from ..study import locked_model, missing_inputs, needs_weights

    specs = [study.model(name) for name in models]
    missing = missing_inputs(study, specs, [], roots, repo=repo)
    if missing:
        raise PlanError("missing before any work:\n  " + "\n  ".join(missing))
    out = {}
    for name in models:
        pm = plan.model(name)
        spec = locked_model(study, study.model(name))  # the revision run_study would use
        built = imod.ensure_image(client, repo, pm.image, variant=variant, base_lock=base_lock, log=log)
        try:
            client.images.get(built.id).tag(*pin_tag(plan.study, name).split(":"))
        except Exception as e:  # noqa: BLE001 - a tag is a safeguard, not a requirement
            log(f"[submit] could not tag {built.tag} for the run: {e}")
        mr = ModelRun(image=pm.image, variant=variant, tag=built.tag, id=built.id, reference=reference(built, name),
                      archive=archive(built, name) if archive else None,
                      weights=str(roots.weights_dir(spec)) if needs_weights(spec) else None,
                      batch_size=spec.batch_size, revision=spec.revision,
                      weights_manifest=weights_manifest(study, spec) is not None)
        run.write_model_run(name, mr)
        out[name] = mr
        log(f"[submit] {name}: image {built.tag} pinned as {mr.reference}")
    return out


def registry_reference(client, built, registry: str, *, push: bool, log: Callable[[str], None] = print) -> str:
    """``<registry>/pointfail/<image>@sha256:<digest>``: the image by its registry digest. With
    ``push`` the image is tagged and pushed first (docker SDK); without, the engine must already know
    a digest of the image in that registry.

    Raises:
        PlanError: no digest for that registry (push first), or the push failed.
    """
    repo_name = f"{registry.rstrip('/')}/pointfail/{built.name}"
    img = client.images.get(built.id)
    if push:
        tag = built.tag.split(":", 1)[1]
        img.tag(repo_name, tag)
        log(f"[submit] pushing {repo_name}:{tag}")
        for line in client.images.push(repo_name, tag=tag, stream=True, decode=True):
            if isinstance(line, dict) and line.get("error"):
                raise PlanError(f"push of {repo_name}:{tag} failed: {line['error']}")
        img.reload()
    for d in img.attrs.get("RepoDigests") or []:
        if d.startswith(repo_name + "@sha256:"):
            return d
    raise PlanError(f"image {built.tag} has no digest in {registry}: push it (submit --push, or docker push "
                    f"{repo_name}:<tag>)")


@dataclass(frozen=True)
class Executor:
    """One executor, declared by its module as ``EXECUTOR``.

    Attributes:
        name: the ``--executor`` value.
        summary: where its shards run, in one line.
        submit_command: ``submit_command(plan_file, args, common) -> exit status``: the ``submit``
            command for it; ``args`` is the parsed command line (its executor's flags), ``common`` the
            keyword arguments every executor's ``submit`` takes (``repo``, ``run_dir``, ``data_root``,
            ``weights_root``, ``models``, ``missing``, ``variant``, ``base_lock``).
    """

    name: str
    summary: str
    submit_command: Callable[[Path, Any, dict], int]


_EXECUTORS: Registry[Executor] = Registry(__name__, "EXECUTOR", Executor, unique=True)


def executors() -> dict[str, Executor]:
    """Every declared executor by name, in module-name order (discovered once; :func:`refresh`
    forgets them).

    Raises:
        RuntimeError: two modules declare the same name.
    """
    return _EXECUTORS.get()


def refresh() -> None:
    """Forget the discovered executors, so the next lookup scans this package's ``__path__`` again."""
    _EXECUTORS.refresh()
