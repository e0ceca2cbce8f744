"""The base image, built from Debian packages (issue 4, ``images/base/``; ``shared/DESIGN.md``,
"Containers": "A base image can also be built from Debian packages with debootstrap and
``docker import``, for machines with no container registry").

Steps (:func:`build_base`): read the Debian mirror from this machine's apt configuration
(:func:`read_apt_mirror`, never a host name written in the repository), ``debootstrap
--variant=minbase`` Debian bookworm with ``python3``, ``python3-venv`` and ``ca-certificates`` into a
temporary directory, give it the machine's apt sources for the release, ``-updates`` and ``-security``
pockets (:func:`write_apt_sources`), add the unprivileged user ``pointfail`` (uid/gid 10001), drop apt caches and
lists, pack the tree as a tar with sorted entries, numeric owners and clamped mtimes, ``docker
import`` it through the Engine API, and write ``images/base/base.lock.json``: the image id (its
content digest), the layer's diff id, the tar's sha256, and every installed package's Debian version.

On machines with a registry, ``images/base/Dockerfile.registry`` builds the equivalent base from the
upstream Debian image pinned by digest (the digest is also recorded in the lock,
``upstream_image``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

SUITE = "bookworm"
VARIANT = "minbase"
PACKAGES = ("python3", "python3-venv", "ca-certificates")
REPOSITORY = "pointfail/base"
USER_ID = 10001
USER_NAME = "pointfail"
#: Debian's own image for the same release, pinned by (index) digest, for machines with a registry.
#: The date matches the Debian snapshot this project's machines were configured from (2025-05-20).
UPSTREAM_IMAGE = (
    "debian:bookworm-20250520-slim@sha256:90522eeb7e5923ee2b871c639059537b30521272f10ca86fdbbbb2b75a8c40cd"
)
#: mtime given to every file in the imported tar (2025-05-20T00:00:00Z), so the layer does not carry
#: the build's wall-clock time.
CLAMP_MTIME = 1747699200
IMPORT_CHANGES = ("ENV LANG=C.UTF-8", "ENV PYTHONDONTWRITEBYTECODE=1", 'CMD ["/usr/bin/python3"]')


class BaseImageError(RuntimeError):
    """The base image cannot be built: no usable mirror in the apt configuration, debootstrap failed,
    or the engine refused the import. The message says which and why."""


@dataclass(frozen=True)
class AptSource:
    """One ``deb`` source from the apt configuration: ``uri`` (a mirror base URL), ``suites`` and
    ``components`` as written there, and the file it came from."""

    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]
    origin: str


def _one_line_sources(path: Path) -> Iterable[AptSource]:
    for line in path.read_text(errors="replace").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        line = re.sub(r"\[[^\]]*\]", " ", line)  # options such as [signed-by=...]
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "deb":
            yield AptSource(parts[1], (parts[2],), tuple(parts[3:]), str(path))


def _deb822_sources(path: Path) -> Iterable[AptSource]:
    text = path.read_text(errors="replace")
    for para in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = None
        for raw in para.splitlines():
            if raw.lstrip().startswith("#"):
                continue
            if raw[:1] in (" ", "\t") and key:
                fields[key] += " " + raw.strip()
                continue
            if ":" in raw:
                key, value = raw.split(":", 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if fields.get("enabled", "yes").lower() == "no":
            continue
        if "deb" not in fields.get("types", "").split():
            continue
        suites = tuple(fields.get("suites", "").split())
        comps = tuple(fields.get("components", "").split())
        for uri in fields.get("uris", "").split():
            yield AptSource(uri, suites, comps, str(path))


def apt_sources(root: Path = Path("/")) -> list[AptSource]:
    """Every ``deb`` source in ``root``'s apt configuration, in apt's reading order:
    ``etc/apt/sources.list`` (one-line format), then ``etc/apt/sources.list.d/*.list`` (one-line) and
    ``*.sources`` (deb822) sorted by file name. Files with other suffixes are ignored, as apt does."""
    out: list[AptSource] = []
    main = root / "etc/apt/sources.list"
    if main.is_file():
        out.extend(_one_line_sources(main))
    d = root / "etc/apt/sources.list.d"
    if d.is_dir():
        for p in sorted(d.iterdir()):
            if p.suffix == ".list":
                out.extend(_one_line_sources(p))
            elif p.suffix == ".sources":
                out.extend(_deb822_sources(p))
    return out


def read_apt_mirror(suite: str = SUITE, root: Path = Path("/")) -> str:
    """The mirror to debootstrap ``suite`` from: the URI of the first ``deb`` source in the machine's
    apt configuration that lists exactly ``suite`` with component ``main``.

    Raises:
        BaseImageError: no such source (the message lists the sources that were read).
    """
    sources = apt_sources(root)
    for s in sources:
        if suite in s.suites and "main" in s.components:
            return s.uri.rstrip("/")
    seen = "; ".join(f"{s.uri} {' '.join(s.suites)} ({s.origin})" for s in sources) or "none"
    raise BaseImageError(f"no apt source for suite {suite!r} with component 'main' in {root}etc/apt (read: {seen})")


def dpkg_versions(rootfs: Path) -> dict[str, str]:
    """``{package: version}`` for every package dpkg marks ``install ok installed`` in ``rootfs``."""
    status = (rootfs / "var/lib/dpkg/status").read_text(errors="replace")
    out: dict[str, str] = {}
    for para in status.split("\n\n"):
        f = dict(
            (k.strip(), v.strip())
            for k, _, v in (ln.partition(":") for ln in para.splitlines() if ln and not ln[0].isspace())
        )
        if f.get("Status") == "install ok installed" and "Package" in f:
            out[f["Package"]] = f.get("Version", "")
    return dict(sorted(out.items()))


def debootstrap(dest: Path, mirror: str, suite: str = SUITE, packages: Iterable[str] = PACKAGES) -> None:
    """Run ``debootstrap --variant=minbase --include=PACKAGES suite dest mirror`` (root only).

    Raises:
        BaseImageError: debootstrap missing or failed (the tail of its output is in the message).
    """
    exe = shutil.which("debootstrap")
    if exe is None:
        raise BaseImageError("debootstrap is not installed (apt-get install -y debootstrap)")
    argv = [exe, f"--variant={VARIANT}", f"--include={','.join(packages)}", suite, str(dest), mirror]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        log = dest / "debootstrap/debootstrap.log"
        extra = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise BaseImageError(f"debootstrap failed ({proc.returncode}):\n{proc.stdout[-1500:]}{proc.stderr[-1500:]}{extra}")


def write_apt_sources(rootfs: Path, suite: str = SUITE, root: Path = Path("/")) -> list[str]:
    """Give ``rootfs`` the machine's Debian sources for ``suite`` and its ``-updates`` and
    ``-security`` pockets (component ``main``), so ``apt-get`` inside images reaches the same package
    versions as the host (debootstrap alone writes only the release pocket). Returns the suites
    written. The URIs are the machine's own and go into the image only, never into the repository."""
    wanted = (suite, f"{suite}-updates", f"{suite}-security")
    lines: list[str] = []
    written: list[str] = []
    for s in apt_sources(root):
        if "main" not in s.components:
            continue
        for su in s.suites:
            if su in wanted and su not in written:
                lines.append(f"deb {s.uri.rstrip('/')} {su} main")
                written.append(su)
    if lines:
        (rootfs / "etc/apt/sources.list").write_text("\n".join(lines) + "\n")
    return written


def add_user(rootfs: Path) -> None:
    """Add the unprivileged user ``pointfail`` (uid/gid 10001, home ``/home/pointfail``, no login
    shell) to ``rootfs`` with ``useradd --root``."""
    argv = ["useradd", "--root", str(rootfs), "--uid", str(USER_ID), "--user-group", "--create-home",
            "--shell", "/usr/sbin/nologin", USER_NAME]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BaseImageError(f"useradd failed: {proc.stderr.strip()}")


def slim(rootfs: Path) -> None:
    """Remove what a container never needs: downloaded .debs, apt lists, logs, /dev nodes."""
    for rel in ("var/cache/apt/archives", "var/lib/apt/lists", "var/log"):
        d = rootfs / rel
        if d.is_dir():
            for p in d.iterdir():
                if p.is_dir() and not p.is_symlink():
                    if p.name != "partial":
                        shutil.rmtree(p)
                else:
                    p.unlink()
    for p in (rootfs / "var/cache/apt").glob("*.bin"):
        p.unlink()


def pack(rootfs: Path, out: Path) -> str:
    """Write ``rootfs`` as an uncompressed tar to ``out`` (entries sorted, numeric owners, mtimes
    clamped to :data:`CLAMP_MTIME`, ``dev/`` left empty) and return the tar's sha256 hex digest."""
    import hashlib

    def _filter(ti: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
        if ti.name.startswith("./dev/"):
            return None
        ti.mtime = min(int(ti.mtime), CLAMP_MTIME)
        ti.uname = ti.gname = ""
        return ti

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.add(str(rootfs), arcname=".", filter=_filter)  # tarfile adds directory entries sorted
    h = hashlib.sha256()
    with open(out, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_lock(lock_path: Path) -> Optional[dict]:
    """The base lock (JSON) or ``None`` when the file does not exist."""
    p = Path(lock_path)
    return json.loads(p.read_text()) if p.is_file() else None


def base_present(client, lock: Optional[dict]) -> bool:
    """True when the engine holds the image whose id the lock records."""
    if not lock or not lock.get("image_id"):
        return False
    from docker.errors import ImageNotFound

    try:
        return client.images.get(lock["image_id"]).id == lock["image_id"]
    except ImageNotFound:
        return False


def build_base(client, lock_path: Path, *, mirror: Optional[str] = None, workdir: Optional[Path] = None,
               log=print) -> dict:
    """Build ``pointfail/base`` from Debian packages, import it, tag it, write ``lock_path``.

    Args:
        client: a ``docker.DockerClient`` (see :func:`pointfail_runner.engine.ensure_engine`).
        lock_path: where the lock JSON goes (normally ``images/base/base.lock.json``).
        mirror: Debian mirror URI; default :func:`read_apt_mirror` (the machine's apt configuration).
        workdir: scratch directory for the tree and the tar (default a temporary directory).

    Returns:
        The lock dict: ``image_id`` (``sha256:…``, the engine's content digest of the image),
        ``tags``, ``rootfs_diff_id``, ``tar_sha256``, ``suite``, ``variant``, ``include``,
        ``packages`` ({name: Debian version}), ``upstream_image``, ``build_seconds``. The mirror is
        not recorded (it is the machine's, and host names stay out of the repository).

    Raises:
        BaseImageError: see the class.
    """
    t0 = time.monotonic()
    mirror = mirror or read_apt_mirror()
    tmp = Path(tempfile.mkdtemp(prefix="pointfail-base-", dir=workdir))
    try:
        rootfs = tmp / "rootfs"
        log(f"[base] debootstrap {SUITE} ({VARIANT}, +{','.join(PACKAGES)}) from the apt-configured mirror")
        debootstrap(rootfs, mirror)
        pockets = write_apt_sources(rootfs)
        log(f"[base] apt sources in the image: {', '.join(pockets) or 'debootstrap default'}")
        add_user(rootfs)
        packages = dpkg_versions(rootfs)
        slim(rootfs)
        tar_path = tmp / "rootfs.tar"
        tar_sha = pack(rootfs, tar_path)
        shutil.rmtree(rootfs)
        date = time.strftime("%Y%m%d", time.gmtime())
        tag = f"{SUITE}-{date}"
        log(f"[base] docker import -> {REPOSITORY}:{tag}")
        try:
            client.api.import_image_from_file(str(tar_path), repository=REPOSITORY, tag=tag,
                                              changes=list(IMPORT_CHANGES))
        except Exception as e:  # docker.errors.APIError and transport errors
            raise BaseImageError(f"docker import failed: {e}") from e
        img = client.images.get(f"{REPOSITORY}:{tag}")
        img.tag(REPOSITORY, SUITE)
        lock = {
            "image_id": img.id,
            "tags": [f"{REPOSITORY}:{tag}", f"{REPOSITORY}:{SUITE}"],
            "rootfs_diff_id": img.attrs["RootFS"]["Layers"][0],
            "tar_sha256": tar_sha,
            "suite": SUITE,
            "variant": VARIANT,
            "include": list(PACKAGES),
            "user": {"name": USER_NAME, "uid": USER_ID, "gid": USER_ID},
            "packages": packages,
            "upstream_image": UPSTREAM_IMAGE,
            "build_seconds": round(time.monotonic() - t0, 1),
        }
        Path(lock_path).parent.mkdir(parents=True, exist_ok=True)
        Path(lock_path).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
        log(f"[base] {img.id} in {lock['build_seconds']} s; lock written to {lock_path}")
        return lock
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_base(client, lock_path: Path, log=print, **kw) -> dict:
    """Reuse the base the lock names when the engine has it; otherwise build it (and rewrite the lock).
    Returns the lock dict. Package versions that moved since the old lock are logged."""
    old = read_lock(lock_path)
    if base_present(client, old):
        log(f"[base] reusing {old['image_id']} ({lock_path})")
        return old
    new = build_base(client, lock_path, log=log, **kw)
    if old and old.get("packages"):
        moved = {k: (old["packages"].get(k), v) for k, v in new["packages"].items() if old["packages"].get(k) != v}
        if moved:
            log(f"[base] Debian package versions differ from the previous lock: {moved}")
    return new
