"""Text drawn glyph by glyph with the exact ink box of every character (the suites' text geometry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pointfail.generated.suites.fonts import load_font

__all__ = ["DrawnChar", "Glyph", "TextPainter"]


@dataclass
class Glyph:
    """A character rendered once and reused: ``mask`` (Pillow ``L`` image of its ink, or ``None`` for
    blank characters), ``offset`` (x, y) of the mask's top-left relative to the pen position on the
    baseline, ``ink`` the tight box of non-zero mask pixels relative to the pen/baseline (or ``None``)."""

    mask: Any
    offset: tuple[int, int]
    ink: tuple[int, int, int, int] | None


@dataclass
class DrawnChar:
    """One drawn character: ``pen`` x of its pen position (the caret position before it), ``box``
    tight ink box in image pixels (``None`` for a space)."""

    ch: str
    pen: int
    box: list[int] | None


class TextPainter:
    """Draws strings glyph by glyph and reports each glyph's exact ink box.

    Glyph ``i`` of a string drawn at pen ``x`` sits at integer pen ``x + round(font.getlength(s[:i]))``
    (FreeType advances with kerning, Pillow BASIC layout), and is pasted from a cached mask rendered by
    Pillow at an integer origin, so the reported box (the mask's non-zero pixels, ``Image.getbbox``)
    is exactly where the ink lands. ``y`` is the baseline (Pillow anchor ``ls``).
    """

    def __init__(self) -> None:
        self._glyphs: dict[tuple[str, int, str], Glyph] = {}
        self._lengths: dict[tuple[str, int, str], float] = {}

    def glyph(self, font_name: str, size: int, ch: str) -> Glyph:
        """The cached :class:`Glyph` of ``ch``."""
        key = (font_name, size, ch)
        g = self._glyphs.get(key)
        if g is None:
            from PIL import Image, ImageDraw

            font = load_font(font_name, size)
            l, t, r, b = font.getbbox(ch, anchor="ls")
            if r <= l or b <= t:
                g = Glyph(None, (0, 0), None)
            else:
                m = Image.new("L", (r - l, b - t), 0)
                ImageDraw.Draw(m).text((-l, -t), ch, font=font, fill=255, anchor="ls")
                bb = m.getbbox()
                if bb is None:
                    g = Glyph(None, (0, 0), None)
                else:
                    g = Glyph(m, (l, t), (l + bb[0], t + bb[1], l + bb[2], t + bb[3]))
            self._glyphs[key] = g
        return g

    def _len(self, font_name: str, size: int, s: str) -> float:
        key = (font_name, size, s)
        v = self._lengths.get(key)
        if v is None:
            v = load_font(font_name, size).getlength(s)
            self._lengths[key] = v
        return v

    def prefix_lengths(self, font_name: str, size: int, s: str) -> list[float]:
        """``[getlength(s[:i]) for i in 0..len(s)]`` in linear time: ``L(i) = L(i-1) +
        getlength(s[i-2:i]) - getlength(s[i-2])`` (the pair's advance minus the first glyph's is the
        second glyph's advance plus the pair's kerning). FreeType works in 26.6 fixed point, so the
        sums are exact; ``tests/test_suites_common.py`` checks equality with ``getlength``."""
        out = [0.0]
        for i in range(1, len(s) + 1):
            if i == 1:
                out.append(self._len(font_name, size, s[0]))
            else:
                out.append(out[-1] + self._len(font_name, size, s[i - 2:i]) - self._len(font_name, size, s[i - 2]))
        return out

    def extend_length(self, font_name: str, size: int, width: float, s: str, suffix: str) -> float:
        """``getlength(s + suffix)`` given ``width == getlength(s)``, in time linear in ``suffix``
        (same pair rule as :meth:`prefix_lengths`); for word wrapping."""
        prev = s[-1] if s else None
        for ch in suffix:
            if prev is None:
                width = self._len(font_name, size, ch)
            else:
                width += self._len(font_name, size, prev + ch) - self._len(font_name, size, prev)
            prev = ch
        return width

    def length(self, font_name: str, size: int, s: str) -> float:
        """Advance width of ``s`` in pixels, equal to ``FreeTypeFont.getlength(s)`` (Pillow BASIC
        layout: advances plus kerning)."""
        return self.prefix_lengths(font_name, size, s)[-1] if s else 0.0

    def pens(self, font_name: str, size: int, x: int, s: str) -> list[int]:
        """Integer pen x of every caret position 0..len(s) of ``s`` drawn at ``x``:
        ``x + round(getlength(s[:i]))``."""
        return [x + round(v) for v in self.prefix_lengths(font_name, size, s)]

    def draw(self, image, x: int, baseline: int, s: str, font_name: str, size: int, color,
             char_colors: dict[int, tuple[int, int, int]] | None = None) -> list[DrawnChar]:
        """Draw ``s`` with its pen starting at ``(x, baseline)`` in ``color`` (RGB tuple), character
        ``i`` in ``char_colors[i]`` where given (geometry unchanged); returns one :class:`DrawnChar`
        per character (the end pen is ``pens(...)[-1]``)."""
        pens = self.pens(font_name, size, x, s)
        out = []
        for i, ch in enumerate(s):
            g = self.glyph(font_name, size, ch)
            px = pens[i]
            if g.mask is None or g.ink is None:  # a blank character: no ink
                out.append(DrawnChar(ch, px, None))
                continue
            ox, oy = px + g.offset[0], baseline + g.offset[1]
            ink = char_colors.get(i, color) if char_colors else color
            image.paste(ink, (ox, oy, ox + g.mask.width, oy + g.mask.height), g.mask)
            il, it, ir, ib = g.ink
            out.append(DrawnChar(ch, px, [px + il, baseline + it, px + ir, baseline + ib]))
        return out
