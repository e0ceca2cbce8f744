"""Job files: what crosses the boundary between the runner and a worker (``shared/DESIGN.md``,
"Containers"; ``docs/architecture.md``, "Worker, backends, runner"; issue 12).

A job is a folder pair. The runner writes ``requests.jsonl`` (one :class:`JobRequest` per line) where
the worker can only read it; the worker appends ``responses.jsonl`` (one :class:`JobResponse` per
line, flushed and fsynced per line) in the one folder it may write. Everything in the responses file
is untrusted: a model container, or a worker gone wrong, can write anything there.

* :func:`read_responses` reads it and **never raises on its content**: every line is capped
  (:data:`~pointfail.limits.MAX_RESPONSE_LINE_BYTES`), decoded as UTF-8, parsed as JSON and validated
  against :class:`JobResponse`; a line that fails becomes an explained error for *its* sample when
  its ``sample_id`` can be read (even from a line too long to parse), else a problem line in the
  result. The first valid line of a sample wins; later lines of the same sample are duplicates and
  are ignored (counted). A final line with no ``\\n`` is a write cut short by a kill and is ignored.
  The file is opened with ``O_NOFOLLOW`` and must be a regular file: a symlink or FIFO planted in its
  place is refused (:class:`JobFileError`), never followed.
* :class:`ResponseWriter` is the one way to append responses. It takes an exclusive ``flock`` on the
  responses file for its whole life, so **one job has one worker**: a second worker on the same
  file (another process, another container mounting the same folder) fails at once with
  :class:`JobBusy`. Under the lock it cuts a torn final line before appending.
* :class:`JobLock` is the same kind of lock on any file (the runner holds one per job folder).

Request line::

    {"sample_id", "image": "<path inside the worker>", "prompt", "task": "point"|"box",
     "max_new_tokens": int}

Response line::

    {"sample_id", "raw_text": str | null, "model_input_size": [W, H] | null, "prompt_tokens",
     "output_tokens", "seconds", "error": null | "<reason>"[, "served": {...}]}

For served models (``kind = "server"`` in the study) the host process that talks to the server uses
the same :class:`ResponseWriter` and :func:`read_responses`, so resume and the one-writer rule are the
same; ``model_input_size`` is then the size of the image the server received.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pointfail.limits import MAX_RESPONSE_LINE_BYTES, MAX_RESPONSE_RAW_TEXT_CHARS
from pointfail.records import ServedInfo
from pointfail.safeio import atomic_write_bytes

__all__ = [
    "JobRequest",
    "JobResponse",
    "JobFileError",
    "JobBusy",
    "JobLock",
    "ResponseLog",
    "ResponseWriter",
    "read_responses",
    "write_requests",
    "REQUESTS_NAME",
    "RESPONSES_NAME",
]

REQUESTS_NAME = "requests.jsonl"
RESPONSES_NAME = "responses.jsonl"
MAX_SAMPLE_ID_CHARS = 512


class JobFileError(RuntimeError):
    """A job file cannot be used at all: a symlink, FIFO or other non-regular file where the
    responses file should be, or an unreadable file. The message names the file and says what to do."""


class JobBusy(RuntimeError):
    """Another worker (or runner) holds this job's lock."""


def _no_surrogates(v: Optional[str]) -> Optional[str]:
    if v is not None:
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"not valid Unicode (lone surrogate at character {e.start})") from None
    return v


class JobRequest(BaseModel):
    """One request line. ``image`` is the path the worker opens (inside the container for container
    models); ``prompt`` the exact text sent; ``max_new_tokens`` 1-32768. ``instruction``: the core
    instruction (``records.Prompt.core``: the benchmark's words without other models' answer-format
    directives), for the weight-free baselines that read the task itself rather than a model's prompt
    (``None``: the prompt is the instruction); ``absent_possible``: the prompt told the model how to
    decline (:func:`pointfail.prompts.absent_possible`)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    sample_id: str = Field(min_length=1, max_length=MAX_SAMPLE_ID_CHARS)
    image: str = Field(min_length=1, max_length=4096)
    prompt: str = Field(max_length=1 << 20)
    task: Literal["point", "box"] = "point"
    max_new_tokens: int = Field(default=128, ge=1, le=32_768)
    instruction: Optional[str] = Field(default=None, max_length=1 << 20)
    absent_possible: bool = False


class JobResponse(BaseModel):
    """One response line, validated (strict types; unknown keys are errors).

    ``raw_text``: the model's reply, at most :data:`~pointfail.limits.MAX_RESPONSE_RAW_TEXT_CHARS`
    characters, valid Unicode; ``model_input_size``: ``[W, H]`` pixels of the image the model
    received (1-1000000 each) or ``None``; token counts >= 0; ``seconds`` finite and >= 0;
    ``error``: the worker's reason when the sample failed (then ``raw_text`` is ``None``)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    sample_id: str = Field(min_length=1, max_length=MAX_SAMPLE_ID_CHARS)
    raw_text: Optional[str] = Field(default=None, max_length=MAX_RESPONSE_RAW_TEXT_CHARS)
    model_input_size: Optional[list[int]] = Field(default=None, min_length=2, max_length=2)
    prompt_tokens: Optional[int] = Field(default=None, ge=0, le=10_000_000)
    output_tokens: Optional[int] = Field(default=None, ge=0, le=10_000_000)
    seconds: Optional[float] = Field(default=None, ge=0, allow_inf_nan=False)
    error: Optional[str] = Field(default=None, max_length=4000)
    served: Optional[ServedInfo] = None
    """How a served model answered (``kind = "server"`` models only; left out of the line when None)."""

    @field_validator("sample_id", "raw_text", "error")
    @classmethod
    def _unicode(cls, v: Optional[str]) -> Optional[str]:
        return _no_surrogates(v)

    @field_validator("model_input_size")
    @classmethod
    def _size(cls, v: Optional[list[int]]) -> Optional[list[int]]:
        if v is not None and not all(1 <= x <= 1_000_000 for x in v):
            raise ValueError(f"model_input_size {list(v)} is not two sizes in 1..1000000 pixels")
        return v

    def to_line(self) -> bytes:
        """The canonical JSON line (sorted keys, UTF-8, ``\\n``)."""
        from pointfail.records import canonical_json

        d = self.model_dump(mode="json")
        if d.get("served") is None:
            d.pop("served", None)
        return canonical_json(d).encode("utf-8")

    def as_record_response(self):
        """The same fields as a :class:`pointfail.records.Response`."""
        from pointfail.records import Response

        d = self.model_dump(mode="json", exclude={"sample_id"})
        return Response(**d)


def error_response(sample_id: str, reason: str) -> JobResponse:
    """A response that records ``reason`` as the sample's error (reason cut to 4000 characters,
    made printable)."""
    reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
    return JobResponse(sample_id=sample_id[:MAX_SAMPLE_ID_CHARS] or "?", error=reason[:4000])


def write_requests(path: Union[str, Path], requests: Iterable[JobRequest]) -> int:
    """Write ``requests`` as canonical JSONL atomically (temporary file, fsync, rename; a symlink at
    ``path`` is replaced, never followed). Returns the count."""
    from pointfail.records import canonical_json

    reqs = list(requests)
    data = "".join(canonical_json(r.model_dump(mode="json")) for r in reqs).encode("utf-8")
    atomic_write_bytes(path, data)
    return len(reqs)


# ------------------------------------------------------------------------------------------ reading

_SID = re.compile(rb'"sample_id"\s*:\s*"((?:[^"\\\n]|\\.){1,2048})"')
_PEEK = 64 << 10


@dataclass
class ResponseLog:
    """What :func:`read_responses` found.

    ``responses``: the first valid response of each sample (restricted to ``wanted`` when given);
    ``invalid``: ``{sample_id: reason}`` for samples whose only lines were invalid (the reason names
    the line); ``problems``: lines that could not be attributed to a requested sample (not JSON with a
    readable id, unknown id), one explanation each; ``duplicates``: later lines of an answered sample;
    ``cut_tail``: bytes of a final line without ``\\n`` (a write cut short), ignored."""

    responses: dict[str, JobResponse] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    duplicates: int = 0
    cut_tail: int = 0

    @property
    def answered(self) -> set[str]:
        """Samples with a line: a valid response or an explained invalid one (so neither is asked
        again on a resume)."""
        return set(self.responses) | set(self.invalid)

    def response_for(self, sample_id: str) -> Optional[JobResponse]:
        """The sample's valid response; for an invalid one, an error response whose ``error`` says
        why (``invalid response line N: ...``); ``None`` when the file has no line for it."""
        r = self.responses.get(sample_id)
        if r is not None:
            return r
        if sample_id in self.invalid:
            return error_response(sample_id, self.invalid[sample_id])
        return None


def _sid_from(head: bytes, tail: bytes) -> Optional[str]:
    for chunk in (tail, head):
        m = _SID.search(chunk)
        if m:
            try:
                v = json.loads(b'"' + m.group(1) + b'"')
            except (ValueError, RecursionError):
                continue
            if isinstance(v, str) and v:
                return v
    return None


def _short(b: Union[bytes, str], n: int = 80) -> str:
    s = b.decode("utf-8", "backslashreplace") if isinstance(b, bytes) else b
    s = s.encode("unicode_escape").decode("ascii") if not s.isprintable() else s
    return s if len(s) <= n else s[:n] + "..."


def _validate_line(raw: bytes) -> tuple[Optional[str], Optional[JobResponse], Optional[str]]:
    """``(sample_id, response, reason)`` for one complete line (no ``\\n``): a valid response, or the
    id when it can be read and the reason the line is invalid."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return _sid_from(raw[:_PEEK], raw[-_PEEK:]), None, f"not UTF-8 (byte {e.start})"
    try:
        obj = json.loads(text)
    except RecursionError:
        return _sid_from(raw[:_PEEK], raw[-_PEEK:]), None, "JSON nested too deeply"
    except ValueError as e:
        return _sid_from(raw[:_PEEK], raw[-_PEEK:]), None, f"not JSON ({_short(str(e), 120)})"
    if not isinstance(obj, dict):
        return None, None, f"a JSON {type(obj).__name__}, not an object"
    sid = obj.get("sample_id")
    if not isinstance(sid, str) or not sid or len(sid) > MAX_SAMPLE_ID_CHARS:
        return None, None, "no string sample_id"
    try:
        _no_surrogates(sid)
    except ValueError as e:
        return None, None, f"sample_id {e}"
    try:
        return sid, JobResponse.model_validate(obj), None
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        loc = ".".join(str(x) for x in first.get("loc", ())) or "(line)"
        msg = first.get("msg", "invalid").removeprefix("Value error, ")
        more = f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
        return sid, None, f"{loc}: {msg}{more}"
    except (RecursionError, OverflowError, ValueError) as e:  # a value pydantic itself cannot handle
        return sid, None, f"invalid value: {type(e).__name__}"


def read_responses(path: Union[str, Path], wanted: Optional[Iterable[str]] = None, *,
                   max_line_bytes: int = MAX_RESPONSE_LINE_BYTES,
                   max_total_bytes: Optional[int] = None, deadline: Optional[float] = None) -> ResponseLog:
    """Read a responses file that anything may have written (rules in the module docstring).

    Args:
        path: the responses file; a missing file gives an empty log.
        wanted: the requested sample ids; lines for other ids are problems (``None``: every id).
        max_line_bytes: a longer line is invalid (its id is still read from its head or tail).
        max_total_bytes: stop reading after this many bytes (``None``: 2 x ``max_line_bytes`` per
            wanted sample plus 64 MiB, or unlimited without ``wanted``); the rest is one problem.
        deadline: a ``time.monotonic()`` value; reading stops there (checked every 1024 lines), the rest
            is one problem, so a reader's time is bounded as well as its bytes (the runner passes the
            end of the job's wall clock).

    Returns:
        A :class:`ResponseLog`. Linear in the file size; memory bounded by ``max_line_bytes``.

    Raises:
        JobFileError: ``path`` is a symlink, a FIFO, a device or a directory (refused before
            reading, never followed), or cannot be opened.
    """
    p = Path(path)
    want = set(wanted) if wanted is not None else None
    log = ResponseLog()
    if max_total_bytes is None and want is not None:
        max_total_bytes = 2 * max_line_bytes * len(want) + (64 << 20)
    fd = _open_no_follow(p)
    if fd is None:
        return log
    with os.fdopen(fd, "rb") as f:
        _require_regular(f, p)
        os.set_blocking(f.fileno(), True)
        total = 0
        lineno = 0
        while not _stop_reading(f, log, p, total, lineno, max_total_bytes, deadline):
            chunk = f.readline(max_line_bytes + 1)
            if not chunk:
                break
            lineno += 1
            total += len(chunk)
            if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
                extra, ended = _skip_long_line(f, chunk, log, want, p, lineno, max_line_bytes)
                total += extra
                if not ended:
                    break
                continue
            if not chunk.endswith(b"\n"):
                log.cut_tail = len(chunk)  # a final line cut short by a kill
                break
            raw = chunk[:-1]
            if raw.strip():
                _note_line(log, want, p, lineno, raw)
    return log


def _open_no_follow(p: Path) -> Optional[int]:
    """A read-only descriptor of ``p`` opened without following a symlink (non-blocking, so a FIFO
    cannot hold the open); ``None`` when ``p`` does not exist.

    Raises:
        JobFileError: ``p`` is a symlink, or cannot be opened.
    """
    try:
        return os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise JobFileError(f"{p} is a symlink; the runner never follows what a job folder holds "
                               f"(remove {p.parent} to start the job afresh)") from None
        raise JobFileError(f"cannot open {p}: {e.strerror or e}") from None


def _require_regular(f: BinaryIO, p: Path) -> None:
    """Raise :class:`JobFileError` unless the open file ``f`` (of path ``p``) is a regular file."""
    st = os.fstat(f.fileno())
    if not stat.S_ISREG(st.st_mode):
        raise JobFileError(f"{p} is not a regular file (mode {stat.filemode(st.st_mode)}); refused before "
                           f"reading (remove {p.parent} to start the job afresh)")


def _stop_reading(f: BinaryIO, log: ResponseLog, p: Path, total: int, lineno: int,
                  max_total_bytes: Optional[int], deadline: Optional[float]) -> bool:
    """Whether to stop before the next line: ``max_total_bytes`` read, or past ``deadline`` (checked
    every 1024 lines); when anything is left unread, one problem says why reading stopped."""
    if max_total_bytes is not None and total >= max_total_bytes:
        if f.read(1):
            log.problems.append(f"{p}: stopped reading after {total} bytes (limit {max_total_bytes})")
        return True
    if deadline is not None and not lineno % 1024 and time.monotonic() > deadline:
        if f.read(1):
            log.problems.append(f"{p}: stopped reading after {total} bytes (out of time: the job's "
                                "wall clock ran out)")
        return True
    return False


def _skip_long_line(f: BinaryIO, chunk: bytes, log: ResponseLog, want: Optional[set], p: Path, lineno: int,
                    max_line_bytes: int) -> tuple[int, bool]:
    """Skip the rest of a line longer than ``max_line_bytes`` (``chunk``: its first bytes), in 1 MiB
    reads keeping only its tail, and note it invalid under the sample id read from its head or tail;
    a line the file ends inside sets ``log.cut_tail``. Returns (bytes read past ``chunk``, whether the
    line ended)."""
    head, tail, n = chunk[:_PEEK], chunk[-_PEEK:], len(chunk)
    while True:
        more = f.readline(1 << 20)
        if not more:
            log.cut_tail = n
            return n - len(chunk), False
        n += len(more)
        tail = (tail + more)[-_PEEK:]
        if more.endswith(b"\n"):
            break
    sid = _sid_from(head, tail.rstrip(b"\n"))
    _note_invalid(log, want, p, lineno, sid, f"line is {n - 1} bytes, more than the limit of {max_line_bytes}")
    return n - len(chunk), True


def _note_line(log: ResponseLog, want: Optional[set], p: Path, lineno: int, raw: bytes) -> None:
    """Validate one complete line (``raw``, without its newline) and keep its response: the first
    valid one per requested sample id; a response for an id not requested is a problem, a repeat a
    duplicate, an invalid line goes to :func:`_note_invalid`."""
    sid, resp, reason = _validate_line(raw)
    if resp is None:
        _note_invalid(log, want, p, lineno, sid, reason or "invalid")
    elif want is not None and resp.sample_id not in want:
        log.problems.append(f"{p}:{lineno}: response for {_short(resp.sample_id)!r}, which was not requested")
    elif resp.sample_id in log.responses:
        log.duplicates += 1
    else:
        log.responses[resp.sample_id] = resp
        log.invalid.pop(resp.sample_id, None)


def _note_invalid(log: ResponseLog, want: Optional[set], p: Path, lineno: int, sid: Optional[str],
                  reason: str) -> None:
    msg = f"invalid response line {lineno} of {p.name}: {reason}"
    if sid is None:
        log.problems.append(f"{p}:{lineno}: {reason}; no sample_id could be read")
    elif want is not None and sid not in want:
        log.problems.append(f"{p}:{lineno}: {reason} (for {_short(sid)!r}, which was not requested)")
    elif sid in log.responses:
        log.duplicates += 1
    else:
        log.invalid.setdefault(sid, msg)


# ------------------------------------------------------------------------------------------ locking


class JobLock:
    """An exclusive, non-blocking ``flock`` on ``path`` (created ``O_NOFOLLOW``; a symlink there is
    refused), held while the context is open. Works across processes and containers that see the same
    file. Raises :class:`JobBusy` when someone else holds it."""

    def __init__(self, path: Union[str, Path], what: str = "job"):
        self.path = Path(path)
        self.what = what
        self.fd: Optional[int] = None

    def __enter__(self) -> "JobLock":
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise JobFileError(f"{self.path} is a symlink; refused") from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise JobBusy(f"another process holds the {self.what} lock {self.path}; one {self.what} has one "
                          "worker at a time") from None
        self.fd = fd
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class ResponseWriter:
    """The one writer of a responses file: opens it for appending (``O_NOFOLLOW``, regular files only),
    takes an exclusive ``flock`` for its whole life (a second writer gets :class:`JobBusy`), cuts a
    final line left without ``\\n`` by a kill, and appends one canonical line per :meth:`write`,
    flushed and fsynced. Use as a context manager.

    ``log`` (after entering) is the :func:`read_responses` view of the file as it was, so the caller
    skips samples already answered."""

    def __init__(self, path: Union[str, Path], wanted: Optional[Iterable[str]] = None):
        self.path = Path(path)
        self.wanted = set(wanted) if wanted is not None else None
        self.fd: Optional[int] = None
        self.log = ResponseLog()

    def __enter__(self) -> "ResponseWriter":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise JobFileError(f"{self.path} is a symlink; refused (never followed)") from None
            raise JobFileError(f"cannot open {self.path}: {e.strerror or e}") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise JobFileError(f"{self.path} is not a regular file; refused")
        os.set_blocking(fd, True)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise JobBusy(f"another worker is writing {self.path}; one job has one worker at a time") from None
        self.fd = fd
        self.log = read_responses(self.path, self.wanted)
        if self.log.cut_tail:
            size = os.fstat(fd).st_size
            os.ftruncate(fd, size - self.log.cut_tail)
            os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_END)
        return self

    def write(self, response: Union[JobResponse, dict]) -> JobResponse:
        """Validate and append one response; a response that fails validation (e.g. a reply that is
        not valid Unicode, or longer than the cap) is written as an error response saying why.
        Returns what was written."""
        if self.fd is None:
            raise RuntimeError("ResponseWriter used outside its context")
        if isinstance(response, dict):
            from pointfail.records import canonical_json

            given = response.get("sample_id")
            sid = given if isinstance(given, str) else "?"
            try:  # validated exactly as the reader will read it back: as JSON
                response = JobResponse.model_validate_json(canonical_json(response).encode("utf-8", "strict"))
            except ValidationError as e:
                first = e.errors(include_url=False)[0]
                loc = ".".join(str(x) for x in first.get("loc", ()))
                response = error_response(sid, f"worker produced an invalid response: {loc}: {first.get('msg')}")
            except (TypeError, ValueError) as e:  # not JSON-encodable, NaN, lone surrogate
                response = error_response(sid, f"worker produced an invalid response: {type(e).__name__}: "
                                               f"{str(e)[:200]}")
        line = response.to_line()
        view = memoryview(line)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        os.fsync(self.fd)
        return response

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

