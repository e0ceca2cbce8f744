"""Render a study's tables to bytes and write them with their ``SHA256SUMS``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pointfail.aggregate.study import Study, load_study
from pointfail.tables import Table, parse_sha256sums, sha256sums

__all__ = ["TABLES_DIR", "aggregate", "build_tables", "write_tables"]

TABLES_DIR = "tables"
"""The folder of a study directory that holds its tables."""

UNSEEN_NOTE_TABLES = ("headline", "outcomes")
"""The tables (the hit rates per benchmark) that carry RefSpatial-Bench's Unseen-split warning when
the study counts Unseen samples."""


def unseen_note(study: Study) -> list[str]:
    """The publisher's warning on RefSpatial-Bench's Unseen split, with how many of its samples the
    study counts (empty when none): :data:`pointfail.inputs.benchmarks.refspatial.UNSEEN_WARNING`."""
    if not study.unseen_refspatial:
        return []
    from pointfail.inputs.benchmarks.refspatial import UNSEEN_WARNING

    n = len({sid for _, sid in study.unseen_refspatial})
    return [f"RefSpatial-Bench's Unseen split: {n} sample(s) are counted in its column and in pooled; {UNSEEN_WARNING}"]


def build_tables(study: Study) -> dict[str, bytes]:
    """Every table file's name and bytes (each registered builder's tables, rendered by
    :mod:`pointfail.tables`), ``records.sha256`` (a digest per record, :mod:`pointfail.integrity`)
    and ``SHA256SUMS`` of them all. The study's ``[aggregate] notes``
    (:attr:`Study.notes`) follow every table's own notes; the tables of :data:`UNSEEN_NOTE_TABLES`
    carry :func:`unseen_note` first, when the study counts RefSpatial-Bench Unseen samples.

    Raises:
        ValueError: two builders producing the same file name.
    """
    files: dict[str, bytes] = {}
    extra = study.notes
    unseen = unseen_note(study)
    for builder in study.builders:
        for out in builder.tables(study):
            if unseen and isinstance(out, Table) and out.name in UNSEEN_NOTE_TABLES:
                out = replace(out, notes=[*out.notes, *unseen])
            if extra and isinstance(out, Table):
                out = replace(out, notes=[*out.notes, *extra])
            for name, data in out.files().items():
                if name in files:
                    raise ValueError(f"table file {name!r} produced twice (builder {builder.name!r})")
                files[name] = data
    if study.digests is not None:  # the records' digests, so SHA256SUMS covers the records (pointfail.integrity)
        from pointfail.integrity import DIGESTS_NAME

        files[DIGESTS_NAME] = study.digests.file_bytes()
    files["SHA256SUMS"] = sha256sums(files)
    return files


def write_tables(files: dict[str, bytes], out_dir: str | Path) -> list[Path]:
    """Write table files into ``out_dir`` (created). Table files a previous run wrote there (the
    names in its ``SHA256SUMS``) that this run does not produce are removed, so the folder never
    keeps a stale table; nothing else in the folder is touched. Returns the paths written."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    old_sums = d / "SHA256SUMS"
    if old_sums.is_file():
        try:
            previous = parse_sha256sums(old_sums.read_bytes())
        except ValueError:
            previous = {}
        for name in previous:
            old = d / name
            if name not in files and "/" not in name and old.is_file():
                old.unlink()
    paths = []
    for name in sorted(files):
        p = d / name
        with open(p, "wb") as f:
            f.write(files[name])
        paths.append(p)
    return paths


def aggregate(study_dir: str | Path, out_dir: str | Path | None = None) -> dict[str, bytes]:
    """Aggregate ``study_dir``'s records into ``out_dir`` (default ``<study_dir>/tables``).

    Returns the files written (name → bytes).

    Raises:
        RecordError, AggregateError: see :func:`pointfail.aggregate.study.load_study`.
    """
    study = load_study(study_dir)
    files = build_tables(study)
    write_tables(files, Path(out_dir) if out_dir is not None else Path(study_dir) / TABLES_DIR)
    return files
