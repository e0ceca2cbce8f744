"""A file of a model's replies, read so that nothing in it is lost: every line is either a reply for
one sample id or a listed problem.

The file is JSONL (one JSON object per line) or one JSON list of objects, the two layouts
PointerBench's own scorers read. Each object has an ``id`` (string or integer) and either

* the model's **raw reply**, verbatim: ``text`` (also read under :data:`TEXT_KEYS`), to be parsed in
  a model family's convention; or
* **coordinates** under PointerBench's prediction keys (:data:`COORDINATE_KEYS`: ``point``,
  ``pred``, ``coordinate``, ``prediction``, ``bbox``, ``box``, flat ``x``/``y`` or
  ``x0``/``y0``/``x1``/``y1``), whose frame (pixels, fractions) the caller declares: it is never
  guessed from the size of the numbers.

Optional keys: ``model_input_size`` (``[W, H]`` pixels of the resized image the model saw, for
families that answer in those pixels) and ``prompt`` (the text actually sent). Other keys are kept in
:attr:`Reply.obj` and otherwise ignored.

Problems (:class:`ReplyProblem`, in file order), each with where it is and why:

* ``unparseable``: not JSON, not UTF-8, a line longer than :data:`MAX_LINE_BYTES`, or a string with a
  lone surrogate;
* ``not_an_object``: JSON that is not an object;
* ``no_id`` / ``bad_id``: no ``id``, or one that is not a string or an integer;
* ``duplicate_id``: an id seen before. As PointerBench's scorers do, the **last** object with an id
  is the one used; every earlier one is listed as a duplicate, never silently replaced;
* ``no_reply``: an object with an id but neither a text nor any coordinate key;
* ``bad_model_input_size``: a ``model_input_size`` that is not two positive integers (the reply is
  kept, without it);
* ``bad_coordinates``: a coordinate key holding a boolean (``[true, false]`` would read as pixel
  ``(1, 0)``); none of the object's coordinates is used (its text, if any, still is).

JSON nested too deeply for the parser is an ``unparseable`` problem, never a ``RecursionError``.

Unknown ids (ids not in the benchmark) are found by the caller, who knows the benchmark
(:meth:`RepliesFile.unknown`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pointfail.official import FRAMES

__all__ = [
    "COORDINATE_KEYS",
    "FRAMES",
    "MAX_LINE_BYTES",
    "MAX_LISTED_PROBLEMS",
    "TEXT_KEYS",
    "RepliesError",
    "RepliesFile",
    "Reply",
    "ReplyProblem",
    "read_replies",
]

TEXT_KEYS: tuple[str, ...] = ("text", "raw_text", "response", "raw", "answer")
"""Keys holding the raw reply, first string found wins (``text`` is the documented one; ``raw`` and
``answer`` are where PointerBench's scorer looks for text)."""

COORDINATE_KEYS: tuple[str, ...] = ("point", "pred", "coordinate", "prediction", "bbox", "box",
                                    "x", "y", "x0", "y0", "x1", "y1")
"""PointerBench's prediction keys (its scorers' ``eval.py``; read by
:func:`pointfail.official.prediction_point` and ``prediction_box``)."""


MAX_LINE_BYTES = 8 << 20
"""Bytes of one line (8 MiB); a longer line is an ``unparseable`` problem, read past, not held."""

MAX_LIST_BYTES = 512 << 20
"""Bytes of a file in the JSON-list layout (read whole); a larger one must be JSONL."""

MAX_LISTED_PROBLEMS = 1000
"""Problems listed one by one (in memory, in ``evaluation.json``); the rest are counted by kind."""

EXCERPT_CHARS = 160
"""Characters of a problem line kept in :attr:`ReplyProblem.excerpt`."""


class RepliesError(ValueError):
    """The file itself cannot be read (missing, a directory, unreadable); problems inside it are
    :class:`ReplyProblem` entries instead."""


@dataclass(frozen=True)
class ReplyProblem:
    """One line (or list item) of the file that is not used as given.

    Attributes:
        where: ``"line 12"`` (JSONL) or ``"item 3"`` (JSON list), 1-based.
        kind: ``unparseable``, ``not_an_object``, ``no_id``, ``bad_id``, ``duplicate_id``, ``no_reply``, ``bad_coordinates``,
            ``bad_model_input_size``, or (from callers) ``unknown_id`` and others they add.
        sample_id: the id when there is one.
        detail: why, in words.
        excerpt: the start of the line as written (at most :data:`EXCERPT_CHARS` characters).
    """

    where: str
    kind: str
    detail: str
    sample_id: Optional[str] = None
    excerpt: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"where": self.where, "kind": self.kind, "sample_id": self.sample_id, "detail": self.detail,
                "excerpt": self.excerpt}

    def place(self) -> tuple[int, int]:
        """Sort key: lines before list items before entries with no place (``-``), each by number."""
        kind, _, n = self.where.partition(" ")
        return ({"line": 0, "item": 1}.get(kind, 2), int(n) if n.isdigit() else 0)

    def __str__(self) -> str:
        sid = f" id {self.sample_id!r}" if self.sample_id is not None else ""
        return f"{self.where}{sid}: {self.kind}: {self.detail}"


@dataclass
class Reply:
    """One usable object of the file.

    Attributes:
        sample_id: the id, as a string.
        where: where it is in the file (``line N`` / ``item N``).
        text: the raw reply (``None`` when the object holds coordinates only).
        coordinates: the object's PointerBench prediction keys and values, verbatim (empty when none).
        model_input_size: ``[W, H]`` pixels, or ``None``.
        prompt: the prompt the object says was sent, or ``None``.
        obj: the whole object.
    """

    sample_id: str
    where: str
    text: Optional[str]
    coordinates: dict[str, Any]
    model_input_size: Optional[list[int]]
    prompt: Optional[str]
    obj: dict[str, Any]


@dataclass
class RepliesFile:
    """What :func:`read_replies` found.

    Attributes:
        path: the file.
        layout: ``jsonl`` or ``json_list``.
        entries: non-blank lines (JSONL) or list items (JSON list).
        replies: usable replies by id (the last object per id), in file order of their last object.
        problems: the first :data:`MAX_LISTED_PROBLEMS` entries not used as given, in file order.
        left_off: problems past those, counted by kind (never listed, never held).
    """

    path: Path
    layout: str
    entries: int = 0
    replies: dict[str, Reply] = field(default_factory=dict)
    problems: list[ReplyProblem] = field(default_factory=list)
    left_off: dict[str, int] = field(default_factory=dict)

    def add(self, problem: ReplyProblem) -> None:
        """List ``problem``, or, past :data:`MAX_LISTED_PROBLEMS`, only count it in ``left_off`` by
        kind (memory stays bounded however many lines are bad)."""
        if len(self.problems) < MAX_LISTED_PROBLEMS:
            self.problems.append(problem)
        else:
            self.left_off[problem.kind] = self.left_off.get(problem.kind, 0) + 1

    def unknown(self, known_ids: set[str] | frozenset[str]) -> list[ReplyProblem]:
        """An ``unknown_id`` problem for each reply whose id is not in ``known_ids`` (file order)."""
        return [ReplyProblem(r.where, "unknown_id", "no sample with this id in the benchmark", r.sample_id,
                             _excerpt(json.dumps(r.obj, ensure_ascii=False)))
                for r in self.replies.values() if r.sample_id not in known_ids]

    def counts(self) -> dict[str, int]:
        """``entries``, ``replies`` (usable ids), ``with_text``, ``with_coordinates_only`` and one count per
        problem kind, sorted by name."""
        out = {"entries": self.entries, "replies": len(self.replies),
               "with_text": sum(1 for r in self.replies.values() if r.text is not None),
               "with_coordinates_only": sum(1 for r in self.replies.values() if r.text is None)}
        for p in self.problems:
            out[p.kind] = out.get(p.kind, 0) + 1
        for kind, n in self.left_off.items():
            out[kind] = out.get(kind, 0) + n
        return dict(sorted(out.items()))


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _valid_unicode(value: Any) -> bool:
    """Whether every string in a JSON value encodes to UTF-8 (a lone surrogate from ``\\ud800`` does not)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        return False
    return True


def _object_problem(where: str, obj: Any, excerpt: str) -> Optional[ReplyProblem]:
    """Why a parsed line cannot be a reply at all: not a JSON object, a lone surrogate in a string, no
    ``"id"``, or an id that is neither a string nor an integer; ``None`` when it can be."""
    if not isinstance(obj, dict):
        return ReplyProblem(where, "not_an_object", f"expected a JSON object, got {type(obj).__name__}",
                            excerpt=excerpt)
    if not _valid_unicode(obj):
        return ReplyProblem(where, "unparseable", "a string holds a lone surrogate (not valid Unicode)",
                            excerpt=excerpt.encode("utf-8", "replace").decode("utf-8"))
    if "id" not in obj:
        return ReplyProblem(where, "no_id", "the object has no \"id\"", excerpt=excerpt)
    raw_id = obj["id"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        return ReplyProblem(where, "bad_id", f"\"id\" must be a string or an integer, got "
                            f"{type(raw_id).__name__}", excerpt=excerpt)
    return None


def _model_input_size(rf: RepliesFile, where: str, obj: dict[str, Any], sid: str, excerpt: str) -> Optional[Any]:
    """The reply's ``model_input_size`` when it is ``[W, H]``, two positive integers; otherwise a
    problem is added and the reply is used without it (``None``)."""
    mis = obj.get("model_input_size")
    if mis is not None:
        ok = (isinstance(mis, list) and len(mis) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in mis))
        if not ok:
            rf.add(ReplyProblem(where, "bad_model_input_size", "model_input_size must be [W, H], "
                                            "two positive integers; the reply is used without it", sid, excerpt))
            mis = None
    return mis


def _classify(rf: RepliesFile, where: str, obj: Any, raw: str) -> None:
    excerpt = _excerpt(raw.strip())
    problem = _object_problem(where, obj, excerpt)
    if problem is not None:
        rf.add(problem)
        return
    raw_id = obj["id"]
    sid = str(raw_id)
    text = next((obj[k] for k in TEXT_KEYS if isinstance(obj.get(k), str)), None)
    coords = {k: obj[k] for k in COORDINATE_KEYS if k in obj}
    booleans = sorted(k for k, v in coords.items()
                      if isinstance(v, bool) or (isinstance(v, list) and any(isinstance(x, bool) for x in v)))
    if booleans:  # JSON true/false would read as 1/0 through float(): never a coordinate here
        rf.add(ReplyProblem(where, "bad_coordinates", f"booleans are not coordinates "
                                        f"({', '.join(booleans)}); no coordinate of this object is used", sid,
                                        excerpt))
        coords = {}
        if text is None:
            return
    if text is None and not coords:
        rf.add(ReplyProblem(where, "no_reply", f"neither a text ({', '.join(TEXT_KEYS)}) nor "
                                        f"coordinates ({', '.join(COORDINATE_KEYS)})", sid, excerpt))
        return
    mis = _model_input_size(rf, where, obj, sid, excerpt)
    prompt = obj.get("prompt") if isinstance(obj.get("prompt"), str) else None
    earlier = rf.replies.pop(sid, None)
    if earlier is not None:
        rf.add(ReplyProblem(earlier.where, "duplicate_id", f"the id appears again at {where}; "
                                        "the last one is used (as PointerBench's scorer does)", sid,
                                        _excerpt(json.dumps(earlier.obj, ensure_ascii=False))))
    rf.replies[sid] = Reply(sid, where, text, coords, list(mis) if mis else None, prompt, obj)


def read_replies(path: str | Path) -> RepliesFile:
    """Read a replies file (layouts and problems in the module docstring).

    Args:
        path: a JSONL file, or a file holding one JSON list of objects.

    Returns:
        :class:`RepliesFile`; ``problems`` are sorted by their place in the file except
        ``duplicate_id`` entries, which are listed where the later object was found.

    Raises:
        RepliesError: the file does not exist, is not a regular file, or cannot be read.
    """
    p = Path(path)
    if not p.is_file():
        raise RepliesError(f"replies file {p} does not exist or is not a file")
    try:
        with open(p, "rb") as f:
            head = f.read(4096).lstrip()
            size = p.stat().st_size
            f.seek(0)
            if head.startswith(b"[") and size <= MAX_LIST_BYTES:
                data = f.read()
                try:
                    items = json.loads(data.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                    items = None  # not one JSON list after all (or nested too deeply): read it line by line
                if isinstance(items, list):
                    rf = RepliesFile(p, "json_list")
                    for i, obj in enumerate(items, 1):
                        rf.entries += 1
                        _classify(rf, f"item {i}", obj, json.dumps(obj, ensure_ascii=False)[:EXCERPT_CHARS * 2])
                    return rf
                f.seek(0)
            return _read_jsonl(p, f)
    except OSError as e:
        raise RepliesError(f"cannot read replies file {p}: {e}") from None


def _read_jsonl(p: Path, f: Any) -> RepliesFile:
    rf = RepliesFile(p, "jsonl")
    n = 0
    while True:
        chunk = f.readline(MAX_LINE_BYTES + 1)
        if not chunk:
            break
        n += 1
        where = f"line {n}"
        if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
            while chunk and not chunk.endswith(b"\n"):  # read past the rest of the line, keeping nothing
                chunk = f.readline(1 << 20)
            rf.entries += 1
            rf.add(ReplyProblem(where, "unparseable", f"line longer than {MAX_LINE_BYTES} bytes"))
            continue
        if not chunk.strip():
            continue
        rf.entries += 1
        try:
            line = chunk.decode("utf-8")
        except UnicodeDecodeError as e:
            rf.add(ReplyProblem(where, "unparseable", f"not UTF-8 ({e.reason} at byte {e.start})",
                                            excerpt=_excerpt(chunk.decode("utf-8", "replace").strip())))
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            rf.add(ReplyProblem(where, "unparseable", f"not JSON: {e.msg} (column {e.colno})",
                                            excerpt=_excerpt(line.strip())))
            continue
        except RecursionError:
            rf.add(ReplyProblem(where, "unparseable", "JSON nested too deeply to read",
                                            excerpt=_excerpt(line.strip())))
            continue
        _classify(rf, where, obj, line)
    return rf
