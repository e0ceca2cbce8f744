"""Transport retries shared by the served backend and the judges (Ollama and OpenAI-compatible).

A *transport failure* is a failure of the exchange, not an answer: HTTP 429 (rate limited), 408 and
409 (the ``openai`` client's own retryable statuses), any 5xx, a timeout, a refused or dropped
connection, or a body that is not a chat completion (malformed JSON, no choices). It is retried with
exponential backoff; anything else (400 bad request, 401, 404 unknown model, a refusal, a
content-filtered reply) is not. Retries go through ``tenacity``'s ``AsyncRetrying``; every failed
attempt is counted by the caller so records can say how many requests a sample took.

Backoff: attempt ``n`` (1-based) that failed waits ``min(backoff_max, backoff_initial * 2**(n-1))``
seconds, or the server's ``Retry-After`` header (seconds, capped at ``backoff_max``) when that is longer.

**Bounds** (issue 24: a server pointfail does not control must not hold a run hostage). Every client that
talks to a server (the served backend, the Ollama judge, the OpenAI-compatible judge) sends through
:class:`pointfail.running.served.bounded.BoundedTransport`, an ``httpx.AsyncBaseTransport`` around httpx's own ``AsyncHTTPTransport``
(its connection limits), so the SDKs (``openai``, ``ollama``) keep doing the requests:

* a **total deadline** per request (connect + headers + the whole body) on a wall clock: a server that
  drips its answer a byte a second is given up after ``deadline_s`` seconds (``httpx``'s own timeouts
  are per read and never fire on a drip). Overrunning it raises ``DeadlineExceeded`` (an
  ``httpx.TimeoutException``): a transport failure, retried like any timeout;
* a **byte cap** on the body, counted while it streams (and refused at once from ``Content-Length``):
  ``ReplyTooLarge``, final for that request (a rerun would get the same body);
* **no redirects**: a 3xx is never followed (the image and prompt would go elsewhere) and raises
  ``Redirected`` naming the target, final;
* ``Accept-Encoding: identity`` is asked for and a compressed body refused (``ReplyTooLarge``
  counts wire bytes; a compressed body could expand past any cap).

One classification for every client (:func:`classify`): ``"retry"`` (a transport failure: 408, 409,
429, 5xx, timeouts and the deadline, refused or dropped connections, protocol errors such as oversized
headers, a 2xx body that is not a usable reply: not JSON, truncated, too deeply nested, no choices),
``"final"`` (everything else: 4xx, a redirect, a body over the cap; recorded as that sample's error
with the server's own message, :func:`describe`). A refusal or content filter is not a failure at all:
it is a reply, recorded as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Byte cap on one response body (4 MiB): a chat completion of a capped answer is a few KiB; the
model's own text is capped again when it is read (:mod:`pointfail.limits`)."""

RETRY_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses below 500 that are retried (the ``openai`` client's own retry set)."""


class MalformedReply(Exception):
    """A 2xx body that is not a usable chat completion (not JSON, no ``choices``, no message)."""


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it (``__cause__``, else ``__context__``), outermost first, at most 8."""
    out: list[BaseException] = []
    cur: Optional[BaseException] = exc
    while cur is not None and len(out) < 8 and cur not in out:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def bound_failure(exc: BaseException) -> Optional[BaseException]:
    """The ``DeadlineExceeded``, ``ReplyTooLarge`` or ``Redirected`` (:mod:`pointfail.running.served.bounded`) behind ``exc``
    (an SDK wraps transport errors: ``openai.APIConnectionError`` from ours), else ``None``."""
    from pointfail.running.served.bounded import DeadlineExceeded, Redirected, ReplyTooLarge

    for e in exception_chain(exc):
        if isinstance(e, (DeadlineExceeded, Redirected, ReplyTooLarge)):
            return e
    return None


def classify(exc: BaseException) -> Literal["retry", "final"]:
    """``"retry"`` for a transport failure, ``"final"`` for anything else (module docstring), for
    exceptions of either SDK, httpx, or this module."""
    from pointfail.running.served.bounded import FINAL, DeadlineExceeded

    bound = bound_failure(exc)
    if isinstance(bound, FINAL):
        return "final"
    if isinstance(exc, (MalformedReply, RecursionError)) or isinstance(bound, DeadlineExceeded):
        return "retry"
    code = status_of(exc)
    if code is not None:
        return "retry" if code >= 500 or code in RETRY_STATUSES else "final"
    import httpx
    import openai

    if isinstance(exc, (openai.APIConnectionError, openai.APIResponseValidationError, httpx.TransportError,
                        ConnectionError, TimeoutError)):
        return "retry"
    return "final"


def is_retryable(exc: BaseException) -> bool:
    """``classify(exc) == "retry"``."""
    return classify(exc) == "retry"


def describe(exc: BaseException, limit: int = 500) -> str:
    """One line for a record: the exception's type and message, the server's own message kept (an
    HTTP error's body), the bound that fired named instead of an SDK's generic wrapper
    ("Connection error."). Lone surrogates replaced; at most ``limit`` characters."""
    from pointfail.safeio import valid_text

    inner = bound_failure(exc)
    e = inner if inner is not None else exc
    code = status_of(e)
    text = f"{type(e).__name__}: {e}"
    if code is not None:
        text = f"HTTP {code}: {server_message(e)}"
    return " ".join(valid_text(text)[0].split())[:limit]


def server_message(exc: BaseException) -> str:
    """The server's own reason for an HTTP error, as it sent it: the body's ``error.message``,
    ``detail`` or ``message`` (OpenAI, FastAPI and vLLM spell it so), else the body's text; capped at
    500 characters. ``openai`` keeps a body without an ``error`` key out of the exception's text
    (``Error code: 400``), which would drop e.g. ``transformers serve``'s "Server is pinned to ...".
    """
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        err = body.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        msg = msg or body.get("detail") or body.get("message")
    elif isinstance(body, str):
        msg = body
    if not msg:
        resp = getattr(exc, "response", None)
        try:
            msg = resp.text if resp is not None else None
        except Exception:  # a streamed or closed body
            msg = None
    text = str(msg) if msg else str(exc)
    return f"{type(exc).__name__}: {text}"[:500]


class ServerDown(Exception):
    """Raised inside a retry loop once another request (of the same judge or served backend) found
    the server unavailable, so the remaining requests stop retrying; the message says why."""


@dataclass
class FailureCount:
    """Transport failures of one request (all its attempts), counted by the retry loop: ``n``."""

    n: int = 0


def status_of(exc: BaseException) -> Optional[int]:
    """The HTTP status of an ``openai.APIStatusError`` or ``ollama.ResponseError``, else ``None``."""
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def is_openai_transport_error(exc: BaseException) -> bool:
    """True for failures of an ``openai`` client request worth retrying (:func:`classify`):
    ``openai.APIStatusError`` with status 408, 409, 429 or >= 500; ``openai.APIConnectionError``
    (timeouts and the total deadline included) unless it wraps a final bound (``ReplyTooLarge``,
    ``Redirected``); ``openai.APIResponseValidationError`` and :class:`MalformedReply` (a body
    that is not a chat completion); ``httpx.TransportError``."""
    return is_retryable(exc)


def retry_after_s(exc: BaseException) -> Optional[float]:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header of the failed response, if any."""
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return float(ms) / 1000.0
        s = headers.get("retry-after")
        return float(s) if s is not None else None
    except (TypeError, ValueError):
        return None


def retrying(is_transport: Callable[[BaseException], bool], *, retries: int, backoff_initial: float,
             backoff_max: float, stop_when: Optional[Callable[[], bool]] = None) -> Any:
    """A ``tenacity.AsyncRetrying`` that retries transport failures (``is_transport(exc)``) at most
    ``retries`` times with the backoff in the module docstring, and stops early once ``stop_when()``
    is true (another request found the server down). Re-raises the last exception.

    Use::

        async for attempt in retrying(...):
            with attempt:
                ...
    """
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

    exp = wait_exponential(multiplier=backoff_initial, max=backoff_max)

    def wait(state: Any) -> float:
        base = exp(state)
        exc = state.outcome.exception() if state.outcome is not None else None
        ra = retry_after_s(exc) if exc is not None else None
        return min(backoff_max, max(base, ra)) if ra is not None else base

    attempts = stop_after_attempt(retries + 1)

    def stop(state: Any) -> bool:  # tenacity takes any callable as a stop strategy
        return attempts(state) or (stop_when is not None and bool(stop_when()))

    return AsyncRetrying(retry=retry_if_exception(is_transport), stop=stop, wait=wait, reraise=True)
