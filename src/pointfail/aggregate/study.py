"""A study's records, read once and folded: finding studies, reading ``study.toml``, the scan.

:func:`load_study` streams every records file of a study (the one discovery rule,
:func:`pointfail.records.records_files`) through the one record reader
(:func:`pointfail.records.iter_records`), checks each record (reserved benchmark name, duplicate
samples), turns it into a :class:`~pointfail.aggregate.rows.Row` and hands the row to the core
:class:`~pointfail.aggregate.counting.Counts` fold and to every registered table builder that folds
rows. Observers (``verify``'s checks) see each full record as well. Records are not kept.

Determinism: files are read in sorted path order; every fold is order-independent (counts, exact
sums, sets, dicts sorted at the end), so no output depends on directory order or on the order of the
lines in a records file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol

from pointfail.aggregate.counting import Counts, DuplicateSample
from pointfail.aggregate.registry import TableBuilder, builders, needs_records, needs_rows
from pointfail.aggregate.rows import POOLED, row_from_record
from pointfail.records import Record, enumerate_record_lines, gc_paused, records_files
from pointfail.inputs.study import AggregateSpec

__all__ = [
    "AggregateError",
    "RecordObserver",
    "Study",
    "find_studies",
    "is_study_dir",
    "load_study",
    "studies_without_records",
]

class AggregateError(ValueError):
    """A study directory that cannot be aggregated (no records, duplicate samples, a reserved
    benchmark name). Records failing the schema raise :class:`pointfail.records.RecordError`."""


class RecordObserver(Protocol):
    """Something that sees every full record of a scan (``verify``'s checks). An observer that also
    defines ``observe_line(record, path, line, raw, digest)`` is called with that instead: ``raw``
    the record's stored line (bytes, ending in ``\n``), ``digest`` its 32-byte sha256
    (:func:`pointfail.integrity.line_digest`), computed once per record by the scan and shared."""

    def observe(self, record: Record, path: Path, line: int) -> None:
        """One record, read from ``path`` at 1-based ``line``."""


@dataclass
class Study:
    """A study after one scan of its records.

    ``name`` (``[study] name`` of ``study.toml``, else the directory name), ``path``, ``files`` (the
    records files read, sorted), ``config`` (the validated ``[aggregate]`` table of ``study.toml``,
    its defaults when the study has none: :class:`pointfail.inputs.study.AggregateSpec`),
    ``records`` (how many were read), ``counts`` (the finished core fold) and ``builders`` (the
    registered table builders, every row added).
    """

    name: str
    path: Path
    files: list[Path]
    config: AggregateSpec
    counts: Counts
    builders: list[TableBuilder] = field(default_factory=list)
    records: int = 0
    errors: int = 0
    judge_note: Optional[str] = None
    """The judges' lineage line (:func:`pointfail.running.judges.lineage.lineage_note`) for the failure
    composition table, when the study names one."""
    judge_pin: Optional[str] = None
    """Which weights the model judge's labels rest on (:func:`judge_pin_note`: the digest ``study.lock``
    pins, or that none is pinned yet), when a model judge labels the study."""
    unseen_refspatial: set = field(default_factory=set)
    """Sample ids of RefSpatial-Bench's Unseen split counted in the study (records whose metadata
    carries ``split = unseen`` and the ``directive_suffix`` only the RefSpatial-Bench loader sets):
    their tables carry the publisher's warning (:data:`pointfail.inputs.benchmarks.refspatial.UNSEEN_WARNING`)."""
    digests: Any = None
    """:class:`pointfail.integrity.RecordDigests` of the scan (the sha256 of every stored line, computed
    once per record): ``tables/records.sha256``, which ``SHA256SUMS`` lists, so it covers the records
    as well as the tables."""

    @property
    def incomplete(self) -> bool:
        """Whether any record ended in an infrastructure error (``errors``: how many)."""
        return self.errors > 0

    @property
    def bootstrap_seed(self) -> int:
        """``[aggregate] bootstrap_seed``."""
        return self.config.bootstrap_seed

    @property
    def bootstrap_resamples(self) -> int:
        """``[aggregate] bootstrap_resamples``."""
        return self.config.bootstrap_resamples

    @property
    def notes(self) -> list[str]:
        """``[aggregate] notes``: notes every table of the study carries after its own (what the
        records cover, e.g. ``pointfail evaluate --only-predicted``'s scope); empty by default. A
        study with infrastructure errors also carries :func:`~pointfail.aggregate.registry.incomplete_note`."""
        from pointfail.aggregate.registry import incomplete_note

        extra = [incomplete_note(self.errors)] if self.errors else []
        return list(self.config.notes) + extra


def is_study_dir(path: str | Path) -> bool:
    """Whether ``path`` holds records files (``<model>/<benchmark>.jsonl``) or a ``study.toml``."""
    p = Path(path)
    return p.is_dir() and ((p / "study.toml").is_file() or bool(records_files(p)))


def judge_pin_note(raw: dict[str, Any], lock_file: Path) -> Optional[str]:
    """One sentence naming the weights the model judge's labels rest on: the judge's ``model`` and
    ``digest`` that ``study.lock`` (``lock_file``) pins under ``judge.<kind>``
    (:func:`pointfail.inputs.studylock.pin_judge`: recorded by the first run that reaches the judge, later runs
    refuse another digest), or that none is pinned yet. ``None`` when no model judge labels the study
    (the oracle is exact: no weights) or its judges are not valid.

    Raises:
        AggregateError: ``study.lock`` exists but cannot be read (:class:`pointfail.inputs.studylock.LockError`).
    """
    from pointfail.running.judges.lineage import LineageError, judge_plan, model_judges
    from pointfail.inputs.studylock import LockError, read_lock

    try:
        plan = judge_plan(raw)
    except LineageError:
        return None
    used = [j for j in plan.judges if j in model_judges()]
    if not used:
        return None
    try:
        pins = read_lock(lock_file).get("judge", {})
    except LockError as e:
        raise AggregateError(str(e)) from None
    said = []
    for kind in used:
        pin = pins.get(kind)
        if pin is None:
            said.append(f"{kind} judge {plan.model or '(model not named)'}: no digest pinned in {lock_file.name} "
                        "(no run of the study has reached the judge yet)")
        else:
            said.append(f"{kind} judge {pin['model']} digest {pin['digest']}, pinned in {lock_file.name} by the "
                        "first run that reached the judge (later runs refuse another digest)")
    return "; ".join(said) + "."


def _read_config(d: Path) -> tuple[str, AggregateSpec, Optional[str], Optional[str]]:
    name = d.resolve().name
    config = AggregateSpec()
    judge_note = judge_pin = None
    toml_path = d / "study.toml"
    if toml_path.is_file():
        from pointfail.inputs.study import StudyError, load_study as load_study_file

        try:
            spec = load_study_file(toml_path)
        except StudyError as e:
            raise AggregateError(str(e)) from None
        config = spec.aggregate
        from pointfail.running.judges.lineage import lineage_note

        raw = spec.model_dump()
        judge_note = lineage_note(raw)
        from pointfail.inputs.studylock import lock_path

        judge_pin = judge_pin_note(raw, lock_path(toml_path))
        # the study's own name, so tables regenerated in another directory (make reproduce writes
        # under work/) carry the same title bytes as the committed ones
        name = spec.name
    return name, config, judge_note or None, judge_pin


def load_study(study_dir: str | Path, *, observers: Sequence[RecordObserver] = ()) -> Study:
    """Read, validate and fold every records file of a study (see the module docstring).

    Args:
        study_dir: ``records/<study>``.
        observers: called with every full record as it is read (before it is folded).

    Raises:
        RecordError: a line failing the schema (names file and line).
        AggregateError: no records files; a (model, benchmark, sample_id) appearing twice; a
            benchmark named ``pooled``.
    """
    d = Path(study_dir)
    if not d.is_dir():
        raise AggregateError(f"{d}: not a directory")
    files = records_files(d)
    if not files:
        raise AggregateError(f"{d}: no records files (<model>/<benchmark>.jsonl)")
    name, config, judge_note, judge_pin = _read_config(d)
    study = Study(name=name, path=d, files=files, config=config, counts=Counts(0, 0), builders=builders(),
                  judge_note=judge_note, judge_pin=judge_pin)
    counts = study.counts = Counts(study.bootstrap_seed, study.bootstrap_resamples)
    from pointfail.integrity import RecordDigests, line_digest

    digests = study.digests = RecordDigests()
    line_observers = [o.observe_line for o in observers if hasattr(o, "observe_line")]
    plain_observers = [o.observe for o in observers if not hasattr(o, "observe_line")]
    folds = [b.add for b in study.builders if needs_rows(b)]
    absent_folds = [b.add for b in study.builders if needs_rows(b) and b.absent_rows]
    record_folds = [b.observe for b in study.builders if needs_records(b)]
    absent_seen: set[tuple[str, str, str]] = set()
    cell_files: dict[tuple[str, str], list[Path]] = {}
    n = 0
    with gc_paused():
        for p in files:
            for i, rec, raw in enumerate_record_lines(p):
                digest = line_digest(raw)  # once per record: records.sha256 and verify's check share it
                digests.add(p, rec.sample_id, digest)
                for observe_line in line_observers:
                    observe_line(rec, p, i, raw, digest)
                for observe_plain in plain_observers:
                    observe_plain(rec, p, i)
                for observe in record_folds:
                    observe(rec)
                row = row_from_record(rec)
                md = dict(row.metadata)
                if md.get("split") == "unseen" and "directive_suffix" in md:
                    study.unseen_refspatial.add((row.benchmark, row.sample_id))
                if row.benchmark == POOLED:
                    raise AggregateError(f"{p}: benchmark name {POOLED!r} is reserved for pooled rows")
                if row.target_absent:  # counted apart, in no hit rate: only absent-aware builders see it
                    k = (row.model, row.benchmark, row.sample_id)
                    if k in absent_seen:
                        raise AggregateError(f"{p}: duplicate sample {row.sample_id!r} for model {row.model!r} on {row.benchmark!r}")
                    absent_seen.add(k)
                    study.errors += row.outcome == "error"
                    for fold in absent_folds:
                        fold(row, -1)
                    n += 1
                    continue
                study.errors += row.outcome == "error"
                try:
                    sample = counts.add(row)
                except DuplicateSample as e:
                    where = ", ".join(str(f) for f in cell_files[(row.model, row.benchmark)])
                    raise AggregateError(f"{p}: {e} (also in {where})") from None
                files_of = cell_files.setdefault((row.model, row.benchmark), [])
                if not files_of or files_of[-1] is not p:
                    files_of.append(p)
                for fold in folds:
                    fold(row, sample)
                n += 1
        counts.finish()
    study.records = n
    return study


def find_studies(path: str | Path) -> list[Path]:
    """``path`` itself when it is a study directory (records files or a ``study.toml``), else its
    subdirectories that hold records files (a records root such as ``records/``; a study with only
    a ``study.toml`` and no records yet is left out, see :func:`studies_without_records`), sorted by
    name.

    Raises:
        AggregateError: when neither holds any study with records.
    """
    p = Path(path)
    if is_study_dir(p):
        return [p]
    if p.is_dir():
        subs = sorted((s for s in p.iterdir() if s.is_dir() and not s.name.startswith(".") and records_files(s)), key=lambda s: s.name.encode("utf-8"))
        if subs:
            return subs
    raise AggregateError(f"{p}: no study with records here (expected <study>/<model>/<benchmark>.jsonl)")


def studies_without_records(root: str | Path) -> list[Path]:
    """Subdirectories of a records root with a ``study.toml`` but no records files yet."""
    p = Path(root)
    if not p.is_dir() or is_study_dir(p):
        return []
    return sorted((s for s in p.iterdir() if s.is_dir() and (s / "study.toml").is_file() and not records_files(s)), key=lambda s: s.name.encode("utf-8"))
