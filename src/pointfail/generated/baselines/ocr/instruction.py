"""Reading an instruction: the quoted phrases in it, its text outside quotes, ordinals before a quote,
and the normalization OCR text and instruction text are compared under."""

from __future__ import annotations

import re
import unicodedata
from typing import Optional

__all__ = ["norm", "ordinal", "quoted", "unquoted"]


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


def unquoted(text: str) -> str:
    """``text`` with every quoted phrase (any quote style :func:`quoted` reads) replaced by a space."""
    out = text
    for pat in _QUOTES:
        out = re.sub(pat, " ", out)
    return out


def norm(s: str) -> str:
    """NFKD, diacritics dropped, case-folded, punctuation removed (``eng`` OCR reads "château" as
    "chateau")."""
    s = unicodedata.normalize("NFKD", s)
    s = "".join(ch for ch in s if not unicodedata.combining(ch)).casefold()
    return re.sub(r"[\W_]", "", s)


def ordinal(instruction: str, quote_start: int) -> Optional[int]:
    """The ordinal just before the quote at ``quote_start`` ("the second 'x'", "the last occurrence of
    'x'"): 1-5, -1 for "last", ``None`` when there is none."""
    before = instruction[:quote_start].lower()
    m = re.search(r"\b(first|second|third|fourth|fifth|last)\b(?:\s+(?:occurrence|instance)\s+of)?[\s\w]{0,12}$", before)
    return _ORDINALS[m.group(1)] if m else None
