"""Run one model container over a job directory (issue 4, "The runner"; ``shared/DESIGN.md``,
"Containers"; the study's "One model at a time").

A job directory holds ``requests.jsonl`` (written by the runner) and ``responses.jsonl`` (appended by
the worker inside the container, one line per sample, flushed per line). :func:`run_job` starts the
family image with:

* ``network_mode="none"``, ``read_only=True`` root with a tmpfs at ``/tmp``, a non-root user
  (``10001`` when the runner is root, else the caller's uid), ``cap_drop=["ALL"]``,
  ``security_opt=["no-new-privileges"]``, ``mem_limit`` (swap equal to it), a pids limit;
* the weights directory at ``/weights`` and each data root at ``/data/<i>`` read-only, the job
  directory at ``/job`` as the one writable mount;
* a GPU through ``device_requests`` when the host has one (``/dev/nvidia0`` or
  ``POINTFAIL_GPU=1``), CPU otherwise;

and enforces a wall-clock limit itself: the container is killed when the limit passes (the SDK's
``wait(timeout=)`` is only an HTTP timeout), and always removed in ``finally``. Logs stream to
``job/container.log`` and to the caller; a tqdm bar shows samples done / total, rate and ETA, read
from the responses file. Samples already answered are not requested again (the worker also skips
them), so a killed job that is run again answers every sample exactly once.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

CONTAINER_UID = 10001
JOB_MOUNT = "/job"
WEIGHTS_MOUNT = "/weights"
DATA_MOUNT = "/data"


class ContainerFailed(RuntimeError):
    """The model container exited non-zero, was killed at the wall-clock limit, or could not start.
    ``exit_code`` (None when it never ran), ``timed_out`` and ``log_tail`` (its last log lines) say
    what happened; every response written before the failure stays in the job directory."""

    def __init__(self, message: str, *, exit_code: Optional[int], timed_out: bool, log_tail: list[str]):
        super().__init__(message + ("\nlast container log lines:\n" + "\n".join(log_tail) if log_tail else ""))
        self.exit_code = exit_code
        self.timed_out = timed_out
        self.log_tail = log_tail


@dataclass
class JobResult:
    """What a job did: ``requested`` samples, ``answered`` (now in the responses file),
    ``skipped`` (answered before this run), ``exit_code``, ``seconds`` of wall time, the container
    ``settings`` it ran with (as the engine reported them), ``image_id``."""

    requested: int
    answered: int
    skipped: int
    exit_code: Optional[int]
    seconds: float
    image_id: Optional[str] = None
    settings: dict = field(default_factory=dict)


def answered_ids(responses: Path) -> set[str]:
    """Sample ids with a response line (answers and error responses alike) in ``responses``. A final
    line cut short by a kill (no ``\\n`` and not valid JSON) is ignored."""
    out: set[str] = set()
    p = Path(responses)
    if not p.is_file():
        return out
    for raw in p.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            out.add(json.loads(raw)["sample_id"])
        except (ValueError, KeyError, TypeError):
            continue
    return out


def host_has_gpu() -> bool:
    """True when an NVIDIA device node exists or ``POINTFAIL_GPU=1`` (``0`` forces CPU)."""
    env = os.environ.get("POINTFAIL_GPU")
    if env is not None:
        return env == "1"
    return Path("/dev/nvidia0").exists()


def container_user() -> str:
    """``uid:gid`` for model containers: 10001 when the runner is root, else the caller's ids."""
    if os.getuid() == 0:
        return f"{CONTAINER_UID}:{CONTAINER_UID}"
    return f"{os.getuid()}:{os.getgid()}"


def prepare_job_dir(job_dir: Path) -> None:
    """Create the job directory and hand it to the container user (when the runner is root)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    if os.getuid() == 0:
        for p in [job_dir, *job_dir.iterdir()]:
            os.chown(p, CONTAINER_UID, CONTAINER_UID)


def hardened_kwargs(*, mem_limit: str, pids_limit: int = 512, tmpfs: Optional[dict] = None) -> dict:
    """The confinement every pointfail container runs under, model jobs and tool jobs alike: the
    non-root container user, no network, read-only root filesystem with a tmpfs ``/tmp`` (plus any
    ``tmpfs`` given), all capabilities dropped, no-new-privileges, a memory limit with no swap beyond
    it, a process limit, working directory ``/tmp``, detached."""
    mounts = {"/tmp": "rw,nosuid,nodev,size=2g,mode=1777", **(tmpfs or {})}
    return dict(user=container_user(), network_mode="none", read_only=True, tmpfs=mounts, cap_drop=["ALL"],
                security_opt=["no-new-privileges"], mem_limit=mem_limit, memswap_limit=mem_limit,
                pids_limit=pids_limit, working_dir="/tmp", detach=True)


def container_kwargs(*, family: str, job_dir: Path, weights_dir: Path, data_dirs: Iterable[Path] = (),
                     batch_size: int = 1, mem_limit: str = "8g", gpu: bool = False,
                     extra_args: Iterable[str] = ()) -> dict:
    """The ``client.containers.create`` keyword arguments for one model job (see the module
    docstring for each setting); the worker command line is the contract in ``docs/architecture.md``."""
    from docker.types import DeviceRequest

    volumes = {str(Path(job_dir).resolve()): {"bind": JOB_MOUNT, "mode": "rw"},
               str(Path(weights_dir).resolve()): {"bind": WEIGHTS_MOUNT, "mode": "ro"}}
    for i, d in enumerate(data_dirs):
        volumes[str(Path(d).resolve())] = {"bind": f"{DATA_MOUNT}/{i}", "mode": "ro"}
    command = ["--family", family, "--weights", WEIGHTS_MOUNT, "--requests", f"{JOB_MOUNT}/requests.jsonl",
               "--responses", f"{JOB_MOUNT}/responses.jsonl", "--batch-size", str(batch_size),
               "--device", "cuda" if gpu else "cpu", *extra_args]
    kwargs = dict(
        **hardened_kwargs(mem_limit=mem_limit),
        command=command, volumes=volumes,
        environment={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": "/tmp/hf",
                     "XDG_CACHE_HOME": "/tmp/cache", "HOME": "/tmp", "PYTHONUNBUFFERED": "1"},
        labels={"org.pointfail.job": str(Path(job_dir).resolve()), "org.pointfail.family": family},
        name=f"pointfail-{family}-{uuid.uuid4().hex[:8]}",
    )
    if gpu:
        kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return kwargs


def unreadable_by(root: Path, uid: int, gid: int, limit: int = 100_000) -> Optional[Path]:
    """The first path under ``root`` (``root`` included) that user ``uid``/``gid`` could not read
    (a directory it cannot list and enter, a file it cannot read), by the permission bits; ``None``
    when all are readable. A bind mount exposes ``root`` itself, so its parents do not matter.
    Stops after ``limit`` entries."""
    import stat

    def ok(p: Path, need: int) -> bool:
        st = p.stat()
        if st.st_uid == uid:
            bits = need << 6
        elif st.st_gid == gid:
            bits = need << 3
        else:
            bits = need
        return (stat.S_IMODE(st.st_mode) & bits) == bits

    root = Path(root)
    if not ok(root, 0o5):
        return root
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            if not ok(Path(dirpath, d), 0o5):
                return Path(dirpath, d)
        for f in filenames:
            p = Path(dirpath, f)
            if p.is_file() and not ok(p, 0o4):
                return p
        n += len(dirnames) + len(filenames)
        if n > limit:
            break
    return None


def grant_read(root: Path) -> None:
    """``chmod -R o+rX root``: read for others on every file, read and search on every directory."""
    import stat

    for p in [Path(root), *Path(root).rglob("*")]:
        if p.is_symlink():
            continue
        mode = stat.S_IMODE(p.stat().st_mode)
        p.chmod(mode | (0o5 if p.is_dir() or mode & 0o111 else 0o4))


class _Progress:
    """Counts answered ids in the responses file incrementally (reads only new bytes)."""

    def __init__(self, path: Path, wanted: set[str]):
        self.path, self.wanted, self.pos, self.buf, self.done = path, wanted, 0, b"", set()

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except FileNotFoundError:
            return 0
        self.pos += len(chunk)
        lines = (self.buf + chunk).split(b"\n")
        self.buf = lines.pop()
        new = 0
        for raw in lines:
            try:
                sid = json.loads(raw)["sample_id"]
            except (ValueError, KeyError, TypeError):
                continue
            if sid in self.wanted and sid not in self.done:
                self.done.add(sid)
                new += 1
        return new


def run_job(client, image: str, *, family: str, job_dir: Path, requests: list[dict],
            weights_dir: Optional[Path] = None, data_dirs: Iterable[Path] = (), batch_size: int = 1,
            mem_limit: str = "8g", wall_clock_s: float = 3600.0, gpu: Optional[bool] = None,
            extra_args: Iterable[str] = (), progress: bool = True, log: Callable[[str], None] = print,
            on_progress: Optional[Callable[[int, object], None]] = None,
            fix_permissions: bool = False) -> JobResult:
    """Run ``image`` (a family image whose entrypoint is ``python -m pointfail.worker``) over
    ``requests`` in ``job_dir``.

    Args:
        requests: request dicts in the worker's format (``sample_id``, ``image`` as a path *inside*
            the container, ``prompt``, ``task``, ``max_new_tokens``); written to
            ``job_dir/requests.jsonl``.
        weights_dir: mounted read-only at ``/weights`` (an empty directory is mounted when None).
        data_dirs: host directories mounted read-only at ``/data/0``, ``/data/1``, … in order.
        wall_clock_s: seconds after which the runner kills the container.
        on_progress: called as ``on_progress(done, container)`` after each poll (tests use it to kill
            a container mid-run).
        fix_permissions: when the runner is root and a read-only mount is not readable by the
            container user, add read (and, for directories, search) permission for others
            (``chmod -R o+rX``) instead of failing.

    Returns:
        :class:`JobResult`. When every request already has a response no container is started.

    Raises:
        ContainerFailed: non-zero exit, wall-clock kill, or the engine refused to start it.
    """
    from docker.errors import APIError, NotFound
    from tqdm import tqdm

    job_dir = Path(job_dir).resolve()
    prepare_job_dir(job_dir)
    req_path, resp_path = job_dir / "requests.jsonl", job_dir / "responses.jsonl"
    done_before = answered_ids(resp_path)
    wanted = {r["sample_id"] for r in requests}
    pending = [r for r in requests if r["sample_id"] not in done_before]
    skipped = len(wanted & done_before)
    if not pending:
        log(f"[run] {family}: all {len(wanted)} samples already answered in {resp_path}; no container started")
        return JobResult(len(wanted), len(wanted & done_before), skipped, 0, 0.0)
    with open(req_path, "w", encoding="utf-8", newline="\n") as f:
        for r in pending:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    empty = job_dir / ".no-weights"
    if weights_dir is None:
        empty.mkdir(exist_ok=True)
    prepare_job_dir(job_dir)
    if os.getuid() == 0:  # the container runs as 10001: every read-only mount must be readable by it
        for src in [Path(weights_dir or empty), *data_dirs]:
            bad = unreadable_by(Path(src), CONTAINER_UID, CONTAINER_UID)
            if bad is not None and fix_permissions:
                grant_read(Path(src))
                log(f"[run] made {src} readable by others (o+rX) for the container user")
                bad = unreadable_by(Path(src), CONTAINER_UID, CONTAINER_UID)
            if bad is not None:
                raise ContainerFailed(f"{bad} is not readable by the container user {CONTAINER_UID} "
                                      f"(make it world-readable: chmod -R o+rX {src})", exit_code=None,
                                      timed_out=False, log_tail=[])
    use_gpu = host_has_gpu() if gpu is None else gpu
    kwargs = container_kwargs(family=family, job_dir=job_dir, weights_dir=Path(weights_dir or empty),
                              data_dirs=data_dirs, batch_size=batch_size, mem_limit=mem_limit, gpu=use_gpu,
                              extra_args=extra_args)
    tail: deque[str] = deque(maxlen=40)
    log_file = job_dir / "container.log"
    t0 = time.monotonic()
    container = None
    timed_out = False
    exit_code: Optional[int] = None
    settings: dict = {}
    image_id = None
    prog = _Progress(resp_path, {r["sample_id"] for r in pending})
    bar = tqdm(total=len(wanted), initial=skipped, unit="sample", desc=family, disable=not progress,
               dynamic_ncols=True)
    try:
        try:
            container = client.containers.create(image, **kwargs)
            container.start()
        except APIError as e:
            raise ContainerFailed(f"could not start {image}: {e}", exit_code=None, timed_out=False,
                                  log_tail=[]) from e
        container.reload()
        image_id = container.image.id
        settings = {k: container.attrs[k] for k in ("HostConfig", "Config", "Mounts")}

        def _stream() -> None:
            with open(log_file, "ab") as lf:
                try:
                    for chunk in container.logs(stream=True, follow=True):
                        lf.write(chunk)
                        lf.flush()
                        for line in chunk.decode("utf-8", "replace").splitlines():
                            tail.append(line)
                            if progress:
                                tqdm.write(f"[{family}] {line}")
                            else:
                                log(f"[{family}] {line}")
                except (APIError, NotFound, OSError, ValueError):
                    return

        streamer = threading.Thread(target=_stream, daemon=True)
        streamer.start()
        deadline = t0 + wall_clock_s
        while True:
            bar.update(prog.poll())
            if on_progress is not None:
                on_progress(len(prog.done), container)
            container.reload()
            if container.status in ("exited", "dead"):
                exit_code = container.attrs["State"]["ExitCode"]
                break
            if time.monotonic() > deadline:
                timed_out = True
                container.kill()
                exit_code = None
                break
            time.sleep(0.25)
        streamer.join(timeout=5)
        bar.update(prog.poll())
    finally:
        bar.close()
        if container is not None:
            try:
                container.remove(force=True)
            except NotFound:
                pass
    seconds = round(time.monotonic() - t0, 3)
    answered = len(answered_ids(resp_path) & wanted)
    if timed_out:
        raise ContainerFailed(f"{family}: killed at the wall-clock limit of {wall_clock_s:.0f} s "
                              f"({answered}/{len(wanted)} answered; responses kept in {resp_path})",
                              exit_code=None, timed_out=True, log_tail=list(tail)[-20:])
    if exit_code != 0:
        raise ContainerFailed(f"{family}: container exited with {exit_code} "
                              f"({answered}/{len(wanted)} answered; responses kept in {resp_path})",
                              exit_code=exit_code, timed_out=False, log_tail=list(tail)[-20:])
    return JobResult(len(wanted), answered, skipped, exit_code, seconds, image_id, settings)
