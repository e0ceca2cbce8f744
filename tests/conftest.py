"""Shared test setup: offline hub, deterministic hypothesis profile, paths to shared data, the Docker base."""

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]


def _shared_dir() -> Path:
    """The shared/ folder beside the checkout (``../shared``), or ``$POINTFAIL_SHARED``."""
    env = os.environ.get("POINTFAIL_SHARED")
    return Path(env) if env else REPO.parent / "shared"


SHARED = _shared_dir()
POINTERBENCH_DIR = SHARED / "data" / "pointerbench"


@pytest.fixture(scope="session")
def pointerbench_dir() -> Path:
    """The real PointerBench annotations shipped in shared/data/pointerbench."""
    if not POINTERBENCH_DIR.is_dir():
        pytest.fail(f"PointerBench annotations not found at {POINTERBENCH_DIR} (set POINTFAIL_SHARED)")
    return POINTERBENCH_DIR


@pytest.fixture(scope="session")
def base_lock(tmp_path_factory) -> Path:
    """A base image lock whose base is in the engine, for tests that build images.

    The committed ``images/base/base.lock.json`` names a base built from Debian's archive on the day it
    was published; on a fresh machine that image is absent, and Debian's -security and -updates pockets
    may have moved on. The lock is copied to a temporary folder and :func:`pointfail_runner.base.ensure_base`
    reuses the base it names when the engine has it and builds one otherwise (rewriting only the copy),
    so the committed lock is left alone and every test in the session builds on the same base.
    """
    from pointfail_runner.base import ensure_base
    from pointfail_runner.engine import ensure_engine

    lock = tmp_path_factory.mktemp("base") / "base.lock.json"
    shutil.copy(REPO / "images/base/base.lock.json", lock)
    client = ensure_engine()
    try:
        ensure_base(client, lock)
    finally:
        client.close()
    return lock
