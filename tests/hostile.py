"""Helpers for the hostile-input tests: a decoy tree outside every declared root, hashed before and
after, so a test can show that nothing outside the roots changed (content, type, mode, owner, link
target)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def make_decoy(root: Path) -> Path:
    """A small tree that hostile input will try to reach: files, a nested folder, a private file."""
    d = root / "decoy"
    (d / "etc").mkdir(parents=True)
    (d / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (d / "secret.key").write_bytes(os.urandom(32))
    (d / "secret.key").chmod(0o600)
    (d / "notes.txt").write_text("do not touch\n")
    return d


def tree_digest(root: Path) -> str:
    """sha256 over every entry under ``root`` (``root`` included): its relative path, type, mode,
    owner, size and content (files) or target (symlinks); never follows a link."""
    h = hashlib.sha256()
    entries = [root]
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        entries += [Path(dirpath, n) for n in sorted(dirnames + filenames)]
    for p in entries:
        st = os.lstat(p)
        h.update(f"{p.relative_to(root.parent)}|{stat.S_IFMT(st.st_mode)}|{stat.S_IMODE(st.st_mode):o}|"
                 f"{st.st_uid}:{st.st_gid}|{st.st_size}".encode())
        if stat.S_ISREG(st.st_mode):
            h.update(p.read_bytes())
        elif stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(p).encode())
    return h.hexdigest()
