"""Spreadsheets read from pixels and OCR, and the instruction rule for cells, headers and handles.

The grid's lines come from pixels (thin lines or long edges spanning most of the image); cells are
the intervals between them, named by the header letters and row numbers Tesseract reads (majority
vote of the letter/number minus the interval index). :func:`spreadsheet_point` reads cell
references (``[A-Z]{1,2}[0-9]{1,4}`` outside quotes) with offsets ("2 rows down", "1 column left")
and parts (corners, edges), column and row headers, and resize handles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from pointfail.generated.baselines.ocr.instruction import unquoted
from pointfail.generated.baselines.ocr.words import Word, grayscale, read_strip

__all__ = [
    "SHEET_HINT",
    "SheetGrid",
    "cell_part",
    "col_index",
    "col_letters",
    "find_sheet",
    "line_positions",
    "spreadsheet_point",
]


def col_index(letters: str) -> int:
    """Spreadsheet column letters -> 0-based index (A=0, Z=25, AA=26)."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def col_letters(index: int) -> str:
    """0-based column index -> letters (0=A, 26=AA): the sheets suite's
    :func:`pointfail.generated.suites.sheets.col_name` (raises ``ValueError`` for a negative index)."""
    from pointfail.generated.suites.sheets import col_name

    return col_name(index)


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


def _row_numbers(ws: list[Word], v0: float, hlines: list[float]) -> list[tuple[int, int]]:
    """``(number, line interval)`` of the words left of ``v0`` (the first vertical line) reading as a
    row number (1-4 digits, stray punctuation stripped)."""
    out = []
    for w in ws:
        t = w.text.strip(".,;:|()[]'")
        if re.fullmatch(r"\d{1,4}", t) and w.cx < v0:
            k = _interval(hlines, w.cy)
            if k is not None:
                out.append((int(t), k))
    return out


def _header_bands(ws: list[Word], v0: float, hlines: list[float], vlines: list[float], H: float
                  ) -> dict[int, list[tuple[int, int]]]:
    """Per horizontal line interval, ``(column index, vertical interval)`` of the words right of
    ``v0`` reading as column letters (1-2 capitals, look-alike glyphs mapped by ``_LETTERISH``)."""
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


def _band_score(band: list[tuple[int, int]]) -> tuple[int, int]:
    """(agreeing votes, single letters) of a header band: toolbar glyphs read as "BE" or "RE" do not agree."""
    offs = [v - i for v, i in band]
    return max(offs.count(o) for o in offs), sum(1 for v, _ in band if v < 26)


def _reread_header_band(image: Any, grid: SheetGrid, pairs: list[tuple[int, int]],
                        bands: dict[int, list[tuple[int, int]]], band: Optional[int], langs: str) -> Optional[int]:
    """The header band when the page reading found too few column letters: the line interval just
    above the first numbered row, re-read with :func:`read_strip` (single-digit row numbers are often
    missing from the page reading: the number strip is re-read first, updating ``pairs`` and
    ``grid.row_off``); letters found are added to ``bands``. Returns the band (``band`` unchanged when
    the strip holds none)."""
    hlines, v0 = grid.hlines, grid.vlines[0]
    W, H = image.width, image.height
    if len(pairs) < 12 or min(k for _, k in pairs) > 2:
        pairs += _row_numbers(read_strip(image, (0, 0, v0, H), langs), v0, hlines)
        grid.row_off = _vote(pairs)
    if grid.row_off is not None and pairs:
        top = min(k for v, k in pairs if v - k == grid.row_off)
        ks = [top - 1] if top >= 1 else []
    else:
        ks = []
    for k in ks:
        strip = read_strip(image, (v0, hlines[k] - 2, W, hlines[k + 1] + 2), langs)
        more = _header_bands(strip, v0, hlines, grid.vlines, H)
        if more.get(k):
            bands[k] = bands.get(k, []) + more[k]
            band = k
    return band


def find_sheet(image: Any, words: list[Word], langs: str = "eng") -> Optional[SheetGrid]:
    """Read a spreadsheet's grid: lines from pixels (:func:`line_positions`), the row-number column
    (left of the first vertical line) and the column-header band (the line interval whose letter-like
    words agree most on one offset, then hold the most single letters), and the letter/number offsets by majority vote. When the page reading has too
    few header words, the row-number strip and the header band are re-read with :func:`read_strip`.
    ``None`` when no grid is found."""
    gray = grayscale(image)
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
    pairs = _row_numbers(words, v0, hlines)
    if len(pairs) < 3:
        pairs += _row_numbers(read_strip(image, (0, 0, v0, H), langs), v0, hlines)
    grid.row_off = _vote(pairs)
    bands = _header_bands(words, v0, hlines, vlines, H)
    band = max(bands, key=lambda k: _band_score(bands[k])) if bands else None
    if band is None or len(bands[band]) < 2:
        band = _reread_header_band(image, grid, pairs, bands, band, langs)
    if band is not None and bands.get(band):
        grid.col_off = _vote(bands[band])
        grid.head = (hlines[band], hlines[band + 1]) if band + 1 < len(hlines) else (hlines[band], float(H))
    return grid


SHEET_HINT = re.compile(r"(?<![\w])[A-Za-z]{1,2}\d{1,4}(?![\w])|\b(column|row|cell|header|gutter|spreadsheet|grid)\b",
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
    moved = re.search(r"(?:click|move)\s+(\d+)\s+rows?\s+(up|down)", t)
    if moved and dr == 0:
        dr = int(moved.group(1)) * (1 if moved.group(2) == "down" else -1)
    return dc, dr


def cell_part(text: str) -> str:
    """The part of a cell an instruction names: a corner (``top_left``, ``top_right``, ``bottom_left``,
    ``bottom_right``), ``bottom_edge``, ``right_edge``, else ``center``."""
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


SheetPoint = tuple[float, float, str, Optional[tuple]]


def _resize_point(text: str, low: str, grid: SheetGrid, head_y: Optional[float], row_x: Optional[float]
                  ) -> Optional[SheetPoint]:
    """A column's resize handle (its right border on the header band) or a row's (its bottom border
    on the row-number column), when the instruction asks to resize, drag or names the border."""
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
    return None


def _cell_point(text: str, low: str, grid: SheetGrid, cells: list[re.Match[str]]) -> Optional[SheetPoint]:
    """The part of the cell named by a reference in ``cells`` (the last one after "from"/"anchor"/
    "starting", else the first), moved by the offsets the instruction states; ``None`` when that
    cell is not visible."""
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
    part = cell_part(text)
    pts = {"center": ((x0 + x1) / 2, (y0 + y1) / 2), "top_left": (x0, y0), "top_right": (x1, y0),
           "bottom_left": (x0, y1), "bottom_right": (x1, y1), "bottom_edge": ((x0 + x1) / 2, y1),
           "right_edge": (x1, (y0 + y1) / 2)}
    x, y = pts[part]
    return x, y, f"cell_{part}", box


def _header_point(text: str, low: str, grid: SheetGrid, head_y: Optional[float], row_x: Optional[float]
                  ) -> Optional[SheetPoint]:
    """The centre of a named column header (on the header band) or row header (on the row-number column)."""
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


def spreadsheet_point(instruction: str, grid: SheetGrid) -> Optional[SheetPoint]:
    """``(x, y, rule, cell_box)`` for a spreadsheet instruction, pixels, or ``None`` when it is not
    about cells/headers or the grid lacks what it needs. Tried in order: a resize handle, a cell
    reference (final: ``None`` when the cell is not visible), a column or row header."""
    text = unquoted(instruction)
    low = text.lower()
    head_y = (grid.head[0] + grid.head[1]) / 2 if grid.head else None
    row_x = (grid.rowhead[0] + grid.rowhead[1]) / 2 if grid.rowhead else None
    resize = _resize_point(text, low, grid, head_y, row_x)
    if resize is not None:
        return resize
    cells = list(_CELL.finditer(text))
    if cells:
        return _cell_point(text, low, grid, cells)
    return _header_point(text, low, grid, head_y, row_x)
