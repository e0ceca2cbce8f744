"""Text targets: a phrase among the OCR words, and the place an instruction asks for around it.

:func:`text_target` reads a character in a word, the gap between two characters, punctuation after
a word, lines and paragraphs starting/ending with a phrase (start, end, box), "between A and B",
before/after a word (caret positions), the search box, else the centre (or box) of the phrase.
Ordinals ("the second ...", "the last ...") and regions ("in the sidebar") pick among several
matches. Glyph columns inside a word box are read from pixels (characters, punctuation, carets).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any, Optional

from pointfail.generated.baselines.ocr.instruction import norm, ordinal, quoted, unquoted
from pointfail.generated.baselines.ocr.words import Word, grayscale, median, paragraphs, text_lines, union

__all__ = ["find_phrase", "glyph_spans", "pad_box", "text_target"]


_CONFUSABLE = str.maketrans("01568", "olsgb")
"""Digits Tesseract reads for look-alike letters (``Go`` as ``60``), folded before a second comparison."""


def _split_word_runs(words: list[Word], i: int, target: str, n: int) -> list[list[Word]]:
    """Runs from word ``i`` on one line segment (up to 12 words) whose joined text is ``target``
    exactly and longer than ``n + 1`` words: a word Tesseract split ("SQLITE_LIMIT" read as two),
    grown while the joined text is a prefix of ``target``."""
    out: list[list[Word]] = []
    acc = ""
    for j in range(i, min(len(words), i + 12)):
        if words[j].line[:2] != words[i].line[:2]:
            break
        acc += norm(words[j].text)
        if acc == target and j - i + 1 > n + 1:
            out.append(words[i:j + 1])
        if not target.startswith(acc):
            break
    return out


def _window_matches(words: list[Word], i: int, target: str, n: int, exact: list[list[Word]],
                    fuzzy: list[tuple[float, list[Word]]]) -> None:
    """Append to ``exact`` / ``fuzzy`` (score, run) the runs of ``n - 1``, ``n`` and ``n + 1`` words
    from word ``i`` on one line segment that match ``target``: exactly, up to look-alike digits
    (score 0.99), or with a fuzzy ratio >= 0.8; the score loses 0.01 per word off ``n``."""
    for m in sorted({n, n - 1, n + 1} - {0}):
        run = words[i:i + m]
        if len(run) < m or len({w.line[:2] for w in run}) > 1:
            continue
        got = norm("".join(w.text for w in run))
        if got == target:
            exact.append(run)
        elif got and got.translate(_CONFUSABLE) == target.translate(_CONFUSABLE):
            fuzzy.append((0.99 - 0.01 * abs(m - n), run))
        elif got and abs(len(got) - len(target)) <= max(2, len(target) // 4):
            r = SequenceMatcher(None, got, target).ratio()
            if r >= 0.8:
                fuzzy.append((r - 0.01 * abs(m - n), run))


def _inside_word_runs(words: list[Word], phrase: str) -> list[list[Word]]:
    """The phrase inside a longer word ("re.escape(pattern)"), case-folded: one-word runs whose box is
    the phrase's slice of the word box, in proportion to character counts."""
    out: list[list[Word]] = []
    for w in words:
        t = w.text.casefold()
        i = t.find(phrase.casefold())
        if i >= 0 and len(t) > len(phrase):
            x0, x1 = w.box[0], w.box[2]
            a = x0 + (x1 - x0) * i / len(t)
            b = x0 + (x1 - x0) * (i + len(phrase)) / len(t)
            out.append([Word(phrase, (a, w.box[1], b, w.box[3]), w.conf, w.line, w.index)])
    return out


def find_phrase(words: list[Word], phrase: str) -> list[list[Word]]:
    """Runs of consecutive OCR words (same visual line segment, or continuing onto the next line)
    whose joined text matches ``phrase`` (NFKD without diacritics, case-folded, punctuation ignored; a
    fuzzy ratio >= 0.8 accepts one misread character in five; runs one word longer or shorter than the
    phrase are tried, for words Tesseract splits or joins). Exact matches are returned when there are any
    (one per first word); else the fuzzy ones within 0.05 of the best, at most 4; in reading order."""
    target = norm(phrase)
    if not target:
        return []
    n = max(1, len(phrase.split()))
    exact: list[list[Word]] = []
    fuzzy: list[tuple[float, list[Word]]] = []
    for i in range(len(words)):
        exact.extend(_split_word_runs(words, i, target, n))
        _window_matches(words, i, target, n, exact, fuzzy)
    if not exact and not fuzzy and len(target) >= 3:
        exact = _inside_word_runs(words, phrase)
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


def _link_runs(runs: list[list[Word]], image: Any, words: Optional[list[Word]]) -> list[list[Word]]:
    """The matches drawn in coloured ink (mean ink saturation above 0.2), when some are; among several,
    those that are the whole link (no coloured neighbour within a glyph height on the line)."""
    sats = [_ink_saturation(image, union(r)) for r in runs]
    runs = [r for r, v in zip(runs, sats) if v > 0.2] or runs
    if len(runs) <= 1 or not words:
        return runs

    def alone(r: list[Word]) -> bool:
        for i in (r[0].index - 1, r[-1].index + 1):
            if 0 <= i < len(words) and words[i].line == r[0].line and \
                    words[i].box[0] - r[-1].box[2] < r[0].h and r[0].box[0] - words[i].box[2] < r[0].h and \
                    _ink_saturation(image, words[i].box) > 0.2:
                return False
        return True
    return [r for r in runs if alone(r)] or runs


def _pick(runs: list[list[Word]], instruction: str, start: int, image_w: float, image: Any = None,
          words: Optional[list[Word]] = None) -> list[Word]:
    """One run among several matches: an ordinal before the quote, a region ("sidebar": the left
    quarter of the image; "main text": the rest), a style ("link": coloured ink, when some matches
    have it; "heading"/"title": the tallest text), else the first."""
    low = instruction.lower()
    if len(runs) > 1 and image is not None and re.search(r"\blink\b", unquoted(low)):
        runs = _link_runs(runs, image, words)
    if len(runs) > 1 and re.search(r"\b(heading|title)\b", unquoted(low)):
        top = max(median([w.h for w in r]) for r in runs)
        runs = [r for r in runs if median([w.h for w in r]) >= 0.85 * top]
    if re.search(r"\bsidebar\b", low):
        runs = [r for r in runs if r[0].box[0] < 0.3 * image_w] or runs
    elif re.search(r"\bmain (?:text|content|body)\b", low):
        runs = [r for r in runs if r[0].box[0] >= 0.2 * image_w] or runs
    k = ordinal(instruction, start)
    if k == -1:
        return runs[-1]
    if k and k <= len(runs):
        return runs[k - 1]
    return runs[0]


Box = tuple[float, float, float, float]
Target = tuple[Box, tuple[float, float], str]


def _center(b: Box) -> tuple[float, float]:
    """The centre of box ``b`` (x0, y0, x1, y1), in pixels."""
    return (b[0] + b[2]) / 2, (b[1] + b[3]) / 2


def _search_box_target(low: str, words: list[Word]) -> Optional[Target]:
    """An unquoted "search box/field/bar/input": the top-most word reading "search" (or "quick"),
    with its neighbours on the line up to it; ``None`` when the instruction names none."""
    if not re.search(r"\bsearch\s+(box|field|bar|input)\b", low):
        return None
    hits = [w for w in words if "search" in norm(w.text)] or [w for w in words if norm(w.text) == "quick"]
    if not hits:
        return None
    w = min(hits, key=lambda w: w.box[1])
    run = [v for v in words if v.line == w.line and abs(v.index - w.index) <= 1 and v.box[2] <= w.box[2]]
    b = union(run)
    return b, _center(b), "search_box"


def _between_chars(gray: Any, w: Word, txt: str, single: list[tuple[int, str]]) -> Optional[Target]:
    """The gap between the first two quoted characters where they stand next to each other in
    ``txt`` (the text of word ``w``); ``None`` when they do not."""
    folded = [norm(c) or c for c in txt]
    a_, b_ = norm(single[0][1]) or single[0][1], norm(single[1][1]) or single[1][1]
    i = next((k for k in range(len(folded) - 1) if folded[k] == a_ and folded[k + 1] == b_), -1)
    if i < 0:
        return None
    a, b = _char_box(gray, w, i, txt), _char_box(gray, w, i + 1, txt)
    x = (a[2] + b[0]) / 2
    return (a[0], w.box[1], b[2], w.box[3]), (x, w.cy), "between_chars"


def _char_target(instruction: str, low: str, qs: list[tuple[int, str]], words: list[Word], image: Any,
                 gray: Any, W: float) -> Optional[Target]:
    """A quoted character inside a quoted word ("the 'e' in 'gate'"), or the gap between two quoted
    characters of it; ``None`` when the instruction asks for neither or the word is not found."""
    single = [(s, q) for s, q in qs if len(q) == 1]
    multi = [(s, q) for s, q in qs if len(q) > 1]
    if not (single and multi and gray is not None and re.search(r"\bin\b", low)):
        return None
    ws, word = multi[-1]
    runs = find_phrase(words, word)
    if not runs:
        return None
    w = _pick(runs, instruction, ws, W, image, words)[0]
    txt = word if len(w.text) == len(word) or norm(w.text) != norm(word) else w.text
    if len(single) >= 2:
        between = _between_chars(gray, w, txt, single)
        if between is not None:
            return between
    ch = single[0][1]
    k = ordinal(instruction, single[0][0]) or 1
    idx = [i for i, c in enumerate(txt) if c == ch] or [i for i, c in enumerate(txt) if norm(c) == norm(ch)]
    if not idx:
        return None
    i = idx[-1] if k == -1 else idx[min(k, len(idx)) - 1]
    b = _char_box(gray, w, i, txt)
    return b, _center(b), "char"


def _punctuation_target(instruction: str, low: str, qs: list[tuple[int, str]], words: list[Word], image: Any,
                        gray: Any, W: float) -> Optional[Target]:
    """The punctuation mark after the first quoted phrase ("the period after 'done'"), or the caret
    just after it when the instruction asks to click after the mark; ``None`` otherwise."""
    m = re.search(r"\b(" + "|".join(_PUNCT) + r")\b", low)
    if not (m and gray is not None and re.search(r"\b(after|following|ending|ends)\b", low)):
        return None
    runs = find_phrase(words, qs[0][1])
    if not runs:
        return None
    w = _pick(runs, instruction, qs[0][0], W, image, words)[-1]
    spans = [v for v in glyph_spans(gray, (w.box[0], w.box[1], w.box[2] + 0.5 * w.h, w.box[3]))
             if v[0] <= w.box[2] + 0.3 * w.h]  # a mark Tesseract left outside the word box
    mark = _PUNCT[m.group(1)]
    if not (spans and (w.text.endswith(mark) or len(spans) > len(norm(qs[0][1])) or spans[-1][0] >= w.box[2] - 1)):
        return None
    s = spans[-1]
    if re.search(r"\b(click|place|put)\b.*\bafter the (?:question mark|period|full stop|exclamation)", low) \
            or re.search(r"sentence ending", low):
        return w.box, (s[2] + 1.5, w.cy), "after_punctuation"
    glyph = (float(s[0]), float(s[1]), float(s[2]), float(s[3]))
    return glyph, ((s[0] + s[2]) / 2, (s[1] + s[3]) / 2), "punctuation"


def _between_words_target(low: str, qs: list[tuple[int, str]], words: list[Word]) -> Optional[Target]:
    """The gap between the first two quoted phrases where they stand next to each other on one line
    (less than three glyph heights apart); ``None`` otherwise."""
    if not (len(qs) >= 2 and re.search(r"\b(between|gap|blank)\b", low)
            and not re.search(r"\b(characters?|letters?)\b", low)):
        return None
    runs_a, runs_b = find_phrase(words, qs[0][1]), find_phrase(words, qs[1][1])
    for ra in runs_a:
        for rb in runs_b:
            ba, bb = union(ra), union(rb)
            if ra[-1].line == rb[0].line and 0 <= bb[0] - ba[2] < 3 * (ba[3] - ba[1]):
                box = (ba[2], min(ba[1], bb[1]), bb[0], max(ba[3], bb[3]))
                return box, ((ba[2] + bb[0]) / 2, (ba[1] + ba[3]) / 2), "between_words"
    return None


def _ink_end(gray: Any, last: Word, x_end: float) -> float:
    """``x_end`` moved right past trailing punctuation Tesseract left out of word ``last``'s box
    (glyphs starting within 0.3 glyph heights of it), in pixels."""
    sp = glyph_spans(gray, (last.box[0], last.box[1], last.box[2] + 0.5 * last.h, last.box[3]))
    return max([x_end] + [v[2] for v in sp if v[0] <= x_end + 0.3 * last.h])


def _line_runs(q: str, words: list[Word], ends: bool) -> list[list[Word]]:
    """Matches of ``q`` that begin their line (``ends`` False) or end it (``ends`` True), else all
    matches; with none for "starts with", matches of its first (up to three) words."""
    runs = find_phrase(words, q)
    if not ends:  # "starts with": a match that begins its line
        firsts = {ln[0].index for ln in text_lines(words)}
        runs = [r for r in runs if r[0].index in firsts] or runs
    else:  # "ends with": a match that ends its line
        lasts = {ln[-1].index for ln in text_lines(words)}
        runs = [r for r in runs if r[-1].index in lasts] or runs
    if not runs and not ends:
        first = q.split()[: max(1, min(3, len(q.split())))]
        runs = find_phrase(words, " ".join(first))
    return runs


def _line_paragraph_target(instruction: str, low: str, qs: list[tuple[int, str]], words: list[Word], image: Any,
                           gray: Any, W: float) -> Optional[Target]:
    """A line or paragraph named by how it starts or ends: its box, and its start, its end or its
    centre as the point; ``None`` when the instruction names none or no match is found."""
    start, q = qs[0]
    m_line = re.search(r"\bline\b[^'\"«`‘“]{0,30}\b(start|begin|starting|beginning|starts|begins)", low)
    m_para = re.search(r"\bparagraph\b[^'\"«`‘“]{0,30}\b(start|begin|starting|beginning|starts|begins|"
                       r"ends|ending|end)", low)
    if not (m_line or m_para):
        return None
    ends = bool(m_para and m_para.group(1).startswith("end"))
    runs = _line_runs(q, words, ends)
    if not runs:
        return None
    lines = text_lines(words)
    run = _pick(runs, instruction, start, W, image, words)
    ln = next(ln for ln in lines if run[0] in ln)
    if m_line:
        box = union(ln)
    else:
        para = next((p for p in paragraphs(words) if any(run[0] in ln for ln in p)), None)
        box = union([w for ln2 in (para or [ln]) for w in ln2])
        if ends and para:
            ln = para[-1]
    cy = union(ln)[1] / 2 + union(ln)[3] / 2
    if ends or re.search(r"\b(end|last character)\b", low[: start]):
        last = ln[-1] if not ends else run[-1]
        x_end = _ink_end(gray, last, last.box[2]) if gray is not None else last.box[2]
        return box, (x_end + 1.5, last.cy if ends else cy), "line_end" if m_line else "paragraph_end"
    if re.search(r"\b(start|beginning)\s+of\b|" + _CARET_BEFORE, low[: start]):
        return box, (ln[0].box[0] - 1.0, cy), "line_start" if m_line else "paragraph_start"
    return box, _center(box), "line_box" if m_line else "paragraph_box"


def _caret_after_x(gray: Any, low: str, q: str, run: list[Word], x_end: float) -> float:
    """Where a caret "after" the phrase ``q`` (matched as ``run``) goes, in pixels: past the
    sentence's full stop when a sentence is named, before punctuation Tesseract joined to the last
    word when ``q`` does not end in it, else ``x_end``."""
    last = run[-1]
    if gray is not None and re.search(r"\bsentence\b", low):  # after the sentence's full stop
        return _ink_end(gray, last, x_end)
    if gray is not None and re.search(r"[.,;:!?)\]»”'\"]$", last.text) and not re.search(r"[^\w\s]$", q):
        sp = glyph_spans(gray, last.box)  # the word's own end, before the punctuation Tesseract joined
        if len(sp) >= 2:
            return sp[-2][2]
    return x_end


def _phrase_target(instruction: str, low: str, qs: list[tuple[int, str]], words: list[Word], image: Any,
                   gray: Any, W: float) -> Optional[Target]:
    """The phrase to locate, the first quote found (later quotes are context, "in the phrase
    ..."): a caret after or before it, else its centre; ``None`` when no quote is found."""
    for qi, (start, q) in enumerate(qs):
        runs = find_phrase(words, q)
        if not runs:
            continue
        run = _pick(runs, instruction, start, W, image, words)
        nth = ordinal(instruction, start)
        ctx = [r for _, q2 in qs[qi + 1:] for r in find_phrase(words, q2)]
        if not nth and len(runs) > 1 and ctx:
            run = min(runs, key=lambda r: min(abs(r[0].index - c[0].index) + (0 if r[0].line == c[0].line else 1000)
                                              for c in ctx))
        box = union(run)
        cy = (box[1] + box[3]) / 2
        prefix = instruction[:start].lower()
        if re.search(_CARET_AFTER, prefix):
            return box, (_caret_after_x(gray, low, q, run, box[2]) + 1.5, cy), "caret_after"
        if re.search(_CARET_BEFORE, prefix):
            return box, (box[0] - 1.5, cy), "caret_before"
        return box, ((box[0] + box[2]) / 2, cy), "phrase_center"
    return None


def text_target(instruction: str, words: list[Word], image: Any = None) -> Optional[Target]:
    """``(box, point, rule)`` for a text instruction: ``box`` of the matched words (or character,
    line, paragraph), ``point`` the position asked for, in pixels; ``None`` when no quoted phrase is
    found in the OCR words. The rules are tried in order: a character in a word, punctuation after a
    word, the gap between two words, a line or paragraph by how it starts or ends, the phrase itself;
    with no quote, only a search box."""
    qs = quoted(instruction)
    low = instruction.lower()
    if not qs:
        return _search_box_target(low, words)
    W = image.width if image is not None else 1024
    gray = grayscale(image) if image is not None else None
    return (_char_target(instruction, low, qs, words, image, gray, W)
            or _punctuation_target(instruction, low, qs, words, image, gray, W)
            or _between_words_target(low, qs, words)
            or _line_paragraph_target(instruction, low, qs, words, image, gray, W)
            or _phrase_target(instruction, low, qs, words, image, gray, W))


def pad_box(box: tuple[float, float, float, float], rule: str, words: list[Word], frac: float = 0.3
             ) -> tuple[float, float, float, float]:
    """A text box grown to its line box: Tesseract boxes hug the ink, while a rendered element's box
    spans the line height (CSS ``line-height`` about 1.2-1.5 times the font size); the glyph height
    of the matched words stands in for the font size: ``frac`` of it above and below, a third of that
    left and right (0.3 for headings, links, buttons and code: element boxes; 0.22 for lines and
    paragraphs, whose boxes some screens draw tight to the ink)."""
    x0, y0, x1, y1 = box
    inside = [w for w in words if w.box[0] >= x0 - 1 and w.box[2] <= x1 + 1 and w.box[1] >= y0 - 1 and w.box[3] <= y1 + 1]
    h = median([w.h for w in inside]) if inside else (y1 - y0)
    pad_y = frac * h
    pad_x = frac / 3 * h
    return x0 - pad_x, y0 - pad_y, x1 + pad_x, y1 + pad_y
