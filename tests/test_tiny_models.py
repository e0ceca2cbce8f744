"""Tiny random-weight checkpoints of the real architectures, run through the worker in-process and as a
subprocess (issue 4: "Tiny random-weight checkpoints ... run through the worker in-process"; "Kill ...
mid-run, run again: every sample answered exactly once")."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from pointfail.records import canonical_json
from pointfail.running.worker import run_worker

pytest.importorskip("transformers")
pytest.importorskip("torch")

# (W, H) of the test images and the model-input size [W, H] each processor must produce.
SIZES = [(100, 60), (40, 90), (300, 200)]
EXPECTED_INPUT = {
    # smart_resize, factor 28 (patch 14 x merge 2), min_pixels 28*28*4 = 3136, max_pixels 28*28*16 = 12544:
    # 100x60: round(60/28)=2 -> 56, round(100/28)=4 -> 112; 56*112 = 6272 in range           -> [112, 56]
    # 40x90: 84x28 = 2352 < 3136, beta = sqrt(3136/3600) = 0.9333; ceil(84/28)=3 -> 84,
    #        ceil(37.33/28)=2 -> 56                                                          -> [56, 84]
    # 300x200: 196x308 = 60368 > 12544, beta = sqrt(60000/12544) = 2.187; floor(91.45/28)=3 -> 84,
    #          floor(137.2/28)=4 -> 112                                                      -> [112, 84]
    "qwen2_5_vl": [[112, 56], [56, 84], [112, 84]],
    # factor 32 (patch 16 x merge 2), min 32*32*4 = 4096, max 32*32*16 = 16384:
    # 100x60: round(1.875)=2 -> 64, round(3.125)=3 -> 96; 6144 in range                     -> [96, 64]
    # 40x90: 96x32 = 3072 < 4096, beta = sqrt(4096/3600) = 1.0667; ceil(96/32)=3 -> 96,
    #        ceil(42.67/32)=2 -> 64                                                          -> [64, 96]
    # 300x200: 192x288 > 16384, beta = sqrt(60000/16384) = 1.914; floor(104.5/32)=3 -> 96,
    #          floor(156.8/32)=4 -> 128                                                      -> [128, 96]
    "qwen3_vl": [[96, 64], [64, 96], [128, 96]],
    # GotOcr2 tiling, 56 px tiles, 1..4 tiles, grid (cols, rows) with aspect closest to W/H:
    # 100/60 = 1.67 -> (2, 1); 40/90 = 0.44 -> (1, 2); 300/200 = 1.5: (1,1), (2,1), (2,2) tie at 0.5,
    # ties go to more tiles while the image area exceeds half the canvas -> (2, 2)
    "internvl3": [[112, 56], [56, 112], [112, 112]],
    # Molmo2 overlapping crops (compute_crop_geometry): crop 56, patch 14, margins 1+1 patches -> window
    # (4 - 2) * 14 = 28 px, margin 28 px; tilings (rows, cols) with rows*cols <= 2: (1,1), (1,2), (2,1),
    # candidate (h, w) = 28*(rows, cols); scale = min(cand_h / (H - 28), cand_w / (W - 28)); all < 1 here,
    # so the largest scale wins (first on ties); canvas = (rows*28 + 28, cols*28 + 28):
    # 100x60: (H, W) - 28 = (32, 72): (1,1) min(.875, .389) = .389, (1,2) min(.875, .778) = .778,
    #         (2,1) min(1.75, .389) = .389 -> (1,2) -> 56 x 84                                 -> [84, 56]
    # 40x90: (62, 12): (1,1) .452, (1,2) .452, (2,1) min(.903, 2.33) = .903 -> (2,1) -> 84 x 56  -> [56, 84]
    # 300x200: (172, 272): (1,1) .103, (1,2) min(.163, .206) = .163, (2,1) .103 -> (1,2)      -> [84, 56]
    "molmo2": [[84, 56], [56, 84], [84, 56]],
}
def _tiny_families() -> list[str]:
    from pointfail.generated.testing.tiny import tiny_families

    return sorted(tiny_families())


FAMILIES = _tiny_families()
"""Every family whose backend builds a tiny checkpoint (from the registry: a new backend with
``build_tiny`` is tested here without editing this file)."""


def _needs(family: str) -> None:
    if family == "molmo2":
        from pointfail.running.backends.hf import torchvision_available

        if not torchvision_available():
            pytest.skip("Molmo2's image processor needs torchvision, which is not installed here")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from pointfail.generated.testing import tiny

    cache: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in cache:
            cache[family] = tiny.build(family, tmp_path_factory.mktemp(f"tiny_{family}"))
        return cache[family]

    return get


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("imgs")
    rows = []
    for i, (w, h) in enumerate(SIZES):
        p = d / f"img{i}.png"
        Image.new("RGB", (w, h), ((60 * i) % 256, 120, 200)).save(p)
        rows.append({"sample_id": f"s{i}", "image": str(p), "prompt": f"Point to the object number {i}.",
                     "task": "point", "max_new_tokens": 6})
    bad = d / "corrupt.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 truncated jpeg")
    rows.insert(1, {"sample_id": "corrupt", "image": str(bad), "prompt": "Point.", "task": "point",
                    "max_new_tokens": 6})
    return rows


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(canonical_json(r) for r in rows), encoding="utf-8")
    return path


def _read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_checkpoint_through_worker(family, checkpoints, images, tmp_path):
    _needs(family)
    ckpt = checkpoints(family)
    assert (ckpt / "config.json").is_file() and (ckpt / "model.safetensors").is_file()
    assert sum(f.stat().st_size for f in ckpt.iterdir()) < 5_000_000
    backend = importlib.import_module(f"pointfail.running.backends.{family}").load(str(ckpt), "cpu")
    req = _write(tmp_path / "requests.jsonl", images)

    batched = tmp_path / "batched.jsonl"
    s = run_worker(backend, req, batched, batch_size=3)
    got = {r["sample_id"]: r for r in _read(batched)}
    assert sorted(got) == ["corrupt", "s0", "s1", "s2"]
    assert (s.answered, s.errors) == (3, 1)
    assert got["corrupt"]["error"].startswith("cannot read image") and got["corrupt"]["raw_text"] is None
    for i in range(3):
        r = got[f"s{i}"]
        assert r["error"] is None and isinstance(r["raw_text"], str)
        assert 1 <= r["output_tokens"] <= 6
        assert r["prompt_tokens"] > 20  # chat template + prompt + image placeholder tokens
        if family in EXPECTED_INPUT:  # the arithmetic above, per architecture
            assert r["model_input_size"] == EXPECTED_INPUT[family][i]
        else:  # a family added later: at least a recorded size
            assert len(r["model_input_size"]) == 2 and min(r["model_input_size"]) > 0

    # left padding: a sample generates the same tokens alone as inside a padded batch (greedy)
    single = tmp_path / "single.jsonl"
    run_worker(backend, req, single, batch_size=1)
    one = {r["sample_id"]: r for r in _read(single)}
    for i in range(3):
        sid = f"s{i}"
        assert one[sid]["raw_text"] == got[sid]["raw_text"]
        assert one[sid]["prompt_tokens"] == got[sid]["prompt_tokens"]
        assert one[sid]["model_input_size"] == got[sid]["model_input_size"]


def test_molmo2_input_size_is_the_canvas_the_processor_tiled(checkpoints):
    """The recorded Molmo2 model-input size agrees with what the saved processor really did: its
    ``image_grids`` row is [low-res rows, low-res cols, high-res rows, high-res cols] in 2x2-pooled
    patches, and ``image_num_crops`` is tiles + 1 (the low-res view)."""
    _needs("molmo2")
    ckpt = checkpoints("molmo2")
    backend = importlib.import_module("pointfail.running.backends.molmo2").load(str(ckpt), "cpu")
    imgs = [Image.new("RGB", wh, (10, 20, 30)) for wh in SIZES]
    inputs = backend.processor.image_processor(images=imgs, return_tensors="pt")
    # low-res view: 56 px -> 4 patches -> ceil(4 / 2) = 2 pooled rows and cols.
    # canvas [84, 56] (W, H): 56/14 = 4 rows -> 2 pooled, 84/14 = 6 cols -> 3 pooled; 1x2 tiles + 1 = 3 crops.
    # canvas [56, 84]: 6 rows -> 3, 4 cols -> 2; 2x1 tiles + 1 = 3 crops.
    assert inputs["image_grids"].tolist() == [[2, 2, 2, 3], [2, 2, 3, 2], [2, 2, 2, 3]]
    assert inputs["image_num_crops"].tolist() == [3, 3, 3]
    for i, img in enumerate(imgs):
        w, h = backend._input_size(backend.processor, inputs, i, img)
        grid = inputs["image_grids"][i].tolist()
        assert [w, h] == EXPECTED_INPUT["molmo2"][i]
        assert grid[2:] == [-(-(h // 14) // 2), -(-(w // 14) // 2)]


@pytest.mark.slow
def test_killed_worker_resumes_every_sample_exactly_once(checkpoints, tmp_path):
    ckpt = checkpoints("qwen2_5_vl")
    rows = []
    for i in range(8):
        p = tmp_path / f"k{i}.png"
        Image.new("RGB", (60 + 10 * i, 80), (20 * i, 0, 0)).save(p)
        rows.append({"sample_id": f"k{i:02d}", "image": str(p), "prompt": "Point to the red square.",
                     "task": "point", "max_new_tokens": 32})
    req = _write(tmp_path / "requests.jsonl", rows)
    resp = tmp_path / "out" / "responses.jsonl"
    cmd = [sys.executable, "-m", "pointfail.running.worker", "--family", "qwen2_5_vl", "--weights", str(ckpt),
           "--requests", str(req), "--responses", str(resp), "--batch-size", "1", "--device", "cpu"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if resp.exists() and resp.read_bytes().count(b"\n") >= 1:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stderr.close()
    first = resp.read_bytes()
    n_first = first.count(b"\n")
    assert 1 <= n_first < 8, f"the kill came after {n_first} of 8 samples"

    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    ids = [r["sample_id"] for r in _read(resp)]
    assert sorted(ids) == [f"k{i:02d}" for i in range(8)]  # every sample exactly once
    assert resp.read_bytes().startswith(first[: first.rfind(b"\n") + 1])  # earlier answers kept as written
    assert f"resuming: {n_first} of 8 samples already answered" in p.stderr
