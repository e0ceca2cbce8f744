"""Writing a generated suite: deterministic PNGs, the directory layout, and the generation loop.

Directory layout (``docs/architecture.md``, "Generated suites"; PointerBench's own
``data/test/metadata.jsonl`` layout plus scene graphs)::

    DIR/manifest.json
    DIR/data/test/metadata.jsonl            one canonical JSON line per sample, sorted by id
    DIR/data/test/<stem>.png                1024x768 RGB
    DIR/data/test/scene_graphs/<stem>.json  {"schema": "pointfail.scene_graph/1", ...}

Determinism: PNGs are written by Pillow with a fixed zlib level and no ancillary chunks (no time,
text or gamma chunks); JSON is :func:`pointfail.records.canonical_json`; each sample's random stream
and category come from :mod:`pointfail.generated.suites.rows`. Identical pixels across machines additionally
need the same font files, FreeType and Pillow (:mod:`pointfail.generated.suites.fonts`), recorded in the
manifest's ``environment`` (:mod:`pointfail.generated.suites.manifest`).
"""

from __future__ import annotations

import io
import random
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pointfail.records import canonical_json, sha256_bytes
from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.fonts import check_fonts, environment_versions
from pointfail.generated.suites.manifest import content_sha256, suite_manifest_fields
from pointfail.generated.suites.rows import SampleSpec, build_row, sample_rng
from pointfail.generated.suites.scene import IMAGE_SIZE, scene_graph_json

__all__ = [
    "MAX_ATTEMPTS",
    "PNG_COMPRESS_LEVEL",
    "SuiteWriter",
    "generate_suite",
    "png_bytes",
    "write_suite_files",
]

PNG_COMPRESS_LEVEL = 6
"""zlib level for every PNG; fixed so bytes do not depend on Pillow's default."""

MAX_ATTEMPTS = 50
"""Layouts drawn for one index before :func:`generate_suite` gives up on it (each attempt has its own
random stream, so retries are deterministic)."""


def png_bytes(image) -> bytes:
    """Encode a Pillow RGB image as PNG bytes with zlib level :data:`PNG_COMPRESS_LEVEL`, no
    optimization pass and no ancillary chunks (Pillow writes only IHDR/IDAT/IEND unless given
    ``pnginfo``/``dpi``/``icc_profile``; we give none)."""
    if image.mode != "RGB":
        image = image.convert("RGB")
    image.info.clear()
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return buf.getvalue()


class SuiteWriter:
    """Writes one suite's files into a fresh temporary directory beside ``out_dir`` and moves it into
    place in :meth:`finish`, so an interrupted run never leaves a half-written suite; on an exception
    inside ``with SuiteWriter(...)`` the temporary directory is removed.

    Layout (``docs/architecture.md``): ``data/test/<name>.png``, ``data/test/scene_graphs/<stem>.json``
    (canonical JSON), ``data/test/metadata.jsonl`` (rows as canonical JSON lines sorted by ``id``) and
    ``manifest.json`` (the caller's fields plus ``files``: relative path -> :func:`content_sha256`,
    sorted).

    Raises:
        ``error`` (default :class:`SuiteError`): ``out_dir`` exists and holds something other than a
            suite (an existing suite, i.e. a directory with ``manifest.json``, or an empty directory,
            is replaced).
    """

    def __init__(self, out_dir: str | Path, *, error: type[Exception] = SuiteError):
        out = Path(out_dir)
        if out.exists():
            if not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").is_file()):
                raise error(f"{out} exists and is not a generated suite (no manifest.json); refusing to overwrite")
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        self.test_dir = self.tmp / "data" / "test"
        (self.test_dir / "scene_graphs").mkdir(parents=True)
        self.files: dict[str, str] = {}

    def __enter__(self) -> "SuiteWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def add_image(self, name: str, png: bytes, scene_graph: dict[str, Any]) -> None:
        """Write image ``name`` (e.g. ``"0000.png"``) and its scene graph ``scene_graphs/<stem>.json``."""
        (self.test_dir / name).write_bytes(png)
        self.files[f"data/test/{name}"] = content_sha256(name, png)
        sg = canonical_json(scene_graph).encode("utf-8")
        rel = f"scene_graphs/{Path(name).stem}.json"
        (self.test_dir / rel).write_bytes(sg)
        self.files[f"data/test/{rel}"] = sha256_bytes(sg)

    def finish(self, rows: list[dict[str, Any]], manifest_fields: dict[str, Any]) -> dict[str, Any]:
        """Write ``metadata.jsonl`` and ``manifest.json`` (``manifest_fields`` plus ``files``), move the
        suite into place (replacing an earlier one) and return the manifest."""
        meta = "".join(canonical_json(r) for r in sorted(rows, key=lambda r: r["id"])).encode("utf-8")
        (self.test_dir / "metadata.jsonl").write_bytes(meta)
        self.files["data/test/metadata.jsonl"] = sha256_bytes(meta)
        manifest = dict(manifest_fields, files=dict(sorted(self.files.items())))
        (self.tmp / "manifest.json").write_bytes(canonical_json(manifest).encode("utf-8"))
        self.tmp.chmod(0o755)  # mkdtemp makes 0700; suites are read by other users (container workers)
        if self.out.exists():
            shutil.rmtree(self.out)
        self.tmp.rename(self.out)
        return manifest


def write_suite_files(out_dir: str | Path, *, rows: list[dict[str, Any]], images: dict[str, bytes],
                      scene_graphs: dict[str, dict[str, Any]], manifest_fields: dict[str, Any],
                      error: type[Exception] = SuiteError) -> dict[str, Any]:
    """Write a whole suite held in memory (``images``: file name -> PNG bytes, ``scene_graphs``: the
    same file names -> scene graph JSON) with :class:`SuiteWriter`; returns the manifest. Raises
    ``error`` as :class:`SuiteWriter` does, ``KeyError`` when an image has no scene graph."""
    with SuiteWriter(out_dir, error=error) as w:
        for name, png in sorted(images.items()):
            w.add_image(name, png, scene_graphs[name])
        return w.finish(rows, manifest_fields)


def generate_suite(
    *,
    suite: str,
    generator: str,
    id_prefix: str,
    out_dir: str | Path,
    n: int,
    seed: int,
    make_sample: Callable[[random.Random, int], SampleSpec],
    font_names: Iterable[str],
    generator_version: int,
    absent_share: float = 0.0,
) -> dict[str, Any]:
    """Generate ``n`` samples into ``out_dir`` and write the manifest; returns the manifest.
    With ``absent_share`` > 0, that share of rows names a referent that is not in the image
    (:func:`pointfail.generated.suites.absent.make_absent_rows`).

    ``make_sample(rng, index)`` builds one sample or raises :class:`SuiteError` when the drawn target
    is not unique; the index is then retried with the next attempt's stream (up to
    :data:`MAX_ATTEMPTS`), so retries are deterministic too. Files are written by
    :class:`SuiteWriter` (a temporary directory moved into place at the end, so an interrupted run
    never leaves a half-written suite); an existing ``out_dir`` must be empty or hold an earlier suite
    (manifest.json), which is replaced.

    Raises:
        FontMissingError: a font is not installed (checked before anything is rendered).
        SuiteError: ``out_dir`` exists and holds something other than a suite; or an index found no
            unique target in :data:`MAX_ATTEMPTS` attempts.
    """
    if n < 0:
        raise SuiteError(f"n must be >= 0, got {n}")
    font_names = sorted(set(font_names))
    check_fonts(font_names)
    with SuiteWriter(out_dir) as w:
        rows = []
        graphs: dict[str, dict[str, Any]] = {}
        for i in range(n):
            spec = None
            errors = []
            for attempt in range(MAX_ATTEMPTS):
                try:
                    spec = make_sample(sample_rng(suite, seed, i, attempt), i)
                    break
                except SuiteError as e:
                    errors.append(str(e))
            if spec is None:
                raise SuiteError(f"sample {i}: no unique target in {MAX_ATTEMPTS} attempts; last: {errors[-1]}")
            stem = f"{i:04d}"
            rows.append(build_row(f"{id_prefix}_{stem}", stem, spec))
            graphs[f"{stem}.png"] = scene_graph_json(f"{stem}.png", spec.scene.elements)
            w.add_image(f"{stem}.png", png_bytes(spec.scene.image), graphs[f"{stem}.png"])
        if absent_share:
            from pointfail.generated.suites.absent import make_absent_rows

            rows = make_absent_rows(rows, graphs, suite=suite, seed=seed, share=absent_share)
        return w.finish(rows, suite_manifest_fields(
            suite=suite, generator=generator, generator_version=generator_version, seed=seed, n=n,
            image_size=IMAGE_SIZE, environment=environment_versions(font_names), absent_share=absent_share,
        ))
