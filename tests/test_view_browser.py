"""`pointfail view` in a real browser: Playwright driving Debian's Chromium over the default study.

The fixture copies the committed default study into a temporary checkout, generates the study's
sheets suite there from its seed (the images the records were made from; the text and web suites are
left out on purpose, so the pages must say which command brings them), and builds the site. The tests
open it from ``file://`` (and once over the loopback server), click, type and reload as a user would.

Screenshots of the three pages are kept as test artifacts in ``$POINTFAIL_ARTIFACTS/view/`` (default
``work/test-artifacts/view/`` in the checkout): ``study.png``, ``list.png``, ``sample.png``.

Playwright and the browser come from ``browser_fixtures.py`` (the ``browser`` fixture in
``conftest.py``); skipped with the reason when Debian's chromium is not there.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import threading
import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest
from PIL import Image

from browser_fixtures import CHROMIUM, CHROMIUM_ARGS, needs_chromium
from pointfail.records import read_records

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("POINTFAIL_ARTIFACTS", REPO / "work" / "test-artifacts")) / "view"

pytestmark = [pytest.mark.slow, needs_chromium]


@pytest.fixture(scope="module")
def study_site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from pointfail.generated.suites import sheets
    from pointfail.outputs.view import build_site

    root = tmp_path_factory.mktemp("checkout")
    study = root / "records" / "default"
    shutil.copytree(REPO / "records" / "default", study, ignore=shutil.ignore_patterns("view", "report"))
    with open(study / "study.toml", "rb") as f:
        cfg = {b["name"]: b for b in tomllib.load(f)["benchmarks"]}
    sheets.generate(root / "data" / "default" / "sheets", n=cfg["sheets"]["n"], seed=cfg["sheets"]["seed"])
    res = build_site(study, root / "site")
    return {"root": root, "study": study, "site": res.out_dir, "result": res}


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield pg
    ctx.close()
    assert errors == [], errors  # no script error and no failed load on any page


def table_count(study: Path, model: str, benchmark: str, column: str) -> int:
    data = (study / "tables" / "failure_composition.csv").read_text(encoding="utf-8")
    for row in csv.DictReader(io.StringIO(data)):
        if row["model"] == model and row["benchmark"] == benchmark:
            return int(row[column])
    raise AssertionError(f"no table row for {model}/{benchmark}")


def wait_list(pg: Any) -> None:
    pg.wait_for_selector('#app[data-ready="list"]')


def list_keys(pg: Any) -> list[str]:
    """Every row's key across all pages of the current filter (clicking 'next page')."""
    keys: list[str] = []
    while True:
        keys += pg.eval_on_selector_all("#samples tbody tr", "rs => rs.map(r => r.dataset.key)")
        nxt = pg.locator("button", has_text="next page")
        if nxt.is_disabled():
            return keys
        nxt.click()
        wait_list(pg)


def test_segment_click_lists_exactly_those_samples(study_site: dict[str, Any], page: Any) -> None:
    """Click the wrong_instance segment of the center · sheets bar: the list holds exactly that model's
    and benchmark's wrong_instance samples, as many as the committed failure-composition table says."""
    site, study = study_site["site"], study_site["study"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.goto((site / "index.html").as_uri())
    page.screenshot(path=str(ARTIFACTS / "study.png"), full_page=True)
    expected = table_count(study, "center", "sheets", "wrong_instance")
    assert expected == 81
    seg = page.locator('a.seg[data-model="center"][data-benchmark="sheets"][data-segment="wrong_instance"]')
    assert seg.get_attribute("data-count") == str(expected)
    seg.click()
    wait_list(page)
    assert page.url.endswith("list.html#model=center&benchmark=sheets&outcome=miss&mode=wrong_instance")
    assert page.get_attribute("#match-count", "data-count") == str(expected)
    page.screenshot(path=str(ARTIFACTS / "list.png"), full_page=True)
    badges = page.eval_on_selector_all("#samples tbody tr td:nth-child(6) .badge", "bs => bs.map(b => b.dataset.segment)")
    assert badges and set(badges) == {"wrong_instance"}
    keys = list_keys(page)
    want = {f"center\x01sheets\x01{r.sample_id}" for r in read_records(study / "center" / "sheets.jsonl")
            if r.outcome == "miss" and r.failure_mode == "wrong_instance"}
    assert len(keys) == len(set(keys)) == expected and set(keys) == want


def test_sample_page_shows_image_target_point_reply_and_judge(study_site: dict[str, Any], page: Any) -> None:
    """Open a sample from the filtered list with the keyboard: the page shows the image with the
    target tinted and the point marked, the raw reply with the parsed span, the judge's detail."""
    site, study = study_site["site"], study_site["study"]
    page.goto((site / "list.html").as_uri() + "#model=center&benchmark=sheets&outcome=miss&mode=wrong_instance")
    wait_list(page)
    page.focus("#samples tbody tr:first-child")
    page.keyboard.press("ArrowDown")
    second = page.evaluate("document.activeElement.dataset.key")
    page.keyboard.press("Enter")
    page.wait_for_selector(f'#app[data-ready="{second}"]')
    sid = second.split("\x01")[2]
    rec = {r.sample_id: r for r in read_records(study / "center" / "sheets.jsonl")}[sid]
    assert page.inner_text("h1") == sid
    assert page.inner_text("#position") == f"2 of {table_count(study, 'center', 'sheets', 'wrong_instance')} in this filter"
    # the image itself (not a placeholder), full size
    assert page.eval_on_selector("#annotated img", "i => i.complete && i.naturalWidth") == rec.image.width
    # loaded at once; the other models' panels load lazily
    assert page.get_attribute("#annotated img", "loading") == "eager"
    assert page.eval_on_selector_all("#models img", "l => l.map(i => i.loading)") == ["lazy"] * page.locator("#models img").count()
    assert page.locator("#annotated svg path.tint").count() == 1
    assert page.locator("#annotated svg circle.marker.primary").count() == 1
    assert "pixels_original" in page.inner_text("#frame")
    # pixels: the target is tinted green and the primary point is red where the record says
    page.evaluate("window.scrollTo(0, 0)")
    shot = ARTIFACTS / "annotated.png"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("#annotated .annot").screenshot(path=str(shot))
    with Image.open(shot) as im:
        px = im.convert("RGB")
        scale = px.width / rec.image.width
        x, y = rec.parse.points[0]
        r, g, b = px.getpixel((int(x * rec.image.width * scale), int(y * rec.image.height * scale)))
        assert r > 200 and g < 60 and b < 60, (r, g, b)  # the red centre dot of the primary point
        x0, y0, x1, y1 = rec.target.boxes[0]
        r, g, b = px.getpixel((int((x0 + x1) / 2 * scale), int((y0 + y1) / 2 * scale)))
        assert g > r + 40 and g > b + 40, (r, g, b)  # the green tint of the target
    # the raw reply, its parsed span highlighted; the judge's detail; the same sample under both models
    assert page.inner_text("#raw-reply") == rec.response.raw_text
    assert page.inner_text("#raw-reply mark.parsed") == '"point": [512, 384]'
    assert rec.judge is not None and rec.judge.detail and rec.judge.detail in page.inner_text("#judge")
    assert "wrong_instance" in page.inner_text("#judge")
    assert page.locator("#models figure").count() == 2
    page.screenshot(path=str(ARTIFACTS / "sample.png"), full_page=True)


def image_difference(shot: Image.Image, box: tuple[int, int, int, int], source: Path) -> tuple[float, float]:
    """(mean absolute difference per channel, 0-255, of the two averaged over a 64x48 grid of cells;
    share of pixels in the page's grey behind an image) between the screenshot's region ``box`` (left,
    top, right, bottom in CSS pixels of the viewport, device scale 1) and the source image. The grid
    averages away where the browser's scaling puts a one-pixel grid line."""
    import numpy as np

    crop = shot.convert("RGB").crop(box)
    blank = float(np.all(np.asarray(crop) == (0xEC, 0xEF, 0xF1), axis=-1).mean())  # .annot's background, style.css
    with Image.open(source) as im:
        want = np.asarray(im.convert("RGB").resize((64, 48), Image.Resampling.BOX), dtype=np.int16)
    got = np.asarray(crop.resize((64, 48), Image.Resampling.BOX), dtype=np.int16)
    return float(np.abs(got - want).mean()), blank


def test_headless_screenshot_draws_the_sample_image(study_site: dict[str, Any], browser: Any, tmp_path: Path) -> None:
    """Issue #31: a screenshot taken in the first frame after the load event, as ``chromium --headless
    --screenshot`` takes it, shows the sample's image, not the grey box behind it. The main image is
    decoded with the frame that shows it (``decoding="sync"``); with ``decoding="async"`` this machine,
    loaded, drew it blank in 6 of 8 such captures (Playwright's own ``page.screenshot`` waits longer and
    always drew it)."""
    import base64
    import io
    import subprocess

    study = study_site["study"]
    rec = {r.sample_id: r for r in read_records(study / "center" / "sheets.jsonl")}["pfs_0001"]
    source = study_site["root"] / rec.image.path
    url = (study_site["site"] / "sample.html").as_uri() + "#r.model=center&r.benchmark=sheets&r.id=pfs_0001"
    box = None
    for k in range(8):
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            pg = ctx.new_page()
            cdp = ctx.new_cdp_session(pg)
            pg.goto(url, wait_until="load")
            png = base64.b64decode(cdp.send("Page.captureScreenshot", {"format": "png"})["data"])
            assert pg.get_attribute("#annotated img", "decoding") == "sync"
            assert set(pg.eval_on_selector_all("#models img", "l => l.map(i => i.decoding)")) == {"async"}
            r = pg.eval_on_selector("#annotated img", "i => { const b = i.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }")
        finally:
            ctx.close()
        box = (int(r[0]) + 1, int(r[1]) + 1, int(r[2]) - 1, int(r[3]) - 1)
        assert box[2] - box[0] > 600 and box[3] - box[1] > 450, box  # the image is drawn large on this page
        with Image.open(io.BytesIO(png)) as shot:
            diff, blank = image_difference(shot, box, source)
        assert blank < 0.02 and diff < 8, (k, diff, blank)
    # and the command line itself, as documentation screenshots are made
    out = tmp_path / "cli.png"
    run = subprocess.run([CHROMIUM, *CHROMIUM_ARGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1000",
                          f"--screenshot={out}", url], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and out.is_file(), run.stderr[-2000:]
    with Image.open(out) as shot:
        assert shot.size == (1400, 1000)
        diff, blank = image_difference(shot, box, source)
    assert blank < 0.02 and diff < 8, (diff, blank)


def test_filter_state_survives_a_reload(study_site: dict[str, Any], page: Any) -> None:
    site, study = study_site["site"], study_site["study"]
    page.goto((site / "list.html").as_uri())
    wait_list(page)
    assert page.get_attribute("#match-count", "data-count") == "800"
    page.select_option("#f-model", "ocr")
    wait_list(page)
    page.select_option("#f-benchmark", "web")
    wait_list(page)
    page.select_option("#f-mode", "wrong_instance")
    wait_list(page)
    page.select_option("#f-sort", "distance-desc")
    wait_list(page)
    n = table_count(study, "ocr", "web", "wrong_instance")
    assert page.get_attribute("#match-count", "data-count") == str(n) == "4"
    before = page.eval_on_selector_all("#samples tbody tr", "rs => rs.map(r => r.dataset.key)")
    dists = page.eval_on_selector_all("#samples tbody tr td:nth-child(7)", "ts => ts.map(t => parseFloat(t.textContent))")
    assert dists == sorted(dists, reverse=True)
    page.reload()
    wait_list(page)
    assert "mode=wrong_instance" in page.url and "sort=distance-desc" in page.url
    assert page.get_attribute("#match-count", "data-count") == str(n)
    assert page.eval_on_selector("#f-mode", "s => s.value") == "wrong_instance"
    assert page.eval_on_selector("#f-model", "s => s.value") == "ocr"
    assert page.eval_on_selector("#f-sort", "s => s.value") == "distance-desc"
    assert page.eval_on_selector_all("#samples tbody tr", "rs => rs.map(r => r.dataset.key)") == before
    # counts beside the other filters' options follow the filter: 4 wrong_instance among ocr/web misses
    assert page.eval_on_selector("#f-mode option[value=wrong_instance]", "o => o.textContent") == "wrong_instance (4)"
    # the sample page keeps the filter too: previous/next walk the 4 samples, and survive a reload
    page.locator("#samples tbody tr:first-child").click()
    page.wait_for_selector('#app[data-ready*="web"]')
    assert page.inner_text("#position") == "1 of 4 in this filter"
    page.click("#next")
    page.wait_for_selector(f'#app[data-ready="{before[1]}"]')
    page.reload()
    page.wait_for_selector(f'#app[data-ready="{before[1]}"]')
    assert page.inner_text("#position") == "2 of 4 in this filter"
    page.click("#back")
    wait_list(page)
    assert page.get_attribute("#match-count", "data-count") == "4"
    assert page.evaluate("document.activeElement.dataset.key") == before[1]  # focus returns to the row


def test_missing_images_say_which_command_brings_them(study_site: dict[str, Any], page: Any) -> None:
    """The web suite was not generated in the fixture: its pages name `make data STUDY=default`."""
    site = study_site["site"]
    assert study_site["result"].missing_images["web"][0] == 200
    page.goto((site / "index.html").as_uri())
    assert "make data STUDY=default" in page.inner_text("p.note >> nth=0")
    page.goto((site / "sample.html").as_uri() + "#r.model=ocr&r.benchmark=web&r.id=web_0000")
    page.wait_for_selector('#app[data-ready="ocr\x01web\x01web_0000"]')
    note = page.inner_text("#image-note")
    assert "image not available: data/default/web/data/test/0000.png" in note and "make data STUDY=default" in note
    assert page.locator("#annotated .missing").count() == 1
    assert page.locator("#annotated svg circle.marker.primary").count() == 1  # the point is still drawn


def test_served_on_loopback(study_site: dict[str, Any], page: Any) -> None:
    from pointfail.outputs.view.serve import make_server

    httpd = make_server(study_site["site"], 0)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        host, port = httpd.server_address[:2]
        page.goto(f"http://{host}:{port}/list.html#model=center&benchmark=text&outcome=miss&mode=hallucinated")
        wait_list(page)
        assert page.get_attribute("#match-count", "data-count") == str(table_count(study_site["study"], "center", "text", "hallucinated"))
    finally:
        httpd.shutdown()
        httpd.server_close()
        t.join(5)


def test_reply_text_is_never_markup(tmp_path: Path, browser: Any) -> None:
    """A reply and a judge reply holding HTML are shown as text: no element is created from them."""
    from pointfail.records import JudgeAttempt, Judgment, write_records
    from pointfail.outputs.view import build_site
    from test_aggregate import rec

    hostile = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
    r = rec("m", "b", "s1", "miss", label="hallucinated", dist=5.0)
    r = r.model_copy(update={
        "response": r.response.model_copy(update={"raw_text": hostile}),
        "judge": Judgment(judge="ollama:x", status="labeled", label="hallucinated",
                          attempts=[JudgeAttempt(attempt=1, reply=hostile, verdict="accepted", label="hallucinated")]),
    })
    study = tmp_path / "records" / "evil"
    write_records(study / "m" / "b.jsonl", [r])
    res = build_site(study, tmp_path / "site")
    ctx = browser.new_context()
    pg = ctx.new_page()
    pg.goto((res.out_dir / "sample.html").as_uri() + "#r.model=m&r.benchmark=b&r.id=s1")
    pg.wait_for_selector('#app[data-ready="m\x01b\x01s1"]')
    assert pg.inner_text("#raw-reply") == hostile
    assert pg.locator("#right img, #right script").count() == 0
    assert hostile in pg.inner_text("#judge")
    assert pg.title() != "pwned"
    ctx.close()
