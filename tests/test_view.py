"""`pointfail view` without a browser: the data the pages read, image handling, paths, the server,
the shared annotation geometry and the parsed spans. (The pages themselves: test_view_browser.py.)"""

from __future__ import annotations

import csv
import io
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointfail.cli import main
from pointfail.families import get_family
from pointfail.running.judges.render import (
    GREEN,
    ORANGE,
    RED,
    TINT_ALPHA,
    annotation,
    marker_radius,
    render_annotated,
    tint_layer,
)
from pointfail.records import Target, write_records
from pointfail.outputs.view import build_site
from pointfail.outputs.view.images import missing_image_hint, resolve_inside
from test_aggregate import rec, toy_study

REPO = Path(__file__).resolve().parents[1]


def load_js(path: Path, prefix: str) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith(prefix) and text.endswith(");\n")
    return json.loads(text[len(prefix):-3])


def site_rows(site: Path) -> list[dict]:
    meta = json.loads((site / "data" / "meta.js").read_text(encoding="utf-8")[len("PF.meta="):-2])
    rows = []
    for k in range(meta["chunks"]):
        cols = load_js(site / "data" / f"index-{k:03d}.js", "PF.chunks.push(")
        for i in range(len(cols["m"])):
            rows.append({c: cols[c][i] for c in cols} | {"meta": meta})
    return rows


def segment_of(row: dict) -> str:
    m = row["meta"]
    o = m["outcomes"][row["o"]]
    if o != "miss":
        return o
    return m["modes"][row["md"]] if row["md"] >= 0 else m["judge"][row["j"]]


def test_list_rows_count_exactly_as_the_tables(tmp_path: Path) -> None:
    """Every bar segment's count in the list data equals the failure-composition and outcomes
    tables' count for that model and benchmark (the toy study has every judge state and an error)."""
    from pointfail.aggregate import aggregate

    study = toy_study(tmp_path / "records" / "toy")
    files = aggregate(study)
    res = build_site(study, tmp_path / "site", with_images=False)
    assert res.records == 22
    rows = site_rows(res.out_dir)
    got = Counter((r["meta"]["dicts"]["model"][r["m"]], r["meta"]["dicts"]["benchmark"][r["b"]], segment_of(r)) for r in rows)
    comp = list(csv.DictReader(io.StringIO(files["failure_composition.csv"].decode())))
    outc = list(csv.DictReader(io.StringIO(files["outcomes.csv"].decode())))
    for row in comp:
        if row["benchmark"] == "pooled":
            continue
        for col in ("off_by_pixels", "wrong_instance", "wrong_category", "hallucinated", "unlabeled", "judge_unavailable", "pending"):
            assert got[(row["model"], row["benchmark"], col)] == int(row[col]), (row["model"], row["benchmark"], col)
    for row in outc:
        if row["benchmark"] == "pooled":
            continue
        for col in ("hit", "no_prediction", "error"):
            assert got[(row["model"], row["benchmark"], col)] == int(row[col])
    # the beta/b2 miss has no judgment: pending; alpha/b2 t3 is unlabeled
    assert got[("beta", "b2", "pending")] == 1 and got[("alpha", "b2", "unlabeled")] == 1
    # the study page's chart links each segment to exactly that filter
    html = (res.out_dir / "index.html").read_text(encoding="utf-8")
    assert 'href="list.html#model=alpha&amp;benchmark=b2&amp;outcome=miss&amp;mode=wrong_instance"' in html
    assert 'href="list.html#model=alpha&amp;benchmark=b2&amp;outcome=miss&amp;judge=unlabeled"' in html
    assert 'href="list.html#model=beta&amp;outcome=no_prediction"' in html  # pooled: every benchmark


def test_across_models_and_quartiles(tmp_path: Path) -> None:
    study = toy_study(tmp_path / "records" / "toy")
    rows = {(r["meta"]["dicts"]["model"][r["m"]], r["meta"]["dicts"]["benchmark"][r["b"]], r["id"]): r
            for r in site_rows(build_site(study, tmp_path / "site", with_images=False).out_dir)}
    across = rows[("alpha", "b1", "s1")]["meta"]["across"]
    # b1/s1: alpha hit, beta no_prediction -> outcomes differ; b2/t1: both hit -> agree;
    # b2/t7: alpha error, beta miss (pending) -> outcomes differ
    assert across[rows[("alpha", "b1", "s1")]["x"]] == "outcomes_differ"
    assert across[rows[("beta", "b2", "t1")]["x"]] == "agree"
    # areas 10, 20, 30, 40 on b1: nearest-rank quartiles put one sample in each
    assert [rows[("alpha", "b1", f"s{k}")]["q"] for k in (1, 2, 3, 4)] == [1, 2, 3, 4]
    assert rows[("alpha", "b2", "t1")]["q"] == 0  # no area


def _image_study(root: Path, *, color=(10, 20, 30)) -> Path:
    (root / "images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (100, 100), color).save(root / "images" / "s1.png")
    study = root / "records" / "img"
    write_records(study / "m1" / "b.jsonl", [rec("m1", "b", "s1", "miss", label="wrong_instance", dist=4.0)])
    write_records(study / "m2" / "b.jsonl", [rec("m2", "b", "s1", "hit")])
    return study


def test_images_are_copied_once_and_thumbnails_reused(tmp_path: Path) -> None:
    study = _image_study(tmp_path)
    res = build_site(study, tmp_path / "site")
    assert res.images == {"full": 1, "thumb": 1, "tint": 0, "reused": 0}  # two records, one image
    from pointfail.records import sha256_file

    digest = sha256_file(tmp_path / "images" / "s1.png")
    assert (res.out_dir / "img" / "f" / f"{digest}.png").read_bytes() == (tmp_path / "images" / "s1.png").read_bytes()
    with Image.open(res.out_dir / "img" / "t" / f"{digest}.jpg") as im:
        assert im.size == (100, 100)  # never enlarged
    again = build_site(study, tmp_path / "site")
    assert again.images == {"full": 0, "thumb": 0, "tint": 0, "reused": 1}
    # a changed image is a new file (new hash), and a record whose hash differs is flagged
    Image.new("RGB", (100, 100), (200, 0, 0)).save(tmp_path / "images" / "s1.png")
    write_records(study / "m1" / "b.jsonl", [rec("m1", "b", "s1", "hit", image_sha="0" * 64)])
    third = build_site(study, tmp_path / "site")
    assert third.images["thumb"] == 1
    shard = load_js(third.out_dir / "data" / "detail" / "0000.js", "PF.addDetail(0,")
    note = shard["m1\x01b\x01s1"]["image"]["note"]
    assert "is not the image this record was made from" in note


def test_mask_targets_get_a_tint_layer(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    Image.new("RGB", (100, 100), (0, 0, 0)).save(tmp_path / "images" / "s1.png")
    m = np.zeros((100, 100), np.uint8)
    m[30:40, 50:70] = 255
    Image.fromarray(m).save(tmp_path / "images" / "mask.png")
    r = rec("m", "b", "s1", "miss", label="off_by_pixels", dist=2.0)
    r = r.model_copy(update={"target": Target(kind="mask", mask_path="images/mask.png", sha256="ab" * 32)})
    study = tmp_path / "records" / "mask"
    write_records(study / "m" / "b.jsonl", [r])
    res = build_site(study, tmp_path / "site")
    assert res.images["tint"] == 1
    g = json.loads((res.out_dir / "data" / "annot" / "0000.js").read_text(encoding="utf-8")[len("PF.addAnnot(0,"):-3])[0]
    assert {k: g["t"][k] for k in ("x", "y", "w", "h")} == {"x": 50, "y": 30, "w": 20, "h": 10}
    with Image.open(res.out_dir / g["t"]["layer"]) as im:
        assert im.mode == "RGBA" and im.getpixel((0, 0)) == (*GREEN, round(255 * TINT_ALPHA))


def test_paths_stay_inside_their_roots(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.png").write_bytes(b"x")
    (tmp_path / "secret.png").write_bytes(b"s")
    (root / "data" / "link.png").symlink_to(tmp_path / "secret.png")
    assert resolve_inside("data/a.png", [root]) == (root / "data" / "a.png").resolve()
    assert resolve_inside(str(root / "data" / "a.png"), [root]) is not None  # absolute, inside
    assert resolve_inside("../secret.png", [root]) is None
    assert resolve_inside(str(tmp_path / "secret.png"), [root]) is None  # absolute, outside
    assert resolve_inside("data/link.png", [root]) is None  # a link that leaves the root
    assert resolve_inside("data/missing.png", [root]) is None
    assert resolve_inside("data/a.png\x00", [root]) is None


def test_missing_image_hint_names_the_command() -> None:
    d = REPO / "records" / "default"
    hint = missing_image_hint(d, "sheets")
    assert "`make data STUDY=default`" in hint
    # every option the study gives the suite, --absent-share included (without it the rows differ)
    assert "`pointfail generate sheets --n 150 --seed 20261129 --absent-share 0.1 --out data/default/sheets`" in hint
    assert "pointfail generate" not in missing_image_hint(d, "web")  # only the pinned browser renders it
    vlm = REPO / "records" / "pointfail-vlm"
    assert missing_image_hint(vlm, "point-bench") == "bring them with `pointfail data fetch point-bench --to data/pointfail-vlm/point-bench`"


def test_annotation_geometry_follows_the_judge_rules() -> None:
    size = (1024, 768)
    r = marker_radius(size)
    assert r == 15
    ann = annotation([[0.1, 0.2], [0.5, 0.5], [1.2, -0.1]], [[0.1, 0.1, 0.3, 0.4]], size, primary=[0.1, 0.2])
    prim = ann.markers[-1]
    assert (prim.x, prim.y, prim.radius, prim.width, prim.dot, prim.index, prim.primary, prim.color) == (
        pytest.approx(102.4), pytest.approx(153.6), 15, 3, 3, 0, True, RED)
    others = ann.markers[:-1]
    assert [(m.index, m.radius, m.dot, m.color) for m in others] == [(1, 9, 0, ORANGE), (2, 9, 0, ORANGE)]
    assert (others[1].x, others[1].y, others[1].outside) == (1024.0, 0.0, True)  # clamped to the border
    assert ann.boxes == (pytest.approx((102.4, 76.8, 307.2, 307.2)),) and ann.primary_box == 0
    # a box-only answer: the primary point is the box centre (index -1), drawn with the box
    only_box = annotation([], [[0.0, 0.0, 0.5, 0.5]], size, primary=[0.25, 0.25])
    assert [(m.index, m.primary) for m in only_box.markers] == [(-1, True)]


def test_render_annotated_draws_every_point_and_box(tmp_path: Path) -> None:
    p = tmp_path / "white.png"
    Image.new("RGB", (200, 100), (255, 255, 255)).save(p)
    t = Target(kind="boxes", boxes=[[0, 0, 9, 9]])
    out = np.asarray(render_annotated(p, t, [[0.5, 0.5], [0.2, 0.8]], [[0.7, 0.1, 0.9, 0.3]], primary=[0.5, 0.5]))
    assert out[5, 5].tolist() == [(255 * 55 + c * 45 + 50) // 100 for c in GREEN]  # tinted target
    assert out[50, 100].tolist() == list(RED)  # primary dot
    r2 = max(3, round(0.6 * marker_radius((200, 100))))
    assert out[80, 40 - r2].tolist() == list(ORANGE)  # the second point's ring (left edge)
    assert out[10, 140].tolist() == list(RED) and out[20, 160].tolist() == [255, 255, 255]  # box outline, inside empty
    layer, (x, y) = tint_layer(np.pad(np.ones((3, 4), bool), ((5, 0), (7, 0))))
    assert (x, y, layer.size) == (7, 5, (4, 3))


def test_family_spans_point_at_the_parsed_text() -> None:
    molmo = get_family("molmo")
    text = '<think>maybe <point x="1" y="2"></think> Here: <point x="50.0" y="40.0">mug</point>'
    spans = molmo.spans(text)
    assert [text[a:b] for a, b in spans] == ['<point x="50.0" y="40.0">']
    assert molmo.parse(text, (100, 100)).points == [[0.5, 0.4]]
    js = get_family("json_pixels")
    text = 'Sure. {"point": [389.0, 302.5]} and {"point": [1, 2]}'
    assert [text[a:b] for a, b in js.spans(text)] == ['"point": [389.0, 302.5]', '"point": [1, 2]']
    assert js.spans("no numbers") == [] and js.spans("") == [] and js.spans(None) == []
    # full-width digits are read after NFKC normalization, but have no verbatim span to highlight
    assert js.spans('{"point": [３８９, ３０２]}') == []


def test_serve_maps_urls_into_the_site_only(tmp_path: Path) -> None:
    from pointfail.outputs.view.serve import make_server

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("hello", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("secret", encoding="utf-8")
    httpd = make_server(site, 0)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        host, port = httpd.server_address[:2]
        assert host == "127.0.0.1" and port > 0
        with urllib.request.urlopen(f"http://{host}:{port}/index.html", timeout=10) as r:
            assert r.status == 200 and r.read() == b"hello"
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://{host}:{port}/../secret.txt", timeout=10)
        assert e.value.code == 404
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(5)


def test_cli_writes_the_site(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    study = toy_study(tmp_path / "records" / "toy")
    assert main(["view", str(study), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"[view] open {tmp_path / 'out' / 'index.html'}" in out
    assert "records of b1 have no image" in out  # the toy study has no image files
    for name in ("index.html", "list.html", "sample.html", "assets/app.js", "assets/style.css", "data/meta.js", "data/index-000.js"):
        assert (tmp_path / "out" / name).is_file(), name
    assert main(["view", str(tmp_path / "nothing")]) == 1


@pytest.mark.slow
def test_the_no_docker_command_renders_the_committed_suite(tmp_path) -> None:
    """The command the browser and the runner offer for a missing generated suite renders exactly the
    content of the committed manifest (same generation settings, same file digests)."""
    import json
    import shlex

    from pointfail.cli import main
    from pointfail.generated.suites.manifest import compare_manifests, read_manifest

    hint = missing_image_hint(REPO / "records" / "default", "text")
    cmd = hint.split("without Docker `")[1].rstrip("`")
    args = shlex.split(cmd)[1:]
    out = tmp_path / "text"
    args[args.index("--out") + 1] = str(out)
    assert main(args) == 0
    committed = json.loads((REPO / "records" / "default" / "suites" / "text.manifest.json").read_text(encoding="utf-8"))
    assert compare_manifests(committed, read_manifest(out)).content == []
