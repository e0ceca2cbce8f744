"""Playwright over Debian's Chromium for the failure-browser tests (``test_view_browser.py``,
``test_view_review.py``): the binary, its flags, the skip mark when it is absent, and the launch that
the ``browser`` fixture in ``conftest.py`` holds open for a test module.

Needs Debian's chromium (``apt-get install chromium``; ``make test`` installs it) and Playwright for
Python (``requirements-dev.txt``).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM = "/usr/bin/chromium"
"""Debian's Chromium (the wrapper script; the failure browser is tested as a user would open it)."""
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
"""Headless, no sandbox (the tests may run as root), software rendering, nothing fetched from outside."""

needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason="needs Debian's chromium (apt-get install chromium)")


@contextmanager
def launched() -> Iterator[Any]:
    """A headless Chromium under Playwright (a ``playwright.sync_api.Browser``), closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
