"""Point-Bench (PointArena) loader, reading the release exactly as its publisher ships it.

The published release (hub dataset ``PointArena/pointarena-data``; ``docs/releases.md``)::

    DIR/data.json                # JSON list of rows: image_filename, user_input, category, count,
                                 #   mask_filename (rows without mask_filename are not scored)
    DIR/pixmo_metadata.csv       # image_filename, points: the steerable rows' reference points
    DIR/selected_images.zip      # members selected_images/<category>/<image_filename>
    DIR/selected_masks.zip       # members selected_masks/<category>/<mask_filename>

Sources: the file list is what Molmo2's ``PointBench`` dataset downloads (``data.json``,
``selected_images.zip``, ``selected_masks.zip``, unzipped, then images read from
``selected_images/<category>/<image_filename>`` and masks from
``selected_masks/<category>/<mask_filename>``) and what the PointArena fork's download script
expects after its download (``data.json``, ``pixmo_metadata.csv`` and the two archives, whose
``selected_images``/``selected_masks`` folders it renames ``images``/``masks``); lmms-eval's
``pointbench`` task reads both archives in place and finds members by base name, NFC-normalized,
recovering UTF-8 names stored without the zip's UTF-8 flag.

Accepted layouts of ``DIR``, first match wins, per archive:

1. the published archives: unpacked safely (:func:`pointfail.inputs.benchmarks.archive.unpack`) into
   ``DIR/_unpacked/<archive>/`` beside them and read from there;
2. the archives already unpacked into ``DIR/selected_images/`` and ``DIR/selected_masks/`` (Molmo2's
   ``unzip``);
3. ``DIR/images/`` and ``DIR/masks/`` (the fork's renamed folders, and pointfail's earlier layout).

An image is ``<images>/<category>/<image_filename>``; a mask is ``<masks>/<category>/<mask_filename>``,
or, when that file does not exist, the one mask with that base name anywhere under ``<masks>``
(lmms-eval's look-up by base name; an earlier flat ``masks/<mask_filename>`` layout).

Rules carried over from the official evaluator (facts, not code):

* ``category`` is one of ``affordable``, ``counting``, ``spatial``, ``reasoning``, ``steerable``.
* Rows without ``mask_filename`` are skipped, as Molmo2's loader and PointArena's evaluator do; the
  loader counts them (a ``UserWarning`` with the count, naming the first five; ``pointfail data
  check`` prints it).
* Masks are binarized at ``> 127`` (any channel for a colour mask).
* ``count`` is the number of points a ``counting`` row needs (default 1).
* Steerable rows refer to a reference point that is *not drawn* in the image; the evaluator takes it
  from ``pixmo_metadata.csv`` (``points``: a JSON list of ``{"x": .., "y": ..}`` in percent of the
  image). This loader reads it from the row's own ``points`` field or from that CSV; a steerable
  sample says ``metadata["reference_point"] = "loaded"`` with the first point in pixels
  (``reference_point_x_px``/``reference_point_y_px``) or ``"absent"`` when neither source has it.

File names are matched after Unicode NFC normalization on both sides, never by row order.
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path
from typing import Any

from pointfail.records import Sample, Target

from ._common import NfcIndex, Problems, image_ref, measure_mask, nfc, read_json, row_problem, warn_mask_problems
from ._spec import Benchmark, StandIn
from .fetch import Source

NAME = "point-bench"
CATEGORIES = ("affordable", "counting", "spatial", "reasoning", "steerable")
AXES = ("category", "count", "reference_point")

RELEASE_FILES = ("data.json", "pixmo_metadata.csv", "selected_images.zip", "selected_masks.zip")
"""The files of the published release (besides the hub's ``README.md``/``.gitattributes``; an earlier
``masks.zip`` was deleted from the repository by commit ``47eab40`` and is not read)."""
RELEASE = RELEASE_FILES
"""Glob patterns of the published files the loader reads (here: exact names)."""
RELEASE_MEMBERS = {"selected_images.zip": "selected_images/<category>/<image_filename>",
                   "selected_masks.zip": "selected_masks/<category>/<mask_filename>"}
"""How each published archive names its members."""

_FOLDERS = {  # kind: (published archive, its top folder, the renamed folder)
    "images": ("selected_images.zip", "selected_images", "images"),
    "masks": ("selected_masks.zip", "selected_masks", "masks"),
}


def resolve_folder(root: Path, kind: str) -> tuple[Path | None, str]:
    """The folder holding ``kind`` (``"images"`` or ``"masks"``) for a Point-Bench directory, by the
    module docstring's order (the published archive, unpacked into its cache; its unpacked folder;
    the renamed folder), and a line saying which; ``(None, why)`` when none is there or the archive
    is refused (:class:`pointfail.inputs.benchmarks.archive.ArchiveError`'s line)."""
    from .archive import ArchiveError, unpack

    archive, top, renamed = _FOLDERS[kind]
    if (root / archive).is_file():
        try:
            out = unpack(root / archive)
        except ArchiveError as e:
            return None, str(e)
        return (out / top if (out / top).is_dir() else out), f"{archive} (unpacked into {out})"
    for name in (top, renamed):
        if (root / name).is_dir():
            return root / name, f"{name}/"
    return None, (f"missing {root / archive} (the published archive; or its unpacked {top}/ or a renamed "
                  f"{renamed}/ folder)")


def _reference_points(raw: Any) -> list[tuple[float, float]] | None:
    """Percent points ``[{"x": .., "y": ..}, ...]`` (or a JSON string of it) → list of (x%, y%)."""
    if raw is None or raw == "" or raw == "[]":
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return None
    pts = []
    if isinstance(raw, list):
        for p in raw:
            if isinstance(p, dict) and "x" in p and "y" in p:
                try:
                    pts.append((float(p["x"]), float(p["y"])))
                except (TypeError, ValueError):
                    return None
    return pts or None


def _pixmo_points(data_dir: Path) -> dict[str, list[tuple[float, float]]]:
    path = data_dir / "pixmo_metadata.csv"
    out: dict[str, list[tuple[float, float]]] = {}
    if not path.is_file():
        return out
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            pts = _reference_points(row.get("points"))
            name = row.get("image_filename")
            if pts and name:
                out[nfc(name)] = pts
    return out


def load_point_bench(data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Load Point-Bench from ``data_dir`` holding the published release, or its archives unpacked
    (see the module docstring for both and for the sources).

    Returns:
        One point-task :class:`Sample` per row with a mask target, ``metadata`` holding
        ``category``, ``count`` and ``reference_point`` (``loaded``/``absent``/``n/a``), sorted by
        ``sample_id`` = ``<category>/<image_filename NFC>``.

    A mask that exists but is unreadable, empty or not the image's size does not stop the load: the
    sample is kept (``target.area_px`` ``None``), a ``UserWarning`` lists such samples, and
    :func:`pointfail.scoring.build_record` records it as an ``error`` outcome with the reason.

    Raises:
        BenchmarkError: ``data.json`` missing or malformed; an archive missing or refused (its
            one line: a member outside its folder, an absolute name, a link or device, a size past
            the cap, names colliding after decoding); a row with a bad field; an image or mask file
            missing (naming the row, the file and the published layout); an image unreadable; two
            rows with the same id. Every problem is listed, each naming its file and row.
    """
    root = Path(data_dir)
    problems = Problems(NAME)
    mask_problems: list[str] = []
    rows = read_json(root / "data.json", NAME)
    if not isinstance(rows, list):
        problems.add(f"{root / 'data.json'}: expected a JSON list of rows, got {type(rows).__name__}")
        problems.raise_if_any()
    images_dir, images_why = resolve_folder(root, "images")
    masks_dir, masks_why = resolve_folder(root, "masks")
    for d, found in ((images_dir, images_why), (masks_dir, masks_why)):
        if d is None:
            problems.add(found)
    problems.raise_if_any()
    assert images_dir is not None and masks_dir is not None
    images = NfcIndex(images_dir)
    masks = NfcIndex(masks_dir)
    for paths in {**images.collisions, **masks.collisions}.values():
        problems.add(f"file names collide after NFC normalization: {[str(p) for p in paths]}")
    by_base: dict[str, list[Path]] = {}
    for key, path in masks.files.items():
        by_base.setdefault(key.rsplit("/", 1)[-1], []).append(path)

    def find_mask(category: str, filename: str) -> Path | None:
        hit = masks.find(f"{category}/{filename}")
        if hit is not None:
            return hit
        same = by_base.get(nfc(filename.replace("\\", "/").rsplit("/", 1)[-1]), [])
        return same[0] if len(same) == 1 else None

    pixmo = _pixmo_points(root)
    samples: dict[str, Sample] = {}
    skipped: list[str] = []
    for i, row in enumerate(rows):
        where = f"{root / 'data.json'} row {i}"
        why = row_problem(row, ("image_filename", "user_input", "category"), falsy_is_missing=True)
        if why:
            problems.add(f"{where}: {why}")
            continue
        if not row.get("mask_filename"):
            skipped.append(f"{where} ({row['image_filename']})")
            continue
        category = str(row["category"])
        if category not in CATEGORIES:
            problems.add(f"{where}: unknown category {category!r} (expected one of {CATEGORIES})")
            continue
        try:
            count = int(row.get("count", 1) if row.get("count") is not None else 1)
        except (TypeError, ValueError):
            problems.add(f"{where}: count {row.get('count')!r} is not an integer")
            continue
        if count < 1:
            problems.add(f"{where}: count {count} < 1")
            continue
        name = nfc(str(row["image_filename"]))
        sid = f"{category}/{name}"
        if sid in samples:
            problems.add(f"{where}: duplicate sample {sid}")
            continue
        img_path = images.find(f"{category}/{name}")
        if img_path is None:
            problems.add(f"{where}: missing image {images_dir / category / name} (read from {images_why}; "
                         f"published layout: {RELEASE_MEMBERS['selected_images.zip']})", images_dir / category / name)
            continue
        mask_path = find_mask(category, str(row["mask_filename"]))
        if mask_path is None:
            problems.add(f"{where}: missing mask {masks_dir / category / str(row['mask_filename'])} (read from "
                         f"{masks_why}; published layout: {RELEASE_MEMBERS['selected_masks.zip']})",
                         masks_dir / category / str(row["mask_filename"]))
            continue
        img = image_ref(img_path, problems=problems)
        if img is None:
            continue
        mask_sha, area = measure_mask(mask_path, img, where, mask_problems)
        metadata: dict[str, Any] = {"category": category, "count": count}
        if category == "steerable":
            pts = _reference_points(row.get("points")) or pixmo.get(name)
            if pts:
                metadata["reference_point"] = "loaded"
                metadata["reference_point_x_px"] = pts[0][0] * img.width / 100.0
                metadata["reference_point_y_px"] = pts[0][1] * img.height / 100.0
                metadata["reference_points_n"] = len(pts)
            else:
                metadata["reference_point"] = "absent"
        else:
            metadata["reference_point"] = "n/a"
        target = Target(
            kind="mask", mask_path=mask_path.as_posix(), sha256=mask_sha, area_px=area,
            eval={"type": "point_in_mask", "threshold": 127, "count": count,
                  "rule": "counting: exactly count points, all inside" if category == "counting"
                  else "first point inside"},
        )
        samples[sid] = Sample(sample_id=sid, benchmark=NAME, image=img,
                              instruction=str(row["user_input"]), task="point", target=target,
                              metadata=metadata)
    problems.raise_if_any()
    warn_mask_problems(NAME, mask_problems)
    if skipped:
        warnings.warn(f"{NAME}: {len(skipped)} row(s) of {len(rows)} without mask_filename skipped, as the "
                      f"official evaluator does: {skipped[:5]}", stacklevel=2)
    out = [samples[k] for k in sorted(samples)]
    return out[:limit] if limit is not None else out


BENCHMARK = Benchmark(
    name=NAME, loader=load_point_bench, axes=AXES, rule="point-bench",
    source=Source("PointArena/pointarena-data",
                  note="PointArena Point-Bench (data.json, pixmo_metadata.csv, selected_images.zip, "
                       "selected_masks.zip)"),
    standin=StandIn("point-bench", "pointfail.generated.testing.standin:point_bench_files",
                    "PointArena's Point-Bench", order=0))
"""Point-Bench: PointArena's rule (:mod:`pointfail.official`), ``PointArena/pointarena-data``."""
