"""The served backend: answer a requests JSONL through an OpenAI-compatible server, appending responses.

Formats are the worker's (``docs/architecture.md``, "Worker, backends, runner"): requests
``{"sample_id", "image", "prompt", "task", "max_new_tokens"}`` (``image`` a path on this machine),
responses ``{"sample_id", "raw_text", "model_input_size", "prompt_tokens", "output_tokens", "seconds",
"error", "served"}``, one canonical line per sample, flushed and fsynced as each sample finishes.
``served`` is :class:`pointfail.records.ServedInfo` (sizes sent and received, finish reason, refusal,
requests made, transport failures, structured output, preset).

Per sample (:func:`run_served`):

1. The image file is read once and its header opened (size, format);
   :func:`pointfail.running.served.inputs.plan_input` decides the size to send and the model-input size
   to record (the frame the server saw). With ``resize = "auto"`` (default) a PNG or JPEG is sent as
   its own bytes (no decode, no re-encode) and the server's ``smart_resize`` is recorded, confirmed per
   size by the frame check (:class:`_Frame`); where a resize is needed (``resize = "client"``, another
   format, a server that reports no usage) it is done once per image by the client with Pillow's
   bicubic filter (the Qwen2-VL image processor's ``resample=3``) and sent as PNG. Reading, resizing,
   encoding and base64 run in a worker thread, once per image (:class:`_Images`).
2. One chat-completions request (:mod:`pointfail.running.served.client`): the image as a data-URL part,
   then the prompt; ``max_tokens`` = the request's ``max_new_tokens`` (or ``options.max_tokens``),
   ``temperature`` (0 by default), ``seed`` when set, ``response_format`` when structured.
3. Transport failures (429, 408/409, 5xx, timeouts, dropped connections, malformed bodies) are retried
   with backoff (:mod:`pointfail.running.served.transport`), counted in ``served.transport_failures``. A reply is
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
from pointfail.running.served.transport import ServerDown, server_message

if TYPE_CHECKING:
    from pointfail.running.jobs import ResponseWriter
    from pointfail.inputs.study import ServerModel

log = logging.getLogger("pointfail.running.served")


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
    server: dict[str, Any] = field(default_factory=dict)
    frames: dict[str, dict[str, Any]] = field(default_factory=dict)
    retried_errors: int = 0


class ServerCheckFailed(ServerUnavailable):
    """The server was checked before (or while) answering and cannot be used as declared: it cannot be
    reached, it does not list the model name, or the image size it used differs from the declared one in
    a way its token count does not settle. Raised before any sample is sent (pre-flight) or at the
    first image of a size (the frame check); nothing already written is lost, and the message says what
    to change. ``pending``: the samples left without a response."""


CONTEXT_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
"""Keys of a ``/v1/models`` entry that give the model's context length in tokens (vLLM and SGLang:
``max_model_len``; other servers and hosted APIs the other spellings); llama.cpp gives
``meta.n_ctx_train``."""


async def preflight(client: Any, base_url: str, model_name: str, *, timeout_s: float = 10.0) -> dict[str, Any]:
    """``GET /v1/models`` once, before the first sample: the server must answer and list
    ``model_name``. No retries, at most ``timeout_s`` seconds.

    Returns:
        ``{"base_url", "model", "listed": [names, at most 100], "context_length": int | None,
        "entry": {scalar fields of the model's entry}, "checked": bool}``; ``checked`` is ``False`` when
        the server has no ``/v1/models`` (HTTP 404/405: the name is then not checked, said so in the log).

    Raises:
        ServerCheckFailed: the connection is refused, the host does not answer in ``timeout_s``, the
            server answers with another HTTP error (its message kept), the answer is not a model list,
            or the list does not have ``model_name`` (the message lists the names it has).
    """
    import openai

    try:
        page = await client.with_options(timeout=timeout_s).models.list()
        entries = list(getattr(page, "data", None) or [])
        names = [str(getattr(m, "id", "")) for m in entries]
    except openai.APIConnectionError as e:
        why = "no answer in %g s" % timeout_s if isinstance(e, openai.APITimeoutError) else \
            f"{type(e.__cause__ or e).__name__}: {e.__cause__ or e}"
        raise ServerCheckFailed(f"cannot reach the server at {base_url} ({why}): is it running, and is this "
                                "its API root (e.g. http://127.0.0.1:8000/v1)?", []) from None
    except openai.APIStatusError as e:
        if e.status_code in (404, 405):
            log.warning("%s has no /models (HTTP %d): the model name %r is not checked before the first request",
                        base_url, e.status_code, model_name)
            return {"base_url": base_url, "model": model_name, "listed": [], "context_length": None, "entry": {},
                    "checked": False}
        raise ServerCheckFailed(f"the server at {base_url} answered GET /models with HTTP {e.status_code}: "
                                f"{server_message(e)}", []) from None
    except Exception as e:  # a 2xx body that is not a model list (an HTML page: not the API root)
        raise ServerCheckFailed(f"{base_url}/models did not answer with a model list ({type(e).__name__}: "
                                f"{str(e)[:200]}): is this the server's OpenAI-compatible API root (ending in /v1)?",
                                []) from None
    if model_name not in names:
        shown = ", ".join(repr(n) for n in names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        raise ServerCheckFailed(f"the server at {base_url} does not serve a model named {model_name!r}; it lists "
                                f"{shown or 'no models'}. Use one of those names (vLLM lists the path it was "
                                "started with, or --served-model-name)", [])
    raw = entries[names.index(model_name)]
    entry = raw.model_dump() if hasattr(raw, "model_dump") else {}
    ctx = next((entry[k] for k in CONTEXT_KEYS if isinstance(entry.get(k), int)), None)
    meta = entry.get("meta")
    if ctx is None and isinstance(meta, dict) and isinstance(meta.get("n_ctx_train"), int):
        ctx = meta["n_ctx_train"]
    scalars = {str(k)[:64]: (v[:200] if isinstance(v, str) else v) for k, v in list(entry.items())[:50]
               if isinstance(v, (str, int, float, bool)) or v is None}
    return {"base_url": base_url, "model": model_name, "listed": names[:100], "context_length": ctx,
            "entry": scalars, "checked": True}


@dataclass(frozen=True)
class Observed:
    """What the server's token count says about one image size sent: ``tokens`` (image tokens, or
    ``None`` when the server reports no usage), ``size`` (the model-input size they determine, or
    ``None``), ``note`` (a sentence when that is not the declared size)."""

    tokens: Optional[int]
    size: Optional[tuple[int, int]]
    note: Optional[str] = None


CALIBRATION_TEXT = "Describe the image."
"""The text of the calibration requests (the same with and without the image)."""


class _Frame:
    """The frame check: per distinct size sent, two requests with the same text, without and with a
    plain grey image of that size (``max_tokens`` 1); their ``usage.prompt_tokens`` differ by the image
    tokens the server's processor made plus the family's wrapper tokens
    (:func:`pointfail.running.served.inputs.image_token_rule`). Done once per size and shared by every sample
    of that size (a server's processor is a function of the size), the first time a size comes up."""

    def __init__(self, run: "_Run"):
        from pointfail.running.served.inputs import image_token_rule

        self.run = run
        self.rule = image_token_rule(run.family)
        self.sizes: dict[tuple[int, int], asyncio.Future[Observed]] = {}
        self.text_only: Optional[asyncio.Future[Optional[int]]] = None

    async def observe(self, plan: Any) -> Optional[Observed]:
        if self.rule is None:
            return None
        key = tuple(plan.send_size)
        fut = self.sizes.get(key)
        if fut is None:
            fut = self.sizes[key] = asyncio.ensure_future(self._calibrate(plan))
        return await asyncio.shield(fut)

    async def _count(self, size: Optional[tuple[int, int]]) -> Optional[int]:
        from pointfail.running.served.client import chat_once, image_part, png_bytes
        from pointfail.running.served.transport import describe, is_retryable, retrying

        content: list[dict[str, Any]] = [{"type": "text", "text": CALIBRATION_TEXT}]
        if size is not None:
            from PIL import Image

            png = await asyncio.to_thread(lambda: png_bytes(Image.new("RGB", size, (128, 128, 128))))
            content.insert(0, image_part(png))
        create = {"model": self.run.model.model, "messages": [{"role": "user", "content": content}],
                  "max_tokens": 1, "temperature": 0.0}
        opts = self.run.opts
        try:
            async for attempt in retrying(is_retryable, retries=opts.retries,
                                          backoff_initial=opts.backoff_initial, backoff_max=opts.backoff_max,
                                          stop_when=lambda: self.run.down is not None):
                with attempt:
                    self.run.summary.requests += 1
                    reply = await chat_once(self.run.client, **create)
        except Exception as e:
            if is_retryable(e):
                self.run.mark_down(describe(e), 1)
                raise ServerDown(self.run.down) from None
            raise ServerCheckFailed(f"the frame check's request to {self.run.model.base_url} failed: "
                                    f"{server_message(e)}", []) from None
        return reply.prompt_tokens if isinstance(reply.prompt_tokens, int) else None

    async def _calibrate(self, plan: Any) -> Observed:
        from pointfail.running.served.inputs import sizes_for_tokens

        assert self.rule is not None
        if self.text_only is None:
            self.text_only = asyncio.ensure_future(self._count(None))
        base = await asyncio.shield(self.text_only)
        sent = (int(plan.send_size[0]), int(plan.send_size[1]))
        with_image = await self._count(sent)
        if base is None or with_image is None:
            out = Observed(None, None, "the server reports no usage.prompt_tokens: the frame it used is not observed")
            self._record(sent, out, plan)
            return out
        n = with_image - base - self.rule.wrapper
        if n < 1:
            out = Observed(None, None, f"the server's usage.prompt_tokens do not grow with the image ({base} without, "
                                       f"{with_image} with it): the frame it used is not observed")
            self._record(sent, out, plan)
            return out
        declared = tuple(plan.received_size) if plan.received_size else None
        if declared is not None and self.rule.tokens(declared) == n:
            out = Observed(n, (int(declared[0]), int(declared[1])))
            self._record(sent, out, plan)
            return out
        found = sizes_for_tokens(sent, n, self.rule.factor)
        what = (f"the server counted {n} image tokens for the {sent[0]}x{sent[1]} image sent"
                + (f", not the {self.rule.tokens(declared)} of the {declared[0]}x{declared[1]} the declared pixel "
                   "budget gives" if declared else " (no pixel budget declared)"))
        fix = ("declare the budget the server runs with (options max_pixels / min_pixels, or --pixel-budget), or "
               "start the server with the family's: vLLM --mm-processor-kwargs '{\"max_pixels\": N}', "
               "transformers serve: max_pixels in the checkpoint's preprocessor_config.json")
        if len(found) == 1:
            size = found[0]
            out = Observed(n, size, f"{what}: it resized to {size[0]}x{size[1]}, the only smart_resize output with "
                                    f"{n} tokens (recovered from the token count; replies are read in that frame)")
            log.warning("%s; %s", out.note, fix)
            self._record(sent, out, plan)
            return out
        cands = ", ".join(f"{w}x{h}" for w, h in found[:6]) or "none"
        raise ServerCheckFailed(f"{what}; sizes a smart_resize could give with {n} tokens: {cands}, so the frame the "
                                f"server answers in is not known and nothing is scored in an assumed one: {fix}", [])

    def _record(self, sent: tuple[int, int], out: Observed, plan: Any) -> None:
        self.run.summary.frames[f"{sent[0]}x{sent[1]}"] = {
            "declared": list(plan.received_size) if plan.received_size else None,
            "observed_tokens": out.tokens, "observed_size": list(out.size) if out.size else None, "note": out.note,
            "rule": self.rule.source if self.rule else None}


IMAGE_CACHE_BYTES = 256 << 20
"""Encoded images kept for samples that share an image (least recently used dropped beyond it)."""


PASS_THROUGH = {"PNG": "image/png", "JPEG": "image/jpeg"}
"""Image file formats sent as they are (no decode, no re-encode) when no resize is needed: the two
that OpenAI-compatible servers accept (the OpenAI image-input formats; vLLM and ``transformers
serve`` open them with Pillow). Other formats are decoded and sent as PNG."""


class _Images:
    """The image part to send per image and resize mode: the file's bytes as they are when no resize is
    needed and the format passes through (:data:`PASS_THROUGH`; the header read for the size, no
    decode, no re-encode), else decoded, resized once (bicubic, the Qwen2-VL processor's
    ``resample=3``) and encoded as PNG; then base64'd into a data URL once. All in a worker thread (off
    the event loop), kept for the other samples of the same image (an LRU of :data:`IMAGE_CACHE_BYTES`).

    Resize mode ``"auto"`` (:class:`~pointfail.running.served.options.ServedOptions`): the original is
    planned as ``"server"`` when its format passes through, else as ``"client"`` (a re-encode is
    needed anyway, so the resize that makes the server's own the identity comes with it)."""

    def __init__(self, run: "_Run"):
        from collections import OrderedDict

        self.run = run
        self.cache: OrderedDict[tuple[str, str], asyncio.Future[tuple[str, Any]]] = OrderedDict()
        self.bytes = 0

    async def get(self, path: Optional[str], resize: Optional[str] = None) -> tuple[str, Any]:
        """``(data URL, InputPlan)`` for the image at ``path`` under ``resize`` (default: the
        options'). Raises ``ValueError`` for a missing, unreadable or refused image."""
        key = (str(path), resize or self.run.opts.resize)
        fut = self.cache.get(key)
        if fut is None:
            fut = self.cache[key] = asyncio.ensure_future(asyncio.to_thread(self._encode, path, key[1]))
            fut.add_done_callback(self._account)
        else:
            self.cache.move_to_end(key)
        return await asyncio.shield(fut)

    def _account(self, fut: "asyncio.Future[tuple[str, Any]]") -> None:
        if fut.cancelled() or fut.exception() is not None:
            return
        self.bytes += len(fut.result()[0])
        while self.bytes > IMAGE_CACHE_BYTES and len(self.cache) > 1:
            _, old = self.cache.popitem(last=False)
            if old.done() and not old.cancelled() and old.exception() is None:
                self.bytes -= len(old.result()[0])

    def _encode(self, path: Optional[str], resize: str) -> tuple[str, Any]:
        import io

        from PIL import Image

        from pointfail.running.served.client import data_url, png_bytes
        from pointfail.running.served.inputs import plan_input

        if not path:
            raise ValueError("request has no image path")
        from pointfail.limits import MAX_IMAGE_BYTES
        from pointfail.safeio import open_binary

        try:
            with open_binary(path, max_bytes=MAX_IMAGE_BYTES) as f:
                data = f.read()
            with Image.open(io.BytesIO(data)) as im:
                size, fmt = im.size, im.format
                im.verify()
        except FileNotFoundError:
            raise ValueError(f"image not found: {path}") from None
        except Exception as e:
            raise ValueError(f"cannot read image {path}: {type(e).__name__}: {e}") from None
        mime = PASS_THROUGH.get(str(fmt))
        if resize == "auto" and mime is None:
            resize = "client"
        plan = plan_input(self.run.family, size, self.run.opts, resize)
        if mime is not None and tuple(plan.send_size) == tuple(size):
            return data_url(data, mime), plan
        try:
            with Image.open(io.BytesIO(data)) as im:
                im.load()
                image = im.convert("RGB")
        except Exception as e:
            raise ValueError(f"cannot read image {path}: {type(e).__name__}: {e}") from None
        if tuple(plan.send_size) != tuple(image.size):
            image = image.resize(plan.send_size, Image.Resampling.BICUBIC)
        return data_url(png_bytes(image)), plan


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
        self.failed: Optional[ServerCheckFailed] = None
        self.client: Any = None
        self.sem = asyncio.Semaphore(self.opts.concurrency)
        self.images = _Images(self)
        self.frame = _Frame(self)

    def mark_down(self, reason: str, requests: int) -> None:
        if self.down is None:
            self.down = f"server {self.model.base_url} unavailable after {requests} requests ({reason})"
            log.error("%s", self.down)

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
            except ServerCheckFailed as e:
                if self.failed is None:
                    self.failed = e
                    self.down = str(e)
                    log.error("%s", e)
                self.summary.pending += 1
                return
            self.write(line)

    async def answer(self, req: Any, t0: float) -> dict[str, Any]:
        """One request's response line (started at ``t0``): the image sent as the plan says, the chat
        call retried on transient failures; an input or server error is the sample's error line.

        Raises:
            ServerDown: the server stopped answering (this request stays pending).
            ServerCheckFailed: the frame observation found the server unusable.
        """
        opts = self.opts
        info = ServedInfo(response_format=None, preset=opts.preset, system_prompt=bool(opts.system_prompt), requests=0)

        def error(reason: str) -> dict[str, Any]:
            self.summary.errors += 1
            self.summary.error_reasons[req.sample_id] = reason
            return _line(req.sample_id, None, None, time.perf_counter() - t0, reason, info)

        try:
            if req.prompt is None:
                raise ValueError("request has no prompt")
            image, plan = await self.images.get(req.image)
            seen = await self.frame.observe(plan)
            if opts.resize == "auto" and plan.source == "server_budget" and seen is not None and seen.tokens is None:
                # the server reports no usage: the frame of an original it resizes itself is not observed,
                # so the image is resized here and the server's resize is the identity (as resize = "client")
                image, plan = await self.images.get(req.image, "client")
                seen = await self.frame.observe(plan)
        except ValueError as e:
            return error(str(e))
        mis = self._input_size(plan, seen, info)
        create = self._create_args(req, image, info)
        del image
        reply = await self._chat(create, info)
        if isinstance(reply, str):
            return error(f"server: {reply}")
        info.model = reply.model
        info.flags = list(reply.flags)
        info.finish_reason = reply.finish_reason
        info.refusal = reply.refusal
        self.summary.answered += 1
        if reply.filtered:
            self.summary.refused += 1
        return _line(req.sample_id, reply.text, mis, time.perf_counter() - t0, None, info,
                     reply.prompt_tokens, reply.output_tokens)

    def _input_size(self, plan: Any, seen: Optional[Observed], info: ServedInfo) -> Any:
        """The model input size to record, and the sizes sent and received in ``info``: the plan's,
        replaced by what the server was observed to receive (``seen``, the frame check of the size
        sent) when that differs."""
        info.sent_size = list(plan.send_size)
        info.received_size = list(plan.received_size) if plan.received_size else None
        info.input_size_source = plan.source
        info.input_size_note = plan.note
        mis = plan.model_input_size
        if seen is not None:
            info.observed_tokens = seen.tokens
            info.observed_size = list(seen.size) if seen.size else None
            if seen.size is not None and tuple(seen.size) != tuple(plan.received_size or ()):
                info.received_size = list(seen.size)
                info.input_size_source = "server_observed"
                info.input_size_note = seen.note
                mis = seen.size
        return mis

    def _create_args(self, req: Any, image: str, info: ServedInfo) -> dict[str, Any]:
        """The chat-completion arguments for ``req``: the prompt less a system prompt it embeds, the
        token limit, temperature, seed and (structured output) the family's response format."""
        from pointfail.running.served.client import messages
        from pointfail.running.served.options import response_format

        opts = self.opts
        text = req.prompt
        system = opts.system_prompt
        if system and text.startswith(system):  # a family prompt that embeds the system prompt
            text = text[len(system):].lstrip("\n")
        create: dict[str, Any] = {"model": self.model.model, "messages": messages(image, text, system),
                                  "max_tokens": int(opts.max_tokens or req.max_new_tokens),
                                  "temperature": opts.temperature}
        if opts.seed is not None:
            create["seed"] = opts.seed
        if opts.structured:
            create["response_format"] = response_format(self.family.name, req.task)
            info.response_format = "json_schema:" + create["response_format"]["json_schema"]["name"]
        return create

    async def _chat(self, create: dict[str, Any], info: ServedInfo) -> Any:
        """The server's reply to ``create``, retried on transient failures (counted in ``info`` and the
        summary); a final non-transient failure is returned as its description (a string).

        Raises:
            ServerDown: the server is down (already, or marked so by a last transient failure).
        """
        from pointfail.running.served.client import chat_once
        from pointfail.running.served.transport import describe, is_retryable, retrying

        opts = self.opts
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
                self.mark_down(reason, info.requests)
                raise ServerDown(self.down) from None
            return reason
        return reply


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


def drop_error_responses(path: str | Path, only: Optional[set[str]] = None) -> int:
    """Remove the error responses (``error`` set) of the samples in ``only`` (default: every sample)
    from a responses file, and the lines that are not valid responses, keeping every other line as it
    was, so that a rerun asks those samples again; returns how many samples were removed. The file is
    rewritten under the writer's lock (:class:`pointfail.running.jobs.ResponseWriter`: a running writer gets
    :class:`pointfail.running.jobs.JobBusy`) through :func:`pointfail.safeio.atomic_write_bytes`; a symlink is
    refused, never followed."""
    from pointfail.running.jobs import ResponseWriter

    p = Path(path)
    if not p.exists():
        return 0
    with ResponseWriter(p) as w:
        kept = [r for r in w.log.responses.values() if not r.error or (only is not None and r.sample_id not in only)]
        dropped = len(w.log.responses) - len(kept) + len(w.log.invalid)
        if dropped or w.log.problems:
            from pointfail.safeio import atomic_write_bytes

            atomic_write_bytes(p, b"".join(r.to_line() for r in kept))
    return dropped


def state_path(responses: str | Path) -> Path:
    """The file beside a responses file that says which model entry and server answered it:
    ``<responses>.server.json`` (``responses.jsonl`` -> ``responses.server.json``)."""
    p = Path(responses)
    return p.with_name(p.stem + ".server.json")


def fingerprint(model: "ServerModel", server: dict[str, Any]) -> str:
    """SHA-256 of the model entry (every field of the study's ``[[models]]`` table, options included)
    and the server's ``/v1/models`` entry for it (vLLM's includes its start time, so a restarted
    server is another server): when it changes between runs, error responses are asked again."""
    import hashlib
    import json

    blob = json.dumps({"model": model.model_dump(mode="json"), "server": server.get("entry", {})},
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _write_state(path: Path, state: dict[str, Any]) -> None:
    import json

    from pointfail.safeio import atomic_write_bytes

    atomic_write_bytes(path, (json.dumps(state, indent=2, sort_keys=True, ensure_ascii=False, default=str)
                              + "\n").encode("utf-8"))


def _read_fingerprint(path: Path) -> Optional[str]:
    import json

    from pointfail.safeio import read_regular_file

    try:
        st = json.loads(read_regular_file(path, 1 << 20, nofollow=True))
    except (OSError, ValueError, RecursionError):  # missing, a symlink, too big, not JSON: no earlier state
        return None
    fp = st.get("fingerprint") if isinstance(st, dict) else None
    return fp if isinstance(fp, str) else None


async def _checked_server(client: Any, model: "ServerModel", reqs: list[Any]) -> dict[str, Any]:
    """What :func:`preflight` learns of ``model``'s server; raises :class:`ServerCheckFailed` (nothing
    sent, every request pending) when the check fails."""
    try:
        return await preflight(client, str(model.base_url), str(model.model),
                               timeout_s=min(10.0, model.options.timeout_s))
    except ServerCheckFailed as e:
        raise ServerCheckFailed(f"{e}; nothing was sent", [r.sample_id for r in reqs]) from None


def _fingerprint_changed(state: Path, fp: str, responses: str | Path) -> bool:
    """Whether the state file holds a fingerprint other than ``fp`` (the model entry or the server
    changed since ``responses`` was written: its error responses are asked again, with a warning)."""
    before = _read_fingerprint(state)
    changed = before is not None and before != fp
    if changed:
        log.warning("the model entry or the server changed since %s was written: its error responses are "
                    "asked again", responses)
    return changed


def _open_writer(responses: str | Path, reqs: list[Any], drop_errors: bool) -> tuple[Any, int]:
    """The entered :class:`~pointfail.running.jobs.ResponseWriter` of ``responses`` and how many error
    responses of ``reqs`` were dropped first (only when ``drop_errors``); raises
    :class:`~pointfail.running.worker.WorkerError` when the file cannot be held."""
    from pointfail.running.jobs import JobBusy, JobFileError, ResponseWriter
    from pointfail.running.worker import WorkerError

    try:
        retried = drop_error_responses(responses, {r.sample_id for r in reqs}) if drop_errors else 0
        return ResponseWriter(responses).__enter__(), retried
    except (JobFileError, JobBusy) as e:
        raise WorkerError(str(e)) from None


async def arun_served(model: "ServerModel", requests: str | Path, responses: str | Path, *,
                      progress: bool = False, default_max_new_tokens: int = 128,
                      retry_errors: bool = False, check: bool = True) -> ServedSummary:
    """Async form of :func:`run_served` (same arguments, result and errors)."""
    from pointfail.running.jobs import JobFileError
    from pointfail.running.served.client import api_key, async_client
    from pointfail.running.worker import WorkerError, read_requests

    base_url = model.base_url
    if not base_url:
        raise ValueError(f"model {model.name}: no base_url (a server the runner starts is given its address "
                         "by the runner)")
    t0 = time.perf_counter()
    reqs = read_requests(requests, default_max_new_tokens)
    from pointfail.running.jobs import read_responses

    try:
        prior = read_responses(responses, [r.sample_id for r in reqs])
    except JobFileError as e:
        raise WorkerError(str(e)) from None
    has_errors = any(r.error for r in prior.responses.values()) or bool(prior.invalid)
    if all(r.sample_id in prior.answered for r in reqs) and not has_errors:
        return ServedSummary(total=len(reqs), skipped=len(reqs), seconds=time.perf_counter() - t0)
    opts = model.options
    client = async_client(base_url, api_key(model.api_key_env), timeout_s=opts.timeout_s,
                          concurrency=opts.concurrency, max_body_bytes=opts.max_body_bytes)
    try:
        server = await _checked_server(client, model, reqs) if check else {}
        state = state_path(responses)
        fp = fingerprint(model, server)
        changed = _fingerprint_changed(state, fp, responses)
        writer, retried = _open_writer(responses, reqs, retry_errors or changed)
        try:
            if writer.log.cut_tail:
                log.warning("responses file %s: removed a final line cut short (%d bytes)", responses,
                            writer.log.cut_tail)
            done = writer.log.answered
            todo = [r for r in reqs if r.sample_id not in done]
            summary = ServedSummary(total=len(reqs), skipped=len(reqs) - len(todo), retried_errors=retried,
                                    server=server)
            run = _Run(model, writer, summary, bar=None)
            run.client = client
            _write_state(state, {"fingerprint": fp, "model": model.model_dump(mode="json"), "server": server})
            try:
                if progress:
                    from tqdm import tqdm

                    run.bar = tqdm(total=len(reqs), initial=summary.skipped, unit="sample",
                                   desc=f"served {model.model}", dynamic_ncols=True)
                await asyncio.gather(*(run.sample(r) for r in todo))
            finally:
                if run.bar is not None:
                    run.bar.close()
                summary.seconds = time.perf_counter() - t0
            _write_state(state, {"fingerprint": fp, "model": model.model_dump(mode="json"), "server": server,
                                 "frames": summary.frames})
        finally:
            writer.__exit__(None, None, None)
    finally:
        await client.close()
    if run.down is not None:
        pending = sorted({r.sample_id for r in todo} - run.written)
        tail = f"; {len(pending)} of {len(reqs)} samples have no response yet (run again to answer them)"
        if run.failed is not None:
            raise ServerCheckFailed(f"{run.failed}{tail}", pending)
        raise ServerUnavailable(f"{run.down}{tail}", pending)
    return summary


def run_served(model: "ServerModel", requests: str | Path, responses: str | Path, *, progress: bool = False,
               default_max_new_tokens: int = 128, retry_errors: bool = False, check: bool = True) -> ServedSummary:
    """Answer every request not yet in ``responses`` through ``model``'s server (rules in the module
    docstring).

    Args:
        model: the study's :class:`pointfail.inputs.study.ServerModel` (``base_url``, ``model``, ``family``,
            ``api_key_env``, validated ``options``); a server the runner started is given as a copy
            with its ``base_url`` filled in.
        requests: requests JSONL (image paths readable here), read with
            :func:`pointfail.running.worker.read_requests`.
        responses: responses JSONL, appended through :class:`pointfail.running.jobs.ResponseWriter` (created
            when missing; held under its lock for the whole run, so one job has one writer).
        progress: show a tqdm bar on stderr.
        default_max_new_tokens: for requests without ``max_new_tokens``.
        retry_errors: first remove the error responses already in ``responses``
            (:func:`drop_error_responses`), so those samples are asked again.
        check: the pre-flight (:func:`preflight`) before the first request (``False``: skip it).

    Returns:
        A :class:`ServedSummary`.

    Raises:
        ServerCheckFailed: the pre-flight or the frame check failed (a subclass of
            ``ServerUnavailable``; responses written so far are kept).
        ServerUnavailable: transport retries ran out (responses written so far are kept).
        pointfail.running.worker.WorkerError: an invalid requests file; a responses file that is a symlink or
            not a regular file, or that another writer holds.
        ValueError: ``model`` has no ``base_url``, options that do not fit the family (preset,
            structured output), or an API key variable that is not set.
    """
    return asyncio.run(arun_served(model, requests, responses, progress=progress,
                                   default_max_new_tokens=default_max_new_tokens, retry_errors=retry_errors,
                                   check=check))
