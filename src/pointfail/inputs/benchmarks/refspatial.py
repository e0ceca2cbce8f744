"""RefSpatial-Bench (RoboRefer) loader.

Official raw-data layout (``BAAI/RefSpatial-Bench``)::

    DIR/Location/question.json   # list of rows: id, object, prompt, suffix, rgb_path, mask_path,
    DIR/Location/image/          #   category, step
    DIR/Location/mask/
    DIR/Placement/...            # same
    DIR/Unseen/...               # same

``rgb_path`` and ``mask_path`` are relative to the split directory (``image/<id>.png``,
``mask/<id>.png``); a path relative to ``DIR`` (``Location/image/<id>.png``) is accepted too. The instruction the publishers send is ``prompt`` followed by ``suffix``; the
suffix is the answer-format directive written for RoboPoint-style models. The sample keeps both
(``instruction = prompt + " " + suffix``) and records the suffix in
``metadata["directive_suffix"]`` so :func:`pointfail.prompts.build_prompt` removes it exactly even
when its wording is not in the directive registry.

The official metric is the mean over all predicted points of the in-mask value (see
:mod:`pointfail.official`).
"""

from __future__ import annotations

from pathlib import Path

from pointfail.records import Sample, Target

from ._common import NfcIndex, Problems, image_ref, measure_mask, read_json, row_problem, warn_mask_problems
from ._spec import Benchmark, StandIn
from .fetch import Source

NAME = "refspatial"
SPLITS = ("Location", "Placement", "Unseen")
AXES = ("split", "category", "step")
RELEASE = tuple(f"{s}/{f}" for s in SPLITS for f in ("question.json", "image/*.png", "mask/*.png"))
"""Glob patterns of the published raw-data files the loader reads (``BAAI/RefSpatial-Bench``; the
repository also holds ``data/<split>-00000-of-00001.parquet`` copies for the ``datasets`` library,
``assets/logo.png``, ``.gitattributes`` and ``README.md``, none read; tree of ``main`` at ``ff5b821``)."""
UNSEEN_WARNING = ("its publisher made the split to evaluate models after training on RefSpatial (it holds spatial "
                  "relation combinations absent from RefSpatial) and warns: \"If your model is not trained with "
                  "RefSpatial, this set should not be used for evaluation.\"")
"""The publisher's warning on the Unseen split (dataset card of ``BAAI/RefSpatial-Bench``, section
"Unseen Set"), carried into the tables' notes wherever an Unseen sample is counted."""


def load_refspatial(data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Load RefSpatial-Bench from ``data_dir`` (all three splits; see the module docstring).

    Returns:
        One point-task :class:`Sample` per row, ``sample_id`` = ``<split lower-case>/<id:04d>``,
        ``metadata``: ``split``, ``category``, ``step`` (reasoning steps), ``object``,
        ``directive_suffix``; sorted by ``sample_id``.

    A mask that exists but is unreadable, empty or not the image's size does not stop the load: the
    sample is kept (``target.area_px`` ``None``), a ``UserWarning`` lists such samples, and
    :func:`pointfail.scoring.build_record` records it as an ``error`` outcome with the reason.

    Raises:
        BenchmarkError: a split directory or its ``question.json`` is missing; a row lacks a field;
            an image or mask file is missing; an image is unreadable; duplicate ids.
    """
    root = Path(data_dir)
    problems = Problems(NAME)
    mask_problems: list[str] = []
    samples: dict[str, Sample] = {}
    files = NfcIndex(root)

    def find(split: str, rel: str):
        return files.find(f"{split}/{rel}") or files.find(rel)

    for split in SPLITS:
        sdir = root / split
        qfile = sdir / "question.json"
        if not qfile.is_file():
            problems.add(f"missing file {qfile}", qfile)
            continue
        rows = read_json(qfile, NAME)
        if not isinstance(rows, list):
            problems.add(f"{qfile}: expected a JSON list of rows")
            continue
        for i, row in enumerate(rows):
            where = f"{qfile} row {i}"
            why = row_problem(row, ("id", "prompt", "rgb_path", "mask_path"))
            if why:
                problems.add(f"{where}: {why}")
                continue
            try:
                rid = int(row["id"])
            except (TypeError, ValueError):
                problems.add(f"{where}: id {row['id']!r} is not an integer")
                continue
            sid = f"{split.lower()}/{rid:04d}"
            if sid in samples:
                problems.add(f"{where}: duplicate id {rid} in {split}")
                continue
            img_path = find(split, str(row["rgb_path"]))
            if img_path is None:
                problems.add(f"{where}: missing image {sdir / row['rgb_path']}", sdir / str(row["rgb_path"]))
                continue
            mask_path = find(split, str(row["mask_path"]))
            if mask_path is None:
                problems.add(f"{where}: missing mask {sdir / row['mask_path']}", sdir / str(row["mask_path"]))
                continue
            img = image_ref(img_path, problems=problems)
            if img is None:
                continue
            sha, area = measure_mask(mask_path, img, where, mask_problems)
            prompt = str(row["prompt"]).strip()
            suffix = str(row.get("suffix") or "").strip()
            instruction = f"{prompt} {suffix}" if suffix else prompt
            try:
                step = int(row.get("step")) if row.get("step") is not None else -1
            except (TypeError, ValueError):
                problems.add(f"{where}: step {row.get('step')!r} is not an integer")
                continue
            target = Target(kind="mask", mask_path=mask_path.as_posix(), sha256=sha, area_px=area,
                            eval={"type": "mean_mask_value", "scale": 255,
                                  "rule": "mean over all predicted points of in-mask value"})
            samples[sid] = Sample(
                sample_id=sid, benchmark=NAME, image=img, instruction=instruction, task="point",
                target=target,
                metadata={"split": split.lower(), "category": str(row.get("category") or split.lower()),
                          "step": step, "object": str(row.get("object") or ""),
                          "directive_suffix": suffix})
    problems.raise_if_any()
    warn_mask_problems(NAME, mask_problems)
    out = [samples[k] for k in sorted(samples)]
    return out[:limit] if limit is not None else out


BENCHMARK = Benchmark(
    name=NAME, loader=load_refspatial, axes=AXES, rule="refspatial",
    source=Source("BAAI/RefSpatial-Bench", revision="a7f69fa42fc0cc635f432e67def2856778c0eecd",
                  allow_patterns=("Location/*", "Location/**", "Placement/*", "Placement/**",
                                  "Unseen/*", "Unseen/**"),
                  note="RoboRefer RefSpatial-Bench raw data (commit 'add raw data')"),
    standin=StandIn("refspatial", "pointfail.generated.testing.standin:refspatial_files",
                    "RoboRefer's RefSpatial-Bench", order=2))
"""RefSpatial-Bench: RoboRefer's rule (:mod:`pointfail.official`), ``BAAI/RefSpatial-Bench`` at the pinned commit."""
