"""Shared test setup: offline hub, deterministic hypothesis profile, paths to shared data, the Docker base."""

import os
import shutil
import tempfile
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

# Measured on an empty Docker data root (.ci/run from a fresh clone, 2026-12-01, 1117 passed in 19.6 min):
# the suite's image builds peaked at 9.0 GiB in the engine's data root, its temporary files at 0.6 GiB,
# the host wheelhouse at 0.5 GiB (the project venv, 6.4 GiB, is made before the tests). Below this much
# free space tests fail with ENOSPC far from the cause (hundreds of setup errors), so it is said first.
LOW_DISK_BYTES = 12 * 2**30


def _free_disk() -> list[tuple[str, Path, int]]:
    """(what, path, free bytes) for the file systems the suite writes to: temporary files, the checkout
    (wheelhouse, records) and the Docker Engine's default data root when it exists."""
    places = [("temporary files", Path(tempfile.gettempdir())), ("checkout", REPO),
              ("Docker data root", Path("/var/lib/docker"))]
    return [(what, p, shutil.disk_usage(p).free) for what, p in places if p.exists()]


def _disk_lines() -> list[str]:
    lines = ["free disk: " + ", ".join(f"{what} {p} {free / 2**30:.1f} GiB" for what, p, free in _free_disk())]
    low = [f"{what} ({p})" for what, p, free in _free_disk() if free < LOW_DISK_BYTES]
    if low:
        lines.append(f"WARNING: less than {LOW_DISK_BYTES // 2**30} GiB free on {', '.join(low)}: the Docker tests "
                     "build images there and later tests can fail with 'No space left on device' "
                     "(free space: docker image prune, or remove old checkouts)")
    return lines


def pytest_report_header(config):
    """Free disk space where the suite writes, and a warning when it is short (see :data:`LOW_DISK_BYTES`)."""
    return _disk_lines()


def pytest_sessionstart(session):
    """With ``-q`` (``make test``) there is no header: a shortage is still said before the first test."""
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = _disk_lines()
    if tr is not None and session.config.get_verbosity() < 0 and len(lines) > 1:
        for line in lines:
            tr.write_line(line)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """On a failed run, free disk space again: a full disk is the cause of many setup errors at once."""
    if exitstatus not in (0, 5):
        for line in _disk_lines():
            terminalreporter.write_line(line)
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


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium under Playwright, one per test module (:func:`browser_fixtures.launched`); the
    modules that use it carry :data:`browser_fixtures.needs_chromium`."""
    from browser_fixtures import launched

    with launched() as b:
        yield b
