"""PointerBench (Sheets / Text / Pro) and generated-suite loaders.

Official layout (``warmwindOS/pointerbench``, release commit 2a112ed; images from the
``WarmwindOS/pointerbench`` dataset)::

    <subset>/data/test/metadata.jsonl   # one row per line
    <subset>/data/test/<file_name>      # 1024x768 PNG screenshots (not shipped in shared/data)

Row fields: ``id``, ``file_name``, ``instruction``, ``bbox`` ``[x0, y0, x1, y1]`` in absolute pixels,
``point`` (a reference point inside the bbox), ``answer_type`` (``point`` | ``bbox``), ``eval``
(``{"type": "point_in_bbox", "bbox": ...}`` or ``{"type": "iou", "bbox": ..., "min_coverage": 0.9,
"min_precision": 0.7}``), ``image_size`` ``[1024, 768]``, and per-subset tags (``data_type``,
``category``, ``language``, ``ui_style``, ``surface``, ``difficulty``, ``element_type``, ``app``,
``app_category``, ``platform``, ...). Every tag lands in ``Sample.metadata``.

``data_dir`` may be the subset directory itself (holding ``data/test/metadata.jsonl``) or its parent
(holding ``pointerbench-sheets/`` etc.).

Screenshots are optional at load time: a row whose image is absent gets ``ImageRef.sha256 = None``
and the declared ``image_size``. :func:`require_images` (called before running a model) raises a
:class:`BenchmarkError` naming every missing screenshot.

Generated suites (``suite`` loader) use the same layout plus ``DIR/manifest.json`` (sha256 of every
file), per-row ``target_id`` and ``scene_graph`` (path of ``data/test/scene_graphs/<stem>.json``);
see ``docs/architecture.md``. Their images are required.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from pointfail.geometry.shapes import box_area
from pointfail.records import ImageRef, Sample, Target

from pointfail.inputs.study import NAME_PATTERN

from ._common import (BenchmarkError, Containment, Problems, boxes_sha256, check_box, contained, image_ref, read_json, read_jsonl,
                      row_problem)
from ._spec import Benchmark, StandIn
from .fetch import Source

SUBSETS = ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro")
AXES = ("answer_type", "data_type", "category", "ui_style", "language", "surface", "difficulty",
        "element_type", "app_category", "platform", "app")
"""Every tag axis the official scorers break results down by (union over the three subsets)."""

RELEASE = tuple(f"{s}/data/test/{f}" for s in SUBSETS for f in ("metadata.jsonl", "*.png"))
"""Glob patterns of the published files the loaders read (``WarmwindOS/pointerbench``). Each subset
folder also holds ``__pycache__/``, ``assets/``, ``.gitignore``, ``CITATION.cff``, ``eval.py``,
``REPRODUCE.md`` (Pro: ``apps.json``), fetched with the subset (``<subset>/**``) and not read (tree of
``main`` at ``e53e45e``)."""

_NOT_METADATA = {"id", "file_name", "instruction", "bbox", "point", "eval", "image_size", "scene_graph"}


def subset_dir(data_dir: str | Path, name: str) -> Path:
    """The directory holding ``data/test/metadata.jsonl`` for subset ``name``: ``data_dir`` itself or
    ``data_dir/<name>``.

    Raises:
        BenchmarkError: neither exists (both candidates are named).
    """
    root = Path(data_dir)
    for cand in (root, root / name):
        if (cand / "data" / "test" / "metadata.jsonl").is_file():
            return cand
    raise BenchmarkError(name, [f"missing file {root / 'data/test/metadata.jsonl'} "
                                f"(or {root / name / 'data/test/metadata.jsonl'})"],
                         [str(root / "data/test/metadata.jsonl")])


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool)) and v is not None


def _load_rows(sub: Path, benchmark: str, *, images_required: bool,
               suite: bool = False) -> list[Sample]:
    problems = Problems(benchmark)
    test = sub / "data" / "test"
    meta = test / "metadata.jsonl"
    samples: dict[str, Sample] = {}
    paths = Containment()  # each folder resolved and listed once for every row (not an lstat per component)
    contained, is_file = paths.contained, paths.is_file
    for line, row in read_jsonl(meta, benchmark):
        where = f"{meta}:{line}"
        absent = suite and isinstance(row, dict) and row.get("referent") == "absent"
        need = ["id", "file_name", "instruction", "bbox", "answer_type", "eval", "image_size"]
        if absent:  # no target: bbox and target_id are null (pointfail.generated.suites.absent)
            need = [k for k in need if k != "bbox"] + ["absence_proof"]
        elif suite:
            need.append("target_id")
        why = row_problem(row, need, seen=samples)
        if why:
            problems.add(f"{where}: {why}")
            continue
        sid = str(row["id"])
        if absent:
            sample, why = _absent_sample(row, sid, benchmark, test, sub)
            if why:
                problems.add(f"{where}: {why}")
            else:
                samples[sid] = sample
            continue
        box, why = check_box(row["bbox"])
        if box is None:
            problems.add(f"{where}: {why}")
            continue
        ev = row["eval"]
        if not isinstance(ev, dict) or ev.get("type") not in ("point_in_bbox", "iou"):
            problems.add(f"{where}: eval {ev!r} is not point_in_bbox or iou")
            continue
        if "bbox" in ev and list(ev["bbox"]) != list(row["bbox"]):
            problems.add(f"{where}: eval.bbox {ev['bbox']} differs from bbox {row['bbox']}")
            continue
        answer_type = row["answer_type"]
        expected = {"point": "point_in_bbox", "bbox": "iou"}.get(answer_type)
        if expected is None or expected != ev["type"]:
            problems.add(f"{where}: answer_type {answer_type!r} does not match eval type {ev['type']!r}")
            continue
        size = row["image_size"]
        if (not isinstance(size, (list, tuple)) or len(size) != 2
                or not all(isinstance(v, int) and v > 0 for v in size)):
            problems.add(f"{where}: image_size {size!r} is not [W, H]")
            continue
        W, H = int(size[0]), int(size[1])
        img_path = contained(test, str(row["file_name"]))
        if img_path is None:
            problems.add(f"{where}: file_name {str(row['file_name'])[:200]!r} is not a file name inside {test}")
            continue
        if is_file(img_path):
            img = image_ref(img_path, expected_size=(W, H), problems=problems)
            if img is None:
                continue
        elif images_required:
            problems.add(f"{where}: missing image {img_path}", img_path)
            continue
        else:
            img = ImageRef(path=img_path.as_posix(), width=W, height=H, sha256=None)
        metadata: dict[str, Any] = {k: v for k, v in row.items() if k not in _NOT_METADATA and _scalar(v)}
        pt = row.get("point")
        if isinstance(pt, (list, tuple)) and len(pt) == 2:
            metadata["reference_point_x_px"] = pt[0]
            metadata["reference_point_y_px"] = pt[1]
        scene_graph_path = None
        if suite:
            sg = row.get("scene_graph")
            stem = Path(str(row["file_name"])).stem
            cands = ([contained(test, str(sg)), contained(sub, str(sg))] if sg else []) + [
                contained(test, f"scene_graphs/{stem}.json")]
            if not any(cands):
                problems.add(f"{where}: scene_graph {str(sg)[:200]!r} is not a file name inside {sub}")
                continue
            found_in = [c for c in cands if c is not None]
            found = next((c for c in found_in if is_file(c)), None)
            if found is None:
                problems.add(f"{where}: missing scene graph {found_in[0]}", found_in[0])
                continue
            scene_graph_path = found.as_posix()
        target = Target(kind="boxes", boxes=[box], eval=dict(ev), sha256=boxes_sha256([box]),
                        area_px=box_area(box))
        samples[sid] = Sample(sample_id=sid, benchmark=benchmark, image=img,
                              instruction=str(row["instruction"]),
                              task="box" if answer_type == "bbox" else "point",
                              target=target, metadata=metadata, scene_graph_path=scene_graph_path)
    problems.raise_if_any()
    return [samples[k] for k in sorted(samples)]


def _absent_sample(row: dict, sid: str, benchmark: str, test: Path, sub: Path) -> tuple[Any, Optional[str]]:
    """A suite row whose referent is absent (:mod:`pointfail.generated.suites.absent`): ``(Sample, None)`` with a
    ``Target(kind="absent")``, or ``(None, why)``. The row's proof of absence is re-derived from its
    scene graph, never taken on the row's word."""
    from pointfail.records import canonical_json, sha256_bytes
    from pointfail.generated.suites.absent import check_absence_proof
    from pointfail.generated.suites.errors import SuiteError

    if row.get("bbox") is not None or row.get("target_id") is not None:
        return None, "an absent row has a bbox or a target_id"
    if row.get("eval") != {"type": "absent"}:
        return None, f"an absent row's eval must be {{'type': 'absent'}}, got {row.get('eval')!r}"
    if row.get("answer_type") not in ("point", "bbox"):
        return None, f"answer_type {row.get('answer_type')!r} is not point or bbox"
    size = row.get("image_size")
    if not (isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size)):
        return None, f"image_size {size!r} is not [W, H]"
    img_path = contained(test, str(row["file_name"]))
    if img_path is None:
        return None, f"file_name {str(row['file_name'])[:200]!r} is not a file name inside {test}"
    if not img_path.is_file():
        return None, f"missing image {img_path}"
    img = image_ref(img_path, expected_size=(size[0], size[1]))
    if img is None:  # image_ref raises without a problems list; kept for the type
        return None, f"unreadable image {img_path}"
    found, why = _absent_scene_graph(row, test, sub)
    if found is None:
        return None, why
    proof = row.get("absence_proof")
    try:
        check_absence_proof(read_json(found, benchmark), proof)
    except SuiteError as e:
        return None, f"absence proof does not hold: {e}"
    metadata = {k: v for k, v in row.items() if k not in _NOT_METADATA and _scalar(v)}
    target = Target(kind="absent", eval={"type": "absent"}, sha256=sha256_bytes(canonical_json(proof).encode()))
    return Sample(sample_id=sid, benchmark=benchmark, image=img, instruction=str(row["instruction"]),
                  task="box" if row["answer_type"] == "bbox" else "point", target=target, metadata=metadata,
                  scene_graph_path=found.as_posix()), None


def _absent_scene_graph(row: dict, test: Path, sub: Path) -> tuple[Optional[Path], Optional[str]]:
    """Locate an absent row's scene graph file.

    Inputs: the suite ``row``, the subset's ``test`` directory and the subset directory ``sub``. Candidates, in
    order: the row's ``scene_graph`` under ``test``, then under ``sub``, then
    ``scene_graphs/<file_name stem>.json`` under ``test``; a candidate that would leave its root is dropped.

    Returns ``(path, None)`` for the first candidate that is a file, or ``(None, why)`` when no candidate stays
    inside its root or none exists. Raises nothing itself."""
    sg = row.get("scene_graph")
    cands = ([contained(test, str(sg)), contained(sub, str(sg))] if sg else []) + [
        contained(test, f"scene_graphs/{Path(str(row['file_name'])).stem}.json")]
    paths = [c for c in cands if c is not None]
    if not paths:
        return None, f"scene_graph {str(sg)[:200]!r} is not a file name inside {sub}"
    found = next((c for c in paths if c.is_file()), None)
    if found is None:
        return None, f"missing scene graph {paths[0]}"
    return found, None

def make_pointerbench_loader(name: str):
    """A loader for one PointerBench subset (``pointerbench-sheets``/``-text``/``-pro``)."""

    def load_subset(data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
        out = _load_rows(subset_dir(data_dir, name), name, images_required=False)
        return out[:limit] if limit is not None else out

    load_subset.__name__ = "load_" + name.replace("-", "_")
    load_subset.__doc__ = (
        f"Load {name} (see :mod:`pointfail.inputs.benchmarks.pointerbench`). Screenshots are optional; "
        "box rows (``answer_type`` ``bbox``) become ``task='box'`` samples.\n\n"
        "Raises:\n    BenchmarkError: missing metadata, malformed rows (a box with x2 < x1, eval "
        "disagreeing with answer_type or bbox, duplicate ids), a screenshot present but unreadable "
        "or not of the declared size.")
    return load_subset


def load_suite(data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Load a generated suite (``sheets``, ``text``, ``web``) in the PointerBench layout plus scene
    graphs (``docs/architecture.md``, "Generated suites").

    The benchmark name is the manifest's ``suite`` (else the directory name). Every file listed in
    ``manifest.json`` is checked against its content digest
    (:func:`pointfail.generated.suites.manifest.content_sha256`: decoded pixels for PNGs, bytes otherwise).

    Returns:
        Samples as for PointerBench, with ``metadata["target_id"]`` and ``scene_graph_path`` set.

    Raises:
        BenchmarkError: a missing image or scene graph, a manifest sha256 mismatch or missing listed
            file, or any PointerBench row problem.
    """
    from pointfail.generated.suites.manifest import file_content_sha256

    root = Path(data_dir)
    manifest_path = root / "manifest.json"
    name = root.name
    if manifest_path.is_file():
        manifest = read_json(manifest_path, "suite")
        suite = str(manifest.get("suite") or name) if isinstance(manifest, dict) else name
        problems = Problems(name)
        if not re.fullmatch(NAME_PATTERN, suite):
            problems.add(f"{manifest_path}: suite {suite[:200]!r} is not a name ({NAME_PATTERN})")
        else:
            name = suite
        files = manifest.get("files", {}) if isinstance(manifest, dict) else {}
        if not isinstance(files, dict):
            problems.add(f"{manifest_path}: files is not an object of path -> digest")
            files = {}
        for rel, want in sorted(files.items()):
            p = contained(root, rel)
            if p is None:
                problems.add(f"{manifest_path}: listed file {str(rel)[:200]!r} is not a path inside {root}")
            elif not p.is_file():
                problems.add(f"{manifest_path}: listed file {p} is missing", p)
            elif file_content_sha256(p) != want:
                problems.add(f"{manifest_path}: {p} content differs from the manifest", p)
        problems.raise_if_any()
    out = _load_rows(subset_dir(root, name), name, images_required=True, suite=True)
    return out[:limit] if limit is not None else out


_TITLES = {"pointerbench-sheets": "PointerBench-Sheets", "pointerbench-text": "PointerBench-Text",
           "pointerbench-pro": "PointerBench-Pro"}
_PB_HOW = ("a few synthetic 1024x768 screenshots of one coloured bar per row, written in the publisher's exact file "
           "layout and field names")

BENCHMARK = (
    *(Benchmark(
        name=name, loader=make_pointerbench_loader(name), axes=AXES,
        source=Source("WarmwindOS/pointerbench", allow_patterns=(f"{name}/**",),
                      note=f"{_TITLES[name]} metadata + screenshots"),
        # one hub repository holds the three subsets (each benchmark's allow_patterns picks its folder)
        standin=StandIn("pointerbench", "pointfail.generated.testing.standin:pointerbench_files",
                        "WarmwindOS's PointerBench", _PB_HOW, order=4) if name == SUBSETS[0] else None)
      for name in SUBSETS),
    Benchmark(name="suite", loader=load_suite, axes=AXES),
)
"""PointerBench's three subsets (rule: each row's ``eval``, PointerBench's ``eval.py``;
``WarmwindOS/pointerbench``, one repository) and the generated suites in its layout (nothing to fetch)."""
