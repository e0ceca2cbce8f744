"""Served models: evaluate (and judge) through any OpenAI-compatible chat-completions server.

A served model is a family (frame, prompt, parser: :mod:`pointfail.families`) answered by a server
instead of by the family's backend inside its image: vLLM, SGLang, Ollama's or llama.cpp's OpenAI
endpoints, ``transformers serve``, or a hosted API. Modules:

* :mod:`pointfail.running.served.options`: :class:`~pointfail.running.served.options.ServedOptions`, the validated
  ``options`` table of a ``kind = "server"`` model, and the PointerBench frontier preset.
* :mod:`pointfail.running.served.inputs`: the frame the server saw (what image size to send, which
  model-input size to record).
* :mod:`pointfail.running.served.transport`: the retry policy (tenacity) shared with the judges, and which
  ``openai`` exceptions are transport failures.
* :mod:`pointfail.running.served.client`: one chat-completions request through the ``openai`` client, read
  into a :class:`~pointfail.running.served.client.Reply` (text, refusal, finish reason, token usage).
* :mod:`pointfail.running.served.backend`: :func:`~pointfail.running.served.backend.run_served`, requests JSONL in,
  responses JSONL out (the worker's formats), bounded concurrency, resumable, with a progress bar.

Nothing here imports torch or transformers; ``openai``, ``httpx`` and ``tenacity`` load lazily.
"""
