"""The ``ocr`` baseline: a non-VLM pointer that reads the screenshot with Tesseract and the instruction
with rules, and answers in the ``json_pixels`` convention.

Issue 4 ("two baselines that need no weights"): it reads quoted text, cell references such as ``E15``
against the row and column headers it finds, and "before/after the word ..." caret positions. It is a
floor for GUI grounding, not a model: an instruction it cannot read, or text it cannot find, gets an
answer without coordinates (scored ``no_prediction``). It reads only the pixels and the instruction,
never a scene graph, metadata or target.

Instruction: the worker receives the prompt the ``ocr`` family built (PointerBench's json_pixels
system prompt, a blank line, ``Point task: <instruction>``); :func:`core_instruction` drops the system
prompt so that its own words ("top-left", ``"point"``) are not read as the task.

OCR: Tesseract 5 (Debian ``tesseract-ocr``, ``tessdata_fast`` LSTM models) through
``pytesseract.image_to_data`` (the ``tesseract`` binary with an argument list, no shell). One page
read per image: grayscale, original size (``scale`` 1), page segmentation mode 11 (sparse text: UI
screenshots are not one flowing page), ``eng`` first; the other language packs
(:data:`DEFAULT_LANGS`) are read only when a quoted phrase is not found in the ``eng`` reading.
Tesseract runs with ``OMP_THREAD_LIMIT=1`` (its OpenMP threads spin on a loaded machine: measured
7 s against 1.2 s for one 1024x768 page on 2 busy cores; see bench/ocr.py). Readings are cached per
image content (sha256 of the decoded pixels) in the process (:func:`clear_cache`), so several
questions about one screenshot cost one OCR.

Pixels are also read directly: spreadsheet grid lines (thin lines or long edges spanning most of the
image), glyph columns inside a word box (for characters, punctuation and carets), and cell fill
colours (hue names).

Answer format (PointerBench paper, json_pixels): ``{"point": [x, y]}`` or, for box tasks,
``{"bbox": [x0, y0, x1, y1]}``, absolute pixels of the original image, origin top-left.

Instruction rules, tried in this order (each a function below):

1. Spreadsheets (:func:`spreadsheet_point`): cell references (``[A-Z]{1,2}[0-9]{1,4}`` outside quotes)
   with offsets ("2 rows down", "1 column left") and parts (corners, edges); column and row headers;
   resize handles. Cells are the intervals between detected grid lines, named by the header letters
   and row numbers Tesseract reads (majority vote of the letter/number minus the interval index).
2. Colour fills (:func:`color_point`): "the green column / cell / row", by hue ranges.
3. Text (:func:`text_target`): a character in a word, the gap between two characters, punctuation
   after a word, lines and paragraphs starting/ending with a phrase (start, end, box), "between A and
   B", before/after a word (caret positions), the search box, else the centre (or box) of the phrase.
   Ordinals ("the second …", "the last …") and regions ("in the sidebar") pick among several matches.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Optional

DEFAULT_LANGS = "eng+deu+fra+spa+ita+nld"
"""Every language pack the baseline may read (the PointerBench languages)."""

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


def _cached(key: tuple, compute):
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
    med = _median([w.h for w in words])
    tall = [w for w in words if w.h > 1.6 * med]
    if not tall:
        return words
    gray = _gray(image)
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
        rh = max(_median([w.h for w in row]), 1.0)
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
        b = _union(ln)
        h = _median([w.h for w in ln])
        placed = False
        for p in reversed(paras[-6:]):
            last = _union(p[-1])
            ph = _median([w.h for w in p[-1]])
            gap = b[1] - last[3]
            if not (-0.3 * ph <= gap <= 1.3 * max(h, ph)) or b[0] > last[2] or b[2] < last[0]:
                continue
            if abs(h - ph) > 0.35 * max(h, ph) and max(len(ln), len(p[-1])) > 1:
                continue  # a heading above a body paragraph, or a caption below
            margin = _union(p[1])[0] if len(p) > 1 else last[0]
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


def _median(v: list[float]) -> float:
    v = sorted(v)
    return v[len(v) // 2] if v else 0.0


# ---------------------------------------------------------------- instruction reading

_QUOTES = [r'"([^"]+)"', r"«\s*([^»]+?)\s*»", r"“([^”]+)”", r"‘([^’]+)’", r"`([^`]+)`", r"(?<![\w])'([^']+)'(?![\w])"]
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}
_TASK_PREFIX = re.compile(r"^\s*(?:point|bounding-box|box)\s+task:\s*", re.I)


def core_instruction(prompt: str) -> str:
    """The task instruction inside a prompt: PointerBench's json_pixels system prompt (the ``ocr``
    family's wrapper), the ``Point task:`` / ``Bounding-box task:`` label and the family's decline
    sentence (rows whose referent may be absent) are removed; any other text is returned stripped,
    unchanged."""
    from pointfail.families.json_pixels import SYSTEM_PROMPT, JsonPixels

    text = prompt.replace(SYSTEM_PROMPT, "").replace(JsonPixels.decline_prompt, "").strip()
    if "\n\n" in text and _TASK_PREFIX.search(text.rsplit("\n\n", 1)[1]):
        text = text.rsplit("\n\n", 1)[1]
    return _TASK_PREFIX.sub("", text).strip()


def quoted(text: str) -> list[tuple[int, str]]:
    """Quoted strings in ``text`` with their start offsets, in order of appearance."""
    found: list[tuple[int, int, str]] = []
    for pat in _QUOTES:
        for m in re.finditer(pat, text):
            if not any(s <= m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), m.group(1)))
    return [(s, q) for s, _, q in sorted(found)]


def _unquoted(text: str) -> str:
    out = text
    for pat in _QUOTES:
        out = re.sub(pat, " ", out)
    return out


def _norm(s: str) -> str:
    """NFKD, diacritics dropped, case-folded, punctuation removed (``eng`` OCR reads "château" as
    "chateau")."""
    s = unicodedata.normalize("NFKD", s)
    s = "".join(ch for ch in s if not unicodedata.combining(ch)).casefold()
    return re.sub(r"[\W_]", "", s)


def col_index(letters: str) -> int:
    """Spreadsheet column letters -> 0-based index (A=0, Z=25, AA=26)."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def col_letters(index: int) -> str:
    """0-based column index -> letters (0=A, 26=AA): the sheets suite's
    :func:`pointfail.suites.sheets.col_name` (raises ``ValueError`` for a negative index)."""
    from pointfail.suites.sheets import col_name

    return col_name(index)


# ---------------------------------------------------------------- spreadsheet geometry


def _gray(image: Any):
    import numpy as np

    return np.asarray(image.convert("L"), dtype=np.int16)


def line_positions(gray: Any, axis: int, min_frac: float = 0.3) -> list[float]:
    """Grid lines in a grayscale array ``gray`` (H, W): ``axis=1`` vertical lines (x positions),
    ``axis=0`` horizontal lines (y positions), pixels. A line is a position where at least
    ``min_frac`` of the pixels across the image are a thin extreme (darker or lighter by 6 levels than
    both neighbours) or half of them a strong step (a fill's edge, 30 levels); candidates within 8 px
    of a group's first merge into its strongest (no row or column is that thin; a fill's edge beside
    its grid line is not a second line)."""
    import numpy as np

    g = gray if axis == 1 else gray.T
    a, c, b = g[:, :-2], g[:, 1:-1], g[:, 2:]
    ext = (((c < a - 6) & (c < b - 6)) | ((c > a + 6) & (c > b + 6))).sum(0)
    step = (np.abs(b - a) > 30).sum(0)
    n = g.shape[0]
    score = np.maximum(ext / (min_frac * n), step / (0.5 * n))
    cand = [i for i in range(len(score)) if score[i] >= 1.0]
    out: list[float] = []
    group: list[int] = []
    for i in cand + [None]:
        if group and (i is None or i - group[0] > 8):
            best = max(group, key=lambda j: score[j])
            out.append(float(best + 1))
            group = []
        if i is not None:
            group.append(i)
    return out


@dataclass
class SheetGrid:
    """A spreadsheet read from pixels and OCR. ``vlines``/``hlines``: grid line positions (pixels,
    ascending). Column letter index ``c`` spans ``vlines[c - col_off]`` to the next line; row number
    ``r`` spans ``hlines[r - row_off]`` to the next. ``head``: the column-header band ``(y0, y1)``;
    ``rowhead``: the row-number column ``(x0, x1)``."""

    vlines: list[float]
    hlines: list[float]
    col_off: Optional[int] = None
    row_off: Optional[int] = None
    head: Optional[tuple[float, float]] = None
    rowhead: Optional[tuple[float, float]] = None

    def col_span(self, c: int) -> Optional[tuple[float, float]]:
        """``(x0, x1)`` of column index ``c`` (0 = A), or ``None`` when it is not visible."""
        if self.col_off is None:
            return None
        k = c - self.col_off
        return (self.vlines[k], self.vlines[k + 1]) if 0 <= k < len(self.vlines) - 1 else None

    def row_span(self, r: int) -> Optional[tuple[float, float]]:
        """``(y0, y1)`` of row number ``r``, or ``None`` when it is not visible."""
        if self.row_off is None:
            return None
        k = r - self.row_off
        return (self.hlines[k], self.hlines[k + 1]) if 0 <= k < len(self.hlines) - 1 else None

    def cell_box(self, c: int, r: int) -> Optional[tuple[float, float, float, float]]:
        """``(x0, y0, x1, y1)`` of a cell, pixels (on its grid lines)."""
        xs, ys = self.col_span(c), self.row_span(r)
        if xs is None or ys is None:
            return None
        return xs[0], ys[0], xs[1], ys[1]


def _interval(lines: list[float], v: float) -> Optional[int]:
    for k in range(len(lines) - 1):
        if lines[k] <= v < lines[k + 1]:
            return k
    return None


def _vote(pairs: list[tuple[int, int]]) -> Optional[int]:
    """Most common ``value - index`` among ``(value, index)`` pairs."""
    counts: dict[int, int] = {}
    for v, k in pairs:
        counts[v - k] = counts.get(v - k, 0) + 1
    return max(counts, key=lambda o: counts[o]) if counts else None


_LETTERISH = {"c": "C", "o": "O", "s": "S", "v": "V", "w": "W", "x": "X", "z": "Z", "i": "I", "|": "I", "l": "I",
              "'": "I", "1": "I", "!": "I", "]": "I", "[": "I"}


def find_sheet(image: Any, words: list[Word], langs: str = "eng") -> Optional[SheetGrid]:
    """Read a spreadsheet's grid: lines from pixels (:func:`line_positions`), the row-number column
    (left of the first vertical line) and the column-header band (the line interval whose letter-like
    words agree most on one offset, then hold the most single letters), and the letter/number offsets by majority vote. When the page reading has too
    few header words, the row-number strip and the header band are re-read with :func:`read_strip`.
    ``None`` when no grid is found."""
    gray = _gray(image)
    H, W = gray.shape
    vlines = [x for x in line_positions(gray, 1) if x > 12]
    hlines = line_positions(gray, 0)
    if len(vlines) < 2 or len(hlines) < 3:
        return None
    if W - vlines[-1] > 8:
        vlines.append(float(W - 1))
    if hlines[0] > 8:  # a header band at the very top has no line above it
        hlines.insert(0, 0.0)
    grid = SheetGrid(vlines=vlines, hlines=hlines, rowhead=(0.0, vlines[0]))
    v0 = vlines[0]

    def rows_from(ws: list[Word]) -> list[tuple[int, int]]:
        out = []
        for w in ws:
            t = w.text.strip(".,;:|()[]'")
            if re.fullmatch(r"\d{1,4}", t) and w.cx < v0:
                k = _interval(hlines, w.cy)
                if k is not None:
                    out.append((int(t), k))
        return out

    pairs = rows_from(words)
    if len(pairs) < 3:
        pairs += rows_from(read_strip(image, (0, 0, v0, H), langs))
    grid.row_off = _vote(pairs)

    def cols_from(ws: list[Word]) -> dict[int, list[tuple[int, int]]]:
        bands: dict[int, list[tuple[int, int]]] = {}
        for w in ws:
            t = _LETTERISH.get(w.text, w.text)
            if not re.fullmatch(r"[A-Z]{1,2}", t) or w.cx < v0:
                continue
            kh, kv = _interval(hlines + [float(H)], w.cy), _interval(vlines, w.cx)
            if kh is None or kv is None:
                continue
            bands.setdefault(kh, []).append((col_index(t), kv))
        return bands

    def band_score(k: int) -> tuple[int, int]:
        """(agreeing votes, single letters): toolbar glyphs read as "BE" or "RE" do not agree."""
        offs = [v - i for v, i in bands[k]]
        return max(offs.count(o) for o in offs), sum(1 for v, _ in bands[k] if v < 26)

    bands = cols_from(words)
    band = max(bands, key=band_score) if bands else None
    if band is None or len(bands[band]) < 2:
        # the header band: the line interval just above the first numbered row (single-digit row
        # numbers are often missing from the page reading: read the number strip first)
        if len(pairs) < 12 or min(k for _, k in pairs) > 2:
            pairs += rows_from(read_strip(image, (0, 0, v0, H), langs))
            grid.row_off = _vote(pairs)
        if grid.row_off is not None and pairs:
            top = min(k for v, k in pairs if v - k == grid.row_off)
            ks = [top - 1] if top >= 1 else []
        else:
            ks = []
        for k in ks:
            strip = read_strip(image, (v0, hlines[k] - 2, W, hlines[k + 1] + 2), langs)
            more = cols_from(strip)
            if more.get(k):
                bands[k] = bands.get(k, []) + more[k]
                band = k
    if band is not None and bands.get(band):
        grid.col_off = _vote(bands[band])
        grid.head = (hlines[band], hlines[band + 1]) if band + 1 < len(hlines) else (hlines[band], float(H))
    return grid


_SHEET_HINT = re.compile(r"(?<![\w])[A-Za-z]{1,2}\d{1,4}(?![\w])|\b(column|row|cell|header|gutter|spreadsheet|grid)\b",
                         re.I)
_CELL = re.compile(r"(?<![\w])([A-Za-z]{1,2})(\d{1,4})(?![\w])")
_NUM_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _offsets(text: str) -> tuple[int, int]:
    dc = dr = 0
    t = text.lower()
    for m in re.finditer(r"(\d+|one|two|three|four|five|six)\s+(columns?|rows?)\s+(?:to\s+the\s+)?(left|right|up|down|above|below)", t):
        n = int(m.group(1)) if m.group(1).isdigit() else _NUM_WORDS[m.group(1)]
        d = m.group(3)
        if m.group(2).startswith("col"):
            dc += n if d == "right" else -n if d == "left" else 0
        else:
            dr += n if d in ("down", "below") else -n if d in ("up", "above") else 0
    m = re.search(r"(?:click|move)\s+(\d+)\s+rows?\s+(up|down)", t)
    if m and dr == 0:
        dr = int(m.group(1)) * (1 if m.group(2) == "down" else -1)
    return dc, dr


def _part(text: str) -> str:
    t = text.lower().replace("‑", "-")
    corners = {
        "top_left": ("top-left", "upper-left", "northwest", "top and left", "top left", "upper left"),
        "top_right": ("top-right", "upper-right", "northeast", "top and right", "top right", "upper right",
                      "top end"),
        "bottom_left": ("bottom-left", "lower-left", "southwest", "below and left", "bottom and left",
                        "bottom left", "lower left"),
        "bottom_right": ("bottom-right", "lower-right", "southeast", "bottom and right", "bottom right",
                         "lower right"),
    }
    for name, keys in corners.items():
        if any(k in t for k in keys):
            return name
    if re.search(r"\b(bottom|lower)\b.*\b(border|edge|boundary|line|gridline)\b|\bbelow\b.*\b(border|edge|line)\b|"
                 r"\b(border|edge|boundary|line|gridline)\b.*\b(below|under|beneath)\b", t):
        return "bottom_edge"
    if re.search(r"(right-hand|right side|right)\b.*\b(border|edge|boundary|separator|gridline|line)\b|separator after|"
                 r"\b(border|edge|boundary|line|gridline)\b.*\b(to its right|on its right|right of)\b", t):
        return "right_edge"
    return "center"


def spreadsheet_point(instruction: str, grid: SheetGrid) -> Optional[tuple[float, float, str, Optional[tuple]]]:
    """``(x, y, rule, cell_box)`` for a spreadsheet instruction, pixels, or ``None`` when it is not
    about cells/headers or the grid lacks what it needs."""
    text = _unquoted(instruction)
    low = text.lower()
    head_y = (grid.head[0] + grid.head[1]) / 2 if grid.head else None
    row_x = (grid.rowhead[0] + grid.rowhead[1]) / 2 if grid.rowhead else None
    m = re.search(r"(?:resize|drag|width|widen)[^.]*?\bcolumn\s+([A-Za-z]{1,2})\b|column\s+([A-Za-z]{1,2})'s\s+"
                  r"(?:resize|header|right)|resize\s+(?:grip|handle|line)\s+after\s+the\s+([A-Z]{1,2})\b|"
                  r"(?:right\s+(?:border|edge)|border\s+after)\s+of\s+column\s+([A-Za-z]{1,2})|"
                  r"(?:separator|border|line|divider)\s+(?:just\s+|right\s+|immediately\s+)?after\s+column\s+([A-Za-z]{1,2})",
                  text)
    if m and head_y is not None and re.search(r"resize|drag|width|widen|border|edge|separator|divider|line", low):
        span = grid.col_span(col_index(next(g for g in m.groups() if g)))
        if span:
            return span[1], head_y, "col_resize", None
    m = re.search(r"\brow\s+(\d{1,4})\b", low)
    if m and re.search(r"resize|taller|shorter|height|separat|drag|border|below row|bottom edge|line", low) \
            and row_x is not None:
        span = grid.row_span(int(m.group(1)))
        if span:
            return row_x, span[1], "row_resize", None
    cells = list(_CELL.finditer(text))
    if cells:
        mm = cells[-1] if re.search(r"\bfrom\b|\banchor\b|starting", low) and len(cells) > 1 else cells[0]
        col, row = col_index(mm.group(1)), int(mm.group(2))
        dc, dr = _offsets(text)
        if re.search(r"\b(?:1|one)\s+row\s+below\b", low) and dr == 0:
            dr = 1
        if re.search(r"\b(?:1|one)\s+row\s+above\b", low) and dr == 0:
            dr = -1
        box = grid.cell_box(col + dc, row + dr)
        if box is None:
            return None
        x0, y0, x1, y1 = box
        part = _part(text)
        pts = {"center": ((x0 + x1) / 2, (y0 + y1) / 2), "top_left": (x0, y0), "top_right": (x1, y0),
               "bottom_left": (x0, y1), "bottom_right": (x1, y1), "bottom_edge": ((x0 + x1) / 2, y1),
               "right_edge": (x1, (y0 + y1) / 2)}
        x, y = pts[part]
        return x, y, f"cell_{part}", box
    m = re.search(r"\bcolumn\s+(?:header\s+)?(?:labeled\s+|labelled\s+)?([A-Za-z]{1,2})\b|\bletter\s+([A-Z]{1,2})\b|"
                  r"\blabel(?:ed|led)?\s+([A-Z]{1,2})\b|\b([A-Z]{1,2})\s+column\b", text)
    if m and head_y is not None:
        span = grid.col_span(col_index(next(g for g in m.groups() if g)))
        if span:
            return (span[0] + span[1]) / 2, head_y, "col_header", None
    m = re.search(r"\brow\b[^\d]{0,20}(\d{1,4})\b|\b(\d{1,4})\s+(?:on|at)\s+the\s+left|"
                  r"\bnumber\s+(\d{1,4})\b", low)
    if m and row_x is not None:
        span = grid.row_span(int(next(g for g in m.groups() if g)))
        if span:
            return row_x, (span[0] + span[1]) / 2, "row_header", None
    return None


# ---------------------------------------------------------------- colour fills

_HUES = {  # hue ranges in degrees (HSV), saturation floor; standard colour-name hues
    "red": ((345, 360), (0, 12), 0.35), "orange": ((12, 40), None, 0.35), "yellow": ((40, 70), None, 0.35),
    "green": ((70, 170), None, 0.25), "blue": ((190, 250), None, 0.25), "purple": ((250, 290), None, 0.15),
    "violet": ((250, 290), None, 0.15), "pink": ((290, 345), None, 0.2), "cyan": ((170, 190), None, 0.25),
}
_COLOR_WORDS = r"\b(red|orange|yellow|green|blue|purple|violet|pink|cyan|gr[ae]y)\b"


def color_mask(image: Any, name: str):
    """Boolean array (H, W): pixels of the named fill colour (hue ranges of :data:`_HUES`; ``gray``/
    ``grey``: saturation under 0.08 and value 120..200 of 255)."""
    import numpy as np

    hsv = np.asarray(image.convert("HSV"), dtype=np.float32)
    h, s, v = hsv[..., 0] * 360 / 255, hsv[..., 1] / 255, hsv[..., 2]
    if name in ("gray", "grey"):
        return (s < 0.08) & (v >= 120) & (v <= 200)
    (a, b), extra, smin = _HUES[name]
    m = (h >= a) & (h < b)
    if extra:
        m |= (h >= extra[0]) & (h < extra[1])
    return m & (s >= smin) & (v >= 90)


def color_point(image: Any, instruction: str, grid: Optional[SheetGrid]) -> Optional[tuple[float, float, str]]:
    """The point for "the green column / row / cell": the grid cell (or, without a grid, the pixel of
    the largest connected region) most covered by the named colour; for a column or row, the cell in
    the middle of the column/row with the most such cells. ``None`` when no colour word or region."""
    import numpy as np

    low = _unquoted(instruction).lower()
    m = re.search(_COLOR_WORDS, low)
    if not m:
        return None
    mask = color_mask(image, m.group(1))
    H, W = mask.shape
    if grid is not None and grid.rowhead:
        mask[:, : int(grid.rowhead[1]) + 1] = False
    if grid is not None and grid.head:
        mask[: int(grid.head[1]) + 1, :] = False
    if mask.sum() < 30:
        return None
    if grid is not None and len(grid.vlines) > 1 and len(grid.hlines) > 1:
        cells = []
        for i in range(len(grid.vlines) - 1):
            for j in range(len(grid.hlines) - 1):
                x0, x1 = int(grid.vlines[i]) + 1, int(grid.vlines[i + 1])
                y0, y1 = int(grid.hlines[j]) + 1, int(grid.hlines[j + 1])
                if x1 - x0 < 3 or y1 - y0 < 3:
                    continue
                f = float(mask[y0:y1, x0:x1].mean())
                if f > 0.35:
                    cells.append((i, j, f))
        if cells:
            if "column" in low or "row" in low:
                idx = 0 if "column" in low else 1
                groups: dict[int, list] = {}
                for c in cells:
                    groups.setdefault(c[idx], []).append(c)
                best = max(groups.values(), key=len)
                best.sort(key=lambda c: c[1 - idx])
                i, j, _ = best[len(best) // 2]
            else:
                i, j, _ = max(cells, key=lambda c: c[2])
            return ((grid.vlines[i] + grid.vlines[i + 1]) / 2, (grid.hlines[j] + grid.hlines[j + 1]) / 2,
                    f"color_{m.group(1)}")
    from scipy import ndimage

    lab, n = ndimage.label(mask)
    if n == 0:
        return None
    sizes = ndimage.sum(mask, lab, range(1, n + 1))
    k = int(np.argmax(sizes)) + 1
    ys, xs = np.nonzero(lab == k)
    cy, cx = ys.mean(), xs.mean()
    i = int(np.argmin((ys - cy) ** 2 + (xs - cx) ** 2))
    return float(xs[i]) + 0.5, float(ys[i]) + 0.5, f"color_{m.group(1)}"


# ---------------------------------------------------------------- text targets


_CONFUSABLE = str.maketrans("01568", "olsgb")
"""Digits Tesseract reads for look-alike letters (``Go`` as ``60``), folded before a second comparison."""


def find_phrase(words: list[Word], phrase: str) -> list[list[Word]]:
    """Runs of consecutive OCR words (same visual line segment, or continuing onto the next line)
    whose joined text matches ``phrase`` (NFKD without diacritics, case-folded, punctuation ignored; a
    fuzzy ratio >= 0.8 accepts one misread character in five; runs one word longer or shorter than the
    phrase are tried, for words Tesseract splits or joins). Exact matches are returned when there are any; matches in reading order."""
    target = _norm(phrase)
    if not target:
        return []
    n = max(1, len(phrase.split()))
    exact: list[list[Word]] = []
    fuzzy: list[tuple[float, list[Word]]] = []
    for i in range(len(words)):  # words Tesseract split ("SQLITE_LIMIT" read as two): grow while a prefix
        acc = ""
        for j in range(i, min(len(words), i + 12)):
            if words[j].line[:2] != words[i].line[:2]:
                break
            acc += _norm(words[j].text)
            if acc == target and j - i + 1 > n + 1:
                exact.append(words[i:j + 1])
            if not target.startswith(acc):
                break
        for m in sorted({n, n - 1, n + 1} - {0}):
            run = words[i:i + m]
            if len(run) < m or len({w.line[:2] for w in run}) > 1:
                continue
            got = _norm("".join(w.text for w in run))
            if got == target:
                exact.append(run)
            elif got and got.translate(_CONFUSABLE) == target.translate(_CONFUSABLE):
                fuzzy.append((0.99 - 0.01 * abs(m - n), run))
            elif got and abs(len(got) - len(target)) <= max(2, len(target) // 4):
                r = SequenceMatcher(None, got, target).ratio()
                if r >= 0.8:
                    fuzzy.append((r - 0.01 * abs(m - n), run))
    if not exact and not fuzzy and len(target) >= 3:
        for w in words:  # the phrase inside a longer word ("re.escape(pattern)"): its slice of the box
            t = w.text.casefold()
            i = t.find(phrase.casefold())
            if i >= 0 and len(t) > len(phrase):
                x0, x1 = w.box[0], w.box[2]
                a = x0 + (x1 - x0) * i / len(t)
                b = x0 + (x1 - x0) * (i + len(phrase)) / len(t)
                exact.append([Word(phrase, (a, w.box[1], b, w.box[3]), w.conf, w.line, w.index)])
    if exact:
        seen = set()
        out = []
        for run in exact:
            if run[0].index not in seen:
                seen.add(run[0].index)
                out.append(run)
        return out
    if not fuzzy:
        return []
    best = max(r for r, _ in fuzzy)
    return [run for r, run in sorted(fuzzy, key=lambda t: t[1][0].index) if r >= best - 0.05][:4]


def _ordinal(instruction: str, quote_start: int) -> Optional[int]:
    before = instruction[:quote_start].lower()
    m = re.search(r"\b(first|second|third|fourth|fifth|last)\b(?:\s+(?:occurrence|instance)\s+of)?[\s\w]{0,12}$", before)
    return _ORDINALS[m.group(1)] if m else None


def _union(run: list[Word]) -> tuple[float, float, float, float]:
    return (min(w.box[0] for w in run), min(w.box[1] for w in run), max(w.box[2] for w in run),
            max(w.box[3] for w in run))


def glyph_spans(gray: Any, box: tuple[float, float, float, float], level: int = 60) -> list[tuple[int, int, int, int]]:
    """Ink columns inside ``box`` of a grayscale array (H, W): ``(x0, y0, x1, y1)`` per run of columns
    holding ink (pixels more than ``level`` gray levels away from the box's border median,
    light-on-dark included),
    pixels, x1/y1 exclusive. Glyphs that touch come out as one span."""
    import numpy as np

    H, W = gray.shape
    x0, y0 = max(0, int(box[0]) - 1), max(0, int(box[1]) - 1)
    x1, y1 = min(W, int(np.ceil(box[2])) + 2), min(H, int(np.ceil(box[3])) + 2)
    crop = gray[y0:y1, x0:x1]
    if crop.size == 0:
        return []
    border = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
    ink = np.abs(crop - np.median(border)) > level
    cols = ink.any(0)
    out = []
    i = 0
    while i < len(cols):
        if cols[i]:
            j = i
            while j < len(cols) and cols[j]:
                j += 1
            rows = np.nonzero(ink[:, i:j].any(1))[0]
            out.append((x0 + i, y0 + int(rows[0]), x0 + j, y0 + int(rows[-1]) + 1))
            i = j
        else:
            i += 1
    return out


def _char_box(gray: Any, word: Word, index: int, text: str) -> tuple[float, float, float, float]:
    """Ink box of character ``index`` of ``text`` drawn in ``word``'s box: the matching glyph span when
    the ink splits into one span per character; otherwise the character's slice of the ink width in
    proportion to DejaVu Sans advance widths (equal widths without that font), snapped to the glyph
    span holding the slice's centre when that span is no wider than 1.5 slices, and trimmed to the
    ink inside it."""
    import numpy as np

    spans = [(a - 0.5, b, c + 0.5, d) for a, b, c, d in glyph_spans(gray, word.box)]  # pixel edges, not centres
    n = len(text)
    if len(spans) == n and 0 <= index < n:
        return tuple(float(v) for v in spans[index])  # type: ignore[return-value]
    x0, y0, x1, y1 = word.box
    if spans:
        x0, x1 = spans[0][0], spans[-1][2]
    widths = _advances(text)
    tot = sum(widths) or 1.0
    a = x0 + (x1 - x0) * sum(widths[:index]) / tot
    b = x0 + (x1 - x0) * sum(widths[: index + 1]) / tot
    c = (a + b) / 2
    for sp in spans:
        if sp[0] <= c < sp[2] and sp[2] - sp[0] <= 1.5 * (b - a) + 1:
            return tuple(float(v) for v in sp)  # type: ignore[return-value]
    ia, ib = int(round(a)), max(int(round(b)), int(round(a)) + 1)
    crop = gray[int(y0):int(np.ceil(y1)) + 1, ia:ib]
    if crop.size:
        border = np.concatenate([gray[int(y0), int(x0):int(x1) + 1], gray[min(int(y1) + 1, gray.shape[0] - 1), int(x0):int(x1) + 1]])
        ink = np.abs(crop - np.median(border)) > 60
        rows = np.nonzero(ink.any(1))[0]
        if len(rows):
            return a, int(y0) + float(rows[0]), b, int(y0) + float(rows[-1]) + 1
    return a, y0, b, y1


def _advances(text: str) -> list[float]:
    try:
        from PIL import ImageFont

        font = ImageFont.truetype("DejaVuSans.ttf", 32)
        return [float(font.getlength(ch)) for ch in text]
    except OSError:
        return [1.0] * len(text)


_PUNCT = {"period": ".", "full stop": ".", "comma": ",", "question mark": "?", "exclamation mark": "!",
          "exclamation point": "!", "colon": ":", "semicolon": ";"}
_CARET_AFTER = r"\b(after|past|end of|behind|following|follows)\b"
_CARET_BEFORE = r"\b(before|leading edge|left of|start of|in front of|ahead of|precedes|preceding)\b"


def _ink_saturation(image: Any, box: tuple[float, float, float, float]) -> float:
    """Mean HSV saturation (0..1) of the ink pixels in ``box`` (pixels 60+ gray levels away from the
    box border's median): link text is coloured, body text is not."""
    import numpy as np

    x0, y0 = max(0, int(box[0])), max(0, int(box[1]))
    x1, y1 = min(image.width, int(np.ceil(box[2])) + 1), min(image.height, int(np.ceil(box[3])) + 1)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return 0.0
    crop = image.crop((x0, y0, x1, y1))
    g = np.asarray(crop.convert("L"), dtype=np.int16)
    sat = np.asarray(crop.convert("HSV"), dtype=np.float32)[..., 1] / 255
    border = np.concatenate([g[0], g[-1], g[:, 0], g[:, -1]])
    ink = np.abs(g - np.median(border)) > 60
    return float(sat[ink].mean()) if ink.any() else 0.0


def _pick(runs: list[list[Word]], instruction: str, start: int, image_w: float, image: Any = None,
          words: Optional[list[Word]] = None) -> list[Word]:
    """One run among several matches: an ordinal before the quote, a region ("sidebar": the left
    quarter of the image; "main text": the rest), a style ("link": coloured ink, when some matches
    have it; "heading"/"title": the tallest text), else the first."""
    low = instruction.lower()
    if len(runs) > 1 and image is not None and re.search(r"\blink\b", _unquoted(low)):
        sats = [_ink_saturation(image, _union(r)) for r in runs]
        coloured = [r for r, v in zip(runs, sats) if v > 0.2]
        runs = coloured or runs
        if len(runs) > 1 and words:  # the whole link: its neighbours on the line are not coloured
            def alone(r: list[Word]) -> bool:
                for i in (r[0].index - 1, r[-1].index + 1):
                    if 0 <= i < len(words) and words[i].line == r[0].line and \
                            words[i].box[0] - r[-1].box[2] < r[0].h and r[0].box[0] - words[i].box[2] < r[0].h and \
                            _ink_saturation(image, words[i].box) > 0.2:
                        return False
                return True
            runs = [r for r in runs if alone(r)] or runs
    if len(runs) > 1 and re.search(r"\b(heading|title)\b", _unquoted(low)):
        top = max(_median([w.h for w in r]) for r in runs)
        runs = [r for r in runs if _median([w.h for w in r]) >= 0.85 * top]
    if re.search(r"\bsidebar\b", low):
        runs = [r for r in runs if r[0].box[0] < 0.3 * image_w] or runs
    elif re.search(r"\bmain (?:text|content|body)\b", low):
        runs = [r for r in runs if r[0].box[0] >= 0.2 * image_w] or runs
    k = _ordinal(instruction, start)
    if k == -1:
        return runs[-1]
    if k and k <= len(runs):
        return runs[k - 1]
    return runs[0]


def text_target(instruction: str, words: list[Word], image: Any = None
                ) -> Optional[tuple[tuple[float, float, float, float], tuple[float, float], str]]:
    """``(box, point, rule)`` for a text instruction: ``box`` of the matched words (or character,
    line, paragraph), ``point`` the position asked for, in pixels; ``None`` when no quoted phrase is
    found in the OCR words."""
    qs = quoted(instruction)
    low = instruction.lower()
    W = image.width if image is not None else 1024
    gray = _gray(image) if image is not None else None
    if not qs:
        if re.search(r"\bsearch\s+(box|field|bar|input)\b", low):
            hits = [w for w in words if "search" in _norm(w.text)] or [w for w in words if _norm(w.text) == "quick"]
            if hits:
                w = min(hits, key=lambda w: w.box[1])
                run = [v for v in words if v.line == w.line and abs(v.index - w.index) <= 1 and v.box[2] <= w.box[2]]
                b = _union(run)
                return b, ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2), "search_box"
        return None
    # a character inside a word / the gap between two characters of a word
    single = [(s, q) for s, q in qs if len(q) == 1]
    multi = [(s, q) for s, q in qs if len(q) > 1]
    if single and multi and gray is not None and re.search(r"\bin\b", low):
        ws, word = multi[-1]
        runs = find_phrase(words, word)
        if runs:
            run = _pick(runs, instruction, ws, W, image, words)
            w = run[0]
            txt = word if len(w.text) == len(word) or _norm(w.text) != _norm(word) else w.text
            if len(single) >= 2:
                folded = [_norm(c) or c for c in txt]
                a_, b_ = _norm(single[0][1]) or single[0][1], _norm(single[1][1]) or single[1][1]
                i = next((k for k in range(len(folded) - 1) if folded[k] == a_ and folded[k + 1] == b_), -1)
                j = i + 1 if i >= 0 else -1
                if i >= 0 and j == i + 1:
                    a, b = _char_box(gray, w, i, txt), _char_box(gray, w, j, txt)
                    x = (a[2] + b[0]) / 2
                    return (a[0], w.box[1], b[2], w.box[3]), (x, w.cy), "between_chars"
            ch = single[0][1]
            k = _ordinal(instruction, single[0][0]) or 1
            idx = [i for i, c in enumerate(txt) if c == ch] or [i for i, c in enumerate(txt) if _norm(c) == _norm(ch)]
            if idx:
                i = idx[-1] if k == -1 else idx[min(k, len(idx)) - 1]
                b = _char_box(gray, w, i, txt)
                return b, ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2), "char"
    # punctuation after a word
    m = re.search(r"\b(" + "|".join(_PUNCT) + r")\b", low)
    if m and gray is not None and re.search(r"\b(after|following|ending|ends)\b", low):
        runs = find_phrase(words, qs[0][1])
        if runs:
            run = _pick(runs, instruction, qs[0][0], W, image, words)
            w = run[-1]
            spans = [v for v in glyph_spans(gray, (w.box[0], w.box[1], w.box[2] + 0.5 * w.h, w.box[3]))
                     if v[0] <= w.box[2] + 0.3 * w.h]  # a mark Tesseract left outside the word box
            mark = _PUNCT[m.group(1)]
            if spans and (w.text.endswith(mark) or len(spans) > len(_norm(qs[0][1])) or spans[-1][0] >= w.box[2] - 1):
                s = spans[-1]
                if re.search(r"\b(click|place|put)\b.*\bafter the (?:question mark|period|full stop|exclamation)", low) \
                        or re.search(r"sentence ending", low):
                    return w.box, (s[2] + 1.5, w.cy), "after_punctuation"
                return tuple(float(v) for v in s), ((s[0] + s[2]) / 2, (s[1] + s[3]) / 2), "punctuation"
    if len(qs) >= 2 and re.search(r"\b(between|gap|blank)\b", low) and not re.search(r"\b(characters?|letters?)\b", low):
        a, b = find_phrase(words, qs[0][1]), find_phrase(words, qs[1][1])
        for ra in a:
            for rb in b:
                ba, bb = _union(ra), _union(rb)
                if ra[-1].line == rb[0].line and 0 <= bb[0] - ba[2] < 3 * (ba[3] - ba[1]):
                    box = (ba[2], min(ba[1], bb[1]), bb[0], max(ba[3], bb[3]))
                    return box, ((ba[2] + bb[0]) / 2, (ba[1] + ba[3]) / 2), "between_words"
    # lines and paragraphs named by how they start or end
    start, q = qs[0]
    m_line = re.search(r"\bline\b[^'\"«`‘“]{0,30}\b(start|begin|starting|beginning|starts|begins)", low)
    m_para = re.search(r"\bparagraph\b[^'\"«`‘“]{0,30}\b(start|begin|starting|beginning|starts|begins|"
                       r"ends|ending|end)", low)
    if m_line or m_para:
        runs = find_phrase(words, q)
        ends = bool(m_para and m_para.group(1).startswith("end"))
        firsts = {ln[0].index for ln in text_lines(words)}
        if not ends:  # "starts with": a match that begins its line
            runs = [r for r in runs if r[0].index in firsts] or runs
        else:  # "ends with": a match that ends its line
            lasts = {ln[-1].index for ln in text_lines(words)}
            runs = [r for r in runs if r[-1].index in lasts] or runs
        if not runs and not ends:
            first = q.split()[: max(1, min(3, len(q.split())))]
            runs = find_phrase(words, " ".join(first))
        lines = text_lines(words)
        if runs:
            run = _pick(runs, instruction, start, W, image, words)
            if m_line:
                ln = next(ln for ln in lines if run[0] in ln)
                box = _union(ln)
            else:
                para = next((p for p in paragraphs(words) if any(run[0] in ln for ln in p)), None)
                ln = next(ln for ln in lines if run[0] in ln)
                box = _union([w for ln2 in (para or [ln]) for w in ln2])
                if ends and para:
                    ln = para[-1]
            cy = _union(ln)[1] / 2 + _union(ln)[3] / 2
            if ends or re.search(r"\b(end|last character)\b", low[: start]):
                last = ln[-1] if not ends else run[-1]
                x_end = last.box[2]
                if gray is not None:  # trailing punctuation Tesseract left out of the word box
                    sp = glyph_spans(gray, (last.box[0], last.box[1], last.box[2] + 0.5 * last.h, last.box[3]))
                    x_end = max([x_end] + [v[2] for v in sp if v[0] <= x_end + 0.3 * last.h])
                return box, (x_end + 1.5, last.cy if ends else cy), "line_end" if m_line else "paragraph_end"
            if re.search(r"\b(start|beginning)\s+of\b|" + _CARET_BEFORE, low[: start]):
                return box, (ln[0].box[0] - 1.0, cy), "line_start" if m_line else "paragraph_start"
            return box, ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2), "line_box" if m_line else "paragraph_box"
    # the phrase to locate: the first quote found; later quotes are context ("in the phrase ...")
    for qi, (start, q) in enumerate(qs):
        runs = find_phrase(words, q)
        if not runs:
            continue
        run = _pick(runs, instruction, start, W, image, words)
        k = _ordinal(instruction, start)
        ctx = [r for _, q2 in qs[qi + 1:] for r in find_phrase(words, q2)]
        if not k and len(runs) > 1 and ctx:
            run = min(runs, key=lambda r: min(abs(r[0].index - c[0].index) + (0 if r[0].line == c[0].line else 1000)
                                              for c in ctx))
        box = _union(run)
        cy = (box[1] + box[3]) / 2
        prefix = instruction[:start].lower()
        if re.search(_CARET_AFTER, prefix):
            x_end = box[2]
            last = run[-1]
            if gray is not None and re.search(r"\bsentence\b", low):  # after the sentence's full stop
                sp = glyph_spans(gray, (last.box[0], last.box[1], last.box[2] + 0.5 * last.h, last.box[3]))
                x_end = max([x_end] + [v[2] for v in sp if v[0] <= x_end + 0.3 * last.h])
            elif gray is not None and re.search(r"[.,;:!?)\]»”'\"]$", last.text) and not re.search(r"[^\w\s]$", q):
                sp = glyph_spans(gray, last.box)  # the word's own end, before the punctuation Tesseract joined
                if len(sp) >= 2:
                    x_end = sp[-2][2]
            return box, (x_end + 1.5, cy), "caret_after"
        if re.search(_CARET_BEFORE, prefix):
            return box, (box[0] - 1.5, cy), "caret_before"
        return box, ((box[0] + box[2]) / 2, cy), "phrase_center"
    return None


def _pad_box(box: tuple[float, float, float, float], rule: str, words: list[Word], frac: float = 0.3
             ) -> tuple[float, float, float, float]:
    """A text box grown to its line box: Tesseract boxes hug the ink, while a rendered element's box
    spans the line height (CSS ``line-height`` about 1.2-1.5 times the font size); the glyph height
    of the matched words stands in for the font size: ``frac`` of it above and below, a third of that
    left and right (0.3 for headings, links, buttons and code: element boxes; 0.22 for lines and
    paragraphs, whose boxes some screens draw tight to the ink)."""
    x0, y0, x1, y1 = box
    inside = [w for w in words if w.box[0] >= x0 - 1 and w.box[2] <= x1 + 1 and w.box[1] >= y0 - 1 and w.box[3] <= y1 + 1]
    h = _median([w.h for w in inside]) if inside else (y1 - y0)
    pad_y = frac * h
    pad_x = frac / 3 * h
    return x0 - pad_x, y0 - pad_y, x1 + pad_x, y1 + pad_y


# ---------------------------------------------------------------- the pointer


@dataclass
class OcrAnswer:
    """The baseline's answer: ``point`` / ``box`` in pixels of the original image (``None`` when not
    found), the rule used, and ``text``: the json_pixels reply (or a sentence with no coordinates)."""

    point: Optional[tuple[float, float]]
    box: Optional[tuple[float, float, float, float]]
    rule: str
    text: str


def _r(v: float) -> float:
    return round(float(v), 1)


def point_to(image: Any, instruction: str, task: str = "point", words: Optional[list[Word]] = None,
             langs: str = DEFAULT_LANGS, cache: Optional[dict[str, Any]] = None) -> OcrAnswer:
    """Answer ``instruction`` on ``image`` (PIL) with OCR and the rules in the module docstring.

    ``instruction`` may be the whole prompt of the ``ocr`` family (see :func:`core_instruction`).
    Returns an :class:`OcrAnswer` whose ``text`` is ``{"point": [x, y]}`` (point tasks) or
    ``{"bbox": [x0, y0, x1, y1]}`` (box tasks), pixels of the original image, one decimal; when a
    quoted phrase is not found and the prompt says how to decline (the referent may be absent), the
    convention's decline ``{"point": null}`` / ``{"bbox": null}``; otherwise ``"ocr baseline: <why>"``
    with no coordinates. ``words``: OCR words of ``image`` when already
    read; ``langs``: every language the baseline may read (``eng`` first, the rest when a quoted
    phrase is not found); ``cache``: a dict reused across calls on the same image (keeps the words
    and the spreadsheet grid; the module's OCR cache works without it).
    """
    from pointfail.families.json_pixels import JsonPixels

    may_decline = JsonPixels.decline_prompt in instruction
    instruction = core_instruction(instruction)
    cache = {} if cache is None else cache
    first = langs.split("+")[0]
    if words is None:
        words = cache.get("words")
    if words is None:
        words = read_words(image, langs=first)
    cache["words"] = words
    unq = _unquoted(instruction)
    grid = None
    if image is not None and (_SHEET_HINT.search(unq) or re.search(_COLOR_WORDS, unq.lower())):
        if "grid" not in cache:
            cache["grid"] = find_sheet(image, words, first)
        grid = cache["grid"]
    if grid is not None and _SHEET_HINT.search(unq):
        sp = spreadsheet_point(instruction, grid)
        if sp is not None:
            x, y, rule, box = sp
            return _answer((x, y), box, rule, task)
    if image is not None and re.search(_COLOR_WORDS, unq.lower()) and not quoted(instruction):
        cp = color_point(image, instruction, grid)
        if cp is not None:
            return _answer(cp[:2], None, cp[2], task)
    if not quoted(instruction):  # an unquoted value: "the cell containing 2428"
        m = re.search(r"\b(?:containing|contains|that says|showing|shows|displays|displaying|reads|with (?:the )?"
                      r"(?:value|text))\s+([^\s,;]+?)(?=[\s,;]|[.](?:\s|$)|$)", instruction)
        if m:
            instruction = f'{instruction[:m.start(1)]}"{m.group(1)}"{instruction[m.end(1):]}'
    tt = text_target(instruction, words, image)
    if tt is None and quoted(instruction) and image is not None and langs != first:
        more = cache.get("words_all")
        if more is None:
            more = cache["words_all"] = read_words(image, langs=langs)
        tt = text_target(instruction, more, image)
    if tt is not None:
        box, pt, rule = tt
        if task == "box" and rule in ("line_box", "paragraph_box"):
            box = _pad_box(box, rule, words, 0.22)
        elif task == "box" and rule == "phrase_center" and re.search(r"\b(heading|title|link|button|code|paragraph)\b",
                                                                      unq.lower()):
            box = _pad_box(box, rule, words, 0.3)
        return _answer(pt, box, rule, task)
    if quoted(instruction):
        if may_decline:  # the prompt says how to decline: the json_pixels convention's null location
            return OcrAnswer(None, None, "not_found", json.dumps({"bbox" if task == "box" else "point": None}))
        return OcrAnswer(None, None, "not_found", "ocr baseline: quoted text not found in the screenshot")
    return OcrAnswer(None, None, "unreadable", "ocr baseline: no rule reads this instruction")


def _answer(pt, box, rule: str, task: str) -> OcrAnswer:
    if task == "box" and box is not None:
        text = json.dumps({"bbox": [_r(v) for v in box]})
    else:
        text = json.dumps({"point": [_r(pt[0]), _r(pt[1])]})
    return OcrAnswer((float(pt[0]), float(pt[1])), box, rule, text)
