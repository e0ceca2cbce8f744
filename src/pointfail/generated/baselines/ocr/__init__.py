"""The ``ocr`` baseline: a non-VLM pointer that reads the screenshot with Tesseract and the instruction
with rules, and answers in the ``json_pixels`` convention.

Issue 4 ("two baselines that need no weights"): it reads quoted text, cell references such as ``E15``
against the row and column headers it finds, and "before/after the word ..." caret positions. It is a
floor for GUI grounding, not a model: an instruction it cannot read, or text it cannot find, gets an
answer without coordinates (scored ``no_prediction``). It reads only the pixels and the instruction,
never a scene graph, metadata or target.

Instruction: the worker gives it the core instruction (``records.Prompt.core``: the benchmark's
instruction without other models' answer-format directives) and whether the prompt told the model
how to decline (rows whose referent may be absent); the ``ocr`` family's prompt (PointerBench's
json_pixels system prompt around the instruction) is what a model would read, and is not parsed here.

Answer format (PointerBench paper, json_pixels): ``{"point": [x, y]}`` or, for box tasks,
``{"bbox": [x0, y0, x1, y1]}``, absolute pixels of the original image, origin top-left.

One job per module:

- :mod:`~pointfail.generated.baselines.ocr.words`: OCR words (Tesseract, cached per image), lines, paragraphs.
  ``eng`` is read first; the other language packs (:data:`DEFAULT_LANGS`) only when a quoted phrase
  is not found in the ``eng`` reading.
- :mod:`~pointfail.generated.baselines.ocr.instruction`: quoted phrases, ordinals, normalized text.
- :mod:`~pointfail.generated.baselines.ocr.pointer`: :func:`point_to`, the rules in this order:

  1. Spreadsheets (:mod:`~pointfail.generated.baselines.ocr.sheet`): cell references with offsets and parts,
     column and row headers, resize handles, against the grid read from pixels and OCR.
  2. Colour fills (:mod:`~pointfail.generated.baselines.ocr.color`): "the green column / cell / row".
  3. Text (:mod:`~pointfail.generated.baselines.ocr.text`): characters, gaps, punctuation, lines and
     paragraphs, carets before/after a phrase, the search box, else the phrase's centre or box.
"""

from __future__ import annotations

from pointfail.generated.baselines.ocr.pointer import DEFAULT_LANGS, OcrAnswer, point_to

__all__ = ["DEFAULT_LANGS", "OcrAnswer", "point_to"]
