"""Served models: evaluate (and judge) through any OpenAI-compatible chat-completions server.

A served model is a family (frame, prompt, parser: :mod:`pointfail.families`) answered by a server
instead of by the family's backend inside its image: vLLM, SGLang, Ollama's or llama.cpp's OpenAI
endpoints, ``transformers serve``, or a hosted API. Modules:

* :mod:`pointfail.served.options`: :class:`~pointfail.served.options.ServedOptions`, the validated
  ``options`` table of a ``kind = "server"`` model, and the PointerBench frontier preset.
* :mod:`pointfail.served.inputs`: the frame the server saw (what image size to send, which
  model-input size to record).
* :mod:`pointfail.served.transport`: the retry policy (tenacity) shared with the judges, and which
  ``openai`` exceptions are transport failures.
* :mod:`pointfail.served.client`: one chat-completions request through the ``openai`` client, read
  into a :class:`~pointfail.served.client.Reply` (text, refusal, finish reason, token usage).
* :mod:`pointfail.served.backend`: :func:`~pointfail.served.backend.run_served`, requests JSONL in,
  responses JSONL out (the worker's formats), bounded concurrency, resumable, with a progress bar.

Nothing here imports torch or transformers; ``openai``, ``httpx`` and ``tenacity`` load lazily.
"""
