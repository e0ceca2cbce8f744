"""Run one model container over a job folder (issue 4, "The runner"; issue 12, "The host never
follows what a container made"; ``shared/DESIGN.md``, "Containers").

The runner is root and a model container is untrusted, so a job folder is laid out so that nothing
the container can write is ever a path the runner writes through, follows or changes permissions by::

    <job>/                    runner-owned (never mounted writable)
        .lock                 the runner's lock: one runner per job at a time
        requests/requests.jsonl  written atomically by the runner -> /requests/requests.jsonl (ro)
        images/<n><ext>       the samples' images, nothing else   -> /images (ro)
        no-weights/           an empty folder for weight-free families
        container.log         the container's log, capped, written by the runner
        out/                  the container's one writable folder -> /job (rw)
            responses.jsonl   appended by the worker, read by the runner with O_NOFOLLOW

* ``out/`` is created by the runner and handed to the container user through its open descriptor
  (``fchown``), never by path; nothing inside it is chowned, chmodded, followed or written by the
  runner. Its responses file is read with :func:`pointfail.running.jobs.read_responses`: a symlink, FIFO or
  device planted there is refused with a clear error, a hostile line becomes an explained error for
  its sample. Its size is capped (:func:`responses_cap`) and watched while the container runs, inside
  its wall clock: a container whose file grows past the cap (a sparse file costs it nothing) is killed
  then, and the file is refused before the runner reads a byte of it.
* **Model containers see only the images.** Each request's image is copied (or hard-linked when the
  file is already world-readable on the same disk) into ``images/`` under a neutral name, after
  checking that its resolved path is inside the benchmark's data folder. The benchmark's metadata
  (target boxes, masks) and scene graphs are never mounted.
* The weights folder is mounted read-only; :func:`grant_read` (``fix_permissions``) changes modes
  only under the weights folder the study declared, through descriptors opened with ``O_NOFOLLOW``.
* Container settings: ``network_mode="none"``, read-only root with a tmpfs ``/tmp``, a non-root user
  (``10001`` when the runner is root, else the caller's uid), ``cap_drop=["ALL"]``,
  ``no-new-privileges``, ``mem_limit`` (swap equal to it), a pids limit; a GPU through
  ``device_requests`` when the host has one. The wall-clock limit is enforced here (kill; the SDK's
  ``wait(timeout=)`` is only an HTTP timeout) and the container is always removed in ``finally``.
* Logs: at most :data:`~pointfail.limits.MAX_CONTAINER_LOG_BYTES` are kept in ``container.log``;
  lines shown on the operator's terminal have control characters (escape sequences) made visible
  and are cut at :data:`~pointfail.limits.MAX_LOG_LINE_CHARS`.

A tqdm bar shows samples done / total. Samples already answered are not requested again (the worker
also skips them), so a killed job that is run again answers every sample exactly once.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

from pointfail.limits import MAX_CONTAINER_LOG_BYTES, MAX_LOG_LINE_CHARS

CONTAINER_UID = 10001
JOB_MOUNT = "/job"
REQUESTS_MOUNT = "/requests"
IMAGES_MOUNT = "/images"
WEIGHTS_MOUNT = "/weights"

FINAL_READ_GRACE_S = 30.0
"""Seconds the runner's count of a finished container's responses may run past the job's wall clock
(:func:`answered_ids` with a deadline): the host's read is bounded in time as well as in bytes."""

MAX_RESPONSES_BYTES = 1 << 30
"""Bytes a container's ``responses.jsonl`` may hold at most (1 GiB), whatever the job's size."""


def responses_cap(n_samples: int) -> int:
    """The size cap of one job's responses file in bytes: one line of at most
    :data:`~pointfail.limits.MAX_RESPONSE_LINE_BYTES` per requested sample plus 64 MiB, at most
    :data:`MAX_RESPONSES_BYTES`. A container that writes more (a sparse file costs it nothing and the
    host a full read) is killed while it runs, or its file refused before the runner reads a byte."""
    from pointfail.limits import MAX_RESPONSE_LINE_BYTES

    return min(MAX_RESPONSES_BYTES, max(1, n_samples) * MAX_RESPONSE_LINE_BYTES + (64 << 20))


def _over_cap(wanted: "dict[Path, set[str]]") -> Optional[str]:
    """Why a responses file of ``wanted`` is over its :func:`responses_cap` (``lstat``: a link is not
    followed), or ``None``."""
    for f, ids in wanted.items():
        try:
            size = os.lstat(f).st_size
        except OSError:
            continue
        cap = responses_cap(len(ids))
        if size > cap:
            return (f"{f} is {size} bytes, over the cap of {cap} bytes for {len(ids)} samples; not read "
                    f"(remove {f.parent} to start the job afresh)")
    return None


IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff"})


class ContainerFailed(RuntimeError):
    """The model container exited non-zero, was killed at the wall-clock limit, could not start, or
    left its job folder in a state the runner refuses to read (a symlink in place of the responses
    file). ``exit_code`` (None when it never ran), ``timed_out`` and ``log_tail`` (its last log lines,
    made printable) say what happened; every response written before the failure stays in the job
    folder."""

    def __init__(self, message: str, *, exit_code: Optional[int], timed_out: bool, log_tail: list[str]):
        super().__init__(message + ("\nlast container log lines:\n" + "\n".join(log_tail) if log_tail else ""))
        self.exit_code = exit_code
        self.timed_out = timed_out
        self.log_tail = log_tail


@dataclass(frozen=True)
class JobPaths:
    """The files and folders of one job folder (see the module docstring)."""

    root: Path

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def requests_dir(self) -> Path:
        return self.root / "requests"

    @property
    def requests(self) -> Path:
        return self.root / "requests" / "requests.jsonl"

    @property
    def images(self) -> Path:
        return self.root / "images"

    @property
    def no_weights(self) -> Path:
        return self.root / "no-weights"

    @property
    def log(self) -> Path:
        return self.root / "container.log"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def responses(self) -> Path:
        return self.root / "out" / "responses.jsonl"

    def cell_requests(self, cell: str) -> Path:
        """``requests/<cell>.jsonl``: the requests of one cell of a multi-cell job (a shard)."""
        return self.requests_dir / f"{cell}.jsonl"

    def cell_responses(self, cell: str) -> Path:
        """``out/<cell>.jsonl``: the responses of one cell of a multi-cell job."""
        return self.out / f"{cell}.jsonl"


@dataclass
class JobResult:
    """What a job did: ``requested`` samples, ``answered`` (now in the responses file),
    ``skipped`` (answered before this run), ``exit_code``, ``seconds`` of wall time, the container
    ``settings`` it ran with (as the engine reported them), ``image_id``, and ``problems``: lines of
    the responses file that belong to no requested sample, and images that could not be staged."""

    requested: int
    answered: int
    skipped: int
    exit_code: Optional[int]
    seconds: float
    image_id: Optional[str] = None
    settings: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def answered_ids(responses: Path, wanted: Optional[set[str]] = None, deadline: Optional[float] = None) -> set[str]:
    """Sample ids with a response line (answers, error responses and explained invalid lines alike)
    in ``responses`` (:func:`pointfail.running.jobs.read_responses`). A final line cut short by a kill is
    ignored. With ``wanted``, at most :func:`responses_cap` bytes are read (the rest is not); with
    ``deadline`` (``time.monotonic()``), reading stops there (what is not read counts as unanswered
    and is read by the next run).

    Raises:
        pointfail.running.jobs.JobFileError: the file is a symlink or not a regular file.
    """
    from pointfail.running.jobs import read_responses

    if wanted is None:
        return read_responses(responses).answered
    return read_responses(responses, wanted, max_total_bytes=responses_cap(len(wanted)), deadline=deadline).answered


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


# ----------------------------------------------------------------------------------- job folder


def _is_plain_dir(p: Path) -> bool:
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise ContainerFailed(f"{p} exists and is not a plain folder (a symlink or a file); the runner does not "
                              f"follow it; remove it to start the job afresh", exit_code=None, timed_out=False,
                              log_tail=[])
    return True


def prepare_job_dir(job_dir: Path) -> JobPaths:
    """Create the job folder layout (module docstring) and return its paths.

    Every runner-owned folder is checked with ``lstat`` (a symlink in its place is refused). ``out/``
    is created ``0755`` and, when the runner is root, given to the container user through its open
    descriptor (``O_NOFOLLOW | O_DIRECTORY`` + ``fchown``); nothing inside it is touched.

    Raises:
        ContainerFailed: a runner-owned path is a symlink or not a folder.
    """
    paths = JobPaths(Path(job_dir))
    for d in (paths.root, paths.requests_dir, paths.images, paths.no_weights):
        if not _is_plain_dir(d):
            d.mkdir(parents=(d == paths.root), mode=0o755)
    if not _is_plain_dir(paths.out):
        paths.out.mkdir(mode=0o755)
    fd = os.open(paths.out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.getuid() == 0:
            os.fchown(fd, CONTAINER_UID, CONTAINER_UID)
        os.fchmod(fd, 0o755)
    finally:
        os.close(fd)
    return paths


def _link_or_copy(src: Path, dst: Path) -> None:
    """Hard-link ``src`` to ``dst`` when it is a world-readable regular file on the same disk, else
    copy its bytes into a new ``0644`` file (the source is opened with ``O_NOFOLLOW`` after its path
    was resolved, so the file copied is the one checked)."""
    from pointfail.safeio import open_regular

    fd = open_regular(src, nofollow=True)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o004 and st.st_dev == os.stat(dst.parent).st_dev:
            try:
                os.link(src, dst, follow_symlinks=False)
                return
            except OSError:
                pass
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "rb", closefd=False) as fi, os.fdopen(out, "wb") as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
    finally:
        os.close(fd)


def stage_images(requests: list[dict], paths: JobPaths, data_root: Optional[Path],
                 subdir: Optional[str] = None) -> tuple[list[dict], dict[str, str]]:
    """Put each request's image into ``paths.images`` as ``<n><suffix>`` and point the request at
    ``/images/<n><suffix>``. ``n`` is the request's position, ``suffix`` its image's suffix when it is
    an image suffix (``.png``, ``.jpg``, ...), else ``.img``.

    Args:
        requests: request dicts whose ``image`` is a path on the host.
        data_root: when given, every image's resolved path must be inside it.
        subdir: stage into ``images/<subdir>/`` (``/images/<subdir>/<n><suffix>``) instead, replacing
            only that folder: one per cell of a multi-cell job (a name from the study, an identifier).

    Returns:
        ``(staged_requests, errors)``: the requests that can run, and ``{sample_id: reason}`` for
        those whose image is outside ``data_root``, missing or not a regular file.
    """
    from pointfail.safeio import UnsafeFileError

    dest, mount = (paths.images / subdir, f"{IMAGES_MOUNT}/{subdir}") if subdir else (paths.images, IMAGES_MOUNT)
    if dest.exists():
        shutil.rmtree(dest)  # runner-owned, never mounted writable; rmtree does not follow links
    dest.mkdir(mode=0o755)
    root = Path(data_root).resolve() if data_root is not None else None
    staged, errors = [], {}
    for i, r in enumerate(requests):
        src = Path(r["image"]).resolve()
        if root is not None and not src.is_relative_to(root):
            errors[r["sample_id"]] = f"image {r['image']} resolves to {src}, outside the data folder {root}"
            continue
        suffix = src.suffix.lower() if src.suffix.lower() in IMAGE_SUFFIXES else ".img"
        name = f"{i:06d}{suffix}"
        try:
            _link_or_copy(src, dest / name)
        except (OSError, UnsafeFileError) as e:
            errors[r["sample_id"]] = f"image {r['image']} cannot be staged: {e}"
            continue
        staged.append({**r, "image": f"{mount}/{name}"})
    return staged, errors


# ---------------------------------------------------------------------------------- permissions


def _readable_by(p: Path, uid: int, gid: int, need: int) -> bool:
    """Whether user ``uid``/``gid`` has the permission bits ``need`` (an octal triple such as
    ``0o5`` for read and search, ``0o4`` for read) on ``p``, by its owner/group/other bits as
    ``lstat`` reports them (a symlink is not followed). Raises ``OSError`` when ``p`` cannot be
    stat'ed."""
    st = os.lstat(p)
    if st.st_uid == uid:
        bits = need << 6
    elif st.st_gid == gid:
        bits = need << 3
    else:
        bits = need
    return (stat.S_IMODE(st.st_mode) & bits) == bits


def _first_unreadable_entry(dirpath: str, dirnames: list[str], filenames: list[str],
                            uid: int, gid: int) -> Optional[Path]:
    """Of one ``os.walk`` step (``dirpath`` with its ``dirnames`` and ``filenames``), the first
    directory user ``uid``/``gid`` could not list and enter, else the first regular file it could
    not read; ``None`` when all are readable. Symlinks and other non-regular files are skipped.
    Raises ``OSError`` when an entry cannot be stat'ed."""
    for d in dirnames:
        if not os.path.islink(os.path.join(dirpath, d)) and not _readable_by(Path(dirpath, d), uid, gid, 0o5):
            return Path(dirpath, d)
    for f in filenames:
        p = Path(dirpath, f)
        if stat.S_ISREG(os.lstat(p).st_mode) and not _readable_by(p, uid, gid, 0o4):
            return p
    return None


def unreadable_by(root: Path, uid: int, gid: int, limit: int = 100_000) -> Optional[Path]:
    """The first path under ``root`` (``root`` included) that user ``uid``/``gid`` could not read
    (a directory it cannot list and enter, a file it cannot read), by the permission bits; ``None``
    when all are readable. Symlinks are not followed. Stops after ``limit`` entries."""
    root = Path(root)
    if not _readable_by(root, uid, gid, 0o5):
        return root
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        bad = _first_unreadable_entry(dirpath, dirnames, filenames, uid, gid)
        if bad is not None:
            return bad
        n += len(dirnames) + len(filenames)
        if n > limit:
            break
    return None


def grant_read(root: Path, *, allowed_root: Optional[Path] = None) -> int:
    """``chmod -R o+rX root`` without following anything: read for others on every regular file,
    read and search on every folder, each changed through a descriptor opened with ``O_NOFOLLOW``
    (symlinks, FIFOs and devices are skipped, never opened). Returns the number of entries changed.

    Args:
        allowed_root: ``root`` must resolve inside it (the study's declared weights root).

    Raises:
        ValueError: ``root`` is outside ``allowed_root``, or is itself a symlink.
    """
    root = Path(root)
    if os.path.islink(root):
        raise ValueError(f"{root} is a symlink; permissions are changed only on the folder itself")
    if allowed_root is not None:
        r, a = root.resolve(), Path(allowed_root).resolve()
        if r != a and not r.is_relative_to(a):
            raise ValueError(f"{root} is outside the declared root {a}; its permissions are not changed")
    changed = 0

    def fix(dir_fd: Optional[int], name: Union[str, Path]) -> Optional[int]:
        nonlocal changed
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENXIO, errno.EACCES):
                return None
            raise
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            new = mode | 0o005
        elif stat.S_ISREG(st.st_mode):
            new = mode | (0o005 if mode & 0o111 else 0o004)
        else:
            os.close(fd)
            return None
        if new != mode:
            os.fchmod(fd, new)
            changed += 1
        if stat.S_ISDIR(st.st_mode):
            return fd
        os.close(fd)
        return None

    stack = [fix(None, root)]
    while stack:
        dfd = stack.pop()
        if dfd is None:
            continue
        try:
            for entry in os.scandir(dfd):
                sub = fix(dfd, entry.name)
                if sub is not None:
                    stack.append(sub)
        finally:
            os.close(dfd)
    return changed


# ---------------------------------------------------------------------------------------- logs


_VISIBLE = {i: f"\\x{i:02x}" for i in range(32) if i != 9}
_VISIBLE[127] = "\\x7f"
for _c in (0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069):
    _VISIBLE[_c] = f"\\u{_c:04x}"
for _c in range(0x80, 0xA0):
    _VISIBLE[_c] = f"\\x{_c:02x}"


def printable(line: str, limit: int = MAX_LOG_LINE_CHARS) -> str:
    """``line`` safe for a terminal: control characters (escape sequences, carriage returns, C1
    controls, bidirectional overrides) written as visible ``\\xNN``/``\\uNNNN``, cut to ``limit``
    characters with a note of how many were cut."""
    s = line.translate(_VISIBLE)
    if len(s) > limit:
        s = s[:limit] + f"…[+{len(s) - limit} chars]"
    return s


class LogSink:
    """Writes container log chunks to ``container.log`` (opened by the runner with ``O_NOFOLLOW``,
    appended) up to ``cap`` bytes, and hands printable lines (at most ``cap`` bytes' worth) to
    ``echo``; keeps the last lines for :class:`ContainerFailed`. Used for model containers and for
    the servers the runner starts (:mod:`pointfail_runner.serving`)."""

    def __init__(self, path: Path, echo: Callable[[str], None], cap: int = MAX_CONTAINER_LOG_BYTES):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        self.echo, self.cap, self.kept, self.dropped = echo, cap, 0, 0
        self.tail: deque[str] = deque(maxlen=40)
        self.partial = b""

    def feed(self, chunk: bytes) -> None:
        room = self.cap - self.kept
        if room > 0:
            part = chunk[:room]
            os.write(self.fd, part)
            self.kept += len(part)
            self.dropped += len(chunk) - len(part)
            data = self.partial + part
            lines = data.split(b"\n")
            self.partial = lines.pop()[-MAX_LOG_LINE_CHARS * 4:]
            for raw in lines:
                line = printable(raw.decode("utf-8", "replace").rstrip("\r"))
                self.tail.append(line)
                self.echo(line)
            if self.kept >= self.cap:
                self.echo(f"(container log reached {self.cap} bytes; the rest is not kept)")
        else:
            self.dropped += len(chunk)

    def follow(self, container) -> threading.Thread:
        """Feed ``container``'s log (docker SDK, ``logs(stream=True, follow=True)``) into this sink
        on a daemon thread, started and returned (join it before :meth:`close`); the stream ending
        or failing (container removed, engine gone) ends the thread."""
        from docker.errors import APIError, NotFound

        def stream() -> None:
            try:
                for chunk in container.logs(stream=True, follow=True):
                    self.feed(chunk)
            except (APIError, NotFound, OSError, ValueError):
                return

        thread = threading.Thread(target=stream, daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        if self.partial:
            line = printable(self.partial.decode("utf-8", "replace"))
            self.tail.append(line)
            self.echo(line)
        if self.dropped:
            os.write(self.fd, f"\n[pointfail-runner: {self.dropped} more bytes of log were not kept]\n".encode())
        os.close(self.fd)


# ------------------------------------------------------------------------------------- running


def hardened_kwargs(*, mem_limit: str, pids_limit: int = 512, tmpfs: Optional[dict] = None) -> dict:
    """The confinement every pointfail container runs under, model jobs and tool jobs alike: the
    non-root container user, no network, read-only root filesystem with a tmpfs ``/tmp`` (plus any
    ``tmpfs`` given), all capabilities dropped, no-new-privileges, a memory limit with no swap beyond
    it, a process limit, working directory ``/tmp``, detached."""
    mounts = {"/tmp": "rw,nosuid,nodev,size=2g,mode=1777", **(tmpfs or {})}
    return dict(user=container_user(), network_mode="none", read_only=True, tmpfs=mounts, cap_drop=["ALL"],
                security_opt=["no-new-privileges"], mem_limit=mem_limit, memswap_limit=mem_limit,
                pids_limit=pids_limit, working_dir="/tmp", detach=True)


def container_kwargs(*, family: str, job_dir: Path, weights_dir: Optional[Path] = None, batch_size: int = 1,
                     mem_limit: str = "8g", gpu: Union[bool, list[str]] = False, extra_args: Iterable[str] = (),
                     command: Optional[list[str]] = None) -> dict:
    """The ``client.containers.create`` keyword arguments for one model job: the mounts of the
    module docstring (``out/`` at ``/job`` read-write; ``requests.jsonl``'s folder at ``/requests``,
    ``images/`` at ``/images`` and the weights at ``/weights``, all read-only) and the worker command
    line of ``docs/architecture.md`` (``command`` replaces it: a shard's several request/response
    pairs). ``gpu``: every GPU when true, or the listed device ids (those a scheduler allocated)."""
    from docker.types import DeviceRequest

    paths = JobPaths(Path(job_dir).resolve())
    weights = Path(weights_dir).resolve() if weights_dir is not None else paths.no_weights
    volumes = {str(paths.out): {"bind": JOB_MOUNT, "mode": "rw"},
               str(paths.requests_dir): {"bind": REQUESTS_MOUNT, "mode": "ro"},
               str(paths.images): {"bind": IMAGES_MOUNT, "mode": "ro"},
               str(weights): {"bind": WEIGHTS_MOUNT, "mode": "ro"}}
    if command is None:
        command = ["--family", family, "--weights", WEIGHTS_MOUNT, "--requests", f"{REQUESTS_MOUNT}/requests.jsonl",
                   "--responses", f"{JOB_MOUNT}/responses.jsonl", "--batch-size", str(batch_size),
                   "--device", "cuda" if gpu else "cpu", *extra_args]
    kwargs = dict(
        **hardened_kwargs(mem_limit=mem_limit),
        command=command, volumes=volumes,
        environment={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": "/tmp/hf",
                     "XDG_CACHE_HOME": "/tmp/cache", "HOME": "/tmp", "PYTHONUNBUFFERED": "1"},
        labels={"org.pointfail.job": str(paths.root), "org.pointfail.family": family},
        name=f"pointfail-{family}-{uuid.uuid4().hex[:8]}",
    )
    if isinstance(gpu, list) and gpu:
        kwargs["device_requests"] = [DeviceRequest(device_ids=list(gpu), capabilities=[["gpu"]])]
    elif gpu is True:
        kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return kwargs


class _Progress:
    """Counts answered ids in the responses file incrementally (reads only new bytes, through a
    descriptor opened with ``O_NOFOLLOW``; a symlink there counts nothing)."""

    def __init__(self, path: Path, wanted: set[str]):
        self.path, self.wanted, self.pos, self.buf = path, wanted, 0, b""
        self.done: set[str] = set()

    def poll(self) -> int:
        import json

        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return 0
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return 0
            f.seek(self.pos)
            chunk = f.read(16 << 20)
        self.pos += len(chunk)
        lines = (self.buf + chunk).split(b"\n")
        self.buf = lines.pop()[-(16 << 20):]
        new = 0
        for raw in lines:
            try:
                sid = json.loads(raw)["sample_id"]
            except (ValueError, KeyError, TypeError, RecursionError):
                continue
            if isinstance(sid, str) and sid in self.wanted and sid not in self.done:
                self.done.add(sid)
                new += 1
        return new


@dataclass
class StagedJob:
    """What staging a job folder did: ``wanted`` (per cell file, the sample ids requested), ``pending``
    (requests written, not yet answered), ``skipped`` (answered before), ``problems`` (samples
    answered with an error by the runner because their image could not be staged)."""

    paths: JobPaths
    wanted: dict[str, set[str]] = field(default_factory=dict)
    pending: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)


def _stage(paths: JobPaths, cells: list[tuple[Path, Path, list[dict], Optional[Path], Optional[str]]]) -> StagedJob:
    """Stage each cell ``(requests file, responses file, requests, data root, image subfolder)`` of a
    locked job folder: skip answered samples, stage the images, answer unstageable samples with an
    error response, write the pending requests atomically (an empty file when none)."""
    from pointfail.running.jobs import JobFileError, JobRequest, ResponseWriter, error_response, write_requests

    job = StagedJob(paths)
    for req_file, resp_file, requests, data_root, subdir in cells:
        try:
            before = answered_ids(resp_file)
        except JobFileError as e:
            raise ContainerFailed(str(e), exit_code=None, timed_out=False, log_tail=[]) from None
        wanted = {r["sample_id"] for r in requests}
        job.wanted[resp_file.name] = wanted
        pending = [r for r in requests if r["sample_id"] not in before]
        job.skipped += len(wanted & before)
        staged, stage_errors = stage_images(pending, paths, data_root, subdir) if pending else ([], {})
        job.problems += [f"{sid}: {why}" for sid, why in sorted(stage_errors.items())]
        if stage_errors:
            try:  # answered here, by the runner, before the container runs: nothing is lost
                with ResponseWriter(resp_file) as w:
                    for sid, why in sorted(stage_errors.items()):
                        w.write(error_response(sid, why))
            except JobFileError as e:
                raise ContainerFailed(str(e), exit_code=None, timed_out=False, log_tail=[]) from None
        write_requests(req_file, [JobRequest.model_validate(r) for r in staged])
        job.pending += len(staged)
    return job


def stage_weights_manifest(paths: JobPaths, manifest: Path) -> list[str]:
    """Copy a weights manifest (the sha256 of every file a remote-code family may import) beside the
    requests, where the container reads it, and return the worker's ``--weights-manifest`` arguments."""
    from pointfail.safeio import atomic_write_bytes, read_regular_file

    atomic_write_bytes(paths.requests_dir / "weights.manifest.json", read_regular_file(manifest, 16 << 20))
    return ["--weights-manifest", f"{REQUESTS_MOUNT}/weights.manifest.json"]


def stage_cells(job_dir: Path, cells: dict[str, list[dict]], data_roots: dict[str, Path]) -> StagedJob:
    """Stage a multi-cell job folder (a shard): for each cell, ``requests/<cell>.jsonl`` holds the
    requests not yet answered in ``out/<cell>.jsonl``, their images staged into ``images/<cell>/``
    after checking that each resolves inside ``data_roots[cell]``. Cell names are identifiers
    (benchmark names). Holds the job's lock while staging.

    Raises:
        ContainerFailed: a runner-owned path is a symlink, or a responses file is not a regular file.
        pointfail.running.jobs.JobBusy: another runner holds this job's lock.
    """
    from pointfail.running.jobs import JobLock

    paths = prepare_job_dir(Path(job_dir).resolve())
    with JobLock(paths.lock, "job"):
        return _stage(paths, [(paths.cell_requests(c), paths.cell_responses(c), reqs, data_roots.get(c), c)
                              for c, reqs in cells.items()])


def _check_weights(weights_dir: Optional[Path], fix_permissions: bool, weights_root: Optional[Path],
                   log: Callable[[str], None]) -> None:
    if weights_dir is None or os.getuid() != 0:  # the container runs as 10001: weights must be readable
        return
    bad = unreadable_by(Path(weights_dir), CONTAINER_UID, CONTAINER_UID)
    if bad is not None and fix_permissions:
        try:
            n = grant_read(Path(weights_dir), allowed_root=weights_root)
        except ValueError as e:
            raise ContainerFailed(str(e), exit_code=None, timed_out=False, log_tail=[]) from None
        log(f"[run] made {n} entries of {weights_dir} readable by others (o+rX) for the container user")
        bad = unreadable_by(Path(weights_dir), CONTAINER_UID, CONTAINER_UID)
    if bad is not None:
        raise ContainerFailed(f"{bad} is not readable by the container user {CONTAINER_UID} "
                              f"(make it world-readable: chmod -R o+rX {weights_dir})", exit_code=None,
                              timed_out=False, log_tail=[])


def _run_container(client, image: str, kwargs: dict, *, family: str, paths: JobPaths,
                   wanted: dict[Path, set[str]], wall_clock_s: float, progress: bool,
                   log: Callable[[str], None], on_progress: Optional[Callable[[int, object], None]],
                   skipped: int) -> JobResult:
    """Create, start and watch one model container over a staged, locked job folder: stream its log,
    count answered samples across ``wanted`` (responses file -> requested ids), kill it at the wall
    clock, always remove it. Raises :class:`ContainerFailed` for a non-zero exit or a kill."""
    from docker.errors import APIError, NotFound
    from tqdm import tqdm

    from pointfail.running.jobs import JobFileError

    total = sum(len(v) for v in wanted.values())
    progs = [_Progress(f, ids) for f, ids in wanted.items()]
    t0 = time.monotonic()
    container = None
    timed_out = False
    exit_code: Optional[int] = None
    settings: dict = {}
    image_id = None
    bar = tqdm(total=total + skipped, initial=skipped, unit="sample", desc=family, disable=not progress,
               dynamic_ncols=True)
    echo = (lambda line: tqdm.write(f"[{family}] {line}")) if progress else (lambda line: log(f"[{family}] {line}"))
    sink = LogSink(paths.log, echo)
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
        streamer = sink.follow(container)
        deadline = t0 + wall_clock_s
        while True:
            bar.update(sum(p.poll() for p in progs))
            if on_progress is not None:
                on_progress(sum(len(p.done) for p in progs), container)
            container.reload()
            if container.status in ("exited", "dead"):
                exit_code = container.attrs["State"]["ExitCode"]
                break
            if time.monotonic() > deadline:
                timed_out = True
                container.kill()
                exit_code = None
                break
            over = _over_cap(wanted)
            if over is not None:  # killed while it runs: the host never reads past the cap
                container.kill()
                exit_code = None
                break
            time.sleep(0.25)
        streamer.join(timeout=5)
        bar.update(sum(p.poll() for p in progs))
    finally:
        bar.close()
        sink.close()
        if container is not None:
            try:
                container.remove(force=True)
            except NotFound:
                pass
    seconds = round(time.monotonic() - t0, 3)
    tail = list(sink.tail)[-20:]
    over = _over_cap(wanted)  # checked again after the exit, before a byte is read
    if over is not None:
        raise ContainerFailed(f"{family}: {over}", exit_code=exit_code, timed_out=False, log_tail=tail)
    try:
        # the host's read counts against the job's wall clock (plus a grace for a job that ends at it)
        until = max(t0 + wall_clock_s, time.monotonic()) + FINAL_READ_GRACE_S
        answered = sum(len(answered_ids(f, ids, until) & ids) for f, ids in wanted.items())
    except JobFileError as e:
        raise ContainerFailed(f"{family}: {e}", exit_code=exit_code, timed_out=timed_out, log_tail=tail) from None
    where = paths.out if len(wanted) > 1 else next(iter(wanted))
    if timed_out:
        raise ContainerFailed(f"{family}: killed at the wall-clock limit of {wall_clock_s:.0f} s "
                              f"({answered}/{total} answered; responses kept in {where})",
                              exit_code=None, timed_out=True, log_tail=tail)
    if exit_code != 0:
        raise ContainerFailed(f"{family}: container exited with {exit_code} "
                              f"({answered}/{total} answered; responses kept in {where})",
                              exit_code=exit_code, timed_out=False, log_tail=tail)
    return JobResult(total + skipped, answered + skipped, skipped, exit_code, seconds, image_id, settings)


def remove_orphans(client, paths: JobPaths, log: Callable[[str], None] = print) -> int:
    """Remove every container of this job folder (label ``org.pointfail.job``) that is still there.
    Called with the job's lock held, so any such container belongs to a runner that died without its
    clean-up (``SIGKILL``, a lost node's step): it would keep writing the responses the next run is
    about to write. Returns the number removed."""
    from docker.errors import APIError, NotFound

    n = 0
    for c in client.containers.list(all=True, filters={"label": f"org.pointfail.job={paths.root}"}):
        try:
            c.remove(force=True)
            n += 1
            log(f"[run] removed {c.name}, left running on {paths.root} by a runner that is gone")
        except (APIError, NotFound):
            continue
    return n


def run_staged(client, image: str, *, family: str, job_dir: Path, cells: dict[str, set[str]], command: list[str],
               weights_dir: Optional[Path] = None, mem_limit: str = "8g", wall_clock_s: float = 3600.0,
               gpu: Union[bool, list[str]] = False, progress: bool = False, log: Callable[[str], None] = print,
               on_progress: Optional[Callable[[int, object], None]] = None) -> JobResult:
    """Run ``image`` once over every cell of a job folder staged by :func:`stage_cells` (one
    container, one model load: ``command`` is the worker's argument list with one request/response
    pair per cell). ``cells`` maps each cell to the sample ids it must answer; when every one is
    answered already no container starts.

    Raises:
        ContainerFailed: as :func:`run_job`.
        pointfail.running.jobs.JobBusy: another runner holds this job's lock.
    """
    from pointfail.running.jobs import JobFileError, JobLock

    paths = prepare_job_dir(Path(job_dir).resolve())
    with JobLock(paths.lock, "job"):
        wanted: dict[Path, set[str]] = {}
        skipped = 0
        try:
            for c, ids in cells.items():
                done = answered_ids(paths.cell_responses(c)) & ids
                skipped += len(done)
                wanted[paths.cell_responses(c)] = ids - done
        except JobFileError as e:
            raise ContainerFailed(str(e), exit_code=None, timed_out=False, log_tail=[]) from None
        if not any(wanted.values()):
            log(f"[run] {family}: every staged sample of {paths.root} is answered; no container started")
            return JobResult(skipped, skipped, skipped, 0, 0.0)
        _check_weights(weights_dir, False, None, log)
        remove_orphans(client, paths, log)
        kwargs = container_kwargs(family=family, job_dir=paths.root, weights_dir=weights_dir, mem_limit=mem_limit,
                                  gpu=gpu, command=command)
        return _run_container(client, image, kwargs, family=family, paths=paths, wanted=wanted,
                              wall_clock_s=wall_clock_s, progress=progress, log=log, on_progress=on_progress,
                              skipped=skipped)


def run_job(client, image: str, *, family: str, job_dir: Path, requests: list[dict],
            weights_dir: Optional[Path] = None, data_root: Optional[Path] = None, batch_size: int = 1,
            mem_limit: str = "8g", wall_clock_s: float = 3600.0, gpu: Optional[bool] = None,
            extra_args: Iterable[str] = (), progress: bool = True, log: Callable[[str], None] = print,
            on_progress: Optional[Callable[[int, object], None]] = None,
            fix_permissions: bool = False, weights_root: Optional[Path] = None,
            weights_manifest: Optional[Path] = None) -> JobResult:
    """Run ``image`` (a family image whose entrypoint is ``python -m pointfail.running.worker``) over
    ``requests`` in ``job_dir`` (layout in the module docstring).

    Args:
        requests: request dicts (``sample_id``, ``image`` as a path *on the host*, ``prompt``,
            ``task``, ``max_new_tokens``); the images are staged into the job folder and the requests
            written to ``requests.jsonl`` pointing at them.
        weights_dir: mounted read-only at ``/weights`` (an empty folder when None).
        data_root: every image must resolve inside it (else the sample is answered with an error
            response saying so, and no container sees the file).
        wall_clock_s: seconds after which the runner kills the container.
        on_progress: called as ``on_progress(done, container)`` after each poll (tests use it to kill
            a container mid-run).
        fix_permissions: when the runner is root and the weights are not readable by the container
            user, add read (and, for folders, search) permission for others (:func:`grant_read`,
            only inside ``weights_root``) instead of failing.
        weights_root: the declared weights root (``fix_permissions`` never changes anything outside it).
        weights_manifest: a weights manifest (:mod:`pointfail.running.backends.manifest`) copied next to the
            requests and passed as ``--weights-manifest`` (remote-code families load only with it).

    Returns:
        :class:`JobResult`. When every request already has a response no container is started.

    Raises:
        ContainerFailed: non-zero exit, wall-clock kill, the engine refused to start it, or the
            responses file is a symlink / not a regular file.
        pointfail.running.jobs.JobBusy: another runner holds this job's lock.
    """
    from pointfail.running.jobs import JobLock

    paths = prepare_job_dir(Path(job_dir).resolve())
    with JobLock(paths.lock, "job"):
        staged = _stage(paths, [(paths.requests, paths.responses, requests, data_root, None)])
        wanted_ids = staged.wanted[paths.responses.name]
        if not staged.pending:
            answered = len(answered_ids(paths.responses) & wanted_ids)
            if not staged.problems:
                log(f"[run] {family}: all {len(wanted_ids)} samples already answered in {paths.responses}; "
                    "no container started")
            return JobResult(len(wanted_ids), answered, staged.skipped, 0, 0.0, problems=staged.problems)
        if weights_manifest is not None:
            extra_args = [*extra_args, *stage_weights_manifest(paths, weights_manifest)]
        _check_weights(weights_dir, fix_permissions, weights_root, log)
        use_gpu = host_has_gpu() if gpu is None else gpu
        kwargs = container_kwargs(family=family, job_dir=paths.root, weights_dir=weights_dir, batch_size=batch_size,
                                  mem_limit=mem_limit, gpu=use_gpu, extra_args=extra_args)
        pending = wanted_ids - answered_ids(paths.responses)
        res = _run_container(client, image, kwargs, family=family, paths=paths, wanted={paths.responses: pending},
                             wall_clock_s=wall_clock_s, progress=progress, log=log, on_progress=on_progress,
                             skipped=len(wanted_ids) - len(pending))
        res.requested, res.skipped, res.problems = len(wanted_ids), staged.skipped, staged.problems
        return res
