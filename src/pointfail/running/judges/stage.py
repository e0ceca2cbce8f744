"""The judge stage over a study's records: misses only, each judged once, crash-safe.

Source: ``shared/seeds/pointfail-study.txt``, "The two-stage protocol" and "The judge": the judge sees
only misses; hits and ``no_prediction`` never reach it. ``shared/DESIGN.md``: every stage can be rerun
from the records of the stage before it.

What :func:`judge_study` does, per records file ``records/<study>/<model>/<benchmark>.jsonl`` (the
files :func:`pointfail.records.records_files` finds, the same rule every stage uses):

1. Reads and validates the file (``records.read_records``; a bad line is an error naming file and line).
2. If a journal ``<file>.judging`` exists (left by an interrupted run), applies its verdicts first
   (each to the slot it was written for, whatever judge wrote it). Verdicts are keyed by sample id
   *and* the sha256 of the record they were made for (``integrity.record_digest``): a verdict for a
   record that was regenerated since is not applied (counted ``stale``), so a stale journal never
   labels a new record.
3. Selects the misses without a verdict from this judge in this role: ``role="primary"`` fills
   ``Record.judge`` when it is ``None``, ``pending`` or ``judge_unavailable``; ``role="other"`` fills the
   entry of ``Record.other_judgments`` with this judge's name when it is missing, ``pending`` or
   ``judge_unavailable`` (other entries are kept, sorted by judge name). ``labeled`` and ``unlabeled`` are
   final: a rerun never judges them again.
4. Judges them through the one judge interface (:mod:`pointfail.judge.miss`: a :class:`~pointfail.judge.miss.Miss`
   in, a ``Judgment`` out; the oracle and model judges alike, concurrently across all files) and
   appends every verdict to the journal as it arrives (one canonical JSON line, flushed and fsynced).
   A miss that was ``judge_unavailable`` resumes: the label attempts it got before the outage are kept
   and count toward the five (see ``ChatJudge.judge``), so every raw reply stays in the record.
5. Rewrites the records file atomically: canonical order through ``records.write_records`` into a
   temporary file in the same directory, fsync, ``os.replace``, then deletes the journal. This also
   happens when the run is interrupted by an exception or Ctrl-C; a killed process leaves the journal,
   and the next run applies it in step 2. So no miss is lost and none is judged twice.

Only one stage runs on a records directory at a time: it holds an exclusive ``flock`` on
``<records_dir>/.judge.lock`` for the whole run, and a second run fails at once with
:class:`StageBusy` instead of interleaving rewrites.

A miss the stage cannot judge for a reason outside the judge (image or mask file missing, no scene
graph, unknown target id) gets a ``pending`` judgment whose ``detail`` says why; a rerun tries it again.

Every judge sees a miss at its primary point (:func:`pointfail.scoring.primary_point`, the one
definition). The oracle reads the scene graph the record names (``Record.scene_graph``, kept from the
loader's ``Sample.scene_graph_path``) and ``metadata["target_id"]``; a model judge renders the image
with the target. Relative image, mask and scene-graph paths are looked up under ``data_root`` (if
given), the records directory, then the working directory.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from pointfail.judge.miss import Judge, Miss, MissUnusable, NoVerdict
from pointfail.records import (
    Judgment,
    Record,
    RecordError,
    append_jsonl,
    iter_jsonl,
    read_records,
    records_files,
    write_records,
)

JOURNAL_SUFFIX = ".judging"
"""Suffix of the per-file journal of verdicts written during a run (``<file>.jsonl.judging``)."""

FINAL_STATUSES = ("labeled", "unlabeled")
"""Verdicts a rerun keeps; ``pending`` and ``judge_unavailable`` are judged again."""


LOCK_NAME = ".judge.lock"


class StageBusy(RuntimeError):
    """Another judge stage holds the lock on this records directory."""


@dataclass
class StageReport:
    """What one run of the stage did.

    Attributes:
        judge: the judge's name (``oracle`` or ``ollama:<model>``); role: ``primary`` or ``other``.
        files: records files read; misses: misses in them.
        already: misses that had a final verdict from this judge before the run.
        resumed: verdicts recovered from journals of an interrupted run.
        stale: journal verdicts not applied because they were written for another version of the
            record (its sha256 differs: the records were regenerated since) or are malformed.
        skipped: misses the judge had no verdict for (:class:`~pointfail.judge.miss.NoVerdict`: a
            person who did not label them); nothing is stored for them.
        judged: misses judged in this run; status: their statuses (labeled, unlabeled,
            judge_unavailable, pending).
        labels: labels given in this run.
        problems: ``"<file>:<sample_id>: <reason>"`` for each miss left pending.
        errors: records that ended in an infrastructure error (outcome ``error``: no reply to judge;
            the study is incomplete until they are asked again).
    """

    judge: str
    role: str
    files: int = 0
    misses: int = 0
    already: int = 0
    resumed: int = 0
    stale: int = 0
    skipped: int = 0
    judged: int = 0
    status: Counter = field(default_factory=Counter)
    labels: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    errors: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (counters as sorted dicts)."""
        return {
            "judge": self.judge,
            "role": self.role,
            "files": self.files,
            "misses": self.misses,
            "already": self.already,
            "resumed": self.resumed,
            "stale": self.stale,
            "errors": self.errors,
            "skipped": self.skipped,
            "judged": self.judged,
            "status": dict(sorted(self.status.items())),
            "labels": dict(sorted(self.labels.items())),
            "problems": list(self.problems),
        }


def current_judgment(record: Record, judge_name: str, role: str) -> Optional[Judgment]:
    """The judgment in the slot this judge fills (``record.judge`` for primary, else the
    ``other_judgments`` entry with this judge's name), or ``None``."""
    if role == "primary":
        return record.judge
    for j in record.other_judgments:
        if j.judge == judge_name:
            return j
    return None


def needs_verdict(record: Record, judge_name: str, role: str) -> bool:
    """True for a miss whose slot is empty, ``pending`` or ``judge_unavailable``."""
    if record.outcome != "miss":
        return False
    j = current_judgment(record, judge_name, role)
    return j is None or j.status not in FINAL_STATUSES


def apply_judgment(record: Record, judgment: Judgment, role: str) -> None:
    """Put ``judgment`` in its slot (replacing this judge's earlier one); ``other_judgments`` stays
    sorted by judge name so the record's bytes do not depend on run order."""
    if role == "primary":
        record.judge = judgment
        return
    others = [j for j in record.other_judgments if j.judge != judgment.judge]
    others.append(judgment)
    record.other_judgments = sorted(others, key=lambda j: j.judge)


def atomic_write_records(path: Union[str, Path], records: list[Record]) -> None:
    """Write records canonically and atomically (``records.write_records``: a temporary file beside
    ``path``, fsync, ``os.replace``, mode 0644), so a crash leaves either the old or the new file,
    never a partial one."""
    write_records(path, records)


def _pending(judge_name: str, reason: str) -> Judgment:
    return Judgment(judge=judge_name, status="pending", detail=reason)


class _Paths:
    def __init__(self, records_dir: Path, data_root: Optional[Path]):
        self.roots = [r for r in (data_root, records_dir, Path.cwd()) if r is not None]

    def find(self, path: str, *, extra: tuple[Path, ...] = ()) -> Path:
        p = Path(path)
        if p.is_absolute():
            if p.is_file():
                return p
            raise FileNotFoundError(f"file not found: {p}")
        for root in (*extra, *self.roots):
            c = root / p
            if c.is_file():
                return c
        raise FileNotFoundError(f"file not found: {path} (looked under {', '.join(str(r) for r in (*extra, *self.roots))})")


@dataclass
class _FileState:
    path: Path
    records: list[Record]
    journal: Path
    results: dict[str, Judgment] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)

    def log(self, sample_id: str, role: str, judgment: Judgment) -> None:
        self.results[sample_id] = judgment
        append_jsonl(self.journal, {"sample_id": sample_id, "record_sha256": self.digests.get(sample_id),
                                    "role": role, "judgment": judgment.model_dump(mode="json")})


def _load_file(path: Path, judge_name: str, role: str, report: StageReport) -> _FileState:
    from pydantic import ValidationError

    from pointfail.integrity import record_digest

    records = read_records(path)
    state = _FileState(path=path, records=records, journal=path.with_name(path.name + JOURNAL_SUFFIX),
                       digests={r.sample_id: record_digest(r) for r in records})
    if state.journal.exists():
        by_id = {r.sample_id: r for r in records}
        try:
            entries = list(iter_jsonl(state.journal))
        except RecordError as e:  # a torn line in the middle: the journal cannot be trusted
            report.problems.append(f"{state.journal}: ignored ({e})")
            entries = []
        for _, entry in entries:
            sid = entry.get("sample_id") if isinstance(entry, dict) else None
            rec = by_id.get(sid) if isinstance(sid, str) else None
            if rec is None or entry.get("role") not in ("primary", "other"):
                continue
            if entry.get("record_sha256") != state.digests[rec.sample_id]:
                # written for a record that has been regenerated since (or by a version that did not
                # key verdicts by record): it is not this record's verdict
                report.stale += 1
                continue
            try:
                judgment = Judgment.model_validate(entry["judgment"])
            except (KeyError, ValidationError):
                report.stale += 1
                continue
            # every journaled verdict goes to its own slot, whichever judge and role this run has,
            # since the journal is deleted once the file is rewritten
            apply_judgment(rec, judgment, entry["role"])
            report.resumed += 1
    return state


def _finish_file(state: _FileState, role: str) -> None:
    by_id = {r.sample_id: r for r in state.records}
    for sid, j in state.results.items():
        apply_judgment(by_id[sid], j, role)
    atomic_write_records(state.path, state.records)
    state.journal.unlink(missing_ok=True)


def judge_study(
    records_dir: Union[str, Path],
    judge: Any,
    *,
    role: str = "primary",
    data_root: Optional[Union[str, Path]] = None,
    tolerance_px: Optional[float] = None,
    progress: bool = False,
) -> StageReport:
    """Run the judge stage over every records file below ``records_dir`` (rules in the module docstring).

    Args:
        records_dir: ``records/<study>``.
        judge: a :class:`pointfail.judge.miss.Judge` (not yet entered): an
            :class:`~pointfail.judge.oracle.OracleJudge` or a model judge
            (:class:`~pointfail.running.judges.client.OllamaJudge`, :class:`~pointfail.running.judges.served.OpenAIJudge`);
            ``"oracle"`` is short for ``OracleJudge(tolerance_px)``.
        role: ``"primary"`` (``Record.judge``) or ``"other"`` (``Record.other_judgments``).
        data_root: where relative image, mask and scene-graph paths are looked up first.
        tolerance_px: with ``judge="oracle"``, its ``off_by_pixels`` tolerance in pixels (default
            ``oracle.DEFAULT_TOLERANCE_PX``).
        progress: show a tqdm progress bar on stderr.

    Returns:
        A :class:`StageReport`.

    Raises:
        RecordError: a records file with an invalid line (file and line named); nothing is rewritten.
        StageBusy: another judge stage is running on ``records_dir``.
        ValueError: an unknown role or judge.
    """
    from pointfail.judge.oracle import OracleJudge

    if role not in ("primary", "other"):
        raise ValueError(f"role must be 'primary' or 'other', got {role!r}")
    if judge == "oracle":
        judge = OracleJudge() if tolerance_px is None else OracleJudge(float(tolerance_px))
    if not hasattr(judge, "judge_miss"):
        raise ValueError(f"judge must be 'oracle' or a judge with judge_miss (OracleJudge, OllamaJudge, ...), got {judge!r}")
    root = Path(records_dir)
    paths = _Paths(root, Path(data_root) if data_root is not None else None)
    report = StageReport(judge=judge.name, role=role)

    import fcntl

    lock_file = open(root / LOCK_NAME, "a+b")
    try:
        fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock_file.close()
        raise StageBusy(f"another judge stage is running on {root} (lock {root / LOCK_NAME})") from None
    try:
        return _judge_locked(root, judge, role, paths, report, progress)
    finally:
        fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)
        lock_file.close()


def _misses_to_judge(states: list[_FileState], judge_name: str, role: str,
                     report: StageReport) -> list[tuple[_FileState, Record]]:
    """The misses that still need a verdict from ``judge_name`` in ``role``, in file and record order;
    counts errors, misses and those already judged in ``report``."""
    todo: list[tuple[_FileState, Record]] = []
    for st in states:
        for rec in st.records:
            if rec.outcome != "miss":
                report.errors += rec.outcome == "error"
                continue
            report.misses += 1
            if needs_verdict(rec, judge_name, role):
                todo.append((st, rec))
            else:
                report.already += 1
    return todo


class _Tally:
    """Notes each verdict as it arrives: journals it, counts it in the report, moves the progress bar."""

    def __init__(self, report: StageReport, role: str, bar: Any) -> None:
        self.report, self.role, self.bar = report, role, bar

    def note(self, st: _FileState, rec: Record, j: Judgment) -> None:
        """Journal ``j`` for ``rec`` and count its status and label; a pending one is a problem line."""
        st.log(rec.sample_id, self.role, j)
        self.report.judged += 1
        self.report.status[j.status] += 1
        if j.label:
            self.report.labels[j.label] += 1
        if j.status == "pending":
            self.report.problems.append(f"{st.path}:{rec.sample_id}: {j.detail}")
        if self.bar is not None:
            self.bar.update(1)

    def skip(self, rec: Record) -> None:
        """Count a miss the judge gives no verdict on."""
        self.report.skipped += 1
        if self.bar is not None:
            self.bar.update(1)


def _judge_locked(
    root: Path,
    judge: Any,
    role: str,
    paths: _Paths,
    report: StageReport,
    progress: bool,
) -> StageReport:
    states = []
    for path in records_files(root):
        states.append(_load_file(path, judge.name, role, report))
    report.files = len(states)
    todo = _misses_to_judge(states, judge.name, role, report)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"judge {judge.name}", unit="miss")
    tally = _Tally(report, role, bar)
    try:
        if todo:
            asyncio.run(_run(judge, todo, paths, tally.note, role, tally.skip))
    finally:
        if bar is not None:
            bar.close()
        for st in states:
            if st.results or st.journal.exists():
                _finish_file(st, role)
    return report


async def _run(judge: Judge, todo: list[tuple[_FileState, Record]], paths: _Paths, note: Any, role: str,
               skipped: Any) -> None:
    """Every miss of ``todo`` through ``judge.judge_miss`` (concurrently; a model judge bounds its own
    concurrency), each verdict noted as it arrives."""
    from pointfail.judge.oracle import SceneGraphError
    from pointfail.scoring import primary_point

    async with judge:

        async def one(st: _FileState, rec: Record) -> None:
            point = primary_point(rec.parse)
            if point is None:  # a miss always has a point or a box; a hand-edited record may not
                j = _pending(judge.name, "cannot judge: miss without a parsed point or box")
            else:
                miss = Miss(record=rec, point=point, find=paths.find, resume=current_judgment(rec, judge.name, role))
                try:
                    j = await judge.judge_miss(miss)
                except NoVerdict:
                    skipped(rec)
                    return
                except (OSError, MissUnusable, SceneGraphError, ValueError) as e:
                    # a file missing or unreadable, no scene graph, no target id: recorded, the stage goes on
                    j = _pending(judge.name, f"cannot judge: {type(e).__name__}: {e}")
            note(st, rec, j)

        await asyncio.gather(*(one(st, rec) for st, rec in todo))
