"""Shared test setup: offline hub, deterministic hypothesis profile, paths to shared data."""

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
