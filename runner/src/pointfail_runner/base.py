"""The base image, built from Debian packages (issue 4, ``images/base/``; ``shared/DESIGN.md``,
"Containers": "A base image can also be built from Debian packages with debootstrap and
``docker import``, for machines with no container registry").

Steps (:func:`build_base`): read the Debian mirror from this machine's apt configuration
(:func:`read_apt_mirror`, never a host name written in the repository; with a snapshot, the snapshot
archive instead), ``debootstrap --variant=minbase`` Debian bookworm with ``python3``, ``python3-venv``
and ``ca-certificates`` into a temporary directory, give it the machine's apt sources for the
release, ``-updates`` and ``-security`` pockets (:func:`write_apt_sources`), add the unprivileged user
``pointfail`` (uid/gid 10001), drop apt caches and lists, pack the tree as a tar with sorted entries,
numeric owners and clamped mtimes, and ``docker import`` it through the Engine API with labels that
record every installed package's Debian version and the drift from the lock.

The lock (``images/base/base.lock.json``) records the build the committed results were made with:
the image id (its content digest), the layer's diff id, the tar's sha256, and every installed
package's Debian version. A build elsewhere installs what the archive has now (Debian keeps only the
newest point release and security update), so it is tagged by the lock it was built *for*
(:func:`base_key`: ``pointfail/base:bookworm-<key12>``), its drift from the recorded versions is kept in
its labels, and the lock is rewritten only when asked (``record``: ``make base RECORD=1``, ``make
publish``) or when there is none.

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
    with open(out, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def read_lock(lock_path: Path) -> Optional[dict]:
    """The base lock (JSON) or ``None`` when the file does not exist."""
    p = Path(lock_path)
    return json.loads(p.read_text()) if p.is_file() else None


LABEL_KEY = "org.pointfail.base-key"
LABEL_PACKAGES = "org.pointfail.debian-packages"
LABEL_DRIFT = "org.pointfail.debian-drift"
LABEL_SNAPSHOT = "org.pointfail.debian-snapshot"
LABEL_TAR = "org.pointfail.tar-sha256"
LABEL_SECONDS = "org.pointfail.build-seconds"


@dataclass(frozen=True)
class LocalBase:
    """The base image this engine holds for a lock: ``id`` (``sha256:…``), ``tag``
    (``pointfail/base:bookworm-<key12>``), ``key`` (:func:`base_key`), the Debian ``packages`` it
    has, its ``drift`` from the lock (``(package, recorded, installed)``), the ``snapshot`` it was
    built from (or ``None``), and ``built`` (False when reused)."""

    id: str
    tag: str
    key: str
    packages: dict
    drift: tuple
    snapshot: Optional[str]
    built: bool = False


def base_key(lock: Optional[dict], snapshot: Optional[str] = None) -> str:
    """sha256 (hex) of what a base is built *for*: the lock's suite, variant, included packages, user
    and recorded package versions, plus the snapshot timestamp when one is used. Machine-specific
    fields of the lock (image id, tar hash, build time) are left out, so a base built from the same
    lock on another day or machine gets the same key, whatever the archive gave it."""
    import hashlib

    lock = lock or {}
    recipe = {k: lock.get(k) for k in ("suite", "variant", "include", "user", "packages")}
    recipe["snapshot"] = snapshot or None
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def base_tag(lock: Optional[dict], snapshot: Optional[str] = None) -> str:
    """``pointfail/base:<suite>-<key12>``, the local tag of the base built for ``lock``."""
    return f"{REPOSITORY}:{(lock or {}).get('suite', SUITE)}-{base_key(lock, snapshot)[:12]}"


def _labelled(img, lock: Optional[dict], key: str, tag: str, built: bool) -> LocalBase:
    """A :class:`LocalBase` from the image's labels; the drift is computed against ``lock`` (none
    without a lock)."""
    from .aptpins import drift

    labels = (img.attrs.get("Config") or {}).get("Labels") or {}
    packages = json.loads(labels.get(LABEL_PACKAGES, "{}"))
    entries = drift(lock["packages"], packages) if lock and lock.get("packages") else []
    return LocalBase(img.id, tag, key, packages, tuple(entries), labels.get(LABEL_SNAPSHOT) or None, built)


def find_base(client, lock: Optional[dict], snapshot: Optional[str] = None) -> Optional[LocalBase]:
    """The :class:`LocalBase` tagged for ``lock`` (and ``snapshot``) when the engine has it, else ``None``."""
    from docker.errors import ImageNotFound

    tag = base_tag(lock, snapshot)
    try:
        img = client.images.get(tag)
    except ImageNotFound:
        return None
    return _labelled(img, lock, base_key(lock, snapshot), tag, False)


def _label_change(name: str, value: str) -> str:
    """A ``LABEL`` instruction for ``docker import`` changes (JSON string quoting is Dockerfile quoting)."""
    return f"LABEL {name}={json.dumps(value)}"


def build_base(client, lock: Optional[dict] = None, *, mirror: Optional[str] = None, snapshot: Optional[str] = None,
               snapshot_mirror: Optional[str] = None, workdir: Optional[Path] = None, log=print) -> tuple[LocalBase, dict]:
    """Build the base from Debian packages for ``lock`` (the recorded one, or ``None``), import it and
    tag it :func:`base_tag`.

    Args:
        client: a ``docker.DockerClient`` (see :func:`pointfail_runner.engine.ensure_engine`).
        lock: the recorded base lock; its package versions are compared with what was installed.
        mirror: Debian mirror URI; default :func:`read_apt_mirror` (the machine's apt configuration).
        snapshot: a snapshot timestamp (``20250520T000000Z``): debootstrap from, and give the image the
            sources of, ``snapshot_mirror``'s archive of that moment (:func:`aptpins.snapshot_sources`).
        workdir: scratch directory for the tree and the tar (default a temporary directory).

    Returns:
        ``(LocalBase, new_lock)``: ``new_lock`` describes this build in the lock format (``image_id``,
        ``tags``, ``rootfs_diff_id``, ``tar_sha256``, ``suite``, ``variant``, ``include``, ``user``,
        ``packages`` {name: Debian version}, ``upstream_image``, ``build_seconds``); the mirror is not
        in it (it is the machine's, and host names stay out of the repository). Nothing is written:
        see :func:`record_base`.

    Raises:
        BaseImageError: see the class; also a malformed snapshot setting.
    """
    from . import aptpins

    t0 = time.monotonic()
    if snapshot:
        try:
            sources = aptpins.snapshot_sources(snapshot_mirror or "", snapshot)
        except aptpins.AptPinError as e:
            raise BaseImageError(str(e)) from None
        mirror = sources.split()[2]  # the release pocket's URI
    mirror = mirror or read_apt_mirror()
    tmp = Path(tempfile.mkdtemp(prefix="pointfail-base-", dir=workdir))
    try:
        rootfs = tmp / "rootfs"
        log(f"[base] debootstrap {SUITE} ({VARIANT}, +{','.join(PACKAGES)}) from "
            + (f"the snapshot archive {snapshot}" if snapshot else "the apt-configured mirror"))
        debootstrap(rootfs, mirror)
        if snapshot:
            (rootfs / "etc/apt/sources.list").write_text(sources)
            pockets = [f"{SUITE}, {SUITE}-updates, {SUITE}-security at {snapshot}"]
        else:
            pockets = write_apt_sources(rootfs)
        log(f"[base] apt sources in the image: {', '.join(pockets) or 'debootstrap default'}")
        add_user(rootfs)
        packages = dpkg_versions(rootfs)
        slim(rootfs)
        tar_path = tmp / "rootfs.tar"
        tar_sha = pack(rootfs, tar_path)
        shutil.rmtree(rootfs)
        key = base_key(lock, snapshot)
        tag = base_tag(lock, snapshot)
        entries = aptpins.drift((lock or {}).get("packages", {}), packages) if lock else []
        seconds = round(time.monotonic() - t0, 1)
        changes = list(IMPORT_CHANGES) + [
            _label_change(LABEL_KEY, key), _label_change(LABEL_PACKAGES, json.dumps(packages, sort_keys=True)),
            _label_change(LABEL_DRIFT, json.dumps([list(e) for e in entries])),
            _label_change(LABEL_SNAPSHOT, snapshot or ""), _label_change(LABEL_TAR, tar_sha),
            _label_change(LABEL_SECONDS, str(seconds)),
        ]
        repo_name, _, tag_name = tag.partition(":")
        log(f"[base] docker import -> {tag}")
        try:
            client.api.import_image_from_file(str(tar_path), repository=repo_name, tag=tag_name, changes=changes)
        except Exception as e:  # docker.errors.APIError and transport errors
            raise BaseImageError(f"docker import failed: {e}") from e
        img = client.images.get(tag)
        img.tag(REPOSITORY, SUITE)
        new_lock = {
            "image_id": img.id,
            "tags": [tag, f"{REPOSITORY}:{SUITE}"],
            "rootfs_diff_id": img.attrs["RootFS"]["Layers"][0],
            "tar_sha256": tar_sha,
            "suite": SUITE,
            "variant": VARIANT,
            "include": list(PACKAGES),
            "user": {"name": USER_NAME, "uid": USER_ID, "gid": USER_ID},
            "packages": packages,
            "upstream_image": UPSTREAM_IMAGE,
            "build_seconds": seconds,
        }
        for line in aptpins.drift_lines(entries):
            log(f"[base] drift: {line}")
        log(f"[base] {img.id} in {seconds} s" + (f"; {len(entries)} Debian package version(s) differ from the lock"
                                                 if entries else ""))
        return _labelled(img, lock, key, tag, True), new_lock
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def record_base(client, local: LocalBase, lock_path: Path, log=print) -> dict:
    """Write ``lock_path`` from the engine's image ``local`` (its labels hold the package versions and
    tar hash) and tag the image for the new lock, so it is found again. Returns the new lock."""
    img = client.images.get(local.id)
    labels = (img.attrs.get("Config") or {}).get("Labels") or {}
    lock = {
        "image_id": img.id,
        "rootfs_diff_id": img.attrs["RootFS"]["Layers"][0],
        "tar_sha256": labels.get(LABEL_TAR),
        "suite": SUITE,
        "variant": VARIANT,
        "include": list(PACKAGES),
        "user": {"name": USER_NAME, "uid": USER_ID, "gid": USER_ID},
        "packages": json.loads(labels.get(LABEL_PACKAGES, "{}")),
        "upstream_image": UPSTREAM_IMAGE,
        "build_seconds": float(labels.get(LABEL_SECONDS) or 0),
    }
    tag = base_tag(lock, local.snapshot)
    lock["tags"] = [tag, f"{REPOSITORY}:{SUITE}"]
    repo_name, _, tag_name = tag.partition(":")
    img.tag(repo_name, tag_name)
    Path(lock_path).parent.mkdir(parents=True, exist_ok=True)
    Path(lock_path).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    log(f"[base] recorded {img.id} in {lock_path}")
    return lock


def ensure_base(client, lock_path: Path, *, record: bool = False, force: bool = False,
                snapshot: Optional[str] = None, snapshot_mirror: Optional[str] = None, log=print,
                **kw) -> LocalBase:
    """The base for ``lock_path``'s lock: reused when the engine has it (its tag is keyed on the lock),
    built otherwise (or with ``force``). The drift from the recorded package versions is logged.
    The lock is written only with ``record`` or when there is none yet.

    Raises:
        BaseImageError: as :func:`build_base`.
    """
    lock = read_lock(lock_path)
    local = None if force else find_base(client, lock, snapshot)
    if local is not None:
        log(f"[base] reusing {local.tag} ({local.id[:19]})"
            + (f"; {len(local.drift)} Debian package version(s) differ from {lock_path}" if local.drift else ""))
    else:
        local, _ = build_base(client, lock, snapshot=snapshot, snapshot_mirror=snapshot_mirror, log=log, **kw)
    if record or lock is None:
        recorded = find_base(client, record_base(client, local, lock_path, log=log), snapshot)
        if recorded is None:
            raise BaseImageError(f"the base recorded in {lock_path} is not tagged in the engine ({local.id[:19]})")
        local = recorded
    return local
