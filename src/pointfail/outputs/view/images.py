"""Images for the failure browser: where a record's image is, the site's copies and thumbnails, the
target tint layers, and which command brings missing images.

Records name their image by a path relative to the checkout (``data/<study>/<benchmark>/...``, see
``docs/architecture.md``, "Studies"). A path is untrusted input: it is resolved against the declared
roots only (the checkout the study lives in, plus any ``--image-root`` the user names); a path that
leaves every root, or a file Pillow cannot read as an image, is reported on the sample page and never
copied into the site.

Site layout (under the output directory), every file named by a content hash so a rebuild reuses
what exists (thumbnails are generated once per image):

* ``img/f/<sha256 of the file>.<ext>``: the original bytes (hard link when the file system allows,
  else a copy), shown full size on sample pages;
* ``img/t/<sha256 of the file>.jpg``: a thumbnail ``THUMB_WIDTH`` px wide (JPEG, quality 85) for the
  list;
* ``img/m/<sha256 of the target>.png``: the tint layer of a mask or polygon target
  (:func:`pointfail.running.judges.render.tint_layer`), cropped to the target's bounding box. Box targets
  are drawn as rectangles by the page itself from the same pixel cells
  (:func:`pointfail.geometry.shapes.box_cells`), so they need no file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from pointfail.records import Record, Target, sha256_file

__all__ = [
    "THUMB_WIDTH",
    "ImageInfo",
    "ImageStore",
    "find_checkout",
    "missing_image_hint",
    "resolve_inside",
]

THUMB_WIDTH = 320
"""Width in pixels of list thumbnails (height keeps the aspect ratio)."""

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp"})
"""File name endings of images copied into the site under their own suffix (others become ``.img``)."""


def find_checkout(study_dir: str | Path) -> Path:
    """The checkout a study directory belongs to: ``records/<study>`` sits two levels below it.
    For a study directory elsewhere (a copy in a temporary folder), the same rule holds: the
    directory two levels up is where ``data/<study>/...`` paths are resolved."""
    return Path(study_dir).resolve().parent.parent


def resolve_inside(path: str, roots: Sequence[Path]) -> Optional[Path]:
    """The existing file ``path`` names, resolved against each root in turn (an absolute path as
    is), if the resolved file (symbolic links followed) lies inside one of ``roots``; else ``None``.

    Args:
        path: a path from a record (untrusted).
        roots: the declared roots, absolute.
    """
    if not path or "\x00" in path:
        return None
    p = Path(path)
    candidates = [p] if p.is_absolute() else [r / p for r in roots]
    real_roots = [r.resolve() for r in roots]
    for c in candidates:
        try:
            real = c.resolve()
        except (OSError, RuntimeError):
            continue
        if not real.is_file():
            continue
        if any(real == r or r in real.parents for r in real_roots):
            return real
    return None


def _study_benchmarks(study_dir: Path) -> dict[str, dict[str, Any]]:
    toml = study_dir / "study.toml"
    if not toml.is_file():
        return {}
    try:
        with open(toml, "rb") as f:
            raw = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    out = {}
    for b in raw.get("benchmarks", []) or []:
        if isinstance(b, dict) and isinstance(b.get("name"), str):
            out[b["name"]] = b
    return out


def missing_image_hint(study_dir: str | Path, benchmark: str) -> str:
    """The command that brings a benchmark's images, as a sentence for a page or a figure.

    * A generated suite (the benchmark has a ``generator`` in ``study.toml``): ``make data
      STUDY=<study>``, which runs ``python -m pointfail_runner data --study
      records/<study>/study.toml``: it renders the study's suites inside the pinned ``suites``
      image into ``data/<study>/<benchmark>/`` and checks every file against the committed
      manifests. The sheets and text suites can also be generated without Docker with
      ``pointfail generate <generator> --n N --seed S [--absent-share F] --out data/<study>/<benchmark>``
      (:func:`pointfail.generated.suites.generate_command`; byte-identical
      to the manifests on the pinned fonts); the web suite needs the pinned browser.
    * A downloadable benchmark (its loader is in ``pointfail data sources``): ``pointfail data
      fetch <loader> --to <data dir>``.
    * Otherwise: where the images are expected.
    """
    d = Path(study_dir)
    bench = _study_benchmarks(d).get(benchmark)
    toml = d / "study.toml"
    study_name = d.resolve().name
    if toml.is_file():
        try:
            with open(toml, "rb") as f:
                study_name = str(tomllib.load(f).get("study", {}).get("name") or study_name)
        except (OSError, tomllib.TOMLDecodeError):
            pass
    data_dir = f"data/{study_name}/{benchmark}"
    if bench is not None and bench.get("data_dir"):
        data_dir = str(bench["data_dir"])
    if bench is not None and bench.get("generator"):
        gen = str(bench["generator"])
        msg = (f"bring them with `make data STUDY={study_name}` (renders the {benchmark} suite in the "
               f"pinned suites image into {data_dir}/ and checks it against the committed manifest)")
        from pointfail.generated.suites import generate_command

        cmd = generate_command(gen, bench.get("n"), bench.get("seed"), bench.get("absent_share"), data_dir)
        if cmd:
            msg += f", or without Docker `{cmd}`"
        return msg
    from pointfail.inputs.benchmarks.fetch import sources  # imports no network code until called

    loader = str(bench.get("loader", benchmark)) if bench is not None else benchmark
    if loader in sources():
        return f"bring them with `pointfail data fetch {loader} --to {data_dir}`"
    return f"the images are expected under {data_dir}/ (not part of the records)"


@dataclass
class ImageInfo:
    """One record image as the site shows it.

    Attributes:
        path: the path the record names.
        file: where it was found (``None``: missing, outside the roots, or unreadable).
        sha256: hash of the file found (``None`` when no file).
        full: the site's copy, relative to the site root (``None`` without a file).
        thumb: the thumbnail, relative to the site root.
        note: why there is no image, or a warning (a file whose hash differs from the record's).
    """

    path: str
    file: Optional[Path] = None
    sha256: Optional[str] = None
    full: Optional[str] = None
    thumb: Optional[str] = None
    note: Optional[str] = None


@dataclass
class ImageStore:
    """Copies, thumbnails and tint layers of a study's images in a site directory, each made once.

    Args:
        out_dir: the site root.
        study_dir: the study (for :func:`missing_image_hint`).
        roots: directories record paths may resolve into (the checkout, ``--image-root`` folders).
        with_images: ``False`` skips every image file (the page then says images were left out).
    """

    out_dir: Path
    study_dir: Path
    roots: list[Path]
    with_images: bool = True
    made: dict[str, int] = field(default_factory=lambda: {"full": 0, "thumb": 0, "tint": 0, "reused": 0})
    _by_path: dict[str, ImageInfo] = field(default_factory=dict)
    _tints: dict[str, Optional[dict[str, Any]]] = field(default_factory=dict)
    _hints: dict[str, str] = field(default_factory=dict)

    def hint(self, benchmark: str) -> str:
        """:func:`missing_image_hint` for ``benchmark``, computed once."""
        if benchmark not in self._hints:
            self._hints[benchmark] = missing_image_hint(self.study_dir, benchmark)
        return self._hints[benchmark]

    def image(self, rec: Record) -> ImageInfo:
        """The site's copy and thumbnail of ``rec.image`` (made on first use)."""
        key = rec.image.path
        info = self._by_path.get(key)
        if info is None:
            info = self._make(rec)
            self._by_path[key] = info
        if info.file is not None and rec.image.sha256 and info.sha256 != rec.image.sha256:
            return ImageInfo(info.path, info.file, info.sha256, info.full, info.thumb,
                             f"the file at {info.path} is not the image this record was made from "
                             f"(sha256 {(info.sha256 or '?')[:12]}… on disk, {rec.image.sha256[:12]}… in the record); "
                             + self.hint(rec.benchmark))
        return info

    def _make(self, rec: Record) -> ImageInfo:
        path = rec.image.path
        if not self.with_images:
            return ImageInfo(path, note="images were left out of this site (--no-images)")
        src = resolve_inside(path, self.roots)
        if src is None:
            return ImageInfo(path, note=f"image not available: {path}; {self.hint(rec.benchmark)}")
        try:
            digest = sha256_file(src)
        except OSError as e:
            return ImageInfo(path, note=f"image unreadable: {path}: {e}")
        suffix = src.suffix.lower() if src.suffix.lower() in IMAGE_SUFFIXES else ".img"
        full = f"img/f/{digest}{suffix}"
        thumb = f"img/t/{digest}.jpg"
        full_path, thumb_path = self.out_dir / full, self.out_dir / thumb
        if full_path.is_file() and thumb_path.is_file():
            self.made["reused"] += 1
            return ImageInfo(path, src, digest, full, thumb)
        try:
            from PIL import Image

            with Image.open(src) as im:
                im.load()
                rgb = im.convert("RGB")
        except Exception as e:  # Pillow raises many types for a bad file: report it, never crash
            return ImageInfo(path, note=f"image unreadable: {path}: {type(e).__name__}: {e}")
        if not full_path.is_file():
            full_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = full_path.with_name(full_path.name + ".tmp")
            try:
                os.link(src, tmp)
            except OSError:
                shutil.copyfile(src, tmp)
            os.replace(tmp, full_path)
            self.made["full"] += 1
        if not thumb_path.is_file():
            thumb_path.parent.mkdir(parents=True, exist_ok=True)
            w, h = rgb.size
            tw = min(THUMB_WIDTH, w)
            th = max(1, round(h * tw / w))
            small = rgb.resize((tw, th), Image.Resampling.LANCZOS) if tw != w else rgb
            tmp = thumb_path.with_name(thumb_path.name + ".tmp")
            small.save(tmp, format="JPEG", quality=85, optimize=True)
            os.replace(tmp, thumb_path)
            self.made["thumb"] += 1
        return ImageInfo(path, src, digest, full, thumb)

    def tint(self, rec: Record) -> Optional[dict[str, Any]]:
        """The target's tint for the page: ``{"cells": [[c0, r0, c1, r1], ...]}`` for box targets
        (inclusive pixel cells), ``{"layer": path, "x", "y", "w", "h"}`` for masks and polygons
        (made once per target hash), ``{"note": why}`` when a mask cannot be read, ``None`` for an
        absent target."""
        t = rec.target
        size = (rec.image.width, rec.image.height)
        if t.kind == "absent":
            return None
        if t.kind == "boxes":
            from pointfail.geometry.shapes import box_cells

            cells = [list(c) for c in (box_cells(b, size) for b in (t.boxes or []) if len(b) == 4) if c is not None]
            return {"cells": cells}
        key = t.sha256 or hashlib.sha256(t.model_dump_json().encode("utf-8")).hexdigest()
        key = f"{key}-{size[0]}x{size[1]}"
        if key in self._tints:
            return self._tints[key]
        self._tints[key] = out = self._make_tint(t, size, key, rec.benchmark)
        return out

    def _make_tint(self, t: Target, size: tuple[int, int], key: str, benchmark: str) -> Optional[dict[str, Any]]:
        from pointfail.running.judges.render import target_raster, tint_layer

        if t.kind == "mask":
            mp = resolve_inside(t.mask_path or "", self.roots)
            if mp is None:
                return {"note": f"target mask not available: {t.mask_path}; {self.hint(benchmark)}"}
            t = t.model_copy(update={"mask_path": str(mp)})
        try:
            raster = target_raster(t, size)
        except (OSError, ValueError) as e:
            return {"note": f"target cannot be drawn: {e}"}
        layer, (x, y) = tint_layer(raster)
        rel = f"img/m/{hashlib.sha256(key.encode('utf-8')).hexdigest()}.png"
        dest = self.out_dir / rel
        if not dest.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".tmp")
            layer.save(tmp, format="PNG", optimize=True)
            os.replace(tmp, dest)
            self.made["tint"] += 1
        return {"layer": rel, "x": x, "y": y, "w": layer.width, "h": layer.height}
