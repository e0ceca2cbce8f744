"""Transport retries shared by the served backend and the judges (Ollama and OpenAI-compatible).

A *transport failure* is a failure of the exchange, not an answer: HTTP 429 (rate limited), 408 and
409 (the ``openai`` client's own retryable statuses), any 5xx, a timeout, a refused or dropped
connection, or a body that is not a chat completion (malformed JSON, no choices). It is retried with
exponential backoff; anything else (400 bad request, 401, 404 unknown model, a refusal, a
content-filtered reply) is not. Retries go through ``tenacity``'s ``AsyncRetrying``; every failed
attempt is counted by the caller so records can say how many requests a sample took.

Backoff: attempt ``n`` (1-based) that failed waits ``min(backoff_max, backoff_initial * 2**(n-1))``
seconds, or the server's ``Retry-After`` header (seconds, capped at ``backoff_max``) when that is longer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

RETRY_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses below 500 that are retried (the ``openai`` client's own retry set)."""


class MalformedReply(Exception):
    """A 2xx body that is not a usable chat completion (not JSON, no ``choices``, no message)."""


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
    """True for failures of an ``openai`` client request worth retrying: ``openai.APIStatusError``
    with status 408, 409, 429 or >= 500; ``openai.APIConnectionError`` (timeouts included:
    ``APITimeoutError`` is a subclass); ``openai.APIResponseValidationError`` and
    :class:`MalformedReply` (a body that is not a chat completion); ``httpx.TransportError``."""
    import httpx
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500 or exc.status_code in RETRY_STATUSES
    return isinstance(exc, (openai.APIConnectionError, openai.APIResponseValidationError, MalformedReply,
                            httpx.TransportError))


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
