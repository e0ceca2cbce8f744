"""The stages after a model's replies exist, in order: records → judge → aggregate → report → browser.

One function, :func:`run_stages`, runs them over one study directory (``<dir>/<model>/<benchmark>.jsonl``,
``<dir>/tables/``, ``<dir>/report/``, ``<dir>/view/``); every caller runs its stages through it:

- ``pointfail evaluate`` (:func:`pointfail.running.evaluate.evaluate_replies` and ``evaluate_served``):
  records, the primary judge, aggregate, report, browser;
- ``pointfail-runner run`` (``pointfail_runner.study.run_study``): the records of each (model, benchmark);
- ``pointfail-runner reproduce`` / ``make reproduce`` (``pointfail_runner.reproduce``): every judge the
  study names (the primary first), then aggregate.

The stages, each skipped when not asked for:

1. **records**: ``records`` written canonically and atomically to ``records_path``
   (:func:`pointfail.records.write_records`: sorted by sample id, a temporary file then ``os.replace``).
2. **judge**: each :class:`JudgeRun` in order through
   :func:`pointfail.running.judges.stage.judge_study` (``role`` ``primary`` fills ``Record.judge``,
   ``other`` fills ``Record.other_judgments``), looking up relative image, mask and scene-graph paths
   under ``data_root`` first.
3. **aggregate**: :func:`pointfail.aggregate.aggregate` into ``<dir>/tables/``.
4. **report**: :func:`pointfail.outputs.report.make_report` (needs the ``report`` extra; callers check it
   before anything is written).
5. **view**: :func:`pointfail.outputs.view.build_site` (the failure browser), images looked up under
   ``image_roots``.

What differs between callers stays with them and reaches the sequence through two hooks: ``around(stage,
fn)`` runs each stage (``make reproduce`` times them: its stage table names ``judge`` and ``aggregate``),
and ``after(stage, result)`` is told each stage's result as soon as it exists (what the caller prints,
and a caller's own refusal: ``make reproduce`` stops on a judge that left misses without a verdict by
raising from it, before the next judge runs).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, TypeVar

if TYPE_CHECKING:
    from pointfail.records import Record
    from pointfail.running.judges.stage import StageReport

__all__ = ["STAGES", "JudgeRun", "StagesDone", "run_stages"]

STAGES: tuple[str, ...] = ("records", "judge", "aggregate", "report", "view")
"""The stage names, in the order :func:`run_stages` runs them (what ``around`` and ``after`` are told)."""

T = TypeVar("T")


@dataclass(frozen=True)
class JudgeRun:
    """One judge of the judge stage.

    Attributes:
        make: returns the judge when its turn comes (``"oracle"``, an
            :class:`~pointfail.judge.oracle.OracleJudge`, or a model judge not yet entered); called just
            before the judge runs, so a caller's check for that judge (``make reproduce`` pins the
            Ollama judge's digest) happens in the judge's turn and not before the earlier judges.
        role: ``"primary"`` (``Record.judge``) or ``"other"`` (``Record.other_judgments``).
    """

    make: Callable[[], Any]
    role: str = "primary"


@dataclass
class StagesDone:
    """What one :func:`run_stages` call did.

    Attributes:
        study_dir: the study directory the stages ran over.
        records_path: the records file written, or ``None`` (no records stage).
        records: records written (0 without the records stage).
        outcomes: the written records by outcome (``hit``, ``miss``, ``no_prediction``, ``error``),
            sorted by outcome name; empty without the records stage.
        judged: ``(role, StageReport)`` per judge, in the order run.
        tables: the files the aggregate wrote (name -> bytes); empty when it did not run.
        tables_dir: ``<study_dir>/tables`` when the aggregate ran, else ``None``.
        report: report files written (empty when not asked for).
        view: the failure browser's ``index.html``, or ``None``.
    """

    study_dir: Path
    records_path: Optional[Path] = None
    records: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    judged: list[tuple[str, "StageReport"]] = field(default_factory=list)
    tables: dict[str, bytes] = field(default_factory=dict)
    tables_dir: Optional[Path] = None
    report: list[Path] = field(default_factory=list)
    view: Optional[Path] = None


def _call(_stage: str, fn: Callable[[], T]) -> T:
    """The default ``around``: run the stage."""
    return fn()


def run_stages(
    study_dir: str | Path,
    *,
    records: Optional[Sequence["Record"]] = None,
    records_path: Optional[str | Path] = None,
    judges: Sequence[JudgeRun] = (),
    data_root: Optional[str | Path] = None,
    tolerance_px: Optional[float] = None,
    aggregate: bool = True,
    report: bool = False,
    view: bool = False,
    image_roots: Sequence[str | Path] = (),
    progress: bool = False,
    around: Callable[[str, Callable[[], Any]], Any] = _call,
    after: Optional[Callable[[str, Any], None]] = None,
) -> StagesDone:
    """Run the stages (module docstring) over ``study_dir`` in order; each runs only when asked for.

    Args:
        study_dir: the study directory (``records/<study>``, or ``pointfail evaluate``'s ``--out``).
        records, records_path: the records stage: ``records`` written to ``records_path`` (both or
            neither; the folder is created).
        judges: the judge stage, one :class:`JudgeRun` per judge, in order (none: no judge stage).
        data_root: where the judges look up relative image, mask and scene-graph paths first.
        tolerance_px: the oracle's ``off_by_pixels`` tolerance in pixels for a judge given as
            ``"oracle"`` (default ``pointfail.judge.oracle.DEFAULT_TOLERANCE_PX``).
        aggregate: write every table into ``<study_dir>/tables/``.
        report: draw the report figures; view: write the failure browser (images under ``image_roots``).
        progress: tqdm progress bars on stderr (the judges').
        around: ``around(stage, fn)`` runs one stage (``fn()``) and returns its result; by default it
            just calls it.
        after: ``after(stage, result)`` after each step: ``("records", n written)``, ``("judge", (role,
            StageReport))`` after each judge, ``("judges", [(role, StageReport), ...])`` at the end of the
            judge stage, ``("aggregate", {name: bytes})``, ``("report", [paths])``, ``("view", index)``.
            What it raises stops the sequence there and reaches the caller.

    Returns:
        :class:`StagesDone`.

    Raises:
        ValueError: ``records`` without ``records_path`` or the other way round; a judge's unknown
            role.
        pointfail.records.RecordError: a records file with an invalid line (judge, aggregate).
        pointfail.running.judges.stage.StageBusy: another judge stage runs on ``study_dir``.
        pointfail.aggregate.AggregateError: the study cannot be aggregated.
        OSError: a file cannot be written (every write is atomic).
    """
    if (records is None) != (records_path is None):
        raise ValueError("run_stages: records and records_path go together")
    done = StagesDone(study_dir=Path(study_dir))
    tell = after or (lambda _stage, _result: None)
    if records is not None and records_path is not None:
        done.records_path = Path(records_path)
        done.records = around("records", lambda: _write(done.records_path, records))
        done.outcomes = dict(sorted(Counter(r.outcome for r in records).items()))
        tell("records", done.records)
    if judges:
        around("judge", lambda: _judge(done, judges, data_root, tolerance_px, progress, tell))
    if aggregate:
        from pointfail.aggregate import aggregate as aggregate_tables

        done.tables = around("aggregate", lambda: aggregate_tables(done.study_dir))
        done.tables_dir = done.study_dir / "tables"
        tell("aggregate", done.tables)
    if report:
        from pointfail.outputs.report import make_report

        done.report = around("report", lambda: make_report(done.study_dir))
        tell("report", done.report)
    if view:
        from pointfail.outputs.view import build_site

        done.view = around("view", lambda: build_site(done.study_dir, image_roots=list(image_roots)).out_dir
                           / "index.html")
        tell("view", done.view)
    return done


def _write(path: Optional[Path], records: Sequence["Record"]) -> int:
    from pointfail.records import write_records

    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_records(path, records)


def _judge(done: StagesDone, judges: Sequence[JudgeRun], data_root: Optional[str | Path],
           tolerance_px: Optional[float], progress: bool, tell: Callable[[str, Any], None]) -> None:
    from pointfail.running.judges.stage import judge_study

    for j in judges:
        rep = judge_study(done.study_dir, j.make(), role=j.role, data_root=data_root, tolerance_px=tolerance_px,
                          progress=progress)
        done.judged.append((j.role, rep))
        tell("judge", (j.role, rep))
    tell("judges", list(done.judged))
