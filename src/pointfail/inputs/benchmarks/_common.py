"""Helpers shared by the benchmark loaders: the error type, JSON readers that name the file and line,
image and mask inspection, and file look-up by Unicode-normalized (NFC) name.

Nothing here imports torch or transformers; Pillow and numpy are imported inside the functions that
need them.
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from collections.abc import Container, Iterable
from pathlib import Path
from typing import Any, Optional

from pointfail.limits import MAX_IMAGE_BYTES
from pointfail.records import ImageRef, boxes_sha256
from pointfail.safeio import UnsafeFileError, open_binary

__all__ = [
    "BenchmarkError",
    "Problems",
    "read_json",
    "read_jsonl",
    "nfc",
    "NfcIndex",
    "image_ref",
    "warn_mask_problems",
    "boxes_sha256",
    "check_box",
]

_MAX_LISTED = 20


class BenchmarkError(ValueError):
    """A benchmark directory that is missing files or whose files disagree with each other.

    Attributes:
        benchmark: the benchmark name (``point-bench``, ``pointerbench-text``, ...).
        problems: one human-readable line per problem, each naming the file (and row) at fault.
        files: the paths named by the problems (missing images for :func:`require_images`).

    The message lists the first 20 problems and how many more there are.
    """

    def __init__(self, benchmark: str, problems: Iterable[str], files: Iterable[str] = (),
                 hint: str | None = None):
        self.benchmark = benchmark
        self.problems = list(problems)
        self.files = list(files)
        self.hint = hint
        shown = self.problems[:_MAX_LISTED]
        more = len(self.problems) - len(shown)
        lines = "\n".join(f"  - {p}" for p in shown)
        tail = f"\n  ... and {more} more" if more > 0 else ""
        end = f"\n{hint}" if hint else ""
        super().__init__(f"{benchmark}: {len(self.problems)} problem(s):\n{lines}{tail}{end}")


class Problems:
    """Collects every problem found while loading, so one :class:`BenchmarkError` lists them all
    instead of stopping at the first."""

    def __init__(self, benchmark: str):
        self.benchmark = benchmark
        self.items: list[str] = []
        self.files: list[str] = []

    def add(self, message: str, path: str | Path | None = None) -> None:
        """Record one problem; ``path`` (if given) is added to :attr:`BenchmarkError.files`."""
        self.items.append(message)
        if path is not None:
            self.files.append(str(path))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        """Raise :class:`BenchmarkError` with every collected problem, if there is one."""
        if self.items:
            raise BenchmarkError(self.benchmark, self.items, self.files)


def read_json(path: Path, benchmark: str) -> Any:
    """Parse a JSON file (UTF-8).

    Raises:
        BenchmarkError: the file is missing or not valid JSON (naming the file and line).
    """
    if not path.is_file():
        raise BenchmarkError(benchmark, [f"missing file {path}"], [str(path)])
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchmarkError(benchmark, [f"{path}:{e.lineno}: not valid JSON: {e.msg}"], [str(path)]) from None
    except UnicodeDecodeError as e:
        raise BenchmarkError(benchmark, [f"{path}: not UTF-8: {e}"], [str(path)]) from None
    except RecursionError:
        raise BenchmarkError(benchmark, [f"{path}: JSON nested too deeply to read"], [str(path)]) from None


def read_jsonl(path: Path, benchmark: str) -> list[tuple[int, Any]]:
    """Parse a JSONL file into ``(1-based line number, object)`` pairs, skipping blank lines.

    Raises:
        BenchmarkError: the file is missing, or a line is not valid JSON (naming file and line).
    """
    if not path.is_file():
        raise BenchmarkError(benchmark, [f"missing file {path}"], [str(path)])
    out: list[tuple[int, Any]] = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                out.append((i, json.loads(line)))
            except json.JSONDecodeError as e:
                raise BenchmarkError(benchmark, [f"{path}:{i}: not valid JSON: {e.msg}"], [str(path)]) from None
            except RecursionError:
                raise BenchmarkError(benchmark, [f"{path}:{i}: JSON nested too deeply to read"], [str(path)]) from None
    return out


def nfc(name: str) -> str:
    """Unicode NFC normal form of a file name (macOS writes NFD names; the JSON may hold NFC)."""
    return unicodedata.normalize("NFC", name)


def _plain_relative(rel: str) -> bool:
    """A relative path with no ``..``, ``.`` or empty component, no backslash or NUL."""
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith("/"):
        return False
    return not any(part in ("", ".", "..") for part in rel.split("/"))


def contained(root: Path, relative: str) -> Path | None:
    """``root / relative`` when ``relative`` (a name from a benchmark's metadata) is a relative path
    with no ``..``, ``.`` or empty component, no backslash or NUL, and the joined path, with every
    symlink resolved, is still inside ``root``; else ``None`` (the caller reports the row). A
    benchmark row can name files in its dataset folder and nothing else (issue 12). For many names
    in one load, :class:`Containment` gives the same answers with each folder resolved once."""
    return Containment().contained(root, relative)


class Containment:
    """:func:`contained` for the many names of one load, with each root and each folder resolved once
    and each folder listed once (``os.scandir``), instead of resolving every name's path component by
    component (an ``lstat`` per component per row).

    The rule is :func:`contained`'s: the name's folder, every symlink resolved, must be inside the
    resolved root; the name itself is then inside unless it is a symlink, which is resolved and
    checked. :meth:`is_file` answers for a path :meth:`contained` returned from the same listing (a
    regular file, or a symlink to one). Make one per load: the listings are not refreshed."""

    def __init__(self) -> None:
        self._roots: dict[Path, Optional[Path]] = {}
        self._dirs: dict[tuple[Path, str], Optional[Path]] = {}
        self._listings: dict[Path, dict[str, tuple[bool, bool]]] = {}
        self._files: dict[Path, bool] = {}

    def _real(self, root: Path) -> Optional[Path]:
        if root not in self._roots:
            try:
                self._roots[root] = root.resolve()
            except (OSError, RuntimeError):  # a symlink loop
                self._roots[root] = None
        return self._roots[root]

    def _listing(self, real_dir: Path) -> dict[str, tuple[bool, bool]]:
        names = self._listings.get(real_dir)
        if names is None:
            names = {}
            try:
                with os.scandir(real_dir) as it:
                    for e in it:
                        try:
                            names[e.name] = (e.is_symlink(), e.is_file())
                        except OSError:  # a link loop: a link, and no file
                            names[e.name] = (True, False)
            except OSError:  # no such folder (nothing in it exists) or not readable
                pass
            self._listings[real_dir] = names
        return names

    def contained(self, root: Path, relative: str) -> Path | None:
        """``root / relative`` when it is contained (the rule of :func:`contained`), else ``None``."""
        rel = str(relative)
        if not _plain_relative(rel):
            return None
        real_root = self._real(root)
        if real_root is None:
            return None
        parent, _, name = rel.rpartition("/")
        key = (root, parent)
        if key not in self._dirs:
            try:
                d: Optional[Path] = (root / parent).resolve() if parent else real_root
            except (OSError, RuntimeError):
                d = None
            self._dirs[key] = d if d is not None and d.is_relative_to(real_root) else None
        real_dir = self._dirs[key]
        if real_dir is None:
            return None
        link, is_file = self._listing(real_dir).get(name, (False, False))
        if link:
            try:
                if not (real_dir / name).resolve().is_relative_to(real_root):
                    return None
            except (OSError, RuntimeError):
                return None
        p = root / rel
        self._files[p] = is_file
        return p

    def is_file(self, path: Path) -> bool:
        """Whether ``path`` is a file (following a symlink), from the listing when :meth:`contained`
        returned it, else ``Path.is_file``."""
        known = self._files.get(path)
        return path.is_file() if known is None else known


class NfcIndex:
    """Files of one directory (recursively) keyed by their NFC-normalized path relative to it, so a
    name written in NFD on disk and NFC in the metadata (or the reverse) still matches.

    Two files whose names normalize to the same key are ambiguous and reported by :meth:`find`'s
    caller through :attr:`collisions`.
    """

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, Path] = {}
        self.collisions: dict[str, list[Path]] = {}
        self.outside: list[Path] = []
        """Files (symlinks) under ``root`` that resolve outside it: never returned by :meth:`find`."""
        if root.is_dir():
            real = root.resolve()
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    if not p.resolve().is_relative_to(real):
                        self.outside.append(p)
                        continue
                    key = nfc(p.relative_to(root).as_posix())
                    if key in self.files:
                        self.collisions.setdefault(key, [self.files[key]]).append(p)
                    else:
                        self.files[key] = p

    def find(self, relative: str) -> Path | None:
        """The file whose NFC relative path equals NFC(``relative``), or ``None``."""
        return self.files.get(nfc(relative.replace("\\", "/")))


def image_ref(path: Path, *, expected_size: tuple[int, int] | None = None,
              problems: Problems | None = None, hash_file: bool = True) -> ImageRef | None:
    """Describe an image file: its size in pixels (read from the header, the pixels are not decoded)
    and the sha256 of its bytes.

    Args:
        path: the image file.
        expected_size: ``(W, H)`` the metadata declares; a mismatch is a problem.
        problems: where to record an unreadable file or a size mismatch; ``None`` raises instead.
        hash_file: compute ``sha256`` (``False`` leaves it ``None``).

    Returns:
        The :class:`ImageRef`, or ``None`` when the file is unreadable (the problem is recorded).
    """
    from PIL import Image, UnidentifiedImageError

    sha = hashlib.sha256()
    try:  # a FIFO, device or oversized file is refused before Pillow or the hash reads it
        with open_binary(path, max_bytes=MAX_IMAGE_BYTES) as f:
            with Image.open(f) as im:
                w, h = im.size
            if hash_file:
                f.seek(0)
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    sha.update(chunk)
    except (OSError, UnidentifiedImageError, UnsafeFileError) as e:
        msg = f"unreadable image {path}: {e}"
        if problems is None:
            raise BenchmarkError("image", [msg], [str(path)]) from None
        problems.add(msg, path)
        return None
    if expected_size is not None and (w, h) != tuple(expected_size):
        msg = f"image {path} is {w}x{h}, metadata says {expected_size[0]}x{expected_size[1]}"
        if problems is None:
            raise BenchmarkError("image", [msg], [str(path)])
        problems.add(msg, path)
        return None
    return ImageRef(path=path.as_posix(), width=int(w), height=int(h),
                    sha256=sha.hexdigest() if hash_file else None)


def row_problem(row: Any, fields: Iterable[str], *, falsy_is_missing: bool = False,
                seen: Container[str] | None = None) -> str | None:
    """Why an annotation row cannot be read, or ``None``: ``"not an object"`` when it is not a JSON
    object, ``"missing field(s) [...]"`` naming each of ``fields`` that is absent, ``None`` or ``""``
    (with ``falsy_is_missing``, any false value: ``0``, ``[]`` ...), and, when ``seen`` (the sample
    ids loaded so far) is given, ``"duplicate id X"`` when ``str(row["id"])`` is in it. The loaders
    prefix the row's place (file and row or line)."""
    if not isinstance(row, dict):
        return "not an object"
    if falsy_is_missing:
        missing = [k for k in fields if not row.get(k)]
    else:
        missing = [k for k in fields if row.get(k) in (None, "")]
    if missing:
        return f"missing field(s) {missing}"
    if seen is not None and str(row["id"]) in seen:
        return f"duplicate id {row['id']}"
    return None


def measure_mask(mask_path: Path, image: ImageRef, where: str, mask_problems: list[str]) -> tuple[str | None, float | None]:
    """:func:`pointfail.geometry.masks.check_mask` against ``image``'s size (the scorer's own
    binarization, so the loader's area and emptiness agree with scoring; the file's type and size are
    checked before it is read); a problem is appended to ``mask_problems`` as ``"<where>: <problem>"``
    (the sample still loads). Returns ``(sha256, area_px)`` of the mask (either ``None`` as
    :class:`pointfail.geometry.masks.MaskCheck` says)."""
    from pointfail.geometry.masks import check_mask

    mcheck = check_mask(mask_path, (image.width, image.height))
    if mcheck.problem:
        mask_problems.append(f"{where}: {mcheck.problem}")
    return mcheck.sha256, mcheck.area_px


def warn_mask_problems(benchmark: str, problems: list[str]) -> None:
    """Warn (``UserWarning``, once per load) that some samples carry an unusable mask: they are
    loaded and will be recorded as ``error`` outcomes with the reason; the first five are listed."""
    if problems:
        import warnings

        warnings.warn(f"{benchmark}: {len(problems)} sample(s) with an unusable mask, loaded anyway (the "
                      f"scorer records a wrong-size, unreadable or empty mask as an error outcome with "
                      f"its reason): {problems[:5]}", stacklevel=3)


def check_box(value: Any) -> tuple[list[float] | None, str | None]:
    """Validate ``[x0, y0, x1, y1]`` in pixels: four finite numbers with ``x1 >= x0`` and ``y1 >= y0``.

    Returns:
        ``(box as floats-or-ints, None)`` when valid, ``(None, reason)`` otherwise. A box with
        ``x2 < x1`` cannot be valid in the ``x1, y1, x2, y2`` format and is rejected, not repaired.
    """
    import math

    if not isinstance(value, (list, tuple)) or len(value) != 4:
        return None, f"box must be 4 numbers [x1, y1, x2, y2], got {value!r}"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return None, f"box has a non-number: {value!r}"
    if not all(math.isfinite(v) for v in value):
        return None, f"box has a non-finite number: {value!r}"
    x0, y0, x1, y1 = value
    if x1 < x0 or y1 < y0:
        return None, f"box {list(value)} has x2 < x1 or y2 < y1 (invalid in x1,y1,x2,y2 format)"
    return [v for v in value], None
