"""One chat-completions request through the ``openai`` client, and what the served backend and the
OpenAI-compatible judge share: the async client, the image content part, and reading a reply.

The request (OpenAI chat completions, as vLLM, SGLang, Ollama, llama.cpp, LM Studio and ``transformers
serve`` accept it): an optional system message, then one user turn whose content is the image as a
base64 PNG ``image_url`` part (``data:image/png;base64,...``, lossless) followed by the text part, the
layout of the in-container backends (image first, then the prompt). PNG is used so the server decodes
exactly the pixels the client holds.

A reply is read into a :class:`Reply`: ``text`` (``message.content``, ``""`` when absent), ``refusal``
(``message.refusal``), ``finish_reason`` (``content_filter`` marks a filtered reply), token ``usage``,
and the ``model`` the server named. A body that is not a chat completion (not JSON, nested too deeply
to parse, no choices, no message) raises :class:`~pointfail.running.served.transport.MalformedReply`, a
transport failure.

Every value from the server is checked at this boundary (issue 24), with a flag in ``Reply.flags``
(recorded in the response's ``flags``) instead of a lost answer:

* ``message.content`` may be a list of content parts (the chat-completions format allows it): the text
  is the concatenation of its ``text`` parts in order (``content_parts_joined``); other parts (images,
  audio) are ignored (``content_parts_ignored``). Content of any other type (a number, an object) is
  :class:`ContentTypeError`, final for that sample, never an empty answer.
* Lone surrogates in any text are replaced by U+FFFD (``invalid_unicode_replaced``).
* A token count that is not a finite non-negative integer (``1e309``, ``NaN``, ``-1``, ``"12"``) is
  dropped (``None``) with ``non_finite_usage_dropped``; the answer is kept.

The HTTP client is :func:`pointfail.running.served.bounded.http_client` (total deadline, body cap, no
redirects).
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from pointfail.running.served.transport import DEFAULT_MAX_BODY_BYTES, MalformedReply


class ContentTypeError(Exception):
    """``message.content`` is neither a string, null, nor a list of content parts; final for the sample."""


@dataclass
class Reply:
    """One chat completion as read: text, refusal, finish reason, token counts, server's model name,
    and the ``flags`` of what was repaired at the boundary (module docstring)."""

    text: str
    refusal: Optional[str]
    finish_reason: Optional[str]
    prompt_tokens: Optional[int]
    output_tokens: Optional[int]
    model: Optional[str]
    flags: list[str] = field(default_factory=list)

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


def async_client(base_url: str, key: str, *, timeout_s: float, concurrency: int,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Any:
    """An ``openai.AsyncOpenAI`` with the client's own retries off (retries are ours, counted) over
    :func:`pointfail.running.served.bounded.http_client`: a total deadline of ``timeout_s`` seconds per
    request (connect + headers + body, wall clock), a body cap of ``max_body_bytes``, no redirects,
    and a connection pool sized to ``concurrency``."""
    import openai

    from pointfail.running.served.bounded import http_client

    http = http_client(deadline_s=timeout_s, max_body_bytes=max_body_bytes, concurrency=concurrency)
    # openai accepts an httpx.AsyncClient at run time (its is_legacy_httpx_async_client check); its
    # annotation names only httpx2's client class
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout_s,
                              http_client=http)  # type: ignore[arg-type]


def png_bytes(image: Any) -> bytes:
    """A PIL image as PNG bytes (lossless; compress level 1, the size matters less than the time)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def data_url(data: bytes, mime: str = "image/png") -> str:
    """``data:<mime>;base64,...`` for image file bytes (``mime`` ``image/png`` or ``image/jpeg``)."""
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def image_part(image: bytes | str) -> dict[str, Any]:
    """The chat-completions content part for an image: ``{"type": "image_url", "image_url": {"url":
    "data:image/png;base64,..."}}``; ``image`` is PNG bytes or a data URL already made
    (:func:`data_url`, which the served backend keeps per image)."""
    return {"type": "image_url", "image_url": {"url": image if isinstance(image, str) else data_url(image)}}


def messages(image: bytes | str, text: str, system: Optional[str] = None) -> list[dict[str, Any]]:
    """``[system?, user: [image, text]]`` (see the module docstring); ``image`` as :func:`image_part`
    takes it."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    out.append({"role": "user", "content": [image_part(image), {"type": "text", "text": text}]})
    return out


async def chat_once(client: Any, **create: Any) -> Reply:
    """One ``client.chat.completions.create(**create)`` (non-streaming), read into a :class:`Reply`.

    Raises:
        MalformedReply: the body is not JSON or has no choice with a message.
        openai exceptions: as the client raises them (the caller classifies them with
            :func:`pointfail.running.served.transport.is_openai_transport_error`).
    """
    try:
        resp = await client.chat.completions.create(**create)
    except json.JSONDecodeError as e:
        raise MalformedReply(f"response body is not JSON: {e}") from None
    except RecursionError:
        raise MalformedReply("response body is JSON nested too deeply to read") from None
    if isinstance(resp, str) or not isinstance(getattr(resp, "choices", None), list) or not resp.choices:
        raise MalformedReply("response has no choices")
    choice = resp.choices[0]
    msg = getattr(choice, "message", None)
    if msg is None or isinstance(msg, (str, int, float, list)):
        raise MalformedReply("response choice has no message")
    flags: list[str] = []
    text = message_text(getattr(msg, "content", None), flags)
    usage = getattr(resp, "usage", None)
    finish = getattr(choice, "finish_reason", None)
    return Reply(
        text=text,
        refusal=_text(getattr(msg, "refusal", None), flags),
        finish_reason=_text(finish, flags),
        prompt_tokens=token_count(getattr(usage, "prompt_tokens", None), flags),
        output_tokens=token_count(getattr(usage, "completion_tokens", None), flags),
        model=_text(getattr(resp, "model", None), flags),
        flags=sorted(set(flags)),
    )


def _text(value: Any, flags: list[str]) -> Optional[str]:
    from pointfail.safeio import INVALID_UNICODE_FLAG, valid_text

    if not isinstance(value, str):
        return None
    out, fixed = valid_text(value)
    if fixed:
        flags.append(INVALID_UNICODE_FLAG)
    return out


def message_text(content: Any, flags: list[str]) -> str:
    """The answer text of a chat message's ``content`` (rules in the module docstring); appends to
    ``flags`` what was done.

    Raises:
        ContentTypeError: ``content`` is a number, a bool, an object, or a list holding something
            other than content-part objects.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return _text(content, flags) or ""
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict):
                kind, value = part.get("type"), part.get("text")
            else:  # the openai SDK may hand back its own content-part objects
                kind, value = getattr(part, "type", None), getattr(part, "text", None)
            if kind == "text" and isinstance(value, str):
                parts.append(_text(value, flags) or "")
            elif isinstance(kind, str):
                flags.append("content_parts_ignored")
            else:
                raise ContentTypeError(f"message.content list holds a {type(part).__name__} that is not a "
                                       "content part")
        flags.append("content_parts_joined")
        return "".join(parts)
    raise ContentTypeError(f"message.content is a {type(content).__name__}, not text or content parts")


def token_count(value: Any, flags: list[str]) -> Optional[int]:
    """A usage token count as an ``int``, or ``None`` (flag ``non_finite_usage_dropped``) for a value
    that is not a finite non-negative whole number (``1e309`` reads as infinity, ``NaN``, ``-1``, a
    string, a bool). ``None`` stays ``None`` without a flag."""
    import math

    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    flags.append("non_finite_usage_dropped")
    return None
