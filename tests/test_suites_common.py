"""Shared suite machinery: PNG bytes, random streams, fonts, glyph geometry, rows, manifest checks."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib

import pytest
from PIL import Image, ImageDraw

from pointfail.generated.suites import fonts, rows, scene
from pointfail.generated.suites.errors import FontMissingError, SuiteError
from pointfail.generated.suites.fonts import load_font
from pointfail.generated.suites.manifest import verify_manifest
from pointfail.generated.suites.painter import TextPainter
from pointfail.generated.suites.rows import SampleSpec, build_row
from pointfail.generated.suites.scene import Element, Scene, require_unique
from pointfail.generated.suites.writer import generate_suite, png_bytes


def _chunks(png: bytes) -> list[str]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    out, i = [], 8
    while i < len(png):
        (length,) = struct.unpack(">I", png[i:i + 4])
        out.append(png[i + 4:i + 8].decode("ascii"))
        i += 12 + length
    return out


def test_png_bytes_have_no_ancillary_chunks_and_are_stable():
    im = Image.new("RGB", (64, 32), (10, 20, 30))
    im.info["dpi"] = (72, 72)  # must not leak into the file
    a, b = png_bytes(im), png_bytes(im.copy())
    assert a == b
    chunks = _chunks(a)
    assert chunks[0] == "IHDR" and chunks[-1] == "IEND"
    assert set(chunks) == {"IHDR", "IDAT", "IEND"}
    # IHDR: 64 x 32, bit depth 8, colour type 2 (RGB)
    w, h, depth, ctype = struct.unpack(">IIBB", a[16:26])
    assert (w, h, depth, ctype) == (64, 32, 8, 2)
    assert Image.open(__import__("io").BytesIO(a)).getpixel((5, 5)) == (10, 20, 30)


def test_sample_rng_is_independent_of_hash_seed():
    code = "from pointfail.generated.suites.rows import sample_rng; print(sample_rng('text', 7, 3, 1).random())"
    outs = set()
    for hs in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hs)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1
    assert rows.sample_rng("text", 7, 3, 1).random() != rows.sample_rng("text", 7, 3, 2).random()


def test_missing_font_names_the_debian_package(monkeypatch, tmp_path):
    monkeypatch.setattr(fonts, "FONT_DIRS", (str(tmp_path),))
    monkeypatch.setenv("POINTFAIL_FONT_DIR", "")
    with pytest.raises(FontMissingError) as e:
        fonts.font_path("liberation-serif")
    assert "LiberationSerif-Regular.ttf" in str(e.value) and "fonts-liberation" in str(e.value)
    # every missing font in one message, grouped by package, with one install line
    with pytest.raises(FontMissingError) as e:
        fonts.check_fonts(["liberation-sans", "liberation-sans-bold", "dejavu-sans"])
    assert str(e.value).startswith("fonts missing: DejaVuSans.ttf (Debian package fonts-dejavu-core); "
                                   "LiberationSans-Bold.ttf, LiberationSans-Regular.ttf (Debian package fonts-liberation)")
    assert "install: apt-get install fonts-dejavu-core fonts-liberation, or set POINTFAIL_FONT_DIR" in str(e.value)
    # generation fails before anything is written
    out = tmp_path / "suite"
    with pytest.raises(FontMissingError):
        generate_suite(suite="t", generator="x", id_prefix="t", out_dir=out, n=1, seed=1,
                       make_sample=lambda rng, i: None, font_names=["dejavu-sans", "liberation-serif"],
                       generator_version=1)
    assert not out.exists()


def test_font_dir_override(monkeypatch, tmp_path):
    src = fonts.font_path("dejavu-sans")
    (tmp_path / src.name).write_bytes(src.read_bytes())
    monkeypatch.setenv("POINTFAIL_FONT_DIR", str(tmp_path))
    assert fonts.font_path("dejavu-sans") == tmp_path / src.name


@pytest.mark.parametrize("font_name,size", [("dejavu-sans", 15), ("liberation-serif", 19), ("dejavu-sans-mono", 14)])
def test_painter_boxes_equal_pillows_own_rendering(font_name, size):
    """Each reported glyph box equals the ink of that glyph drawn alone by Pillow's ImageDraw.text at
    the same integer pen position on the baseline (anchor 'ls')."""
    painter = TextPainter()
    s = "Wörter, Ähre: fiß? «Yes» AV."
    canvas = Image.new("RGB", (500, 60), (255, 255, 255))
    chars = painter.draw(canvas, 10, 40, s, font_name, size, (0, 0, 0))
    font = load_font(font_name, size)
    assert [c.ch for c in chars] == list(s)
    for c in chars:
        alone = Image.new("L", (500, 60), 0)
        ImageDraw.Draw(alone).text((c.pen, 40), c.ch, font=font, fill=255, anchor="ls")
        bb = alone.getbbox()
        assert (list(bb) if bb else None) == c.box, c.ch
    # the union of glyph boxes is exactly the ink on the canvas
    ink = Image.eval(canvas.convert("L"), lambda v: 255 if v < 255 else 0).getbbox()
    assert list(ink) == scene.union_box(c.box for c in chars)
    # pens advance monotonically by the font's advance widths
    pens = painter.pens(font_name, size, 10, s)
    assert pens[0] == 10 and pens[-1] == 10 + round(font.getlength(s))
    assert all(a <= b for a, b in zip(pens, pens[1:]))


def test_require_unique():
    assert require_unique(["cell:A1"], "x") == "cell:A1"
    assert require_unique(["cell:A1", "cell:A1"], "x") == "cell:A1"  # same element twice is one element
    with pytest.raises(SuiteError, match="matches 0"):
        require_unique([], "Click the red cell")
    with pytest.raises(SuiteError, match="matches 2"):
        require_unique(["cell:A1", "cell:B2"], "Click the red cell")


def _spec(answer_type="point", box=(146, 324, 231, 330)):
    scene = Scene(Image.new("RGB", (1024, 768)), [Element("hedge:F18", "cell_edge", list(box)), Element("cell:F18", "cell", [146, 305, 231, 327])])
    return SampleSpec(scene, "hedge:F18", "Click the bottom border of F18.", answer_type, {"category": "cell_bottom_edge"})


def test_build_row_point_and_box_rules():
    row = build_row("pfs_0007", "0007", _spec())
    assert row["bbox"] == [146, 324, 231, 330]
    assert row["point"] == [(146 + 231) // 2, (324 + 330) // 2] == [188, 327]
    assert row["eval"] == {"type": "point_in_bbox", "bbox": [146, 324, 231, 330]}
    assert row["file_name"] == "0007.png" and row["scene_graph"] == "scene_graphs/0007.json"
    assert row["image_size"] == [1024, 768] and row["target_id"] == "hedge:F18"
    brow = build_row("pft_0001", "0001", _spec("bbox"))
    assert brow["eval"] == {"type": "iou", "bbox": [146, 324, 231, 330], "min_coverage": 0.9, "min_precision": 0.7}
    with pytest.raises(SuiteError, match="outside"):
        build_row("x", "0000", _spec(box=(1000, 10, 1030, 20)))
    bad = _spec()
    bad.target_id = "cell:Z9"
    with pytest.raises(SuiteError, match="not a scene graph element"):
        build_row("x", "0000", bad)


def _tiny(rng, index):
    im = Image.new("RGB", (1024, 768), (255, 255, 255))
    x = rng.randint(10, 900)
    ImageDraw.Draw(im).rectangle([x, 100, x + 40, 140], fill=(200, 0, 0))
    if rng.random() < 0.3:
        raise SuiteError("not unique this time")  # exercised: deterministic retries
    return SampleSpec(Scene(im, [Element("box:0", "box", [x, 100, x + 41, 141])]), "box:0", "Click the red box.",
                      "point", {"category": "box"})


def test_generate_suite_layout_retries_and_verify(tmp_path):
    kw = dict(suite="tiny", generator="pointfail.suites.sheets", id_prefix="tny", n=5, seed=3, make_sample=_tiny,
              font_names=["dejavu-sans"], generator_version=1)
    m1 = generate_suite(out_dir=tmp_path / "a", **kw)
    m2 = generate_suite(out_dir=tmp_path / "b", **kw)
    assert m1["files"] == m2["files"]
    assert sorted(m1["files"]) == sorted(
        [f"data/test/{i:04d}.png" for i in range(5)] + [f"data/test/scene_graphs/{i:04d}.json" for i in range(5)]
        + ["data/test/metadata.jsonl"])
    assert m1["schema"] == "pointfail.suite_manifest/2"
    assert m1["environment"]["fonts"]["dejavu-sans"]["package"] == "fonts-dejavu-core"
    assert len(m1["environment"]["fonts"]["dejavu-sans"]["sha256"]) == 64
    rows = [json.loads(line) for line in (tmp_path / "a/data/test/metadata.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"tny_{i:04d}" for i in range(5)]
    sg = json.loads((tmp_path / "a/data/test/scene_graphs/0002.json").read_text())
    assert sg["schema"] == "pointfail.scene_graph/1" and sg["image"] == "0002.png"
    assert sg["elements"][0]["box"] == rows[2]["bbox"]
    assert verify_manifest(tmp_path / "a").ok

    # tampering, deletion and extra files are all reported, with the environment judged unchanged
    (tmp_path / "a/data/test/0001.png").write_bytes(b"not a png")
    (tmp_path / "a/data/test/scene_graphs/0003.json").unlink()
    (tmp_path / "a/data/test/stray.txt").write_text("x")
    res = verify_manifest(tmp_path / "a")
    assert not res.ok
    assert res.mismatched == ["data/test/0001.png"]
    assert res.missing == ["data/test/scene_graphs/0003.json"]
    assert res.extra == ["data/test/stray.txt"]
    assert res.environment == []
    assert "changed after generation" in res.explain()

    # a refused overwrite: a non-suite directory
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(SuiteError, match="not a generated suite"):
        generate_suite(out_dir=other, **kw)
    assert (other / "keep.txt").read_text() == "mine"


def test_verify_explains_font_and_pillow_differences(tmp_path):
    kw = dict(suite="tiny", generator="pointfail.suites.sheets", id_prefix="tny", n=1, seed=1, make_sample=_tiny,
              font_names=["dejavu-sans"], generator_version=1)
    generate_suite(out_dir=tmp_path / "s", **kw)
    mpath = tmp_path / "s/manifest.json"
    m = json.loads(mpath.read_text())
    m["environment"]["fonts"]["dejavu-sans"]["sha256"] = "0" * 64
    m["environment"]["fonts"]["dejavu-sans"]["package_version"] = "2.30-1"
    m["environment"]["pillow"] = "9.0.0"
    m["files"]["data/test/0000.png"] = "f" * 64
    mpath.write_text(json.dumps(m))
    res = verify_manifest(tmp_path / "s")
    assert not res.ok and res.mismatched == ["data/test/0000.png"]
    text = res.explain()
    assert "font dejavu-sans (DejaVuSans.ttf): manifest sha256 000000000000" in text
    assert "2.30-1" in text and "pillow: manifest '9.0.0'" in text


def test_verify_without_manifest(tmp_path):
    with pytest.raises(SuiteError, match="manifest.json not found"):
        verify_manifest(tmp_path)


def test_png_crc_is_valid():
    png = png_bytes(Image.new("RGB", (3, 2), (1, 2, 3)))
    i = 8
    while i < len(png):
        (length,) = struct.unpack(">I", png[i:i + 4])
        body = png[i + 4:i + 8 + length]
        (crc,) = struct.unpack(">I", png[i + 8 + length:i + 12 + length])
        assert zlib.crc32(body) == crc
        i += 12 + length


def test_prefix_lengths_equal_getlength_exactly():
    """The linear-time prefix widths equal FreeType's own (26.6 fixed point, so exactly)."""
    from pointfail.generated.suites import corpus

    painter = TextPainter()
    for name, size in (("dejavu-serif", 17), ("liberation-sans", 13), ("liberation-mono", 15)):
        font = load_font(name, size)
        for lang in corpus.LANGUAGES:
            for s in corpus.SENTENCES[lang][:3]:
                assert painter.prefix_lengths(name, size, s) == [font.getlength(s[:i]) for i in range(len(s) + 1)]
                head, tail = s[:11], s[11:]
                assert painter.extend_length(name, size, font.getlength(head), head, tail) == font.getlength(s)
                assert painter.extend_length(name, size, 0.0, "", s) == font.getlength(s)


def test_scene_graph_elements_are_sorted_by_id():
    sg = scene.scene_graph_json("0000.png", [Element("word:0.1", "word", [1, 2, 3, 4], "Grüße"),
                                             Element("caret:0.0", "caret", [0, 2, 2, 4])])
    assert sg["schema"] == scene.SCENE_GRAPH_SCHEMA and (sg["width"], sg["height"]) == (1024, 768)
    assert [e["id"] for e in sg["elements"]] == ["caret:0.0", "word:0.1"]
    assert sg["elements"][1] == {"id": "word:0.1", "category": "word", "box": [1, 2, 3, 4], "text": "Grüße"}


@pytest.mark.slow
def test_suites_are_byte_identical_across_processes_and_hash_seeds(tmp_path):
    """Generation in separate interpreters with different PYTHONHASHSEED gives the same file hashes
    (no dependence on set/dict iteration order or process state)."""
    code = (
        "import json, sys\n"
        "from pointfail.generated.suites import sheets, text\n"
        "out = sys.argv[1]\n"
        "a = sheets.generate(out + '/s', n=2, seed=13)['files']\n"
        "b = text.generate(out + '/t', n=2, seed=13)['files']\n"
        "print(json.dumps([a, b], sort_keys=True))\n"
    )
    outs = []
    for hs in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hs)
        res = subprocess.run([sys.executable, "-c", code, str(tmp_path / hs)], env=env, capture_output=True,
                             text=True, check=True)
        outs.append(json.loads(res.stdout))
    assert outs[0] == outs[1]
    assert len(outs[0][0]) == 5 and len(outs[0][1]) == 5  # 2 PNGs + 2 scene graphs + metadata, each


def test_category_schedule_quotas(pointerbench_dir):
    # 6 * 3/4 = 4.5 and 6 * 1/4 = 1.5: floors 4 + 1, the one left goes to "a" (equal remainders, by name)
    sched = rows.category_schedule({"a": 3, "b": 1}, 6, "s", 1)
    assert sorted(sched) == ["a"] * 5 + ["b"]
    assert sched == rows.category_schedule({"a": 3, "b": 1}, 6, "s", 1)
    assert rows.category_schedule({"a": 1}, 0, "s", 1) == []
    # the sheets weights are PointerBench-Sheets' real category counts (they sum to 500), so a
    # 500-sample schedule reproduces them exactly
    import collections
    import json

    from pointfail.generated.suites import sheets

    weights = {c: w for c, (_, w) in sheets.CATEGORY_WEIGHTS.items()}
    real = collections.Counter(
        json.loads(line)["category"]
        for line in (pointerbench_dir / "pointerbench-sheets/data/test/metadata.jsonl").read_text().splitlines())
    assert dict(collections.Counter(rows.category_schedule(weights, 500, "sheets", 3))) == dict(real)


def test_verify_regenerate_passes_the_recorded_generator_args(tmp_path, monkeypatch):
    # a generator module with extra settings (as the web suite's pages and offsets): verify_manifest
    # reads them back through the module's generator_args and passes them to generate
    import types

    from pointfail.generated.suites import web

    assert web.generator_args({"pages": "/x/pages", "offsets": 2, "n": 5}) == {"pages_spec": "/x/pages",
                                                                              "offsets_per_page": 2}
    assert web.generator_args({}) == {}
    calls = []

    def fake_generate(out, *, n, seed, scale=1):
        calls.append((n, seed, scale))
        x = 40 * scale  # the box's left edge depends on the extra setting
        kw = dict(suite="fake", generator="pointfail.suites.fake", id_prefix="fk", n=n, seed=seed,
                  make_sample=lambda rng, i: _tiny(rng, i) if scale == 1 else _shifted(x),
                  font_names=["dejavu-sans"], generator_version=1)
        m = generate_suite(out_dir=out, **kw)
        m["scale"] = scale
        return m

    def _shifted(x):
        im = Image.new("RGB", (1024, 768), "white")
        ImageDraw.Draw(im).rectangle([x, 100, x + 41, 141], fill="red")
        return SampleSpec(Scene(im, [Element("box:0", "box", [x, 100, x + 41, 141])]), "box:0", "Click the red box.",
                          "point", {"category": "box"})

    fake = types.ModuleType("pointfail.generated.suites.fake")
    fake.generate = fake_generate
    fake.generator_args = lambda m: {"scale": m["scale"]}
    monkeypatch.setitem(sys.modules, "pointfail.generated.suites.fake", fake)
    m = fake_generate(tmp_path / "s", n=1, seed=1, scale=3)
    (tmp_path / "s/manifest.json").write_text(json.dumps(m))
    assert verify_manifest(tmp_path / "s", regenerate=True).ok
    assert calls[-1] == (1, 1, 3)
    del fake.generator_args  # without it the default settings are regenerated, and the image differs
    res = verify_manifest(tmp_path / "s", regenerate=True)
    assert calls[-1] == (1, 1, 1)
    assert res.mismatched == ["data/test/0000.png", "data/test/metadata.jsonl", "data/test/scene_graphs/0000.json"]


def test_content_sha256_hashes_pixels_not_png_encoding(tmp_path):
    import hashlib
    import io

    from pointfail.generated.suites.manifest import content_sha256, file_content_sha256

    im = Image.new("RGB", (4, 2), (10, 20, 30))
    im.putpixel((3, 1), (200, 0, 0))

    def encoded(image, level):
        buf = io.BytesIO()
        image.save(buf, format="PNG", compress_level=level)
        return buf.getvalue()

    fast, small = encoded(im, 1), encoded(im, 9)
    assert fast != small  # other encoder settings, other bytes ...
    assert content_sha256("a.png", fast) == content_sha256("a.png", small)  # ... same pixels, same digest
    # the digest is sha256 over the domain tag, "WxH" and the RGB bytes, as documented
    want = hashlib.sha256(b"pointfail.pixels/1\0" + b"4x2\0" + im.tobytes()).hexdigest()
    assert content_sha256("a.png", fast) == want
    # an RGBA encoding of the same opaque pixels decodes to the same RGB bytes
    assert content_sha256("a.png", encoded(im.convert("RGBA"), 6)) == want
    one_pixel = im.copy()
    one_pixel.putpixel((0, 0), (10, 20, 31))
    assert content_sha256("a.png", encoded(one_pixel, 6)) != want
    # a different size with the same bytes is different content
    assert content_sha256("a.png", encoded(Image.frombytes("RGB", (2, 4), im.tobytes()), 6)) != want
    # other files hash their bytes
    assert content_sha256("metadata.jsonl", b'{"id":1}\n') == hashlib.sha256(b'{"id":1}\n').hexdigest()
    with pytest.raises(SuiteError, match="not a decodable PNG"):
        content_sha256("x.png", b"not a png")
    (tmp_path / "x.png").write_bytes(b"not a png")
    assert file_content_sha256(tmp_path / "x.png") is None


def test_compare_manifests_separates_content_from_environment():
    from pointfail.generated.suites.manifest import compare_manifests

    base = {"schema": "pointfail.suite_manifest/2", "suite": "web", "generator": "pointfail.suites.web", "seed": 1,
            "n": 2, "files": {"data/test/0000.png": "aa" * 32, "data/test/metadata.jsonl": "bb" * 32},
            "environment": {"browser": "156.0.8078.108", "fonts": {"dejavu-sans": {"package_version": "2.37-6"}}}}
    same = json.loads(json.dumps(base))
    assert compare_manifests(base, same).content_matches and compare_manifests(base, same).environment == []
    # a newer browser and font package with identical pixels: drift, not a content difference
    drift = json.loads(json.dumps(base))
    drift["environment"]["browser"] = "156.0.8078.114"
    drift["environment"]["fonts"]["dejavu-sans"]["package_version"] = "2.37-7"
    c = compare_manifests(base, drift)
    assert c.content_matches
    assert c.drift_lines() == ["browser: '156.0.8078.108' -> '156.0.8078.114'",
                               "fonts.dejavu-sans.package_version: '2.37-6' -> '2.37-7'"]
    # one changed image, one extra file and another seed are content differences, named one by one
    changed = json.loads(json.dumps(drift))
    changed["files"]["data/test/0000.png"] = "cc" * 32
    changed["files"]["data/test/0001.png"] = "dd" * 32
    changed["seed"] = 2
    c = compare_manifests(base, changed)
    assert not c.content_matches
    assert c.content == ["setting seed: committed 1, regenerated 2",
                         f"data/test/0000.png: committed {'aa' * 6}, regenerated {'cc' * 6}",
                         "data/test/0001.png: regenerated, not in the committed manifest"]
    assert len(c.environment) == 2
