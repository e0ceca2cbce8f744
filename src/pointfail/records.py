"""The per-sample data model, its versioned JSON schema, canonical JSON, and a validating reader.

Every stage of pointfail exchanges plain data defined here:

``Sample`` (a benchmark row, loaded) → ``Prompt`` (what was sent) → ``Response`` (raw model text,
written by the worker) → ``ParseResult`` (points and boxes in the unit square) → ``Geometry`` and
``outcome`` (scoring) → ``Judgment`` (failure mode of a miss) → ``Record`` (one JSON line in
``records/<study>/<model>/<benchmark>.jsonl``).

Coordinate conventions (see ``shared/DESIGN.md``, "Coordinates"):

* Normalized points are ``(x, y)`` in the unit square, origin top-left, x right, y down, continuous:
  pixel column ``i`` covers ``[i, i+1)`` in pixel units, i.e. ``[i/W, (i+1)/W)`` normalized.
* Boxes are ``(x0, y0, x1, y1)``; in ``Target.boxes`` they are absolute pixels of the original image
  (the PointerBench / ScreenSpot convention, edges inclusive when testing a point); in
  ``ParseResult.boxes`` they are normalized like points.

Canonical JSON (``canonical_json``): keys sorted, UTF-8 (no ASCII escaping), compact separators, no
NaN or infinity (``ValueError``), exactly one ``\\n`` at the end of each JSONL line. The same record
always serializes to the same bytes, whatever the hash seed, locale or time zone.

Raises:
    RecordError: from :func:`read_records` for an invalid line, naming the file and 1-based line.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer, model_validator

SCHEMA_VERSION: Literal[2] = 2
"""Integer version of the record schema; bumped on any incompatible change. Version 2 added
``Record.frame_compliance`` (the frame-compliance readings, computed when the record is made);
version-1 records are refused by the reader with one line naming ``pointfail upgrade-records``,
which re-derives the readings from each record's raw reply and target (:mod:`pointfail.integrity`)."""

Outcome = Literal["hit", "miss", "no_prediction", "error"]
"""One per sample. ``error`` is an infrastructure error (the worker could not run the sample: bad
image, out of memory, exception). It is reported apart and never scored as a model outcome."""

OUTCOMES: tuple[str, ...] = ("hit", "miss", "no_prediction")
"""The three scored outcomes, in table order (the study's "Task and outcomes")."""

FailureMode = Literal["off_by_pixels", "wrong_instance", "wrong_category", "hallucinated"]
FAILURE_MODES: tuple[FailureMode, ...] = ("off_by_pixels", "wrong_instance", "wrong_category", "hallucinated")
"""The four failure modes, least to most severe (pointfail-study.txt, "Why the kind of failure
matters")."""

JudgeStatus = Literal["labeled", "unlabeled", "judge_unavailable", "pending"]
"""``labeled``: one clean label. ``unlabeled``: five attempts gave no single clean label (an
abstention, reported apart). ``judge_unavailable``: transport failures outlasted the retries; a
rerun fills it in. ``pending``: not judged yet."""

TargetKind = Literal["mask", "boxes", "polygon", "absent"]
Task = Literal["point", "box"]
BoxClass = Literal["hit", "clipped", "oversized", "both", "malformed"]
"""PointerBench box outcome class: ``hit`` (coverage >= min and precision >= min), ``clipped``
(coverage too low), ``oversized`` (precision too low), ``both`` (both too low), ``malformed``
(no valid box)."""


class RecordError(ValueError):
    """A records file line that is not valid JSON or does not match the schema.

    Attributes:
        path: the file.
        line: 1-based line number.
        reason: what is wrong.
    """

    def __init__(self, path: str | Path, line: int, reason: str):
        self.path = str(path)
        self.line = line
        self.reason = reason
        super().__init__(f"{self.path}:{line}: {reason}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, allow_inf_nan=False)


class _Flagged(_Model):
    """A model with ``flags`` (what was repaired in an outside reply when it was read) that leaves
    ``flags`` out of its JSON when empty, so records without repairs keep their bytes."""

    flags: list[str] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _drop_no_flags(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if not data.get("flags"):
            data.pop("flags", None)
        return data


class ImageRef(_Model):
    """An image on disk. ``width``/``height`` in pixels of the original image; ``sha256`` of the file
    bytes (hex), ``None`` when the file is not available (PointerBench ships no screenshots)."""

    path: str
    width: int
    height: int
    sha256: Optional[str] = None


class Target(_Model):
    """The region a point must land in.

    kind:
        ``mask``: a binary mask file (``mask_path``), same size as the image, binarized as
        documented in ``pointfail.geometry.load_mask``.
        ``boxes``: one or more boxes ``[x0, y0, x1, y1]`` in absolute pixels of the original image;
        a point inside any of them (edges inclusive) is a hit.
        ``polygon``: one or more polygons, each a list of ``[x, y]`` vertices in absolute pixels.
        ``absent``: the referent is not in the image; the correct answer is to decline.
    eval:
        The benchmark's own rule for this row, verbatim where it has one (PointerBench's ``eval``
        object, e.g. ``{"type": "iou", "min_coverage": 0.9, "min_precision": 0.7}``).
    sha256:
        Hash of the target definition (mask file bytes, or canonical JSON of the boxes/polygons).
    area_px:
        Target area in pixels when known (for area-quartile breakdowns).
    """

    kind: TargetKind
    mask_path: Optional[str] = None
    boxes: Optional[list[list[float]]] = None
    polygons: Optional[list[list[list[float]]]] = None
    eval: Optional[dict[str, Any]] = None
    sha256: Optional[str] = None
    area_px: Optional[float] = None


class Sample(_Model):
    """One benchmark row, loaded: the image, the instruction as the publisher wrote it, the task and
    the target. ``metadata`` carries every axis the benchmark tags rows with (category, language,
    data_type, ...), str/int/float/bool values only, used for breakdowns. ``scene_graph_path`` points
    at the per-image scene graph JSON for suites that have one (synthetic and web suites), which the
    oracle judge uses."""

    sample_id: str
    benchmark: str
    image: ImageRef
    instruction: str
    task: Task = "point"
    target: Target
    metadata: dict[str, Any] = Field(default_factory=dict)
    scene_graph_path: Optional[str] = None


class Prompt(_Model):
    """The three forms of the instruction: as the benchmark wrote it (``original``), with answer-format
    directives for other models stripped (``core``), and the exact text sent to the model (``sent``),
    plus the names of the directive patterns that were stripped."""

    original: str
    core: str
    sent: str
    stripped: list[str] = Field(default_factory=list)


InputSizeSource = Literal["client_resized", "server_budget", "server_observed", "provider_documented", "original",
                          "unknown"]
"""How a served sample's model-input size is known (:mod:`pointfail.running.served.inputs`): ``client_resized``
(the client sent the image at the processor's ``smart_resize`` size for the declared pixel budget, so
the server's resize is the identity), ``server_budget`` (sent at full size; the size is the server's
``smart_resize`` under its declared budget), ``server_observed`` (the server's own image-token count
for the size sent differed from the declared budget's, or no budget was declared, and determined the
size the server used uniquely: :func:`pointfail.running.served.inputs.sizes_for_tokens`), ``provider_documented`` (the provider's documented
downscaling), ``original`` (the model receives the image as sent, at its original size), ``unknown``
(no budget declared for a resized-input frame: not guessed)."""


class ServedInfo(_Flagged):
    """How a served model (an OpenAI-compatible chat-completions server) answered one sample.

    Attributes:
        api: ``"openai-chat"``. model: the model name the server reported (``None`` if it sent none).
        sent_size: ``[W, H]`` pixels of the image the client sent. received_size: ``[W, H]`` of the
            image the model received, when known (see ``input_size_source``); ``None`` when unknown.
        input_size_source: see :data:`InputSizeSource`. input_size_note: why, in words, when the
            size is unknown or the server's resize is not the identity.
        finish_reason: the server's ``finish_reason`` (``stop``, ``length``, ``content_filter``, ...).
        refusal: the refusal text when the model refused (recorded, not retried).
        requests: HTTP requests made for this sample (1 + retries). transport_failures: those that
            failed in transport (429, 5xx, timeout, dropped connection, malformed body).
        response_format: ``"json_schema:<name>"`` when structured output was requested, else ``None``.
        preset: the protocol preset used (``"pointerbench-frontier"``), else ``None``.
        system_prompt: whether a system message was sent (its text is the preset's or the family's).
        observed_tokens: image tokens the server counted for an image of ``sent_size`` (its
            ``usage.prompt_tokens`` with the image minus without it, less the family's wrapper
            tokens: :func:`pointfail.running.served.inputs.image_token_rule`), when the family has a rule and
            the server reports usage; ``None`` otherwise. observed_size: ``[W, H]`` the token count
            implies (the model-input size the server used), when unique.
        flags: what was repaired in the server's reply when it was read
            (:mod:`pointfail.running.served.client`): ``invalid_unicode_replaced``, ``non_finite_usage_dropped``,
            ``content_parts_joined``, ``content_parts_ignored``; left out of the JSON when empty.
    """

    api: Literal["openai-chat"] = "openai-chat"
    model: Optional[str] = None
    sent_size: Optional[list[int]] = None
    received_size: Optional[list[int]] = None
    input_size_source: InputSizeSource = "original"
    input_size_note: Optional[str] = None
    finish_reason: Optional[str] = None
    refusal: Optional[str] = None
    requests: int = 1
    transport_failures: int = 0
    response_format: Optional[str] = None
    preset: Optional[str] = None
    system_prompt: bool = False
    observed_tokens: Optional[int] = None
    observed_size: Optional[list[int]] = None


class Response(_Model):
    """What a worker wrote for one sample. ``model_input_size`` is ``[width, height]`` in pixels of
    the image the processor actually fed the model (needed by resized-input frames); ``error`` is set
    (and ``raw_text`` is ``None``) for an infrastructure failure. ``served`` is set only for models
    answered through a server (:class:`ServedInfo`) and left out of the JSON when ``None``, so records
    of in-container models are unchanged by its existence."""

    raw_text: Optional[str] = None
    model_input_size: Optional[list[int]] = None
    prompt_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    seconds: Optional[float] = None
    error: Optional[str] = None
    served: Optional[ServedInfo] = None

    @model_serializer(mode="wrap")
    def _drop_unserved(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("served") is None:
            data.pop("served", None)
        return data


class ParseResult(_Model):
    """A parsed answer, converted from the family's coordinate frame to the unit square.

    points: ``[[x, y], ...]`` normalized, origin top-left, in the order the model wrote them; the
        first is the primary point. Values outside ``[0, 1]`` are kept, never clamped.
    boxes: ``[[x0, y0, x1, y1], ...]`` normalized, corners sorted (``flags`` says when they were not).
    frame: the name of the coordinate frame used (from the family's declaration).
    flags: rule names that fired (``truncated``, ``inverted_box``, ``zero_area_box``, ``think_stripped``,
        ``fullwidth``, ...).
    ignored: fragments of the text that looked like coordinates but were not used, with why.
    reason: why nothing was parsed (``None`` when something was), e.g. ``truncated``,
        ``no_coordinates``, ``non_finite_number``.
    """

    family: str
    frame: str
    points: list[list[float]] = Field(default_factory=list)
    boxes: list[list[float]] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    ignored: list[str] = Field(default_factory=list)
    reason: Optional[str] = None
    truncated: bool = False


class BoxScore(_Model):
    """Box-task geometry: IoU, coverage (intersection / target area) and precision (intersection /
    predicted area), all in [0, 1], and the PointerBench box outcome class."""

    iou: Optional[float] = None
    coverage: Optional[float] = None
    precision: Optional[float] = None
    box_class: BoxClass = "malformed"


class Geometry(_Model):
    """Where the primary prediction fell. ``distance_px``: Euclidean distance in pixels of the original
    image from the primary point to the nearest target pixel (0 inside); ``distance_norm``: the same
    divided by the image diagonal. ``None`` when there is no point or no target (absent)."""

    in_target: Optional[bool] = None
    distance_px: Optional[float] = None
    distance_norm: Optional[float] = None
    box: Optional[BoxScore] = None


class OfficialScore(_Model):
    """The benchmark's own rule, computed beside pointfail's outcome and labelled with its source
    (e.g. ``where2place: mean in-mask over all points``; :mod:`pointfail.official`).

    score: in [0, 1]; ``None`` when the official script leaves the row out of its mean (``note`` says
        why, e.g. its parser raises on the reply).
    own_score: set only when the official parser reads the reply differently from pointfail's family
        parser: what the same rule gives on pointfail's reading.
    note: why a row is scored as it is, where that is not the plain rule (a missing answer, a dropped
        question). ``own_score`` and ``note`` are left out of the JSON when unset.
    """

    rule: str
    score: Optional[float]
    own_score: Optional[float] = None
    note: Optional[str] = None

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: Any) -> Any:
        out = handler(self)
        for k in ("own_score", "note"):
            if out.get(k) is None:
                out.pop(k, None)
        return out


class JudgeAttempt(_Flagged):
    """One judge request: 1-based attempt number, the raw reply, the label read from it (or ``None``)
    and the verdict (``accepted``, ``rejected_two_labels``, ``rejected_negated``,
    ``rejected_no_label``, ``rejected_empty``); ``flags``: what was repaired in the reply before it
    was read (``invalid_unicode_replaced``), left out of the JSON when empty."""

    attempt: int
    reply: str
    verdict: str
    label: Optional[FailureMode] = None


class Judgment(_Model):
    """A judge's verdict on one miss.

    judge: ``oracle`` or ``ollama:<model>``; ``judge_digest``: the model digest when known;
    ``options``: the generation options sent (temperature, seed, num_ctx, num_predict);
    ``transport_failures``: HTTP 5xx / timeouts / dropped connections, counted apart from label
    attempts; ``detail``: free-form explanation (the oracle writes which element the point fell on).
    """

    judge: str
    status: JudgeStatus
    label: Optional[FailureMode] = None
    judge_digest: Optional[str] = None
    options: dict[str, Any] = Field(default_factory=dict)
    attempts: list[JudgeAttempt] = Field(default_factory=list)
    transport_failures: int = 0
    detail: Optional[str] = None


class FrameReadings(_Model):
    """The frame-compliance readings of one point-task sample with a present referent, computed when
    the record is made (:func:`pointfail.scoring.frame_readings`, from
    :func:`pointfail.scoring.frame_compliance`) so the diagnostic table never parses a reply again.

    declared_frame: the family's declared coordinate frame (its name).
    unit, percent_100, grid_1000, pixels_original, pixels_resized: one per reading of
        ``scoring.COMPLIANCE_READINGS``: ``True`` when the primary point, re-read that way, is in the
        target; ``False`` when it is not, or when the reply holds no point, or the reading cannot
        convert it; ``None`` when the reading does not apply (it is the declared frame, the frame is a
        token vocabulary, or ``pixels_resized`` without a model-input size).
    not_computed: why the readings could not be computed (every reading ``None``), else ``None``.
    """

    declared_frame: str
    unit: Optional[bool] = None
    percent_100: Optional[bool] = None
    grid_1000: Optional[bool] = None
    pixels_original: Optional[bool] = None
    pixels_resized: Optional[bool] = None
    not_computed: Optional[str] = None


READING_FIELDS: tuple[str, ...] = ("unit", "percent_100", "grid_1000", "pixels_original", "pixels_resized")
"""The readings of :class:`FrameReadings`, in column order (the names of ``scoring.COMPLIANCE_READINGS``)."""


class Provenance(_Model):
    """Where a record came from: package versions, the image digest and model revision it ran with,
    the checkpoint name. Nothing time-dependent goes here (records must regenerate byte for byte)."""

    pointfail_version: Optional[str] = None
    checkpoint: Optional[str] = None
    model_revision: Optional[str] = None
    image_digest: Optional[str] = None
    packages: dict[str, str] = Field(default_factory=dict)


class Record(_Model):
    """One sample's complete result: a line of ``records/<study>/<model>/<benchmark>.jsonl``.

    ``judge`` is the study's primary judge (its label is the failure mode in the tables);
    ``other_judgments`` holds further judges' verdicts on the same miss (e.g. an Ollama judge beside
    the oracle) for agreement reports. Both stay ``None``/empty unless ``outcome == "miss"``.

    ``error`` explains an ``error`` outcome: the worker's reason (``worker: ...``, copied from
    ``response.error``) or why the sample could not be scored (``scoring: ...``: an unreadable mask,
    a mask whose size differs from the image, a resized-input frame without a model-input size).
    Such samples are counted apart as infrastructure errors, never as model outcomes.

    ``frame_compliance`` holds the frame-compliance readings (:class:`FrameReadings`) of a point-task
    sample with a present referent whose outcome is not ``error``, computed where the record is made
    (:func:`pointfail.scoring.build_record`); ``None`` for every other record (box tasks, absent
    referents, infrastructure errors). ``verify`` re-derives it like the parse and the outcome.

    ``scene_graph`` is the sample's scene graph as the loader found it (``Sample.scene_graph_path``,
    a path like ``image.path``), kept so the oracle judge reads the same file; left out of the JSON
    when ``None`` (benchmarks without scene graphs), so such records are unchanged by its existence.
    """

    schema_version: Literal[2] = SCHEMA_VERSION
    study: str
    model: str
    family: str
    benchmark: str
    sample_id: str
    task: Task = "point"
    image: ImageRef
    target: Target
    metadata: dict[str, Any] = Field(default_factory=dict)
    scene_graph: Optional[str] = None
    prompt: Prompt
    response: Response
    parse: Optional[ParseResult] = None
    outcome: Outcome
    error: Optional[str] = None
    geometry: Geometry = Field(default_factory=Geometry)
    official: Optional[OfficialScore] = None
    frame_compliance: Optional[FrameReadings] = None
    judge: Optional[Judgment] = None
    other_judgments: list[Judgment] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)

    @model_validator(mode="after")
    def _reply_repairs_are_parse_flags(self) -> "Record":
        # text repaired when the reply was read (served.flags) is said where the parse is read
        served = self.response.served
        if served is not None and served.flags and self.parse is not None:
            for f in served.flags:
                if f not in self.parse.flags:
                    self.parse.flags.append(f)
        return self

    @model_serializer(mode="wrap")
    def _drop_absent_scene_graph(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("scene_graph") is None:
            data.pop("scene_graph", None)
        return data

    @property
    def failure_mode(self) -> Optional[str]:
        """The primary judge's label when the miss is labeled, else ``None``."""
        if self.outcome == "miss" and self.judge is not None and self.judge.status == "labeled":
            return self.judge.label
        return None

    def to_json(self) -> str:
        """Canonical JSON of this record, one line, ending in ``\\n``."""
        return canonical_json(self.model_dump(mode="json"))


def canonical_json(obj: Any) -> str:
    """Serialize ``obj`` (JSON-compatible: dict/list/str/int/float/bool/None) as one canonical line:
    sorted keys, ``ensure_ascii=False``, separators ``(",", ":")``, a trailing ``\\n``.

    One walk over the values: ``json.dumps(allow_nan=False)`` itself refuses NaN and infinity.

    Raises:
        ValueError: on NaN or infinity anywhere in ``obj``.
        TypeError: on a value JSON cannot encode (e.g. a numpy scalar: convert first).
    """
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def boxes_sha256(boxes: list[list[float]]) -> str:
    """sha256 of the canonical JSON of a list of boxes (the ``Target.sha256`` of box targets)."""
    return sha256_bytes(canonical_json(boxes).encode("utf-8"))


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes (``hashlib.file_digest``: read in chunks, never whole). Raises
    ``OSError`` if unreadable."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_records(path: str | Path, records: Iterable[Record]) -> int:
    """Write records as canonical JSONL (UTF-8, ``\\n``), sorted by ``sample_id`` so the file does not
    depend on the order records were produced. Creates parent directories. Returns the count.

    The write is atomic (:func:`pointfail.safeio.atomic_write_bytes`: a temporary file beside
    ``path``, fsync, ``os.replace``, mode 0644): a crash or ``kill -9`` leaves the old file or the new
    one, never a prefix, and a symlink at ``path`` is replaced, not followed. Every record is
    serialized before anything is written. A record whose text is not valid Unicode (a lone surrogate
    that reached it from outside) is written with that text repaired (:func:`repaired_json`), so one
    bad record never costs the others (issue 24).

    Raises:
        OSError: the file cannot be written (disk full: the old file stays, the temporary is removed).
    """
    from pointfail.safeio import atomic_write_bytes

    recs = sorted(records, key=lambda r: r.sample_id)
    lines = []
    for r in recs:
        line = r.to_json()
        try:
            lines.append(line.encode("utf-8"))
        except UnicodeEncodeError:
            lines.append(repaired_json(r.model_dump(mode="json")).encode("utf-8"))
    atomic_write_bytes(path, b"".join(lines))
    return len(recs)


def repaired_json(obj: Any) -> str:
    """:func:`canonical_json` of ``obj`` with every string (keys included) made valid Unicode
    (:func:`pointfail.safeio.valid_text`: lone surrogates become U+FFFD). Iterative, so depth costs
    no recursion in this walk."""
    from pointfail.safeio import valid_text

    def fix(v: Any) -> Any:
        return valid_text(v)[0] if isinstance(v, str) else v

    root: list[Any] = [obj]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        v = parent[key]
        if isinstance(v, dict):
            new = {fix(k): x for k, x in v.items()}
            parent[key] = new
            stack.extend((new, k) for k in new)
        elif isinstance(v, list):
            new_list = list(v)
            parent[key] = new_list
            stack.extend((new_list, i) for i in range(len(new_list)))
        else:
            parent[key] = fix(v)
    return canonical_json(root[0])


def append_jsonl(path: str | Path, obj: Any) -> None:
    """Append one canonical JSON line to ``path`` and flush it to disk (``fsync``), so a killed
    process loses at most the line being written."""
    import os

    line = canonical_json(obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj)
    with open(path, "a", encoding="utf-8", newline="\n") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, parsed_json)`` for each non-empty line (1-based numbers). A final line
    without ``\\n`` that does not parse (a write cut short) is skipped; any other line that does not
    parse raises :class:`RecordError` naming file and line."""
    p = Path(path)
    with open(p, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    last = len(lines)
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            yield i, json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            if i == last:  # unterminated final line: an interrupted append
                return
            raise RecordError(p, i, f"not valid JSON: {e}") from None


RECORDS_SKIP_DIRS = frozenset({"tables", "report"})
"""Folders of a study directory that never hold records (the tables and figures written from them)."""


def records_files(study_dir: str | Path) -> list[Path]:
    """The records files of a study: ``<study>/<model>/<benchmark>.jsonl``, exactly two levels down.

    The one discovery rule every stage uses (judge, aggregate, verify, report, judge agreement), so a
    file that is judged is also aggregated. Skipped: the ``tables/`` and ``report/`` folders, hidden
    folders and hidden files (temporary files of an atomic rewrite). Sorted by the relative path as
    UTF-8 bytes, never by directory order. A missing directory has no records files.
    """
    d = Path(study_dir)
    if not d.is_dir():
        return []
    out: list[Path] = []
    for sub in d.iterdir():
        if not sub.is_dir() or sub.name in RECORDS_SKIP_DIRS or sub.name.startswith("."):
            continue
        out.extend(p for p in sub.glob("*.jsonl") if p.is_file() and not p.name.startswith("."))
    return sorted(out, key=lambda p: str(p.relative_to(d)).encode("utf-8"))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many records are built and kept: records hold no
    reference cycles, and with the collector on, repeated full collections over a growing heap of
    records cost about as much as parsing them (``bench/aggregate.py`` measures it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def enumerate_records(path: str | Path) -> Iterator[tuple[int, Record]]:
    """Read and validate a records JSONL file one record at a time: the one record reader, yielding
    ``(line_number, record)`` (1-based line numbers of the file).

    Each non-empty line is validated against the full schema by pydantic's JSON validator
    (``Record.model_validate_json``: parsing and validation in one pass, no intermediate dict). Lines
    are read one at a time and records yielded as they are validated, so a caller that folds them
    (``pointfail.aggregate``) holds one line and one record at a time, whatever the file's size.

    Raises:
        RecordError: naming file and 1-based line for invalid JSON or a schema mismatch
            (wrong ``schema_version``, missing or unknown field, wrong type, NaN).
        OSError: the file cannot be read.
    """
    for i, rec, _ in enumerate_record_lines(path):
        yield i, rec


def enumerate_record_lines(path: str | Path) -> Iterator[tuple[int, Record, bytes]]:
    """:func:`enumerate_records` with each record's line as read: ``(line_number, record, raw)``,
    ``raw`` the line's bytes including its ``\n`` (a final line without one is given one), so a
    caller can hash the stored line once (``pointfail.integrity.line_digest``) instead of
    serializing the record again. Same validation and errors as :func:`enumerate_records`."""
    p = Path(path)
    validate = Record.model_validate_json
    with open(p, "rb") as f:
        for i, raw in enumerate(f, start=1):
            if raw.isspace():  # a blank line (no copy, unlike strip)
                continue
            try:
                rec = validate(raw)
            except ValidationError as e:
                raise RecordError(p, i, schema_reason(e, raw)) from None
            yield i, rec, raw if raw.endswith(b"\n") else raw + b"\n"


LEGACY_VERSION = re.compile(rb'"schema_version"\s*:\s*1\s*[,}]')
"""A line of a schema-version-1 record (before ``frame_compliance`` was stored)."""

UPGRADE_HINT = ("schema version 1 record (made before the frame-compliance readings were stored in each record): "
                "run `pointfail upgrade-records <study>` once to re-derive them (it needs the study's mask files)")
"""The one line a schema-version-1 record is refused with."""


def schema_reason(e: ValidationError, raw: bytes) -> str:
    """Why a records line ``raw`` fails the schema (``e``, pydantic's error): :data:`UPGRADE_HINT` for
    a version-1 record, else the first error's field path and message, with the sample id when the
    line names one."""
    first = e.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ()))
    if loc == "schema_version" and LEGACY_VERSION.search(raw):
        return f"schema: {UPGRADE_HINT}{_sample_of(raw)}"
    return f"schema: {loc}: {first.get('msg')}{_sample_of(raw)}"


_SAMPLE_ID = re.compile(rb'"sample_id"\s*:\s*"((?:[^"\\\n]|\\.){1,512})"')


def _sample_of(raw: bytes) -> str:
    """`` (sample '<id>')`` when an invalid records line still names its sample, else ``""``."""
    m = _SAMPLE_ID.search(raw)
    if m is None:
        return ""
    try:
        sid = json.loads(b'"' + m.group(1) + b'"')
    except ValueError:
        return ""
    return f" (sample {sid!r})"


def iter_records(path: str | Path) -> Iterator[Record]:
    """The records of a file one at a time (:func:`enumerate_records` without the line numbers).

    Raises:
        RecordError: naming file and 1-based line for invalid JSON or a schema mismatch.
    """
    for _, rec in enumerate_records(path):
        yield rec


def read_records(path: str | Path) -> list[Record]:
    """Every record of a records JSONL file, validated (:func:`iter_records`), as a list; the garbage
    collector is paused while the list grows (:func:`gc_paused`).

    Raises:
        RecordError: naming file and 1-based line for invalid JSON or a schema mismatch.
    """
    with gc_paused():
        return list(iter_records(path))


def record_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of :class:`Record`, as committed in ``schema/record.schema.json``."""
    schema = Record.model_json_schema()
    schema["$id"] = f"https://pointfail/schema/record-v{SCHEMA_VERSION}.json"
    return schema
