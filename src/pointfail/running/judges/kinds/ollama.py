"""``ollama``: a vision-language model judge through an Ollama server (:class:`pointfail.running.judges.client.OllamaJudge`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from pointfail.running.judges.kinds import JudgeKind


def chat_options(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments every chat judge takes from ``settings``: ``concurrency`` (default 4),
    ``timeout_s`` (``timeout``, default 300 s), ``transport_retries`` (default 6), ``use_schema`` (not
    ``no_schema``)."""
    return {"concurrency": int(settings.get("concurrency") or 4),
            "timeout_s": float(settings.get("timeout") or 300.0),
            "transport_retries": int(settings["transport_retries"]) if settings.get("transport_retries") is not None else 6,
            "use_schema": not settings.get("no_schema", False)}


class Ollama(JudgeKind):
    """Settings: ``host`` (default ``$OLLAMA_HOST``, else loopback 11434), ``ollama_model`` (default
    :data:`pointfail.running.judges.settings.DEFAULT_MODEL`), ``seed``, ``num_ctx``, ``num_predict``, ``temperature`` (defaults
    :data:`pointfail.running.judges.settings.DEFAULT_OPTIONS`) and :func:`chat_options`."""

    name = "ollama"
    summary = "a model judge through Ollama (Gemma 4 by default)"
    model_judge = True
    extra = "judge"

    def server_url(self, settings: Mapping[str, Any]) -> Optional[str]:
        from pointfail.running.judges.client import resolve_host

        return resolve_host(settings.get("host"))

    def make(self, settings: Mapping[str, Any]) -> list[Any]:
        from pointfail.running.judges.client import OllamaJudge
        from pointfail.running.judges.settings import DEFAULT_MODEL, DEFAULT_OPTIONS

        options = dict(DEFAULT_OPTIONS)
        options.update({k: int(settings[k]) for k in ("seed", "num_ctx", "num_predict") if settings.get(k) is not None})
        if settings.get("temperature") is not None:
            options["temperature"] = float(settings["temperature"])
        return [OllamaJudge(host=settings.get("host"), model=settings.get("ollama_model") or DEFAULT_MODEL,
                            options=options, **chat_options(settings))]


KIND = Ollama()
