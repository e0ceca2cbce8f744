"""Point-Bench (PointArena) loader.

Official layout (PointArena, ``pointarena/pointarena`` evaluators and the ``PointArena/pointarena-data``
release)::

    DIR/data.json                      # list of rows: image_filename, user_input, category, count,
                                       #   mask_filename (and optionally points for steerable rows)
    DIR/images/<category>/<image_filename>
    DIR/masks/<mask_filename>
    DIR/pixmo_metadata.csv             # optional: image_filename, points (steerable reference points)

Rules carried over from the official evaluator (facts, not code):

* ``category`` is one of ``affordable``, ``counting``, ``spatial``, ``reasoning``, ``steerable``; the
  image is looked up as ``images/<category>/<image_filename>``.
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

NAME = "point-bench"
CATEGORIES = ("affordable", "counting", "spatial", "reasoning", "steerable")
AXES = ("category", "count", "reference_point")


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
    """Load Point-Bench from ``data_dir`` in the official layout (see the module docstring).

    Returns:
        One point-task :class:`Sample` per row with a mask target, ``metadata`` holding
        ``category``, ``count`` and ``reference_point`` (``loaded``/``absent``/``n/a``), sorted by
        ``sample_id`` = ``<category>/<image_filename NFC>``.

    A mask that exists but is unreadable, empty or not the image's size does not stop the load: the
    sample is kept (``target.area_px`` ``None``), a ``UserWarning`` lists such samples, and
    :func:`pointfail.scoring.build_record` records it as an ``error`` outcome with the reason.

    Raises:
        BenchmarkError: ``data.json`` missing or malformed; a row with a bad field; an image or mask
            file missing; an image unreadable; two rows with the same id. Every problem is listed,
            each naming its file and row.
    """
    root = Path(data_dir)
    problems = Problems(NAME)
    mask_problems: list[str] = []
    rows = read_json(root / "data.json", NAME)
    if not isinstance(rows, list):
        problems.add(f"{root / 'data.json'}: expected a JSON list of rows, got {type(rows).__name__}")
        problems.raise_if_any()
    images = NfcIndex(root / "images")
    masks = NfcIndex(root / "masks")
    for paths in {**images.collisions, **masks.collisions}.values():
        problems.add(f"file names collide after NFC normalization: {[str(p) for p in paths]}")
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
            problems.add(f"{where}: missing image {root / 'images' / category / name}",
                         root / "images" / category / name)
            continue
        mask_path = masks.find(str(row["mask_filename"]))
        if mask_path is None:
            problems.add(f"{where}: missing mask {root / 'masks' / row['mask_filename']}",
                         root / "masks" / str(row["mask_filename"]))
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
        warnings.warn(f"{NAME}: {len(skipped)} row(s) without mask_filename skipped, as the official "
                      f"evaluator does: {skipped[:5]}", stacklevel=2)
    out = [samples[k] for k in sorted(samples)]
    return out[:limit] if limit is not None else out
