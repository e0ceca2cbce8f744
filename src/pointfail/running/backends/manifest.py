"""Weights manifests: remote code runs only from the exact files recorded when the weights were
downloaded (issue 12, "Remote code pinned to content").

A checkpoint that needs ``trust_remote_code`` (Molmo v1) ships Python files that transformers imports
and runs. A revision string says which commit was *asked for*; it does not say what is on disk now.
So before such a checkpoint is loaded, every file of its weights folder is hashed and compared with a
manifest taken at download time (``pointfail weights-manifest DIR --out FILE``), kept outside the
weights folder (beside the study, ``records/<study>/weights/<model>.manifest.json``, and handed to
the worker read-only):

* every file listed must be present with the same sha256 and size;
* no file may be present that is not listed (a planted ``.py`` file is refused, whatever its name);
* only regular files and folders: a symlink, FIFO or device anywhere in the folder is refused (a
  symlink could point the loader at code outside the folder).

The check runs before transformers is imported, so nothing from the folder runs when it fails.

Manifest format (canonical JSON)::

    {"schema": "pointfail.weights_manifest/1", "files": {"<relative path>": {"sha256": "<hex>", "size": N}}}
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Union

from pointfail.running.backends.base import BackendError

SCHEMA = "pointfail.weights_manifest/1"
MAX_MANIFEST_BYTES = 16 << 20

__all__ = ["SCHEMA", "weights_manifest", "write_weights_manifest", "read_weights_manifest", "verify_weights"]


def _walk(root: Path) -> dict[str, Path]:
    """Every regular file under ``root`` by its ``/``-separated relative path. Raises
    :class:`BackendError` for anything that is not a regular file or a folder (never followed)."""
    out: dict[str, Path] = {}
    bad: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath, name)
            st = os.lstat(p)
            rel = p.relative_to(root).as_posix()
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                bad.append(f"{rel} ({'a symlink' if stat.S_ISLNK(st.st_mode) else 'not a regular file'})")
                continue
            out[rel] = p
    if bad:
        raise BackendError(f"weights folder {root} holds entries that are not regular files: {', '.join(bad[:10])}; "
                           "remote code is loaded only from plain files")
    return out


def _sha256(p: Path) -> tuple[str, int]:
    """(sha256 hex digest, bytes read) of the file ``p``."""
    with open(p, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
        return digest, f.tell()


def weights_manifest(weights_dir: Union[str, Path]) -> dict:
    """The manifest of ``weights_dir`` (format in the module docstring), files sorted by path.

    Raises:
        BackendError: a symlink or other non-regular entry in the folder, or the folder is missing.
    """
    root = Path(weights_dir)
    if not root.is_dir() or root.is_symlink():
        raise BackendError(f"weights folder {root} is not a folder")
    files = {}
    for rel, p in sorted(_walk(root).items()):
        digest, size = _sha256(p)
        files[rel] = {"sha256": digest, "size": size}
    return {"schema": SCHEMA, "files": files}


def write_weights_manifest(weights_dir: Union[str, Path], out: Union[str, Path]) -> dict:
    """Write :func:`weights_manifest` of ``weights_dir`` to ``out`` (canonical JSON, atomically)."""
    from pointfail.records import canonical_json
    from pointfail.safeio import atomic_write_bytes

    m = weights_manifest(weights_dir)
    atomic_write_bytes(out, canonical_json(m).encode("utf-8"))
    return m


def read_weights_manifest(path: Union[str, Path]) -> dict[str, dict]:
    """The ``files`` of a manifest file, checked for shape.

    Raises:
        BackendError: unreadable, not a manifest of this schema, or a malformed entry.
    """
    from pointfail.safeio import UnsafeFileError, read_regular_file

    try:
        data = json.loads(read_regular_file(path, MAX_MANIFEST_BYTES).decode("utf-8"))
    except (OSError, UnsafeFileError, ValueError) as e:
        raise BackendError(f"cannot read weights manifest {path}: {e}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("files"), dict):
        raise BackendError(f"{path} is not a weights manifest ({SCHEMA})")
    for rel, v in data["files"].items():
        if not (isinstance(v, dict) and isinstance(v.get("sha256"), str) and len(v["sha256"]) == 64
                and isinstance(v.get("size"), int)):
            raise BackendError(f"{path}: entry {rel!r} is not {{sha256, size}}")
    return data["files"]


def verify_weights(weights_dir: Union[str, Path], manifest_path: Union[str, Path]) -> int:
    """Check that ``weights_dir`` holds exactly the files of the manifest at ``manifest_path``, byte
    for byte. Returns the number of files checked.

    Raises:
        BackendError: naming every file that is missing, changed, or not in the manifest (a planted
            ``.py`` first), or a non-regular entry; nothing has been imported from the folder.
    """
    root = Path(weights_dir)
    want = read_weights_manifest(manifest_path)
    have = _walk(root)
    problems = []
    for rel in sorted(set(have) - set(want), key=lambda r: (not r.endswith(".py"), r)):
        problems.append(f"{rel}: not in the manifest")
    for rel in sorted(set(want) - set(have)):
        problems.append(f"{rel}: missing")
    for rel in sorted(set(want) & set(have)):
        if os.lstat(have[rel]).st_size != want[rel]["size"] or _sha256(have[rel])[0] != want[rel]["sha256"]:
            problems.append(f"{rel}: content differs from the manifest")
    if problems:
        raise BackendError(f"weights folder {root} does not match {manifest_path}; refusing to run its code "
                           f"(trust_remote_code): " + "; ".join(problems[:20])
                           + (f"; and {len(problems) - 20} more" if len(problems) > 20 else ""))
    return len(want)
