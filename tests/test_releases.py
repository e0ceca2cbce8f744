"""Benchmarks as their publishers ship them: Point-Bench's release (archives and all) through the
loader, `pointfail data check` and `pointfail evaluate --data`, and the stand-in hub's file lists
against each loader's documented release (docs/releases.md)."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
import builders  # noqa: E402

from pointfail.inputs.benchmarks import BenchmarkError, load  # noqa: E402
from pointfail.inputs.benchmarks.archive import CACHE_DIR  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HUB_DIR = REPO / "tests" / "fixtures" / "standin_hub"


def _content(samples):
    """What a sample is, apart from where its files lie: id, instruction, image and mask digests,
    image size, mask area, metadata."""
    return [(s.sample_id, s.instruction, s.image.sha256, s.image.width, s.image.height, s.target.sha256,
             s.target.area_px, s.metadata) for s in samples]


def test_published_point_bench_loads_as_the_unpacked_one(tmp_path):
    """data.json + pixmo_metadata.csv + selected_images.zip + selected_masks.zip (a UTF-8 name stored
    without the zip's UTF-8 flag, NFD): the same samples as the unpacked folders, read from the
    cache beside the archives."""
    pub = builders.point_bench_published(tmp_path / "pub", utf8_flag=False)
    assert sorted(p.name for p in pub.iterdir()) == ["data.json", "pixmo_metadata.csv", "selected_images.zip",
                                                     "selected_masks.zip"]
    with zipfile.ZipFile(pub / "selected_images.zip") as zf:  # plain zipfile would mangle the name
        assert any("caf" in n and "é" not in unicodedata.normalize("NFC", n) for n in zf.namelist())
    legacy = builders.point_bench(tmp_path / "legacy")
    got = load("point-bench", pub)
    assert _content(got) == _content(load("point-bench", legacy))
    cafe = {s.sample_id: s for s in got}[f"affordable/{builders.NFC_NAME}"]
    assert cafe.image.path == (pub / CACHE_DIR / "selected_images.zip" / "selected_images" / "affordable"
                               / builders.NFC_NAME).as_posix()
    assert cafe.target.mask_path.endswith(f"{CACHE_DIR}/selected_masks.zip/selected_masks/affordable/cafe_mask.png")
    # the archives unpacked by hand (Molmo2 runs `unzip`) load too, to the same content
    unz = tmp_path / "unzipped"
    unz.mkdir()
    for name in ("data.json", "pixmo_metadata.csv"):
        (unz / name).write_bytes((pub / name).read_bytes())
    for a in ("selected_images.zip", "selected_masks.zip"):
        for member in (pub / CACHE_DIR / a).rglob("*"):
            if member.is_file():
                q = unz / member.relative_to(pub / CACHE_DIR / a)
                q.parent.mkdir(parents=True, exist_ok=True)
                q.write_bytes(member.read_bytes())
    assert _content(load("point-bench", unz)) == _content(got)


def test_published_point_bench_problems_name_the_row_the_file_and_the_layout(tmp_path):
    pub = builders.point_bench_published(tmp_path / "pub")
    rows = json.loads((pub / "data.json").read_text(encoding="utf-8"))
    rows[0]["mask_filename"] = "nope_mask.png"
    (pub / "data.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(BenchmarkError) as e:
        load("point-bench", pub)
    (line,) = e.value.problems
    assert "data.json row 0" in line and "selected_masks/counting/nope_mask.png" in line and "selected_masks.zip" in line
    assert "selected_masks/<category>/<mask_filename>" in line
    (pub / "selected_masks.zip").unlink()
    with pytest.raises(BenchmarkError, match="missing .*selected_masks.zip .*the published archive"):
        load("point-bench", pub)


def test_a_hostile_archive_stops_the_load_with_its_one_line(tmp_path):
    from pointfail.generated.testing.standin import zip_bytes

    pub = builders.point_bench_published(tmp_path / "pub")
    (pub / "selected_images.zip").write_bytes(zip_bytes({"selected_images/../../x.png": b"1"}, folders=False))
    with pytest.raises(BenchmarkError) as e:
        load("point-bench", pub)
    assert len(e.value.problems) == 1 and "'..' component" in e.value.problems[0]
    assert not (tmp_path / "x.png").exists()


def _cli(args, cwd=REPO):
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(
        [str(REPO / "src"), str(REPO / "runner" / "src"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pointfail", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_data_check_accepts_the_published_files_and_counts_skipped_rows(tmp_path):
    pub = builders.point_bench_published(tmp_path / "pub", utf8_flag=False)
    rows = json.loads((pub / "data.json").read_text(encoding="utf-8"))
    rows.append({"image_filename": "b.png", "user_input": "no mask", "category": "counting"})
    (pub / "data.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    r = _cli(["data", "check", "point-bench", str(pub)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "point-bench: 4 samples (point 4); 0 without an image file"
    assert "note: point-bench: 1 row(s) of 5 without mask_filename skipped" in r.stdout


def test_evaluate_with_data_reads_the_published_files(tmp_path):
    """`pointfail evaluate --benchmark point-bench --data DIR` on the published files: every row
    scored from the masks inside selected_masks.zip (the affordable mask's three pixels of 128 at
    row 5, columns 5-7 of a 20x10 image: (6.5, 5.5) px = (32.5 %, 55 %) is a hit, the centre of the
    counting image a miss)."""
    pub = builders.point_bench_published(tmp_path / "pub", utf8_flag=False)
    replies = tmp_path / "replies.jsonl"
    ids = [f"affordable/{builders.NFC_NAME}", "counting/b.png", "steerable/s1.png", "steerable/s2.png"]
    texts = ['<point x="32.5" y="55.0">handle</point>', '<point x="50.0" y="50.0">apple</point>',
             "I cannot see it.", '<point x="37.5" y="40.0">it</point>']
    replies.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in zip(ids, texts)),
                       encoding="utf-8")
    out = tmp_path / "out"
    r = _cli(["evaluate", "--benchmark", "point-bench", "--data", str(pub), "--replies", str(replies),
              "--family", "molmo", "--out", str(out), "--judge", "none", "--no-report", "--no-view", "--no-progress"])
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    recs = {x["sample_id"]: x for p in sorted(out.rglob("point-bench.jsonl"))
            for x in map(json.loads, p.read_text(encoding="utf-8").splitlines()) if x}
    assert {k: v["outcome"] for k, v in recs.items()} == {ids[0]: "hit", ids[1]: "miss", ids[2]: "no_prediction",
                                                           ids[3]: "hit"}


# ------------------------------------------------------------------ the stand-in hub as published


def _documented_release():
    """The stand-in hub's dataset folder -> the loader's RELEASE patterns (PointerBench's one hub
    repository holds its three subsets)."""
    from pointfail.inputs.benchmarks import point_bench, pointerbench, refspatial, screenspot_pro, where2place

    return {"point-bench": point_bench.RELEASE, "where2place": where2place.RELEASE, "refspatial": refspatial.RELEASE,
            "screenspot-pro": screenspot_pro.RELEASE, "pointerbench": pointerbench.RELEASE}


@pytest.mark.parametrize("bench", ["point-bench", "where2place", "refspatial", "screenspot-pro", "pointerbench"])
def test_stand_in_hub_serves_each_benchmark_as_documented(bench):
    """Every file the stand-in hub serves for a benchmark (its STAND-IN README aside) matches a
    pattern of the loader's documented release, and every exact name of it is served."""
    folder = HUB_DIR / "datasets" / bench
    served = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    patterns = _documented_release()[bench]
    unmatched = [f for f in served if f != "README.md" and not any(fnmatch.fnmatchcase(f, g) for g in patterns)]
    assert unmatched == []
    exact = [g for g in patterns if not any(c in g for c in "*?[")]
    assert [g for g in exact if g not in served] == []
    for g in patterns:  # and each pattern is exercised
        assert any(fnmatch.fnmatchcase(f, g) for f in served), g


def test_stand_in_point_bench_archives_nest_members_per_category():
    from pointfail.inputs.benchmarks.archive import read_members
    from pointfail.inputs.benchmarks.point_bench import CATEGORIES

    folder = HUB_DIR / "datasets" / "point-bench"
    rows = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    images = {m.name for m in read_members(folder / "selected_images.zip") if not m.is_dir}
    masks = {m.name for m in read_members(folder / "selected_masks.zip") if not m.is_dir}
    assert images == {f"selected_images/{r['category']}/{r['image_filename']}" for r in rows}
    assert masks == {f"selected_masks/{r['category']}/{r['mask_filename']}" for r in rows}
    assert {r["category"] for r in rows} == set(CATEGORIES)


def test_stand_in_pointerbench_rows_carry_the_release_fields(pointerbench_dir):
    """Each stand-in subset's rows have exactly the keys of the real release's rows
    (shared/data/pointerbench, the publisher's metadata.jsonl), and the eval objects their shape."""
    folder = HUB_DIR / "datasets" / "pointerbench"
    for subset in ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro"):
        real = [json.loads(x) for x in (pointerbench_dir / subset / "data/test/metadata.jsonl").read_text().splitlines()]
        ours = [json.loads(x) for x in (folder / subset / "data/test/metadata.jsonl").read_text().splitlines()]
        assert len(real) == 500 and len(ours) == 2
        assert {frozenset(r) for r in real} == {frozenset(r) for r in ours}, subset
        shapes = {(r["answer_type"], frozenset(r["eval"])) for r in real}
        assert {(r["answer_type"], frozenset(r["eval"])) for r in ours} <= shapes, subset


def test_stand_in_screenspot_pro_names_files_as_the_publisher():
    """annotations/<application>_<platform>.json, rows with the publisher's keys, each image under
    images/<application>_<os>/."""
    folder = HUB_DIR / "datasets" / "screenspot-pro"
    keys = {"id", "img_filename", "bbox", "img_size", "instruction", "instruction_cn", "application", "platform",
            "group", "ui_type"}
    anns = sorted((folder / "annotations").glob("*.json"))
    assert [a.name for a in anns] == ["excel_macos.json", "vscode_macos.json"]
    for a in anns:
        for row in json.loads(a.read_text(encoding="utf-8")):
            assert set(row) == keys and a.name == f"{row['application']}_{row['platform']}.json"
            assert row["img_filename"].split("/")[0] == f"{row['application']}_mac"
            assert (folder / "images" / row["img_filename"]).is_file()


@pytest.mark.parametrize("bench,expect", [
    ("screenspot-pro", "screenspot-pro: 4 samples (point 4)"),
    ("pointerbench-text", "pointerbench-text: 2 samples (box 1, point 1)"),
    ("pointerbench-pro", "pointerbench-pro: 2 samples (point 2)"),
])
def test_fetch_from_the_stand_in_hub_then_check(tmp_path, bench, expect):
    """`pointfail data fetch B --to DIR --revision C` with the real huggingface_hub client against the
    stand-in hub on loopback (HF_ENDPOINT), then `pointfail data check B DIR` on what arrived: only the
    benchmark's own files (a PointerBench subset fetches its folder of the shared repository)."""
    from pointfail.inputs.benchmarks.fetch import SOURCES
    from pointfail.generated.testing.hub import StandInHub

    out = tmp_path / "data"
    with StandInHub.from_directory(HUB_DIR) as hub:
        commit = next(r.commit for r in hub.repos.values() if r.repo_id == SOURCES[bench].repo_id)
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1",
                   PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO / "runner" / "src")]))
        env.pop("HF_HUB_OFFLINE", None)
        env.pop("TRANSFORMERS_OFFLINE", None)
        r = subprocess.run([sys.executable, "-m", "pointfail", "data", "fetch", bench, "--to", str(out),
                            "--revision", commit], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    got = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and ".cache" not in p.parts)
    assert json.loads((out / "pointfail-fetch.json").read_text())["revision"] == commit
    served = HUB_DIR / "datasets" / ("screenspot-pro" if bench == "screenspot-pro" else "pointerbench")
    want = sorted(p.relative_to(served).as_posix() for p in served.rglob("*") if p.is_file()
                  and (bench == "screenspot-pro" or p.relative_to(served).parts[0] == bench) and p.name != "README.md")
    assert [g for g in got if g not in ("README.md", "pointfail-fetch.json")] == want
    c = _cli(["data", "check", bench, str(out)])
    assert c.returncode == 0, c.stdout + c.stderr
    assert c.stdout.splitlines()[0].startswith(expect)


def test_refspatial_unseen_samples_carry_the_publishers_warning_in_the_hit_rate_tables(tmp_path):
    """The rehearsal's records count RefSpatial-Bench's two Unseen samples: headline.md and outcomes.md
    carry the publisher's warning with that count; a study without Unseen samples carries none."""
    from pointfail.aggregate import aggregate
    from pointfail.inputs.benchmarks.refspatial import UNSEEN_WARNING

    study = tmp_path / "s"
    shutil.copytree(REPO / "records/pointfail-vlm-rehearsal", study, ignore=shutil.ignore_patterns("tables"))
    files = aggregate(study)
    line = f"- RefSpatial-Bench's Unseen split: 2 sample(s) are counted in its column and in pooled; {UNSEEN_WARNING}\n"
    assert "If your model is not trained with RefSpatial, this set should not be used for evaluation." in UNSEEN_WARNING
    assert [n for n, b in sorted(files.items()) if line.encode() in b] == ["headline.md", "outcomes.md"]
    for m in study.iterdir():  # drop the Unseen rows: no warning anywhere
        f = m / "refspatial.jsonl"
        if f.is_file():
            f.write_text("".join(x for x in f.read_text(encoding="utf-8").splitlines(keepends=True)
                                 if '"split":"unseen"' not in x), encoding="utf-8")
    assert not any(b"Unseen split" in b for b in aggregate(study).values())


# Files the publishers' hub repositories list beside the ones the loaders read (docs/releases.md,
# "What the hub pages show"): a folder holding them too must load to the same samples.
HUB_EXTRAS = {
    "point-bench": [".gitattributes"],
    "where2place": [".gitattributes", "bbox_questions.jsonl"],
    "refspatial": [".gitattributes", "assets/logo.png", "data/location-00000-of-00001.parquet",
                   "data/placement-00000-of-00001.parquet", "data/unseen-00000-of-00001.parquet"],
    "screenspot-pro": [".gitattributes", ".DS_Store", "images/.DS_Store", "annotate.html", "eval.yaml"],
    # (the names inside pointerbench-sheets/assets/ were not shown: "example.png" stands for them)
    "pointerbench": [".gitattributes", "CITATION.cff", "pointerbench-sheets/assets/example.png",
                     "pointerbench-pro/apps.json"]
    + [f"{s}/{f}" for s in ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro")
       for f in (".gitignore", "CITATION.cff", "REPRODUCE.md", "eval.py", "__pycache__/eval.cpython-312.pyc")],
}


@pytest.mark.parametrize("bench,names", [("point-bench", ["point-bench"]), ("where2place", ["where2place"]),
                                         ("refspatial", ["refspatial"]), ("screenspot-pro", ["screenspot-pro"]),
                                         ("pointerbench", ["pointerbench-sheets", "pointerbench-text",
                                                           "pointerbench-pro"])])
def test_a_folder_with_the_hubs_other_files_loads_the_same(tmp_path, bench, names):
    """The stand-in release plus every other file the publisher's hub repository lists (none of
    them matches a RELEASE pattern, so `data fetch` leaves them out): the same samples load."""
    from pointfail.inputs.benchmarks import pointerbench

    plain, full = tmp_path / "plain", tmp_path / "full"
    shutil.copytree(HUB_DIR / "datasets" / bench, plain)
    shutil.copytree(plain, full)
    patterns = _documented_release()[bench]
    for extra in HUB_EXTRAS[bench]:
        assert not any(fnmatch.fnmatchcase(extra, g) for g in patterns), extra
        (full / extra).parent.mkdir(parents=True, exist_ok=True)
        (full / extra).write_bytes(b"\x00not a release file\n")
    for name in names:
        sub = name if name in pointerbench.SUBSETS else "."
        assert _content(load(name, full / sub)) == _content(load(name, plain / sub)) != []
