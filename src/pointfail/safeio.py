"""Reading and writing files that come from outside without trusting them (``shared/DESIGN.md``,
"Untrusted input"; issue 12).

Every file pointfail reads from a place someone else controls (a study file, a mask, a job directory a
model container could write into, a benchmark's metadata) goes through these helpers, so the rules are
written once:

* **Type before bytes.** A file is opened non-blocking (a FIFO cannot hang the open) and checked with
  ``fstat`` on the open descriptor (no race between check and read): anything but a regular file
  (a FIFO, ``/dev/zero``, a directory, a socket) is refused before one byte is read.
* **Size before bytes.** A file larger than the caller's cap is refused from ``st_size``; the read
  itself stops at the cap plus one byte, so a file that grows while being read is refused too.
* **No following what others made.** ``nofollow=True`` opens with ``O_NOFOLLOW``: a symlink planted
  in place of the file is refused (``ELOOP``), never followed. :func:`open_under` resolves a name
  inside a directory descriptor one component at a time with ``O_NOFOLLOW`` on each, so neither the
  last component nor any directory on the way can be a symlink.
* **Atomic writes.** :func:`atomic_write_bytes` writes a temporary file in the destination
  directory, fsyncs it, renames it over the destination (``os.replace``) and fsyncs the directory: a reader
  (or a crash, or ``kill -9``) sees the old bytes or the new bytes, never a prefix.

Errors are :class:`UnsafeFileError` (a ``ValueError``) with the path and the reason in the message.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Optional, Union

PathLike = Union[str, Path]

__all__ = [
    "UnsafeFileError",
    "read_regular_file",
    "open_regular",
    "open_binary",
    "open_under",
    "atomic_write_bytes",
    "fsync_dir",
    "check_regular_path",
    "valid_text",
    "os_error_line",
    "INVALID_UNICODE_FLAG",
]

INVALID_UNICODE_FLAG = "invalid_unicode_replaced"
"""The flag recorded when text from outside held lone surrogates (a JSON ``"\\udcff"`` escape) and
they were replaced by U+FFFD so the record encodes as UTF-8."""


def valid_text(text: str) -> tuple[str, bool]:
    """``text`` made valid Unicode for UTF-8: every lone surrogate (U+D800..U+DFFF not part of a pair,
    as ``json.loads`` returns for ``"\\udcff"``) replaced by U+FFFD; ``True`` when something was
    replaced. Linear time; valid text is returned as is (one encode to check)."""
    try:
        text.encode("utf-8")
        return text, False
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), True


class UnsafeFileError(ValueError):
    """A file was refused: not a regular file, too large, a symlink where none may be, or a name that
    leaves its directory. ``path`` is the file, ``reason`` the rule that refused it."""

    def __init__(self, path: PathLike, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def _check_fd(fd: int, path: PathLike, max_bytes: Optional[int]) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError(path, f"is {_kind(st.st_mode)}, not a regular file; refused before reading")
    if max_bytes is not None and st.st_size > max_bytes:
        raise UnsafeFileError(path, f"is {st.st_size} bytes, more than the limit of {max_bytes} bytes")
    return st


def open_regular(path: PathLike, *, nofollow: bool = False, dir_fd: Optional[int] = None,
                 max_bytes: Optional[int] = None) -> int:
    """Open ``path`` read-only and return the descriptor, after checking on the descriptor that it
    is a regular file (and at most ``max_bytes`` long when given). Opened ``O_NONBLOCK`` so a FIFO
    never blocks the open; ``O_NOFOLLOW`` when ``nofollow``; relative to ``dir_fd`` when given.

    Raises:
        UnsafeFileError: a symlink (with ``nofollow``), not a regular file, or too large.
        FileNotFoundError / PermissionError / OSError: the file cannot be opened.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP and nofollow:
            raise UnsafeFileError(path, "is a symlink; refused (symlinks here are never followed)") from None
        raise
    try:
        _check_fd(fd, path, max_bytes)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular_file(path: PathLike, max_bytes: int, *, nofollow: bool = False,
                      dir_fd: Optional[int] = None) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``max_bytes`` bytes (checked on
    the open descriptor before reading; the read stops at ``max_bytes + 1`` so a file growing
    meanwhile is refused too).

    Raises:
        UnsafeFileError: not a regular file (FIFO, device such as ``/dev/zero``, directory, socket),
            a symlink with ``nofollow``, or larger than ``max_bytes``.
        OSError: the file cannot be opened or read (``FileNotFoundError`` when missing).
    """
    fd = open_regular(path, nofollow=nofollow, dir_fd=dir_fd, max_bytes=max_bytes)
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnsafeFileError(path, f"grew past the limit of {max_bytes} bytes while being read")
    return data


def open_binary(path: PathLike, *, max_bytes: Optional[int] = None, nofollow: bool = False):
    """A binary file object for ``path`` after the checks of :func:`open_regular` (regular file, at
    most ``max_bytes``, no symlink with ``nofollow``): hand it to a library such as Pillow instead of
    the path, so a FIFO or device is refused before the library touches it.

    Raises:
        UnsafeFileError / OSError: as :func:`open_regular`.
    """
    return os.fdopen(open_regular(path, nofollow=nofollow, max_bytes=max_bytes), "rb")


def check_regular_path(path: PathLike, max_bytes: Optional[int] = None) -> os.stat_result:
    """``os.stat`` of ``path`` after checking that it is a regular file (and at most ``max_bytes``),
    opening it non-blocking so a FIFO cannot hang the check. For readers that hand the path to a
    library afterwards (Pillow).

    Raises:
        UnsafeFileError / OSError: as :func:`read_regular_file`.
    """
    fd = open_regular(path, max_bytes=max_bytes)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def open_under(dir_fd: int, relative: str, *, flags: int = os.O_RDONLY, mode: int = 0o644,
               directory: bool = False) -> int:
    """Open ``relative`` (a ``/``-separated name) inside the directory open as ``dir_fd``, resolving
    one component at a time with ``O_NOFOLLOW``: no component may be a symlink, ``..``, ``.`` or
    empty, so the result is inside that directory whatever was planted in it. ``flags`` apply to the
    last component (``O_NOFOLLOW`` and ``O_CLOEXEC`` are always added); ``directory`` opens a
    directory.

    Raises:
        UnsafeFileError: an absolute name, an empty, ``.`` or ``..`` component, or a symlink on the way.
        OSError: as ``os.open``.
    """
    if not relative or relative.startswith("/") or "\x00" in relative:
        raise UnsafeFileError(relative, "not a relative name inside its directory")
    parts = relative.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise UnsafeFileError(relative, "has an empty, '.' or '..' component")
    cur = dir_fd
    opened: list[int] = []
    try:
        for p in parts[:-1]:
            try:
                cur = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=cur)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeFileError(relative, f"component {p!r} is a symlink or not a directory") from None
                raise
            opened.append(cur)
        last_flags = flags | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_DIRECTORY if directory else 0)
        try:
            return os.open(parts[-1], last_flags, mode, dir_fd=cur)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UnsafeFileError(relative, "is a symlink; refused (never followed)") from None
            raise
    finally:
        for fd in opened:
            os.close(fd)


def fsync_dir(path: PathLike) -> None:
    """fsync a directory so a rename in it is durable (silently skipped where directories cannot be
    opened or fsynced)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: PathLike, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file in the same directory (created
    ``O_EXCL``, so nothing planted there is followed), written, fsynced, given ``mode``, renamed over
    ``path`` with ``os.replace`` (which replaces a symlink at ``path`` itself, never its target), and
    the directory fsynced. A crash or ``kill -9`` at any point leaves the old file or the new one.
    Creates the parent directory when missing.

    Raises:
        OSError: the directory is not writable or the disk is full (the temporary file is removed;
            the error names ``path``).
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.filename is None:  # a full disk: say which file could not be written
            raise OSError(e.errno, e.strerror or str(e), str(p)) from e
        raise
    fsync_dir(p.parent)


def os_error_line(e: OSError) -> str:
    """One line for an ``OSError`` from writing or reading a file (disk full, read-only, permission):
    the file and the system's reason, e.g. ``cannot write records/s/m/b.jsonl: No space left on
    device``. For the commands' top level, so a full disk is one line and exit status, not a
    traceback (the writes themselves are atomic: nothing is half-written)."""
    import errno as _errno

    name = e.filename if e.filename is not None else None
    reason = e.strerror or str(e) or type(e).__name__
    verb = "cannot write" if e.errno in (_errno.ENOSPC, _errno.EROFS, _errno.EDQUOT, _errno.EFBIG) else "cannot use"
    return f"{verb} {name}: {reason}" if name else f"{verb} a file: {reason}"
