"""``ocr`` baseline: a non-VLM pointer that reads the screenshot with Tesseract, in the ``json_pixels``
convention.

Its worker (``pointfail.running.backends.ocr``) matches the instruction's quoted text / cell references
against the OCR'd words and answers ``{"point": [x, y]}`` or ``{"bbox": [...]}`` in pixels of the
original image; parsing is exactly :mod:`json_pixels`.
"""

from __future__ import annotations

from pointfail.families.json_pixels import JsonPixels


class Ocr(JsonPixels):
    """Tesseract-based baseline (json_pixels answers)."""

    name = "ocr"
    backend = "pointfail.running.backends.ocr"
    needs_weights = False


FAMILY = Ocr()
