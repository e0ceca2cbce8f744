"""From a file of a model's own replies to how it fails: one call, the library's own stages.

A researcher who ran their model elsewhere has a file of its replies (``pointfail.inputs.replies``: one
``{"id", "text"}`` object per sample, or coordinates in a declared frame). :func:`evaluate_replies`
runs the same stages a study run by ``pointfail-runner`` goes through, in order, and nothing else:

1. ``benchmarks.load`` (the benchmark's loader) and ``replies.read_replies``: every line of the file is
   either a reply for a known sample or a listed problem (unparseable, no id, duplicate id, unknown
   id, no reply in it); nothing is dropped silently.
2. Per sample: ``prompts.build_prompt`` (the family's own phrasing, or the ``prompt`` the line says
   was sent), a ``records.Response`` with the reply, ``scoring.build_record`` (parse in the family's
   frame, score, official rule), written with the records stage's atomic writer into
   ``<out>/<model>/<benchmark>.jsonl``. A sample with no reply in the file becomes an ``error``
   record (``worker: no reply for this sample in <file>``) and is listed, unless ``only_predicted``
   limits the evaluation to the ids in the file, which every table note then says.
3. ``judge.stage.judge_study``: the oracle where the benchmark has scene graphs (generated suites), a
   model judge (``ollama``, or ``openai`` for any OpenAI-compatible server) when asked, or none (misses
   stay ``pending``, said so).
4. ``aggregate.aggregate`` into ``<out>/tables/``, then the report (``report.make_report``) and the
   failure browser (``view.build_site``).

Steps 2 (writing the records) to 4 are :func:`pointfail.running.stages.run_stages`, the one sequence
``pointfail-runner run`` and ``make reproduce`` run their stages through too.

Text replies are parsed by the family given (any spelling ``get_family`` accepts). Coordinate replies
(PointerBench's keys: ``point``, ``pred``, ``coordinate``, ``prediction``, ``bbox``, ``box``, ``x``/``y``,
``x0``…``y1``, read by ``benchmarks.official.prediction_point``/``prediction_box``) need their frame
declared (:data:`COORDINATE_FRAMES`); they are written as the reply text of the matching JSON family
(``{"point": [x, y]}`` and/or ``{"bbox": [...]}`` with the numbers exactly as given), so the record
names the frame and re-parses to the same point.

Resumable: run it again on the same output folder and a record whose sample, prompt and reply are
unchanged keeps its judge verdicts, so only new or changed replies are judged; an interrupted judge
stage continues from its journal. ``<out>/evaluation.json`` holds the whole :class:`EvaluationResult`
of the last run, every problem included.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from pointfail.limits import MAX_RESPONSE_RAW_TEXT_CHARS
from pointfail.inputs.replies import MAX_LISTED_PROBLEMS, Reply, ReplyProblem

if TYPE_CHECKING:
    from pointfail.records import Outcome

__all__ = [
    "COORDINATE_FRAMES",
    "EvaluateError",
    "EvaluationResult",
    "JUDGES",
    "ServedIncomplete",
    "evaluate_served",
    "worker_requests",
    "RESULT_FILE",
    "evaluate_replies",
    "model_name_from",
]

COORDINATE_FRAMES: dict[str, str] = {
    "pixels": "json_pixels",
    "unit": "json_unit",
}
"""Declared frame of coordinate replies (:data:`pointfail.inputs.replies.FRAMES`) -> the JSON family that
reads them (``pixels``: absolute pixels of the original image, PointerBench's own; ``unit``: 0-1
fractions of the image)."""

JUDGES: tuple[str, ...] = ("auto", "oracle", "ollama", "openai", "none")
"""``auto``: the oracle when every sample has a scene graph, else none; ``ollama`` and ``openai`` are
model judges, given as a client (``OllamaJudge``, ``OpenAIJudge``)."""

RESULT_FILE = "evaluation.json"
"""The run's :class:`EvaluationResult`, written into the output folder."""

NO_REPLY = "no reply for this sample in {file}"
"""``Response.error`` of a sample the replies file has no line for (the record says ``worker: ...``)."""

TOO_LONG = "a reply of {n} characters, over the cap of {cap} (pointfail.limits.MAX_RESPONSE_RAW_TEXT_CHARS): not scored"
"""``Response.error`` of a sample whose text reply is longer than the runner accepts from a worker
(:data:`~pointfail.limits.MAX_RESPONSE_RAW_TEXT_CHARS`): the same rule for both ways in, and records
stay small enough to commit."""

_NAME = re.compile(r"[^a-z0-9._-]+")


class EvaluateError(ValueError):
    """The evaluation cannot start: an unknown family, a frame missing for coordinate replies, text
    replies without a family, replies that need the model-input size and do not have it, an unusable
    model name, or nothing to evaluate. Raised before anything is written; the message names the
    option to pass (as the command line spells it)."""


@dataclass
class EvaluationResult:
    """What one :func:`evaluate_replies` call did.

    Attributes:
        out_dir: the output folder (a study directory: ``<model>/<benchmark>.jsonl``, ``tables/``,
            ``report/``, ``view/``, :data:`RESULT_FILE`).
        model, benchmark: names used in the records path (``benchmark`` is the loader's name for
            the samples, e.g. ``sheets`` for a generated sheets suite).
        family: the family text replies were parsed with, or ``None``.
        frame: the declared frame of coordinate replies, or ``None``.
        replies_file: the replies file read.
        scope: ``all`` (every benchmark sample; those without a reply are ``error`` records) or
            ``only_predicted`` (only the ids in the file).
        benchmark_samples: samples the benchmark has; ``records``: records written.
        kept: records kept unchanged from an earlier run (their judge verdicts with them).
        replies: counts of the replies file (see ``RepliesFile.counts``) plus ``unknown_id``.
        problems: the lines of the file not used as given, and the samples without a reply, in
            file order then sample order (:class:`pointfail.inputs.replies.ReplyProblem`): the first
            :data:`pointfail.inputs.replies.MAX_LISTED_PROBLEMS`; ``problems_left_off`` counts the rest
            (``replies`` counts every one by kind), so memory and :data:`RESULT_FILE` stay bounded.
        outcomes: records by outcome (``hit``, ``miss``, ``no_prediction``, ``error``).
        judge: the judge used (``oracle``, ``ollama:<model>``) or ``None``; ``judge_report``: the stage
            report (``StageReport.to_dict``) or ``None``; ``judge_note``: why misses are not labeled
            when they are not.
        records_path, tables_dir: where the records and tables are.
        failure_composition: the failure-composition table (Markdown, as written to ``tables/``).
        report: report files written (empty when not asked for); ``view``: the failure browser's
            ``index.html`` or ``None``.
        notes: the notes every table of this folder carries about the evaluation's scope.
        served: for :func:`evaluate_served`, the served run's summary
            (:class:`pointfail.running.served.backend.ServedSummary`: the pre-flight's server entry, frames
            observed per size sent, requests, errors), else ``None``.
    """

    out_dir: Path
    model: str
    benchmark: str
    family: Optional[str]
    frame: Optional[str]
    replies_file: Path
    scope: str
    benchmark_samples: int
    records: int
    kept: int
    replies: dict[str, int]
    problems: list[ReplyProblem]
    outcomes: dict[Outcome, int]
    judge: Optional[str]
    judge_report: Optional[dict[str, Any]]
    judge_note: Optional[str]
    records_path: Path
    tables_dir: Path
    failure_composition: str
    report: list[Path] = field(default_factory=list)
    view: Optional[Path] = None
    notes: list[str] = field(default_factory=list)
    problems_left_off: int = 0
    served: Optional[dict[str, Any]] = None

    @property
    def errors(self) -> int:
        """Samples that ended in an infrastructure error (``error`` outcome)."""
        return int(self.outcomes.get("error", 0))

    @property
    def pending(self) -> int:
        """Misses still without a final verdict (``pending`` or ``judge_unavailable``)."""
        if not self.judge_report:
            return self.outcomes.get("miss", 0) if self.judge is None else 0
        st = self.judge_report.get("status", {})
        return int(st.get("pending", 0)) + int(st.get("judge_unavailable", 0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (paths as strings), what :data:`RESULT_FILE` holds."""
        return {
            "out_dir": str(self.out_dir), "model": self.model, "benchmark": self.benchmark,
            "family": self.family, "frame": self.frame, "replies_file": str(self.replies_file),
            "scope": self.scope, "benchmark_samples": self.benchmark_samples, "records": self.records,
            "kept": self.kept, "replies": dict(self.replies), "problems": [p.to_dict() for p in self.problems],
            "problems_left_off": self.problems_left_off,
            "outcomes": dict(self.outcomes), "judge": self.judge, "judge_report": self.judge_report,
            "judge_note": self.judge_note, "records_path": str(self.records_path),
            "tables_dir": str(self.tables_dir), "report": [str(p) for p in self.report],
            "view": str(self.view) if self.view else None, "notes": list(self.notes),
            **({"served": self.served} if self.served is not None else {}),
        }


def model_name_from(text: str) -> str:
    """A records-path model name from free text (a file stem, a checkpoint id): lower case, runs of
    characters other than letters, digits, ``.``, ``_`` and ``-`` replaced by ``-``, at most 64
    characters. ``Qwen/Qwen2.5-VL-3B`` -> ``qwen-qwen2.5-vl-3b``."""
    name = _NAME.sub("-", text.lower()).strip("-.")[:64].strip("-.")
    return name or "model"


def _coordinate_text(reply: Reply) -> str:
    """The reply text of a coordinate reply in the JSON families' syntax: the point and/or the box
    the official readers find, numbers as given (``{"point": [x, y]} {"bbox": [x0, y0, x1, y1]}``)."""
    from pointfail.official import prediction_box, prediction_point

    parts = []
    pt = prediction_point(reply.coordinates)
    if pt is not None:
        parts.append(json.dumps({"point": [pt[0], pt[1]]}))
    box = prediction_box(reply.coordinates)
    if box is not None:
        parts.append(json.dumps({"bbox": box}))
    return " ".join(parts)


def _scope_notes(model: str, bench: str, scope: str, replies_name: str, n_scored: int,
                 n_benchmark: int) -> list[str]:
    head = f"Scope of {model} on {bench}:"
    if scope == "only_predicted":
        return [f"{head} only the {n_scored} samples with a reply in {replies_name} were scored "
                f"(--only-predicted); the benchmark has {n_benchmark}."]
    return [f"{head} all {n_benchmark} samples of the benchmark; a sample without a reply in {replies_name} "
            "is an `error` record (no reply)."]


def _check_options(judge: str, judge_client: Any, model_input_size: str, frame: Optional[str], report: bool) -> None:
    """:func:`evaluate_replies`'s option checks, before anything is read (``EvaluateError``; ``MissingExtra``
    for ``report`` without matplotlib)."""
    if judge not in JUDGES:
        raise EvaluateError(f"--judge must be one of {', '.join(JUDGES)}, got {judge!r}")
    if judge in ("ollama", "openai") and judge_client is None:
        raise EvaluateError(f"--judge {judge} needs a judge client (OllamaJudge or OpenAIJudge)")
    if model_input_size not in ("recorded", "family"):
        raise EvaluateError(f"--model-input-size must be 'recorded' or 'family', got {model_input_size!r}")
    if frame is not None and frame not in COORDINATE_FRAMES:
        raise EvaluateError(f"--frame must be one of {', '.join(COORDINATE_FRAMES)}, got {frame!r}")
    if report:
        from pointfail.extras import require

        require("report", "the report (or pass --no-report)")


def _check_reply_kinds(text_replies: list[Any], coord_replies: list[Any], fam: Any, frame: Optional[str], rf: Any,
                       used: dict[str, Any], only_predicted: bool, bench_name: str, known: frozenset[str],
                       say: Callable[[str], None]) -> None:
    """Text replies need ``--family``, coordinate replies ``--frame``; no matching id is an error with
    ``--only-predicted`` and a warning without (``EvaluateError``)."""
    if text_replies and fam is None:
        raise EvaluateError(f"{len(text_replies)} replies in {rf.path.name} are text (e.g. {text_replies[0].where}): "
                            "pass --family with the model family they are written in (list: pointfail families)")
    if coord_replies and frame is None:
        raise EvaluateError(f"{len(coord_replies)} replies in {rf.path.name} are coordinates (e.g. "
                            f"{coord_replies[0].where}): pass --frame pixels (absolute pixels of the image) or "
                            "--frame unit (fractions 0 to 1); the frame is never guessed")
    if not used and not only_predicted:
        say(f"[evaluate] no reply in {rf.path.name} has an id of {bench_name}: every sample will be an error record")
    if not used and only_predicted:
        raise EvaluateError(f"no reply in {rf.path.name} has an id of {bench_name} (--only-predicted has nothing "
                            f"to score); {rf.entries} entries, first problems: "
                            + "; ".join(str(p) for p in (rf.problems + rf.unknown(known))[:3]))


def _resized_note(fam: Any, text_replies: list[Any], model_input_size: str, by_id: dict[str, Any]) -> Optional[str]:
    """For a ``pixels_resized`` family: every text reply needs its ``model_input_size`` unless
    ``--model-input-size family`` (then the note that says so); ``EvaluateError`` otherwise."""
    resized_note = None
    if fam is not None and fam.frame.kind == "pixels_resized" and text_replies:
        lacking = [r for r in text_replies if r.model_input_size is None]
        if lacking and model_input_size == "recorded":
            ex = fam.expected_model_input_size((by_id[lacking[0].sample_id].image.width,
                                                by_id[lacking[0].sample_id].image.height))
            raise EvaluateError(
                f"{fam.name} answers in pixels of the resized image the model saw, and {len(lacking)} replies "
                f"(e.g. {lacking[0].where}) have no \"model_input_size\": [W, H]. Add it to each line, or pass "
                f"--model-input-size family to use the family's published resize setting (e.g. {ex[0]}x{ex[1]} for "
                "the first such image); it is never guessed silently")
        if lacking:
            resized_note = (f"{len(lacking)} replies have no recorded model-input size; {fam.name}'s published "
                            "smart_resize setting was used for them (--model-input-size family).")
    return resized_note


def evaluate_replies(
    *,
    benchmark: str,
    data_dir: str | Path,
    replies: str | Path,
    out_dir: str | Path,
    family: Optional[str] = None,
    frame: Optional[str] = None,
    model: Optional[str] = None,
    only_predicted: bool = False,
    judge: str = "auto",
    judge_client: Any = None,
    tolerance_px: Optional[float] = None,
    model_input_size: str = "recorded",
    report: bool = True,
    view: bool = True,
    progress: bool = False,
    log: Optional[Callable[[str], None]] = None,
) -> EvaluationResult:
    """Evaluate a model from its replies file (stages in the module docstring).

    Args:
        benchmark: a loader name (``suite`` for a generated suite, ``pointerbench-text``, ...).
        data_dir: the benchmark's directory.
        replies: the replies file (JSONL or a JSON list; ``pointfail.inputs.replies``).
        out_dir: the output folder, a study directory; created; reused on a rerun.
        family: the family text replies are written in (any spelling ``get_family`` accepts);
            required when the file has text replies.
        frame: ``pixels`` or ``unit`` (:data:`COORDINATE_FRAMES`); required when the file has
            coordinate replies.
        model: the model's name in the records path (default: from the replies file's name).
        only_predicted: score only the ids in the file (every table note says so).
        judge: one of :data:`JUDGES`; ``ollama`` and ``openai`` need ``judge_client`` (an
            ``OllamaJudge`` / ``OpenAIJudge``, not yet entered).
        tolerance_px: the oracle's ``off_by_pixels`` tolerance (default 8).
        model_input_size: for families answering in pixels of the resized model input:
            ``recorded`` (each reply's ``model_input_size``; required) or ``family`` (the family's
            published ``smart_resize`` setting, :meth:`Family.expected_model_input_size`, said so in
            the notes).
        report: write the report figures (needs the ``report`` extra, checked before anything is
            written); view: write the failure browser.
        progress: tqdm progress bars on stderr; log: one-line progress messages.

    Returns:
        :class:`EvaluationResult` (also written to ``<out_dir>/evaluation.json``).

    Raises:
        EvaluateError: see the class; nothing is written.
        pointfail.inputs.benchmarks.BenchmarkError: the benchmark cannot be loaded; nothing is written.
        pointfail.inputs.replies.RepliesError: the replies file cannot be read; nothing is written.
        pointfail.extras.MissingExtra: ``report`` without matplotlib; nothing is written.
        pointfail.running.judges.stage.StageBusy: another judge stage runs on the folder.
    """
    from pointfail.inputs.benchmarks import load as load_benchmark
    from pointfail.families import get_family
    from pointfail.inputs.replies import read_replies

    say = log or (lambda _m: None)
    _check_options(judge, judge_client, model_input_size, frame, report)
    try:
        fam = get_family(family) if family is not None else None
    except KeyError as e:
        raise EvaluateError(f"--family: {e.args[0]}") from None
    name = model_name_from(model if model is not None else Path(replies).stem)
    if model is not None and name != model:
        raise EvaluateError(f"--model {model!r}: use lower-case letters, digits, '.', '_' and '-' (e.g. {name!r})")

    data = Path(data_dir).resolve()
    check_out_dir(Path(out_dir), data)
    samples = load_benchmark(benchmark, data)
    rf = read_replies(replies)
    if not samples:
        raise EvaluateError(f"{benchmark} at {data_dir}: no samples")
    bench_name = samples[0].benchmark
    by_id = {s.sample_id: s for s in samples}
    known = frozenset(by_id)
    used = {sid: r for sid, r in rf.replies.items() if sid in known}

    text_replies = [r for r in used.values() if r.text is not None and (fam is not None or not r.coordinates)]
    coord_replies = [r for r in used.values() if r not in text_replies]
    _check_reply_kinds(text_replies, coord_replies, fam, frame, rf, used, only_predicted, bench_name, known, say)
    resized_note = _resized_note(fam, text_replies, model_input_size, by_id)
    return _run(
        samples=samples, by_id=by_id, rf=rf, used=used, fam=fam, frame=frame, name=name, bench_name=bench_name,
        only_predicted=only_predicted, judge=judge, judge_client=judge_client, tolerance_px=tolerance_px,
        resized_note=resized_note, report=report, view=view, progress=progress, say=say,
        out=Path(out_dir), data=data,
    )


def _run(*, samples, by_id, rf, used, fam, frame, name, bench_name, only_predicted, judge, judge_client,
         tolerance_px, resized_note, report, view, progress, say, out: Path, data: Path) -> EvaluationResult:
    import pointfail
    from pointfail.prompts import build_prompt
    from pointfail.records import Provenance, read_records
    from pointfail.scoring import build_record

    scope = "only_predicted" if only_predicted else "all"
    chosen = [s for s in samples if s.sample_id in used] if only_predicted else list(samples)
    notes = _scope_notes(name, bench_name, scope, rf.path.name, len(chosen), len(samples))
    if resized_note:
        notes.append(f"Scope of {name} on {bench_name}: {resized_note}")
    problems: list[ReplyProblem] = list(rf.problems) + rf.unknown(frozenset(by_id))
    problems.sort(key=ReplyProblem.place)
    missing = [s for s in chosen if s.sample_id not in used]
    problems += [ReplyProblem("-", "no_reply_for_sample", f"the sample has no reply in {rf.path.name}; "
                              "recorded as an error (no reply)", s.sample_id) for s in missing]
    n_unknown = sum(1 for p in problems if p.kind == "unknown_id")
    left_off = sum(rf.left_off.values()) + max(0, len(problems) - MAX_LISTED_PROBLEMS)
    del problems[MAX_LISTED_PROBLEMS:]  # the first ones listed, the rest counted (replies counts by kind)

    out.mkdir(parents=True, exist_ok=True)
    notes = _write_study_toml(out, notes, "oracle" if judge in ("auto", "oracle", "none") else judge, name, bench_name)
    records_path = out / name / f"{bench_name}.jsonl"
    old = {}
    if records_path.is_file():
        old = {r.sample_id: r for r in read_records(records_path)}
    prov = Provenance(pointfail_version=pointfail.__version__)
    say(f"[evaluate] {bench_name}: {len(chosen)} samples ({scope}), replies from {rf.path}")
    it = chosen
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(chosen, desc=f"score {name}", unit="sample")
        it = bar
    records, kept = [], 0
    try:
        for s in it:
            reply = used.get(s.sample_id)
            f, resp = _response(reply, s, fam, frame, rf.path.name)
            prompt = build_prompt(f, s)
            if reply is not None and reply.prompt is not None:
                prompt = prompt.model_copy(update={"sent": reply.prompt})
            rec = build_record(study=model_name_from(out.name), model=name, family=f, sample=s, prompt=prompt, response=resp,
                               provenance=prov, base_dir=data)
            prev = old.get(s.sample_id)
            if prev is not None and prev.model_copy(update={"judge": None, "other_judgments": []}) == rec:
                rec = prev  # unchanged: keep its judge verdicts
                kept += 1
            records.append(rec)
    finally:
        if bar is not None:
            bar.close()
    outcomes, judge_name, judge_report, judge_note, tables, composition, written, index = _finish(
        out=out, records=records, records_path=records_path, kept=kept, chosen=chosen, judge=judge,
        judge_client=judge_client, tolerance_px=tolerance_px, data=data, report=report, view=view,
        progress=progress, say=say)
    counts = rf.counts()
    counts["unknown_id"] = n_unknown
    counts["no_reply_for_sample"] = len(missing)
    result = EvaluationResult(
        out_dir=out, model=name, benchmark=bench_name, family=fam.name if fam else None, frame=frame,
        replies_file=rf.path, scope=scope, benchmark_samples=len(samples), records=len(records), kept=kept,
        replies=dict(sorted(counts.items())), problems=problems, problems_left_off=left_off,
        outcomes=outcomes, judge=judge_name,
        judge_report=judge_report, judge_note=judge_note, records_path=records_path, tables_dir=tables,
        failure_composition=composition, report=written, view=index, notes=notes,
    )
    from pointfail.safeio import atomic_write_bytes

    atomic_write_bytes(out / RESULT_FILE, (json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")
                       .encode("utf-8"))
    return result


def _response(reply: Optional[Reply], sample: Any, fam: Any, frame: Optional[str], replies_name: str) -> tuple:
    """``(family, records.Response)`` of one sample in :func:`_run`: no reply is an error response
    (:data:`NO_REPLY`), a text reply is parsed by ``fam`` (its ``model_input_size``, or the family's
    published resize setting for a ``pixels_resized`` family; over the cap: :data:`TOO_LONG`), a
    coordinate reply is the reply text of the declared frame's JSON family (:func:`_coordinate_text`)."""
    from pointfail.families import get_family
    from pointfail.records import Response

    if reply is None:
        return (fam or get_family(COORDINATE_FRAMES[frame or "pixels"]),
                Response(error=NO_REPLY.format(file=replies_name)))
    if reply.text is not None and (fam is not None or not reply.coordinates):
        mis = reply.model_input_size
        if mis is None and fam.frame.kind == "pixels_resized":
            mis = list(fam.expected_model_input_size((sample.image.width, sample.image.height)))
        if len(reply.text) > MAX_RESPONSE_RAW_TEXT_CHARS:
            return fam, Response(error=TOO_LONG.format(n=len(reply.text), cap=MAX_RESPONSE_RAW_TEXT_CHARS))
        return fam, Response(raw_text=reply.text, model_input_size=mis)
    assert frame is not None, "coordinate replies need --frame (checked before)"
    return get_family(COORDINATE_FRAMES[frame]), Response(raw_text=_coordinate_text(reply))


def _finish(*, out: Path, records: list, records_path: Path, kept: int, chosen: list, judge: str, judge_client: Any,
            tolerance_px: Optional[float], data: Path, report: bool, view: bool, progress: bool,
            say: Callable[[str], None]) -> tuple:
    """The stages after scoring, shared by the replies and the served paths, through
    :func:`pointfail.running.stages.run_stages`: write the records, judge, aggregate, draw the report,
    build the failure browser. Returns ``(outcomes, judge name, judge report, judge note, tables dir,
    failure composition, report files, browser index)``."""
    from pointfail.running.stages import JudgeRun, run_stages

    with_graphs = all(s.scene_graph_path for s in chosen)
    if judge == "auto":
        judge = "oracle" if with_graphs else "none"
    client = "oracle" if judge == "oracle" else judge_client

    def after(stage: str, result: Any) -> None:
        if stage == "records":
            say(f"[evaluate] wrote {result} records to {records_path} ({kept} unchanged from the last run)")
        elif stage == "judge":
            say(f"[evaluate] {judge_line(result[1].to_dict())}")
        elif stage == "report":
            say(f"[evaluate] report: {result[0]}")
        elif stage == "view":
            say(f"[evaluate] failure browser: {result}")

    done = run_stages(out, records=records, records_path=records_path,
                      judges=() if judge == "none" else (JudgeRun(lambda: client),), data_root=data,
                      tolerance_px=tolerance_px, report=report, view=view, image_roots=[data], progress=progress,
                      after=after)
    judge_name, judge_report, judge_note = _judge_outcome(done, records, judge, with_graphs)
    tables = out / "tables"
    composition = (tables / "failure_composition.md").read_text(encoding="utf-8")
    return done.outcomes, judge_name, judge_report, judge_note, tables, composition, done.report, done.view


def _judge_outcome(done: Any, records: list, judge: str, with_graphs: bool) -> tuple:
    """``(judge name, judge report, judge note)`` of the judge stage :func:`_finish` ran (``judge``
    already resolved from ``auto``): the note says why misses are not labeled, or how many still lack a
    verdict."""
    if judge == "none":
        note = None
        if any(r.outcome == "miss" for r in records):
            note = ("misses are not labeled (pending): the benchmark has no scene graphs for the oracle judge; "
                    "pass --judge ollama (or --judge openai) to label them with a model judge") if not with_graphs else \
                   "misses are not labeled (pending): --judge none"
        return None, None, note
    d = done.judged[0][1].to_dict()
    note = None
    left = int(d["status"].get("pending", 0)) + int(d["status"].get("judge_unavailable", 0))
    if left:
        note = f"{left} misses still without a verdict from {d['judge']} (rerun the same command to fill them in)"
    return d["judge"], d, note


def check_out_dir(out: Path, data: Path) -> None:
    """Refuse an output folder that would overwrite or fill what it reads: ``out`` that exists and is
    not a folder (the replies file itself included), or that is (or lies inside) the benchmark's data
    folder.

    Raises:
        EvaluateError: one line naming the folder and why.
    """
    if out.exists() and not out.is_dir():
        raise EvaluateError(f"--out {out}: exists and is not a folder; give a new or an earlier output folder")
    o, d = out.resolve(), data.resolve()
    if o == d or d in o.parents:
        raise EvaluateError(f"--out {out}: inside the benchmark's data folder {data}; write the results elsewhere")


def judge_line(report: dict) -> str:
    """One line for a judge run of ``evaluate``, the same in its progress and in its summary:
    ``judge NAME: N misses, A already judged, J judged now``, from a
    :meth:`pointfail.running.judges.stage.StageReport.to_dict` (keys ``judge``, ``misses``, ``already``, ``judged``)."""
    return (f"judge {report['judge']}: {report['misses']} misses, {report['already']} already judged, "
            f"{report['judged']} judged now")


def _write_study_toml(out: Path, notes: list[str], primary_judge: str, model: str, bench: str) -> list[str]:
    """``<out>/study.toml``: the folder's name as the study name, the primary judge, and the scope
    notes every table carries (``[aggregate] notes``; also the study's description, which the report
    and the failure browser show). Notes of other (model, benchmark) pairs evaluated into the same
    folder are kept; this pair's are replaced. Returns every note written."""
    import tomllib

    mine = f"Scope of {model} on {bench}:"
    kept: list[str] = []
    path = out / "study.toml"
    if path.is_file():
        try:
            with open(path, "rb") as f:
                old = tomllib.load(f).get("aggregate", {}).get("notes", [])
            kept = [str(n) for n in old if isinstance(n, str) and not n.startswith(mine)]
        except (OSError, tomllib.TOMLDecodeError):
            kept = []
    every = sorted(kept + notes)
    lines = ["# written by pointfail evaluate; rewritten on every run", "[study]",
             f"name = {json.dumps(model_name_from(out.name))}",
             f"description = {json.dumps(' '.join(every), ensure_ascii=False)}",
             f"primary_judge = {json.dumps(primary_judge)}", "",
             "[aggregate]",
             "notes = [" + ", ".join(json.dumps(n, ensure_ascii=False) for n in every) + "]", ""]
    tmp = out / ".study.toml.tmp"
    tmp.write_text("\n".join(lines), encoding="utf-8")
    os.replace(tmp, path)
    return every


SERVED_WORK = "work"
"""The served path's job folder inside the output folder: ``<out>/work/<model>/<benchmark>/``
(``requests.jsonl``, ``responses.jsonl``, ``responses.server.json``), the runner's layout."""


class ServedIncomplete(RuntimeError):
    """The served path stopped before every sample had a response (the server failed its check or
    became unavailable): nothing was scored; ``pending`` samples are left for a rerun, every response
    written so far is kept."""

    def __init__(self, message: str, pending: list[str]):
        super().__init__(message)
        self.pending = pending


def worker_requests(family: Any, samples: list, max_new_tokens: int, *, resolve: bool = False) -> tuple[dict, list[dict]]:
    """``(prompts, requests)`` for ``samples`` of one model: each sample's prompt in the family's phrasing
    (``pointfail.prompts.build_prompt``), keyed by sample id, and the worker requests (``sample_id``,
    ``image`` as the sample's path, absolute when ``resolve`` (a served model reads it from this
    process), ``prompt`` as sent, ``task``, ``max_new_tokens``, and for the weight-free baselines the core
    ``instruction`` and ``absent_possible``: :class:`pointfail.running.jobs.JobRequest`) in sample order. The
    runner's study path and :func:`evaluate_served` both build their requests here."""
    from pointfail.prompts import absent_possible, build_prompt

    prompts, requests = {}, []
    for s in samples:
        pr = build_prompt(family, s)
        prompts[s.sample_id] = pr
        image = str(Path(s.image.path).resolve()) if resolve else s.image.path
        requests.append({"sample_id": s.sample_id, "image": image, "prompt": pr.sent, "task": s.task,
                         "max_new_tokens": max_new_tokens, "instruction": pr.core,
                         "absent_possible": absent_possible(s)})
    return prompts, requests


def _check_served_options(judge: str, judge_client: Any, limit: Optional[int], report: bool) -> None:
    """:func:`evaluate_served`'s option checks, before anything is read (``EvaluateError``; ``MissingExtra``
    for ``report`` without matplotlib, or without the ``served`` extra)."""
    from pointfail.extras import require

    if judge not in JUDGES:
        raise EvaluateError(f"--judge must be one of {', '.join(JUDGES)}, got {judge!r}")
    if judge in ("ollama", "openai") and judge_client is None:
        raise EvaluateError(f"--judge {judge} needs a judge client (OllamaJudge or OpenAIJudge)")
    if limit is not None and limit < 1:
        raise EvaluateError(f"--limit must be >= 1, got {limit}")
    if report:
        require("report", "the report (or pass --no-report)")
    require("served", "a served model (--base-url)")


def _served_options(fam: Any, options: Optional[dict[str, Any]], concurrency: Optional[int],
                    pixel_budget: Optional[int | str]) -> dict[str, Any]:
    """The served model's ``ServedOptions`` fields: ``options``, ``concurrency``, and for a
    ``pixels_resized`` family the declared pixel budget (``EvaluateError`` for a bad one)."""
    opts: dict[str, Any] = dict(options or {})
    if concurrency is not None:
        opts["concurrency"] = concurrency
    if fam.frame.kind == "pixels_resized" and "max_pixels" not in opts:
        if pixel_budget in (None, "family"):
            opts["pixel_budget"] = "family"
        elif isinstance(pixel_budget, int):
            opts["max_pixels"] = pixel_budget
        elif pixel_budget != "none":
            raise EvaluateError(f"--pixel-budget must be 'family', 'none' or max_pixels as an integer, got {pixel_budget!r}")
    return opts


def _served_records(out: Path, name: str, fam: Any, chosen: list, prompts: dict, responses: Any,
                    records_path: Path, data: Path) -> tuple[list, int]:
    """``(records, kept)`` of the served path: one record per chosen sample from its response (none:
    an ``error`` record), an unchanged earlier record kept with its judge verdicts."""
    import pointfail
    from pointfail.records import Provenance, Response, read_records
    from pointfail.scoring import build_record

    old = {r.sample_id: r for r in read_records(records_path)} if records_path.is_file() else {}
    prov = Provenance(pointfail_version=pointfail.__version__)
    records, kept = [], 0
    for s in chosen:
        r = responses.response_for(s.sample_id)
        resp = r.as_record_response() if r is not None else Response(error="no response for this sample")
        rec = build_record(study=model_name_from(out.name), model=name, family=fam, sample=s, prompt=prompts[s.sample_id],
                           response=resp, provenance=prov, base_dir=data)
        prev = old.get(s.sample_id)
        if prev is not None and prev.model_copy(update={"judge": None, "other_judgments": []}) == rec:
            rec, kept = prev, kept + 1
        records.append(rec)
    return records, kept


def _served_notes(name: str, bench_name: str, served_model: str, fam: Any, spec: Any, scope: str, n_chosen: int,
                  n_samples: int) -> list[str]:
    """The served path's scope notes: who served it, which samples, and the declared pixel budget."""
    head = f"Scope of {name} on {bench_name}:"
    notes = [f"{head} served by {served_model} at an OpenAI-compatible endpoint; "
             + (f"the first {n_chosen} of the benchmark's {n_samples} samples (--limit)." if scope == "limit"
                else f"all {n_samples} samples of the benchmark.")]
    budget = spec.options.max_pixels or ("the family's published" if spec.options.pixel_budget == "family" else None)
    if fam.frame.kind == "pixels_resized":
        notes.append(f"{head} pixel budget declared: {budget or 'none'} (max_pixels); the frame each reply is read in "
                     "is the server's, checked against its usage.prompt_tokens.")
    return notes


def evaluate_served(
    *,
    benchmark: str,
    data_dir: str | Path,
    base_url: str,
    served_model: str,
    family: str,
    out_dir: str | Path,
    model: Optional[str] = None,
    limit: Optional[int] = None,
    concurrency: Optional[int] = None,
    api_key_env: Optional[str] = None,
    pixel_budget: Optional[int | str] = None,
    options: Optional[dict[str, Any]] = None,
    max_new_tokens: int = 128,
    retry_errors: bool = False,
    judge: str = "auto",
    judge_client: Any = None,
    tolerance_px: Optional[float] = None,
    report: bool = True,
    view: bool = True,
    progress: bool = False,
    log: Optional[Callable[[str], None]] = None,
) -> EvaluationResult:
    """Evaluate a model served behind an OpenAI-compatible endpoint, in one call: the benchmark's
    samples are asked through :func:`pointfail.running.served.backend.run_served` (pre-flight ``GET /v1/models``,
    the frame check, bounded concurrency, resumable), then scored, judged, aggregated, drawn and
    browsable exactly as :func:`evaluate_replies` does (the same stages, :func:`_finish`).

    Args:
        benchmark, data_dir, out_dir, judge, judge_client, tolerance_px, report, view, progress, log:
            as for :func:`evaluate_replies`.
        base_url: the server's API root (``http://127.0.0.1:8000/v1``); served_model: the model name
            the server lists in ``/v1/models``; family: the pointfail family (any spelling).
        model: the model's name in the records path (default: from ``served_model``).
        limit: the first ``limit`` samples of the benchmark only (said so in the tables).
        concurrency: requests in flight (default :class:`~pointfail.running.served.options.ServedOptions`'s).
        api_key_env: the environment variable holding the API key.
        pixel_budget: for families answering in pixels of the resized input: ``None`` or
            ``"family"`` (the family's published ``smart_resize`` budget, the default), an ``int``
            (``max_pixels``), or ``"none"`` (undeclared: the frame check observes it from the server).
        options: further :class:`~pointfail.running.served.options.ServedOptions` fields.
        max_new_tokens: the response cap per request.
        retry_errors: ask the samples whose earlier response was an error again (also done by itself
            when the model entry or the server changed).

    Returns:
        :class:`EvaluationResult` with ``served`` set (the run's summary: pre-flight entry, frames
        observed, requests, errors).

    Raises:
        EvaluateError: an unknown family, bad options or model name; nothing is written.
        ServedIncomplete: the server failed its check or became unavailable (message says what to change).
        pointfail.inputs.benchmarks.BenchmarkError: the benchmark cannot be loaded.
    """
    from pointfail.inputs.benchmarks import load as load_benchmark
    from pointfail.families import get_family
    from pointfail.running.jobs import read_responses
    from pointfail.running.served.backend import ServerUnavailable, run_served
    from pointfail.inputs.study import ServerModel, StudyError, model_spec

    say = log or (lambda _m: None)
    _check_served_options(judge, judge_client, limit, report)
    try:
        fam = get_family(family)
    except KeyError as e:
        raise EvaluateError(f"--family: {e.args[0]}") from None
    name = model_name_from(model if model is not None else served_model)
    if model is not None and name != model:
        raise EvaluateError(f"--model-name {model!r}: use lower-case letters, digits, '.', '_' and '-' (e.g. {name!r})")
    opts = _served_options(fam, options, concurrency, pixel_budget)
    try:
        spec = model_spec({"kind": "server", "name": name, "family": fam.name, "base_url": base_url,
                           "model": served_model, "api_key_env": api_key_env, "max_new_tokens": max_new_tokens,
                           "options": opts}, "the served model")
    except StudyError as e:
        raise EvaluateError(str(e)) from None
    assert isinstance(spec, ServerModel)

    data = Path(data_dir).resolve()
    check_out_dir(Path(out_dir), data)
    samples = load_benchmark(benchmark, data)
    if not samples:
        raise EvaluateError(f"{benchmark} at {data_dir}: no samples")
    bench_name = samples[0].benchmark
    chosen = samples[:limit] if limit else list(samples)
    out = Path(out_dir)
    job = out / SERVED_WORK / name / bench_name
    job.mkdir(parents=True, exist_ok=True)
    prompts, requests = worker_requests(fam, chosen, spec.max_new_tokens, resolve=True)
    req_path, resp_path = job / "requests.jsonl", job / "responses.jsonl"
    from pointfail.safeio import atomic_write_bytes

    atomic_write_bytes(req_path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests).encode("utf-8"))
    say(f"[evaluate] {bench_name}: {len(chosen)} samples through {served_model} at {base_url} "
        f"(family {fam.name}; concurrency {spec.options.concurrency})")
    try:
        summary = run_served(spec, req_path, resp_path, progress=progress, retry_errors=retry_errors,
                             default_max_new_tokens=spec.max_new_tokens)
    except ServerUnavailable as e:
        raise ServedIncomplete(str(e), e.pending) from None
    except ValueError as e:
        raise EvaluateError(str(e)) from None
    if summary.server.get("context_length"):
        say(f"[evaluate] server: {served_model}, context length {summary.server['context_length']} tokens")
    for size, fr in sorted(summary.frames.items()):
        if fr.get("note"):
            say(f"[evaluate] frame check, {size} sent: {fr['note']}")

    records_path = out / name / f"{bench_name}.jsonl"
    records, kept = _served_records(out, name, fam, chosen, prompts, read_responses(resp_path, [s.sample_id for s in chosen]),
                                    records_path, data)
    scope = "limit" if limit and limit < len(samples) else "all"
    notes = _served_notes(name, bench_name, served_model, fam, spec, scope, len(chosen), len(samples))
    notes = _write_study_toml(out, notes, "oracle" if judge in ("auto", "oracle", "none") else judge, name, bench_name)
    outcomes, judge_name, judge_report, judge_note, tables, composition, written, index = _finish(
        out=out, records=records, records_path=records_path, kept=kept, chosen=chosen, judge=judge,
        judge_client=judge_client, tolerance_px=tolerance_px, data=data, report=report, view=view,
        progress=progress, say=say)
    problems = [ReplyProblem("-", "error", rec.error or "error", rec.sample_id) for rec in records
                if rec.outcome == "error"]
    n_errors, left_off = len(problems), max(0, len(problems) - MAX_LISTED_PROBLEMS)
    del problems[MAX_LISTED_PROBLEMS:]  # the first ones listed, the rest counted
    result = EvaluationResult(
        out_dir=out, model=name, benchmark=bench_name, family=fam.name, frame=None, replies_file=resp_path,
        scope=scope, benchmark_samples=len(samples), records=len(records), kept=kept,
        replies={"entries": len(chosen), "replies": len(chosen), "errors": n_errors}, problems=problems,
        problems_left_off=left_off,
        outcomes=outcomes, judge=judge_name, judge_report=judge_report, judge_note=judge_note,
        records_path=records_path, tables_dir=tables, failure_composition=composition, report=written, view=index,
        notes=notes, served={k: v for k, v in vars(summary).items() if k != "error_reasons"},
    )
    atomic_write_bytes(out / RESULT_FILE, (json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return result
