"""The ``ocr`` baseline as a worker backend: Tesseract over the screenshot, rules over the
instruction (:mod:`pointfail.generated.baselines.ocr`), answers in the json_pixels convention.

The worker gives each item the core instruction (``WorkItem.instruction``: the benchmark's words
without other models' answer-format directives, from the request) and whether the prompt told the
model how to decline (``WorkItem.absent_possible``); a request without an instruction is read as
its prompt. The family's prompt (PointerBench's json_pixels system prompt around the instruction)
is never parsed. No weights, no GPU; token counts and model-input size are ``None``. Tesseract runs single-threaded (``OMP_THREAD_LIMIT=1``, set at load unless the
environment sets it): on a shared CPU its OpenMP threads spin and one page took 5x longer.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Optional

from pointfail.running.backends.base import BackendError, WorkItem, result


class OcrBackend:
    """Runs :func:`pointfail.generated.baselines.ocr.point_to` per item. OCR readings are cached per image
    content inside :mod:`pointfail.generated.baselines.ocr` (several questions about one screenshot cost one
    reading); ``_pages`` keeps the per-image rule state (words, spreadsheet grid) for the last 16
    image paths."""

    name = "ocr"

    def __init__(self, langs: str):
        self.langs = langs
        self._pages: dict[str, dict[str, Any]] = {}  # image path -> OCR cache, the last 16 images

    def generate(self, batch: list[WorkItem]) -> list[dict[str, Any]]:
        """One answer per item. The OCR of an image is reused for later items on the same image path
        (benchmarks ask several questions about one screenshot)."""
        from pointfail.generated.baselines.ocr import point_to

        out = []
        for it in batch:
            cache = self._pages.setdefault(it.image_path, {}) if it.image_path else {}
            instruction = it.instruction if it.instruction is not None else it.prompt
            out.append(result(point_to(it.image, instruction, task=it.task, langs=self.langs, cache=cache,
                                       may_decline=it.absent_possible).text))
            while len(self._pages) > 16:
                self._pages.pop(next(iter(self._pages)))
        return out

    def info(self) -> dict[str, Any]:
        """Provenance: Tesseract version and languages."""
        import pytesseract

        return {"backend": "ocr", "tesseract": str(pytesseract.get_tesseract_version()), "langs": self.langs,
                "first_lang": self.langs.split("+")[0], "omp_thread_limit": os.environ.get("OMP_THREAD_LIMIT")}


def load(weights_dir: Optional[str] = None, device: str = "cpu", langs: Optional[str] = None,
         **options: Any) -> OcrBackend:
    """Check that pytesseract and the ``tesseract`` binary with the language packs are present.

    Languages: ``langs`` or ``$POINTFAIL_OCR_LANGS`` or ``eng+deu+fra+spa+ita+nld``; the first is
    read for every page, all of them only when a quoted phrase is not found in that reading.

    Raises:
        BackendError: pytesseract, the binary or a language pack is missing.
    """
    from pointfail.generated.baselines.ocr import DEFAULT_LANGS

    langs = langs or os.environ.get("POINTFAIL_OCR_LANGS") or DEFAULT_LANGS
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    try:
        import pytesseract
    except ImportError as e:
        raise BackendError(f"the ocr baseline needs pytesseract: {e}") from None
    if shutil.which(pytesseract.pytesseract.tesseract_cmd) is None:
        raise BackendError("the ocr baseline needs the tesseract binary (Debian package tesseract-ocr): "
                           "apt-get install tesseract-ocr")
    have = set(pytesseract.get_languages(config=""))
    missing = [l for l in langs.split("+") if l not in have]
    if missing:
        packages = " ".join(f"tesseract-ocr-{lang}" for lang in missing)  # Debian names each pack by its code
        raise BackendError(f"tesseract language packs missing: {', '.join(missing)} (installed: {', '.join(sorted(have))}); "
                           f"apt-get install {packages}")
    return OcrBackend(langs)
