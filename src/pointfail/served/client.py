"""One chat-completions request through the ``openai`` client, and what the served backend and the
OpenAI-compatible judge share: the async client, the image content part, and reading a reply.

The request (OpenAI chat completions, as vLLM, SGLang, Ollama, llama.cpp, LM Studio and ``transformers
serve`` accept it): an optional system message, then one user turn whose content is the image as a
base64 PNG ``image_url`` part (``data:image/png;base64,...``, lossless) followed by the text part, the
layout of the in-container backends (image first, then the prompt). PNG is used so the server decodes
exactly the pixels the client holds.

A reply is read into a :class:`Reply`: ``text`` (``message.content``, ``""`` when absent), ``refusal``
(``message.refusal``), ``finish_reason`` (``content_filter`` marks a filtered reply), token ``usage``,
and the ``model`` the server named. A body that is not a chat completion (not JSON, no choices, no
message) raises :class:`~pointfail.served.transport.MalformedReply`, a transport failure.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from typing import Any, Optional

from pointfail.served.transport import MalformedReply


@dataclass
class Reply:
    """One chat completion as read: text, refusal, finish reason, token counts, server's model name."""

    text: str
    refusal: Optional[str]
    finish_reason: Optional[str]
    prompt_tokens: Optional[int]
    output_tokens: Optional[int]
    model: Optional[str]

    @property
    def filtered(self) -> bool:
        """The reply was refused or content-filtered (recorded as such, never retried)."""
        return self.refusal is not None or self.finish_reason == "content_filter"


def api_key(env_name: Optional[str]) -> str:
    """The API key from the environment variable ``env_name``; servers that need none (loopback vLLM,
    ``transformers serve``) get the placeholder ``"none"`` (the ``openai`` client requires a value).

    Raises:
        ValueError: ``env_name`` is given but the variable is not set (named, value never shown).
    """
    import os

    if not env_name:
        return "none"
    value = os.environ.get(env_name)
    if not value:
        raise ValueError(f"API key variable {env_name} is not set")
    return value


def async_client(base_url: str, key: str, *, timeout_s: float, concurrency: int) -> Any:
    """An ``openai.AsyncOpenAI`` with the client's own retries off (retries are ours, counted), a
    per-request timeout of ``timeout_s`` seconds (connect capped at 10 s) and a connection pool sized
    to ``concurrency``."""
    import httpx
    import openai

    http = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
                             limits=httpx.Limits(max_connections=concurrency + 2,
                                                 max_keepalive_connections=concurrency + 2))
    # openai accepts an httpx.AsyncClient at run time (its is_legacy_httpx_async_client check); its
    # annotation names only httpx2's client class
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout_s,
                              http_client=http)  # type: ignore[arg-type]


def png_bytes(image: Any) -> bytes:
    """A PIL image as PNG bytes (lossless; compress level 1, the size matters less than the time)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def image_part(png: bytes) -> dict[str, Any]:
    """The chat-completions content part for a PNG: ``{"type": "image_url", "image_url": {"url":
    "data:image/png;base64,..."}}``."""
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}}


def messages(png: bytes, text: str, system: Optional[str] = None) -> list[dict[str, Any]]:
    """``[system?, user: [image, text]]`` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    out.append({"role": "user", "content": [image_part(png), {"type": "text", "text": text}]})
    return out


async def chat_once(client: Any, **create: Any) -> Reply:
    """One ``client.chat.completions.create(**create)`` (non-streaming), read into a :class:`Reply`.

    Raises:
        MalformedReply: the body is not JSON or has no choice with a message.
        openai exceptions: as the client raises them (the caller classifies them with
            :func:`pointfail.served.transport.is_openai_transport_error`).
    """
    try:
        resp = await client.chat.completions.create(**create)
    except json.JSONDecodeError as e:
        raise MalformedReply(f"response body is not JSON: {e}") from None
    if isinstance(resp, str) or not getattr(resp, "choices", None):
        raise MalformedReply("response has no choices")
    choice = resp.choices[0]
    msg = getattr(choice, "message", None)
    if msg is None:
        raise MalformedReply("response choice has no message")
    usage = getattr(resp, "usage", None)
    return Reply(
        text=msg.content if isinstance(msg.content, str) else "",
        refusal=msg.refusal if isinstance(getattr(msg, "refusal", None), str) else None,
        finish_reason=choice.finish_reason if isinstance(choice.finish_reason, str) else None,
        prompt_tokens=getattr(usage, "prompt_tokens", None) if usage is not None else None,
        output_tokens=getattr(usage, "completion_tokens", None) if usage is not None else None,
        model=resp.model if isinstance(getattr(resp, "model", None), str) else None,
    )
