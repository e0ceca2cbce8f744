"""ScreenSpot-Pro loader.

Official layout (``likaixin/ScreenSpot-Pro``)::

    DIR/annotations/<task>.json   # a JSON list per file of rows: id, img_filename, bbox [x1, y1, x2, y2]
                                  #   (absolute pixels), img_size [W, H], instruction, instruction_cn,
                                  #   application, platform, group, ui_type (text | icon)
    DIR/images/<img_filename>

A box with ``x2 < x1`` (or ``y2 < y1``) cannot be valid in the declared ``x1, y1, x2, y2`` format and
is rejected by the loader (a :class:`BenchmarkError` naming file and row), never scored. The
official metric is the first point inside the box, edges inclusive.
"""

from __future__ import annotations

from pathlib import Path

from pointfail.geometry.shapes import box_area
from pointfail.records import Sample, Target

from ._common import NfcIndex, Problems, boxes_sha256, check_box, image_ref, read_json, row_problem
from ._spec import Benchmark, StandIn
from .fetch import Source

NAME = "screenspot-pro"
AXES = ("group", "application", "platform", "ui_type")
RELEASE = ("annotations/*.json", "images/*/*")
"""Glob patterns of the published files the loader reads (``likaixin/ScreenSpot-Pro``). The repository
also holds ``.DS_Store``, ``images/.DS_Store``, ``annotate.html``, ``README.md`` and ``.gitattributes``
(tree at ``ad1a3ed`` and ``8d86ed4``; a later copy adds ``eval.yaml``), none read: the loader reads
every ``annotations/*.json`` and only the images its rows name."""


def load_screenspot_pro(data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Load ScreenSpot-Pro (English instructions) from ``data_dir``.

    Returns:
        One point-task :class:`Sample` per annotation row, box target in pixels, ``metadata``:
        ``group``, ``application``, ``platform``, ``ui_type``, ``annotation_file``;
        ``sample_id`` is the row ``id``; sorted by ``sample_id``.

    Raises:
        BenchmarkError: no ``annotations/*.json``; a row missing a field, with an invalid box
            (x2 < x1, wrong length, non-number); a missing,
            unreadable or wrongly sized image; duplicate ids.
    """
    root = Path(data_dir)
    problems = Problems(NAME)
    ann_dir = root / "annotations"
    files = sorted(ann_dir.glob("*.json")) if ann_dir.is_dir() else []
    if not files:
        problems.add(f"no annotation files {ann_dir / '*.json'}", ann_dir)
        problems.raise_if_any()
    images = NfcIndex(root / "images")
    samples: dict[str, Sample] = {}
    for f in files:
        rows = read_json(f, NAME)
        if not isinstance(rows, list):
            problems.add(f"{f}: expected a JSON list of rows")
            continue
        for i, row in enumerate(rows):
            where = f"{f} row {i}"
            why = row_problem(row, ("id", "img_filename", "bbox", "img_size", "instruction"), seen=samples)
            if why:
                problems.add(f"{where}: {why}")
                continue
            sid = str(row["id"])
            box, why = check_box(row["bbox"])
            if box is None:
                problems.add(f"{where} (id {sid}): {why}")
                continue
            size = row["img_size"]
            if not (isinstance(size, (list, tuple)) and len(size) == 2):
                problems.add(f"{where}: img_size {size!r} is not [W, H]")
                continue
            W, H = int(size[0]), int(size[1])
            img_path = images.find(str(row["img_filename"]))
            if img_path is None:
                problems.add(f"{where}: missing image {root / 'images' / row['img_filename']}",
                             root / "images" / str(row["img_filename"]))
                continue
            img = image_ref(img_path, expected_size=(W, H), problems=problems)
            if img is None:
                continue
            target = Target(kind="boxes", boxes=[box], sha256=boxes_sha256([box]),
                            area_px=box_area(box),
                            eval={"type": "point_in_bbox", "bbox": box})
            samples[sid] = Sample(
                sample_id=sid, benchmark=NAME, image=img, instruction=str(row["instruction"]),
                task="point", target=target,
                metadata={"group": str(row.get("group", "")), "application": str(row.get("application", "")),
                          "platform": str(row.get("platform", "")), "ui_type": str(row.get("ui_type", "")),
                          "annotation_file": f.name})
    problems.raise_if_any()
    out = [samples[k] for k in sorted(samples)]
    return out[:limit] if limit is not None else out


BENCHMARK = Benchmark(
    name=NAME, loader=load_screenspot_pro, axes=AXES, rule="screenspot-pro",
    source=Source("likaixin/ScreenSpot-Pro", allow_patterns=("annotations/**", "images/**"),
                  note="ScreenSpot-Pro (annotations/*.json, images/)"),
    standin=StandIn("screenspot-pro", "pointfail.generated.testing.standin:screenspot_pro_files",
                    "likaixin's ScreenSpot-Pro", order=3))
"""ScreenSpot-Pro: its ``eval_screenspot_pro.py`` rule (:mod:`pointfail.official`), ``likaixin/ScreenSpot-Pro``."""
