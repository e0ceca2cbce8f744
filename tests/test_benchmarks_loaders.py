"""Benchmark loaders on fixtures written in each official layout, and on the real PointerBench rows."""

from __future__ import annotations

import json
import shutil
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
import builders  # noqa: E402

from pointfail.inputs.benchmarks import AXES, BENCHMARKS, BenchmarkError, load, require_images  # noqa: E402
from pointfail.records import sha256_file  # noqa: E402


def test_registry_names():
    assert sorted(BENCHMARKS) == sorted([
        "point-bench", "where2place", "refspatial", "pointerbench-sheets", "pointerbench-text",
        "pointerbench-pro", "screenspot-pro", "suite"])
    assert set(AXES) == set(BENCHMARKS)


def test_unknown_benchmark_and_missing_dir(tmp_path):
    with pytest.raises(BenchmarkError, match="unknown benchmark 'nope'.*point-bench"):
        load("nope", tmp_path)
    with pytest.raises(BenchmarkError, match="does not exist"):
        load("where2place", tmp_path / "absent")


# ------------------------------------------------------------------------------- Point-Bench

def test_point_bench_loads_by_nfc_name_not_row_order(tmp_path):
    root = builders.point_bench(tmp_path / "pb")
    samples = load("point-bench", root)
    ids = [s.sample_id for s in samples]
    assert ids == sorted(ids) == [f"affordable/{builders.NFC_NAME}", "counting/b.png",
                                  "steerable/s1.png", "steerable/s2.png"]
    by = {s.sample_id: s for s in samples}
    cafe = by[f"affordable/{builders.NFC_NAME}"]
    # the file on disk has the NFD name; it was found through NFC matching
    assert Path(cafe.image.path).name == builders.NFD_NAME
    assert cafe.image.width == 20 and cafe.image.height == 10
    assert cafe.image.sha256 == sha256_file(cafe.image.path)
    # binarized at > 127: three pixels of 128 count, three of 127 do not
    assert cafe.target.kind == "mask" and cafe.target.area_px == 3.0
    assert cafe.instruction == "Point to the cup handle."
    assert cafe.metadata == {"category": "affordable", "count": 1, "reference_point": "n/a"}
    counting = by["counting/b.png"]
    assert counting.metadata["count"] == 2 and counting.target.area_px == 2 * 4 + 2 * 2
    assert counting.target.mask_path.endswith("masks/b_mask.png")


def test_point_bench_steerable_reference_point_loaded_or_said_absent(tmp_path):
    root = builders.point_bench(tmp_path / "pb")
    by = {s.sample_id: s for s in load("point-bench", root)}
    s1, s2 = by["steerable/s1.png"], by["steerable/s2.png"]
    # pixmo_metadata.csv: x=25 %, y=50 % of a 20x10 image -> (5.0, 5.0) px
    assert s1.metadata["reference_point"] == "loaded"
    assert (s1.metadata["reference_point_x_px"], s1.metadata["reference_point_y_px"]) == (5.0, 5.0)
    assert s1.metadata["reference_points_n"] == 1
    # RGB mask with only the red channel 200 counts (any channel > 127): 2 x 3 pixels
    assert s1.target.area_px == 6.0
    assert s2.metadata["reference_point"] == "absent"
    assert "reference_point_x_px" not in s2.metadata


def test_point_bench_reference_point_from_row_field(tmp_path):
    root = builders.point_bench(tmp_path / "pb")
    rows = json.loads((root / "data.json").read_text(encoding="utf-8"))
    rows[3]["points"] = [{"x": 50.0, "y": 10.0}]
    (root / "data.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    s2 = {s.sample_id: s for s in load("point-bench", root)}["steerable/s2.png"]
    assert s2.metadata["reference_point"] == "loaded"
    assert (s2.metadata["reference_point_x_px"], s2.metadata["reference_point_y_px"]) == (10.0, 1.0)


def test_point_bench_reports_every_missing_file_by_name(tmp_path):
    root = builders.point_bench(tmp_path / "pb")
    (root / "images" / "counting" / "b.png").unlink()
    (root / "masks" / "s1_mask.png").unlink()
    # a wrong-size mask does not stop the load, missing files do: only the two missing files are listed
    builders.mask_png(root / "masks" / "s2_mask.png", builders.rect_mask(size=(21, 10)))
    with pytest.raises(BenchmarkError) as e:
        load("point-bench", root)
    msg = str(e.value)
    assert len(e.value.problems) == 2
    assert "missing image" in msg and "images/counting/b.png" in msg
    assert "missing mask" in msg and "s1_mask.png" in msg
    assert sorted(Path(f).name for f in e.value.files) == ["b.png", "s1_mask.png"]


def test_point_bench_unusable_masks_load_with_a_warning(tmp_path):
    root = builders.point_bench(tmp_path / "pb")
    builders.mask_png(root / "masks" / "s2_mask.png", builders.rect_mask(size=(21, 10)))  # wrong size
    builders.mask_png(root / "masks" / "cafe_mask.png", np.full((10, 20), 127, np.uint8))  # empty at > 127
    (root / "masks" / "s1_mask.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")  # unreadable
    with pytest.warns(UserWarning) as w:
        samples = load("point-bench", root)
    msg = str(w[0].message)
    assert "3 sample(s) with an unusable mask" in msg
    assert "s2_mask.png is 21x10, its image is 20x10" in msg
    assert "cafe_mask.png is empty (no pixel in the target after binarization)" in msg
    assert "unreadable mask" in msg and "s1_mask.png" in msg
    by = {s.sample_id: s for s in samples}
    assert len(samples) == 4
    for sid in ("steerable/s2.png", f"affordable/{builders.NFC_NAME}", "steerable/s1.png"):
        t = by[sid].target
        assert t.kind == "mask" and t.area_px is None
        assert t.sha256 == sha256_file(t.mask_path)  # the bytes are still identified
    # the good mask is measured as before: 2*4 + 2*2 = 12 pixels
    assert by["counting/b.png"].target.area_px == 12.0


def _replies_for_point_bench() -> dict[str, str]:
    """Molmo replies (percent of the 20x10 images) aimed at each fixture mask."""
    return {
        # b_mask: rows 0-1, columns 0-3 -> (10 %, 10 %) = pixel (2, 1): inside -> hit
        "counting/b.png": '<point x="10" y="10">apple</point>',
        # cafe_mask: row 5, columns 5-7 -> (32.5 %, 55 %) = pixel (6.5, 5.5): inside -> hit
        f"affordable/{builders.NFC_NAME}": '<point x="32.5" y="55">handle</point>',
        # s1_mask: rows 1-2, columns 10-12 -> (90 %, 90 %) = pixel (18, 9): outside -> miss
        "steerable/s1.png": '<point x="90" y="90">thing</point>',
        # s2_mask is made 21x10 below: whatever the point, the sample cannot be scored
        "steerable/s2.png": '<point x="35" y="40">thing</point>',
    }


def test_point_bench_wrong_size_mask_end_to_end(tmp_path):
    """Load -> prompt -> build_record for every sample: the wrong-size mask becomes an explained
    error naming both sizes; the other samples are scored."""
    from pointfail import geometry
    from pointfail.families import get_family
    from pointfail.prompts import build_prompt
    from pointfail.records import Response
    from pointfail.scoring import build_record

    geometry.mask_cache_clear()
    root = builders.point_bench(tmp_path / "pb")
    builders.mask_png(root / "masks" / "s2_mask.png", builders.rect_mask(size=(21, 10)))
    with pytest.warns(UserWarning, match="1 sample"):
        samples = load("point-bench", root)
    fam = get_family("molmo")
    replies = _replies_for_point_bench()
    records = {s.sample_id: build_record(study="t", model="molmo-7b", family=fam, sample=s,
                                         prompt=build_prompt(fam, s), response=Response(raw_text=replies[s.sample_id]))
               for s in samples}
    bad = records["steerable/s2.png"]
    assert bad.outcome == "error" and bad.error.startswith("scoring: ")
    assert "21x10" in bad.error and "20x10" in bad.error
    assert bad.response.raw_text == replies["steerable/s2.png"] and bad.response.error is None
    assert bad.parse.points == [[0.35, 0.4]]
    assert {k: r.outcome for k, r in records.items() if k != "steerable/s2.png"} == {
        "counting/b.png": "hit", f"affordable/{builders.NFC_NAME}": "hit", "steerable/s1.png": "miss"}
    assert all(r.error is None for k, r in records.items() if k != "steerable/s2.png")
    # the miss is scored geometrically (pixel-centre rule): the point's pixel (18, 9) has centre
    # (18.5, 9.5); the nearest mask pixel (12, 2) has centre (12.5, 2.5): hypot(6, 7)
    assert records["steerable/s1.png"].geometry.distance_px == pytest.approx(np.hypot(6, 7))


def test_point_bench_empty_mask_is_an_explained_error_record(tmp_path):
    from pointfail import geometry
    from pointfail.records import Prompt, Response
    from pointfail.scoring import build_record

    geometry.mask_cache_clear()
    root = builders.point_bench(tmp_path / "pb")
    builders.mask_png(root / "masks" / "cafe_mask.png", np.zeros((10, 20), np.uint8))
    with pytest.warns(UserWarning, match="is empty"):
        s = {x.sample_id: x for x in load("point-bench", root)}[f"affordable/{builders.NFC_NAME}"]
    rec = build_record(study="t", model="m", family="molmo", sample=s, prompt=Prompt(original="a", core="a", sent="a"),
                       response=Response(raw_text='<point x="32.5" y="55">h</point>'))
    assert rec.outcome == "error" and "cafe_mask.png is empty" in rec.error


def test_point_bench_bad_category_and_duplicate(tmp_path):
    root = builders.point_bench(tmp_path / "pb")
    rows = json.loads((root / "data.json").read_text(encoding="utf-8"))
    rows.append(dict(rows[0]))
    rows.append(dict(rows[1], category="pointing"))
    (root / "data.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(BenchmarkError) as e:
        load("point-bench", root)
    assert any("duplicate sample counting/b.png" in p for p in e.value.problems)
    assert any("unknown category 'pointing'" in p for p in e.value.problems)


# ------------------------------------------------------------------------------- Where2Place

def test_where2place_layout(tmp_path):
    root = builders.where2place(tmp_path / "w2p", n=3)
    samples = load("where2place", root)
    assert [s.sample_id for s in samples] == ["000", "001", "002"]
    s = samples[1]
    assert s.instruction == builders.W2P_TEXT  # verbatim, directive included
    assert s.metadata == {"category": "unseen", "question_id": 1}
    assert s.target.mask_path.endswith("masks/01.jpg")
    assert s.target.area_px == 5 * 4  # JPEG at quality 100 keeps a clean 5x4 block above 127
    assert load("where2place", root, limit=2)[-1].sample_id == "001"


def test_where2place_question_id_must_match_row_position(tmp_path):
    root = builders.where2place(tmp_path / "w2p", n=2)
    lines = (root / "point_questions.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[1])
    row["question_id"] = 7
    lines[1] = json.dumps(row)
    (root / "point_questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(BenchmarkError, match=r"point_questions.jsonl:2: question_id 7 is not the row position 1"):
        load("where2place", root)


def test_where2place_missing_mask_and_bad_json_line(tmp_path):
    root = builders.where2place(tmp_path / "w2p", n=2)
    (root / "masks" / "01.jpg").unlink()
    with pytest.raises(BenchmarkError, match=r"missing mask .*masks/01.jpg"):
        load("where2place", root)
    with open(root / "point_questions.jsonl", "a", encoding="utf-8") as f:
        f.write("{not json\n")
    with pytest.raises(BenchmarkError, match=r"point_questions.jsonl:3: not valid JSON"):
        load("where2place", root)


def test_where2place_unusable_masks_load(tmp_path):
    root = builders.where2place(tmp_path / "w2p", n=3)
    builders.jpeg(root / "masks" / "00.jpg", size=(20, 11), color=(255, 255, 255))  # wrong size
    builders.jpeg(root / "masks" / "02.jpg", size=(20, 10), color=(0, 0, 0))  # empty
    with pytest.warns(UserWarning) as w:
        samples = load("where2place", root)
    msg = str(w[0].message)
    assert "2 sample(s)" in msg and "00.jpg is 20x11, its image is 20x10" in msg and "02.jpg is empty" in msg
    assert [s.sample_id for s in samples] == ["000", "001", "002"]
    assert [s.target.area_px for s in samples] == [None, 20.0, None]


# ------------------------------------------------------------------------------- RefSpatial

def test_refspatial_layout(tmp_path):
    root = builders.refspatial(tmp_path / "rs")
    samples = load("refspatial", root)
    assert [s.sample_id for s in samples] == ["location/0000", "placement/0000", "unseen/0000"]
    s = samples[1]
    assert s.instruction == "Please point to the placement target. " + builders.REFSPATIAL_SUFFIX
    assert s.metadata["split"] == "placement" and s.metadata["step"] == 2
    assert s.metadata["category"] == "placement" and s.metadata["object"] == "the mug"
    assert s.metadata["directive_suffix"] == builders.REFSPATIAL_SUFFIX
    assert s.target.area_px == 20.0


def test_refspatial_missing_split(tmp_path):
    root = builders.refspatial(tmp_path / "rs")
    shutil.rmtree(root / "Unseen")
    with pytest.raises(BenchmarkError, match=r"missing file .*Unseen/question.json"):
        load("refspatial", root)


def test_refspatial_unusable_mask_loads_and_is_an_error_record(tmp_path):
    from pointfail import geometry
    from pointfail.records import Prompt, Response
    from pointfail.scoring import build_record

    geometry.mask_cache_clear()
    root = builders.refspatial(tmp_path / "rs")
    builders.mask_png(root / "Unseen" / "mask" / "0.png", builders.rect_mask(size=(40, 20)))
    with pytest.warns(UserWarning, match=r"Unseen/mask/0.png is 40x20, its image is 20x10"):
        samples = load("refspatial", root)
    assert [s.sample_id for s in samples] == ["location/0000", "placement/0000", "unseen/0000"]
    prompt = Prompt(original="a", core="a", sent="a")
    # showui replies in 0-1 floats: (0.35, 0.4) of 20x10 = pixel (7, 4), inside rect_mask's 5..9 x 2..5
    recs = [build_record(study="t", model="m", family="showui", sample=s, prompt=prompt,
                         response=Response(raw_text="[0.35, 0.4]")) for s in samples]
    assert [r.outcome for r in recs] == ["hit", "hit", "error"]
    assert "40x20" in recs[2].error and "20x10" in recs[2].error


# ------------------------------------------------------------------------------- ScreenSpot-Pro

def test_screenspot_pro_layout(tmp_path):
    root = builders.screenspot_pro(tmp_path / "ssp")
    samples = load("screenspot-pro", root)
    assert [s.sample_id for s in samples] == ["pycharm_0", "pycharm_1"]
    s = samples[0]
    assert s.task == "point" and s.target.kind == "boxes" and s.target.boxes == [[2, 1, 6, 4]]
    assert s.target.area_px == 4 * 3
    assert s.metadata == {"group": "Dev", "application": "pycharm", "platform": "macos", "ui_type": "icon",
                          "annotation_file": "pycharm_macos.json"}
    assert s.image.width == 20 and s.image.height == 10


def test_screenspot_pro_rejects_inverted_box(tmp_path):
    rows = [{"id": "bad_0", "img_filename": "pycharm/a.png", "bbox": [6, 1, 2, 4], "img_size": [20, 10],
             "instruction": "x", "application": "pycharm", "platform": "macos", "group": "Dev",
             "ui_type": "icon"}]
    root = builders.screenspot_pro(tmp_path / "ssp", rows)
    with pytest.raises(BenchmarkError) as e:
        load("screenspot-pro", root)
    assert "pycharm_macos.json row 0 (id bad_0)" in str(e.value)
    assert "x2 < x1" in str(e.value)


def test_screenspot_pro_image_size_mismatch_and_missing(tmp_path):
    rows = [{"id": "a", "img_filename": "pycharm/a.png", "bbox": [1, 1, 2, 2], "img_size": [40, 10],
             "instruction": "x"},
            {"id": "b", "img_filename": "pycharm/zz.png", "bbox": [1, 1, 2, 2], "img_size": [20, 10],
             "instruction": "y"}]
    root = builders.screenspot_pro(tmp_path / "ssp", rows)
    with pytest.raises(BenchmarkError) as e:
        load("screenspot-pro", root)
    msg = str(e.value)
    assert "a.png is 20x10, metadata says 40x10" in msg
    assert "missing image" in msg and "pycharm/zz.png" in msg


# ------------------------------------------------------------------------------- PointerBench (real rows)

@pytest.mark.parametrize("name,n_box", [("pointerbench-sheets", 0), ("pointerbench-text", 134),
                                        ("pointerbench-pro", 0)])
def test_real_pointerbench_rows_load(pointerbench_dir, name, n_box):
    samples = load(name, pointerbench_dir)
    assert len(samples) == 500
    assert Counter(s.task for s in samples)["box"] == n_box
    assert all(s.image.sha256 is None and (s.image.width, s.image.height) == (1024, 768) for s in samples)
    assert all(s.target.kind == "boxes" and len(s.target.boxes) == 1 for s in samples)
    for s in samples:  # the published reference point lies inside the inclusive box
        x0, y0, x1, y1 = s.target.boxes[0]
        assert x0 <= s.metadata["reference_point_x_px"] <= x1 and y0 <= s.metadata["reference_point_y_px"] <= y1
    # every official breakdown axis of the subset is present on every sample
    axes = {"pointerbench-sheets": ("category", "ui_style", "data_type"),
            "pointerbench-text": ("answer_type", "data_type", "category", "surface", "language", "difficulty"),
            "pointerbench-pro": ("element_type", "app_category", "platform", "app")}[name]
    assert all(all(a in s.metadata for a in axes) for s in samples)


def test_real_pointerbench_all_1500(pointerbench_dir):
    total = sum(len(load(n, pointerbench_dir)) for n in ("pointerbench-sheets", "pointerbench-text",
                                                          "pointerbench-pro"))
    assert total == 1500
    text = {s.sample_id: s for s in load("pointerbench-text", pointerbench_dir / "pointerbench-text")}
    s = text["pbt_0010"]
    assert s.task == "box"
    assert s.target.eval == {"type": "iou", "bbox": [276, 290, 718, 300], "min_coverage": 0.9,
                             "min_precision": 0.7}
    assert s.target.area_px == (718 - 276) * (300 - 290)


def test_require_images_names_missing_screenshots(pointerbench_dir):
    samples = load("pointerbench-pro", pointerbench_dir, limit=3)
    with pytest.raises(BenchmarkError) as e:
        require_images(samples)
    assert len(e.value.files) == 3
    assert e.value.files[0].endswith("pointerbench-pro/data/test/0000.png")
    assert "3 image(s) missing" in str(e.value)


def test_pointerbench_with_images_hashes_them(tmp_path):
    rows = [builders.pointerbench_row(0), builders.pointerbench_row(1)]
    root = builders.pointerbench(tmp_path / "pointerbench-text", rows, images=True)
    samples = load("pointerbench-text", root)
    assert all(s.image.sha256 == sha256_file(s.image.path) for s in samples)
    require_images(samples)  # no error: both screenshots present


def test_pointerbench_bad_rows(tmp_path):
    rows = [builders.pointerbench_row(0),
            builders.pointerbench_row(0),  # duplicate id
            builders.pointerbench_row(2, bbox=[30, 20, 10, 40], eval={"type": "point_in_bbox", "bbox": [30, 20, 10, 40]}),
            builders.pointerbench_row(3, answer_type="bbox"),  # eval still point_in_bbox
            builders.pointerbench_row(4, eval={"type": "point_in_bbox", "bbox": [0, 0, 1, 1]})]
    root = builders.pointerbench(tmp_path / "pointerbench-text", rows)
    with pytest.raises(BenchmarkError) as e:
        load("pointerbench-text", root)
    p = e.value.problems
    assert len(p) == 4
    assert "metadata.jsonl:2: duplicate id pbt_0000" in p[0]
    assert "metadata.jsonl:3:" in p[1] and "x2 < x1" in p[1]
    assert "answer_type 'bbox' does not match eval type 'point_in_bbox'" in p[2]
    assert "eval.bbox [0, 0, 1, 1] differs from bbox [10, 20, 30, 40]" in p[3]


def test_pointerbench_wrong_size_screenshot(tmp_path):
    root = builders.pointerbench(tmp_path / "pointerbench-text", [builders.pointerbench_row(0)],
                                 images=True, size=(800, 600))
    with pytest.raises(BenchmarkError, match=r"0000.png is 800x600, metadata says 1024x768"):
        load("pointerbench-text", root)


def test_pointerbench_missing_metadata(tmp_path):
    with pytest.raises(BenchmarkError, match=r"missing file .*data/test/metadata.jsonl"):
        load("pointerbench-sheets", tmp_path)


# ------------------------------------------------------------------------------- generated suites

def test_suite_layout(tmp_path):
    root = builders.suite(tmp_path / "sheets_suite", n=2, name="sheets")
    samples = load("suite", root)
    assert [s.sample_id for s in samples] == ["sheets_0000", "sheets_0001"]
    s = samples[0]
    assert s.benchmark == "sheets"
    assert s.metadata["target_id"] == "cell:A1"
    assert s.scene_graph_path.endswith("data/test/scene_graphs/0000.json")
    assert s.image.sha256 == sha256_file(s.image.path)


def test_suite_manifest_mismatch_and_missing_scene_graph(tmp_path):
    root = builders.suite(tmp_path / "s", n=2)
    builders.png(root / "data" / "test" / "0001.png", size=(64, 48), color=(0, 0, 0))
    with pytest.raises(BenchmarkError, match=r"0001.png content differs from the manifest"):
        load("suite", root)
    root2 = builders.suite(tmp_path / "s2", n=1)
    (root2 / "manifest.json").unlink()
    (root2 / "data" / "test" / "scene_graphs" / "0000.json").unlink()
    with pytest.raises(BenchmarkError, match=r"missing scene graph .*scene_graphs/0000.json"):
        load("suite", root2)


def test_nfc_and_nfd_names_are_one_file(tmp_path):
    assert unicodedata.normalize("NFC", builders.NFD_NAME) == builders.NFC_NAME != builders.NFD_NAME


def test_suite_from_the_real_generator(tmp_path):
    from pointfail.cli import main

    out = tmp_path / "text"
    assert main(["generate", "text", "--n", "2", "--seed", "5", "--out", str(out)]) == 0
    samples = load("suite", out)
    assert len(samples) == 2 and all(s.benchmark == "text" for s in samples)
    for s in samples:
        graph = json.loads(Path(s.scene_graph_path).read_text(encoding="utf-8"))
        ids = {e["id"] for e in graph["elements"]}
        assert s.metadata["target_id"] in ids
        assert s.image.sha256 == sha256_file(s.image.path)


def test_import_light():
    """Importing the loaders, official rules and prompts pulls in no torch, transformers, PIL or numpy."""
    import subprocess

    code = ("import sys, pointfail.inputs.benchmarks, pointfail.official, pointfail.inputs.benchmarks.fetch, "
            "pointfail.prompts; heavy = [m for m in ('torch', 'transformers', 'PIL', 'numpy', 'huggingface_hub') "
            "if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_refspatial_paths_relative_to_root(tmp_path):
    root = builders.refspatial(tmp_path / "rs")
    q = root / "Placement" / "question.json"
    rows = json.loads(q.read_text(encoding="utf-8"))
    rows[0]["rgb_path"] = "Placement/image/0.png"
    q.write_text(json.dumps(rows), encoding="utf-8")
    s = {x.sample_id: x for x in load("refspatial", root)}["placement/0000"]
    assert s.image.path.endswith("Placement/image/0.png")


def test_loader_and_scorer_share_one_mask_binarization(tmp_path):
    """A 0/1-coded mask (every value 0 or 1) was "empty" to the loaders' old > 127 rule while the
    scorer scored it; now both read it through geometry's one rule, so its area is the scorer's."""
    from PIL import Image

    from pointfail.geometry import TargetRegion, check_mask
    from pointfail.records import Target

    m = np.zeros((10, 20), np.uint8)
    m[2:5, 3:9] = 1  # 3 rows x 6 columns = 18 pixels
    p = tmp_path / "zero_one.png"
    Image.fromarray(m, "L").save(p)
    chk = check_mask(p, (20, 10))
    region = TargetRegion.from_target(Target(kind="mask", mask_path=str(p)), (20, 10))
    assert chk.problem is None and chk.area_px == region.area_px == 18.0
    assert chk.sha256 == sha256_file(p)
    Image.fromarray(np.full((10, 20), 127, np.uint8), "L").save(p)  # 0/255 rule: nothing above 127
    assert check_mask(p, (20, 10)).problem.endswith("is empty (no pixel in the target after binarization)")
    assert TargetRegion.from_target(Target(kind="mask", mask_path=str(p)), (20, 10)).mask_empty
