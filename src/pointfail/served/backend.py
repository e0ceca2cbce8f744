"""The served backend: answer a requests JSONL through an OpenAI-compatible server, appending responses.

Formats are the worker's (``docs/architecture.md``, "Worker, backends, runner"): requests
``{"sample_id", "image", "prompt", "task", "max_new_tokens"}`` (``image`` a path on this machine),
responses ``{"sample_id", "raw_text", "model_input_size", "prompt_tokens", "output_tokens", "seconds",
"error", "served"}``, one canonical line per sample, flushed and fsynced as each sample finishes.
``served`` is :class:`pointfail.records.ServedInfo` (sizes sent and received, finish reason, refusal,
requests made, transport failures, structured output, preset).

Per sample (:func:`run_served`):

1. The image is opened and decoded (RGB); :func:`pointfail.served.inputs.plan_input` decides the size
   to send and the model-input size to record (the frame the server saw). A resize is done by the
   client with Pillow's bicubic filter (the Qwen2-VL image processor's ``resample=3``).
2. One chat-completions request (:mod:`pointfail.served.client`): the image as a PNG part, then the
   prompt; ``max_tokens`` = the request's ``max_new_tokens`` (or ``options.max_tokens``),
   ``temperature`` (0 by default), ``seed`` when set, ``response_format`` when structured.
3. Transport failures (429, 408/409, 5xx, timeouts, dropped connections, malformed bodies) are retried
   with backoff (:mod:`pointfail.served.transport`), counted in ``served.transport_failures``. A reply is
   final: refusals and content-filtered replies are recorded as such (``served.refusal``,
   ``finish_reason``; ``raw_text`` is the content, usually empty, so the sample scores
   ``no_prediction``) and never retried, as PointerBench did. Token usage is recorded.
4. Failures that a rerun would repeat become error responses (``error``: an unreadable image, HTTP 4xx
   such as an unknown model or a rejected request). A sample whose transport retries run out is *not*
   written: the server is marked down, samples not yet sent are not sent, retries in flight stop, and
   :func:`run_served` raises :class:`ServerUnavailable` naming what is left; a rerun answers exactly those.

Resumable: samples already in the responses file (answers and error responses alike) are skipped; a
final line cut short by a kill is removed first; so a run killed at any point (kill -9) and run again
answers every sample exactly once. At most ``options.concurrency`` samples are in flight
(``asyncio.Semaphore``); a tqdm bar on stderr shows samples done, rate and ETA.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from pointfail.records import ServedInfo
from pointfail.served.transport import ServerDown

if TYPE_CHECKING:
    from pointfail.jobs import ResponseWriter
    from pointfail.study import ServerModel

log = logging.getLogger("pointfail.served")


class ServerUnavailable(RuntimeError):
    """Transport retries ran out: the server is down. ``pending`` lists the sample ids left without a
    response (a rerun answers them); every response written before stays."""

    def __init__(self, message: str, pending: list[str]):
        super().__init__(message)
        self.pending = pending


@dataclass
class ServedSummary:
    """What one run did: ``total`` requests, ``skipped`` (answered before), ``answered`` (new text
    responses), ``refused`` (of those, refused or filtered), ``errors`` (new error responses),
    ``pending`` (left for a rerun: server down), ``requests`` (HTTP requests sent),
    ``transport_failures``, ``seconds`` of wall time."""

    total: int = 0
    skipped: int = 0
    answered: int = 0
    refused: int = 0
    errors: int = 0
    pending: int = 0
    requests: int = 0
    transport_failures: int = 0
    seconds: float = 0.0
    error_reasons: dict[str, str] = field(default_factory=dict)


def _open_rgb(path: Optional[str]) -> Any:
    from pointfail.worker import open_image

    return open_image(path)


class _Run:
    def __init__(self, model: "ServerModel", writer: "ResponseWriter", summary: ServedSummary, bar: Any):
        from pointfail.families import get_family

        self.model = model
        self.family = get_family(model.family)
        self.opts = model.options.for_family(self.family.name)
        self.writer = writer
        self.written: set[str] = set()
        self.summary = summary
        self.bar = bar
        self.down: Optional[str] = None
        self.client: Any = None
        self.sem = asyncio.Semaphore(self.opts.concurrency)

    def write(self, line: dict[str, Any]) -> None:
        written = self.writer.write(line)  # validated as the reader will read it; fsynced
        self.written.add(written.sample_id)
        if written.error and not line.get("error"):  # a reply the job format refuses (e.g. over the cap)
            self.summary.answered -= 1
            self.summary.errors += 1
            self.summary.error_reasons[written.sample_id] = written.error
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(errors=self.summary.errors, retries=self.summary.transport_failures, refresh=False)

    async def sample(self, req: Any) -> None:
        async with self.sem:
            if self.down is not None:
                self.summary.pending += 1
                return
            t0 = time.perf_counter()
            try:
                line = await self.answer(req, t0)
            except ServerDown:
                self.summary.pending += 1
                return
            self.write(line)

    async def answer(self, req: Any, t0: float) -> dict[str, Any]:
        from PIL import Image

        from pointfail.served.client import chat_once, messages, png_bytes
        from pointfail.served.inputs import plan_input
        from pointfail.served.options import response_format
        from pointfail.served.transport import describe, is_retryable, retrying

        opts = self.opts
        info = ServedInfo(response_format=None, preset=opts.preset, system_prompt=bool(opts.system_prompt), requests=0)

        def error(reason: str) -> dict[str, Any]:
            self.summary.errors += 1
            self.summary.error_reasons[req.sample_id] = reason
            return _line(req.sample_id, None, None, time.perf_counter() - t0, reason, info)

        try:
            if req.prompt is None:
                raise ValueError("request has no prompt")
            image = await asyncio.to_thread(_open_rgb, req.image)
            plan = plan_input(self.family, image.size, opts)
        except ValueError as e:
            return error(str(e))
        info.sent_size = list(plan.send_size)
        info.received_size = list(plan.received_size) if plan.received_size else None
        info.input_size_source = plan.source  # type: ignore[assignment]
        info.input_size_note = plan.note
        if tuple(plan.send_size) != tuple(image.size):
            image = image.resize(plan.send_size, Image.Resampling.BICUBIC)
        png = await asyncio.to_thread(png_bytes, image)
        text = req.prompt
        system = opts.system_prompt
        if system and text.startswith(system):  # a family prompt that embeds the system prompt
            text = text[len(system):].lstrip("\n")
        create: dict[str, Any] = {"model": self.model.model, "messages": messages(png, text, system),
                                  "max_tokens": int(opts.max_tokens or req.max_new_tokens),
                                  "temperature": opts.temperature}
        if opts.seed is not None:
            create["seed"] = opts.seed
        if opts.structured:
            create["response_format"] = response_format(self.family.name, req.task)
            info.response_format = "json_schema:" + create["response_format"]["json_schema"]["name"]
        del png, image
        try:
            async for attempt in retrying(is_retryable, retries=opts.retries,
                                          backoff_initial=opts.backoff_initial, backoff_max=opts.backoff_max,
                                          stop_when=lambda: self.down is not None):
                with attempt:
                    if self.down is not None and info.requests > 0:
                        raise ServerDown(self.down)
                    info.requests += 1
                    self.summary.requests += 1
                    try:
                        reply = await chat_once(self.client, **create)
                    except Exception as e:
                        if is_retryable(e):
                            info.transport_failures += 1
                            self.summary.transport_failures += 1
                        raise
        except ServerDown:
            raise
        except Exception as e:
            reason = describe(e)  # the server's own message kept, the bound that fired named
            if is_retryable(e):
                if self.down is None:
                    self.down = (f"server {self.model.base_url} unavailable after {info.requests} requests "
                                 f"({reason})")
                    log.error("%s", self.down)
                raise ServerDown(self.down) from None
            return error(f"server: {reason}")
        info.model = reply.model
        info.flags = list(reply.flags)
        info.finish_reason = reply.finish_reason
        info.refusal = reply.refusal
        self.summary.answered += 1
        if reply.filtered:
            self.summary.refused += 1
        return _line(req.sample_id, reply.text, plan.model_input_size, time.perf_counter() - t0, None, info,
                     reply.prompt_tokens, reply.output_tokens)


def _line(sample_id: str, text: Optional[str], mis: Optional[tuple[int, int]], seconds: float, error: Optional[str],
          info: ServedInfo, prompt_tokens: Optional[int] = None, output_tokens: Optional[int] = None) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "raw_text": None if error else text,
        "model_input_size": None if error or mis is None else [int(v) for v in mis],
        "prompt_tokens": None if error else prompt_tokens,
        "output_tokens": None if error else output_tokens,
        "seconds": round(float(seconds), 6),
        "error": error,
        "served": info.model_dump(mode="json"),
    }


async def arun_served(model: "ServerModel", requests: str | Path, responses: str | Path, *,
                      progress: bool = False, default_max_new_tokens: int = 128) -> ServedSummary:
    """Async form of :func:`run_served` (same arguments, result and errors)."""
    from pointfail.jobs import JobBusy, JobFileError, ResponseWriter
    from pointfail.served.client import api_key, async_client
    from pointfail.worker import WorkerError, read_requests

    base_url = model.base_url
    if not base_url:
        raise ValueError(f"model {model.name}: no base_url (a server the runner starts is given its address "
                         "by the runner)")
    t0 = time.perf_counter()
    reqs = read_requests(requests, default_max_new_tokens)
    try:
        writer = ResponseWriter(responses).__enter__()
    except (JobFileError, JobBusy) as e:
        raise WorkerError(str(e)) from None
    try:
        if writer.log.cut_tail:
            log.warning("responses file %s: removed a final line cut short (%d bytes)", responses,
                        writer.log.cut_tail)
        done = writer.log.answered
        todo = [r for r in reqs if r.sample_id not in done]
        summary = ServedSummary(total=len(reqs), skipped=len(reqs) - len(todo))
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(reqs), initial=summary.skipped, unit="sample", desc=f"served {model.model}",
                       dynamic_ncols=True)
        run = _Run(model, writer, summary, bar)
        run.client = async_client(base_url, api_key(model.api_key_env), timeout_s=run.opts.timeout_s,
                                  concurrency=run.opts.concurrency, max_body_bytes=run.opts.max_body_bytes)
        try:
            await asyncio.gather(*(run.sample(r) for r in todo))
        finally:
            await run.client.close()
            if bar is not None:
                bar.close()
            summary.seconds = time.perf_counter() - t0
    finally:
        writer.__exit__(None, None, None)
    if run.down is not None:
        pending = sorted({r.sample_id for r in todo} - run.written)
        raise ServerUnavailable(f"{run.down}; {len(pending)} of {len(reqs)} samples have no response yet "
                                f"(run again to answer them)", pending)
    return summary


def run_served(model: "ServerModel", requests: str | Path, responses: str | Path, *, progress: bool = False,
               default_max_new_tokens: int = 128) -> ServedSummary:
    """Answer every request not yet in ``responses`` through ``model``'s server (rules in the module
    docstring).

    Args:
        model: the study's :class:`pointfail.study.ServerModel` (``base_url``, ``model``, ``family``,
            ``api_key_env``, validated ``options``); a server the runner started is given as a copy
            with its ``base_url`` filled in.
        requests: requests JSONL (image paths readable here), read with
            :func:`pointfail.worker.read_requests`.
        responses: responses JSONL, appended through :class:`pointfail.jobs.ResponseWriter` (created
            when missing; held under its lock for the whole run, so one job has one writer).
        progress: show a tqdm bar on stderr.
        default_max_new_tokens: for requests without ``max_new_tokens``.

    Returns:
        A :class:`ServedSummary`.

    Raises:
        ServerUnavailable: transport retries ran out (responses written so far are kept).
        pointfail.worker.WorkerError: an invalid requests file; a responses file that is a symlink or
            not a regular file, or that another writer holds.
        ValueError: ``model`` has no ``base_url``, options that do not fit the family (preset,
            structured output), or an API key variable that is not set.
    """
    return asyncio.run(arun_served(model, requests, responses, progress=progress,
                                   default_max_new_tokens=default_max_new_tokens))
