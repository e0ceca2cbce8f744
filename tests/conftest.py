"""Shared test setup: offline hub, deterministic hypothesis profile, paths to shared data, the Docker base."""

import os
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
    """A base image lock whose base is in the engine, for tests that build images
    (:func:`serving_fixtures.base_lock`: a temporary copy, the committed lock is left alone). On a fresh
    machine the base the committed ``images/base/base.lock.json`` names is absent, and Debian's
    -security and -updates pockets may have moved on since it was published."""
    import serving_fixtures as fx
    from pointfail_runner.engine import ensure_engine

    client = ensure_engine()
    try:
        return fx.base_lock(client, tmp_path_factory.mktemp("base"))
    finally:
        client.close()
