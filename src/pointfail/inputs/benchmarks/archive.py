"""Reading a publisher's zip archive without trusting it, and unpacking it into a cache beside it.

Point-Bench ships its images and masks as ``selected_images.zip`` and ``selected_masks.zip``
(``docs/releases.md``). A zip names its own members, so a hostile or broken archive can name
``../../etc/x``, an absolute path, a symlink, a device, a member far larger than it says, or two
members that become one file after decoding. Everything here goes through the standard library's
:mod:`zipfile` (no zip parsing of our own); what this module adds is the rules:

* **Names.** A member name is a relative POSIX path: not absolute (``/x``, ``C:x``), no ``..``,
  ``.`` or empty component, no backslash, no NUL, at most :data:`MAX_NAME_BYTES` bytes (UTF-8).
* **Decoding.** A name with the zip's UTF-8 flag (general-purpose bit 11) is read as UTF-8, as
  :mod:`zipfile` does. A name without it is what the writer's tool put there: :mod:`zipfile`
  decodes it as cp437 (the zip specification's default), but many tools (macOS Archive Utility,
  Info-ZIP on a UTF-8 locale) store UTF-8 bytes without setting the flag, and Point-Bench's
  archives are known to hold such names (Molmo2's PointBench loader notes that unzipping them
  with Python "mangles some filenames"; lmms-eval's pointbench task recovers them with
  ``name.encode("cp437").decode("utf-8")``). So a flagless name whose bytes are valid UTF-8 is read
  as UTF-8; otherwise it stays cp437. Names are then compared in Unicode NFC.
* **Kinds.** Only regular files and directories: a member whose Unix mode (``external_attr >> 16``)
  says symlink, character or block device, FIFO or socket is refused, and so is an encrypted one.
* **Sizes.** At most :data:`MAX_MEMBERS` members, :data:`MAX_MEMBER_BYTES` per member and
  :data:`MAX_TOTAL_BYTES` in all (declared sizes, and the bytes actually written are counted too).
* **Collisions.** Two members with the same NFC name, or a file whose name is another member's
  folder, are refused.

Any broken rule raises :class:`ArchiveError` with one line naming the archive, the member and the
rule. :func:`unpack` writes the members into ``<folder of the archive>/_unpacked/<archive name>/``
through a temporary folder renamed into place, with a marker file recording the archive's sha256 and
member list, so a later load reuses it and a changed archive is unpacked afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

__all__ = ["ArchiveError", "Member", "read_members", "unpack", "archive_summary", "CACHE_DIR",
           "MAX_MEMBERS", "MAX_MEMBER_BYTES", "MAX_TOTAL_BYTES", "MAX_NAME_BYTES"]

MAX_MEMBERS = 200_000
"""Most members an archive may hold (Point-Bench's two archives hold about a thousand each)."""
MAX_MEMBER_BYTES = 512 << 20
"""Largest uncompressed member (bytes)."""
MAX_TOTAL_BYTES = 32 << 30
"""Largest uncompressed total of one archive (bytes)."""
MAX_NAME_BYTES = 1024
"""Longest member name (UTF-8 bytes)."""

CACHE_DIR = "_unpacked"
"""The folder, beside an archive, that :func:`unpack` writes into."""

_UTF8_FLAG = 0x800
_ENCRYPTED_FLAG = 0x1
_DRIVE = re.compile(r"^[A-Za-z]:")
_MARKER_SCHEMA = "pointfail.unpacked/1"


class ArchiveError(ValueError):
    """An archive that breaks one of the module's rules; the message is one line naming the archive,
    the member (when one is at fault) and the rule."""


@dataclass(frozen=True)
class Member:
    """One member of an archive after decoding.

    Attributes:
        name: the decoded name, NFC-normalized, POSIX separators, no trailing ``/``.
        raw_name: the name as :mod:`zipfile` decoded it (cp437 for flagless names).
        size: uncompressed size in bytes (as declared).
        is_dir: a directory entry.
        encoding: ``"utf-8 (flag)"``, ``"utf-8 (no flag)"`` (recovered) or ``"cp437"``.
    """

    name: str
    raw_name: str
    size: int
    is_dir: bool
    encoding: str


def _decode(info: zipfile.ZipInfo) -> tuple[str, str]:
    """``(decoded name, encoding)`` of one member (see the module docstring, "Decoding")."""
    if info.flag_bits & _UTF8_FLAG:
        return info.orig_filename, "utf-8 (flag)"
    try:
        raw = info.orig_filename.encode("cp437")
    except UnicodeEncodeError:  # a name zipfile decoded with another metadata_encoding
        return info.orig_filename, "cp437"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return info.orig_filename, "cp437"
    return text, ("utf-8 (no flag)" if text != info.orig_filename else "cp437")


def _check_name(name: str) -> Optional[str]:
    """Why ``name`` (decoded, trailing ``/`` removed) is not a safe relative path, or ``None``."""
    if not name:
        return "an empty name"
    if "\x00" in name:
        return "a NUL in the name"
    if "\\" in name:
        return "a backslash in the name (a Windows separator: it could leave the folder)"
    if name.startswith("/") or _DRIVE.match(name):
        return "an absolute name"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"a name longer than {MAX_NAME_BYTES} bytes"
    for part in name.split("/"):
        if part == "..":
            return "a '..' component (the member would land outside its folder)"
        if part in ("", "."):
            return f"a {part!r} component" if part else "an empty component ('//')"
        if len(part.encode("utf-8")) > 255:
            return "a name component longer than 255 bytes"
    return None


def _kind(info: zipfile.ZipInfo) -> Optional[str]:
    """Why the member is not a regular file or a directory, or ``None``."""
    if info.flag_bits & _ENCRYPTED_FLAG:
        return "an encrypted member"
    mode = info.external_attr >> 16
    if info.create_system == 3 and mode:  # Unix mode bits are present
        for test, what in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISCHR, "a character device"),
                           (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                           (stat.S_ISSOCK, "a socket")):
            if test(mode):
                return what
    return None


def read_members(path: str | Path, *, max_members: int = MAX_MEMBERS, max_member_bytes: int = MAX_MEMBER_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES) -> list[Member]:
    """The members of the zip archive at ``path``, decoded and checked (every rule of the module
    docstring), in archive order. Nothing is decompressed.

    Raises:
        ArchiveError: not a zip archive; too many members; a member with an unsafe name, a kind other
            than file or directory, a declared size past the cap, or a name that collides with
            another after decoding; a total past the cap. One line, naming the member.
    """
    p = Path(path)
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError) as e:
        raise ArchiveError(f"{p}: not a readable zip archive: {e}") from None
    with zf:
        infos = zf.infolist()
    if len(infos) > max_members:
        raise ArchiveError(f"{p}: {len(infos)} members, more than the cap of {max_members}")
    out: list[Member] = []
    seen: dict[str, str] = {}
    dirs: set[str] = set()
    files: set[str] = set()
    total = 0
    for info in infos:
        decoded, encoding = _decode(info)
        is_dir = decoded.endswith("/")
        name = unicodedata.normalize("NFC", decoded.rstrip("/") if is_dir else decoded)
        why = _check_name(name) or _kind(info)
        if why:
            raise ArchiveError(f"{p}: member {decoded[:200]!r}: refused: {why}")
        if info.file_size > max_member_bytes:
            raise ArchiveError(f"{p}: member {name!r}: refused: {info.file_size} bytes uncompressed, more than "
                               f"the cap of {max_member_bytes}")
        total += info.file_size
        if total > max_total_bytes:
            raise ArchiveError(f"{p}: refused: more than {max_total_bytes} bytes uncompressed in all")
        if name in seen and not (is_dir and name in dirs):
            raise ArchiveError(f"{p}: member {decoded[:200]!r}: refused: its name collides with member "
                               f"{seen[name][:200]!r} after decoding ({name!r})")
        seen.setdefault(name, decoded)
        parents = name.split("/")[:-1]
        for i in range(1, len(parents) + 1):
            d = "/".join(parents[:i])
            if d in files:
                raise ArchiveError(f"{p}: member {decoded[:200]!r}: refused: {d!r} is a file in the archive, "
                                   "not a folder")
            dirs.add(d)
        if is_dir:
            if name in files:
                raise ArchiveError(f"{p}: member {decoded[:200]!r}: refused: a folder and a file share the name")
            dirs.add(name)
        else:
            if name in dirs:
                raise ArchiveError(f"{p}: member {decoded[:200]!r}: refused: a file and a folder share the name")
            files.add(name)
        out.append(Member(name=name, raw_name=info.orig_filename, size=int(info.file_size), is_dir=is_dir,
                          encoding=encoding))
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def archive_summary(path: str | Path) -> dict:
    """``{"sha256": <hex of the archive's bytes>, "members": [decoded file names, sorted]}`` (what
    ``study.lock`` records per archive; directories left out).

    Raises:
        ArchiveError: as :func:`read_members`.
    """
    p = Path(path)
    members = read_members(p)
    return {"sha256": _sha256(p), "members": sorted(m.name for m in members if not m.is_dir)}


def _marker(cache: Path, name: str) -> Path:
    return cache / f"{name}.json"


def unpack(path: str | Path, *, max_member_bytes: int = MAX_MEMBER_BYTES,
           max_total_bytes: int = MAX_TOTAL_BYTES) -> Path:
    """Unpack the archive at ``path`` into ``<its folder>/_unpacked/<its name>/`` and return that
    folder, or return it at once when its marker records this archive's sha256 and every member is
    there with its size.

    Members are written under their decoded NFC names into a fresh temporary folder (files created
    exclusively, folders made here, so nothing already on disk is followed), each read through
    :mod:`zipfile` (which checks its CRC) with the bytes counted against the caps, then the folder is
    renamed into place and the marker written last.

    Raises:
        ArchiveError: any rule of :func:`read_members`; a member that decompresses past its cap or
            fails its CRC; ``_unpacked`` being a symlink or not a folder; the cache not writable
            (one line naming the folder).
    """
    p = Path(path)
    members = read_members(p, max_member_bytes=max_member_bytes, max_total_bytes=max_total_bytes)
    cache = p.parent / CACHE_DIR
    if cache.is_symlink() or (cache.exists() and not cache.is_dir()):
        raise ArchiveError(f"{cache}: refused: the unpack cache is a symlink or not a folder")
    digest = _sha256(p)
    dest = cache / p.name
    marker = _marker(cache, p.name)
    if marker.is_file() and not marker.is_symlink() and dest.is_dir() and not dest.is_symlink():
        try:
            m = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            m = {}
        if isinstance(m, dict) and m.get("schema") == _MARKER_SCHEMA and m.get("archive_sha256") == digest \
                and _complete(dest, members):
            return dest
    try:
        cache.mkdir(exist_ok=True)
        tmp = cache / f".{p.name}.tmp-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
    except OSError as e:
        raise ArchiveError(f"{cache}: cannot write the unpack cache: {e}") from None
    try:
        _extract(p, members, tmp, max_member_bytes, max_total_bytes)
        marker.unlink(missing_ok=True)
        if dest.is_symlink() or dest.is_file():
            dest.unlink()
        elif dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        marker.write_text(json.dumps({"schema": _MARKER_SCHEMA, "archive": p.name, "archive_sha256": digest,
                                      "members": sorted(m.name for m in members if not m.is_dir)},
                                     indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise ArchiveError(f"{cache}: cannot write the unpack cache: {e}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _complete(dest: Path, members: list[Member]) -> bool:
    for m in members:
        q = dest / m.name
        if m.is_dir:
            if not q.is_dir() or q.is_symlink():
                return False
        elif q.is_symlink() or not q.is_file() or q.stat().st_size != m.size:
            return False
    return True


def _extract(p: Path, members: list[Member], tmp: Path, max_member_bytes: int, max_total_bytes: int) -> None:
    total = 0
    with zipfile.ZipFile(p) as zf:
        infos = zf.infolist()
        for info, m in zip(infos, members):
            target = tmp / m.name
            if m.is_dir:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            try:
                with zf.open(info) as src, open(target, "xb") as dst:
                    for chunk in iter(lambda: src.read(1 << 20), b""):
                        written += len(chunk)
                        total += len(chunk)
                        if written > max_member_bytes or total > max_total_bytes:
                            raise ArchiveError(f"{p}: member {m.name!r}: refused: decompresses past the cap")
                        dst.write(chunk)
            except (zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError) as e:
                raise ArchiveError(f"{p}: member {m.name!r}: cannot be read: {e}") from None
