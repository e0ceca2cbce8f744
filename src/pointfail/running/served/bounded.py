"""The bounded HTTP transport every client that talks to a server uses (the served backend, the Ollama
judge, the OpenAI-compatible judge): httpx's own ``AsyncHTTPTransport`` (its connection limits) wrapped
so that one request has a total wall-clock deadline (connect + headers + the whole body), a byte cap on
its body counted while it streams, and no redirect followed. The rules and the one classification of
failures are in :mod:`pointfail.running.served.transport` (which stays import-light; this module imports httpx).
"""

from __future__ import annotations

from typing import Any

import httpx

from pointfail.running.served.transport import DEFAULT_MAX_BODY_BYTES

__all__ = ["DeadlineExceeded", "ReplyTooLarge", "Redirected", "FINAL", "BoundedTransport", "http_client",
           "transport_for"]


class DeadlineExceeded(httpx.TimeoutException):
    """The request's total deadline (connect + headers + body, wall clock) ran out; a transport
    failure (retried)."""


class ReplyTooLarge(httpx.TransportError):
    """The response body is over the byte cap (or compressed, so its size is unknown); final."""


class Redirected(httpx.TransportError):
    """The server answered with a redirect, which is never followed; the message names the target.
    Final."""


FINAL = (ReplyTooLarge, Redirected)
"""The bounds that are final for a request (never retried)."""


class _BoundedStream(httpx.AsyncByteStream):
    """The body of one response, read under the request's deadline and byte cap."""

    def __init__(self, inner: Any, deadline: float, max_bytes: int, url: str, budget_s: float):
        self._inner = inner
        self._deadline = deadline
        self._max = max_bytes
        self._url = url
        self._budget = budget_s

    async def __aiter__(self) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()
        it = self._inner.__aiter__()
        n = 0
        while True:
            left = self._deadline - loop.time()
            if left <= 0:
                raise DeadlineExceeded(f"no complete reply from {self._url} within the deadline of "
                                       f"{self._budget:g} s ({n} body bytes read)")
            try:
                async with asyncio.timeout(left):
                    chunk = await it.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise DeadlineExceeded(f"no complete reply from {self._url} within the deadline of "
                                       f"{self._budget:g} s ({n} body bytes read)") from None
            n += len(chunk)
            if n > self._max:
                raise ReplyTooLarge(f"reply body from {self._url} is over the cap of {self._max} bytes; "
                                    "not read further")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """httpx's ``AsyncHTTPTransport`` with a total deadline, a body byte cap and no redirects (rules
    in the module docstring).

    Args:
        deadline_s: seconds, wall clock, from sending the request to the last byte of the body.
        max_body_bytes: bytes of body (as sent on the wire) read at most.
        max_connections: the connection pool's size (``httpx.Limits``).

    Raises (from ``handle_async_request`` or while the body is read):
        DeadlineExceeded, ReplyTooLarge, Redirected; httpx's own transport errors.
    """

    def __init__(self, *, deadline_s: float, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 max_connections: int = 8):
        if deadline_s <= 0 or max_body_bytes < 1:
            raise ValueError(f"deadline_s must be > 0 and max_body_bytes >= 1 (got {deadline_s}, {max_body_bytes})")
        self.deadline_s = float(deadline_s)
        self.max_body_bytes = int(max_body_bytes)
        self._inner = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=max_connections,
                                                                   max_keepalive_connections=max_connections))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import asyncio

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline_s
        url = f"{request.url.scheme}://{request.url.host}:{request.url.port or ''}{request.url.path}"
        request.headers["Accept-Encoding"] = "identity"
        try:
            async with asyncio.timeout(self.deadline_s):
                resp = await self._inner.handle_async_request(request)
        except TimeoutError:
            raise DeadlineExceeded(f"no reply headers from {url} within the deadline of {self.deadline_s:g} s",
                                   request=request) from None
        try:
            if 300 <= resp.status_code < 400:
                target = resp.headers.get("location", "(no Location header)")[:300]
                raise Redirected(f"HTTP {resp.status_code} redirect from {url} to {target} refused (redirects "
                                 "are never followed)", request=request)
            enc = resp.headers.get("content-encoding", "identity").strip().lower()
            if enc not in ("", "identity"):
                raise ReplyTooLarge(f"reply from {url} is {enc}-compressed (identity was asked for); its size "
                                    "cannot be capped, refused", request=request)
            length = resp.headers.get("content-length")
            if length is not None and length.strip().isdigit() and int(length) > self.max_body_bytes:
                raise ReplyTooLarge(f"reply body from {url} is {int(length)} bytes, over the cap of "
                                    f"{self.max_body_bytes} bytes; not read", request=request)
        except BaseException:
            await resp.aclose()
            raise
        return httpx.Response(status_code=resp.status_code, headers=resp.headers,
                              stream=_BoundedStream(resp.stream, deadline, self.max_body_bytes, url, self.deadline_s),
                              extensions=resp.extensions, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(*, deadline_s: float, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, concurrency: int = 4,
                **kwargs: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` over :class:`BoundedTransport` (pool of ``concurrency + 2``), no
    redirects followed, httpx's per-phase timeouts at ``deadline_s`` (connect capped at 10 s). The
    ``openai`` SDK takes it as ``http_client``; ``kwargs`` go to ``httpx.AsyncClient``."""
    return httpx.AsyncClient(transport=transport_for(deadline_s, max_body_bytes, concurrency),
                             timeout=httpx.Timeout(deadline_s, connect=min(10.0, deadline_s)),
                             follow_redirects=False, **kwargs)


def transport_for(deadline_s: float, max_body_bytes: int, concurrency: int) -> BoundedTransport:
    """The :class:`BoundedTransport` every client uses (the ``ollama`` SDK takes it as ``transport``)."""
    return BoundedTransport(deadline_s=deadline_s, max_body_bytes=max_body_bytes, max_connections=concurrency + 2)
