"""OCR words: Tesseract's reading of a screenshot, cached per image, grouped into lines and paragraphs.

Tesseract 5 (Debian ``tesseract-ocr``, ``tessdata_fast`` LSTM models) through
``pytesseract.image_to_data`` (the ``tesseract`` binary with an argument list, no shell). One page
read per image: grayscale, original size (``scale`` 1), page segmentation mode 11 (sparse text: UI
screenshots are not one flowing page). Tesseract runs with ``OMP_THREAD_LIMIT=1`` (its OpenMP
threads spin on a loaded machine: measured 7 s against 1.2 s for one 1024x768 page on 2 busy cores;
see bench/ocr.py). Readings are cached per image content (sha256 of the decoded pixels) in the
process (:func:`clear_cache`), so several questions about one screenshot cost one OCR.

Boxes are ``(x0, y0, x1, y1)`` in pixels of the original image, origin top-left, x1/y1 exclusive.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CACHE_SIZE",
    "STATS",
    "Word",
    "clear_cache",
    "grayscale",
    "group_lines",
    "image_digest",
    "median",
    "paragraphs",
    "read_strip",
    "read_words",
    "set_cache",
    "text_lines",
    "trim_tall_boxes",
    "union",
]


STATS = {"tesseract_calls": 0, "cache_hits": 0}
"""Process-wide counters: Tesseract runs and OCR cache hits (bench/ocr.py reads them)."""


CACHE_SIZE = 32


_CACHE: "OrderedDict[tuple, Any]" = OrderedDict()


_CACHE_ON = [True]


def set_cache(enabled: bool) -> None:
    """Turn the per-process OCR cache on or off (off: every call runs Tesseract and the cache is
    neither read nor written, but kept; for bench/ocr.py)."""
    _CACHE_ON[0] = bool(enabled)


def clear_cache() -> None:
    """Forget every cached OCR reading."""
    _CACHE.clear()


def _cached(key: tuple, compute: Callable[[], Any]) -> Any:
    if _CACHE_ON[0] and key in _CACHE:
        _CACHE.move_to_end(key)
        STATS["cache_hits"] += 1
        return _CACHE[key]
    value = compute()
    if _CACHE_ON[0]:
        _CACHE[key] = value
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return value


def image_digest(image: Any) -> str:
    """sha256 (hex) of a PIL image's mode, size and decoded pixels: the OCR cache key."""
    h = hashlib.sha256(f"{image.mode}:{image.size}".encode())
    h.update(image.tobytes())
    return h.hexdigest()


@dataclass
class Word:
    """One OCR word. ``box`` is ``(x0, y0, x1, y1)`` in pixels of the original image (x1, y1
    exclusive); ``line`` identifies the visual line (see :func:`group_lines`); ``conf`` in 0..100;
    ``index`` the position in reading order."""

    text: str
    box: tuple[float, float, float, float]
    conf: float
    line: tuple[int, int, int]
    index: int = 0

    @property
    def cx(self) -> float:
        """Horizontal centre, pixels."""
        return (self.box[0] + self.box[2]) / 2

    @property
    def cy(self) -> float:
        """Vertical centre, pixels."""
        return (self.box[1] + self.box[3]) / 2

    @property
    def h(self) -> float:
        """Height, pixels."""
        return self.box[3] - self.box[1]


def _tesseract(gray: Any, langs: str, psm: int) -> dict:
    import pytesseract

    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    STATS["tesseract_calls"] += 1
    return pytesseract.image_to_data(gray, lang=langs, config=f"--psm {psm}", output_type=pytesseract.Output.DICT)


def _words_from_data(data: dict, scale: float, dx: float = 0.0, dy: float = 0.0) -> list[Word]:
    out = []
    for i, text in enumerate(data["text"]):
        text = (text or "").strip()
        conf = float(data["conf"][i])
        if not text or conf < 0:
            continue
        x, y, w, h = (data[k][i] / scale for k in ("left", "top", "width", "height"))
        out.append(Word(text=text, box=(dx + x, dy + y, dx + x + w, dy + y + h), conf=conf, line=(0, 0, 0)))
    return out


def read_words(image: Any, langs: str = "eng", scale: float = 1.0, psm: int = 11) -> list[Word]:
    """OCR ``image`` (a PIL image) with Tesseract; words in reading order with boxes in pixels of the
    original image. Cached per image content, languages, scale and mode (see :func:`set_cache`).
    Raises ``ImportError`` when pytesseract is missing and ``pytesseract.TesseractNotFoundError``
    when the binary is."""

    def run() -> list[Word]:
        from PIL import Image

        gray = image.convert("L")
        if scale != 1:
            gray = gray.resize((round(gray.width * scale), round(gray.height * scale)), Image.Resampling.LANCZOS)
        return _words_from_data(_tesseract(gray, langs, psm), scale)

    words = _cached(("page", image_digest(image), langs, scale, psm), run)
    return group_lines(trim_tall_boxes(image, [Word(w.text, w.box, w.conf, w.line) for w in words]))


def trim_tall_boxes(image: Any, words: list[Word]) -> list[Word]:
    """Tesseract sometimes gives a word a box reaching into the next text line (twice the height of
    its neighbours), which merges lines. A box taller than 1.6 times the median word height is cut to
    its first band of ink rows from the top (blank gaps up to 2 px bridged), unless that band is
    shorter than 0.6 median heights (a large heading's accent or dot). Boxes in place; returns
    ``words``."""
    import numpy as np

    if not words:
        return words
    med = median([w.h for w in words])
    tall = [w for w in words if w.h > 1.6 * med]
    if not tall:
        return words
    gray = grayscale(image)
    for w in tall:
        x0, y0, x1, y1 = (int(round(v)) for v in w.box)
        crop = gray[y0:y1, x0:x1]
        if crop.size == 0:
            continue
        border = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
        rows = (np.abs(crop - np.median(border)) > 60).any(1)
        ink = np.nonzero(rows)[0]
        if not len(ink):
            continue
        end = ink[0]
        for r in ink[1:]:
            if r - end > 3:
                break
            end = r
        if end + 1 - ink[0] >= 0.6 * med and y0 + end + 1 < y1 - 0.3 * med:
            w.box = (w.box[0], float(y0 + ink[0]), w.box[2], float(y0 + end + 1))
    return words


def read_strip(image: Any, box: tuple[float, float, float, float], langs: str = "eng", scale: float = 2.0,
               psm: int = 6) -> list[Word]:
    """OCR one rectangle of ``image`` (page segmentation mode 6, a uniform block: it reads the isolated
    single letters and digits of header bands that sparse mode drops); boxes in image pixels. Cached
    like :func:`read_words`."""
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    x0, y0, x1, y1 = max(0, x0), max(0, y0), min(image.width, x1), min(image.height, y1)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return []

    def run() -> list[Word]:
        from PIL import Image

        crop = image.crop((x0, y0, x1, y1)).convert("L")
        crop = crop.resize((round(crop.width * scale), round(crop.height * scale)), Image.Resampling.LANCZOS)
        return _words_from_data(_tesseract(crop, langs, psm), scale, x0, y0)

    return _cached(("strip", image_digest(image), (x0, y0, x1, y1), langs, scale, psm), run)


def group_lines(words: list[Word]) -> list[Word]:
    """Assign visual lines and reading order (sparse page segmentation gives every word its own
    block, so Tesseract's line numbers are not used): words whose vertical centres lie within half
    the median word height of a line's mean join it; a horizontal gap wider than three times the
    line's median word height starts a new segment (another column or cell). Lines top to bottom, words left to right; ``line``
    is ``(line_number, segment, 0)`` and ``index`` the reading-order position."""
    if not words:
        return []
    heights = sorted(w.box[3] - w.box[1] for w in words)
    tol = max(2.0, heights[len(heights) // 2] / 2)
    rows: list[list[Word]] = []
    for w in sorted(words, key=lambda w: w.cy):
        if rows and abs(w.cy - sum(v.cy for v in rows[-1]) / len(rows[-1])) <= tol:
            rows[-1].append(w)
        else:
            rows.append([w])
    out: list[Word] = []
    for li, row in enumerate(rows):
        row.sort(key=lambda w: w.box[0])
        seg = 0
        rh = max(median([w.h for w in row]), 1.0)
        for j, w in enumerate(row):
            if j and w.box[0] - row[j - 1].box[2] > 3 * rh:
                seg += 1
            w.line = (li, seg, 0)
            w.index = len(out)
            out.append(w)
    return out


def text_lines(words: list[Word]) -> list[list[Word]]:
    """Words grouped by visual line segment (see :func:`group_lines`), in reading order."""
    out: dict[tuple, list[Word]] = {}
    for w in words:
        out.setdefault(w.line, []).append(w)
    return list(out.values())


def paragraphs(words: list[Word]) -> list[list[list[Word]]]:
    """Line segments grouped into paragraphs: a segment continues the paragraph above it when it starts
    below it by less than 1.3 glyph heights (median word height), overlaps it horizontally, and is not indented by more
    than one line height from the paragraph's following-line margin (a first-line indent starts a
    paragraph)."""
    lines = sorted(text_lines(words), key=lambda ln: (min(w.box[1] for w in ln), ln[0].box[0]))
    paras: list[list[list[Word]]] = []
    for ln in lines:
        b = union(ln)
        h = median([w.h for w in ln])
        placed = False
        for p in reversed(paras[-6:]):
            last = union(p[-1])
            ph = median([w.h for w in p[-1]])
            gap = b[1] - last[3]
            if not (-0.3 * ph <= gap <= 1.3 * max(h, ph)) or b[0] > last[2] or b[2] < last[0]:
                continue
            if abs(h - ph) > 0.35 * max(h, ph) and max(len(ln), len(p[-1])) > 1:
                continue  # a heading above a body paragraph, or a caption below
            margin = union(p[1])[0] if len(p) > 1 else last[0]
            if b[0] - margin > 1.2 * h or (len(p) > 1 and margin - b[0] > 1.2 * h):
                continue
            if len(p) == 1 and b[0] - last[0] > 1.2 * h:
                continue
            p.append(ln)
            placed = True
            break
        if not placed:
            paras.append([ln])
    return paras


def median(v: list[float]) -> float:
    """The upper median of ``v`` (the middle value after sorting; 0.0 when empty)."""
    v = sorted(v)
    return v[len(v) // 2] if v else 0.0


def union(run: list[Word]) -> tuple[float, float, float, float]:
    """The box ``(x0, y0, x1, y1)`` in pixels around every word of ``run`` (not empty)."""
    return (min(w.box[0] for w in run), min(w.box[1] for w in run), max(w.box[2] for w in run),
            max(w.box[3] for w in run))


def grayscale(image: Any):
    """``image`` (PIL) in grayscale as an ``int16`` array ``(H, W)`` (room for differences of levels)."""
    import numpy as np

    return np.asarray(image.convert("L"), dtype=np.int16)
