"""Shared text handling for the family parsers: normalization, reasoning and fence stripping, number
reading, and the small readers (keyed JSON lists, bare lists, tags, ``x=…, y=…`` pairs) the family
files combine.

Every reader returns :class:`Item` objects holding the model's *raw* number tokens in the order the
model wrote them, with their position in the text; :class:`pointfail.families.Family` turns them into
numbers (:func:`read_number`), reorders them with the frame's declared order and converts them.
Nothing here guesses a coordinate frame.

Rule names (they appear in ``ParseResult.flags``/``reason`` and in the tests):

``fullwidth`` / ``nfkc``       text was NFKC-normalized (full-width digits ``１２３`` read as ``123``)
``unicode_minus``              U+2212 MINUS SIGN read as ``-``
``think_stripped``             reasoning before a closed ``</think>`` was dropped
``truncated``                  unclosed reasoning (``reason``), or the answer was cut mid-structure
``answer_tag``                 only the content of ``<answer>…</answer>`` was read
``fenced``                     only the content of markdown code fences was read
``unit_px``                    a ``px``/``pixels`` unit after a number was dropped (``512px``)
``quoted_number``              a number written as a string (``"512"``)
``malformed_number`` / ``non_finite_number`` / ``wrong_arity``   reasons for ignoring an item
``after_prose``                a bare list after prose (not part of the answer) was ignored
``xy_pairs``                   the fallback ``x=…, y=…`` reader found the coordinates
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

from pointfail.limits import MAX_ITEMS

MAX_IGNORED = 50
"""Fragments recorded in ``ParseResult.ignored``; beyond that the flag ``ignored_capped`` is set."""

_DIGIT = re.compile(r"\d")

# --------------------------------------------------------------------------------------------------
# data passed between readers and the Family base class
# --------------------------------------------------------------------------------------------------


@dataclass
class Item:
    """One coordinate group found in the text.

    kind: ``"point"`` (2 tokens) or ``"box"`` (4 tokens: two corners).
    tokens: raw number strings in the order the model wrote them (frame order, e.g. ``y, x``).
    start: character offset in the (normalized, stripped) answer text; items are used in this order
        (several items of one tag get fractional offsets after the tag's, to keep their order).
    source: the text fragment, for diagnostics.
    """

    kind: str
    tokens: list[str]
    start: float
    source: str


@dataclass
class Diagnostics:
    """Flags and ignored fragments collected while parsing one reply."""

    flags: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    bad_reasons: list[str] = field(default_factory=list)

    def flag(self, name: str) -> None:
        """Record a rule name once, keeping first-seen order."""
        if name not in self.flags:
            self.flags.append(name)

    def ignore(self, reason: str, fragment: str) -> None:
        """Record a fragment that looked like coordinates but was not used, and why (at most
        :data:`MAX_IGNORED` of them; beyond that only the flag ``ignored_capped`` is set)."""
        if len(self.ignored) >= MAX_IGNORED:
            self.flag("ignored_capped")
            return
        frag = fragment[:200].strip()
        if len(frag) > 120:
            frag = frag[:117] + "..."
        self.ignored.append(f"{reason}: {frag}")


class NumberError(ValueError):
    """A token that is not a finite decimal number; ``reason`` is ``malformed_number`` or
    ``non_finite_number``."""

    def __init__(self, reason: str, token: str):
        self.reason = reason
        self.token = token
        super().__init__(f"{reason}: {token!r}")


# --------------------------------------------------------------------------------------------------
# normalization and stripping
# --------------------------------------------------------------------------------------------------


def normalize(text: str, diag: Diagnostics) -> str:
    """NFKC-normalize ``text`` (full-width digits, brackets and commas become ASCII) and map U+2212
    MINUS SIGN to ``-``. Flags ``fullwidth`` when a full-width form (U+FF01–U+FF5E) was present,
    ``nfkc`` for any other change, ``unicode_minus`` for U+2212."""
    if text.isascii():
        return text  # ASCII is invariant under NFKC and holds no U+2212
    out = unicodedata.normalize("NFKC", text)
    if out != text:
        if any(0xFF01 <= ord(c) <= 0xFF5E for c in text):
            diag.flag("fullwidth")
        else:
            diag.flag("nfkc")
    if "\u2212" in out:
        out = out.replace("\u2212", "-")
        diag.flag("unicode_minus")
    return out


_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.I)
_THINK_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.I)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.I | re.S)


def strip_reasoning(text: str, diag: Diagnostics) -> Optional[str]:
    """Keep only the final answer.

    * A closed reasoning block (``<think>…</think>``, also ``thinking``/``reasoning``; or a bare
      ``</think>`` whose opening tag was in the prompt, as Qwen3 thinking templates do): only the text
      after the *last* closing tag counts (flag ``think_stripped``).
    * An opening tag with no closing tag: the reply was cut inside its reasoning; returns ``None``
      (the caller reports ``no_prediction`` with reason ``truncated``).
    * ``<answer>…</answer>``: only its content counts (flag ``answer_tag``).
    """
    if text.isascii():
        low = text.lower()  # for ASCII text, exactly what re.I compares
        if "think" not in low and "reasoning" not in low and "<answer>" not in low:
            return text  # none of the three tags can match: skip the regex scans
    last = None
    for last in _THINK_CLOSE.finditer(text):  # noqa: B007 (keeps only the last closing tag, no list of them all)
        pass
    if last is not None:
        text = text[last.end():]
        diag.flag("think_stripped")
    elif _THINK_OPEN.search(text):
        diag.flag("truncated")
        return None
    m = _ANSWER.search(text)
    if m:
        diag.flag("answer_tag")
        text = m.group(1)
    return text


_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\n?(.*?)(?:```|$)", re.S)


def strip_fences(text: str, diag: Diagnostics) -> str:
    """If the text contains markdown code fences, keep only their contents (joined by newlines; an
    unclosed final fence keeps everything after it). Digits outside the fences are recorded in
    ``ignored`` as ``outside_fence``. Flag ``fenced``."""
    if "```" not in text:
        return text
    parts, outside, pos = [], [], 0
    for m in _FENCE.finditer(text):
        outside.append(text[pos:m.start()])
        parts.append(m.group(1))
        pos = m.end()
    outside.append(text[pos:])
    if not parts:
        return text
    diag.flag("fenced")
    for o in outside:
        if re.search(r"\d", o):
            diag.ignore("outside_fence", o)
    return "\n".join(parts)


_OPEN_TAG_AT_END = re.compile(r"<[A-Za-z_|][^<>]*+$")


def looks_truncated(text: str) -> bool:
    """True when the answer ends inside a structure: more ``[``/``{``/``(`` than closers, an open
    tag (``<point …`` without ``>``), or an odd number of double quotes. Used to flag ``truncated``
    replies (the complete items before the cut are still kept)."""
    if text.count("[") > text.count("]") or text.count("{") > text.count("}"):
        return True
    if text.count("(") > text.count(")"):
        return True
    if _OPEN_TAG_AT_END.search(text):
        return True
    if text.count('"') % 2 == 1:
        return True
    return False


# --------------------------------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------------------------------

NUMBER_RE = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER = re.compile(NUMBER_RE)
_NONFINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.I)
_UNITS = ("pixels", "pixel", "px")


def _strip_unit(t: str) -> Optional[str]:
    """``t`` without a trailing ``px`` / ``pixel`` / ``pixels`` unit (any case, spaces before it
    allowed), or ``None`` when it has none or nothing would be left."""
    low = t[-6:].lower()
    for unit in _UNITS:
        if low.endswith(unit):
            head = t[: len(t) - len(unit)].rstrip()
            return head or None
    return None


def read_number(token: str, diag: Optional[Diagnostics] = None) -> float:
    """Read one coordinate token strictly.

    Accepts an optional sign, digits with an optional decimal part, an optional exponent
    (``-3``, ``+5``, ``.5``, ``12.``, ``1e2``, ``2.5E-1``), surrounding whitespace and quotes (flag
    ``quoted_number``) and a trailing ``px``/``pixels`` unit (flag ``unit_px``).

    Raises:
        NumberError: ``non_finite_number`` for NaN/inf/infinity or an overflow such as ``1e999``;
            ``malformed_number`` for anything else (``12.3.4``, ``1,5``, ``--2``, empty).
    """
    t = token.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1].strip()
        if diag is not None:
            diag.flag("quoted_number")
    if _NUMBER.fullmatch(t):
        # the common case: a plain decimal number (it cannot carry a unit or spell nan/inf), so
        # the unit and non-finite checks below cannot apply; the overflow check still does
        v = float(t)
        if not math.isfinite(v):
            raise NumberError("non_finite_number", token)
        return v
    head = _strip_unit(t)
    if head is not None:
        t = head
        if diag is not None:
            diag.flag("unit_px")
    if _NONFINITE.fullmatch(t):
        raise NumberError("non_finite_number", token)
    if not _NUMBER.fullmatch(t):
        raise NumberError("malformed_number", token)
    v = float(t)
    if not math.isfinite(v):
        raise NumberError("non_finite_number", token)
    return v


def split_tokens(content: str) -> list[str]:
    """Split the inside of a bracket/paren group into number tokens: on commas when there are any,
    otherwise on whitespace (``"10 20"``). Surrounding brackets/parens inside are dropped."""
    c = content.strip()
    if "," in c:
        return [t for t in (p.strip() for p in c.split(",")) if t != ""] if c else []
    return c.split()


def item_from_tokens(
    tokens: list[str], start: int, source: str, diag: Diagnostics, arities=((2, "point"), (4, "box"))
) -> Optional[Item]:
    """Make an :class:`Item` when the token count is one of ``arities``; otherwise record
    ``wrong_arity`` in ``diag`` and return ``None``."""
    for n, kind in arities:
        if len(tokens) == n:
            return Item(kind, tokens, start, source)
    diag.ignore("wrong_arity", source)
    return None


# --------------------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------------------


def tag_spans(text: str, open_: str, close: str, ignore_case: bool = True) -> Iterator[tuple[int, int, int, int]]:
    """``(start, content_start, content_end, end)`` of every ``open_ … close`` pair, exactly what
    ``re.finditer(open_ + "(.*?)" + close, text, re.S)`` would match, in linear time: the lazy
    pattern rescans to the end of the reply from every opening that has no closing after it
    (``<box>`` repeated 50000 times), this scans each character once. After a pair the search resumes
    after its closing; an opening with no closing after it ends the search (no later opening can have
    one either)."""
    flags = re.I if ignore_case else 0
    o, c = re.compile(re.escape(open_), flags), re.compile(re.escape(close), flags)
    pos = 0
    while True:
        mo = o.search(text, pos)
        if mo is None:
            return
        mc = c.search(text, mo.end())
        if mc is None:
            return
        yield mo.start(), mo.end(), mc.start(), mc.end()
        pos = mc.end()


def read_keyed_lists(text: str, keys: dict[str, str], diag: Diagnostics) -> list[Item]:
    """Find ``"key": [a, b, …]`` for each key in ``keys`` (key → ``"point"``/``"box"``/``"any"``),
    quotes around the key optional, ``:`` or ``=``; a doubly nested ``[[a, b]]`` is read too. Every
    occurrence counts, in text order (lists of objects, several objects per line). Only complete
    lists are read: a list cut off by truncation is not an item."""
    if not keys:
        return []
    alt = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    # possessive quantifiers: no whitespace run or list body is ever rescanned (linear time)
    pat = re.compile(r"[\"']?\b(" + alt + r")\b[\"']?\s*+[:=]\s*+\[\s*+(\[[^\[\]]*+\]|[^\[\]]*+)\s*+\]", re.I)
    items: list[Item] = []
    lower = {k.lower(): v for k, v in keys.items()}
    for m in pat.finditer(text):
        kind = lower[m.group(1).lower()]
        inner = m.group(2).strip()
        if inner.startswith("["):
            inner = inner[1:-1]
        toks = split_tokens(inner)
        if kind == "point":
            it = item_from_tokens(toks, m.start(), m.group(0), diag, ((2, "point"),))
        elif kind == "box":
            it = item_from_tokens(toks, m.start(), m.group(0), diag, ((4, "box"),))
        else:
            it = item_from_tokens(toks, m.start(), m.group(0), diag)
        if it:
            items.append(it)
    return items


_SEPARATORS_ONLY = re.compile(r"[\s,;\[\]\(\)\{\}]*")


def read_bare_groups(
    text: str, diag: Diagnostics, open_: str = "[", close: str = "]", arities=((2, "point"), (4, "box"))
) -> list[Item]:
    """Read bare coordinate groups ``[a, b]`` (or ``(a, b)`` with ``open_="("``).

    The answer starts at the first group whose token count fits ``arities`` (groups before it, e.g.
    ``[left one]`` or ``[3]`` in prose, are skipped; those with digits are recorded as
    ``wrong_arity``). Later groups belong to the answer only while nothing but separators (spaces,
    commas, semicolons, brackets) stands between them: ``[[1, 2], [3, 4]]`` gives two items, but in
    ``[1, 2] The scale is [0, 1000].`` the second group follows prose and is ignored (``after_prose``).
    """
    pat = re.compile(re.escape(open_) + r"([^\[\]\(\)\{\}]*+)" + re.escape(close))
    items: list[Item] = []
    started = ended = False
    clean_upto = 0  # text[answer end:clean_upto] holds separators only (each character checked once)
    for m in pat.finditer(text):
        if ended:
            if _DIGIT.search(m.group(1)):
                diag.ignore("after_prose", m.group(0))
            continue
        if started:
            if not _SEPARATORS_ONLY.fullmatch(text, clean_upto, m.start()):
                ended = True  # prose after the answer: every later group is after prose
                if _DIGIT.search(m.group(1)):
                    diag.ignore("after_prose", m.group(0))
                continue
            clean_upto = m.start()
        toks = split_tokens(m.group(1))
        if not any(len(toks) == n for n, _ in arities):
            if _DIGIT.search(m.group(1)):
                diag.ignore("wrong_arity", m.group(0))
            continue
        it = item_from_tokens(toks, m.start(), m.group(0), diag, arities)
        if it:
            items.append(it)
            started = True
            clean_upto = m.end()
    return items


_ATTR = re.compile(r"(?<![\w-])([A-Za-z_][\w-]*+)\s*+=\s*+(?:\"([^\"]*+)\"|'([^']*+)'|([^\s>\"',()]++))")
"""An attribute ``name=value``; a name starts only where no name character precedes it, and every
quantifier is possessive, so a long run of letters with no ``=`` is scanned once, not once per
letter."""


def tag_attributes(attr_text: str) -> dict[str, str]:
    """Attributes of an XML-ish tag as a dict (``x="10.5" y='3' alt=mug``); later duplicates win."""
    out: dict[str, str] = {}
    for m in _ATTR.finditer(attr_text):
        val = m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None else m.group(4)
        out[m.group(1).lower()] = val
    return out


_POINT_TAG = re.compile(r"<(points?)\b([^<>]*+)>", re.I)
_INDEXED_ATTR = re.compile(r"[xy]\d{1,6}")


def read_point_tags(text: str, diag: Diagnostics) -> list[Item]:
    """Molmo-style point tags: ``<point x="…" y="…" alt="…">…</point>`` (one point) and
    ``<points x1="…" y1="…" x2="…" y2="…" alt="…">…</points>`` (points in index order). A tag with an
    ``x`` and no matching ``y`` is recorded as ``wrong_arity``. A tag cut off before its ``>`` is not
    read (the reply is then flagged ``truncated``)."""
    items: list[Item] = []
    for m in _POINT_TAG.finditer(text):
        src = m.group(0)  # one string shared by the tag's items (not a copy of the tag per item)
        attrs = tag_attributes(m.group(2))
        if m.group(1).lower() == "point" and ("x" in attrs or "y" in attrs):
            if "x" in attrs and "y" in attrs:
                items.append(Item("point", [attrs["x"], attrs["y"]], m.start(), src))
            else:
                diag.ignore("wrong_arity", src)
            continue
        idx = sorted({int(k[1:]) for k in attrs if _INDEXED_ATTR.fullmatch(k)})
        for i in idx[:MAX_ITEMS]:
            if f"x{i}" in attrs and f"y{i}" in attrs:
                items.append(Item("point", [attrs[f"x{i}"], attrs[f"y{i}"]], m.start() + i * 1e-7, src))
            else:
                diag.ignore("wrong_arity", f"x{i}/y{i} in {src}")
        if len(idx) > MAX_ITEMS:
            diag.flag("items_capped")
    return items


_TOK = r"[\"']?[^\s,;()\[\]{}<>\"'=:]++[\"']?"
_XY_PAIR = re.compile(
    r"\bx[\"']?\s*+[=:]\s*+(" + _TOK + r")\s*+[,;]?\s*+[\"']?\by[\"']?\s*+[=:]\s*+(" + _TOK + r")", re.I
)
"""``x=…, y=…``. A value stops at ``=`` or ``:`` (so ``x=x=x=…`` cannot make one value swallow the
rest of the reply and be rescanned from every ``x``) and every quantifier is possessive: linear time."""


def read_xy_pairs(text: str, diag: Diagnostics) -> list[Item]:
    """``x=…, y=…`` / ``x: …, y: …`` / ``{"x": …, "y": …}`` pairs (keyword arguments, prose, JSON
    objects), in text order."""
    return [Item("point", [m.group(1), m.group(2)], m.start(), m.group(0)) for m in _XY_PAIR.finditer(text)]


def sort_items(items: Iterable[Item]) -> list[Item]:
    """Items in text order (stable), dropping exact duplicates found by two readers."""
    seen = set()
    out = []
    for it in sorted(items, key=lambda i: i.start):
        key = (it.kind, tuple(it.tokens), it.start)
        if key not in seen:
            seen.add(key)
            out.append(it)
    return out


# --------------------------------------------------------------------------------------------------
# prompt helpers
# --------------------------------------------------------------------------------------------------

_POLITE = r"(?:(?:please|kindly)\s*,?\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?)"
_POINTING_VERB = (
    r"(?:point\s+(?:to(?:wards?)?|at|out)|click(?:\s+(?:on|at))?|tap(?:\s+(?:on|at))?|press(?:\s+on)?"
    r"|pinpoint|locate|find|mark|select|identify|indicate|show(?:\s+me)?|detect)"
)
_LEADING_POINTING_PHRASE = re.compile(rf"^\s*{_POLITE}?{_POINTING_VERB}\b[\s,:]*", re.I)
"""A leading polite/imperative pointing verb phrase: an optional ``please`` / ``kindly`` /
``can|could|would|will you (please)``, then a pointing verb (``point to|at|out|towards``,
``click (on|at)``, ``tap (on|at)``, ``press (on)``, ``pinpoint``, ``locate``, ``find``, ``mark``,
``select``, ``identify``, ``indicate``, ``show (me)``, ``detect``). A polite word alone (``Please place
the cup``) is not stripped: only a pointing verb makes the phrase."""

_GUI_ACTION = re.compile(
    r"^(?:open|close|run|save|delete|add|create|go|switch|enable|disable|toggle|start|stop|play|pause|search"
    r"|type|enter|expand|collapse|hide|view|edit|copy|paste|undo|redo|set|change|move|drag|zoom|scroll"
    r"|download|upload|insert|remove|sort|filter|refresh|reload|submit|send|share|print|exit|quit|cancel"
    r"|confirm|accept|check|uncheck|choose|pick|navigate|launch|install|minimize|maximize|rename|duplicate"
    r"|format|bold|italicize|underline|align|merge|split|apply|clear|reset|connect|log\s+in|sign\s+in"
    r"|log\s+out|sign\s+out|return|back)\b", re.I)
"""A GUI command that is not itself a pointing verb (ScreenSpot-Pro's ``Open settings``, ``Run the
file``): the pointing target is the element one clicks to do it."""

_DESCRIPTION = re.compile(
    r"^(?:there\s+(?:is|are|was|were)|in\s+(?:the|this)\s+(?:image|picture|photo|scene|screenshot)"
    r"|this\s+(?:is|image|picture)|it\s+is|given\b|assume\b|imagine\b|suppose\b)", re.I)
"""A sentence that describes the scene instead of asking for a location (RefSpatial-Bench's
"In the image, there is an item encased within a red rectangle.")."""

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[\"'(\[A-Z])")


def _lower_first(c: str) -> str:
    """First letter lower-cased unless the first word looks like an acronym or a cell name (second
    letter upper-case or a digit: ``E15``, ``OK``)."""
    if c[:1].isupper() and not (c[1:2].isupper() or c[1:2].isdigit()):
        return c[:1].lower() + c[1:]
    return c


def _strip_pointing_verb(sentence: str) -> Optional[str]:
    """The sentence after a leading pointing verb phrase (trailing full stop dropped), or ``None``
    when it does not start with one or nothing follows the verb."""
    m = _LEADING_POINTING_PHRASE.match(sentence)
    if not m:
        return None
    rest = sentence[m.end():].strip().rstrip(".?!").rstrip()
    return rest or None


def clean_core(core: str) -> str:
    """Strip whitespace from a core instruction (keep its wording)."""
    return " ".join(core.split())


def pointing_target(core: str) -> str:
    """What to point at, as a noun phrase that completes ``Point to …`` / ``Locate …`` / ``detect …``
    so the family's prompt reads as one sentence whatever form the benchmark's instruction has.

    The core instruction (whitespace collapsed) is split into sentences, then:

    1. **One sentence opening with a pointing verb phrase** (:data:`_LEADING_POINTING_PHRASE`):
       the rest of it (``"Please point to the free space between the two plates."`` -> ``"the free
       space between the two plates"``; ``"Pinpoint the red apple"`` -> ``"the red apple"``).
    2. **Several sentences, the last one asking for a location** (RefSpatial-Bench's raw prompts):
       that request's target, with the sentences before it as a parenthesis
       (``"In the image, there is a mug. Point to the space left of it."`` -> ``"the space left of it
       (in the image, there is a mug)"``).
    3. **A question** (ends with ``?``; Point-Bench's affordance rows): ``the answer to the question
       "…"`` (``Point to the answer to the question "Which object would you use to cut paper?"``).
    4. **A GUI command** with another verb (:data:`_GUI_ACTION`; ScreenSpot-Pro's ``Open settings``):
       ``the element to click to open settings``.
    5. **A description** of the scene with no request (:data:`_DESCRIPTION`, or several sentences
       none of which asks for a location): ``the target described by "…"``.
    6. Otherwise the text is a noun phrase (``"the mug on the left."``, ``"Save button"``): the
       trailing full stop dropped.

    The first letter is lower-cased unless the first word looks like an acronym or a cell name
    (``E15``, ``OK``). Quoted text (rules 3 and 5) keeps its wording. When nothing would be left after
    the verb (``"Click."``), the instruction is kept as written (lower-cased first letter).
    """
    c = clean_core(core)
    sentences = [x for x in _SENTENCE_END.split(c) if x.strip()]
    if len(sentences) > 1:
        for i in range(len(sentences) - 1, -1, -1):
            rest = _strip_pointing_verb(sentences[i])
            if rest is not None:
                ctx = [_lower_first(x.strip().rstrip(".").rstrip()) for j, x in enumerate(sentences) if j != i]
                return f"{_lower_first(rest)} ({'; '.join(ctx)})"
        return f'the target described by "{c}"'
    rest = _strip_pointing_verb(c)
    if rest is not None:
        return _lower_first(rest)
    if c.endswith("?"):
        return f'the answer to the question "{c}"'
    plain = c.rstrip(".").rstrip()
    if _GUI_ACTION.match(plain) and len(plain.split()) > 1:
        return f"the element to click to {_lower_first(plain)}"
    if _DESCRIPTION.match(plain):
        return f'the target described by "{c}"'
    return _lower_first(plain or c)


def point_to(core: str) -> str:
    """``"Point to <target>"`` with ``<target>`` = :func:`pointing_target` (so an instruction that
    already says "Please point to …", "Point to …", "Locate …", "Click …" is not wrapped a second
    time, and a question or description still reads as one sentence: ``"Please point to the mug."``
    -> ``"Point to the mug"``). Molmo's pointing phrasing ("Point to ...", Molmo model card and
    PixMo-Points)."""
    return f"Point to {pointing_target(core)}"
