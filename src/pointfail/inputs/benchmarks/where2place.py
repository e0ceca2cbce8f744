"""Where2Place (RoboPoint) loader.

Official layout (RoboPoint, ``robopoint/eval/summarize_vqa.py`` and the released data)::

    DIR/point_questions.jsonl   # one row per line: question_id, image, text, category (seen|unseen)
    DIR/images/<image>
    DIR/masks/NN.jpg            # JPEG mask per question, NN = two-digit index

The official scorer opens ``masks/{idx:02d}.jpg`` for the row at position ``idx`` and reads the mask
as grey values / 255 (JPEG masks are not exactly binary). This loader names masks by ``question_id``
and requires it to equal the row's position, so the two conventions cannot silently disagree.

The question ``text`` is kept verbatim: it usually starts with an ``<image>`` line and ends with the
RoboPoint answer-format directive; :func:`pointfail.prompts.strip_directives` removes both.
"""

from __future__ import annotations

from pathlib import Path

from pointfail.records import Sample, Target

from ._common import NfcIndex, Problems, image_ref, measure_mask, read_jsonl, row_problem, warn_mask_problems
from ._spec import Benchmark, StandIn
from .fetch import Source

NAME = "where2place"
AXES = ("category",)
RELEASE = ("point_questions.jsonl", "images/*", "masks/[0-9][0-9].jpg")
"""Glob patterns of the published files the loader reads (``wentao-yuan/where2place``). The dataset
card (commit ``54e4be4``) also lists ``bbox_questions.jsonl`` (the same questions asking for a box),
published and not read; ``.gitattributes`` and ``README.md`` are not read either."""


def load_where2place(data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Load Where2Place from ``data_dir`` in the official layout (see the module docstring).

    Returns:
        One point-task :class:`Sample` per question, mask target ``masks/NN.jpg``, ``metadata``
        ``category`` (``seen``/``unseen``) and ``question_id``; ``sample_id`` is the question id
        zero-padded to 3 digits; sorted by ``sample_id``.

    A mask that exists but is unreadable, empty or not the image's size does not stop the load: the
    sample is kept (``target.area_px`` ``None``), a ``UserWarning`` lists such samples, and
    :func:`pointfail.scoring.build_record` records it as an ``error`` outcome with the reason.

    Raises:
        BenchmarkError: the questions file is missing or malformed, a ``question_id`` disagrees with
            its row position, an image or mask file is missing, an image is unreadable.
    """
    root = Path(data_dir)
    problems = Problems(NAME)
    mask_problems: list[str] = []
    qfile = root / "point_questions.jsonl"
    rows = read_jsonl(qfile, NAME)
    images = NfcIndex(root / "images")
    samples: dict[str, Sample] = {}
    for idx, (line, row) in enumerate(rows):
        where = f"{qfile}:{line}"
        why = row_problem(row, ("question_id", "image", "text"))
        if why:
            problems.add(f"{where}: {why}")
            continue
        try:
            qid = int(row["question_id"])
        except (TypeError, ValueError):
            problems.add(f"{where}: question_id {row['question_id']!r} is not an integer")
            continue
        if qid != idx:
            problems.add(f"{where}: question_id {qid} is not the row position {idx}; the official "
                         f"scorer pairs masks/NN.jpg with the row position")
            continue
        img_path = images.find(str(row["image"]))
        if img_path is None:
            problems.add(f"{where}: missing image {root / 'images' / row['image']}", root / "images" / str(row["image"]))
            continue
        mask_path = root / "masks" / f"{qid:02d}.jpg"
        if not mask_path.is_file():
            problems.add(f"{where}: missing mask {mask_path}", mask_path)
            continue
        img = image_ref(img_path, problems=problems)
        if img is None:
            continue
        sha, area = measure_mask(mask_path, img, where, mask_problems)
        sid = f"{qid:03d}"
        target = Target(kind="mask", mask_path=mask_path.as_posix(), sha256=sha, area_px=area,
                        eval={"type": "mean_mask_value", "scale": 255,
                              "rule": "mean over all predicted points of mask/255; outside image = 0"})
        samples[sid] = Sample(sample_id=sid, benchmark=NAME, image=img, instruction=str(row["text"]),
                              task="point", target=target,
                              metadata={"category": str(row.get("category", "")), "question_id": qid})
    problems.raise_if_any()
    warn_mask_problems(NAME, mask_problems)
    out = [samples[k] for k in sorted(samples)]
    return out[:limit] if limit is not None else out


BENCHMARK = Benchmark(
    name=NAME, loader=load_where2place, axes=AXES, rule="where2place",
    source=Source("wentao-yuan/where2place",
                  note="RoboPoint Where2Place (point_questions.jsonl, images/, masks/NN.jpg)"),
    standin=StandIn("where2place", "pointfail.generated.testing.standin:where2place_files",
                    "RoboPoint's Where2Place", order=1))
"""Where2Place: RoboPoint's rule (:mod:`pointfail.official`), ``wentao-yuan/where2place``."""
