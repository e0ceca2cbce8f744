"""The archival bundle: one checksummed archive from which a study reproduces with no network at all.

``make bundle [STUDY=default]`` (:func:`make_bundle`) writes ``bundles/pointfail-<study>-<rev12>.tar``
(uncompressed outer tar; the images inside are gzip-compressed) with, in this order::

    pointfail-<study>/host-wheels/*.whl    the host lock's wheels for this machine's Python (first, so
                                           `make` can fill its venv from them without reading further)
    pointfail-<study>/index.json           what is inside: study, source revision, images (tag and id),
                                           the base, file count and sizes, the commands that use it
    pointfail-<study>/SHA256SUMS           sha256 of every other file of the bundle
    pointfail-<study>/source.tar           the checkout's tracked files (code, lock files, records,
                                           tables, suite manifests, study files)
    pointfail-<study>/data/<study>/...     the study's data: the generated suites as rendered, and any
                                           external benchmark directory
    pointfail-<study>/images.tar.gz        `docker save` of the base and every image the study uses
                                           (layers shared between images stored once)

plus ``<bundle>.sha256`` beside it. ``make reproduce BUNDLE=path`` first checks the bundle against
``<bundle>.sha256`` before reading a byte of it as an archive
(:func:`pointfail_runner.bootstrap.check_bundle_digest`: the sums inside travel with the archive, so a
modified bundle with regenerated sums would pass them; compare the digest it prints with the one
published in ``artifact.md``), then (:func:`open_bundle`, then
:func:`pointfail_runner.reproduce.reproduce`) checks every sum, loads the images into the engine,
restores the data and runs every stage with those images: no Debian mirror, no Python index and no
registry are contacted (the Makefile fills its venv from ``host-wheels/`` with ``pip --no-index``).

Members are read with path checks: only regular files and directories under the bundle's own folder,
no absolute paths, no ``..``, no links, so a damaged or hostile archive cannot write elsewhere.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, Callable, Optional

from .locks import file_sha256

INDEX_SCHEMA = "pointfail.bundle/1"
SUMS = "SHA256SUMS"


class BundleError(RuntimeError):
    """A bundle cannot be written or used: a missing image or data directory, a checksum that does not
    match, an unsafe member, or a checkout that differs from the bundle's source."""


@dataclass(frozen=True)
class OpenedBundle:
    """A verified, unpacked bundle: ``root`` (the unpacked folder), its ``index``, and the
    ``images`` (name -> tag) now loaded in the engine."""

    root: Path
    index: dict
    images: dict


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def tracked_files(repo: Path) -> list[str]:
    """The checkout's tracked files that exist in the working tree (``git ls-files``), sorted."""
    return sorted(p for p in _git(repo, "ls-files", "-z").split("\0") if p and (Path(repo) / p).is_file())


def _add_tree(tar: tarfile.TarFile, src: Path, arcname: str) -> None:
    """Add ``src`` (a directory) under ``arcname`` with sorted entries, no owners, files and folders only."""
    def _clean(ti: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
        if not (ti.isfile() or ti.isdir()):
            return None
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti

    tar.add(str(src), arcname=arcname, filter=_clean)


def _member(tar: tarfile.TarFile, m: tarfile.TarInfo) -> IO[bytes]:
    """The contents of the regular file ``m`` of ``tar``. Raises :class:`BundleError` when ``m`` has
    no contents to read (a directory, link or device where a file was expected)."""
    f = tar.extractfile(m)
    if f is None:
        raise BundleError(f"{m.name!r} in a saved image archive is not a regular file")
    return f


def save_images(client, images: list[tuple[str, str]], out: Path, log: Callable[[str], None] = print) -> None:
    """Write ``docker save`` of every ``(tag, image id)`` in ``images`` into one gzip-compressed tar at
    ``out``, storing a layer (or blob) shared by several images once: each image is saved on its own
    (the docker SDK saves one image per call) and the archives are merged, file by file for the
    content-addressed entries, ``manifest.json`` and OCI ``index.json`` lists concatenated,
    ``repositories`` merged. ``docker load`` reads the result like any saved archive.

    Each image is saved by its id under its tag, so the archive holds exactly the images the index
    records even on an engine where other builds move tags meanwhile.

    Raises:
        BundleError: an image is gone, or ``tag`` no longer names it (another build on the same
            engine re-tagged or pruned it while the bundle was being made).
    """
    with tempfile.TemporaryDirectory(prefix="pointfail-save-", dir=out.parent) as tmp:
        merged = Path(tmp) / "merged"
        merged.mkdir()
        lists = _SavedLists()
        for ref, image_id in images:
            img = _image_named(client, ref, image_id)
            one = Path(tmp) / "one.tar"
            with open(one, "wb") as f:
                for chunk in img.save(named=ref):
                    f.write(chunk)
            with tarfile.open(one) as tar:
                for m in tar:
                    _merge_member(tar, m, merged, lists)
            one.unlink()
            log(f"[bundle] saved {ref}")
        (merged / "manifest.json").write_text(json.dumps(lists.manifests))
        if lists.repositories:
            (merged / "repositories").write_text(json.dumps(lists.repositories))
        if lists.oci:
            (merged / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": lists.oci}))
        with gzip.open(out, "wb", compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
            for p in sorted(merged.rglob("*")):
                tar.add(str(p), arcname=str(p.relative_to(merged)), recursive=False)


@dataclass
class _SavedLists:
    """The merged lists of the saved archives: ``manifest.json`` entries, OCI ``index.json``
    manifests (each once, in order) and ``repositories`` (tags merged per repository)."""

    manifests: list = field(default_factory=list)
    oci: list = field(default_factory=list)
    repositories: dict = field(default_factory=dict)


def _image_named(client, ref: str, image_id: str) -> Any:
    """The engine's image ``image_id``; raises :class:`BundleError` when it is gone or ``ref`` no
    longer names it."""
    try:
        img = client.images.get(image_id)
    except Exception:  # docker.errors.ImageNotFound (the docker SDK is imported lazily)
        img = None
    if img is None or ref not in img.tags:
        raise BundleError(f"{ref} no longer names image {image_id[:19]} in the engine (another build re-tagged "
                          "or pruned it while the bundle was being made); run make bundle again")
    return img


def _merge_member(tar: tarfile.TarFile, m: tarfile.TarInfo, merged: Path, lists: _SavedLists) -> None:
    """Merge one member of a saved archive into ``merged``: the three list files into ``lists``;
    directories, regular files and (legacy format) symlinks by name, the first copy kept (entries
    are content-addressed). A member named outside the archive root is skipped."""
    name = m.name.lstrip("./")
    if not name or name.startswith("/") or ".." in PurePosixPath(name).parts:
        return
    if name == "manifest.json":
        lists.manifests += [e for e in json.load(_member(tar, m)) if e not in lists.manifests]
    elif name == "repositories":
        for repo_name, tags in json.load(_member(tar, m)).items():
            lists.repositories.setdefault(repo_name, {}).update(tags)
    elif name == "index.json":
        lists.oci += [e for e in json.load(_member(tar, m)).get("manifests", []) if e not in lists.oci]
    elif m.isdir():
        (merged / name).mkdir(parents=True, exist_ok=True)
    elif m.isfile() and not (merged / name).exists():
        (merged / name).parent.mkdir(parents=True, exist_ok=True)
        with open(merged / name, "wb") as f:
            shutil.copyfileobj(_member(tar, m), f)
    elif m.issym() and not (merged / name).exists():
        (merged / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(m.linkname, merged / name)  # legacy format: a layer shared by reference


def _checked_data_dirs(study, roots, generated: list) -> dict[str, Path]:
    """The data folder of every benchmark of ``study`` (``{name: folder}``, in study order, where
    ``roots``, the study's ``Roots``, declares it), after checking that each of ``generated`` (its
    generated-suite benchmarks, already rendered) matches its committed manifest
    ``<study folder>/suites/<name>.manifest.json`` in content and its own ``manifest.json`` on disk:
    a bundle holds the data the records were made from, as rendered, untouched since.

    Raises:
        BundleError: a suite differs from its committed or its own manifest, or a data folder is
            missing (each names the ``make data`` command).
        and what :func:`pointfail.generated.suites.manifest.read_manifest` raises.
    """
    from pointfail.generated.suites.manifest import compare_manifests, read_manifest, verify_manifest

    for b in generated:
        committed = study.file.parent / "suites" / f"{b.name}.manifest.json"
        here = roots.data_dir(b)
        cmp = compare_manifests(json.loads(committed.read_text()), read_manifest(here))
        if not cmp.content_matches or not verify_manifest(here).ok:
            raise BundleError(f"suite {b.name} in {here} differs from {committed} (or from its own manifest); "
                              f"render it again: make data STUDY={study.name}")
    data_dirs = {}
    for b in study.benchmarks:
        d = roots.data_dir(b)
        if not d.is_dir():
            raise BundleError(f"data for {b.name} missing: {d} (make data STUDY={study.name}, or fetch it)")
        data_dirs[b.name] = d
    return data_dirs


def make_bundle(repo: Path, study_file: Path, *, variant: str = "cpu", out_dir: Optional[Path] = None,
                log: Callable[[str], None] = print) -> Path:
    """Write the bundle of ``study_file`` (layout in the module docstring) and return its path.

    The images are the ones this checkout builds (built first when missing), the generated suites are
    rendered in the pinned suites image when ``data/<study>/`` lacks them and compared with the
    committed manifests, and the host wheels are fetched for this machine's Python (from the pip
    cache or the package index) and checked against ``runner/requirements.lock``.

    Raises:
        BundleError: a suite's content differs from its committed manifest (a bundle must hold what the
            records were made from), external data is missing, or pip cannot fetch the host wheels.
        and what :func:`pointfail_runner.images.ensure_image` raises.
    """
    from . import base as bmod
    from . import images as imod
    from .engine import ensure_engine
    from .reproduce import SUITES_IMAGE, make_suites
    from pointfail.inputs.study import Roots, load_study

    repo = Path(repo).resolve()
    study = load_study(study_file)
    client = ensure_engine()
    t0 = time.monotonic()
    base = bmod.ensure_base(client, repo / "images/base/base.lock.json", log=log)
    generated = [b for b in study.benchmarks if b.generator]
    names = sorted({m.image for m in study.models if m.kind == "container"} | ({SUITES_IMAGE} if generated else set()))
    built = {n: imod.ensure_image(client, repo, n, variant=variant, log=log) for n in names}
    roots = Roots.for_study(study, repo)
    if any(not (roots.data_dir(b) / "manifest.json").is_file() for b in generated):
        log(f"[bundle] rendering the suites in {built[SUITES_IMAGE].tag}")
        make_suites(client, repo, study, built[SUITES_IMAGE].tag, roots.data, log=log)
    data_dirs = _checked_data_dirs(study, roots, generated)
    rev = _git(repo, "rev-parse", "HEAD").strip()
    dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no").strip())
    out_dir = Path(out_dir or repo / "bundles")
    out_dir.mkdir(parents=True, exist_ok=True)
    folder = f"pointfail-{study.name}"
    final = out_dir / f"{folder}-{rev[:12]}{'-dirty' if dirty else ''}.tar"
    with tempfile.TemporaryDirectory(prefix="pointfail-bundle-", dir=out_dir) as tmp:
        stage = Path(tmp) / folder
        (stage / "host-wheels").mkdir(parents=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
                               "--only-binary=:all:", "-d", str(stage / "host-wheels"), "-r",
                               str(repo / "runner/requirements.lock")], capture_output=True, text=True)
        if proc.returncode != 0:
            raise BundleError(f"pip download of the host wheels failed:\n{proc.stderr[-2000:]}")
        with tarfile.open(stage / "source.tar", "w") as tar:
            for rel in tracked_files(repo):
                tar.add(str(repo / rel), arcname=rel, recursive=False)
        for name, d in data_dirs.items():
            dest = stage / "data" / study.name / name
            shutil.copytree(d, dest, ignore=shutil.ignore_patterns("__pycache__", ".*"))
        saved = [(base.tag, base.id)] + [(built[n].tag, built[n].id) for n in names]
        log(f"[bundle] saving {len(saved)} images (docker save, shared layers once, gzip)")
        save_images(client, saved, stage / "images.tar.gz", log=log)
        files = sorted(p for p in stage.rglob("*") if p.is_file())
        index = {
            "schema": INDEX_SCHEMA,
            "study": study.name,
            "study_file": str(study.file.resolve().relative_to(repo)) if study.file.resolve().is_relative_to(repo)
            else study.file.name,
            "source_revision": rev + ("-dirty" if dirty else ""),
            "source_sha256": imod.source_sha256(repo),
            "variant": variant,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "base": {"tag": base.tag, "id": base.id, "debian_drift": [list(e) for e in base.drift]},
            "images": {n: {"tag": built[n].tag, "id": built[n].id, "debian_drift": [list(e) for e in built[n].drift]}
                       for n in names},
            "python": "%d.%d" % sys.version_info[:2],
            "files": len(files),
            "bytes": sum(p.stat().st_size for p in files),
            "use": [f"tar -xf {final.name} {folder}/source.tar && tar -xf {folder}/source.tar  (when you have no checkout)",
                    f"make reproduce STUDY={study.name} BUNDLE={final.name}"],
        }
        (stage / "index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
        sums = {str(p.relative_to(stage)): file_sha256(p) for p in files + [stage / "index.json"]}
        (stage / SUMS).write_text("".join(f"{h}  {rel}\n" for rel, h in sorted(sums.items())))
        part = final.with_suffix(".tar.part")
        with tarfile.open(part, "w") as tar:
            order = ["host-wheels", "index.json", SUMS, "source.tar", "data", "images.tar.gz"]
            tar.add(str(stage), arcname=folder, recursive=False)
            for name in order:
                if (stage / name).exists():
                    _add_tree(tar, stage / name, f"{folder}/{name}")
        part.rename(final)
    digest = file_sha256(final)
    final.with_name(final.name + ".sha256").write_text(f"{digest}  {final.name}\n")
    size = final.stat().st_size
    log(f"[bundle] {final} ({size / 1e9:.2f} GB, sha256 {digest[:16]}…) in {time.monotonic() - t0:.0f} s")
    return final


def _safe_members(tar: tarfile.TarFile, folder: str):
    """The archive's members, checked: under ``folder/``, relative, no ``..``, regular files and
    directories only. Raises :class:`BundleError` on anything else."""
    for m in tar:
        parts = PurePosixPath(m.name).parts
        if m.name.startswith("/") or ".." in parts or not parts or parts[0] != folder:
            raise BundleError(f"unsafe bundle member {m.name!r}")
        if not (m.isfile() or m.isdir()):
            raise BundleError(f"bundle member {m.name!r} is not a regular file or directory")
        yield m


def unpack(bundle: Path, dest: Path, log: Optional[Callable[[str], None]] = None) -> Path:
    """Check ``<bundle>.sha256`` (:func:`pointfail_runner.bootstrap.check_bundle_digest`), then unpack
    ``bundle`` into ``dest`` (members checked by :func:`_safe_members`), verify every ``SHA256SUMS``
    line and that no unlisted file is present, and return the bundle's folder.

    Raises:
        BundleError: a missing or differing outer digest, unreadable archive, unsafe member, a
            missing or mismatching file.
    """
    from .bootstrap import BootstrapError, check_bundle_digest

    bundle = Path(bundle)
    try:
        digest = check_bundle_digest(bundle)  # the outer digest first: not a byte is read as an archive before it
    except BootstrapError as e:
        raise BundleError(str(e)) from None
    if log is not None:
        log(f"[bundle] {bundle}: sha256 {digest} matches {bundle.name}.sha256 (compare it with the digest "
            "published in artifact.md)")
    extra: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    try:
        with tarfile.open(bundle, "r:") as tar:
            first = tar.next()
        if first is None:
            raise BundleError(f"{bundle} is empty")
        folder = PurePosixPath(first.name).parts[0]
        with tarfile.open(bundle, "r:") as tar:
            tar.extractall(dest, members=_safe_members(tar, folder), **extra)
    except (tarfile.TarError, OSError) as e:
        raise BundleError(f"{bundle}: cannot read the archive ({e})") from None
    root = Path(dest) / folder
    sums_path = root / SUMS
    if not sums_path.is_file():
        raise BundleError(f"{bundle}: no {SUMS}")
    listed = {}
    for line in sums_path.read_text().splitlines():
        digest, _, rel = line.partition("  ")
        listed[rel] = digest
    present = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} - {SUMS}
    problems = [f"{rel}: listed, missing" for rel in sorted(set(listed) - present)]
    problems += [f"{rel}: present, not listed" for rel in sorted(present - set(listed))]
    problems += [f"{rel}: sha256 differs" for rel in sorted(set(listed) & present) if file_sha256(root / rel) != listed[rel]]
    if problems:
        raise BundleError(f"{bundle} failed its checksums:\n  " + "\n  ".join(problems[:20]))
    return root


def open_bundle(client, repo: Path, bundle: Path, study_name: str, *, log: Callable[[str], None] = print) -> OpenedBundle:
    """Verify and unpack ``bundle`` under ``repo/work/bundle/``, check that this checkout is the
    bundle's source, load its images into the engine (``docker load``; nothing is pulled) and restore
    its data under ``repo/data/<study>/`` (directories already there are left alone). Returns the
    :class:`OpenedBundle`.

    Raises:
        BundleError: checksums, another study, a checkout whose source differs from the bundle's (the
            bundle's own ``source.tar`` is the way out), or an image the engine does not hold after
            loading.
    """
    from . import images as imod

    repo = Path(repo).resolve()
    work = repo / "work" / "bundle"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    t0 = time.monotonic()
    root = unpack(bundle, work, log)
    index = json.loads((root / "index.json").read_text())
    log(f"[bundle] {bundle}: {index['files']} files, every sha256 matches ({time.monotonic() - t0:.0f} s)")
    if index.get("study") != study_name:
        raise BundleError(f"{bundle} holds study {index.get('study')!r}, not {study_name!r}")
    if index.get("source_sha256") != imod.source_sha256(repo):
        raise BundleError(f"this checkout's pointfail source differs from the bundle's ({index.get('source_revision')}); "
                          f"unpack the bundle's source.tar into an empty directory and run make there")
    with open(root / "images.tar.gz", "rb") as f:
        client.images.load(f)
    images = {}
    for name, info in sorted(index["images"].items()) + [("base", index["base"])]:
        img = client.images.get(info["tag"])
        if img.id != info["id"]:
            raise BundleError(f"image {info['tag']} is {img.id} in the engine, the bundle recorded {info['id']}")
        images[name] = info["tag"]
    log(f"[bundle] loaded {len(images)} images ({time.monotonic() - t0:.0f} s)")
    for d in sorted((root / "data" / study_name).iterdir()) if (root / "data" / study_name).is_dir() else []:
        dest = repo / "data" / study_name / d.name  # d.name: a member checked by _safe_members
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(d, dest)
            log(f"[bundle] restored data {dest.relative_to(repo)}")
    return OpenedBundle(root, index, images)
