"""Download a benchmark from its publisher's hub repository, pinned to a commit and verified.

For users with network access only; it never runs in tests (tests set ``HF_HUB_OFFLINE=1``, and
:func:`fetch` refuses before touching the network).

Each benchmark module declares its ``source`` (:data:`SOURCES` gathers them): the publisher's
repository id and type, the pinned commit (40 hex digits; ``None`` where it has not pinned one
yet — then ``--revision`` must name a commit the user has checked), and the file patterns that make up the benchmark's official
layout. After ``huggingface_hub.snapshot_download`` the files are verified against the hub's record
of that commit: an LFS file by its sha256, a regular file by its git blob id (sha1 of
``"blob <size>\\0" + bytes``). A ``pointfail-fetch.json`` beside the data records repository,
commit and the sha256 of every file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pointfail.inputs.hub import COMMIT_ID, hub_expected_files, hub_offline
from pointfail.records import canonical_json, sha256_file

from ._common import BenchmarkError

__all__ = ["Source", "SOURCES", "FetchError", "fetch", "git_blob_sha1", "sources", "verify_files"]

@dataclass(frozen=True)
class Source:
    """Where a benchmark is published.

    Attributes:
        repo_id: hub repository id (``owner/name``).
        repo_type: ``dataset`` or ``model``.
        revision: pinned commit (40 lowercase hex digits) or ``None`` when not pinned yet.
        allow_patterns: glob patterns of the files to download (``None``: everything).
        note: what the repository holds / where the facts come from.
    """

    repo_id: str
    repo_type: str = "dataset"
    revision: Optional[str] = None
    allow_patterns: Optional[tuple[str, ...]] = None
    note: str = ""


def sources() -> dict[str, Source]:
    """Publisher repository per benchmark name: the ``source`` each benchmark module declares
    (:class:`pointfail.inputs.benchmarks.Benchmark`); benchmarks without one (``suite``, generated
    locally) are not downloadable."""
    from . import benchmarks

    return {n: b.source for n, b in benchmarks().items() if b.source is not None}


def __getattr__(name: str) -> Any:
    if name == "SOURCES":  # a view of the registry, made when asked for (PEP 562)
        return sources()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SOURCES: dict[str, Source]
"""Publisher repository per downloadable benchmark name (:func:`sources`)."""


class FetchError(RuntimeError):
    """The download cannot start (offline, no pinned revision, bad revision) or did not verify."""


def git_blob_sha1(path: Path) -> str:
    """The git blob id of a file: sha1 of ``b"blob <size>\\0"`` followed by its bytes (hex)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def verify_files(local_dir: Path, expected: dict[str, tuple[str, str]]) -> list[str]:
    """Compare downloaded files with the hub's record.

    Args:
        local_dir: the download directory.
        expected: ``{relative path: ("sha256", hex) | ("git-sha1", hex)}``.

    Returns:
        One line per problem (missing file, digest mismatch), sorted by path; empty when all match.
    """
    problems = []
    for rel in sorted(expected):
        kind, want = expected[rel]
        p = local_dir / rel
        if not p.is_file():
            problems.append(f"missing {p}")
            continue
        got = sha256_file(p) if kind == "sha256" else git_blob_sha1(p)
        if got != want:
            problems.append(f"{p}: {kind} {got} != expected {want}")
    return problems


def fetch(name: str, to: str | Path, *, revision: Optional[str] = None) -> Path:
    """Download benchmark ``name`` into ``to`` at a pinned commit and verify every file.

    Args:
        name: a downloadable benchmark (:func:`sources`).
        to: target directory (created).
        revision: a 40-hex commit overriding the table's pin (required where the table has none).

    Returns:
        The directory written (``to``), holding the official layout and ``pointfail-fetch.json``.

    Raises:
        BenchmarkError: unknown benchmark name (lists the known ones).
        FetchError: ``HF_HUB_OFFLINE`` is set; no pinned revision; a revision that is not a
            40-hex commit; the hub cannot be reached or lacks the repo/commit; a downloaded file
            differs from the hub's record (each named).
    """
    known = sources()
    src = known.get(name)
    if src is None:
        raise BenchmarkError(name, [f"unknown benchmark {name!r}; downloadable: {', '.join(sorted(known))}"])
    rev = revision or src.revision
    if rev is None:
        raise FetchError(f"{name}: no revision is pinned for {src.repo_id} in pointfail's table; pass "
                         f"--revision <40-hex commit> naming the commit you checked on the publisher's repo")
    if not COMMIT_ID.match(rev):
        raise FetchError(f"{name}: revision {rev!r} is not a 40-hex commit id (branches and tags move; "
                         f"pin a commit)")
    if hub_offline():
        raise FetchError(f"{name}: offline (HF_HUB_OFFLINE is set); cannot download {src.repo_id}@{rev}")
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    out = Path(to)
    try:
        info = HfApi().repo_info(src.repo_id, repo_type=src.repo_type, revision=rev, files_metadata=True)
        expected = hub_expected_files(info, src.allow_patterns)
        snapshot_download(src.repo_id, repo_type=src.repo_type, revision=rev, local_dir=out,
                          allow_patterns=list(src.allow_patterns) if src.allow_patterns else None)
    except (OfflineModeIsEnabled, LocalEntryNotFoundError, HfHubHTTPError, OSError) as e:
        raise FetchError(f"{name}: could not download {src.repo_id}@{rev}: {e}") from e
    if not expected:
        raise FetchError(f"{name}: {src.repo_id}@{rev} lists no files matching {src.allow_patterns}")
    problems = verify_files(out, expected)
    if problems:
        raise FetchError(f"{name}: {len(problems)} file(s) failed verification:\n  " + "\n  ".join(problems[:20]))
    from .archive import ArchiveError, archive_summary

    record = {"benchmark": name, "repo_id": src.repo_id, "repo_type": src.repo_type, "revision": rev,
              "files": {rel: sha256_file(out / rel) for rel in sorted(expected)}}
    try:  # every archive's sha256 and member list (an unsafe archive is refused here, before any load)
        record["archives"] = {rel: archive_summary(out / rel) for rel in sorted(expected) if rel.lower().endswith(".zip")}
    except ArchiveError as e:
        raise FetchError(f"{name}: {e}") from None
    (out / "pointfail-fetch.json").write_text(canonical_json(record), encoding="utf-8")
    return out
