"""Machinery of the judge stage: the clients (Ollama, OpenAI-compatible, human), the judge
kinds, the rendering of a miss, and the stage over a study's records. The judge's method
(miss, oracle, protocol, agreement) stays in ``pointfail.judge``.
"""
