"""``openai``: the same judge protocol through any OpenAI-compatible server (:class:`pointfail.running.judges.served.OpenAIJudge`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from pointfail.running.judges.kinds import JudgeKind, JudgeSetupError
from pointfail.running.judges.kinds.ollama import chat_options


class OpenAI(JudgeKind):
    """Settings: ``openai_base_url`` and ``openai_model`` (required), ``openai_api_key_env``, ``seed``,
    ``num_predict`` (sent as ``max_tokens``), ``temperature`` and :func:`~pointfail.running.judges.kinds.ollama.chat_options`."""

    name = "openai"
    summary = "a model judge behind any OpenAI-compatible server (vLLM, SGLang, llama.cpp, ...)"
    model_judge = True
    extra = "judge"

    def server_url(self, settings: Mapping[str, Any]) -> Optional[str]:
        return settings.get("openai_base_url")

    def make(self, settings: Mapping[str, Any]) -> list[Any]:
        from pointfail.running.judges.served import DEFAULT_OPTIONS, OpenAIJudge

        base_url, model = settings.get("openai_base_url"), settings.get("openai_model")
        if not base_url or not model:
            raise JudgeSetupError("--judge openai needs --base-url and --model (or [judge] openai_base_url and "
                                  "openai_model in study.toml)")
        options = dict(DEFAULT_OPTIONS)
        if settings.get("seed") is not None:
            options["seed"] = int(settings["seed"])
        if settings.get("num_predict") is not None:
            options["max_tokens"] = int(settings["num_predict"])
        if settings.get("temperature") is not None:
            options["temperature"] = float(settings["temperature"])
        return [OpenAIJudge(model=model, base_url=base_url, api_key_env=settings.get("openai_api_key_env"),
                            options=options, **chat_options(settings))]


KIND = OpenAI()
