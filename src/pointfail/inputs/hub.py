"""The rules for reading a hub repository, shared by every download (``pointfail data fetch`` of a
benchmark, :mod:`pointfail.inputs.benchmarks.fetch`; study-locked data and weights, :mod:`pointfail.inputs.studylock`):
what counts as a pinned commit, when the hub may not be reached, which files of a repository are
fetched, and the digest the hub records for each of them. Imports nothing beyond the standard library;
the huggingface_hub objects are passed in.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any, Optional

__all__ = ["COMMIT_ID", "hub_expected_files", "hub_file_wanted", "hub_offline"]

COMMIT_ID = re.compile(r"^[0-9a-f]{40}$")
"""A commit id as the hub writes it: 40 lower-case hex digits (branches and tags move; pins are commits)."""


def hub_offline() -> bool:
    """Whether the hub may not be reached: ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` (which
    huggingface_hub reads the same way) is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    v = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return v.strip().lower() in ("1", "true", "yes", "on")


def hub_file_wanted(path: str, patterns: Optional[tuple[str, ...]]) -> bool:
    """Whether the repository file ``path`` (relative, ``/``-separated) is fetched: never
    huggingface_hub's own bookkeeping (``.cache/...``) or ``.gitattributes``; otherwise when it matches
    one of the glob ``patterns`` (``fnmatch``), or always when ``patterns`` is ``None``."""
    if path.startswith(".cache/") or path == ".gitattributes":
        return False
    return patterns is None or any(fnmatch.fnmatch(path, pat) for pat in patterns)


def hub_expected_files(info: Any, patterns: Optional[tuple[str, ...]]) -> dict[str, tuple[str, str]]:
    """The digest the hub records for each wanted file (:func:`hub_file_wanted`) of a repository.

    Args:
        info: ``huggingface_hub.HfApi().repo_info(..., files_metadata=True)`` of a model, dataset or
            space (anything else lists no files).
        patterns: as :func:`hub_file_wanted`.

    Returns:
        ``{path: ("sha256", hex)}`` for a file stored with LFS (the LFS object's sha256), else
        ``{path: ("git-sha1", blob id)}`` (git's blob hash); a file the hub gives neither for gets
        ``("git-sha1", "")``, which no file matches, so verifying it fails and names it.
    """
    out: dict[str, tuple[str, str]] = {}
    for sib in getattr(info, "siblings", None) or []:  # a kernel repo's info has no file list
        if not hub_file_wanted(sib.rfilename, patterns):
            continue
        out[sib.rfilename] = ("sha256", sib.lfs.sha256) if sib.lfs is not None else ("git-sha1", sib.blob_id or "")
    return out
