"""The model judge's default settings, in a module that imports nothing, so the command line can show
them in ``--help`` without importing the judge client (pydantic, asyncio, httpx).

Source: the study's judge protocol (Gemma 4 through Ollama, greedy decoding, a fixed seed).
"""

from __future__ import annotations

__all__ = ["DEFAULT_HOST", "DEFAULT_MODEL", "DEFAULT_OPTIONS"]

DEFAULT_MODEL = "gemma4:31b"
"""The judge model's Ollama tag. The study names "Gemma 4 in its 32B variant"; the released dense
model is Gemma 4 31B, published in the Ollama library as ``gemma4:31b`` (Ollama >= 0.20.0)."""

DEFAULT_HOST = "http://127.0.0.1:11434"
"""Used when neither an explicit host nor ``OLLAMA_HOST`` is given (Ollama's default port)."""

DEFAULT_OPTIONS: dict[str, object] = {"temperature": 0.0, "seed": 0, "num_ctx": 8192, "num_predict": 64}
"""Fixed generation options: greedy decoding, a fixed seed, a context of 8192 tokens (the prompt plus
one image of at most 1120 tokens fits), and a cap of 64 output tokens (one label, or a short sentence)."""
