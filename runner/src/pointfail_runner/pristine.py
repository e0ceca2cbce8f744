"""A newcomer's machine in a container: the README's commands run from a fresh clone inside a pristine
Debian 12 (``pointfail-runner pristine -- make reproduce``; ``make ci-pristine`` runs it).

The machine (:func:`pristine_image`) is the project's own Debian base (:mod:`pointfail_runner.base`)
plus exactly what the README asks a newcomer to have: Debian's ``python3`` (PEP 668 in force),
``python3-pip``, ``python3-venv``, ``make`` and ``git``. :func:`run_pristine` clones the checkout
(committed state) into a fresh folder, mounts it at the same path inside the container as on the
host, mounts the host's Docker Engine socket (so the containers the runner starts are siblings on
the host engine and their bind mounts name host paths that exist), and runs the command as root in
the clone. With ``offline`` the container has no network at all and apt and pip are pointed at a
closed loopback port besides, which is how the archival bundle is shown to need nothing from outside.

The one thing taken from the host besides the engine is its CA bundle (``/etc/ssl/certs/
ca-certificates.crt``, mounted read-only, and the usual variables pointing at it): where a site's
network intercepts TLS, its machines trust that proxy, and so must the newcomer's.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

PACKAGES = ("python3", "python3-pip", "python3-venv", "make", "git")
"""What the README asks of a newcomer's machine (``python3``/``python3-venv`` are in the base already)."""
CLOSED = "http://127.0.0.1:9"
"""A loopback port nothing listens on (discard): the package mirrors of the ``offline`` check."""
SOCKET = "/var/run/docker.sock"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def pristine_image(client, repo: Path, log: Callable[[str], None] = print) -> str:
    """The pristine machine's image (built once per base): ``pointfail/pristine:<key12>``.

    Raises:
        RuntimeError: the build failed (with the engine's message).
    """
    from . import base as bmod

    base = bmod.ensure_base(client, Path(repo) / "images/base/base.lock.json", log=log)
    dockerfile = "\n".join([
        f"FROM {base.id}",
        'RUN ["apt-get", "update"]',
        'RUN ["apt-get", "install", "-y", "--no-install-recommends", ' + ", ".join(f'"{p}"' for p in PACKAGES) + "]",
        'RUN ["apt-get", "clean"]',
        "ENV LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive",
        'CMD ["/bin/bash"]',
    ]) + "\n"
    tag = f"pointfail/pristine:{hashlib.sha256(dockerfile.encode()).hexdigest()[:12]}"
    try:
        client.images.get(tag)
        return tag
    except Exception:  # docker.errors.ImageNotFound
        pass
    log(f"[pristine] building {tag} (Debian base + {' '.join(PACKAGES)})")
    for chunk in client.api.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True,
                                  decode=True, pull=False):
        if "error" in chunk:
            raise RuntimeError(f"building {tag} failed: {chunk['error']}")
    return tag


def fresh_clone(repo: Path, parent: Path) -> Path:
    """``git clone`` of ``repo``'s committed state into ``parent/pointfail``, with ``parent/shared`` a
    copy-free symlink to the repository's ``../shared`` when it exists (the tests read it)."""
    dest = Path(parent) / "pointfail"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(dest)], check=True)
    shared = (Path(repo) / ".." / "shared").resolve()
    if shared.is_dir():
        (Path(parent) / "shared").symlink_to(shared)
    return dest


def _volumes_and_environment(repo: Path, parent: Path, *, mounts: tuple[str, ...], env: Optional[dict],
                             offline: bool, engine_socket: str) -> tuple[dict, dict]:
    """The docker SDK ``volumes`` and ``environment`` of the pristine container for the clone folder
    ``parent`` (mounted read-write at its own path, its ``tmp/`` the container's ``TMPDIR``) of
    ``repo``: the engine socket ``engine_socket`` at :data:`SOCKET`; ``repo/../shared`` read-only
    when it is a folder; each of ``mounts`` (``PATH`` read-only, ``PATH:rw`` read-write, resolved,
    at the same path); the host's :data:`CA_BUNDLE` when present (and the variables that point
    OpenSSL, pip and requests at it); then ``env``. With ``offline``, writes
    ``parent/offline-sources.list`` naming :data:`CLOSED`, mounts it as apt's sources list and points
    pip at :data:`CLOSED`. Returns ``(volumes, environment)``. Raises ``OSError`` when the sources
    list cannot be written."""
    shared = (repo / ".." / "shared").resolve()
    volumes = {str(parent): {"bind": str(parent), "mode": "rw"}, str(engine_socket): {"bind": SOCKET, "mode": "rw"}}
    if shared.is_dir():
        volumes[str(shared)] = {"bind": str(shared), "mode": "ro"}
    for m in mounts:
        path, _, mode = m.partition(":")
        volumes[str(Path(path).resolve())] = {"bind": str(Path(path).resolve()), "mode": "rw" if mode == "rw" else "ro"}
    environment = {"TMPDIR": str(parent / "tmp"), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "HF_HUB_OFFLINE": "1",
                   "PYTHONUNBUFFERED": "1"}
    if Path(CA_BUNDLE).is_file():
        volumes[CA_BUNDLE] = {"bind": CA_BUNDLE, "mode": "ro"}
        environment.update({k: CA_BUNDLE for k in ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE")})
    environment.update(env or {})
    if offline:
        closed = parent / "offline-sources.list"
        closed.write_text(f"deb {CLOSED}/debian bookworm main\n")
        volumes[str(closed)] = {"bind": "/etc/apt/sources.list", "mode": "ro"}
        environment.update({"PIP_INDEX_URL": f"{CLOSED}/simple/", "PIP_RETRIES": "0", "PIP_TIMEOUT": "5"})
    return volumes, environment


def run_pristine(client, repo: Path, argv: list[str], *, offline: bool = False, mounts: tuple[str, ...] = (),
                 env: Optional[dict] = None, keep: bool = False, timeout_s: float = 3600,
                 engine_socket: str = SOCKET, log: Callable[[str], None] = print) -> int:
    """Run ``argv`` (e.g. ``["make", "reproduce"]``) in a fresh clone of ``repo`` inside the pristine
    machine and return its exit code. Output is streamed to ``log`` as it comes.

    Args:
        mounts: host paths mounted at the same path inside (``PATH`` read-only, ``PATH:rw``), e.g. another
            Python's prefix, or a folder holding a bundle.
        offline: no network in the container; apt and pip configured for :data:`CLOSED`.
        env: extra environment variables; ``TMPDIR`` points into the shared folder so the bind mounts
            of test containers name host paths.
        keep: leave the clone on the host (its path is logged) instead of removing it.
        engine_socket: the host socket mounted as the container's ``/var/run/docker.sock``: this
            engine's by default, or another engine's (an empty one shows that nothing came from the
            host's image store).
    """
    repo = Path(repo).resolve()
    image = pristine_image(client, repo, log=log)
    parent = Path(tempfile.mkdtemp(prefix="pointfail-pristine-"))
    parent.chmod(0o755)
    clone = fresh_clone(repo, parent)
    (parent / "tmp").mkdir(mode=0o1777)
    volumes, environment = _volumes_and_environment(repo, parent, mounts=mounts, env=env, offline=offline,
                                                    engine_socket=engine_socket)
    log(f"[pristine] {' '.join(argv)} in {clone} ({image}, network: {'none' if offline else 'default'})")
    container = client.containers.create(image, command=argv, working_dir=str(clone), user="0:0",
                                         environment=environment, volumes=volumes,
                                         network_mode="none" if offline else "default",
                                         labels={"org.pointfail.pristine": str(parent)})
    t0 = time.monotonic()
    code = None
    try:
        container.start()
        since = None
        while time.monotonic() - t0 < timeout_s:
            try:  # a quiet step (pip -q installing torch) may outlast the API's read timeout: follow again
                for chunk in container.logs(stream=True, follow=True, since=since):
                    for line in chunk.decode("utf-8", "replace").splitlines():
                        log(line)
                break
            except Exception:  # requests' ReadTimeout/ConnectionError from the log stream
                since = int(time.time())
        container.reload()
        if container.status not in ("exited", "dead"):
            container.kill()
        code = container.wait(timeout=120).get("StatusCode")
    finally:
        container.remove(force=True)
        if keep:
            log(f"[pristine] clone kept at {clone}")
        else:
            shutil.rmtree(parent, ignore_errors=True)
    log(f"[pristine] exit {code} after {time.monotonic() - t0:.0f} s")
    return 1 if code is None else int(code)
