"""The Ollama judge client: fixed options, bounded concurrency, transport retries apart from labels.

Source of the protocol: ``shared/seeds/pointfail-study.txt``, "The judge" (Gemma 4 through Ollama,
requests independent per sample and issued concurrently, exactly one label, up to five attempts, every
raw reply stored). HTTP goes through the ``ollama`` package's ``AsyncClient`` (httpx underneath);
transport retries through ``tenacity``.

Per miss (:meth:`OllamaJudge.judge`):

* One ``/api/chat`` request per **label attempt**, at most ``max_attempts`` (5): the fixed prompt
  (:func:`pointfail.judge.protocol.build_prompt`) with the annotated PNG, the fixed ``options``, and the
  label schema as ``format``. The reply (``message.content``) is read by
  :func:`pointfail.judge.protocol.read_label`; every reply is kept as a ``JudgeAttempt`` with its verdict.
  The first accepted reply gives ``status="labeled"``; five rejected replies give ``"unlabeled"``.
  Attempt ``k`` (1-based) is sent with ``seed + k - 1``, so a deterministic server does not repeat the
  same rejected reply, and the whole sequence is still reproducible.
* **Transport failures** (HTTP 5xx or 429, timeouts, refused or dropped connections, protocol errors) are
  retried by tenacity with exponential backoff (``backoff_initial * 2**n`` seconds, capped at
  ``backoff_max``), at most ``transport_retries`` retries per request. They are counted in
  ``Judgment.transport_failures`` and do not consume label attempts. When a request still fails, the miss
  is ``judge_unavailable`` (a rerun of the stage fills it in) and the judge is marked down: misses not yet
  sent are recorded ``judge_unavailable`` at once instead of each waiting out its own retries, and
  requests already retrying stop.
* Any other HTTP error (4xx: unknown model, bad request) makes that miss ``judge_unavailable`` with the
  server's message in ``detail``; a 404 (model not on the server) also marks the judge down.
* At most ``concurrency`` misses have requests in flight at once (an ``asyncio.Semaphore``). Annotated
  images are rendered ahead in worker threads, at most ``2 * concurrency`` rendered or being sent at
  any time, so rendering the next misses overlaps waiting on the server and images are never all held
  in memory.

The model digest comes from ``/api/tags`` (the entry whose name is the model, or ``model:latest``);
the server version from ``/api/version``. Both are fetched once, with the same retries.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from pointfail.judge.miss import Miss
from pointfail.judge.protocol import LABEL_SCHEMA, MAX_LABEL_ATTEMPTS, build_prompt, cap_reply, read_label
from pointfail.running.judges.settings import DEFAULT_HOST, DEFAULT_MODEL, DEFAULT_OPTIONS
from pointfail.records import JudgeAttempt, Judgment, JudgeStatus
from pointfail.safeio import INVALID_UNICODE_FLAG, valid_text
from pointfail.running.served.transport import DEFAULT_MAX_BODY_BYTES, FailureCount, ServerDown

def resolve_host(host: Optional[str] = None) -> str:
    """The judge host: ``host`` if given, else ``$OLLAMA_HOST``, else :data:`DEFAULT_HOST`."""
    return host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST


def is_transport_error(exc: BaseException) -> bool:
    """True for failures worth retrying, by the one classification every client shares
    (:func:`pointfail.running.served.transport.classify`): ``ollama.ResponseError`` with status >= 500, 429,
    408 or 409, the ``ConnectionError`` ollama raises for a refused connection, timeouts and the total
    deadline, dropped connections, protocol errors, a body that is not JSON; not a redirect or a body
    over the cap (final)."""
    from pointfail.running.served.transport import is_retryable

    return is_retryable(exc)


@dataclass
class ServerInfo:
    """What the judge server reported: ``digest`` of the model (``None`` if not listed), ``version`` of
    Ollama, ``error`` when the server could not be reached."""

    digest: Optional[str] = None
    version: Optional[str] = None
    error: Optional[str] = None


ImageSource = Union[bytes, Callable[[], bytes]]


@dataclass
class ChatJudge:
    """The judge protocol over a chat server, shared by every judge client (:class:`OllamaJudge`,
    :class:`pointfail.running.judges.served.OpenAIJudge`): label attempts, transport retries apart from labels,
    the server marked down, render-ahead, resumption, and the :class:`Judgment` it returns (rules in
    the module docstring). A subclass sends one request (:meth:`_request`), says which exceptions are
    transport failures (:meth:`is_transport_error`), opens and closes its client and reads the server's
    facts (:meth:`_server_info`).

    Attributes:
        model: the judge model's name on the server.
        options: generation options, recorded in every judgment (``seed`` is advanced per attempt).
        concurrency: misses in flight at once (>= 1).
        max_attempts: label attempts per miss (5, the study's).
        transport_retries: retries of one request after a transport failure.
        backoff_initial, backoff_max: exponential backoff in seconds.
        timeout_s: total deadline of one HTTP request in seconds, wall clock (connect, headers and
            body: :class:`pointfail.running.served.bounded.BoundedTransport`).
        max_body_bytes: byte cap on one response body (over it: that miss is ``judge_unavailable``
            with the reason, not retried).
        use_schema: send :data:`~pointfail.judge.protocol.LABEL_SCHEMA` as the structured-output schema.
    """

    model: str = DEFAULT_MODEL
    options: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_OPTIONS))
    concurrency: int = 4
    max_attempts: int = MAX_LABEL_ATTEMPTS
    transport_retries: int = 6
    backoff_initial: float = 1.0
    backoff_max: float = 30.0
    timeout_s: float = 300.0
    use_schema: bool = True
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        self.info = ServerInfo()
        self._client: Any = None
        self._sem: Optional[asyncio.Semaphore] = None
        self._prefetch: Optional[asyncio.Semaphore] = None
        self._down: Optional[str] = None

    # -- what a subclass provides ---------------------------------------------------------------

    @property
    def name(self) -> str:
        """The judge's name in records (``<kind>:<model>``)."""
        raise NotImplementedError

    @property
    def where(self) -> str:
        """The server's address, for messages."""
        raise NotImplementedError

    def is_transport_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a transport failure (retried, counted apart from label attempts): the
        classification every client shares (:func:`pointfail.running.served.transport.classify`)."""
        return is_transport_error(exc)

    def down_reason(self, exc: BaseException) -> Optional[str]:
        """For a failure that is not a transport failure: the reason to mark the judge down (e.g. the
        model is not on the server), or ``None`` when only this miss is affected."""
        return None

    async def _open(self) -> Any:
        raise NotImplementedError

    async def _close(self) -> None:
        await self._client.close()

    async def _server_info(self) -> ServerInfo:
        return ServerInfo()

    async def _request(self, prompt: str, png: bytes, options: dict[str, Any]) -> tuple[str, list[str]]:
        """Send one label request (``options``: this attempt's options, seed advanced) and return the
        reply text and the flags of what was repaired in it when it was read."""
        raise NotImplementedError

    def _detail_prefix(self) -> Optional[str]:
        """Server facts prefixed to the detail of every judgment that reached the server."""
        return None

    def recorded_options(self) -> dict[str, Any]:
        """What every judgment records as ``options``: the generation options plus whether the schema
        was sent, the attempt limit, and the per-attempt seed rule."""
        rec = dict(self.options)
        rec.update({"format_schema": self.use_schema, "max_attempts": self.max_attempts,
                    "seed_per_attempt": "seed + attempt - 1"})
        return rec

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> "ChatJudge":
        self._client = await self._open()
        self._sem = asyncio.Semaphore(self.concurrency)
        self._prefetch = asyncio.Semaphore(2 * self.concurrency)
        self._down = None
        self.info = await self._server_info()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._client is not None:
            await self._close()
            self._client = None

    # -- transport -------------------------------------------------------------------------------

    def _retrying(self) -> Any:
        from pointfail.running.served.transport import retrying

        return retrying(self.is_transport_error, retries=self.transport_retries, backoff_initial=self.backoff_initial,
                        backoff_max=self.backoff_max, stop_when=lambda: self._down is not None)

    async def _call(self, fn: Callable[[], Any], counter: FailureCount) -> Any:
        """Run ``await fn()`` with transport retries; each transport failure increments ``counter``."""
        async for attempt in self._retrying():
            with attempt:
                if self._down is not None and counter.n > 0:
                    raise ServerDown(self._down)
                try:
                    return await fn()
                except Exception as e:  # counted, then re-raised for tenacity to judge
                    if self.is_transport_error(e):
                        counter.n += 1
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # -- judging ---------------------------------------------------------------------------------

    def _judgment(self, status: JudgeStatus, **kw: Any) -> Judgment:
        detail = kw.pop("detail", None)
        prefix = self._detail_prefix()
        if prefix and status != "judge_unavailable":
            detail = prefix + (f"; {detail}" if detail else "")
        return Judgment(
            judge=self.name,
            status=status,
            judge_digest=self.info.digest,
            options=self.recorded_options(),
            detail=detail,
            **kw,
        )

    async def judge(
        self,
        image: ImageSource,
        instruction: str,
        *,
        point_outside_image: bool = False,
        target_absent: bool = False,
        resume: Optional[Judgment] = None,
    ) -> Judgment:
        """Judge one miss.

        Args:
            image: the annotated PNG (bytes), or a callable returning it (run in a worker thread once
                this miss holds a render-ahead slot).
            instruction: the original instruction given to the evaluated model.
            point_outside_image: the predicted point lies outside the image (adds one prompt sentence).
            target_absent: the referent is not in the image (the prompt says so instead of naming a
                green target).
            resume: this judge's earlier ``judge_unavailable`` judgment of the same miss, if any: its
                label attempts are kept and count toward ``max_attempts`` (numbering continues), and its
                transport failures are added, so a rerun after an outage stores every raw reply.

        Returns:
            A ``Judgment`` with status ``labeled``, ``unlabeled`` or ``judge_unavailable``.

        Raises:
            Whatever ``image()`` raises (an unreadable image is the caller's to record).
            RuntimeError: used outside ``async with``.
        """
        if self._sem is None or self._client is None:
            raise RuntimeError(f"{type(self).__name__}.judge() must run inside 'async with {type(self).__name__}(...)'")
        resumed = resume if resume is not None and resume.status == "judge_unavailable" and resume.judge == self.name \
            else None
        prior = list(resumed.attempts) if resumed is not None else []
        prior_failures = resumed.transport_failures if resumed is not None else 0
        if self._down is not None:
            return self._judgment(
                "judge_unavailable", attempts=prior, transport_failures=prior_failures, detail=f"not sent: {self._down}"
            )
        assert self._prefetch is not None
        async with self._prefetch:
            if self._down is not None:
                return self._judgment(
                    "judge_unavailable", attempts=prior, transport_failures=prior_failures, detail=f"not sent: {self._down}"
                )
            png = await asyncio.to_thread(image) if callable(image) else image
            async with self._sem:
                return await self._ask(png, instruction, point_outside_image, target_absent, prior, prior_failures)

    async def _ask(
        self,
        png: bytes,
        instruction: str,
        point_outside_image: bool,
        target_absent: bool,
        prior: list[JudgeAttempt],
        prior_failures: int,
    ) -> Judgment:
        if self._down is not None:
            return self._judgment(
                "judge_unavailable", attempts=prior, transport_failures=prior_failures, detail=f"not sent: {self._down}"
            )
        prompt = build_prompt(instruction, point_outside_image=point_outside_image, target_absent=target_absent)
        counter = FailureCount(prior_failures)
        attempts: list[JudgeAttempt] = list(prior)
        for k in range(len(prior) + 1, self.max_attempts + 1):
            opts = dict(self.options)
            if "seed" in opts:
                opts["seed"] = int(opts["seed"]) + k - 1
            try:
                reply, flags = await self._call(lambda: self._request(prompt, png, opts), counter)
            except ServerDown as e:
                return self._judgment(
                    "judge_unavailable", attempts=attempts, transport_failures=counter.n, detail=str(e)
                )
            except Exception as e:
                from pointfail.running.served.transport import describe

                reason = describe(e)  # the server's own message kept, the bound that fired named
                if self.is_transport_error(e):
                    self._down = f"server unavailable at {self.where} after {counter.n} transport failures ({reason})"
                else:
                    self._down = self.down_reason(e)
                return self._judgment(
                    "judge_unavailable", attempts=attempts, transport_failures=counter.n, detail=reason
                )
            reply, repaired = valid_text(reply)  # a lone surrogate never reaches the records file
            if repaired:
                flags = [*flags, INVALID_UNICODE_FLAG]
            label, verdict = read_label(reply)  # reads at most MAX_JUDGE_REPLY_CHARS
            attempts.append(JudgeAttempt(attempt=k, reply=cap_reply(reply), verdict=verdict, label=label,
                                         flags=sorted(set(flags))))
            if label is not None:
                return self._judgment("labeled", label=label, attempts=attempts, transport_failures=counter.n)
        return self._judgment(
            "unlabeled",
            attempts=attempts,
            transport_failures=counter.n,
            detail=f"no single clean label in {self.max_attempts} attempts",
        )

    async def judge_miss(self, miss: Miss) -> Judgment:
        """Judge one miss of the stage (:class:`pointfail.judge.miss.Judge`): the record's image with
        the target tinted and the primary point marked (:func:`pointfail.running.judges.render.render_miss`,
        rendered ahead in a worker thread), its original instruction, and this judge's earlier
        ``judge_unavailable`` judgment to resume from.

        Raises:
            FileNotFoundError: the image (or a mask target's file) is not found (recorded ``pending``).
        """
        from pointfail.running.judges.render import point_outside, render_miss
        from pointfail.prompts import instruction_given

        rec = miss.record
        image = miss.image_path()
        target = rec.target
        if target.kind == "mask" and target.mask_path:
            target = target.model_copy(update={"mask_path": str(miss.find(target.mask_path, extra=(image.parent,)))})

        def render() -> bytes:
            return render_miss(image, target, miss.point)

        return await self.judge(render, instruction_given(rec.prompt), point_outside_image=point_outside(miss.point),
                                target_absent=target.kind == "absent", resume=miss.resume)

    async def judge_many(self, items: list[tuple[ImageSource, str, bool]]) -> list[Judgment]:
        """Judge several misses concurrently (inside ``async with``); results in input order.
        ``items`` are ``(image, instruction, point_outside_image)``."""
        return list(
            await asyncio.gather(*(self.judge(img, instr, point_outside_image=out) for img, instr, out in items))
        )

    def judge_one_sync(self, image: ImageSource, instruction: str, *, point_outside_image: bool = False) -> Judgment:
        """Open a session, judge one miss, close it (for ``pointfail judge-one``)."""

        async def run() -> Judgment:
            async with self:
                return await self.judge(image, instruction, point_outside_image=point_outside_image)

        return asyncio.run(run())


@dataclass
class OllamaJudge(ChatJudge):
    """A Gemma-4-over-Ollama judge for misses (protocol in the module docstring).

    The protocol is :class:`ChatJudge`'s. Use as an async context manager (``async with OllamaJudge(...) as j: await j.judge(...)``) or through
    :meth:`judge_many` / :meth:`judge_one_sync`.

    Attributes:
        host: server URL (``None``: ``$OLLAMA_HOST``, else ``http://127.0.0.1:11434``).
        model: Ollama model tag.
        options: generation options (temperature, seed, num_ctx, num_predict), recorded in every judgment.
        concurrency: misses in flight at once (>= 1).
        max_attempts: label attempts per miss (5, the study's).
        transport_retries: retries of one request after a transport failure.
        backoff_initial, backoff_max: exponential backoff in seconds.
        timeout_s: HTTP timeout per request in seconds.
        use_schema: send :data:`~pointfail.judge.protocol.LABEL_SCHEMA` as ``format``.
        think: Ollama's ``think`` flag (``False``: no reasoning trace, the reply is the label).
    """

    host: Optional[str] = None
    think: Optional[bool] = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.host = resolve_host(self.host)

    @property
    def where(self) -> str:
        return str(self.host)

    def down_reason(self, exc: BaseException) -> Optional[str]:
        import ollama

        if isinstance(exc, ollama.ResponseError) and exc.status_code == 404:
            return f"model {self.model} not served at {self.host} ({type(exc).__name__}: {exc})"
        return None

    def _detail_prefix(self) -> Optional[str]:
        return f"ollama {self.info.version}" if self.info.version else None

    async def _request(self, prompt: str, png: bytes, options: dict[str, Any]) -> tuple[str, list[str]]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": prompt, "images": [png]}],
                                  "options": options}
        if self.use_schema:
            kwargs["format"] = LABEL_SCHEMA
        if self.think is not None:
            kwargs["think"] = self.think
        resp = await self._client.chat(**kwargs)
        content = resp.message.content if resp.message is not None else None
        return (content if isinstance(content, str) else ""), []

    @property
    def name(self) -> str:
        """The judge's name in records: ``ollama:<model>``."""
        return f"ollama:{self.model}"

    def recorded_options(self) -> dict[str, Any]:
        """What every judgment records as ``options``: the generation options plus ``think``, whether
        the schema was sent, the attempt limit, and the per-attempt seed rule."""
        rec = dict(self.options)
        rec["think"] = self.think
        rec.update(super().recorded_options())
        return rec

    async def _open(self) -> Any:
        import httpx
        import ollama

        from pointfail.running.served.bounded import transport_for

        # the ollama SDK passes these to its httpx.AsyncClient: our bounded transport, and no redirects
        # (the SDK's own default follows them, to any host)
        return ollama.AsyncClient(
            host=self.host,
            follow_redirects=False,
            timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
            transport=transport_for(self.timeout_s, self.max_body_bytes, self.concurrency),
        )

    async def _server_info(self) -> ServerInfo:
        import httpx

        counter = FailureCount()
        info = ServerInfo()
        try:
            tags = await self._call(self._client.list, counter)
            names = {self.model, f"{self.model}:latest"} if ":" not in self.model else {self.model}
            for m in tags.models:
                if m.model in names:
                    info.digest = valid_text(m.digest)[0][:200] if isinstance(m.digest, str) else None
                    break
            ver = await self._call(lambda: self._client._client.get("/api/version"), counter)
            if isinstance(ver, httpx.Response) and ver.status_code == 200:
                body = ver.json()
                version = body.get("version") if isinstance(body, dict) else None
                info.version = valid_text(version)[0][:100] if isinstance(version, str) else None
        except Exception as e:  # recorded; the stage then marks misses judge_unavailable
            from pointfail.running.served.transport import describe

            info.error = describe(e)
            if self.is_transport_error(e) or isinstance(e, ServerDown):
                self._down = f"server unreachable at {self.host}: {info.error}"
        return info

