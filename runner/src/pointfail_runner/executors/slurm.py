"""The Slurm executor: one ``sbatch`` job array per model, array index = shard
(``pointfail-runner submit --executor slurm``; issue 18).

For each model ``submit`` writes ``<run>/<model>/slurm/array.sbatch`` and submits it with
``sbatch --parsable`` (argument lists, no shell). The batch script is a small Python program (the
``#SBATCH`` lines are comments to Python; ``sbatch`` reads them, whatever the interpreter):

* it takes its shard from ``SLURM_ARRAY_TASK_ID``, appends a ``start`` line to the shard's
  ``attempts.jsonl`` (job, restart count, host, time), runs the runtime's command as an argument list,
  forwards ``SIGTERM`` to it (Slurm sends ``SIGTERM`` on ``scancel``, ``scontrol requeue``, a node
  failure's requeue and the time limit, then ``SIGKILL`` after ``KillWait``), and appends an ``end``
  line with the exit code;
* ``--requeue`` lets Slurm requeue a shard whose node failed; a requeued shard resumes (samples
  already answered are not asked again) and ``merge`` counts a sample once even if it was answered
  twice; ``--time`` is the per-shard time limit; ``--gres=gpu:N`` requests the model's GPUs;
  ``--cpus-per-task`` and ``--mem`` the rest.

Runtimes (a per-cluster setting, ``[slurm] runtime``):

* ``docker``: the node's own Docker Engine. The step runs ``<python> -m pointfail_runner shard``,
  which runs the pinned image id over the staged shard with the hardened settings and removes the
  container on ``SIGTERM``; the allocated GPUs (``SLURM_JOB_GPUS``) are passed as device ids. Nodes
  without the image load it from the run's ``docker save`` archive (``ship_images = true``).
* ``pyxis``: ``srun --container-image=<squashfs file or registry reference by digest>`` with the
  shard's folders mounted (``--container-mounts``), ``--container-readonly``,
  ``--no-container-remap-root``, ``--no-container-mount-home``, and the worker command.
* ``apptainer``: ``apptainer exec --containall --cleanenv --no-home --no-privs --net --network none``
  with ``--bind`` mounts, on a SIF file.

What each runtime can enforce of the hardened settings: :data:`pointfail_runner.executors.ENFORCEMENT`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from ..plan import PlanError
from . import Executor, Submission, load_settings, pin_models, prepare

WORKER = ["/opt/venv/bin/python", "-m", "pointfail.running.worker"]
"""The worker inside every model image (the images' exec-form ENTRYPOINT)."""

WORKER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": "/tmp/hf", "XDG_CACHE_HOME": "/tmp/cache",
              "HOME": "/tmp", "PYTHONUNBUFFERED": "1"}


class SlurmSettings(BaseModel):
    """``[slurm]`` of the cluster settings file (every key optional).

    ``runtime``: docker | pyxis | apptainer; ``partition``, ``account``, ``qos``; ``time_limit`` per
    shard (Slurm's ``--time`` syntax); ``cpus_per_task``; ``mem`` per shard (Slurm's ``--mem``, also the
    Docker runtime's container memory limit); ``max_parallel`` shards of a model at once (the array's
    ``%N``; 0: no limit); ``gres`` the GPU gres name; ``python`` the runner's interpreter on the nodes
    (docker runtime; default this one); ``image_source`` files | registry and ``image_dir`` /
    ``registry`` (pyxis and apptainer: where the squashfs/SIF files or the images by digest are);
    ``ship_images`` (docker runtime: ``docker save`` each image into the run folder for nodes that lack
    it); ``sbatch_args`` extra ``sbatch`` arguments (a list); ``sbatch``/``squeue``/``srun``/``apptainer``
    the commands."""

    model_config = ConfigDict(extra="forbid")

    runtime: Literal["docker", "pyxis", "apptainer"] = "docker"
    partition: Optional[str] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    time_limit: str = Field(default="02:00:00", pattern=r"^[0-9:-]+$")
    cpus_per_task: int = Field(default=1, ge=1)
    mem: str = Field(default="8G", pattern=r"^[0-9]+[KMGT]?$")
    max_parallel: int = Field(default=0, ge=0)
    gres: str = "gpu"
    python: str = sys.executable
    image_source: Literal["files", "registry"] = "files"
    image_dir: Optional[str] = None
    registry: Optional[str] = None
    push: bool = False
    ship_images: bool = False
    wall_clock_s: int = Field(default=6 * 3600, gt=0)
    sbatch_args: list[str] = Field(default_factory=list)
    sbatch: str = "sbatch"
    squeue: str = "squeue"
    srun: str = "srun"
    apptainer: str = "apptainer"

    @classmethod
    def load(cls, path: Optional[Path], **overrides) -> "SlurmSettings":
        """From ``[slurm]`` of ``path`` with ``overrides`` (those not ``None``) on top. Raises
        :class:`PlanError` naming each bad key."""
        return load_settings(cls, path, "slurm", overrides)

    def docker_mem_limit(self) -> str:
        """``mem`` as a Docker memory limit (``8G`` -> ``8g``; a bare number is megabytes, as in Slurm)."""
        return self.mem.lower() if self.mem[-1].isalpha() else f"{self.mem}m"


def image_file(settings: SlurmSettings, built) -> str:
    """The squashfs (pyxis) or SIF (apptainer) file of an image in ``image_dir``, named by its image id
    (``pointfail-<image>-<id12>.sqsh|.sif``), so a file pins its content."""
    if not settings.image_dir:
        raise PlanError(f"runtime {settings.runtime} with image_source = \"files\" needs [slurm] image_dir")
    ext = "sqsh" if settings.runtime == "pyxis" else "sif"
    return str(Path(settings.image_dir) / f"pointfail-{built.name}-{built.id.split(':', 1)[1][:12]}.{ext}")


def convert_command(settings: SlurmSettings, built, dest: str) -> list[str]:
    """The command that makes ``dest`` from the local Docker Engine's image: ``enroot import`` for
    pyxis, ``apptainer build`` for Apptainer."""
    if settings.runtime == "pyxis":
        return ["enroot", "import", "-o", dest, f"dockerd://{built.id}"]
    return [settings.apptainer, "build", dest, f"docker-daemon:{built.tag}"]


def runtime_reference(settings: SlurmSettings, client, built, log: Callable[[str], None] = print) -> str:
    """What the runtime runs: the image id (docker), a file made from the image (files; converted here
    when the converter is on PATH) or the image by registry digest (registry).

    Raises:
        PlanError: a file is missing and cannot be made here (the message has the command).
    """
    from . import registry_reference

    if settings.runtime == "docker":
        return built.id
    if settings.image_source == "registry":
        if not settings.registry:
            raise PlanError("image_source = \"registry\" needs [slurm] registry")
        ref = registry_reference(client, built, settings.registry, push=settings.push, log=log)
        if settings.runtime == "pyxis":  # enroot URI: REGISTRY#IMAGE@DIGEST
            host, _, rest = ref.partition("/")
            return f"{host}#{rest}"
        return f"docker://{ref}"
    dest = image_file(settings, built)
    if not Path(dest).is_file():
        cmd = convert_command(settings, built, dest)
        if shutil.which(cmd[0]) is None:
            raise PlanError(f"{dest} is missing; make it on a machine with the image: {' '.join(cmd)}")
        log(f"[submit] {' '.join(cmd)}")
        subprocess.run(cmd, check=True)
    return dest


def shard_mounts(run, model: str, mr) -> list[tuple[str, str, str]]:
    """``(host path, container path, ro|rw)`` of a shard's mounts; ``{index}`` in host paths is the
    array index."""
    from ..container import IMAGES_MOUNT, JOB_MOUNT, REQUESTS_MOUNT, WEIGHTS_MOUNT

    shard = str(run.model_dir(model) / "shards" / "{index}")
    mounts = [(f"{shard}/requests", REQUESTS_MOUNT, "ro"), (f"{shard}/images", IMAGES_MOUNT, "ro"),
              (f"{shard}/out", JOB_MOUNT, "rw")]
    mounts.append((mr.weights or f"{shard}/no-weights", WEIGHTS_MOUNT, "ro"))
    return mounts


def step_command(settings: SlurmSettings, plan, run, model, mr) -> list[str]:
    """The argument list the batch script runs for a shard (``{index}`` = the array index)."""
    from ..container import JOB_MOUNT, REQUESTS_MOUNT, WEIGHTS_MOUNT

    if settings.runtime == "docker":
        return [settings.python, "-m", "pointfail_runner", "shard", "--run-dir", str(run.root), "--model", model.name,
                "--index", "{index}", "--mem-limit", settings.docker_mem_limit(),
                "--wall-clock", str(settings.wall_clock_s)]
    device = "cuda" if model.gpus else "cpu"
    worker = WORKER + mr.worker_args(model.family, list(plan.benchmarks), device=device, requests_mount=REQUESTS_MOUNT,
                                     responses_mount=JOB_MOUNT, weights_mount=WEIGHTS_MOUNT)
    mounts = shard_mounts(run, model.name, mr)
    if settings.runtime == "pyxis":
        return [settings.srun, "--ntasks=1", f"--container-image={mr.reference}",
                "--container-mounts=" + ",".join(f"{s}:{d}:{o}" if o == "ro" else f"{s}:{d}" for s, d, o in mounts),
                "--container-readonly", "--no-container-remap-root", "--no-container-mount-home",
                "--container-workdir=/tmp", *worker]
    return [settings.apptainer, "exec", "--containall", "--cleanenv", "--no-home", "--no-privs", "--net",
            "--network", "none", *[a for s, d, o in mounts for a in ("--bind", f"{s}:{d}:{o}")],
            *[a for k, v in WORKER_ENV.items() for a in ("--env", f"{k}={v}")], mr.reference, *worker]


LAUNCHER = '''\
"""pointfail shard launcher, written by pointfail-runner submit: runs shard $SLURM_ARRAY_TASK_ID of
model {model} (study {study}). No shell: the command is an argument list; SIGTERM is forwarded."""
import json, os, signal, socket, subprocess, sys, time

COMMAND = json.loads({command!r})
SHARDS = {shards!r}
ENV = json.loads({env!r})


def note(index, event):
    event.update(job=os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("SLURM_JOB_ID"), task=index,
                 restart=int(os.environ.get("SLURM_RESTART_COUNT") or 0), host=socket.gethostname(),
                 time=round(time.time(), 3))
    fd = os.open(os.path.join(SHARDS, index, "attempts.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, (json.dumps(event, sort_keys=True) + "\\n").encode())
    finally:
        os.close(fd)


def main():
    index = str(int(os.environ["SLURM_ARRAY_TASK_ID"]))
    argv = [a.replace("{{index}}", index) for a in COMMAND]
    note(index, {{"event": "start"}})
    child = subprocess.Popen(argv, env={{**os.environ, **ENV}})
    signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signal.SIGTERM))
    rc = child.wait()
    note(index, {{"event": "end", "rc": rc}})
    return rc


if __name__ == "__main__":
    sys.exit(main())
'''


def batch_script(settings: SlurmSettings, plan, run, model, mr, indices: list[int]) -> str:
    """The text of ``array.sbatch`` for ``model``'s shards ``indices`` (module docstring)."""
    logs = run.executor_dir(model.name, "slurm") / "logs"
    array = ",".join(str(i) for i in indices) + (f"%{settings.max_parallel}" if settings.max_parallel else "")
    directives = [f"--job-name=pointfail-{plan.study}-{model.name}", f"--array={array}", "--requeue",
                  f"--time={settings.time_limit}", "--nodes=1", "--ntasks=1",
                  f"--cpus-per-task={settings.cpus_per_task}", f"--mem={settings.mem}",
                  f"--output={logs}/%A_%a.out", "--open-mode=append", f"--chdir={run.root}"]
    if model.gpus:
        directives.append(f"--gres={settings.gres}:{model.gpus}")
    for key in ("partition", "account", "qos"):
        if getattr(settings, key):
            directives.append(f"--{key}={getattr(settings, key)}")
    directives += settings.sbatch_args
    for d in directives:
        if "\n" in d or not d.startswith("--"):
            raise PlanError(f"sbatch argument {d!r}: one --option per entry, no newlines")
    env = dict(WORKER_ENV) if settings.runtime == "pyxis" else {}
    body = LAUNCHER.format(model=model.name, study=plan.study, shards=str(run.model_dir(model.name) / "shards"),
                           command=json.dumps(step_command(settings, plan, run, model, mr)), env=json.dumps(env))
    return "#!/usr/bin/env python3\n" + "".join(f"#SBATCH {d}\n" for d in directives) + body


def sbatch(settings: SlurmSettings, script: Path, env: Optional[dict] = None) -> str:
    """Submit ``script`` with ``sbatch --parsable``; returns the job id. Raises :class:`PlanError`
    with sbatch's message when it refuses."""
    r = subprocess.run([settings.sbatch, "--parsable", str(script)], capture_output=True, text=True, env=env,
                       check=False)
    if r.returncode != 0:
        raise PlanError(f"sbatch {script} failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout.strip().split(";", 1)[0]


def submit(plan_file: Path, *, repo: Path, run_dir: Optional[Path] = None, data_root: Optional[Path] = None,
           weights_root: Optional[Path] = None, models: Optional[list[str]] = None, missing: bool = False,
           variant: str = "cpu", settings: Optional[SlurmSettings] = None, client=None, dry_run: bool = False,
           env: Optional[dict] = None, base_lock: Optional[Path] = None,
           log: Callable[[str], None] = print) -> Submission:
    """Pin, stage and submit one job array per model (module docstring). ``dry_run`` writes the batch
    scripts without calling ``sbatch``. ``detail`` maps each model to ``{"script", "job_id",
    "shards"}``; the job ids are also appended to ``<run>/<model>/slurm/jobs.jsonl`` (for ``status``).

    Raises:
        PlanError: the plan, data or images cannot be used, or sbatch refused.
    """
    from ..engine import ensure_engine
    from ..shards import stage_shards

    settings = settings or SlurmSettings()
    plan, run, study, roots, shards = prepare(plan_file, repo=repo, run_dir=run_dir, data_root=data_root,
                                              weights_root=weights_root, models=models, missing=missing,
                                              scheduler=lambda r, p: scheduler_states(r, p, settings, env), log=log)
    by_model: dict[str, list[int]] = {}
    for m, i in shards:
        by_model.setdefault(m.name, []).append(i)
    if not by_model:
        return Submission(run, {}, {})
    client = client or ensure_engine()

    def archive(built, name):
        if settings.runtime != "docker" or not settings.ship_images:
            return None
        dest = run.root / "images" / f"{built.name}-{built.id.split(':', 1)[1][:12]}.tar"
        if not dest.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            log(f"[submit] saving {built.tag} to {dest}")
            tmp = dest.with_suffix(".tar.tmp")
            with open(tmp, "wb") as f:
                for chunk in client.images.get(built.id).save(named=True):
                    f.write(chunk)
            tmp.replace(dest)
        return str(dest)

    runs = pin_models(plan, run, repo=repo, study=study, roots=roots, models=list(by_model), variant=variant,
                      client=client, reference=lambda built, name: runtime_reference(settings, client, built, log),
                      archive=archive, base_lock=base_lock, log=log)
    stage_shards(plan, run, study=study, roots=roots, shards=shards, log=log)
    detail = {}
    for name, indices in by_model.items():
        m = plan.model(name)
        d = run.executor_dir(name, "slurm")
        (d / "logs").mkdir(parents=True, exist_ok=True)
        script = d / "array.sbatch"
        script.write_text(batch_script(settings, plan, run, m, runs[name], indices), encoding="utf-8")
        script.chmod(0o755)
        job_id = None if dry_run else sbatch(settings, script, env)
        if job_id:
            with open(d / "jobs.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps({"job_id": job_id, "shards": indices}, sort_keys=True) + "\n")
        log(f"[slurm] {name}: shards {indices} " + (f"submitted as job {job_id}" if job_id else f"written to {script}"))
        detail[name] = {"script": str(script), "job_id": job_id, "shards": indices}
    return Submission(run, by_model, detail)


def submitted_jobs(run, model: str) -> list[dict]:
    """The job arrays submitted for ``model`` (``<run>/<model>/slurm/jobs.jsonl``), oldest first."""
    p = run.executor_dir(model, "slurm") / "jobs.jsonl"
    out = []
    if p.is_file():
        for line in p.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def scheduler_states(run, plan, settings: Optional[SlurmSettings] = None,
                     env: Optional[dict] = None) -> Callable[[str, int], Optional[str]]:
    """``state(model, shard)`` from ``squeue`` for the arrays this run submitted (the newest array
    holding a shard wins); ``None`` for a shard squeue no longer lists. Without ``squeue`` every state
    is ``None`` (status then reads the attempts files alone)."""
    settings = settings or SlurmSettings()
    table: dict[tuple[str, int], str] = {}
    if shutil.which(settings.squeue) is None:
        return lambda model, shard: None
    for m in plan.models:
        for job in submitted_jobs(run, m.name):
            r = subprocess.run([settings.squeue, "-h", "-r", "-j", str(job["job_id"]), "-o", "%K %T"],
                               capture_output=True, text=True, env=env, check=False)
            if r.returncode != 0:
                continue
            for line in r.stdout.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0].isdigit():
                    table[(m.name, int(parts[0]))] = parts[1]
    return lambda model, shard: table.get((model, shard))


def submit_command(plan_file: Path, args, common: dict) -> int:
    """``pointfail-runner submit --executor slurm``: one job array per model (``--cluster``,
    ``--runtime``, ``--partition``, ``--time-limit``, ``--max-parallel``, ``--registry``, ``--dry-run``)."""
    settings = SlurmSettings.load(args.cluster, runtime=args.runtime, partition=args.partition,
                                  time_limit=args.time_limit, max_parallel=args.max_parallel, registry=args.registry)
    submit(plan_file, settings=settings, dry_run=args.dry_run, **common)
    return 0


EXECUTOR = Executor("slurm", "one sbatch job array per model (array index = shard)", submit_command)
