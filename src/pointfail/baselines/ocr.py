"""The ``ocr`` baseline: a non-VLM pointer that reads the screenshot with Tesseract and the instruction
with rules, and answers in the ``json_pixels`` convention.

Issue 4 ("two baselines that need no weights"): it reads quoted text, cell references such as ``E15``
against the row and column headers it finds, and "before/after the word ..." caret positions. It is a
floor for GUI grounding, not a model: an instruction it cannot read, or text it cannot find, gets an
answer without coordinates (scored ``no_prediction``).

OCR: Tesseract 5 (Debian ``tesseract-ocr`` with the ``eng deu fra spa ita nld`` packs, the
PointerBench languages) through ``pytesseract.image_to_data`` (which runs the ``tesseract`` binary
with an argument list, no shell). The image is converted to grayscale and upscaled by ``scale``
(default 2: screenshot text at 12-16 px is below Tesseract's comfortable x-height) and read with page
segmentation mode 11 (sparse text: UI screenshots are not one flowing page); boxes are mapped back to
pixels of the original image.

Answer format (PointerBench paper, json_pixels): ``{"point": [x, y]}`` or, for box tasks,
``{"bbox": [x0, y0, x1, y1]}``, absolute pixels of the original image, origin top-left.

Instruction rules (each a function below, tried in this order):

1. Spreadsheet cells: a cell reference (``[A-Z]{1,2}[0-9]{1,4}`` outside quotes) with optional
   offsets ("2 rows down", "1 column left") and parts (corners, edges); column and row headers
   ("column E", "row 15"); resize handles (the border after a column or below a row). Columns and
   rows are located from the header letters and numbers Tesseract finds (a row of single capital
   letters at one height, a column of integers at one x), extrapolated linearly for headers it missed.
2. Text: quoted strings (``"…"``, ``'…'``, ``«…»``, ``“…”``, ``‘…’``, ````…````): "between A and B"
   (the gap between the two words), before/after a word (its left/right edge at mid-height: a caret
   position), start/end of the line that starts with a phrase, else the centre of the phrase.
   Ordinals ("the second …", "the last …") pick among several matches.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any, Optional

DEFAULT_LANGS = "eng+deu+fra+spa+ita+nld"


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


def read_words(image: Any, langs: str = DEFAULT_LANGS, scale: float = 2.0, psm: int = 11) -> list[Word]:
    """OCR ``image`` (a PIL image) with Tesseract; words in reading order with boxes in pixels of the
    original image. Raises ``ImportError`` when pytesseract is missing and
    ``pytesseract.TesseractNotFoundError`` when the binary is."""
    import pytesseract
    from PIL import Image

    gray = image.convert("L")
    if scale != 1:
        gray = gray.resize((round(gray.width * scale), round(gray.height * scale)), Image.Resampling.LANCZOS)
    data = pytesseract.image_to_data(gray, lang=langs, config=f"--psm {psm}", output_type=pytesseract.Output.DICT)
    words: list[Word] = []
    for i, text in enumerate(data["text"]):
        text = (text or "").strip()
        conf = float(data["conf"][i])
        if not text or conf < 0:
            continue
        x, y, w, h = (data[k][i] / scale for k in ("left", "top", "width", "height"))
        words.append(Word(text=text, box=(x, y, x + w, y + h), conf=conf, line=(0, 0, 0)))
    return group_lines(words)


def group_lines(words: list[Word]) -> list[Word]:
    """Assign visual lines and reading order (sparse page segmentation gives every word its own
    block, so Tesseract's line numbers are not used): words whose vertical centres lie within half
    the median word height of a line's mean join it; a horizontal gap wider than three word heights
    starts a new line (another column or cell). Lines top to bottom, words left to right; ``line`` is
    ``(line_number, segment, 0)`` and ``index`` the reading-order position."""
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
        for j, w in enumerate(row):
            if j and w.box[0] - row[j - 1].box[2] > 3 * max(w.box[3] - w.box[1], 1.0):
                seg += 1
            w.line = (li, seg, 0)
            w.index = len(out)
            out.append(w)
    return out


# ---------------------------------------------------------------- instruction reading

_QUOTES = [r'"([^"]+)"', r"«\s*([^»]+?)\s*»", r"“([^”]+)”", r"‘([^’]+)’", r"`([^`]+)`", r"(?<![\w])'([^']+)'(?![\w])"]
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}


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
    s = unicodedata.normalize("NFKC", s).casefold()
    return re.sub(r"[^\w]", "", s)


def col_index(letters: str) -> int:
    """Spreadsheet column letters -> 0-based index (A=0, Z=25, AA=26)."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def col_letters(index: int) -> str:
    """0-based column index -> letters (0=A, 26=AA)."""
    s = ""
    index += 1
    while index:
        index, r = divmod(index - 1, 26)
        s = chr(65 + r) + s
    return s


# ---------------------------------------------------------------- spreadsheet geometry


@dataclass
class Grid:
    """Header positions found by OCR: column letter index -> x centre, row number -> y centre, in
    pixels; ``col_y``/``row_x`` the header band positions."""

    cols: dict[int, float] = field(default_factory=dict)
    rows: dict[int, float] = field(default_factory=dict)
    col_y: Optional[float] = None
    row_x: Optional[float] = None

    def _fit(self, table: dict[int, float]) -> Optional[tuple[float, float]]:
        if len(table) < 2:
            return None
        import numpy as np

        k = np.array(sorted(table), dtype=float)
        v = np.array([table[int(i)] for i in k])
        slope, icpt = np.polyfit(k, v, 1)
        return float(slope), float(icpt)

    def _center(self, table: dict[int, float], key: int) -> Optional[float]:
        if key in table:
            return table[key]
        fit = self._fit(table)
        return None if fit is None else fit[0] * key + fit[1]

    def _span(self, table: dict[int, float], key: int) -> Optional[tuple[float, float]]:
        c = self._center(table, key)
        if c is None:
            return None
        lo, hi = self._center(table, key - 1), self._center(table, key + 1)
        fit = self._fit(table)
        step = fit[0] if fit else None
        left = (lo + c) / 2 if lo is not None else (c - step / 2 if step else None)
        right = (c + hi) / 2 if hi is not None else (c + step / 2 if step else None)
        if left is None or right is None:
            return None
        return left, right

    def cell_box(self, col: int, row: int) -> Optional[tuple[float, float, float, float]]:
        """``(x0, y0, x1, y1)`` of a cell in pixels, halfway between neighbouring header centres."""
        xs, ys = self._span(self.cols, col), self._span(self.rows, row)
        if xs is None or ys is None:
            return None
        return xs[0], ys[0], xs[1], ys[1]


def find_grid(words: list[Word]) -> Grid:
    """Locate column headers (single capital letters, 1-2 of them, sharing one height) and row headers
    (integers sharing one x) among OCR words. The band with the most members wins."""
    grid = Grid()
    letters = [w for w in words if re.fullmatch(r"[A-Z]{1,2}", w.text)]
    numbers = [w for w in words if re.fullmatch(r"\d{1,4}", w.text)]

    def band(ws: list[Word], key) -> list[Word]:
        best: list[Word] = []
        for w in ws:
            tol = max(4.0, (w.box[3] - w.box[1]) * 0.6)
            group = [v for v in ws if abs(key(v) - key(w)) <= tol]
            if len(group) > len(best):
                best = group
        return best

    cols = band(letters, lambda w: w.cy)
    if len(cols) >= 2:
        grid.col_y = sum(w.cy for w in cols) / len(cols)
        for w in cols:
            grid.cols.setdefault(col_index(w.text), w.cx)
    rows = band(numbers, lambda w: w.cx)
    if len(rows) >= 2:
        grid.row_x = sum(w.cx for w in rows) / len(rows)
        for w in rows:
            grid.rows.setdefault(int(w.text), w.cy)
    return grid


def _strip_words(image: Any, box: tuple[float, float, float, float], langs: str, scale: float = 3.0) -> list[Word]:
    """OCR one strip of ``image`` as a block of text (page segmentation mode 6, which reads the isolated
    single letters and digits of header bands that sparse mode drops); boxes in image pixels."""
    import pytesseract
    from PIL import Image

    x0, y0, x1, y1 = (int(round(v)) for v in box)
    x0, y0, x1, y1 = max(0, x0), max(0, y0), min(image.width, x1), min(image.height, y1)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return []
    crop = image.crop((x0, y0, x1, y1)).convert("L")
    crop = crop.resize((round(crop.width * scale), round(crop.height * scale)), Image.Resampling.LANCZOS)
    data = pytesseract.image_to_data(crop, lang=langs, config="--psm 6", output_type=pytesseract.Output.DICT)
    out = []
    for i, text in enumerate(data["text"]):
        text = (text or "").strip()
        if not text or float(data["conf"][i]) < 0:
            continue
        if text in ("|", "l", "1") and box[3] - box[1] < box[2] - box[0]:
            text = "I"  # a lone vertical stroke in a horizontal header band is the column letter I
        x, y, w, h = (data[k][i] / scale for k in ("left", "top", "width", "height"))
        out.append(Word(text=text, box=(x0 + x, y0 + y, x0 + x + w, y0 + y + h), conf=float(data["conf"][i]),
                        line=(0, 0, 0)))
    return out


def refine_grid(image: Any, words: list[Word], grid: Grid, langs: str = "eng") -> Grid:
    """Re-read the header bands as strips when the page pass found the row-number column: the strip
    of the row numbers (all of them, single digits included) and the band one row above the first
    row (the column letters). Returns a new :class:`Grid` (``grid`` when there is no row band)."""
    if grid.row_x is None or len(grid.rows) < 2:
        return grid
    fit = grid._fit(grid.rows)
    step = abs(fit[0]) if fit else 0
    if step < 4:
        return grid
    nums = [w for w in words if re.fullmatch(r"\d{1,4}", w.text) and abs(w.cx - grid.row_x) < 2 * step]
    half_w = max(max(w.box[2] - w.box[0] for w in nums) if nums else step, step)
    col_strip = _strip_words(image, (grid.row_x - half_w, 0, grid.row_x + half_w, image.height), langs)
    rows = dict(grid.rows)
    for w in col_strip:
        if re.fullmatch(r"\d{1,4}", w.text):
            rows.setdefault(int(w.text), w.cy)
    better = Grid(cols=dict(grid.cols), rows=rows, col_y=grid.col_y, row_x=grid.row_x)
    first = min(rows)
    head_y = rows[first] - step
    band = _strip_words(image, (0, head_y - step / 2, image.width, head_y + step / 2), langs)
    letters = [w for w in band if re.fullmatch(r"[A-Z]{1,2}", w.text)]
    if len(letters) >= 2:
        better.col_y = sum(w.cy for w in letters) / len(letters)
        better.cols = {}
        for w in letters:
            better.cols.setdefault(col_index(w.text), w.cx)
    return better


_SHEET_HINT = re.compile(r"(?<![\w])[A-Za-z]{1,2}\d{1,4}(?![\w])|\b(column|row|cell|header|gutter)\b", re.I)

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
    if re.search(r"\b(bottom|lower)\b.*\b(border|edge|boundary|line)\b", t):
        return "bottom_edge"
    if re.search(r"(right-hand|right side|right)\b.*\b(border|edge|boundary|separator)\b|separator after", t):
        return "right_edge"
    return "center"


def spreadsheet_point(instruction: str, grid: Grid) -> Optional[tuple[float, float, str]]:
    """The pixel point a spreadsheet instruction asks for, with the rule that produced it, or ``None``
    when the instruction is not about cells/headers or the grid lacks the needed headers."""
    text = _unquoted(instruction)
    low = text.lower()
    # column resize handle: the border after column X
    m = re.search(r"(?:resize|drag|width|widen)[^.]*?\bcolumn\s+([A-Z]{1,2})\b|column\s+([A-Z]{1,2})'s\s+resize|"
                  r"resize\s+(?:grip|handle|line)\s+after\s+the\s+([A-Z]{1,2})\b", text)
    if m and grid.col_y is not None:
        c = col_index(next(g for g in m.groups() if g))
        span = grid._span(grid.cols, c)
        if span:
            return span[1], grid.col_y, "col_resize"
    m = re.search(r"\brow\s+(\d{1,4})\b", low)
    if m and re.search(r"resize|taller|shorter|height|separating|drag", low) and grid.row_x is not None:
        span = grid._span(grid.rows, int(m.group(1)))
        if span:
            return grid.row_x, span[1], "row_resize"
    cells = [mm for mm in _CELL.finditer(text) if mm.group(1).isupper() or mm.group(1).islower()]
    if cells:
        mm = cells[-1] if re.search(r"\bfrom\b|\banchor\b|starting", low) and len(cells) > 1 else cells[0]
        col, row = col_index(mm.group(1)), int(mm.group(2))
        dc, dr = _offsets(text)
        box = grid.cell_box(col + dc, row + dr)
        if box is None:
            return None
        x0, y0, x1, y1 = box
        part = _part(text)
        pts = {"center": ((x0 + x1) / 2, (y0 + y1) / 2), "top_left": (x0, y0), "top_right": (x1, y0),
               "bottom_left": (x0, y1), "bottom_right": (x1, y1), "bottom_edge": ((x0 + x1) / 2, y1),
               "right_edge": (x1, (y0 + y1) / 2)}
        x, y = pts[part]
        return x, y, f"cell_{part}"
    m = re.search(r"\bcolumn\s+([A-Z]{1,2})\b|\bletter\s+([A-Z]{1,2})\b|\blabel\s+([A-Z]{1,2})\b|"
                  r"\b([A-Z]{1,2})\s+column\b", text)
    if m and grid.col_y is not None:
        x = grid._center(grid.cols, col_index(next(g for g in m.groups() if g)))
        if x is not None:
            return x, grid.col_y, "col_header"
    m = re.search(r"\brow\b[^\d]{0,20}(\d{1,4})\b|\b(\d{1,4})\s+on the left", low)
    if m and grid.row_x is not None:
        y = grid._center(grid.rows, int(next(g for g in m.groups() if g)))
        if y is not None:
            return grid.row_x, y, "row_header"
    return None


# ---------------------------------------------------------------- text targets


def find_phrase(words: list[Word], phrase: str) -> list[list[Word]]:
    """Runs of consecutive OCR words (same Tesseract line) whose joined text matches ``phrase``
    (NFKC, case-folded, punctuation ignored; a fuzzy ratio >= 0.8 accepts one misread character in
    five). Exact matches are returned when there are any; matches in reading order."""
    target = _norm(phrase)
    if not target:
        return []
    n = len(phrase.split())
    exact: list[list[Word]] = []
    fuzzy: list[tuple[float, list[Word]]] = []
    for i in range(len(words)):
        run = words[i:i + n]
        if len(run) < n or len({w.line for w in run}) > 1:
            continue
        got = _norm("".join(w.text for w in run))
        if got == target:
            exact.append(run)
        elif got:
            r = SequenceMatcher(None, got, target).ratio()
            if r >= 0.8:
                fuzzy.append((r, run))
    if exact:
        return exact
    fuzzy.sort(key=lambda t: -t[0])
    return [run for _, run in fuzzy[:1]]


def _ordinal(instruction: str, quote_start: int) -> Optional[int]:
    before = instruction[:quote_start].lower()
    m = re.search(r"\b(first|second|third|fourth|fifth|last)\b(?:\s+(?:occurrence|instance)\s+of)?[\s\w]{0,12}$", before)
    return _ORDINALS[m.group(1)] if m else None


def _union(run: list[Word]) -> tuple[float, float, float, float]:
    return (min(w.box[0] for w in run), min(w.box[1] for w in run), max(w.box[2] for w in run),
            max(w.box[3] for w in run))


def text_target(instruction: str, words: list[Word]) -> Optional[tuple[tuple[float, float, float, float], tuple[float, float], str]]:
    """``(box, point, rule)`` for a text instruction: ``box`` of the matched words, ``point`` the
    position asked for, in pixels; ``None`` when no quoted phrase is found in the OCR words."""
    qs = quoted(instruction)
    if not qs:
        return None
    low = instruction.lower()
    if len(qs) >= 2 and re.search(r"\b(between|gap|blank)\b", low) and not re.search(r"\b(characters?|letters?)\b", low):
        a, b = find_phrase(words, qs[0][1]), find_phrase(words, qs[1][1])
        for ra in a:
            for rb in b:
                ba, bb = _union(ra), _union(rb)
                if ra[-1].line == rb[0].line and 0 <= bb[0] - ba[2] < 3 * (ba[3] - ba[1]):
                    box = (ba[2], min(ba[1], bb[1]), bb[0], max(ba[3], bb[3]))
                    return box, ((ba[2] + bb[0]) / 2, (ba[1] + ba[3]) / 2), "between_words"
    # the phrase to locate: the first quote found; later quotes are context ("in the phrase ...",
    # "right before ...") that pick among repeated matches (the match nearest a context match)
    for qi, (start, q) in enumerate(qs):
        runs = find_phrase(words, q)
        if not runs:
            continue
        k = _ordinal(instruction, start)
        if k == -1:
            run = runs[-1]
        elif k and k <= len(runs):
            run = runs[k - 1]
        else:
            run = runs[0]
            ctx = [r for _, q2 in qs[qi + 1:] for r in find_phrase(words, q2)]
            if len(runs) > 1 and ctx:
                run = min(runs, key=lambda r: min(abs(r[0].index - c[0].index) + (0 if r[0].line == c[0].line else 1000)
                                                  for c in ctx))
        box = _union(run)
        cy = (box[1] + box[3]) / 2
        line_words = [w for w in words if w.line == run[0].line]
        prefix = instruction[:start].lower()
        if re.search(r"\b(start|beginning)\s+of\s+the\s+line\b", low):
            return box, (min(w.box[0] for w in line_words), cy), "line_start"
        if re.search(r"\bend\s+of\s+the\s+line\b", low):
            return box, (max(w.box[2] for w in line_words), cy), "line_end"
        if re.search(r"\b(after|past|end of|behind)\b", prefix):
            return box, (box[2], cy), "caret_after"
        if re.search(r"\b(before|leading edge|left of|start of|in front of)\b", prefix):
            return box, (box[0], cy), "caret_before"
        return box, ((box[0] + box[2]) / 2, cy), "phrase_center"
    return None


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

    Returns an :class:`OcrAnswer` whose ``text`` is ``{"point": [x, y]}`` (point tasks) or
    ``{"bbox": [x0, y0, x1, y1]}`` (box tasks), pixels of the original image, one decimal; or
    ``"ocr baseline: <why>"`` with no coordinates. ``words``: OCR words of ``image`` when already
    read; ``cache``: a dict reused across calls on the same image (keeps the OCR words and the
    re-read header grid).
    """
    cache = {} if cache is None else cache
    if words is None:
        words = cache.get("words")
    if words is None:
        words = read_words(image, langs=langs)
    cache["words"] = words
    grid = find_grid(words)
    if _SHEET_HINT.search(_unquoted(instruction)) and image is not None:
        if "grid" not in cache:
            try:
                cache["grid"] = refine_grid(image, words, grid, langs.split("+")[0])
            except Exception:  # a strip that cannot be read leaves the page-level grid
                cache["grid"] = grid
        grid = cache["grid"]
    sp = spreadsheet_point(instruction, grid) if (grid.cols or grid.rows) else None
    if sp is not None:
        x, y, rule = sp
        box = None
        m = [mm for mm in _CELL.finditer(_unquoted(instruction))]
        if m and rule.startswith("cell"):
            dc, dr = _offsets(_unquoted(instruction))
            box = grid.cell_box(col_index(m[0].group(1)) + dc, int(m[0].group(2)) + dr)
        return _answer((x, y), box, rule, task)
    tt = text_target(instruction, words)
    if tt is not None:
        box, pt, rule = tt
        return _answer(pt, box, rule, task)
    if quoted(instruction):
        return OcrAnswer(None, None, "not_found", "ocr baseline: quoted text not found in the screenshot")
    return OcrAnswer(None, None, "unreadable", "ocr baseline: no rule reads this instruction")


def _answer(pt, box, rule: str, task: str) -> OcrAnswer:
    if task == "box" and box is not None:
        text = json.dumps({"bbox": [_r(v) for v in box]})
    else:
        text = json.dumps({"point": [_r(pt[0]), _r(pt[1])]})
    return OcrAnswer((float(pt[0]), float(pt[1])), box, rule, text)
