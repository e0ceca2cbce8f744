"""The worker: runs one model over a requests JSONL and appends a responses JSONL (runs inside a family image).

Command line (the contract in ``docs/architecture.md``)::

    python -m pointfail.running.worker --family F --weights DIR --requests FILE --responses FILE
        [--requests FILE --responses FILE ...] [--batch-size N] [--device auto|cpu|cuda]
        [--max-new-tokens N] [--revision SHA]

Several ``--requests``/``--responses`` pairs are answered in order by one process with one model
load (a shard's cells: one container per model runs all of its cells); when every request of every
pair is already answered, no model is loaded at all.

Requests, one JSON object per line (written by the runner)::

    {"sample_id": str, "image": "<path>", "prompt": str, "task": "point"|"box", "max_new_tokens": int,
     "instruction": str | null, "absent_possible": bool}

(``instruction``, the core instruction, and ``absent_possible`` are for the weight-free baselines:
:class:`pointfail.running.jobs.JobRequest`.)

Responses, appended one per sample and flushed (``fsync``) per line through
:class:`pointfail.running.jobs.ResponseWriter`::

    {"sample_id", "raw_text", "model_input_size": [W, H] | null, "prompt_tokens", "output_tokens",
     "seconds", "error": null | "<reason>"}

Behaviour (issue 4, "The worker"; ``shared/DESIGN.md``, "Containers"):

* Offline: the worker sets ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` before any model import.
* Resume: sample ids already present in the responses file (answers and error responses alike) are
  skipped, so a killed run that is started again answers every sample exactly once. A final line cut
  short by a kill (no ``\\n``) is removed before appending.
* One worker per job: the worker holds an exclusive lock on the responses file
  (:class:`pointfail.running.jobs.ResponseWriter`) for its whole run; a second worker on the same file exits
  with code 2 at once instead of answering every sample a second time.
* Every response is validated before it is written (:class:`pointfail.running.jobs.JobResponse`): a reply
  that is not valid Unicode or longer than the cap is written as an error response saying so.
* Greedy generation in batches of ``--batch-size`` (consecutive requests with the same
  ``max_new_tokens``); the backend pads on the left where the architecture needs it.
* A sample that fails (unreadable image, out of memory, any exception) gets an error response with
  the reason and the worker goes on. A failed batch is retried one sample at a time, so one bad sample
  loses no other. ``seconds`` is the batch's wall time divided by its size.
* Exit code 0 when every request has a response (errors included); 2 for an infrastructure failure
  (bad arguments, unreadable or invalid requests file, unknown family, model cannot be loaded).
* Log: one line per batch on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pointfail.running.jobs import JobBusy, JobFileError, ResponseWriter
from pointfail.records import RecordError, iter_jsonl

log = logging.getLogger("pointfail.running.worker")

EXIT_OK = 0
EXIT_INFRA = 2
DEFAULT_MAX_NEW_TOKENS = 128


class WorkerError(RuntimeError):
    """An infrastructure failure: the worker cannot run at all (exit code 2)."""


@dataclass
class Request:
    """One parsed request line. ``line`` is its 1-based line number in the requests file."""

    sample_id: str
    image: Optional[str]
    prompt: Optional[str]
    task: str
    max_new_tokens: int
    line: int
    instruction: Optional[str] = None
    absent_possible: bool = False


@dataclass
class WorkerSummary:
    """What one worker run did: ``total`` requests (unique ids), ``skipped`` (already answered),
    ``answered`` (new responses with text), ``errors`` (new error responses), ``batches`` run,
    ``seconds`` of wall time spent generating."""

    total: int = 0
    skipped: int = 0
    answered: int = 0
    errors: int = 0
    batches: int = 0
    seconds: float = 0.0
    error_reasons: dict[str, str] = field(default_factory=dict)


def set_offline() -> None:
    """Force the Hugging Face libraries offline (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``):
    weights come only from the mounted directory. Called before any transformers import."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def read_requests(path: str | Path, default_max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS) -> list[Request]:
    """Read and validate the requests file; duplicate sample ids keep the first line.

    Raises:
        WorkerError: the file is unreadable, a line is not JSON or not an object, or a line has no
            string ``sample_id`` (naming file and line). Missing ``image``/``prompt`` are not raised
            here: such a sample gets an error response.
    """
    reqs: list[Request] = []
    seen: set[str] = set()
    try:
        rows = list(iter_jsonl(path))
    except OSError as e:
        raise WorkerError(f"cannot read requests file {path}: {e}") from None
    except RecordError as e:
        raise WorkerError(f"invalid requests file: {e}") from None
    for line, obj in rows:
        if not isinstance(obj, dict) or not isinstance(obj.get("sample_id"), str) or not obj["sample_id"]:
            raise WorkerError(f"{path}:{line}: request without a string sample_id")
        sid = obj["sample_id"]
        if sid in seen:
            log.warning("%s:%d: duplicate sample_id %r ignored", path, line, sid)
            continue
        seen.add(sid)
        mnt = obj.get("max_new_tokens")
        if not isinstance(mnt, int) or isinstance(mnt, bool) or mnt <= 0:
            mnt = default_max_new_tokens
        reqs.append(Request(
            sample_id=sid,
            image=obj.get("image") if isinstance(obj.get("image"), str) else None,
            prompt=obj.get("prompt") if isinstance(obj.get("prompt"), str) else None,
            task="box" if obj.get("task") == "box" else "point",
            max_new_tokens=mnt,
            line=line,
            instruction=obj.get("instruction") if isinstance(obj.get("instruction"), str) else None,
            absent_possible=obj.get("absent_possible") is True,
        ))
    return reqs


def answered_ids(path: str | Path) -> set[str]:
    """Sample ids already in the responses file (empty set if it does not exist): valid responses and
    explained invalid lines alike (:func:`pointfail.running.jobs.read_responses`). A final line cut short by a
    kill (no trailing ``\\n``) is truncated away first, under the writer's lock, so the next append
    starts clean.

    Raises:
        WorkerError: the responses file is a symlink or not a regular file, or another worker holds it.
    """
    if not Path(path).exists() and not Path(path).is_symlink():
        return set()
    try:
        with ResponseWriter(path) as w:
            if w.log.cut_tail:
                log.warning("responses file %s: removed a final line cut short (%d bytes)", path, w.log.cut_tail)
            return w.log.answered
    except (JobFileError, JobBusy) as e:
        raise WorkerError(str(e)) from None


def resolve_backend_module(family: str) -> str:
    """The backend module of a family: ``pointfail.families.get_family(family).backend``.

    Raises:
        WorkerError: an unknown family, or a parse-only one (no backend).
    """
    from pointfail.families import get_family

    try:
        fam = get_family(family)
    except KeyError as e:
        raise WorkerError(f"no backend for family {family!r}: {e}") from None
    if fam.backend is None:
        raise WorkerError(f"family {family!r} has no backend (parse-only family)")
    return fam.backend


def load_backend(family: str, weights: Optional[str], device: str, **options: Any):
    """Import the family's backend module and call its ``load(weights, device, **options)``.

    Raises:
        WorkerError: no backend, or loading failed (the message carries the cause).
    """
    module_name = resolve_backend_module(family)
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # a missing dependency inside the image is an infrastructure failure
        raise WorkerError(f"cannot import backend {module_name}: {type(e).__name__}: {e}") from e
    try:
        return module.load(weights, device, **options)
    except Exception as e:
        raise WorkerError(f"cannot load model for family {family!r} from {weights}: {type(e).__name__}: {e}") from e


def open_image(path: Optional[str]):
    """Open, fully decode and convert an image to RGB. Raises ``ValueError`` with the reason."""
    from PIL import Image

    if not path:
        raise ValueError("request has no image path")
    from pointfail.limits import MAX_IMAGE_BYTES
    from pointfail.safeio import open_binary

    try:
        with open_binary(path, max_bytes=MAX_IMAGE_BYTES) as f, Image.open(f) as im:
            im.load()
            return im.convert("RGB")
    except FileNotFoundError:
        raise ValueError(f"image not found: {path}") from None
    except Exception as e:
        raise ValueError(f"cannot read image {path}: {type(e).__name__}: {e}") from None


def _reason(e: BaseException) -> str:
    kind = type(e).__name__
    if "OutOfMemory" in kind or isinstance(e, MemoryError):
        return f"out of memory: {kind}: {e}"[:2000]
    return f"{kind}: {e}"[:2000]


def _recover(backend: Any) -> None:
    fn = getattr(backend, "recover", None)
    if callable(fn):
        try:
            fn()
        except Exception as e:  # recovery is best effort; the next sample reports its own error
            log.warning("backend recover() failed: %s", e)


def _response(sample_id: str, res: Optional[dict[str, Any]], seconds: float, error: Optional[str]) -> dict[str, Any]:
    res = res or {}
    return {
        "sample_id": sample_id,
        "raw_text": None if error else res.get("raw_text"),
        "model_input_size": None if error else res.get("model_input_size"),
        "prompt_tokens": None if error else res.get("prompt_tokens"),
        "output_tokens": None if error else res.get("output_tokens"),
        "seconds": round(float(seconds), 6),
        "error": error,
    }


def _batches(reqs: list[Request], size: int):
    batch: list[Request] = []
    for r in reqs:
        if batch and (len(batch) >= size or r.max_new_tokens != batch[0].max_new_tokens):
            yield batch
            batch = []
        batch.append(r)
    if batch:
        yield batch


def run_worker(backend: Any, requests: str | Path, responses: str | Path, *, batch_size: int = 1,
               default_max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS) -> WorkerSummary:
    """Answer every request not yet in ``responses`` with an already loaded ``backend``.

    This is the in-process entry point (tests, ``bench/``); :func:`main` wraps it for the command line.
    Returns a :class:`WorkerSummary`. Raises :class:`WorkerError` for an invalid requests or
    responses file (a symlink or FIFO in its place, another worker holding it); per-sample failures
    become error responses, never exceptions.
    """
    if batch_size < 1:
        raise WorkerError(f"batch size must be >= 1, got {batch_size}")
    reqs = read_requests(requests, default_max_new_tokens)
    try:
        with ResponseWriter(responses) as writer:
            if writer.log.cut_tail:
                log.warning("responses file %s: removed a final line cut short (%d bytes)", responses,
                            writer.log.cut_tail)
            return _answer(backend, reqs, writer, writer.log.answered, batch_size)
    except (JobFileError, JobBusy) as e:
        raise WorkerError(str(e)) from None


class _Answering:
    """One pass of a backend over requests: writes each response and counts it in ``summary``."""

    def __init__(self, backend: Any, writer: ResponseWriter, summary: WorkerSummary) -> None:
        self.backend, self.writer, self.summary = backend, writer, summary

    def write(self, sid: str, res: Optional[dict[str, Any]], seconds: float, error: Optional[str]) -> None:
        """Append one response; one the writer refuses (``written.error``) counts as an error."""
        written = self.writer.write(_response(sid, res, seconds, error))
        if written.error:
            self.summary.errors += 1
            self.summary.error_reasons[sid] = written.error
        else:
            self.summary.answered += 1

    def one_by_one(self, items: list[Any]) -> None:
        """Each item in its own ``generate`` call; a failure becomes that sample's error response."""
        for item in items:
            t0 = time.perf_counter()
            try:
                out = self.backend.generate([item])
                if len(out) != 1:
                    raise RuntimeError(f"backend returned {len(out)} results for 1 item")
                self.write(item.sample_id, out[0], time.perf_counter() - t0, None)
            except Exception as e:
                _recover(self.backend)
                self.write(item.sample_id, None, time.perf_counter() - t0, _reason(e))

    def work_items(self, batch: list[Request]) -> list[Any]:
        """The batch's work items; a request without a prompt or with an unreadable image is answered
        with its error response here, before the batch runs."""
        from pointfail.running.backends.base import WorkItem

        items: list[WorkItem] = []
        for r in batch:
            try:
                if r.prompt is None:
                    raise ValueError("request has no prompt")
                image = open_image(r.image)
            except ValueError as e:
                self.write(r.sample_id, None, 0.0, str(e))
                continue
            items.append(WorkItem(sample_id=r.sample_id, image=image, image_path=r.image or "", prompt=r.prompt,
                                  task=r.task, max_new_tokens=r.max_new_tokens, instruction=r.instruction,
                                  absent_possible=r.absent_possible))
        return items

    def batch(self, items: list[Any], t0: float, n_batch: int) -> str:
        """One ``generate`` call for ``items`` (started at ``t0``), each result timed as an equal share;
        when it fails, a single item gets its error response and several are retried one at a time.
        Returns the mode: ``"batched"`` or ``"one-by-one"``."""
        try:
            outs = self.backend.generate(items)
            if len(outs) != len(items):
                raise RuntimeError(f"backend returned {len(outs)} results for {len(items)} items")
        except Exception as e:
            _recover(self.backend)
            if len(items) == 1:
                self.write(items[0].sample_id, None, time.perf_counter() - t0, _reason(e))
                return "batched"
            log.warning("batch %d failed (%s); retrying its %d samples one at a time", n_batch,
                        _reason(e)[:200], len(items))
            self.one_by_one(items)
            return "one-by-one"
        each = (time.perf_counter() - t0) / len(items)
        for item, out in zip(items, outs):
            self.write(item.sample_id, out, each, None)
        return "batched"


def _answer(backend: Any, reqs: list[Request], writer: ResponseWriter, done: set[str],
            batch_size: int) -> WorkerSummary:
    summary = WorkerSummary(total=len(reqs))
    todo = [r for r in reqs if r.sample_id not in done]
    summary.skipped = len(reqs) - len(todo)
    if summary.skipped:
        log.info("resuming: %d of %d samples already answered", summary.skipped, len(reqs))
    answering = _Answering(backend, writer, summary)
    n_batches = 0
    for batch in _batches(todo, batch_size):
        n_batches += 1
        t0 = time.perf_counter()
        items = answering.work_items(batch)
        mode = answering.batch(items, t0, n_batches) if items else "batched"
        dt = time.perf_counter() - t0
        summary.seconds += dt
        done_n = summary.skipped + summary.answered + summary.errors
        log.info("batch %d: %d samples (%s) in %.2f s; %d/%d done, %d errors", n_batches, len(batch), mode, dt,
                 done_n, summary.total, summary.errors)
    summary.batches = n_batches
    return summary


def build_parser() -> argparse.ArgumentParser:
    """The worker's argument parser (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m pointfail.running.worker",
                                description="Run one model family over a requests JSONL, appending responses.")
    p.add_argument("--family", required=True, help="family name (pointfail families)")
    p.add_argument("--weights", default=None, help="weights directory (read-only; not needed for center/ocr)")
    p.add_argument("--requests", required=True, action="append",
                   help="requests JSONL; repeat --requests/--responses for several pairs (one model load)")
    p.add_argument("--responses", required=True, action="append",
                   help="responses JSONL (appended, resumed); one per --requests, in the same order")
    p.add_argument("--batch-size", type=int, default=1, help="samples per generate() call (default 1)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                   help="auto: cuda when available, else cpu")
    p.add_argument("--max-new-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS,
                   help="used for requests that carry no max_new_tokens (default %(default)s)")
    p.add_argument("--revision", default=None,
                   help="pinned model revision (40-hex commit); required for remote-code families (molmo)")
    p.add_argument("--weights-manifest", default=None,
                   help="sha256 manifest of the weights folder taken at download time; remote-code families "
                        "(molmo) load only when the folder matches it")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    """Command-line entry point. Returns 0 when every request has a response, 2 on an infrastructure
    failure (the reason is logged to stderr in one line; a full disk or a read-only job folder names the
    file, :func:`pointfail.safeio.os_error_line`, and every response already written stays: each line is
    written whole and fsynced by :class:`pointfail.running.jobs.ResponseWriter`)."""
    set_offline()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    try:
        if args.batch_size < 1:
            raise WorkerError(f"--batch-size must be >= 1, got {args.batch_size}")
        if len(args.requests) != len(args.responses):
            raise WorkerError(f"{len(args.requests)} --requests but {len(args.responses)} --responses: give them "
                              "in pairs")
        pairs = list(zip(args.requests, args.responses))
        todo = 0
        for req, resp in pairs:  # fail fast, before loading a model; no model load when all is answered
            ids = {r.sample_id for r in read_requests(req, args.max_new_tokens)}
            todo += len(ids - answered_ids(resp))
        if not todo:
            log.info("every request of %d pair(s) is already answered; no model loaded", len(pairs))
            return EXIT_OK
        options = {"revision": args.revision} if args.revision else {}
        if args.weights_manifest:
            options["weights_manifest"] = args.weights_manifest
        t0 = time.perf_counter()
        backend = load_backend(args.family, args.weights, args.device, **options)
        log.info("loaded family %s (%s) in %.1f s", args.family, getattr(backend, "name", "?"), time.perf_counter() - t0)
        for req, resp in pairs:
            s = run_worker(backend, req, resp, batch_size=args.batch_size,
                           default_max_new_tokens=args.max_new_tokens)
            log.info("finished %s: %d requests, %d skipped, %d answered, %d errors, %d batches, %.1f s",
                     req, s.total, s.skipped, s.answered, s.errors, s.batches, s.seconds)
    except WorkerError as e:
        log.error("infrastructure failure: %s", e)
        return EXIT_INFRA
    except OSError as e:  # disk full, read-only job folder: one line naming the file; lines already written stay
        from pointfail.safeio import os_error_line

        log.error("infrastructure failure: %s", os_error_line(e))
        return EXIT_INFRA
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
