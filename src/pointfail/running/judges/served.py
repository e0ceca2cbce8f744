"""The judge through any OpenAI-compatible server (``pointfail judge --judge openai``): e.g. Gemma served
by vLLM, SGLang, llama.cpp, LM Studio, Ollama's OpenAI endpoint, or a hosted API.

The protocol is the Ollama judge's, through the same code path (:class:`pointfail.running.judges.client.ChatJudge`):
the fixed prompt (:func:`pointfail.judge.protocol.build_prompt`) with the annotated PNG, strictly one
label read by :func:`pointfail.judge.protocol.read_label`, up to five label attempts with the seed
advanced per attempt, every raw reply kept, transport failures (429, 408/409, 5xx, timeouts and the total deadline, dropped
connections, malformed bodies: :func:`pointfail.running.served.transport.classify`) retried
apart from label attempts and counted in ``Judgment.transport_failures``, the judge marked down when
retries run out or the model is not on the server.

Request (:mod:`pointfail.running.served.client`): one user turn, the annotated PNG as a base64 ``image_url``
part then the prompt; ``temperature``, ``seed``, ``max_tokens`` from :data:`DEFAULT_OPTIONS`; with
``use_schema``, ``response_format`` is a JSON schema of :data:`~pointfail.judge.protocol.LABEL_SCHEMA`.
A refusal or a content-filtered reply is a reply: its text (usually empty) is an attempt that gives no
label. The judge's name in records is ``openai:<model>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from pointfail.running.judges.settings import DEFAULT_OPTIONS as OLLAMA_OPTIONS
from pointfail.running.judges.client import ChatJudge, ServerInfo
from pointfail.judge.protocol import LABEL_SCHEMA
from pointfail.running.served.transport import FailureCount, ServerDown

DEFAULT_OPTIONS: dict[str, Any] = {
    "temperature": OLLAMA_OPTIONS["temperature"],
    "seed": OLLAMA_OPTIONS["seed"],
    "max_tokens": OLLAMA_OPTIONS["num_predict"],
}
"""Greedy decoding, a fixed seed (attempt ``k`` sends ``seed + k - 1``), 64 output tokens (the Ollama
judge's ``num_predict``)."""


@dataclass
class OpenAIJudge(ChatJudge):
    """A judge behind an OpenAI-compatible chat-completions server (protocol: :class:`ChatJudge`).

    Attributes (besides :class:`ChatJudge`'s):
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key_env: environment variable holding the API key (``None``: the server needs none).
    """

    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: Optional[str] = None
    options: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_OPTIONS))

    @property
    def name(self) -> str:
        """The judge's name in records: ``openai:<model>``."""
        return f"openai:{self.model}"

    @property
    def where(self) -> str:
        return self.base_url

    def down_reason(self, exc: BaseException) -> Optional[str]:
        from pointfail.running.served.transport import status_of

        if status_of(exc) == 404:
            return f"model {self.model} not served at {self.base_url} ({type(exc).__name__}: {exc})"
        return None

    async def _open(self) -> Any:
        from pointfail.running.served.client import api_key, async_client

        return async_client(self.base_url, api_key(self.api_key_env), timeout_s=self.timeout_s,
                            concurrency=self.concurrency, max_body_bytes=self.max_body_bytes)

    async def _server_info(self) -> ServerInfo:
        """The model list (``GET /models``): a server that answers it without the judge model marks the
        judge down; one that does not implement it (404) is not held against it."""
        from pointfail.running.served.transport import status_of

        info = ServerInfo()
        try:
            page = await self._call(self._client.models.list, FailureCount())
            ids = [m.id for m in getattr(page, "data", []) or []]
            if ids and self.model not in ids:
                info.error = f"model {self.model} not in the server's models ({', '.join(ids[:10])})"
                self._down = f"model {self.model} not served at {self.base_url}"
        except Exception as e:
            if status_of(e) == 404:
                return info
            from pointfail.running.served.transport import describe

            info.error = describe(e)
            if self.is_transport_error(e) or isinstance(e, ServerDown):
                self._down = f"server unreachable at {self.base_url}: {info.error}"
        return info

    async def _request(self, prompt: str, png: bytes, options: dict[str, Any]) -> tuple[str, list[str]]:
        from pointfail.running.served.client import chat_once, messages

        create: dict[str, Any] = {"model": self.model, "messages": messages(png, prompt), **options}
        if self.use_schema:
            create["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "failure_mode", "schema": LABEL_SCHEMA,
                                                         "strict": True}}
        reply = await chat_once(self._client, **create)  # content parts joined, text made valid
        return reply.text, reply.flags
