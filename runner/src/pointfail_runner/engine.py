"""Find a Docker Engine, or start one (issue 4: "where none answers, they install Debian's docker.io
and start dockerd").

The engine is reached through the docker SDK (``docker.from_env()``: ``DOCKER_HOST`` or the local
socket). When nothing answers and the process is root on a Debian or Ubuntu machine,
:func:`ensure_engine` installs Debian's ``docker.io`` with apt-get if ``dockerd`` is missing, starts
``dockerd`` in the background (its own session, log to a file) and waits until the API answers a
ping. Everywhere else it raises :class:`EngineError` naming the exact command to run.

Processes are started with argument lists only (no shell).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Optional

DEFAULT_LOG = Path(os.environ.get("POINTFAIL_DOCKERD_LOG", "/var/log/pointfail-dockerd.log"))
INSTALL_HINT = "apt-get install -y docker.io && dockerd &   (as root), or start Docker Desktop"


class EngineError(RuntimeError):
    """No Docker Engine answers and none could be started; the message says what to run."""


API_TIMEOUT_S = 300
"""HTTP timeout of the client :func:`ensure_engine` returns: the short ping timeout would make every
later call (create, reload, logs) fail on a busy machine."""


def _ping(timeout: float):
    """Return a connected ``docker.DockerClient`` (with :data:`API_TIMEOUT_S` for later calls) or
    ``None`` when the engine does not answer a ping within ``timeout`` seconds."""
    import docker
    from docker.errors import DockerException

    try:
        probe = docker.from_env(timeout=int(max(timeout, 1)))
        probe.ping()
        probe.close()
        return docker.from_env(timeout=API_TIMEOUT_S)
    except (DockerException, OSError, ValueError):
        return None


def _is_debian() -> bool:
    return Path("/etc/debian_version").exists()


def _tail(path: Path, n: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def install_docker_io() -> None:
    """Install Debian's ``docker.io`` package with apt-get (root only).

    Raises:
        EngineError: when apt-get fails (its output is in the message).
    """
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "docker.io"]):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise EngineError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")


def ensure_engine(timeout: float = 90.0, log_path: Optional[Path] = None, start: bool = True):
    """Return a ``docker.DockerClient`` connected to an engine that answers ``ping``.

    Args:
        timeout: seconds to wait for a freshly started ``dockerd`` to answer.
        log_path: where ``dockerd``'s stdout/stderr go (default ``$POINTFAIL_DOCKERD_LOG`` or
            ``/var/log/pointfail-dockerd.log``).
        start: when False, never install or start anything (just ping).

    Raises:
        EngineError: nothing answers and this is not root on Debian/Ubuntu, ``DOCKER_HOST`` points
            elsewhere, installing ``docker.io`` failed, or ``dockerd`` exited or did not answer in
            ``timeout`` seconds (the last lines of its log are in the message).
    """
    client = _ping(5)
    if client is not None:
        return client
    if not start:
        raise EngineError(f"no Docker Engine answers; start one: {INSTALL_HINT}")
    if os.environ.get("DOCKER_HOST"):
        raise EngineError(f"DOCKER_HOST={os.environ['DOCKER_HOST']} does not answer; not starting a local engine")
    if os.geteuid() != 0 or not _is_debian():
        raise EngineError(f"no Docker Engine answers and this is not root on Debian/Ubuntu; run: {INSTALL_HINT}")
    if shutil.which("dockerd") is None:
        install_docker_io()
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineError("docker.io installed but dockerd is not on PATH")
    log_path = Path(log_path or DEFAULT_LOG)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # the engine outlives this process: it must not inherit a temporary folder that this process's
    # caller will delete (a test's TMPDIR: containerd's shims then fail every `exec` once it is gone)
    env = {k: v for k, v in os.environ.items() if k not in ENGINE_ENV_DROPPED}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [dockerd], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env=env,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        client = _ping(5)
        if client is not None:
            return client
        if proc.poll() is not None:
            raise EngineError(f"dockerd exited with {proc.returncode}; last lines of {log_path}:\n{_tail(log_path)}")
        time.sleep(0.5)
    raise EngineError(f"dockerd did not answer within {timeout:.0f} s; last lines of {log_path}:\n{_tail(log_path)}")


ENGINE_ENV_DROPPED = ("TMPDIR", "TEMP", "TMP")
"""Variables a ``dockerd`` started by :func:`ensure_engine` does not inherit: a caller's temporary
folder (pytest's, a benchmark's) is deleted while the engine and its containers' shims still run."""

MOUNTINFO = Path("/proc/self/mountinfo")
MAX_MOUNTINFO_BYTES = 1 << 20
"""Cap on what :func:`own_container_id` reads of ``/proc/self/mountinfo`` (a container has a few dozen
lines; a host with many mounts a few thousand)."""
_CONTAINER_FILE = re.compile(r"/containers/([0-9a-f]{64})/(?:hostname|hosts|resolv\.conf) ")


def own_container_id(mountinfo: Path = MOUNTINFO) -> Optional[str]:
    """The Docker container this process runs in, as its 64-hex id, or ``None`` on a plain host.

    Docker bind-mounts ``/etc/hostname``, ``/etc/hosts`` and ``/etc/resolv.conf`` of every container
    from ``<data-root>/containers/<id>/``; the mount's source path is in the fourth field of
    ``/proc/self/mountinfo`` (proc(5)), which is how the id is found without trusting the hostname
    (``--hostname`` changes that). Reads at most :data:`MAX_MOUNTINFO_BYTES`; never raises (an
    unreadable file is ``None``).
    """
    try:
        with open(mountinfo, "rb") as f:
            text = f.read(MAX_MOUNTINFO_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    m = _CONTAINER_FILE.search(text)
    return m.group(1) if m else None


def own_container(client, mountinfo: Path = MOUNTINFO):
    """The ``docker.models.containers.Container`` this process runs in, when it runs in a container of
    ``client``'s engine (the runner inside ``pointfail-runner pristine``, or a CI job container with the
    host's socket); ``None`` on a plain host or when that engine does not know the id (another engine's
    container). Used to attach the runner to the internal network of a server it started, which the
    engine's isolation between bridge networks otherwise keeps out of its reach.
    """
    from docker.errors import DockerException

    cid = own_container_id(mountinfo)
    if cid is None:
        return None
    try:
        return client.containers.get(cid)
    except DockerException:
        return None
