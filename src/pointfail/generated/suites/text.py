"""The ``text`` suite: document surfaces with word, character, punctuation, caret and box targets.

Modelled on PointerBench-Text (the PointerBench paper, appendix "PointerBench-Text", and its 500 real
rows): text rendered on controlled document surfaces
with exact glyph geometry, point targets (words, characters, punctuation, caret positions) and box
targets (word, line, character and paragraph regions, ``answer_type: "bbox"`` with
``eval: {"type": "iou", "min_coverage": 0.9, "min_precision": 0.7}``), half English and a tenth
each German, French, Spanish, Italian and Dutch (the paper's mix), instructions in English as in the
real rows. Invoice fields and chrome-text targets of the real suite are not generated.

Naming: a word is named by its text when it occurs once on the page (chrome and headings included);
a repeated word is named by a qualifier the real rows also use: its ink colour when only it has that
colour ("the «review» in red") or its occurrence in reading order ("the first «the»", "the last
«the»"). Every instruction is resolved again against the page, independently of how the target was
chosen, and kept only when it matches exactly one element.

Geometry (absolute pixels, :mod:`pointfail.generated.suites.scene`): each glyph is drawn by
:class:`~pointfail.generated.suites.painter.TextPainter` at an integer pen position from the font's advances
(``FreeTypeFont.getlength``) and its box is the exact ink of the glyph mask. A line's caret band runs
from the font's ascender to its descender (``getbbox("Ág")``); a caret between characters ``i-1``
and ``i`` sits at pen ``x_i``, and its box is ``[x_i - a, top, x_i + b, bottom]`` with ``a, b <= 3``
limited to half the neighbouring advances so neighbouring carets never overlap (at a line start the
left half-width is 7, at a line end the right one, like the real suite's 15-pixel line-edge boxes).
A space between two words is the box from the ink end of the left word to the ink start of the right.

Scene graph element ids (``k``: line number on the page, ``i``: character index in the line,
``w``: word index in the line): ``line:k`` (category ``line``), ``para:p`` (``paragraph``),
``word:k.w`` (``word``, text without attached punctuation), ``char:k.i`` (``char`` or
``punctuation``), ``caret:k.i`` (``caret``, before character ``i``; ``i = len`` is the line end),
``space:k.i`` (``space``), ``heading`` and ``chrome:*`` (surface chrome, not targeted).

Row fields beyond the layout's: ``data_type`` (``word``, ``char``, ``punctuation``, ``caret``,
``bbox``), ``category`` (PointerBench's names, e.g. ``word_center``, ``caret_between_chars``,
``line_bbox``), ``surface``, ``language``, ``difficulty`` (ours: ``easy`` for whole words, lines and
paragraphs, ``medium`` for word-edge and line-edge carets and word boxes, ``hard`` for single
characters, punctuation, carets inside words and gaps between words).

Each category has a writer in :data:`WRITERS` (a dispatch table of small functions over one laid-out
page); :func:`make_sample` lays out the page and calls the writer of its category.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Optional, TypeVar

from pointfail.generated.suites import corpus
from pointfail.generated.suites.drawn import DrawnSuite
from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.fonts import load_font
from pointfail.generated.suites.painter import DrawnChar, TextPainter
from pointfail.generated.suites.rows import Named, SampleSpec, choose_category, quote
from pointfail.generated.suites.scene import IMAGE_SIZE, Element, Scene, require_unique, union_box

__all__ = [
    "CATEGORY_WEIGHTS",
    "DIFFICULTY",
    "INK_COLORS",
    "PUNCT_NAMES",
    "SUITE",
    "SURFACES",
    "WRITERS",
    "add_arguments",
    "generate",
    "make_sample",
    "run",
    "split_token",
]

T = TypeVar("T")

CATEGORY_WEIGHTS: dict[str, tuple[str, int]] = {
    # category: (data_type, weight). Weights are the real PointerBench-Text counts per category
    # (invoice and chrome-text rows left out); box categories doubled so box rows are about a
    # quarter of the suite, as in the real 366 point / 134 box split.
    "word_center": ("word", 112),
    "caret_after_word": ("caret", 45),
    "caret_between_chars": ("caret", 36),
    "word_bbox": ("bbox", 62),
    "char_center": ("char", 27),
    "punctuation": ("punctuation", 23),
    "between_words": ("caret", 22),
    "caret_before_word": ("caret", 21),
    "line_end": ("caret", 17),
    "sentence_boundary": ("caret", 15),
    "line_bbox": ("bbox", 26),
    "paragraph_start": ("caret", 11),
    "line_start": ("caret", 10),
    "char_bbox": ("bbox", 20),
    "paragraph_bbox": ("bbox", 20),
    "paragraph_end": ("caret", 9),
}
DIFFICULTY = {
    "word_center": "easy", "line_bbox": "easy", "paragraph_bbox": "easy",
    "word_bbox": "medium", "caret_after_word": "medium", "caret_before_word": "medium", "line_start": "medium",
    "line_end": "medium", "paragraph_start": "medium", "paragraph_end": "medium", "sentence_boundary": "medium",
    "char_center": "hard", "char_bbox": "hard", "punctuation": "hard", "caret_between_chars": "hard",
    "between_words": "hard",
}
PUNCT_NAMES = {",": "comma", ".": "period", ":": "colon", ";": "semicolon", "!": "exclamation mark",
               "?": "question mark"}
INK_COLORS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]] = {
    # name: (ink on light surfaces, ink on dark surfaces)
    "red": ((200, 30, 30), (255, 110, 110)),
    "blue": ((30, 80, 210), (120, 170, 255)),
    "green": ((20, 140, 60), (110, 220, 140)),
    "orange": ((215, 110, 0), (255, 170, 80)),
    "purple": ((130, 50, 170), (205, 145, 255)),
}
"""Ink colours for highlighted words, used as qualifiers ("the 'review' in red") when a word occurs
more than once; the real rows use such qualifiers ("the «Barrierefreiheit» in teal")."""
FONTS_USED = ("dejavu-sans", "dejavu-sans-bold", "dejavu-serif", "dejavu-sans-mono", "liberation-sans",
              "liberation-sans-bold", "liberation-serif", "liberation-mono")


@dataclass(frozen=True)
class Surface:
    """A document surface: where the body text goes and how it looks."""

    name: str
    fonts: tuple[str, ...]
    sizes: tuple[int, int]
    bg: tuple[int, int, int]
    fg: tuple[int, int, int]
    chrome: str


SURFACES: dict[str, Surface] = {
    "plain_text": Surface("plain_text", ("dejavu-sans-mono", "liberation-mono"), (14, 17), (255, 255, 255),
                          (20, 20, 20), "editor"),
    "word_processor": Surface("word_processor", ("liberation-serif", "dejavu-serif", "liberation-sans"), (15, 19),
                              (255, 255, 255), (0, 0, 0), "page"),
    "email_view": Surface("email_view", ("liberation-sans", "dejavu-sans"), (14, 17), (255, 255, 255),
                          (34, 34, 34), "email"),
    "book_page": Surface("book_page", ("dejavu-serif", "liberation-serif"), (16, 20), (248, 241, 227),
                         (50, 40, 30), "book"),
    "dark_notes": Surface("dark_notes", ("dejavu-sans", "liberation-sans"), (14, 18), (32, 33, 36),
                          (225, 225, 225), "dark"),
}


def split_token(tok: str) -> tuple[str, str, str]:
    """Split a whitespace-delimited token into (leading punctuation, word core, trailing punctuation),
    where punctuation is any character that is not a letter or digit (Unicode categories L* and N*).
    ``"¿Puedes"`` -> ``("¿", "Puedes", "")``; ``"Friday,"`` -> ``("", "Friday", ",")``;
    ``"l'imprimante"`` -> ``("", "l'imprimante", "")``."""

    def alnum(ch: str) -> bool:
        return unicodedata.category(ch)[0] in "LN"

    i, j = 0, len(tok)
    while i < j and not alnum(tok[i]):
        i += 1
    while j > i and not alnum(tok[j - 1]):
        j -= 1
    return tok[:i], tok[i:j], tok[j:]


@dataclass
class Word:
    line: int
    index: int  # word index within the line
    start: int  # char index of the core in the line string
    core: str
    lead: str
    trail: str
    box: list[int]
    style: str | None = None  # ink colour name when the word is coloured

    @property
    def end(self) -> int:
        return self.start + len(self.core)


@dataclass
class Line:
    index: int
    para: int
    text: str
    pens: list[int]
    chars: list[DrawnChar]
    words: list[Word]
    top: int
    bottom: int
    box: list[int]


@dataclass
class Page:
    lines: list[Line] = field(default_factory=list)
    paras: dict[int, list[int]] = field(default_factory=dict)  # para -> line indices
    other_tokens: list[str] = field(default_factory=list)  # words in chrome/heading (for uniqueness)
    elements: list[Element] = field(default_factory=list)


class _Doc:
    """Renders one document page and records its geometry."""

    def __init__(self, rng: random.Random, painter: TextPainter, language: str | None = None):
        from PIL import Image, ImageDraw

        self.rng, self.painter = rng, painter
        self.surface = SURFACES[rng.choice(sorted(SURFACES))]
        drawn = rng.choices(corpus.LANGUAGES, weights=corpus.LANGUAGE_WEIGHTS)[0]  # drawn either way: same stream
        self.lang = language or drawn
        self.font = rng.choice(self.surface.fonts)
        self.size = rng.randint(*self.surface.sizes)
        self.image = Image.new("RGB", IMAGE_SIZE, self.surface.bg)
        self.draw = ImageDraw.Draw(self.image)
        self.page = Page()

    def label(self, eid: str, x: int, baseline: int, s: str, color, font: str, size: int, category="chrome") -> int:
        chars = self.painter.draw(self.image, x, baseline, s, font, size, color)
        box = union_box(c.box for c in chars)
        if box is not None:
            self.page.elements.append(Element(eid, category, box, s))
            self.page.other_tokens.extend(split_token(t)[1] for t in s.split())
        return x + round(self.painter.length(font, size, s))

    def chrome(self) -> tuple[int, int, int, int]:
        """Draw the surface's chrome; returns the body text area (x0, y0, x1, y1)."""
        rng, sf, d = self.rng, self.surface, self.draw
        W, H = IMAGE_SIZE
        title = rng.choice(corpus.TITLES[self.lang])
        ui = "dejavu-sans"
        if sf.chrome == "editor":
            d.rectangle([0, 0, W - 1, 27], fill=(236, 236, 236))
            self.label("chrome:title", 10, 19, f"{title.lower().replace(' ', '_')}.txt - Text Editor", (40, 40, 40), ui, 12)
            d.rectangle([0, 28, W - 1, 51], fill=(246, 246, 246))
            x = 10
            for i, m in enumerate(("File", "Edit", "Search", "View", "Help")):
                x = self.label(f"chrome:menu{i}", x, 45, m, (50, 50, 50), ui, 12) + 16
            gutter = rng.randint(36, 48)
            d.rectangle([0, 52, gutter, H - 1], fill=(242, 242, 242))
            return gutter + 12, 64 + rng.randint(0, 20), W - 24, H - 16
        if sf.chrome == "page":
            d.rectangle([0, 0, W - 1, H - 1], fill=(225, 227, 230))
            d.rectangle([0, 0, W - 1, 33], fill=(43, 87, 154))
            self.label("chrome:title", 12, 22, f"{title}.docx - Word", (255, 255, 255), ui, 12)
            d.rectangle([0, 34, W - 1, 69], fill=(245, 246, 247))
            x = 12
            for i in range(rng.randint(8, 16)):
                d.rectangle([x, 43, x + 17, 60], fill=(150, 155, 170))
                self.page.elements.append(Element(f"chrome:icon{i}", "chrome", [x, 43, x + 18, 61]))
                x += 18 + rng.randint(8, 14)
            px0 = rng.randint(60, 140)
            px1 = W - rng.randint(60, 140)
            d.rectangle([px0, 84, px1, H - 1], fill=(255, 255, 255), outline=(205, 205, 205))
            return px0 + rng.randint(36, 60), 110 + rng.randint(0, 20), px1 - rng.randint(36, 60), H - 20
        if sf.chrome == "email":
            d.rectangle([0, 0, 219, H - 1], fill=(242, 245, 250))
            for i, m in enumerate(("Inbox", "Starred", "Sent", "Drafts", "Archive")):
                self.label(f"chrome:folder{i}", 24, 70 + 30 * i, m, (60, 64, 67), ui, 13)
            self.label("chrome:subject", 250, 48, title, (20, 20, 20), "dejavu-sans-bold", 18)
            sender = f"{rng.choice(corpus.FIRST_NAMES)} {rng.choice(corpus.LAST_NAMES)}"
            self.label("chrome:from", 250, 78, f"From: {sender}", (95, 99, 104), ui, 12)
            self.label("chrome:date", 250, 98, f"Date: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                       (95, 99, 104), ui, 12)
            d.line([240, 112, W - 20, 112], fill=(225, 225, 225))
            return 250, 130 + rng.randint(0, 16), W - 30, H - 16
        if sf.chrome == "book":
            tw = round(self.painter.length("dejavu-serif", 22, title))
            self.label("heading", (W - tw) // 2, 56, title, (80, 60, 40), "dejavu-serif", 22, category="heading")
            self.label("chrome:pageno", W // 2 - 8, H - 14, str(rng.randint(2, 300)), (120, 100, 80), "dejavu-serif", 12)
            margin = rng.randint(90, 170)
            return margin, 84 + rng.randint(0, 16), W - margin, H - 34
        # dark notes app
        d.rectangle([0, 0, W - 1, 35], fill=(45, 46, 50))
        self.label("chrome:title", 14, 23, f"Notes — {title}", (200, 200, 200), ui, 13)
        side = rng.randint(0, 1) * rng.randint(160, 220)
        if side:
            d.rectangle([0, 36, side, H - 1], fill=(40, 41, 45))
            for i in range(4):
                self.label(f"chrome:note{i}", 14, 64 + 26 * i, f"{rng.choice(corpus.TITLES[self.lang])} {i + 1}",
                           (170, 170, 170), ui, 12)
        return side + 28, 56 + rng.randint(0, 20), W - 28, H - 16

    def paragraphs(self) -> list[str]:
        rng = self.rng
        pool = list(corpus.SENTENCES[self.lang])
        rng.shuffle(pool)
        paras, k = [], 0
        while k < len(pool):
            n = rng.randint(1, 3)
            paras.append(" ".join(pool[k:k + n]))
            k += n
        return paras

    def _wrap(self, para: str, width: float, indent: float) -> list[str]:
        """``para`` broken into lines of at most ``width`` pixels (the first line ``indent`` less), by the
        painter's advance widths; a word wider than a line stands alone."""
        lines: list[str] = []
        cur, cur_w = "", 0.0
        for tok in para.split():
            suffix = tok if not cur else f" {tok}"
            cand_w = self.painter.extend_length(self.font, self.size, cur_w, cur, suffix)
            avail = width - (indent if not lines else 0)
            if cand_w <= avail or not cur:
                cur, cur_w = cur + suffix, cand_w
            else:
                lines.append(cur)
                cur = tok
                cur_w = self.painter.length(self.font, self.size, tok)
        if cur:
            lines.append(cur)
        return lines

    def _ink_styles(self, text: str, color_rate: float) -> tuple[dict[int, str], dict[int, tuple[int, int, int]]]:
        """Words of line ``text`` printed in a colour (each word with a core, with probability
        ``color_rate``): word index -> colour name, and character index -> ink RGB (the surface's
        dark-mode shade on ``dark_notes``)."""
        rng, sf = self.rng, self.surface
        styles: dict[int, str] = {}  # word index -> ink colour name
        char_colors: dict[int, tuple[int, int, int]] = {}
        pos = 0
        for w, tok in enumerate(text.split(" ")):
            lead, core, _ = split_token(tok)
            if core and rng.random() < color_rate:
                name = rng.choice(sorted(INK_COLORS))
                styles[w] = name
                ink = INK_COLORS[name][1 if sf.name == "dark_notes" else 0]
                for j in range(pos + len(lead), pos + len(lead) + len(core)):
                    char_colors[j] = ink
            pos += len(tok) + 1
        return styles, char_colors

    @staticmethod
    def _line_words(k: int, text: str, chars: list[DrawnChar], styles: dict[int, str]) -> list[Word]:
        """The words of line ``k`` (``text`` drawn as ``chars``): core text without leading and
        trailing punctuation, boxed by the ink of the core's characters; words with no ink are left out."""
        words, pos = [], 0
        for w, tok in enumerate(text.split(" ")):
            lead, core, trail = split_token(tok)
            start = pos + len(lead)
            box = union_box(c.box for c in chars[start:start + len(core)])
            if core and box is not None:
                words.append(Word(k, w, start, core, lead, trail, box, styles.get(w)))
            pos += len(tok) + 1
        return words

    def layout(self) -> Page:
        """Lay the paragraphs out on the surface, whole paragraphs only, drawing each line and
        recording its characters, words, pens and boxes in ``self.page``; then its elements.

        Raises:
            SuiteError: a line without ink, or no paragraph fits the surface.
        """
        rng, sf = self.rng, self.surface
        x0, y0, x1, y1 = self.chrome()
        font = load_font(self.font, self.size)
        _, asc_t, _, asc_b = font.getbbox("Ág", anchor="ls")
        line_h = round(self.size * rng.uniform(1.3, 1.7))
        para_gap = rng.choice((0, line_h // 2, line_h))
        indent = 2 * self.size if para_gap == 0 else 0  # paragraphs stay visible: a gap or an indent
        color_rate = rng.choice((0.0, 0.03, 0.06))  # share of words printed in a colour
        width = x1 - x0
        y = y0 - asc_t  # first baseline
        page = self.page
        for p, para in enumerate(self.paragraphs()):
            lines = self._wrap(para, width, indent)
            if y + (len(lines) - 1) * line_h + asc_b > y1:
                break  # only whole paragraphs, so paragraph starts and ends are real
            page.paras[p] = []
            for li, text in enumerate(lines):
                k = len(page.lines)
                lx = x0 + (indent if li == 0 else 0)
                styles, char_colors = self._ink_styles(text, color_rate)
                chars = self.painter.draw(self.image, lx, y, text, self.font, self.size, sf.fg, char_colors)
                pens = self.painter.pens(self.font, self.size, lx, text)
                words = self._line_words(k, text, chars, styles)
                lbox = union_box(c.box for c in chars)
                if lbox is None:
                    raise SuiteError(f"line {k} has no ink: {text!r}")
                page.lines.append(Line(k, p, text, pens, chars, words, y + asc_t, y + asc_b, lbox))
                page.paras[p].append(k)
                y += line_h
            y += para_gap
        if not page.lines:
            raise SuiteError("no paragraph fits the surface")
        self.elements()
        return page

    @staticmethod
    def _caret_elements(ln: Line, els: list[Element]) -> None:
        """A caret element at each pen position of line ``ln`` (before each character and after the
        last), reaching halfway to the neighbouring pens (1-3 px; 7 px at the line's ends)."""
        k = ln.index
        n = len(ln.text)
        for i in range(n + 1):
            x = ln.pens[i]
            a = 7 if i == 0 else max(1, min(3, (x - ln.pens[i - 1]) // 2))
            b = 7 if i == n else max(1, min(3, (ln.pens[i + 1] - x) // 2))
            els.append(Element(f"caret:{k}.{i}", "caret", [x - a, ln.top, x + b, ln.bottom]))

    @staticmethod
    def _space_elements(ln: Line, els: list[Element]) -> None:
        """A space element for each inner space of line ``ln`` between inked neighbours: from the ink of
        the character before to that of the one after (the pens when those are under 2 px apart)."""
        k = ln.index
        n = len(ln.text)
        for i, ch in enumerate(ln.text):
            if ch != " " or not 0 < i < n - 1:
                continue
            before, after = ln.chars[i - 1].box, ln.chars[i + 1].box
            if before and after:
                l, r = before[2], after[0]
                if r - l < 2:
                    l, r = ln.pens[i], ln.pens[i + 1]
                els.append(Element(f"space:{k}.{i}", "space", [l, ln.top, r, ln.bottom]))

    def elements(self) -> None:
        """The page's elements, per line: the line, its words, characters (``char`` for letters and
        digits, else ``punctuation``), carets and spaces; then the paragraphs.

        Raises:
            SuiteError: a paragraph without a line.
        """
        page = self.page
        els = page.elements
        for ln in page.lines:
            k = ln.index
            els.append(Element(f"line:{k}", "line", ln.box, ln.text))
            for w in ln.words:
                els.append(Element(f"word:{k}.{w.index}", "word", w.box, w.core, w.style))
            for i, c in enumerate(ln.chars):
                if c.box is None:
                    continue
                cat = "char" if unicodedata.category(c.ch)[0] in "LN" else "punctuation"
                els.append(Element(f"char:{k}.{i}", cat, c.box, c.ch))
            self._caret_elements(ln, els)
            self._space_elements(ln, els)
        for p, ks in page.paras.items():
            pbox = union_box(page.lines[k].box for k in ks)
            if pbox is None:
                raise SuiteError(f"paragraph {p} has no line")
            els.append(Element(f"para:{p}", "paragraph", pbox))


def _fold(s: str) -> str:
    return unicodedata.normalize("NFC", s).casefold()


Qualifier = Optional[tuple[str, ...]]
"""How a reference singles out a repeated word: ``None`` (its text is unique), ``("style", colour)``,
``("first",)`` or ``("last",)`` (reading order)."""


class _View:
    """What a category writer reads: the sample's random stream and category, the laid-out page, its
    words in reading order and how often each word's text occurs on the page (chrome and headings
    included, case-folded)."""

    def __init__(self, rng: random.Random, category: str, page: Page):
        self.rng, self.category, self.page = rng, category, page
        self.words = [w for ln in page.lines for w in ln.words]
        self.counts: dict[str, int] = {}
        for t in [w.core for w in self.words] + page.other_tokens:
            self.counts[_fold(t)] = self.counts.get(_fold(t), 0) + 1

    def chrome_ids(self, core: str) -> list[str]:
        """Chrome and heading elements showing the word ``core``."""
        return [e.id for e in self.page.elements if e.category in ("chrome", "heading") and e.text
                and any(_fold(split_token(t)[1]) == _fold(core) for t in e.text.split())]

    def word_ids(self, core: str, qual: Qualifier = None) -> list[str]:
        """Every element a reference to word ``core`` with qualifier ``qual`` can mean: the words
        with that text (case-insensitive) in reading order, filtered by the qualifier, plus chrome and
        headings showing the word (which a reader could also take it for). Independent of how the
        target was chosen."""
        same = [w for w in self.words if _fold(w.core) == _fold(core)]
        if qual is not None and qual[0] == "style":
            same = [w for w in same if w.style == qual[1]]
        elif qual is not None:
            same = same[:1] if qual[0] == "first" else same[-1:]
        return [f"word:{w.line}.{w.index}" for w in same] + self.chrome_ids(core)

    def nameable(self, min_len: int) -> list[tuple[Word, Qualifier]]:
        """Words that a reference can single out: unique text (no qualifier), else a unique colour
        ("the «x» in red"), else first/last occurrence in reading order; none when chrome shows it."""
        out: list[tuple[Word, Qualifier]] = []
        for w in self.words:
            n = self.counts[_fold(w.core)]
            if len(w.core) < min_len or n == 0:
                continue
            if n == 1:
                out.append((w, None))
                continue
            same = [v for v in self.words if _fold(v.core) == _fold(w.core)]
            if len(same) < n:
                continue  # also in chrome or a heading
            if w.style and sum(1 for v in same if v.style == w.style) == 1:
                out.append((w, ("style", w.style)))
            elif w is same[0]:
                out.append((w, ("first",)))
            elif w is same[-1]:
                out.append((w, ("last",)))
        return out

    def pick(self, seq: list[T]) -> T:
        """One of ``seq`` (``rng.choice``). Raises SuiteError when there is none."""
        if not seq:
            raise SuiteError(f"no candidate for {self.category}")
        return self.rng.choice(seq)

    def phrases(self, w: Word, qual: Qualifier) -> tuple[str, str]:
        """(``the word «x»`` or a qualified phrase, the bare quoted word or the same phrase); one
        :func:`quote` draw."""
        Q = quote(self.rng, w.core)
        if qual is None:
            return f"the word {Q}", Q
        p = f"the {Q} in {qual[1]}" if qual[0] == "style" else f"the {qual[0]} {Q}"
        return p, p

    def word(self, min_len: int) -> tuple[Word, Qualifier, str, str]:
        """A nameable word of at least ``min_len`` characters, its qualifier and its two phrasings
        (:meth:`phrases`)."""
        w, qual = self.pick(self.nameable(min_len))
        return (w, qual, *self.phrases(w, qual))

    def lines_starting(self, prefix: str) -> list[str]:
        """Line elements whose text starts with the words ``prefix``."""
        return [f"line:{ln.index}" for ln in self.page.lines if ln.text.startswith(prefix + " ") or ln.text == prefix]


def _line_prefix(ln: Line) -> str:
    """The first three words of a line (all of them when it has fewer)."""
    n = 3 if len(ln.text.split(" ")) >= 3 else len(ln.text.split(" "))
    return " ".join(ln.text.split(" ")[:n])


def _word_center(v: _View) -> Named:
    w, qual, W, B = v.word(3)
    instr = v.rng.choice((f"Click {W}.", f"Point to {B}.", f"Identify the position of {B}.",
                          f"Document location: {W}", f"Where is {W}?"))
    return Named(instr, require_unique(v.word_ids(w.core, qual), instr))


def _word_bbox(v: _View) -> Named:
    w, qual, W, B = v.word(3)
    instr = v.rng.choice((f"Return the bounding box of {W}.", f"word box: {B}",
                          f"Draw a tight box around {B}.", f"Give the bounding box of {B}: top-left then bottom-right."))
    return Named(instr, require_unique(v.word_ids(w.core, qual), instr), "bbox")


def _caret_between_chars(v: _View) -> Named:
    w, qual, W, B = v.word(4)
    core = w.core
    pairs = [j for j in range(1, len(core))
             if sum(1 for m in range(1, len(core)) if core[m - 1:m + 1] == core[j - 1:j + 1]) == 1]
    j = v.pick(pairs)
    a, b = quote(v.rng, core[j - 1]), quote(v.rng, core[j])
    instr = v.rng.choice((f"Place the caret between {a} and {b} in {B}.",
                          f"Click between the {a} and the {b} in {W}.",
                          f"The inter-character gap between {a} and {b} in {B}."))
    require_unique(v.word_ids(core, qual), instr)
    return Named(instr, f"caret:{w.line}.{w.start + j}")


def _char(v: _View, *, box: bool) -> Named:
    """``char_center`` and ``char_bbox``: a character that occurs once in a nameable word."""
    w, qual, W, B = v.word(4)
    j = v.pick([j for j, ch in enumerate(w.core) if w.core.count(ch) == 1 and ch.isalnum()])
    C = quote(v.rng, w.core[j])
    if box:
        instr = v.rng.choice((f"What rectangle covers the {C} in {B}?", f"Give the bounding box of the {C} in {W}.",
                              f"Isolate the {C} in {B} with a bbox."))
    else:
        instr = v.rng.choice((f"Click the {C} in {B}.", f"Select the {C} glyph in {W}.",
                              f"Place the cursor over {C} in {B}.", f"just the {C} in {B}"))
    require_unique(v.word_ids(w.core, qual), instr)
    return Named(instr, f"char:{w.line}.{w.start + j}", "bbox" if box else "point")


def _punctuated_word(v: _View, ends: str) -> tuple[Word, Qualifier, str, str, str]:
    """A nameable word followed by one of the marks ``ends``, its phrasings and the mark."""
    w, qual = v.pick([(w, q) for w, q in v.nameable(2) if w.trail[:1] and w.trail[:1] in ends])
    W, B = v.phrases(w, qual)
    return w, qual, W, B, w.trail[0]


def _punctuation(v: _View) -> Named:
    w, qual, W, B, p = _punctuated_word(v, "".join(PUNCT_NAMES))
    name = PUNCT_NAMES[p]
    instr = v.rng.choice((f"Click the {name} after {B}.", f"target glyph: {name} after {B}.",
                          f"What is the position of the {name} right after {B}?"))
    require_unique(v.word_ids(w.core, qual), instr)
    return Named(instr, f"char:{w.line}.{w.end}")


def _sentence_boundary(v: _View) -> Named:
    w, qual, W, B, p = _punctuated_word(v, ".!?")
    instr = v.rng.choice((f"Click right after the sentence ending in {B}, after the {PUNCT_NAMES[p]}.",
                          f"Place the cursor at the end of the sentence ending with {B}, right after the {PUNCT_NAMES[p]}.",
                          f"I want to start a new sentence right after the sentence ending in {B}. Where do I click?"))
    require_unique(v.word_ids(w.core, qual), instr)
    return Named(instr, f"caret:{w.line}.{w.end + 1}")


def _caret_by_word(v: _View, *, after: bool) -> Named:
    """``caret_after_word`` / ``caret_before_word``: the caret at the end / start of a word."""
    w, qual, W, B = v.word(2)
    if after:
        wordings = (f"Place the cursor right after {B}.", f"Immediately following {B}.",
                    f"Put the caret just past the last letter of {W}.")
    else:
        wordings = (f"Place the cursor right before {B}.", f"Move the caret ahead of {B}.",
                    f"Insert point directly before the first letter of {W}.")
    instr = v.rng.choice(wordings)
    require_unique(v.word_ids(w.core, qual), instr)
    return Named(instr, f"caret:{w.line}.{w.end if after else w.start}")


def _between_words(v: _View) -> Named:
    space_ids = {e.id for e in v.page.elements if e.category == "space"}
    pairs = [(a, b) for ln in v.page.lines for a, b in zip(ln.words, ln.words[1:])
             if b.index == a.index + 1 and not a.trail and not b.lead and v.counts[_fold(a.core)] == 1
             and f"space:{ln.index}.{a.end}" in space_ids]
    a, b = v.pick(pairs)
    rng = v.rng
    instr = rng.choice((f"Click the gap between {quote(rng, a.core)} and {quote(rng, b.core)}.",
                        f"the place to insert text between {quote(rng, a.core)} and {quote(rng, b.core)}",
                        f"Return the coordinate in the space after {quote(rng, a.core)} and before {quote(rng, b.core)}."))
    require_unique(v.word_ids(a.core), instr)
    return Named(instr, f"space:{a.line}.{a.end}")


def _line_named(v: _View) -> tuple[Line, str]:
    """A line longer than 12 characters whose first words start no other line, and those words quoted."""
    ln = v.pick([ln for ln in v.page.lines if len(v.lines_starting(_line_prefix(ln))) == 1 and len(ln.text) > 12])
    return ln, quote(v.rng, _line_prefix(ln))


def _line_start(v: _View) -> Named:
    ln, Q = _line_named(v)
    instr = v.rng.choice((f"Click the start of the line that starts with {Q}.",
                          f"Place the caret at the beginning of the line starting with {Q}."))
    require_unique(v.lines_starting(_line_prefix(ln)), instr)
    return Named(instr, f"caret:{ln.index}.0")


def _line_end(v: _View) -> Named:
    ln, Q = _line_named(v)
    instr = v.rng.choice((f"Click the end of the line that starts with {Q}.",
                          f"Place the caret at the very end of the line beginning with {Q}."))
    require_unique(v.lines_starting(_line_prefix(ln)), instr)
    return Named(instr, f"caret:{ln.index}.{len(ln.text)}")


def _line_bbox(v: _View) -> Named:
    ln, Q = _line_named(v)
    instr = v.rng.choice((f"Give the bounding box of the whole line starting with {Q}.",
                          f"Need a tight box for the line that starts with {Q}.",
                          f"Bounding rectangle for the line beginning with {Q}, please."))
    require_unique(v.lines_starting(_line_prefix(ln)), instr)
    return Named(instr, f"line:{ln.index}", "bbox")


def _paragraph_named(v: _View, *, by_end: bool) -> tuple[int, str, list[str]]:
    """A paragraph whose first word (last word, ``by_end``) no other paragraph starts (ends) with:
    its number, that word quoted, and every paragraph the wording could mean."""
    page = v.page
    if by_end:
        edge = {p: page.lines[ks[-1]].words[-1] for p, ks in page.paras.items() if page.lines[ks[-1]].words}
    else:
        edge = {p: page.lines[ks[0]].words[0] for p, ks in page.paras.items() if page.lines[ks[0]].words}

    def same(p: int) -> list[int]:
        return [q for q in edge if _fold(edge[q].core) == _fold(edge[p].core)]

    p = v.pick([p for p in edge if len(same(p)) == 1])
    return p, quote(v.rng, edge[p].core), [f"para:{q}" for q in same(p)]


def _paragraph_end(v: _View) -> Named:
    p, Q, meant = _paragraph_named(v, by_end=True)
    instr = v.rng.choice((f"Click at the very end of the paragraph ending with {Q}.",
                          f"Place the cursor after the last character of the paragraph that ends with {Q}."))
    ln = v.page.lines[v.page.paras[p][-1]]
    require_unique(meant, instr)
    return Named(instr, f"caret:{ln.index}.{len(ln.text)}")


def _paragraph_start(v: _View) -> Named:
    p, Q, meant = _paragraph_named(v, by_end=False)
    instr = v.rng.choice((f"Click at the very start of the paragraph beginning with {Q}.",
                          f"Place the cursor before the first word of the paragraph that starts with {Q}."))
    require_unique(meant, instr)
    return Named(instr, f"caret:{v.page.paras[p][0]}.0")


def _paragraph_bbox(v: _View) -> Named:
    p, Q, meant = _paragraph_named(v, by_end=False)
    instr = v.rng.choice((f"Draw a box around the whole paragraph starting with {Q}.",
                          f"Give the bounding box of the paragraph that starts with {Q}: top-left then bottom-right."))
    require_unique(meant, instr)
    return Named(instr, f"para:{p}", "bbox")


WRITERS: dict[str, Callable[[_View], Named]] = {
    "word_center": _word_center,
    "word_bbox": _word_bbox,
    "char_center": partial(_char, box=False),
    "char_bbox": partial(_char, box=True),
    "caret_between_chars": _caret_between_chars,
    "punctuation": _punctuation,
    "sentence_boundary": _sentence_boundary,
    "caret_after_word": partial(_caret_by_word, after=True),
    "caret_before_word": partial(_caret_by_word, after=False),
    "between_words": _between_words,
    "line_start": _line_start,
    "line_end": _line_end,
    "line_bbox": _line_bbox,
    "paragraph_start": _paragraph_start,
    "paragraph_end": _paragraph_end,
    "paragraph_bbox": _paragraph_bbox,
}
"""Category -> writer: draws a target of that category on a laid-out page and names it (one entry per
:data:`CATEGORY_WEIGHTS` category)."""


def make_sample(rng: random.Random, index: int, painter: TextPainter | None = None,
                category: str | None = None, language: str | None = None) -> SampleSpec:
    """Build one text sample from ``rng``: surface, language (``language``, or drawn with
    ``corpus.LANGUAGE_WEIGHTS`` when ``None``), layout, a target of ``category`` (drawn with
    :data:`CATEGORY_WEIGHTS` when ``None``) named by its writer in :data:`WRITERS` so that exactly one
    element matches.

    Raises:
        SuiteError: no target of the category can be named uniquely on this page.
    """
    painter = painter or TextPainter()
    category, data_type = choose_category(rng, CATEGORY_WEIGHTS, category)
    doc = _Doc(rng, painter, language)
    page = doc.layout()
    named = WRITERS[category](_View(rng, category, page))
    fields = {
        "data_type": data_type,
        "category": category,
        "surface": doc.surface.name,
        "language": doc.lang,
        "difficulty": DIFFICULTY[category],
        "font": doc.font,
        "font_size": doc.size,
    }
    return SampleSpec(Scene(doc.image, page.elements), named.target_id, named.instruction, named.answer_type, fields)


SUITE = DrawnSuite(name="text", module="pointfail.suites.text", id_prefix="pft", version=1, fonts=FONTS_USED,
                   categories=CATEGORY_WEIGHTS, make_sample=make_sample,
                   schedules={"language": dict(zip(corpus.LANGUAGES, corpus.LANGUAGE_WEIGHTS))})
"""The text suite: ``pointfail generate text`` and :func:`generate` (categories and languages follow
their weights exactly: half English, a tenth each of the others, as in PointerBench-Text)."""

generate = SUITE.generate
add_arguments = SUITE.add_arguments
run = SUITE.run
