"""Build the images in ``images/`` through the Engine API (issue 4, "Images").

Each build stages a context directory holding only what the Dockerfile copies: the Dockerfile, the
lock file(s), the lock's wheels from the host wheelhouse (checked against the lock's hashes first),
and a wheel of pointfail built from this checkout. The base is passed as ``BASE=<image id>`` from
``images/base/base.lock.json``, so every image is pinned to the base by content digest. pip installs
with ``--no-index --require-hashes`` inside the build; builds run with ``network_mode="none"`` except
for images whose Dockerfile calls ``apt-get`` (the ``ocr`` image installs Tesseract from Debian).

Tags: ``pointfail/<name>:<variant>-<key12>`` where the key hashes the Dockerfile, the lock, the
pointfail source tree and the base id, so an image is rebuilt exactly when one of those changed, plus
the alias ``pointfail/<name>:<variant>``. Labels: ``org.pointfail.lock-sha256``,
``org.pointfail.source-sha256``, ``org.opencontainers.image.revision`` (git revision of the checkout).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from . import base as base_mod
from . import locks

NON_MODEL_IMAGES = ("scorer",)


class ImageBuildError(RuntimeError):
    """An image could not be built: unknown image, missing lock/wheels, missing base, or the
    Dockerfile step that failed (with the last lines of the build log)."""


@dataclass(frozen=True)
class BuiltImage:
    """A built (or reused) image: ``tag`` (content-keyed), ``id`` (``sha256:…``), ``seconds`` spent
    building (0 when reused), ``built`` (False when an image with that tag already existed)."""

    name: str
    variant: str
    tag: str
    id: str
    seconds: float
    built: bool


def image_names(repo: Path) -> list[str]:
    """Every buildable image: directories of ``repo/images`` with a Dockerfile, except ``base``."""
    d = Path(repo) / "images"
    return sorted(p.name for p in d.iterdir() if (p / "Dockerfile").is_file() and p.name not in ("base", "judge"))


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


def build_pointfail_wheel(repo: Path, dest: Path) -> Path:
    """Build a wheel of the pointfail checkout into ``dest`` (``pip wheel --no-deps
    --no-build-isolation``) and return its path.

    Raises:
        ImageBuildError: pip failed.
    """
    dest.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(dest),
            str(repo)]
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


def needs_network(dockerfile: Path) -> bool:
    """True when the Dockerfile installs Debian packages (``"apt-get"`` in an exec-form RUN); such a
    build gets the default bridge network, every other build ``none``."""
    return '"apt-get"' in dockerfile.read_text()


def build_key(dockerfile: Path, lock: Path, src_sha: str, base_id: str) -> str:
    """sha256 of everything an image is made of: Dockerfile bytes, lock bytes, source hash, base id."""
    h = hashlib.sha256()
    for part in (dockerfile.read_bytes(), lock.read_bytes(), src_sha.encode(), base_id.encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def build_image(client, repo: Path, name: str, *, variant: str = "cpu", wheelhouse: Optional[Path] = None,
                base_lock: Optional[Path] = None, force: bool = False,
                log: Callable[[str], None] = print) -> BuiltImage:
    """Build ``images/<name>`` for ``variant`` (``cpu`` or ``cuda`` torch) unless an image with the
    same content key exists.

    Args:
        client: ``docker.DockerClient``.
        repo: the checkout (holds ``images/``, ``src/pointfail``).
        wheelhouse: host wheelhouse (default ``repo/wheelhouse``), filled by ``make wheels``.
        base_lock: default ``repo/images/base/base.lock.json``; the base it names must be in the engine.

    Raises:
        ImageBuildError: unknown image, base missing, a failed step (last build log lines included).
        locks.LockError: lock or wheels missing (names the command that fixes it).
    """
    from docker.errors import ImageNotFound

    repo = Path(repo)
    image_dir = repo / "images" / name
    dockerfile = image_dir / "Dockerfile"
    if not dockerfile.is_file():
        raise ImageBuildError(f"no image {name!r}: {dockerfile} missing (known: {', '.join(image_names(repo))})")
    if variant not in locks.VARIANTS:
        raise ImageBuildError(f"variant must be one of {locks.VARIANTS}, not {variant!r}")
    wheelhouse = Path(wheelhouse or repo / "wheelhouse")
    base_lock = Path(base_lock or repo / "images/base/base.lock.json")
    blk = base_mod.read_lock(base_lock)
    if not base_mod.base_present(client, blk):
        raise ImageBuildError(f"base image named by {base_lock} is not in the engine; run: make base")
    lock = locks.lock_path(image_dir, variant)
    src_sha = source_sha256(repo)
    key = build_key(dockerfile, lock if lock.is_file() else dockerfile, src_sha, blk["image_id"])
    tag = f"pointfail/{name}:{variant}-{key[:12]}"
    if not force:
        try:
            img = client.images.get(tag)
            log(f"[image] {tag} present ({img.id[:19]}), not rebuilt")
            return BuiltImage(name, variant, tag, img.id, 0.0, False)
        except ImageNotFound:
            pass
    wheels = locks.verify_wheelhouse(image_dir, wheelhouse, variant)
    wheelhouse.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"pointfail-ctx-{name}-", dir=wheelhouse) as tmp:
        ctx = Path(tmp)
        shutil.copy2(dockerfile, ctx / "Dockerfile")
        shutil.copy2(lock, ctx / lock.name)
        (ctx / "wheels").mkdir()
        for p in wheels.values():
            _link(p, ctx / "wheels" / p.name)
        build_pointfail_wheel(repo, ctx / "local")
        buildargs = {
            "BASE": blk["image_id"],
            "TORCH_VARIANT": variant,
            "LOCK_SHA256": locks.file_sha256(lock),
            "SOURCE_SHA256": src_sha,
            "SOURCE_REVISION": source_revision(repo),
        }
        network = "default" if needs_network(dockerfile) else "none"
        log(f"[image] building {tag} (network during build: {network})")
        tail: deque[str] = deque(maxlen=30)
        kwargs = dict(path=str(ctx), tag=tag, buildargs=buildargs, rm=True, forcerm=True, decode=True, pull=False)
        if network == "none":
            kwargs["network_mode"] = "none"
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
    img = client.images.get(tag)
    img.tag(f"pointfail/{name}", variant)
    prune_old_tags(client, name, variant, keep=tag, log=log)
    secs = round(time.monotonic() - t0, 1)
    log(f"[image] {tag} built in {secs} s ({image_id or img.id})")
    return BuiltImage(name, variant, tag, img.id, secs, True)


def ensure_image(client, repo: Path, name: str, *, variant: str = "cpu", wheelhouse: Optional[Path] = None,
                 base_lock: Optional[Path] = None, log: Callable[[str], None] = print) -> "BuiltImage":
    """:func:`build_image`, first filling the host wheelhouse from the image's lock file when its
    wheels are not there yet (``LockError``), as on a fresh machine. Raises what those raise."""
    try:
        return build_image(client, repo, name, variant=variant, wheelhouse=wheelhouse, base_lock=base_lock, log=log)
    except locks.LockError:
        locks.download_wheels(Path(repo) / "images" / name, Path(wheelhouse or Path(repo) / "wheelhouse"), variant)
        return build_image(client, repo, name, variant=variant, wheelhouse=wheelhouse, base_lock=base_lock, log=log)


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


def find_image(client, repo: Path, name: str, variant: str = "cpu") -> Optional[str]:
    """The content-keyed tag of ``images/<name>`` for the current checkout if the engine has it."""
    from docker.errors import ImageNotFound

    repo = Path(repo)
    image_dir = repo / "images" / name
    blk = base_mod.read_lock(repo / "images/base/base.lock.json") or {}
    lock = locks.lock_path(image_dir, variant)
    if not lock.is_file() or "image_id" not in blk:
        return None
    key = build_key(image_dir / "Dockerfile", lock, source_sha256(repo), blk["image_id"])
    tag = f"pointfail/{name}:{variant}-{key[:12]}"
    try:
        client.images.get(tag)
        return tag
    except ImageNotFound:
        return None
