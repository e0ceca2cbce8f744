"""``verify``: regenerate a study's tables and compare them byte for byte with the committed ones,
plus any further checks over the records.

The entry point is :func:`verify`. Checks beyond the table comparison are listed in :data:`CHECKS` as
``"module:factory"`` strings, imported when ``verify`` runs: a factory is called with the study
directory and returns an object with ``observe(record, path, line)`` (it sees every record during the
one scan of the study) and ``problems() -> list[str]`` (one line per problem, asked for once the scan
is over). To add a check, write it in its own module and add its name to :data:`CHECKS`.
"""

from __future__ import annotations

import difflib
import importlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any, Callable, Protocol

from pointfail.aggregate.study import RecordObserver, load_study
from pointfail.aggregate.writing import TABLES_DIR, build_tables, write_tables
from pointfail.tables import parse_sha256sums

__all__ = ["CHECKS", "Check", "VerifyResult", "compare_tables", "verify"]

CHECKS: tuple[str, ...] = ("pointfail.integrity:IntegrityCheck",)
"""Further checks run by :func:`verify`, as ``"module:factory"`` names (see the module docstring):
:class:`pointfail.integrity.IntegrityCheck` re-derives every record from its raw reply and target and
compares it with its committed digest."""


class Check(RecordObserver, Protocol):
    """A check over every record of a study (see the module docstring)."""

    def problems(self) -> list[str]:
        """One line per problem found, empty when the records pass."""


@dataclass
class VerifyResult:
    """Outcome of :func:`verify` for one study: ``ok``; ``problems`` (one line each: a differing,
    missing or unexpected table, a SHA256SUMS line that does not match its committed file, or a
    problem a check of :data:`CHECKS` found); ``diffs`` (name → unified diff of committed vs
    regenerated); ``headline`` (regenerated headline.md text); ``errors``: records that ended in an
    infrastructure error (a study with any is incomplete, whether or not its tables match);
    ``not_checked``: what could not be checked here and why: the records whose mask files are absent
    (their outcome and readings are not re-derived). Every table is always checked: each is regenerated
    from the records alone (the frame-compliance diagnostic reads the readings each record stores)."""

    study: str
    ok: bool
    problems: list[str]
    diffs: dict[str, str]
    headline: str
    checks: list[str] = field(default_factory=list)
    errors: int = 0
    not_checked: list[str] = field(default_factory=list)

    @property
    def incomplete(self) -> bool:
        """Whether the study's records hold infrastructure errors."""
        return self.errors > 0


def _decode(b: bytes) -> list[str]:
    return b.decode("utf-8", errors="replace").splitlines(keepends=True)


def _load_check(name: str) -> Callable[[Path], Any]:
    mod, _, attr = name.partition(":")
    return getattr(importlib.import_module(mod), attr)


def _without(data: bytes, names: Sequence[str]) -> bytes:
    """``SHA256SUMS`` bytes without the lines of ``names``."""
    return b"".join(x for x in data.splitlines(keepends=True)
                    if not any(x.rstrip(b"\r\n").endswith(b"  " + n.encode()) for n in names))


def compare_tables(fresh: dict[str, bytes], committed_dir: Path, study_dir: Path,
                   skip: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """Compare regenerated table bytes with a committed tables folder and its ``SHA256SUMS``.
    Files named in ``skip`` are not compared (nor their lines of the two ``SHA256SUMS``); the
    committed ``SHA256SUMS`` is still checked against every committed file.

    Returns:
        ``(problems, diffs)`` as in :class:`VerifyResult`.
    """
    problems: list[str] = []
    diffs: dict[str, str] = {}
    committed: dict[str, bytes] = {}
    if not committed_dir.is_dir():
        problems.append(f"{committed_dir}: no committed tables (run `pointfail aggregate {study_dir}`)")
    else:
        for p in sorted(committed_dir.iterdir()):
            if p.is_file() and (p.suffix in {".md", ".csv", ".json", ".sha256"} or p.name == "SHA256SUMS"):
                committed[p.name] = p.read_bytes()
    if not committed:
        return problems, diffs
    if "SHA256SUMS" in committed:
        problems += _check_committed_sums(committed, committed_dir)
    if skip:
        fresh = {k: (_without(v, skip) if k == "SHA256SUMS" else v) for k, v in fresh.items() if k not in skip}
        committed = {k: (_without(v, skip) if k == "SHA256SUMS" else v) for k, v in committed.items() if k not in skip}
    for name in sorted(set(fresh) | set(committed)):
        _compare_one(name, fresh, committed, committed_dir, problems, diffs)
    return problems, diffs


def _check_committed_sums(committed: dict[str, bytes], committed_dir: Path) -> list[str]:
    """The committed ``SHA256SUMS`` against the committed files: a line that does not parse, a listed
    file that is missing, a file whose bytes differ from its line."""
    problems: list[str] = []
    try:
        sums = parse_sha256sums(committed["SHA256SUMS"])
    except ValueError as e:
        sums = {}
        problems.append(f"{committed_dir / 'SHA256SUMS'}: {e}")
    for name, h in sorted(sums.items()):
        if name not in committed:
            problems.append(f"{committed_dir / name}: listed in SHA256SUMS but missing")
        elif sha256(committed[name]).hexdigest() != h:
            problems.append(f"{committed_dir / name}: does not match its line in the committed SHA256SUMS")
    return problems


def _compare_one(name: str, fresh: dict[str, bytes], committed: dict[str, bytes], committed_dir: Path,
                 problems: list[str], diffs: dict[str, str]) -> None:
    """One table name: missing, unexpected, or differing (with its unified diff) -- or equal."""
    if name not in committed:
        problems.append(f"{committed_dir / name}: missing (regeneration produces it)")
    elif name not in fresh:
        problems.append(f"{committed_dir / name}: unexpected (regeneration does not produce it)")
    elif committed[name] != fresh[name]:
        problems.append(f"{committed_dir / name}: differs from the regenerated table")
        diffs[name] = "".join(
            difflib.unified_diff(
                _decode(committed[name]), _decode(fresh[name]),
                fromfile=f"committed/{name}", tofile=f"regenerated/{name}",
            )
        )


def verify(study_dir: str | Path, *, checks: Sequence[str] | None = None) -> VerifyResult:
    """Regenerate a study's tables in a temporary directory and compare them byte for byte with the
    committed ``<study>/tables/`` and its ``SHA256SUMS``; run every check of ``checks`` (default
    :data:`CHECKS`) over the records in the same single scan.

    Raises:
        RecordError: a records line failing the schema (file and line in the message).
        AggregateError: see :func:`pointfail.aggregate.study.load_study`.
    """
    d = Path(study_dir)
    names = CHECKS if checks is None else tuple(checks)
    active: list[Check] = [_load_check(n)(d) for n in names]
    study = load_study(d, observers=active)
    with tempfile.TemporaryDirectory(prefix="pointfail-verify-") as tmp:
        write_tables(build_tables(study), tmp)
        fresh = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir())}
    problems, diffs = compare_tables(fresh, d / TABLES_DIR, d)
    not_checked: list[str] = []
    unscored = sum(getattr(c, "unscored", 0) for c in active)
    if unscored:
        not_checked.append(f"{unscored} record(s) whose mask file is not on this machine: their parse is re-derived, "
                           "their outcome, geometry, official score and frame-compliance readings are not (every "
                           "table is still checked); bring the study's data to re-derive them")
    for c in active:
        problems.extend(c.problems())
    return VerifyResult(study=study.name, ok=not problems, problems=problems, diffs=diffs,
                        headline=fresh["headline.md"].decode("utf-8"), checks=list(names), errors=study.errors,
                        not_checked=not_checked)
