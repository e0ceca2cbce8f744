"""Docker-side helpers shared by the served-model tests that need images (tests/test_serving_container.py,
tests/test_served_runner.py): the base for a private copy of the base lock, the qwen2_5_vl CPU image,
and the CPU stand-in serving image (tests/fixtures/serve_standin)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from pointfail_runner import images as imod
from pointfail_runner import locks
from pointfail_runner.base import ensure_base

REPO = Path(__file__).resolve().parents[1]
WHEELHOUSE = REPO / "wheelhouse"
STANDIN = REPO / "tests" / "fixtures" / "serve_standin"


def base_lock(client, folder: Path) -> Path:
    """A copy of a base lock in ``folder`` whose base is in the engine. The lock copied is
    ``$POINTFAIL_BASE_LOCK`` when set, else the committed one. Bases are tagged by a key over the lock's
    recipe and recorded versions (not its image id), so the base built for the lock on this machine is
    reused when the engine has it, else one is built now from Debian packages (whatever versions the
    archive has now: drift, not an error). The committed lock is left alone."""
    import os

    lock = Path(folder) / "base.lock.json"
    shutil.copy(os.environ.get("POINTFAIL_BASE_LOCK") or REPO / "images/base/base.lock.json", lock)
    ensure_base(client, lock)
    return lock


def wheels(image_dir: Path) -> None:
    """The lock's wheels in the host wheelhouse (downloaded when missing)."""
    try:
        locks.verify_wheelhouse(image_dir, WHEELHOUSE, "cpu")
    except locks.LockError:
        locks.download_wheels(image_dir, WHEELHOUSE, "cpu")


def family_image(client, lock: Path, name: str = "qwen2_5_vl") -> imod.BuiltImage:
    """``images/<name>`` for the CPU variant, built for this checkout (reused when present)."""
    wheels(REPO / "images" / name)
    return imod.build_image(client, REPO, name, variant="cpu", wheelhouse=WHEELHOUSE, base_lock=lock,
                            log=lambda s: None)


def standin_image(client, family: imod.BuiltImage, ctx: Path) -> str:
    """The stand-in serving image (the family image plus transformers' serving extra), tagged by the
    family image id and the stand-in's files; reused when present."""
    from docker.errors import ImageNotFound

    h = hashlib.sha256(family.id.encode())
    for name in ("Dockerfile", "requirements.lock"):
        h.update((STANDIN / name).read_bytes())
    tag = f"pointfail-test15/serve-standin:{h.hexdigest()[:12]}"
    try:
        client.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    wheels(STANDIN)
    ctx = Path(ctx)
    shutil.copy(STANDIN / "Dockerfile", ctx / "Dockerfile")
    shutil.copy(STANDIN / "requirements.lock", ctx / "requirements.lock")
    (ctx / "wheels").mkdir()
    for p in locks.verify_wheelhouse(STANDIN, WHEELHOUSE, "cpu").values():
        shutil.copy(p, ctx / "wheels" / p.name)
    client.images.build(path=str(ctx), tag=tag, buildargs={"FAMILY_IMAGE": family.id}, network_mode="none",
                        rm=True, forcerm=True, pull=False)
    return tag


def world_readable(root: Path) -> Path:
    """pytest's temporary folders are private (0700); containers run as uid 10001."""
    for p in [root, *root.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root
