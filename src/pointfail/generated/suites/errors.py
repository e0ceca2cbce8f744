"""The errors of the suite generators."""

from __future__ import annotations

__all__ = ["FontMissingError", "SuiteError"]


class SuiteError(RuntimeError):
    """A suite cannot be generated or verified (missing font, bad directory, no unique target)."""


class FontMissingError(SuiteError):
    """A font file the generators need is not installed. The message names the file and the Debian
    package that ships it."""
