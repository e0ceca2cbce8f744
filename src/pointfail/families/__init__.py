"""Model families: one file per family, each declaring its prompt phrasing, its output parser and its
coordinate frame (``shared/DESIGN.md``, "Layout"; issue 2, "Model families").

Public API::

    get_family(name) -> Family          # KeyError listing the known names
    list_families() -> list[Family]     # sorted by name

Adding a family is one file ``families/<name>.py`` that defines ``FAMILY = <Family subclass>()``;
the registry discovers it. Files starting with ``_`` are helpers.

Parsing pipeline (:meth:`Family.parse`), the same for every family; each step is a named rule:

1. NFKC normalization (``fullwidth``), U+2212 as minus.
2. Reasoning: only text after a closed ``</think>`` counts; an unclosed ``<think>`` is
   ``no_prediction`` with reason ``truncated``. ``<answer>…</answer>`` keeps its content.
3. Markdown fences: only their content counts (``fenced``).
4. The family's readers (:meth:`Family.extract`) find coordinate groups in its own syntax; if they
   find none, the generic ``x=…, y=…`` reader is tried (``xy_pairs``).
5. Each group's numbers are read strictly (signs, decimals, exponents, ``512px``); NaN, infinities
   and malformed numbers drop that group with the reason (``non_finite_number``,
   ``malformed_number``) recorded in ``ignored`` — never a crash, never a point at (0, 0).
6. Numbers are reordered from the frame's declared order (``yx`` for Gemini, PaliGemma) and converted
   with the family's :class:`~pointfail.frames.Frame`, never guessed from their size. Negative and
   out-of-image values are kept (flag ``out_of_image``), not clamped.
7. Boxes: inverted corners are sorted (``inverted_box``); a zero-area box (no width or no height)
   is a point at its centre (``zero_area_box``).
8. **Boxes and points across tasks** (a decision, documented here): for a *point* task, every box
   answer also contributes its centre as a point, at its place in the reply (flag ``box_center``);
   for a *box* task, points never become boxes (a point-only answer to a box task has no box; the
   points are still reported, and scoring decides what that answer gets).
9. A reply that ends mid-structure is flagged ``truncated``; the complete points before the cut are
   kept. With nothing parsed, ``reason`` says why: the first number error, else ``truncated``, else
   ``declined`` (an explicit decline in the family's convention, :mod:`pointfail.families._decline`),
   else ``empty`` or ``no_coordinates``.
10. Bounds (``pointfail.limits``; issue 12): only the first ``MAX_REPLY_CHARS`` characters of a reply
    are read (flag ``reply_capped``), only the first ``MAX_ITEMS`` coordinate groups are kept (flag
    ``items_capped``), at most 50 ignored fragments are listed (flag ``ignored_capped``), and a group
    whose converted value is not finite or lies beyond ``MAX_ABS_UNIT_COORD`` is dropped
    (``coordinate_overflow``). Every reader runs in time linear in the reply (possessive quantifiers,
    :func:`~pointfail.families._text.tag_spans`; measured in ``bench/parse.py``).

All points are kept in the order written; the first is the primary point.
"""

from __future__ import annotations

import functools
import math
import re
from typing import ClassVar, Optional

from pointfail.families._decline import reads_as_decline
from pointfail.families._text import (
    Diagnostics,
    Item,
    NumberError,
    looks_truncated,
    normalize,
    read_number,
    read_xy_pairs,
    sort_items,
    strip_fences,
    strip_reasoning,
)
from pointfail.discovery import Registry
from pointfail.frames import Frame, FrameError, check_size
from pointfail.geometry.shapes import box_center
from pointfail.limits import MAX_ITEMS, MAX_REPLY_CHARS
from pointfail.records import ParseResult

MAX_ABS_UNIT_COORD = 1e6
"""A converted coordinate further than a million image sides from the image (or not finite after the
frame conversion overflowed, e.g. ``1e308`` percent) is not a location: its group is dropped with the
reason ``coordinate_overflow``, so no distance ever overflows and every record can be written."""

__all__ = ["Family", "family_key", "get_family", "list_families", "FrameError"]

Size = tuple[float, float]


def _place(vals: list[float], task: str, diag: Diagnostics, points: list[list[float]],
           boxes: list[list[float]]) -> None:
    """Append one converted group: a point, or a box (sorted when inverted; its centre as a point when
    it has no area, and also as the point of a point task)."""
    if len(vals) == 2:
        points.append(vals)
        return
    x0, y0, x1, y1 = vals
    if x0 > x1 or y0 > y1:
        diag.flag("inverted_box")
        x0, x1 = min(x0, x1), max(x0, x1)
        y0, y1 = min(y0, y1), max(y0, y1)
    centre = list(box_center((x0, y0, x1, y1)))
    if x0 == x1 or y0 == y1:
        diag.flag("zero_area_box")
        points.append(centre)
        return
    boxes.append([x0, y0, x1, y1])
    if task == "point":
        diag.flag("box_center")
        points.append(centre)


def _offer_raw(frame: Frame, nums: list[float], raw_sink: list[list[float]]) -> None:
    """Append to ``raw_sink`` the group's written point (x/y order applied, ``x / 1.0`` as the identity
    frame's ``to_unit`` gives it; a box's centre, corners sorted as :func:`_place` sorts them) when every
    written number is finite and within ``MAX_ABS_UNIT_COORD``."""
    vals: list[float] = []
    for i in range(0, len(nums), 2):
        x, y = frame.as_xy(nums[i], nums[i + 1])
        vals.extend((x / 1.0, y / 1.0))
    if not all(math.isfinite(v) and abs(v) <= MAX_ABS_UNIT_COORD for v in vals):
        return
    if len(vals) == 2:
        raw_sink.append(vals)
        return
    x0, y0, x1, y1 = vals
    raw_sink.append(list(box_center((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))))


def _flag_out_of_image(points: list[list[float]], boxes: list[list[float]], diag: Diagnostics) -> None:
    """Flag ``out_of_image`` when any point or box corner lies outside the unit square."""
    for p in points + [b[:2] for b in boxes] + [b[2:] for b in boxes]:
        if not (0.0 <= p[0] <= 1.0 and 0.0 <= p[1] <= 1.0):
            diag.flag("out_of_image")
            break


class Family:
    """A model family: native prompt phrasing, output parser and coordinate frame.

    Subclasses set the class attributes and implement :meth:`extract` (find coordinate groups in the
    family's syntax) and :meth:`format_point`/:meth:`format_box` (write that syntax, for tests and
    generators). Instances are stateless; :func:`get_family` returns a shared one.

    Attributes:
        name: registry name (``"molmo"``, ``"qwen2_5_vl"``, …).
        frame: the declared coordinate frame.
        checkpoints: hub ids of the checkpoints this family covers (documentation; the study file
            names the one used).
        backend: module that loads and runs the model inside its image (``pointfail.running.backends.<name>``),
            ``None`` for parse-only families (API models, served models).
        needs_weights: whether running the family's backend needs a checkpoint on disk (``False`` for
            the weight-free baselines ``center`` and ``ocr``); the runner checks weights only for
            families that need them.
        point_prompt / box_prompt: templates with ``{core}`` (the core instruction as given,
            whitespace collapsed), ``{target}`` (:func:`~pointfail.families._text.pointing_target`:
            the core with a leading polite/imperative pointing verb phrase removed, for templates
            that supply their own verb, e.g. ``Locate {target}``) or ``{point_to}``
            (``"Point to {target}"``); replaced literally, not with ``str.format``.
        system_prompt: a system message to send with the prompt, or ``None``.
        decimals: digits after the decimal point the model writes (precision of :meth:`format_point`).
        decline_prompt / decline_answer / declines_by_silence: how the family is told to decline and
            how it declines when the referent may be absent (:mod:`pointfail.families._decline`).
        resize: for ``pixels_resized`` frames, the ``smart_resize`` settings (``factor``,
            ``min_pixels``, ``max_pixels``) the family's checkpoints are run with, as their authors
            give them; :meth:`expected_model_input_size` computes with it. ``None`` for other frames.
    """

    name: ClassVar[str] = ""
    frame: ClassVar[Frame]
    checkpoints: ClassVar[tuple[str, ...]] = ()
    backend: ClassVar[Optional[str]] = None
    needs_weights: ClassVar[bool] = True
    point_prompt: ClassVar[str] = "{core}"
    box_prompt: ClassVar[str] = "{core}"
    system_prompt: ClassVar[Optional[str]] = None
    decimals: ClassVar[int] = 0
    resize: ClassVar[Optional[dict]] = None
    decline_prompt: ClassVar[Optional[str]] = 'If there is no such target in the image, answer exactly: not present.'
    decline_answer: ClassVar[str] = "not present"
    declines_by_silence: ClassVar[bool] = False
    lineage: ClassVar[tuple[str, ...]] = ()
    """Model lines the family's checkpoints derive from (the developers' line and the language models
    they are built on, lower case), for the out-of-family judge check (:mod:`pointfail.running.judges.lineage`);
    empty for baselines that are no model."""
    image_requirements: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {}
    """``{package: (why, checkpoints)}``: a package the named checkpoints need in the family's image
    (their own remote code imports it); a run refuses them before any work on an image variant whose
    lock lacks it."""

    # ---------------------------------------------------------------- prompts

    def prompt(self, core_instruction: str, task: str = "point", absent_possible: bool = False) -> str:
        """The instruction wrapped in the family's native phrasing for ``task`` (``"point"`` or
        ``"box"``); with ``absent_possible`` (the referent may not be in the image) the family's
        :attr:`decline_prompt` follows on the same line, when it has one. Raises ``ValueError`` for
        another task."""
        from pointfail.families._text import clean_core, pointing_target

        if task not in ("point", "box"):
            raise ValueError(f"task must be 'point' or 'box', got {task!r}")
        core = clean_core(core_instruction)
        tpl = self.point_prompt if task == "point" else self.box_prompt
        target = pointing_target(core)
        text = tpl.replace("{point_to}", f"Point to {target}").replace("{target}", target).replace("{core}", core)
        if absent_possible and self.decline_prompt:
            sep = " " if text.rstrip()[-1:] in (".", "?", "!", ":") else ". "
            text = f"{text.rstrip()}{sep}{self.decline_prompt}"
        return text

    # ---------------------------------------------------------------- parsing

    def extract(self, text: str, diag: Diagnostics) -> list[Item]:
        """Find the coordinate groups written in this family's syntax (subclasses)."""
        raise NotImplementedError

    def convert(self, item: Item, numbers: list[float], image_size, model_input_size) -> list[float]:
        """Convert one item's numbers (in written order) to normalized ``[x, y]`` or
        ``[x0, y0, x1, y1]`` (corners unsorted). Default: reorder each pair with the frame's order and
        convert with :meth:`Frame.to_unit`. Kosmos-2 overrides it."""
        out: list[float] = []
        for i in range(0, len(numbers), 2):
            x, y = self.frame.as_xy(numbers[i], numbers[i + 1])
            out.extend(self.frame.to_unit(x, y, image_size, model_input_size))
        return out

    def parse(
        self,
        text: Optional[str],
        image_size: Size,
        model_input_size: Optional[Size] = None,
        task: str = "point",
        *,
        raw_sink: Optional[list[list[float]]] = None,
    ) -> ParseResult:
        """Parse a model reply into normalized points and boxes (see the module docstring for rules).

        Args:
            text: the raw model text (``None`` is treated as empty).
            image_size: ``(W, H)`` of the original image in pixels.
            model_input_size: ``(Wr, Hr)`` the processor produced; required for ``pixels_resized``.
            task: ``"point"`` or ``"box"``.
            raw_sink: when a list, the parse also appends to it the primary point as the model wrote
                it (``[x, y]`` in the frame's numbers, x/y order applied, no conversion; a box's centre)
                of the first group whose numbers read and whose written numbers are finite and within
                ``MAX_ABS_UNIT_COORD``: what a parse under the identity frame would give as its first
                point (frame-compliance readings, ``scoring.frame_readings``; default ``convert`` only).

        Returns:
            :class:`~pointfail.records.ParseResult` with points/boxes in the unit square, origin top-left,
            the frame name, flags, ignored fragments and, when nothing was parsed, the reason.

        Raises:
            FrameError: the caller did not supply a size the frame needs (``model_input_size`` for a
                resized-input frame) or a size is not positive. Never raised because of the text.
            ValueError: ``task`` is not ``point`` or ``box``.
        """
        self._check_call(task, image_size, model_input_size)
        diag = Diagnostics()
        result = functools.partial(ParseResult, family=self.name, frame=self.frame.name)
        if not text or not text.strip():
            if self.declines_by_silence:
                return result(flags=["declined"], reason="declined")
            return result(reason="empty")
        answer = self._answer(text, diag)
        if answer is None:
            return result(flags=diag.flags, reason="truncated", truncated=True)
        if not answer.strip():
            if self.declines_by_silence:
                diag.flag("declined")
                return result(flags=diag.flags, ignored=diag.ignored, reason="declined")
            return result(flags=diag.flags, ignored=diag.ignored, reason="empty")
        items = self._items(answer, diag)
        truncated = looks_truncated(answer)
        if truncated:
            diag.flag("truncated")
        points, boxes = self._coordinates(items, diag, image_size, model_input_size, task, raw_sink)
        _flag_out_of_image(points, boxes, diag)
        reason = self._empty_reason(answer, truncated, diag) if not points and not boxes else None
        return result(
            points=points,
            boxes=boxes,
            flags=diag.flags,
            ignored=diag.ignored,
            reason=reason,
            truncated=truncated,
        )

    def _check_call(self, task: str, image_size: Size, model_input_size: Optional[Size]) -> None:
        """The caller's errors (:meth:`parse`'s ``Raises``), checked before the text is read so they never
        depend on the reply."""
        if task not in ("point", "box"):
            raise ValueError(f"task must be 'point' or 'box', got {task!r}")
        self.frame.to_unit(0.0, 0.0, image_size, model_input_size)
        if self.frame.kind != "pixels_original" and image_size is not None:
            check_size(image_size, "image_size")

    def _coordinates(self, items: list[Item], diag: Diagnostics, image_size: Size,
                     model_input_size: Optional[Size], task: str,
                     raw_sink: Optional[list[list[float]]] = None) -> tuple[list[list[float]], list[list[float]]]:
        """Step 5: each group's numbers read and converted to the unit square; ``(points, boxes)``."""
        points: list[list[float]] = []
        boxes: list[list[float]] = []
        for it in items:
            vals = self._unit_values(it, diag, image_size, model_input_size, raw_sink)
            if vals is not None:
                _place(vals, task, diag, points, boxes)
        return points, boxes

    def _unit_values(self, it: Item, diag: Diagnostics, image_size: Size,
                     model_input_size: Optional[Size],
                     raw_sink: Optional[list[list[float]]] = None) -> Optional[list[float]]:
        """One group in the unit square, or ``None`` (recorded as ignored) when a number does not read or
        a coordinate overflows; the written point offered to ``raw_sink`` (:meth:`parse`) first."""
        try:
            nums = [read_number(t, diag) for t in it.tokens]
        except NumberError as e:
            diag.ignore(e.reason, it.source)
            diag.bad_reasons.append(e.reason)
            return None
        if raw_sink is not None and not raw_sink:
            _offer_raw(self.frame, nums, raw_sink)
        vals = self.convert(it, nums, image_size, model_input_size)
        if not all(math.isfinite(v) and abs(v) <= MAX_ABS_UNIT_COORD for v in vals):
            diag.ignore("coordinate_overflow", it.source)
            diag.bad_reasons.append("coordinate_overflow")
            return None
        return vals

    def _empty_reason(self, answer: str, truncated: bool, diag: Diagnostics) -> str:
        """Why a reply with an answer gave no point and no box."""
        if diag.bad_reasons:
            return diag.bad_reasons[0]
        if truncated:
            return "truncated"
        if self.declines_by_silence or reads_as_decline(answer):
            diag.flag("declined")
            return "declined"
        return "no_coordinates"

    def _answer(self, text: str, diag: Diagnostics) -> Optional[str]:
        """Steps 1–3 of the pipeline: the text the readers see, ``None`` when the reply was cut
        inside its reasoning. Only the first ``MAX_REPLY_CHARS`` characters are read (flag
        ``reply_capped``)."""
        if len(text) > MAX_REPLY_CHARS:
            text = text[:MAX_REPLY_CHARS]
            diag.flag("reply_capped")
        answer = strip_reasoning(normalize(text, diag), diag)
        return None if answer is None else strip_fences(answer, diag)

    def _items(self, answer: str, diag: Diagnostics) -> list[Item]:
        """Step 4: the coordinate groups in the family's syntax, else the generic ``x=…, y=…`` pairs;
        the first ``MAX_ITEMS`` of them (flag ``items_capped``)."""
        items = sort_items(self.extract(answer, diag))
        if not items:
            items = read_xy_pairs(answer, diag)
            if items:
                diag.flag("xy_pairs")
        if len(items) > MAX_ITEMS:
            items = items[:MAX_ITEMS]
            diag.flag("items_capped")
        return items

    def spans(self, text: Optional[str]) -> list[tuple[int, int]]:
        """Where in ``text`` the coordinate groups :meth:`parse` reads were written, for display:
        ``[(start, end), ...]`` character offsets into ``text``, in reply order, one per group
        (groups whose numbers :meth:`parse` then rejects included).

        The readers run on the normalized answer (pipeline steps 1–4); each group's source fragment
        is located in ``text`` searching backwards from the end (the answer follows any reasoning). A
        fragment that normalization changed (full-width digits) is not found verbatim and gets no
        span. Never raises on model text."""
        if not text or not text.strip():
            return []
        diag = Diagnostics()
        answer = self._answer(text, diag)
        if answer is None or not answer.strip():
            return []
        out: list[tuple[int, int]] = []
        end = len(text)
        for it in reversed(self._items(answer, diag)):
            frag = it.source
            if not frag:
                continue
            at = text.rfind(frag, 0, end)
            if at < 0:
                continue
            out.append((at, at + len(frag)))
            end = at
        return out[::-1]

    # ---------------------------------------------------------------- writing (tests, generators)

    def _frame_values(self, x: float, y: float, image_size, model_input_size) -> tuple[float, float]:
        fx, fy = self.frame.from_unit(x, y, image_size, model_input_size)
        if self.frame.kind in ("bins", "patch_grid", "bin_index"):
            return int(fx), int(fy)
        if self.decimals == 0:
            return int(round(fx)), int(round(fy))
        return round(fx, self.decimals), round(fy, self.decimals)

    def _box_values(self, x0: float, y0: float, x1: float, y1: float, image_size, model_input_size):
        """The normalized box's corners in the frame at the family's precision: ``(x0, y0, x1, y1)``
        as :meth:`_frame_values` writes each corner (axis order is left to the caller)."""
        a, b = self._frame_values(x0, y0, image_size, model_input_size)
        c, d = self._frame_values(x1, y1, image_size, model_input_size)
        return a, b, c, d

    def _num(self, v) -> str:
        if isinstance(v, int):
            return str(v)
        return f"{v:.{self.decimals}f}"

    def format_point(self, x: float, y: float, image_size: Size, model_input_size: Optional[Size] = None) -> str:
        """Write the normalized point ``(x, y)`` in this family's syntax at its real precision."""
        raise NotImplementedError

    def format_decline(self) -> str:
        """Write the family's decline (the answer its :attr:`decline_prompt` asks for; the empty reply
        for families that decline by silence)."""
        return "" if self.declines_by_silence else self.decline_answer

    def format_box(
        self, x0: float, y0: float, x1: float, y1: float, image_size: Size, model_input_size: Optional[Size] = None
    ) -> str:
        """Write the normalized box in this family's syntax at its real precision. Families that
        cannot answer with a box raise ``NotImplementedError``."""
        raise NotImplementedError

    def tolerance(self, image_size: Size, model_input_size: Optional[Size] = None) -> tuple[float, float]:
        """Largest normalized error ``(tx, ty)`` that formatting at the family's precision and
        parsing back can introduce: half a unit of the last written digit, or half a bin/patch."""
        qx, qy = self.frame.quantum(image_size, model_input_size)
        if self.frame.kind in ("bins", "patch_grid", "bin_index"):
            return qx / 2.0, qy / 2.0
        step = 10.0 ** (-self.decimals)
        return qx * step / 2.0, qy * step / 2.0

    def expected_model_input_size(self, image_size: Size) -> tuple[int, int]:
        """The model-input size ``(Wr, Hr)`` in pixels that the family's processor makes for an image of
        ``image_size = (W, H)`` pixels: :func:`~pointfail.frames.smart_resize` with :attr:`resize`.
        A prediction: parsing uses the size the worker or server *recorded* for the sample; this is
        for building prompts that state the resolution and for checking a recorded size.

        Raises:
            ValueError: the family declares no :attr:`resize` (its frame is not ``pixels_resized``),
                or the size is not positive integers.
        """
        from pointfail.frames import smart_resize

        if self.resize is None:
            raise ValueError(f"family {self.name!r} declares no resize setting (frame {self.frame.kind!r})")
        w, h = image_size
        rh, rw = smart_resize(int(h), int(w), **self.resize)
        return rw, rh

    @property
    def can_box(self) -> bool:
        """Whether the family's syntax can express a box."""
        return type(self).format_box is not Family.format_box

    def __repr__(self) -> str:
        return f"<Family {self.name} frame={self.frame.name}>"


# ---------------------------------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------------------------------

_REGISTRY: Registry[Family] = Registry(__name__, "FAMILY", Family)


def _load() -> dict[str, Family]:
    return _REGISTRY.get()


def refresh() -> None:
    """Forget the discovered families, so the next lookup scans ``families.__path__`` again (after a
    family file was added while the process runs: the throwaway-family test)."""
    global _ALIASES
    _REGISTRY.refresh()
    _ALIASES = None


def family_key(name: str) -> str:
    """The spelling-insensitive form of a family name: lower case, every character that is not a
    letter or a digit removed. ``Qwen2.5-VL``, ``qwen2.5-vl``, ``QWEN2_5_VL`` and ``qwen2_5_vl`` all
    give ``qwen25vl``; ``UI-TARS-1.5`` and ``ui_tars_1_5`` give ``uitars15``."""
    return re.sub(r"[^a-z0-9]+", "", name.lower())


_ALIASES: Optional[dict[str, str]] = None


def _aliases() -> dict[str, str]:
    """Alias -> registry name: each family's :func:`family_key`, and each of its checkpoint ids in
    lower case, with and without the organisation (``qwen/qwen2.5-vl-3b-instruct``,
    ``qwen2.5-vl-3b-instruct``).

    Raises:
        RuntimeError: two families share an alias (a registry defect, found when the registry loads).
    """
    global _ALIASES
    if _ALIASES is None:
        out: dict[str, str] = {}

        def add(alias: str, name: str) -> None:
            if out.setdefault(alias, name) != name:
                raise RuntimeError(f"families {out[alias]!r} and {name!r} share the alias {alias!r}")

        for fam in _load().values():
            add(family_key(fam.name), fam.name)
            for ckpt in fam.checkpoints:
                add(ckpt.lower(), fam.name)
                add(ckpt.lower().rsplit("/", 1)[-1], fam.name)
        _ALIASES = out
    return _ALIASES


def get_family(name: str) -> Family:
    """The registered family called ``name``, in any common spelling.

    The alias rule (the one place it lives): ``name`` is looked up as given, then by
    :func:`family_key` (case, ``-``, ``.``, ``_`` and spaces do not matter: ``Qwen2.5-VL`` is
    ``qwen2_5_vl``), then as a checkpoint id listed by a family, case-insensitive, with or without
    the organisation (``Qwen/Qwen2.5-VL-3B-Instruct`` or ``qwen2.5-vl-3b-instruct`` is
    ``qwen2_5_vl``).

    Raises:
        KeyError: unknown name; the message lists every known family.
    """
    # the file name is the key (pointfail.discovery): a name in any spelling enters its family's module only
    fam = _REGISTRY.lookup(name) if name in _REGISTRY.module_names() else None
    if fam is not None:
        return fam
    key = family_key(name)
    module = next((m for m in _REGISTRY.module_names() if family_key(m) == key), None)
    fam = _REGISTRY.lookup(module) if module is not None else None
    if fam is not None and family_key(fam.name) == key:
        return fam
    reg = _load()
    if name in reg:
        return reg[name]
    aliases = _aliases()
    for alias in (family_key(name), name.strip().lower()):
        if alias in aliases:
            return reg[aliases[alias]]
    raise KeyError(f"unknown family {name!r}; known families: {', '.join(sorted(reg))} "
                   "(case, '-', '.' and '_' do not matter; checkpoint ids are accepted too)")


def list_families() -> list[Family]:
    """Every registered family, sorted by name."""
    reg = _load()
    return [reg[k] for k in sorted(reg)]
