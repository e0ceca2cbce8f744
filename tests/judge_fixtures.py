"""Small studies on disk for the judge tests: images, scene graphs and records with known misses."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from pointfail.records import ImageRef, ParseResult, Prompt, Record, Response, Target, write_records

W, H = 200, 100

# Scene graph of every image: two buttons (category "button") and a heading; the target is button:a.
ELEMENTS = [
    {"id": "button:a", "category": "button", "box": [10, 10, 50, 30]},
    {"id": "button:b", "category": "button", "box": [100, 10, 140, 30]},
    {"id": "heading:h", "category": "heading", "box": [10, 60, 190, 90]},
]

# Points (normalized) for the misses and the oracle label each must get:
# (54, 20) px: 4 px right of button:a -> off_by_pixels
# (120, 20) px: on button:b -> wrong_instance
# (100, 75) px: on heading:h -> wrong_category
# (180, 40) px: nothing -> hallucinated
MISS_POINTS = [
    ((54 / W, 20 / H), "off_by_pixels"),
    ((120 / W, 20 / H), "wrong_instance"),
    ((100 / W, 75 / H), "wrong_category"),
    ((180 / W, 40 / H), "hallucinated"),
]


def make_study(root: Path, n_misses: int = 8, n_hits: int = 2, with_no_prediction: bool = True) -> Path:
    """``root/study`` with ``m/suite.jsonl``: ``n_misses`` misses (cycling through MISS_POINTS), hits
    and a no_prediction; images and scene graphs under ``root/data/test``. Instruction of miss ``i`` is
    ``point to item i`` (the fake server keys its script on it). Returns the study directory."""
    data = root / "data" / "test"
    (data / "scene_graphs").mkdir(parents=True, exist_ok=True)
    study = root / "study"
    recs = []

    def base(sid: str, i: int) -> dict:
        name = f"{i:04d}.png"
        img = Image.new("RGB", (W, H), (230, 230, 230))
        img.save(data / name)
        (data / "scene_graphs" / f"{i:04d}.json").write_text(
            json.dumps({"schema": "pointfail.scene_graph/1", "image": name, "width": W, "height": H, "elements": ELEMENTS})
        )
        return dict(
            study="study",
            model="m",
            family="center",
            benchmark="suite",
            sample_id=sid,
            image=ImageRef(path=str(data / name), width=W, height=H),
            target=Target(kind="boxes", boxes=[[10, 10, 50, 30]]),
            metadata={"target_id": "button:a"},
            scene_graph=str(data / "scene_graphs" / f"{i:04d}.json"),
            prompt=Prompt(original=f"point to item {i}", core=f"point to item {i}", sent=f"point to item {i}"),
            response=Response(raw_text="x"),
        )

    i = 0
    for k in range(n_misses):
        pt, _ = MISS_POINTS[k % len(MISS_POINTS)]
        recs.append(
            Record(
                **base(f"miss-{k:03d}", i),
                parse=ParseResult(family="center", frame="unit", points=[list(pt)]),
                outcome="miss",
            )
        )
        i += 1
    for k in range(n_hits):
        recs.append(
            Record(
                **base(f"hit-{k:03d}", i),
                parse=ParseResult(family="center", frame="unit", points=[[30 / W, 20 / H]]),
                outcome="hit",
            )
        )
        i += 1
    if with_no_prediction:
        recs.append(Record(**base("nopred-000", i), parse=ParseResult(family="center", frame="unit", reason="no_coordinates"), outcome="no_prediction"))
    write_records(study / "m" / "suite.jsonl", recs)
    return study


def expected_oracle(sample_id: str) -> str:
    """The oracle label of ``miss-NNN``."""
    k = int(sample_id.split("-")[1])
    return MISS_POINTS[k % len(MISS_POINTS)][1]
