"""Stage 2 of the study: every miss, and only misses, gets one failure mode or none.

Modules: ``render`` (annotated PNG per miss), ``protocol`` (the fixed prompt and the strict
single-label rule), ``client`` (Ollama judge: fixed options, bounded concurrency, transport retries),
``oracle`` (exact labels from scene graphs), ``stage`` (the stage over a study's records, crash-safe),
``agreement`` (judge validity against the oracle). Nothing here is imported by ``import pointfail``;
``ollama`` and ``httpx`` are imported only by ``client``.
"""
