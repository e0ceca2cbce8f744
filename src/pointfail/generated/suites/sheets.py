"""The ``sheets`` suite: spreadsheet screenshots with structural and geometric pointing targets.

Modelled on PointerBench-Sheets (the PointerBench paper, appendix "PointerBench-Sheets", and its 500
real rows): a visible grid with row and column headers, cell values, coloured cells, five visual
styles (``bare``, ``excel``, ``excel_white``, ``libreoffice``, ``google_sheets``) with optional
application chrome, and a random first visible row and column (scroll offset), so no semantic
location sits at a fixed screen position.

Each category has a writer in :data:`WRITERS` (a dispatch table of small functions over one rendered
sheet); :func:`make_sample` lays out and renders the sheet and calls the writer of its category.

Row fields beyond the layout's: ``data_type`` and ``category`` (PointerBench's names: ``cell``/
``cell_ref``, ``cell_content``, ``cell_ref_content``; ``color``/``cell_color``; ``header``/
``col_header``, ``row_header``; ``relative``/``cell_relative_row``, ``cell_relative_offset``;
``edge``/``col_resize_handle``, ``row_resize_handle``, ``cell_right_edge``, ``cell_bottom_edge``;
``corner``/``cell_{top,bottom}_{left,right}_corner``), ``ui_style``, ``language`` (the language of
the cell values; instructions are English, as in the real rows), ``first_row``, ``first_col``.

Geometry (absolute pixels, see :mod:`pointfail.generated.suites.scene`): a grid line is one pixel wide; a cell
box runs from its left to its right grid line and its top to its bottom grid line. Thin targets use
PointerBench's 6-pixel extents: an edge is ``[x-3, top, x+3, bottom]`` around the line's pixel
column ``x``, a corner ``[x-3, y-3, x+3, y+3]``, a column resize handle the 6-pixel strip around the
column's right line through the header row, a row resize handle the strip around the row's bottom
line across the row header (the real rows' boxes have exactly these shapes).

Scene graph element ids: ``cell:C7``, ``column_header:C``, ``row_header:7``,
``col_resize_handle:C`` (right line of column C in the header), ``row_resize_handle:7`` (bottom line
of row 7), ``vedge:C7`` / ``hedge:C7`` (right / bottom edge of C7, category ``cell_edge``),
``corner:C7`` (the grid node at the bottom-right of C7, category ``cell_corner``; the top-left corner
of C7 is therefore ``corner:B6``), ``band:row:12`` / ``band:column:F`` (a whole visible row or column
filled in one colour, category ``color_band``, text = colour name), ``header_corner``, and
``chrome:*`` for application chrome.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Optional

from pointfail.generated.suites import corpus
from pointfail.generated.suites.drawn import DrawnSuite
from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.painter import TextPainter
from pointfail.generated.suites.rows import Named, SampleSpec, choose_category, quote
from pointfail.generated.suites.scene import IMAGE_SIZE, Element, Scene, require_unique, union_box

__all__ = [
    "CATEGORY_WEIGHTS",
    "COLORS",
    "STYLES",
    "SUITE",
    "WRITERS",
    "add_arguments",
    "col_name",
    "generate",
    "make_sample",
    "run",
]

CATEGORY_WEIGHTS: dict[str, tuple[str, int]] = {
    # category: (data_type, weight = the count of that category among PointerBench-Sheets' 500 rows)
    "cell_ref": ("cell", 82),
    "cell_color": ("color", 56),
    "cell_ref_content": ("cell", 45),
    "col_resize_handle": ("edge", 43),
    "cell_content": ("cell", 43),
    "col_header": ("header", 35),
    "cell_relative_offset": ("relative", 33),
    "row_resize_handle": ("edge", 32),
    "cell_relative_row": ("relative", 27),
    "row_header": ("header", 24),
    "cell_right_edge": ("edge", 22),
    "cell_bottom_edge": ("edge", 19),
    "cell_bottom_left_corner": ("corner", 13),
    "cell_bottom_right_corner": ("corner", 12),
    "cell_top_left_corner": ("corner", 9),
    "cell_top_right_corner": ("corner", 5),
}

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (234, 100, 100),
    "green": (110, 200, 120),
    "blue": (110, 160, 240),
    "yellow": (250, 225, 90),
    "orange": (250, 165, 80),
    "purple": (180, 130, 230),
    "pink": (245, 150, 200),
    "gray": (175, 175, 175),
}
"""Fill colours with the plain names used in instructions; chosen far apart in hue so each name is
unambiguous."""

FONTS_USED = ("dejavu-sans", "dejavu-sans-bold", "liberation-sans", "liberation-sans-bold")


@dataclass(frozen=True)
class Style:
    """One visual style: fonts, colours, chrome kind, header and row sizes (pixels)."""

    name: str
    font: str
    bold_font: str
    size: int
    bg: tuple[int, int, int]
    grid: tuple[int, int, int]
    header_bg: tuple[int, int, int]
    header_fg: tuple[int, int, int]
    header_line: tuple[int, int, int]
    text: tuple[int, int, int]
    chrome: str  # none | excel | excel_white | libreoffice | google
    accent: tuple[int, int, int]
    row_h: tuple[int, int]
    header_h: tuple[int, int]


STYLES: dict[str, Style] = {
    "bare": Style("bare", "dejavu-sans", "dejavu-sans-bold", 12, (255, 255, 255), (208, 208, 208),
                  (243, 243, 243), (60, 60, 60), (180, 180, 180), (20, 20, 20), "none", (90, 90, 90),
                  (18, 23), (19, 23)),
    "excel": Style("excel", "liberation-sans", "liberation-sans-bold", 13, (255, 255, 255), (212, 212, 212),
                   (230, 230, 230), (68, 68, 68), (171, 171, 171), (0, 0, 0), "excel", (33, 115, 70),
                   (18, 22), (19, 22)),
    "excel_white": Style("excel_white", "liberation-sans", "liberation-sans-bold", 13, (255, 255, 255),
                         (225, 225, 225), (250, 250, 250), (80, 80, 80), (200, 200, 200), (10, 10, 10),
                         "excel_white", (33, 115, 70), (18, 22), (19, 22)),
    "libreoffice": Style("libreoffice", "dejavu-sans", "dejavu-sans-bold", 12, (255, 255, 255), (192, 192, 192),
                         (239, 239, 239), (40, 40, 40), (160, 160, 160), (0, 0, 0), "libreoffice",
                         (70, 110, 180), (17, 21), (18, 21)),
    "google_sheets": Style("google_sheets", "liberation-sans", "liberation-sans-bold", 12, (255, 255, 255),
                           (226, 227, 227), (248, 249, 250), (95, 99, 104), (196, 199, 197), (32, 33, 36),
                           "google", (26, 115, 232), (19, 22), (20, 22)),
}



def col_name(index: int) -> str:
    """Spreadsheet column letters for a 0-based column index: 0 -> A, 25 -> Z, 26 -> AA, 27 -> AB."""
    if index < 0:
        raise ValueError(f"column index must be >= 0, got {index}")
    s = ""
    index += 1
    while index:
        index, r = divmod(index - 1, 26)
        s = chr(65 + r) + s
    return s


def _value(rng: random.Random, kind: str, lang: str) -> str:
    words = corpus.SHEET_WORDS[lang]
    if kind == "name":
        return f"{rng.choice(corpus.FIRST_NAMES)} {rng.choice(corpus.LAST_NAMES)}"
    if kind == "first":
        return rng.choice(corpus.FIRST_NAMES)
    if kind == "email":
        return f"{rng.choice(corpus.FIRST_NAMES).lower().replace('é', 'e')}{rng.randint(1, 99)}@example.org"
    if kind == "id":
        return f"{rng.choice(('EMP', 'ORD', 'TKT', 'INV'))}-{rng.randint(10000, 99999)}"
    if kind == "int":
        return str(rng.randint(1, 9999))
    if kind == "amount":
        v = rng.randint(100, 999999)
        return f"{v // 100:,}.{v % 100:02d}"
    if kind == "date":
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind in words:
        return rng.choice(words[kind])
    raise KeyError(kind)


COLUMN_KINDS = {
    # kind: (width range, right aligned, header title)
    "name": ((105, 150), False, "Name"),
    "first": ((70, 100), False, "First"),
    "email": ((165, 215), False, "Email"),
    "id": ((85, 110), False, "ID"),
    "int": ((55, 80), True, "Qty"),
    "amount": ((80, 110), True, "Amount"),
    "date": ((85, 105), True, "Date"),
    "product": ((90, 130), False, "Item"),
    "status": ((75, 105), False, "Status"),
    "city": ((80, 110), False, "City"),
    "empty": ((64, 100), False, ""),
}


@dataclass
class Grid:
    """Laid-out grid: line positions in pixels and what is visible."""

    c0: int
    r0: int
    cols: list[int]  # visible column indices
    rows: list[int]  # visible row numbers (1-based)
    xl: dict[int, int]  # column index -> x of its left line
    xr: dict[int, int]  # column index -> x of its right line
    yt: dict[int, int]  # row -> y of its top line
    yb: dict[int, int]  # row -> y of its bottom line
    header_top: int
    header_bottom: int
    rhw: int
    view_right: int
    view_bottom: int

    def full_col(self, c: int) -> bool:
        return c in self.xr and self.xr[c] <= self.view_right - 4

    def full_row(self, r: int) -> bool:
        return r in self.yb and self.yb[r] <= self.view_bottom - 4

    def full_cell(self, c: int, r: int) -> bool:
        return self.full_col(c) and self.full_row(r)


class _Sheet:
    """Renders one sheet image and its scene graph from a random stream."""

    def __init__(self, rng: random.Random, painter: TextPainter):
        self.rng = rng
        self.painter = painter
        self.style = STYLES[rng.choice(sorted(STYLES))]
        self.lang = rng.choices(corpus.LANGUAGES, weights=corpus.LANGUAGE_WEIGHTS)[0]
        from PIL import Image, ImageDraw

        self.image = Image.new("RGB", IMAGE_SIZE, self.style.bg)
        self.draw = ImageDraw.Draw(self.image)
        self.elements: list[Element] = []
        self.values: dict[tuple[int, int], Optional[str]] = {}  # (col, row) -> displayed text (None: none visible)
        self.fills: dict[tuple[int, int], str] = {}  # (col, row) -> colour name
        self.tab_strip: Optional[tuple[int, Any]] = None  # (y, image) of the sheet-tab bar, restored after the cells are drawn
        self.band: tuple[str, int, str] | None = None  # ("row" | "column", row or column index, colour)

    # ------------------------------------------------------------------ text helpers
    def text(self, x: int, baseline: int, s: str, color, bold: bool = False, size: int | None = None) -> list[int] | None:
        st = self.style
        font = st.bold_font if bold else st.font
        chars = self.painter.draw(self.image, x, baseline, s, font, size or st.size, color)
        return union_box(c.box for c in chars)

    def width(self, s: str, bold: bool = False, size: int | None = None) -> int:
        st = self.style
        return round(self.painter.length(st.bold_font if bold else st.font, size or st.size, s))

    def chrome_text(self, eid: str, x: int, baseline: int, s: str, color, size: int | None = None, bold=False) -> int:
        box = self.text(x, baseline, s, color, bold=bold, size=size)
        if box is not None:
            self.elements.append(Element(f"chrome:{eid}", "chrome", box, s))
        return x + self.width(s, bold=bold, size=size)

    def chrome_box(self, eid: str, box: list[int], fill, outline=None) -> None:
        self.draw.rectangle([box[0], box[1], box[2] - 1, box[3] - 1], fill=fill, outline=outline)
        self.elements.append(Element(f"chrome:{eid}", "chrome", box))

    # ------------------------------------------------------------------ chrome
    def draw_chrome(self) -> tuple[int, int]:
        """Draw the application chrome; returns (y where the column header starts, y where the
        grid must end)."""
        rng, st = self.rng, self.style
        W, H = IMAGE_SIZE
        if st.chrome == "none":
            return 0, H
        y = 0
        file_title = rng.choice(("Budget 2026", "Orders", "Staff list", "Inventory Q3", "Tickets", "Payroll"))
        # title bar
        th = rng.randint(24, 30)
        tb_fill = st.accent if st.chrome == "excel" else (243, 243, 243) if st.chrome != "google" else (255, 255, 255)
        tb_fg = (255, 255, 255) if st.chrome == "excel" else (40, 40, 40)
        self.draw.rectangle([0, 0, W - 1, th - 1], fill=tb_fill)
        app = {"excel": "Excel", "excel_white": "Excel", "libreoffice": "LibreOffice Calc", "google": "Google Sheets"}[st.chrome]
        ext = ".ods" if st.chrome == "libreoffice" else "" if st.chrome == "google" else ".xlsx"
        self.chrome_text("title", 12, th - 8, f"{file_title}{ext} - {app}", tb_fg, size=12)
        y = th
        # menu bar
        mh = rng.randint(22, 28)
        menus = {
            "excel": ("File", "Home", "Insert", "Draw", "Page Layout", "Formulas", "Data", "Review", "View"),
            "excel_white": ("File", "Home", "Insert", "Page Layout", "Formulas", "Data", "Review", "View", "Help"),
            "libreoffice": ("File", "Edit", "View", "Insert", "Format", "Styles", "Sheet", "Data", "Tools", "Window"),
            "google": ("File", "Edit", "View", "Insert", "Format", "Data", "Tools", "Extensions", "Help"),
        }[st.chrome]
        mfill = (248, 248, 248) if st.chrome != "excel" else (243, 243, 243)
        self.draw.rectangle([0, y, W - 1, y + mh - 1], fill=mfill)
        x = 10
        for i, m in enumerate(menus):
            x = self.chrome_text(f"menu{i}", x, y + mh - 8, m, (50, 50, 50), size=12) + rng.randint(14, 20)
        y += mh
        # toolbar with icon placeholders
        tbh = rng.randint(26, 40)
        self.draw.rectangle([0, y, W - 1, y + tbh - 1], fill=(250, 250, 250))
        x = 10
        for i in range(rng.randint(10, 22)):
            s = rng.randint(14, 18)
            top = y + (tbh - s) // 2
            shade = rng.randint(120, 200)
            self.chrome_box(f"icon{i}", [x, top, x + s, top + s], (shade, shade, min(255, shade + 30)))
            x += s + rng.randint(8, 16)
            if x > W - 40:
                break
        y += tbh
        self.draw.line([0, y, W - 1, y], fill=(210, 210, 210))
        y += 1
        # formula bar
        fh = rng.randint(22, 28)
        self.draw.rectangle([0, y, W - 1, y + fh - 1], fill=(255, 255, 255))
        self.chrome_box("namebox", [4, y + 2, 74, y + fh - 2], (255, 255, 255), outline=(200, 200, 200))
        self.chrome_text("fx", 86, y + fh - 7, "fx", (110, 110, 110), size=12)
        y += fh
        self.draw.line([0, y, W - 1, y], fill=(200, 200, 200))
        y += 1 + rng.randint(0, 6)
        # sheet tabs at the bottom
        tab_h = rng.randint(24, 30)
        bottom = H - tab_h
        self.draw.rectangle([0, bottom, W - 1, H - 1], fill=(240, 240, 240))
        self.draw.line([0, bottom, W - 1, bottom], fill=(190, 190, 190))
        x = 40
        for i in range(rng.randint(1, 4)):
            label = f"Sheet{i + 1}"
            w = self.width(label, size=12) + 24
            self.chrome_box(f"tab{i}", [x, bottom + 2, x + w, H - 3], (255, 255, 255) if i == 0 else (230, 230, 230),
                            outline=(190, 190, 190))
            self.text(x + 12, H - 3 - (tab_h - 4 - 12) // 2 - 2, label, (40, 40, 40), size=12)
            x += w + 4
        self.tab_strip = (bottom, self.image.crop((0, bottom, W, H)))
        return y, bottom

    # ------------------------------------------------------------------ grid
    def build(self) -> Grid:
        rng, st = self.rng, self.style
        W, H = IMAGE_SIZE
        header_top, view_bottom = self.draw_chrome()
        hh = rng.randint(*st.header_h)
        header_bottom = header_top + hh
        r0 = rng.randint(1, 40)
        c0 = rng.choice((0, 0, 0, 1, 2, 3, 4, 5, 6, 8))
        # row heights: mostly one value, a few taller rows
        base_h = rng.randint(*st.row_h)
        yt, yb, rows = {}, {}, []
        y = header_bottom
        r = r0
        while y < view_bottom - 1:
            h = base_h + (rng.randint(3, 10) if rng.random() < 0.08 else 0)
            rows.append(r)
            yt[r], yb[r] = y, y + h
            y += h
            r += 1
        max_digits = len(str(rows[-1]))
        rhw = 14 + 8 * max_digits + rng.randint(0, 10)
        # columns
        kinds = ["name", "email", "id", "int", "amount", "date", "product", "status", "city", "first", "empty"]
        xl, xr, cols = {}, {}, []
        x = rhw
        c = c0
        self.col_kinds: dict[int, str] = {}
        while x < W - 1:
            kind = rng.choice(kinds)
            lo, hi = COLUMN_KINDS[kind][0]
            w = rng.randint(lo, hi)
            cols.append(c)
            xl[c], xr[c] = x, x + w
            self.col_kinds[c] = kind
            x += w
            c += 1
        g = Grid(c0, r0, cols, rows, xl, xr, yt, yb, header_top, header_bottom, rhw, W - 1, view_bottom)
        self.grid = g
        return g

    def fill_values(self, g: Grid) -> None:
        rng = self.rng
        data_end = rng.randint(g.rows[0] + 5, g.rows[-1] + 20)
        density = rng.uniform(0.55, 0.95)
        for c in g.cols:
            kind = self.col_kinds[c]
            for r in g.rows:
                if r == 1 and kind != "empty":
                    self.values[(c, r)] = COLUMN_KINDS[kind][2]
                elif kind != "empty" and r <= data_end and rng.random() < density:
                    self.values[(c, r)] = _value(rng, kind, self.lang)
        # colour fills: distinct colours on distinct cells
        n_fill = rng.choice((0, 1, 1, 2, 3, 4))
        names = rng.sample(sorted(COLORS), n_fill)
        for name in names:
            c, r = rng.choice(g.cols), rng.choice(g.rows)  # may be a sliver at the edge: drawn clipped
            if (c, r) not in self.fills:
                self.fills[(c, r)] = name
        # sometimes a whole row or column filled in a colour no cell uses ("the orange column")
        if rng.random() < 0.3:
            name = rng.choice([n for n in sorted(COLORS) if n not in self.fills.values()])
            wide = [c for c in g.cols if min(g.xr[c], g.view_right) - g.xl[c] >= 8]
            tall = [r for r in g.rows if min(g.yb[r], g.view_bottom) - g.yt[r] >= 8]
            if rng.random() < 0.5:
                self.band = ("column", rng.choice(wide), name)
                self.fills = {k: v for k, v in self.fills.items() if k[0] != self.band[1]}
            else:
                self.band = ("row", rng.choice(tall), name)
                self.fills = {k: v for k, v in self.fills.items() if k[1] != self.band[1]}

    def render(self) -> None:
        """Draw the sheet into ``self.image`` and record its elements, in drawing order: colour fills,
        grid lines, column and row headers, cells (with their edges and corners), the tab strip on top,
        and the grid nodes on the header border."""
        self._render_fills()
        self._render_grid_lines()
        self._render_header_frame()
        self._render_column_headers()
        self._render_row_headers()
        for c in self.grid.cols:
            self._render_column_cells(c)
        if self.tab_strip is not None:  # text of the last, partly visible row must not run into the tabs
            self.image.paste(self.tab_strip[1], (0, self.tab_strip[0]))
        self._render_header_nodes()

    def _render_fills(self) -> None:
        """A colour band first (one ``color_band`` element), then single filled cells, clipped to the view."""
        g, d = self.grid, self.draw
        right, bottom = g.view_right, g.view_bottom
        if self.band is not None:
            kind, i, name = self.band
            if kind == "column":
                bbox = [g.xl[i], g.header_bottom, min(g.xr[i], right), bottom]
                label = col_name(i)
            else:
                bbox = [g.rhw, g.yt[i], right, min(g.yb[i], bottom)]
                label = str(i)
            d.rectangle([bbox[0] + 1, bbox[1] + 1, bbox[2] - 1, bbox[3] - 1], fill=COLORS[name])
            self.elements.append(Element(f"band:{kind}:{label}", "color_band", bbox, name))
        for (c, r), name in sorted(self.fills.items()):
            box = [g.xl[c] + 1, g.yt[r] + 1, min(g.xr[c], right) - 1, min(g.yb[r], bottom) - 1]
            if box[2] >= box[0] and box[3] >= box[1]:  # a sliver at the view's edge may have no interior
                d.rectangle(box, fill=COLORS[name])

    def _render_grid_lines(self) -> None:
        """The column and row separator lines inside the view."""
        g, st, d = self.grid, self.style, self.draw
        right, bottom = g.view_right, g.view_bottom
        for c in g.cols:
            x = g.xr[c]
            if x <= right:
                d.line([x, g.header_bottom, x, bottom - 1], fill=st.grid)
        for r in g.rows:
            y = g.yb[r]
            if y < bottom:
                d.line([g.rhw, y, right, y], fill=st.grid)

    def _render_header_frame(self) -> None:
        """The header backgrounds and border lines, and the ``header_corner`` element."""
        g, st, d = self.grid, self.style, self.draw
        right, bottom = g.view_right, g.view_bottom
        d.rectangle([0, g.header_top, IMAGE_SIZE[0] - 1, g.header_bottom - 1], fill=st.header_bg)
        d.rectangle([0, g.header_bottom, g.rhw - 1, bottom - 1], fill=st.header_bg)
        d.line([0, g.header_bottom, right, g.header_bottom], fill=st.header_line)
        d.line([g.rhw, g.header_top, g.rhw, bottom - 1], fill=st.header_line)
        self.elements.append(Element("header_corner", "header_corner", [0, g.header_top, g.rhw, g.header_bottom]))

    def _render_column_headers(self) -> None:
        """Column letters (``column_header`` elements, at least 4 px visible) and, for fully visible
        columns, their ``col_resize_handle`` (6 px around the right border)."""
        g, st, d = self.grid, self.style, self.draw
        right = g.view_right
        hb = g.header_bottom - (g.header_bottom - g.header_top - 9) // 2 - 1
        for c in g.cols:
            x0, x1 = g.xl[c], min(g.xr[c], right)
            if x1 - x0 < 4:
                continue
            name = col_name(c)
            if g.xr[c] <= right:
                d.line([g.xr[c], g.header_top, g.xr[c], g.header_bottom - 1], fill=st.header_line)
            self.elements.append(Element(f"column_header:{name}", "column_header", [x0, g.header_top, x1, g.header_bottom], name))
            tw = self.width(name)
            if x1 - x0 > tw + 4:
                self.text(x0 + (g.xr[c] - x0 - tw) // 2, hb, name, st.header_fg)
            if g.full_col(c):
                self.elements.append(Element(f"col_resize_handle:{name}", "col_resize_handle",
                                             [g.xr[c] - 3, g.header_top, g.xr[c] + 3, g.header_bottom]))

    def _render_row_headers(self) -> None:
        """Row numbers (``row_header`` elements, at least 4 px visible; the number drawn from 13 px)
        and, for fully visible rows, their ``row_resize_handle`` (6 px around the bottom border)."""
        g, st, d = self.grid, self.style, self.draw
        bottom = g.view_bottom
        for r in g.rows:
            y0, y1 = g.yt[r], min(g.yb[r], bottom)
            if y1 - y0 < 4:
                continue
            if g.yb[r] < bottom:
                d.line([0, g.yb[r], g.rhw - 1, g.yb[r]], fill=st.header_line)
            self.elements.append(Element(f"row_header:{r}", "row_header", [0, y0, g.rhw, y1], str(r)))
            s = str(r)
            tw = self.width(s)
            base = y0 + (g.yb[r] - y0 + 9) // 2 + 1
            if y1 - y0 >= 13:
                self.text((g.rhw - tw) // 2, base, s, st.header_fg)
            if g.full_row(r):
                self.elements.append(Element(f"row_resize_handle:{r}", "row_resize_handle",
                                             [0, g.yb[r] - 3, g.rhw, g.yb[r] + 3]))

    def _draw_cell_text(self, c: int, r: int, right_aligned: bool) -> Optional[str]:
        """Draw cell (c, r)'s value, cut to the cell width less 8 px (bold in row 1), left or right
        aligned with 4 px padding; returns the text shown (``None`` for an empty cell)."""
        g = self.grid
        v = self.values.get((c, r))
        if v is None:
            return None
        x0, y0 = g.xl[c], g.yt[r]
        bold = r == 1
        avail = g.xr[c] - x0 - 8
        while v and self.width(v, bold) > avail:
            v = v[:-1].rstrip()
        if not v:
            return None
        # partly visible cells show their text cut off at the view's edge, like a real sheet
        tw = self.width(v, bold)
        tx = x0 + 4 if not right_aligned else g.xr[c] - 4 - tw
        base = y0 + (g.yb[r] - y0 + 9) // 2 + 1
        self.text(tx, base, v, self.style.text, bold=bold)
        return v

    def _render_column_cells(self, c: int) -> None:
        """The cells of column ``c`` (at least 3 px visible each): their text, ``cell`` elements with the
        value shown, and for fully visible cells their edges and bottom-right corner (6 px wide)."""
        g = self.grid
        right, bottom = g.view_right, g.view_bottom
        cname = col_name(c)
        right_aligned = COLUMN_KINDS[self.col_kinds[c]][1]
        for r in g.rows:
            x0, y0 = g.xl[c], g.yt[r]
            x1, y1 = min(g.xr[c], right), min(g.yb[r], bottom)
            if x1 - x0 < 3 or y1 - y0 < 3:
                continue
            ref = f"{cname}{r}"
            shown = self._draw_cell_text(c, r, right_aligned)
            self.values[(c, r)] = shown  # what is displayed (possibly cut off at the view's edge)
            self.elements.append(Element(f"cell:{ref}", "cell", [x0, y0, x1, y1], shown))
            if g.full_cell(c, r):
                self.elements.append(Element(f"vedge:{ref}", "cell_edge", [g.xr[c] - 3, y0, g.xr[c] + 3, g.yb[r]]))
                self.elements.append(Element(f"hedge:{ref}", "cell_edge", [x0, g.yb[r] - 3, g.xr[c], g.yb[r] + 3]))
                self.elements.append(Element(f"corner:{ref}", "cell_corner",
                                             [g.xr[c] - 3, g.yb[r] - 3, g.xr[c] + 3, g.yb[r] + 3]))

    def _render_header_nodes(self) -> None:
        """Grid nodes on the header border: the corners of the row above and the column left of the
        first visible cell, when the view is scrolled past them (``cell_corner`` elements)."""
        g = self.grid
        c_prev, r_prev = g.c0 - 1, g.r0 - 1
        for c in g.cols:
            if r_prev >= 1 and g.full_col(c):
                x = g.xr[c]
                self.elements.append(Element(f"corner:{col_name(c)}{r_prev}", "cell_corner",
                                             [x - 3, g.header_bottom - 3, x + 3, g.header_bottom + 3]))
        for r in g.rows:
            if c_prev >= 0 and g.full_row(r):
                y = g.yb[r]
                self.elements.append(Element(f"corner:{col_name(c_prev)}{r}", "cell_corner",
                                             [g.rhw - 3, y - 3, g.rhw + 3, y + 3]))
        if c_prev >= 0 and r_prev >= 1:
            self.elements.append(Element(f"corner:{col_name(c_prev)}{r_prev}", "cell_corner",
                                         [g.rhw - 3, g.header_bottom - 3, g.rhw + 3, g.header_bottom + 3]))


def _ref_case(rng: random.Random, ref: str) -> str:
    return ref.lower() if rng.random() < 0.15 else ref


def _plural(k: int, word: str) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _ref(c: int, r: int) -> str:
    """A cell reference: column letters and row number (``_ref(2, 7) == "C7"``)."""
    return f"{col_name(c)}{r}"


# ------------------------------------------------------------------------------------ category writers


@dataclass
class _View:
    """What a category writer reads: the sample's random stream, the rendered sheet and its grid, the
    scene graph ids, and the fully visible cells ``(column index, row)``, columns and rows."""

    rng: random.Random
    sheet: _Sheet
    grid: Grid
    ids: set[str]
    full_cells: list[tuple[int, int]]
    full_cols: list[int]
    full_rows: list[int]

    def the(self, eid: str) -> list[str]:
        """``[eid]`` when the scene has that element, else ``[]`` (for :func:`require_unique`)."""
        return [eid] if eid in self.ids else []

    def ids_with_text(self, t: str) -> list[str]:
        """Every element showing text ``t`` (case-insensitive), chrome included."""
        return [e.id for e in self.sheet.elements if e.text is not None and e.text.casefold() == t.casefold()]

    def coloured(self, name: str) -> list[str]:
        """Every element showing fill colour ``name``: single cells and the band."""
        ids = [f"cell:{_ref(*k)}" for k, n in self.sheet.fills.items() if n == name]
        return ids + [e.id for e in self.sheet.elements if e.category == "color_band" and e.text == name]

    def anchor(self) -> tuple[int, int, str]:
        """A fully visible cell and its reference as written (lower case 15% of the time)."""
        c, r = self.rng.choice(self.full_cells)
        return c, r, _ref_case(self.rng, _ref(c, r))

    def filled_cell(self) -> tuple[int, int, str]:
        """A fully visible cell below the header row that shows a value, and the value."""
        cands = [(c, r) for (c, r) in self.full_cells if self.sheet.values.get((c, r)) and r != 1]
        if not cands:
            raise SuiteError("no filled cell")
        c, r = self.rng.choice(cands)
        value = self.sheet.values[(c, r)]
        if not value:  # cands hold cells that show a value
            raise SuiteError("no filled cell")
        return c, r, value


def _cell_ref(v: _View) -> Named:
    c, r, R = v.anchor()
    instr = v.rng.choice((f"Click cell {R}.", f"Select cell {R}.", f"Navigate to cell {R}.", f"Target cell {R}.",
                          f"Activate cell {R}.", f"Click the grid cell named {R}.", f"cell {R}"))
    return Named(instr, require_unique(v.the(f"cell:{_ref(c, r)}"), instr))


def _cell_content(v: _View) -> Named:
    _, _, val = v.filled_cell()
    qv = quote(v.rng, val)
    instr = v.rng.choice((f"Click the cell that shows {qv}.", f"Select the cell whose displayed text is {qv}.",
                          f"Find the cell containing {val} and click it.", f"Click the visible cell value {qv}.",
                          f"Tap the cell that reads {qv}."))
    return Named(instr, require_unique(v.ids_with_text(val), instr))


def _cell_ref_content(v: _View) -> Named:
    c, r, val = v.filled_cell()
    R = _ref_case(v.rng, _ref(c, r))
    qv = quote(v.rng, val)
    instr = v.rng.choice((f"Click {R}, which shows {qv}.", f"Target cell {R}; it displays {qv}.",
                          f"Choose the {qv} cell at {R}.", f"Find {R} with value {qv} and click it."))
    target = require_unique([i for i in v.ids_with_text(val) if i == f"cell:{_ref(c, r)}"], instr)
    # the value must still be unique, or the reference alone decides and the row is a plain cell_ref
    require_unique(v.ids_with_text(val), instr)
    return Named(instr, target)


def _ensure_fill(rng: random.Random, sh: _Sheet, g: Grid) -> None:
    """Before rendering a ``cell_color`` sample: give a sheet with no fill and no band one coloured cell."""
    if not sh.fills and sh.band is None:
        c = rng.choice([c for c in g.cols if g.full_col(c)] or g.cols)
        r = rng.choice([r for r in g.rows if g.full_row(r)] or g.rows)
        sh.fills[(c, r)] = rng.choice(sorted(COLORS))


def _cell_color(v: _View) -> Named:
    rng, sh, g = v.rng, v.sheet, v.grid
    fills = [(k, n) for k, n in sorted(sh.fills.items()) if g.full_cell(*k)]
    band_ok = sh.band is not None and (g.full_col(sh.band[1]) if sh.band[0] == "column" else g.full_row(sh.band[1]))
    if band_ok and (not fills or rng.random() < 0.4):
        assert sh.band is not None
        kind, _, name = sh.band
        instr = rng.choice((f"Click the {kind} filled {name}.", f"the {name} {kind}",
                            f"Select a cell on the {name} {kind}.", f"Click anywhere in the {name} {kind}."))
        return Named(instr, require_unique(v.coloured(name), instr))
    if not fills:
        raise SuiteError("no fully visible coloured cell")
    _, name = rng.choice(fills)
    instr = rng.choice((f"Click the cell highlighted in {name}.", f"Select the {name} cell.",
                        f"Click the cell filled with {name}.", f"the {name} cell",
                        f"Select the visible {name} cell."))
    return Named(instr, require_unique(v.coloured(name), instr))


def _col_header(v: _View) -> Named:
    c = v.rng.choice(v.full_cols)
    L = col_name(c)
    Lx = L.lower() if v.rng.random() < 0.15 else L
    instr = v.rng.choice((f"Click the header of column {Lx}.", f"Select column {Lx} by clicking its header.",
                          f"Click the column header labeled {Lx}.", f"Please click the header for column {Lx}.",
                          f"column header {Lx}"))
    return Named(instr, require_unique([e.id for e in v.sheet.elements
                                        if e.category == "column_header" and e.text == L], instr))


def _row_header(v: _View) -> Named:
    r = v.rng.choice(v.full_rows)
    instr = v.rng.choice((f"Click row header {r}.", f"Use the left header to select row {r}.",
                          f"Click the row selector marked {r}.", f"row header {r}",
                          f"Click {r} on the left edge of the grid."))
    return Named(instr, require_unique([e.id for e in v.sheet.elements
                                        if e.category == "row_header" and e.text == str(r)], instr))


def _relative(v: _View, *, sideways: bool) -> Named:
    """``cell_relative_row`` (``sideways=False``: rows up or down from an anchor cell) and
    ``cell_relative_offset`` (columns too; a quarter of them columns only)."""
    rng = v.rng
    c, r = rng.choice(v.full_cells)
    dr = rng.choice((-4, -3, -2, -1, 1, 2, 3, 4))
    dc = rng.choice((-3, -2, -1, 1, 2, 3)) if sideways else 0
    if sideways and rng.random() < 0.25:
        dr = 0
    tc, tr = c + dc, r + dr
    if (tc, tr) not in v.full_cells:
        raise SuiteError("relative target not fully visible")
    A = _ref_case(rng, _ref(c, r))
    vert = f"{_plural(abs(dr), 'row')} {'down' if dr > 0 else 'up'}"
    vert2 = f"{_plural(abs(dr), 'row')} {'below' if dr > 0 else 'above'}"
    if dc == 0:
        instr = rng.choice((f"Click the cell {vert2} {A}.", f"Select the cell {vert} from {A}.",
                            f"Anchor on {A}, then click the cell {vert}.", f"Target the cell {vert} from {A}."))
    else:
        horiz = f"{_plural(abs(dc), 'column')} {'right' if dc > 0 else 'left'}"
        if dr == 0:
            instr = rng.choice((f"Click the cell {horiz} of {A}.", f"Select the cell {horiz} from {A}."))
        else:
            instr = rng.choice((f"Point to the cell {horiz}, {vert} from {A}.",
                                f"{horiz} and {vert} from {A}",
                                f"Starting at {A}, move {horiz}, then {vert}, and click that cell."))
    require_unique(v.the(f"cell:{_ref(c, r)}"), instr)  # the anchor
    return Named(instr, require_unique(v.the(f"cell:{_ref(tc, tr)}"), instr))


def _col_resize_handle(v: _View) -> Named:
    L = col_name(v.rng.choice(v.full_cols))
    instr = v.rng.choice((f"Point to the draggable divider for column {L}.",
                          f"Place the cursor on the resize handle for column {L}.",
                          f"Click the separator just after column {L} in the header.",
                          f"Click the right border of column {L}'s header.",
                          f"Grab the handle that resizes column {L}."))
    return Named(instr, require_unique(v.the(f"col_resize_handle:{L}"), instr))


def _row_resize_handle(v: _View) -> Named:
    r = v.rng.choice(v.full_rows)
    instr = v.rng.choice((f"Click the thin horizontal separator below row {r} in the row header.",
                          f"row {r} height handle", f"Click where you would drag to make row {r} taller.",
                          f"Click the horizontal line at the bottom edge of row {r}'s header."))
    return Named(instr, require_unique(v.the(f"row_resize_handle:{r}"), instr))


def _cell_edge(v: _View, *, right: bool) -> Named:
    """``cell_right_edge`` (element ``vedge:``) / ``cell_bottom_edge`` (``hedge:``) of an anchor cell."""
    c, r, R = v.anchor()
    if right:
        wordings = (f"Click exactly on the right-hand border of {R}.", f"Point at the right gridline of {R}.",
                    f"the border between {R} and the cell to its right", f"Select the right side line of cell {R}.")
    else:
        wordings = (f"Click exactly on the bottom border of {R}.", f"Point to the lower grid boundary of {R}.",
                    f"the border between {R} and the cell below it", f"Click the cell boundary immediately below {R}.")
    instr = v.rng.choice(wordings)
    return Named(instr, require_unique(v.the(f"{'vedge' if right else 'hedge'}:{_ref(c, r)}"), instr))


_COMPASS = {("top", "left"): "northwest", ("top", "right"): "northeast",
            ("bottom", "left"): "southwest", ("bottom", "right"): "southeast"}


def _corner(v: _View, *, vert: str, horiz: str) -> Named:
    """``cell_{vert}_{horiz}_corner``: the grid node at that corner of an anchor cell (element
    ``corner:`` of the cell whose bottom-right it is)."""
    c, r = v.rng.choice(v.full_cells)
    nc = c if horiz == "right" else c - 1
    nr = r if vert == "bottom" else r - 1
    if nc < 0 or nr < 1:
        raise SuiteError("corner on the sheet's outer border")
    R = _ref_case(v.rng, _ref(c, r))
    compass = _COMPASS[(vert, horiz)]
    instr = v.rng.choice((f"Click the {vert}-{horiz} corner of cell {R}.", f"Point at the {vert}-{horiz} corner of {R}.",
                          f"Move to the {compass} corner of cell {R}.",
                          f"Click where the {vert} and {horiz} borders of {R} meet."))
    return Named(instr, require_unique(v.the(f"corner:{_ref(nc, nr)}"), instr))


WRITERS: dict[str, Callable[[_View], Named]] = {
    "cell_ref": _cell_ref,
    "cell_content": _cell_content,
    "cell_ref_content": _cell_ref_content,
    "cell_color": _cell_color,
    "col_header": _col_header,
    "row_header": _row_header,
    "cell_relative_row": partial(_relative, sideways=False),
    "cell_relative_offset": partial(_relative, sideways=True),
    "col_resize_handle": _col_resize_handle,
    "row_resize_handle": _row_resize_handle,
    "cell_right_edge": partial(_cell_edge, right=True),
    "cell_bottom_edge": partial(_cell_edge, right=False),
    "cell_top_left_corner": partial(_corner, vert="top", horiz="left"),
    "cell_top_right_corner": partial(_corner, vert="top", horiz="right"),
    "cell_bottom_left_corner": partial(_corner, vert="bottom", horiz="left"),
    "cell_bottom_right_corner": partial(_corner, vert="bottom", horiz="right"),
}
"""Category -> writer: draws a target of that category on a rendered sheet and names it (one entry
per :data:`CATEGORY_WEIGHTS` category)."""

PREPARE: dict[str, Callable[[random.Random, _Sheet, Grid], None]] = {"cell_color": _ensure_fill}
"""Category -> what must be on the sheet before it is rendered (drawn from the same stream)."""


def make_sample(rng: random.Random, index: int, painter: TextPainter | None = None,
                category: str | None = None) -> SampleSpec:
    """Build one sheets sample from ``rng``: layout, render, choose a target of ``category`` (drawn
    with :data:`CATEGORY_WEIGHTS` when ``None``) with its writer in :data:`WRITERS`, which words the
    instruction and checks that it names exactly one element.

    Raises:
        SuiteError: no target of the category can be named uniquely in this layout (the caller draws
            another layout).
    """
    painter = painter or TextPainter()
    category, data_type = choose_category(rng, CATEGORY_WEIGHTS, category)
    sh = _Sheet(rng, painter)
    g = sh.build()
    sh.fill_values(g)
    if category in PREPARE:
        PREPARE[category](rng, sh, g)
    sh.render()
    full_cells = [(c, r) for c in g.cols for r in g.rows if g.full_cell(c, r)]
    if not full_cells:
        raise SuiteError("no fully visible cell")
    view = _View(rng, sh, g, {e.id for e in sh.elements}, full_cells,
                 [c for c in g.cols if g.full_col(c)], [r for r in g.rows if g.full_row(r)])
    named = WRITERS[category](view)
    fields: dict[str, Any] = {
        "data_type": data_type,
        "category": category,
        "ui_style": sh.style.name,
        "language": sh.lang,
        "first_row": g.r0,
        "first_col": col_name(g.c0),
    }
    return SampleSpec(Scene(sh.image, sh.elements), named.target_id, named.instruction, named.answer_type, fields)


SUITE = DrawnSuite(name="sheets", module="pointfail.suites.sheets", id_prefix="pfs", version=1, fonts=FONTS_USED,
                   categories=CATEGORY_WEIGHTS, make_sample=make_sample)
"""The sheets suite: ``pointfail generate sheets`` and :func:`generate`."""

generate = SUITE.generate
add_arguments = SUITE.add_arguments
run = SUITE.run
