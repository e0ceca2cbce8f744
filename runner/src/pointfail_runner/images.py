"""Build the images in ``images/`` through the Engine API (issue 4, "Images"; issue 11, drift).

An image is a directory ``images/<name>/`` with a Python lock (``requirements.lock``, or
``requirements-cpu.lock``/``requirements-cuda.lock`` for torch images), optionally a
``debian.lock`` (Debian packages, :mod:`pointfail_runner.aptpins`) and a ``Dockerfile`` of its own
only when it differs from the shared one, ``images/Dockerfile`` (a worker image: the lock's wheels in
a venv, the Debian packages, pointfail; every model family and the ``center`` and ``ocr`` baselines
use it). ``scorer`` and ``suites`` have their own (other entry points).

Each build stages a context directory holding only what the Dockerfile copies: the Dockerfile, the
variant's lock as ``requirements.lock``, the lock's wheels from the host wheelhouse (checked against
the lock's hashes first), a wheel of pointfail built from this checkout, ``debian.lock`` and
``aptpins.py``. The base is passed as ``BASE=<image id>`` (the local base built for
``images/base/base.lock.json``, :func:`pointfail_runner.base.find_base`), so every image is pinned to
its base by content digest. pip installs with ``--no-index --require-hashes`` inside the build;
builds run with ``network_mode="none"`` except for images whose ``debian.lock`` requests packages.

Debian packages come from a moving archive: the install step installs the recorded versions where
the archive still has them and the archive's versions otherwise, and reports the drift; the runner
reads that report out of the built image (:data:`aptpins.REPORT_PATH`) and adds it to the image's
labels (``org.pointfail.debian-drift``, ``org.pointfail.debian-packages``,
``org.pointfail.debian-snapshot``) with a label-only build, so a reused image still says what it
drifted from. With a snapshot (``SNAPSHOT``), the exact recorded versions are installed.

Tags: ``pointfail/<name>:<variant>-<key12>`` where the key hashes the Dockerfile, the locks, the
install script, the pointfail source tree, the base id and the snapshot, so an image is rebuilt
exactly when one of those changed, plus the alias ``pointfail/<name>:<variant>``. Labels also carry
``org.pointfail.lock-sha256``, ``org.pointfail.source-sha256``, ``org.opencontainers.image.revision``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import aptpins
from . import base as base_mod
from . import locks

SHARED_DOCKERFILE = "Dockerfile"
"""``images/Dockerfile``: the worker image every image directory without its own Dockerfile uses."""
DEBIAN_LOCK = "debian.lock"
LABEL_DRIFT = "org.pointfail.debian-drift"
LABEL_PACKAGES = "org.pointfail.debian-packages"
LABEL_SNAPSHOT = "org.pointfail.debian-snapshot"


class ImageBuildError(RuntimeError):
    """An image could not be built: unknown image, missing lock/wheels, missing base, or the
    Dockerfile step that failed (with the last lines of the build log)."""


@dataclass(frozen=True)
class BuiltImage:
    """A built (or reused) image: ``tag`` (content-keyed), ``id`` (``sha256:…``), ``seconds`` spent
    building (0 when reused), ``built`` (False when an image with that tag already existed), and its
    Debian ``drift`` (``(package, recorded, installed)`` tuples; empty when every recorded version
    was installed) with the ``debian`` versions it holds."""

    name: str
    variant: str
    tag: str
    id: str
    seconds: float
    built: bool
    drift: tuple = ()
    debian: dict = field(default_factory=dict)


def image_names(repo: Path) -> list[str]:
    """Every buildable image: directories of ``repo/images`` with a Python lock or its input
    (``requirements.in``/``requirements-cpu.in``), except ``base`` and ``judge``."""
    d = Path(repo) / "images"
    return sorted(p.name for p in d.iterdir() if p.is_dir() and p.name not in ("base", "judge")
                  and ((p / "requirements.in").is_file() or (p / "requirements-cpu.in").is_file()))


def dockerfile_for(image_dir: Path) -> Path:
    """The image's own ``Dockerfile`` when it has one, else the shared ``images/Dockerfile``."""
    own = Path(image_dir) / "Dockerfile"
    return own if own.is_file() else Path(image_dir).parent / SHARED_DOCKERFILE


def debian_lock(image_dir: Path) -> dict:
    """The image's ``debian.lock`` (:func:`aptpins.read_lock`; empty when the file is absent)."""
    return aptpins.read_lock(Path(image_dir) / DEBIAN_LOCK)


def needs_network(image_dir: Path) -> bool:
    """True when the image's ``debian.lock`` requests Debian packages; such a build gets the default
    bridge network (apt reads a mirror), every other build ``none``."""
    return bool(debian_lock(image_dir)["requested"])


def source_sha256(repo: Path) -> str:
    """sha256 over the pointfail source tree (``pyproject.toml`` and ``src/pointfail/**``, paths
    sorted, each as ``path\\0bytes\\0``; ``__pycache__`` ignored)."""
    repo = Path(repo)
    h = hashlib.sha256()
    files = [repo / "pyproject.toml"] + sorted(
        p for p in (repo / "src/pointfail").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    for p in files:
        h.update(str(p.relative_to(repo)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def source_revision(repo: Path) -> str:
    """``git rev-parse HEAD`` of ``repo`` with ``-dirty`` when ``src/`` or ``pyproject.toml`` have
    uncommitted changes; ``unknown`` outside git."""
    try:
        rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", "src", "pyproject.toml"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _can_build_without_isolation() -> bool:
    """True when this interpreter has what pointfail's ``pyproject.toml`` build needs (setuptools >= 68
    and ``wheel``), so ``pip wheel --no-build-isolation`` works without a package index."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        major = int(version("setuptools").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return False
    return major >= 68 and importlib.util.find_spec("wheel") is not None


def build_pointfail_wheel(repo: Path, dest: Path) -> Path:
    """Build a wheel of the pointfail checkout into ``dest`` and return its path.

    With setuptools >= 68 and ``wheel`` in this interpreter (the project venv made by ``make`` has
    both, from ``runner/requirements.lock``), ``pip wheel --no-deps --no-build-isolation`` (no
    index needed); otherwise pip builds in an isolated environment, which fetches the build
    requirements from the package index (a Python with setuptools 65.5 and no ``wheel`` cannot build
    in place: ``invalid command 'bdist_wheel'``).

    Raises:
        ImageBuildError: pip failed (its last output lines are in the message).
    """
    dest.mkdir(parents=True, exist_ok=True)
    isolation = [] if not _can_build_without_isolation() else ["--no-build-isolation"]
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "--quiet", "-w", str(dest), str(repo)]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageBuildError(f"building the pointfail wheel failed:\n{proc.stderr[-2000:]}")
    wheels = sorted(dest.glob("pointfail-*.whl"))
    if not wheels:
        raise ImageBuildError("pip wheel produced no pointfail wheel")
    return wheels[-1]


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def build_key(*, dockerfile: bytes, lock: bytes, debian: bytes, installer: bytes, src_sha: str, base_id: str,
              snapshot: Optional[str] = None) -> str:
    """sha256 of everything an image is made of: the Dockerfile, the Python lock, the canonical
    ``debian.lock``, the Debian install script, the pointfail source hash, the base id and the snapshot
    timestamp (empty without one). Each part is hashed on its own, so no two splits collide."""
    h = hashlib.sha256()
    for part in (dockerfile, lock, debian, installer, src_sha.encode(), base_id.encode(), (snapshot or "").encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def image_key(repo: Path, name: str, variant: str, base_id: str, snapshot: Optional[str] = None) -> str:
    """:func:`build_key` of ``images/<name>`` for ``variant`` on the base ``base_id``."""
    image_dir = Path(repo) / "images" / name
    lock = locks.lock_path(image_dir, variant)
    return build_key(dockerfile=dockerfile_for(image_dir).read_bytes(),
                     lock=lock.read_bytes() if lock.is_file() else b"",
                     debian=aptpins.lock_text(debian_lock(image_dir)).encode(),
                     installer=Path(aptpins.__file__).read_bytes(), src_sha=source_sha256(repo), base_id=base_id,
                     snapshot=snapshot)


def _debian_from_labels(img) -> tuple[tuple, dict, Optional[str]]:
    labels = (img.attrs.get("Config") or {}).get("Labels") or {}
    entries = tuple(tuple(e) for e in json.loads(labels.get(LABEL_DRIFT) or "[]"))
    return entries, json.loads(labels.get(LABEL_PACKAGES) or "{}"), labels.get(LABEL_SNAPSHOT) or None


def _built(img, name: str, variant: str, tag: str, seconds: float, built: bool) -> BuiltImage:
    entries, packages, _ = _debian_from_labels(img)
    return BuiltImage(name, variant, tag, img.id, seconds, built, entries, packages)


def read_debian_report(client, image_id: str) -> dict:
    """The Debian install report (:data:`aptpins.REPORT_PATH`) of an image, read from a created (never
    started) container with the archive API; ``{}`` when the image has none."""
    from docker.errors import NotFound

    c = client.containers.create(image_id, command=["/bin/true"], network_disabled=True)
    try:
        stream, _ = c.get_archive(aptpins.REPORT_PATH)
        buf = io.BytesIO(b"".join(stream))
        with tarfile.open(fileobj=buf) as tar:
            member = tar.getmembers()[0]
            if not member.isfile() or member.size > 4 << 20:
                return {}
            f = tar.extractfile(member)
            return json.loads(f.read().decode("utf-8")) if f is not None else {}
    except NotFound:
        return {}
    finally:
        c.remove(force=True)


def _label_build(client, image_id: str, tag: str, labels: dict[str, str]) -> str:
    """Add ``labels`` to ``image_id`` with a label-only build (no layer, no network) tagged ``tag``;
    returns the new image id."""
    lines = [f"FROM {image_id}"] + [f"LABEL {k}={json.dumps(v)}" for k, v in sorted(labels.items())]
    new_id = None
    for chunk in client.api.build(fileobj=io.BytesIO(("\n".join(lines) + "\n").encode()), tag=tag, rm=True,
                                  forcerm=True, decode=True, pull=False, network_mode="none"):
        if "error" in chunk:
            raise ImageBuildError(f"labelling {tag} failed: {chunk['error']}")
        if "aux" in chunk and "ID" in chunk["aux"]:
            new_id = chunk["aux"]["ID"]
    return new_id or client.images.get(tag).id


def _present_image(client, tag: str, name: str, variant: str, allow_build: bool,
                   log: Callable[[str], None]) -> Optional[BuiltImage]:
    """The image ``tag`` when the engine has it (its Debian drift logged), else ``None``.

    Raises:
        ImageBuildError: it is not in the engine and ``allow_build`` is False.
    """
    from docker.errors import ImageNotFound

    try:
        img = client.images.get(tag)
    except ImageNotFound:
        if not allow_build:
            raise ImageBuildError(f"{tag} is not in the engine and building is off (a bundle made from "
                                  "another checkout?)") from None
        return None
    log(f"[image] {tag} present ({img.id[:19]}), not rebuilt")
    out = _built(img, name, variant, tag, 0.0, False)
    for line in aptpins.drift_lines(out.drift):
        log(f"[image] {name} Debian drift: {line}")
    return out


def _fill_context(ctx: Path, repo: Path, dockerfile: Path, lock: Path, deb: dict,
                  wheels: dict[str, Path]) -> None:
    """The build context in ``ctx``: the Dockerfile, the requirements and Debian locks, aptpins.py, the
    locked wheels (linked) and pointfail's own wheel under ``local/``."""
    shutil.copy2(dockerfile, ctx / "Dockerfile")
    shutil.copy2(lock, ctx / "requirements.lock")
    (ctx / DEBIAN_LOCK).write_text(aptpins.lock_text(deb))
    shutil.copy2(aptpins.__file__, ctx / "aptpins.py")
    (ctx / "wheels").mkdir()
    for p in wheels.values():
        _link(p, ctx / "wheels" / p.name)
    build_pointfail_wheel(repo, ctx / "local")


def _stream_build(client, kwargs: dict[str, Any], name: str, tail: "deque[str]",
                  log: Callable[[str], None]) -> Optional[str]:
    """Run the engine build with ``kwargs``, logging its output lines (the last ones kept in ``tail``);
    returns the image id the engine reported (``None`` when none).

    Raises:
        ImageBuildError: the build failed (with the last log lines).
    """
    image_id = None
    for chunk in client.api.build(**kwargs):
        if "stream" in chunk:
            for line in chunk["stream"].splitlines():
                if line.strip():
                    tail.append(line)
                    log(f"[{name}] {line}")
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            raise ImageBuildError(f"building {name} failed: {chunk['error']}\n" + "\n".join(tail))
    return image_id


def build_image(client, repo: Path, name: str, *, variant: str = "cpu", wheelhouse: Optional[Path] = None,
                base_lock: Optional[Path] = None, force: bool = False, snapshot: Optional[str] = None,
                snapshot_mirror: Optional[str] = None, allow_build: bool = True,
                log: Callable[[str], None] = print) -> BuiltImage:
    """Build ``images/<name>`` for ``variant`` (``cpu`` or ``cuda`` torch) unless an image with the
    same content key exists.

    Args:
        client: ``docker.DockerClient``.
        repo: the checkout (holds ``images/``, ``src/pointfail``).
        wheelhouse: host wheelhouse (default ``repo/wheelhouse``), filled by ``make wheels``.
        base_lock: default ``repo/images/base/base.lock.json``; the base built for it must be in the
            engine (``make base``).
        snapshot / snapshot_mirror: install the exact recorded Debian versions from a snapshot archive
            (:func:`aptpins.snapshot_sources`); the base must have been built with the same snapshot.
        allow_build: when False, an image that is not in the engine is an error instead of a build
            (reproducing from a bundle, where nothing may be fetched).

    Raises:
        ImageBuildError: unknown image, base missing, a failed step (last build log lines included).
        locks.LockError: lock or wheels missing (names the command that fixes it).
        aptpins.AptPinError: a malformed ``debian.lock``.
    """
    repo = Path(repo)
    image_dir = repo / "images" / name
    if name not in image_names(repo):
        raise ImageBuildError(f"no image {name!r} in {repo / 'images'} (known: {', '.join(image_names(repo))})")
    if variant not in locks.VARIANTS:
        raise ImageBuildError(f"variant must be one of {locks.VARIANTS}, not {variant!r}")
    dockerfile = dockerfile_for(image_dir)
    wheelhouse = Path(wheelhouse or repo / "wheelhouse")
    base_lock = Path(base_lock or repo / "images/base/base.lock.json")
    base = base_mod.find_base(client, base_mod.read_lock(base_lock), snapshot)
    if base is None:
        raise ImageBuildError(f"the base image built for {base_lock} is not in the engine; run: make base")
    lock = locks.lock_path(image_dir, variant)
    deb = debian_lock(image_dir)
    key = image_key(repo, name, variant, base.id, snapshot)
    tag = f"pointfail/{name}:{variant}-{key[:12]}"
    if not force:
        present = _present_image(client, tag, name, variant, allow_build, log)
        if present is not None:
            return present
    wheels = locks.verify_wheelhouse(image_dir, wheelhouse, variant)
    wheelhouse.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"pointfail-ctx-{name}-", dir=wheelhouse) as tmp:
        ctx = Path(tmp)
        _fill_context(ctx, repo, dockerfile, lock, deb, wheels)
        buildargs = {
            "BASE": base.id,
            "IMAGE_NAME": name,
            "TORCH_VARIANT": variant,
            "LOCK_SHA256": locks.file_sha256(lock),
            "SOURCE_SHA256": source_sha256(repo),
            "SOURCE_REVISION": source_revision(repo),
            "SNAPSHOT": snapshot or "",
            "SNAPSHOT_MIRROR": snapshot_mirror or "",
        }
        network = "default" if deb["requested"] else "none"
        log(f"[image] building {tag} (network during build: {network})")
        tail: deque[str] = deque(maxlen=30)
        kwargs = dict(path=str(ctx), buildargs=buildargs, rm=True, forcerm=True, decode=True, pull=False)
        if network == "none":
            kwargs["network_mode"] = "none"
        image_id = _stream_build(client, kwargs, name, tail, log)
    if image_id is None:
        raise ImageBuildError(f"building {name}: the engine reported no image id\n" + "\n".join(tail))
    report = read_debian_report(client, image_id)
    _label_build(client, image_id, tag, {
        LABEL_DRIFT: json.dumps(report.get("drift", [])),
        LABEL_PACKAGES: json.dumps(report.get("installed", {}), sort_keys=True),
        LABEL_SNAPSHOT: report.get("snapshot") or "",
    })
    img = client.images.get(tag)
    img.tag(f"pointfail/{name}", variant)
    prune_old_tags(client, name, variant, keep=tag, log=log)
    secs = round(time.monotonic() - t0, 1)
    out = _built(img, name, variant, tag, secs, True)
    for line in aptpins.drift_lines(out.drift):
        log(f"[image] {name} Debian drift: {line}")
    log(f"[image] {tag} built in {secs} s ({img.id})")
    return out


def ensure_image(client, repo: Path, name: str, *, variant: str = "cpu", wheelhouse: Optional[Path] = None,
                 base_lock: Optional[Path] = None, log: Callable[[str], None] = print, **kw) -> "BuiltImage":
    """:func:`build_image`, first filling the host wheelhouse from the image's lock file when its
    wheels are not there yet (``LockError``), as on a fresh machine. Raises what those raise."""
    try:
        return build_image(client, repo, name, variant=variant, wheelhouse=wheelhouse, base_lock=base_lock, log=log,
                           **kw)
    except locks.LockError:
        locks.download_wheels(Path(repo) / "images" / name, Path(wheelhouse or Path(repo) / "wheelhouse"), variant)
        return build_image(client, repo, name, variant=variant, wheelhouse=wheelhouse, base_lock=base_lock, log=log,
                           **kw)


def record_debian(repo: Path, built: BuiltImage, log: Callable[[str], None] = print) -> Optional[Path]:
    """Write ``images/<name>/debian.lock`` with the Debian versions ``built`` holds (its ``installed``
    set becomes the recorded one; ``requested`` is kept). Returns the path, or ``None`` for an image
    that installs no Debian packages."""
    image_dir = Path(repo) / "images" / built.name
    deb = debian_lock(image_dir)
    if not deb["requested"]:
        return None
    path = image_dir / DEBIAN_LOCK
    new = dict(deb, installed=dict(built.debian))
    if aptpins.lock_text(new) != aptpins.lock_text(deb):
        path.write_text(aptpins.lock_text(new))
        log(f"[image] recorded {len(built.debian)} Debian package versions of {built.tag} in {path}")
    return path


def prune_old_tags(client, name: str, variant: str, keep: str, log: Callable[[str], None] = print) -> list[str]:
    """Remove the other content-keyed tags ``pointfail/<name>:<variant>-*`` (older builds), so a
    machine that rebuilds after every source change does not keep every image. Layers still used by
    ``keep`` stay; a tag whose image a container still uses is left alone. Returns the removed tags."""
    from docker.errors import APIError

    removed = []
    for img in client.images.list(name=f"pointfail/{name}"):
        for t in img.tags:
            if t.startswith(f"pointfail/{name}:{variant}-") and t != keep:
                try:
                    client.images.remove(t)
                    removed.append(t)
                except APIError:
                    continue
    if removed:
        log(f"[image] removed older tags: {', '.join(sorted(removed))}")
    return removed


def check_pins(repo: Path, names: Optional[list[str]] = None, *, snapshot: Optional[str] = None,
               snapshot_mirror: Optional[str] = None, client=None, log: Callable[[str], None] = print) -> int:
    """``make check-pins``: list the recorded Debian versions (``images/base/base.lock.json`` and every
    image's ``debian.lock``, or those of ``names``) that the configured archive no longer has.

    The check runs :mod:`aptpins` (``check``) in a throwaway container of the local base, as root with
    a network, so it reads the same apt sources (the machine's mirror, or the snapshot archive with
    ``snapshot``) and the same release as image builds, whatever the host runs. Returns 0 when every
    recorded version is available, 1 otherwise (each missing one is printed with what the archive
    has instead).

    Raises:
        pointfail_runner.base.BaseImageError / ImageBuildError: no base could be built or run.
    """
    from .engine import ensure_engine

    repo = Path(repo)
    client = client or ensure_engine()
    lock_path = repo / "images/base/base.lock.json"
    base = base_mod.ensure_base(client, lock_path, snapshot=snapshot, snapshot_mirror=snapshot_mirror, log=log)
    recorded = base_mod.read_lock(lock_path) or {}
    wanted = {"base": dict(aptpins.empty_lock(), installed=recorded.get("packages", {}))} if not names else {}
    for name in names or image_names(repo):
        deb = debian_lock(repo / "images" / name)
        if deb["installed"]:
            wanted[name] = deb
    with tempfile.TemporaryDirectory(prefix="pointfail-check-pins-") as tmp:
        d = Path(tmp)
        d.chmod(0o755)
        shutil.copy2(aptpins.__file__, d / "aptpins.py")
        for label, lock in wanted.items():
            (d / f"{label}.json").write_text(aptpins.lock_text(lock))
        argv = ["/usr/bin/python3", "/check/aptpins.py", "check", *[f"/check/{label}.json" for label in sorted(wanted)]]
        env = {"SNAPSHOT": snapshot or "", "SNAPSHOT_MIRROR": snapshot_mirror or ""}
        c = client.containers.create(base.id, command=argv, user="0:0", environment=env, mem_limit="1g",
                                     volumes={str(d): {"bind": "/check", "mode": "ro"}},
                                     security_opt=["no-new-privileges"])
        try:
            c.start()
            code = c.wait(timeout=900).get("StatusCode")
            for line in c.logs(stdout=True, stderr=True).decode("utf-8", "replace").splitlines():
                log(line)
        finally:
            c.remove(force=True)
    return 0 if code == 0 else 1
