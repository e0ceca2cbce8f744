"""The failure browser's review mode in a real browser (Playwright driving Debian's Chromium from
``browser_fixtures.py``, as ``tests/test_view_browser.py`` does): a person labels five misses with the
keyboard, the judges' verdicts stay hidden until each answer, the labels are exported as JSONL,
re-imported into a fresh browser, and read back by ``pointfail judge --judge human``; from ``file://``
and under the loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from browser_fixtures import needs_chromium
from judge_fixtures import make_study
from pointfail.cli import main

REPO = Path(__file__).resolve().parents[1]
O, I, C, H = "off_by_pixels", "wrong_instance", "wrong_category", "hallucinated"

pytestmark = [pytest.mark.slow, needs_chromium]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from pointfail.outputs.view import build_site

    root = tmp_path_factory.mktemp("review")
    study = make_study(root, n_misses=6)  # oracle labels O, I, C, H, O, I for miss-000..005
    assert main(["judge", str(study), "--no-progress"]) == 0
    res = build_site(study, root / "site")
    return {"root": root, "study": study, "site": res.out_dir}


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1300, "height": 900}, accept_downloads=True)
    errors: list[str] = []
    ctx.on("weberror", lambda e: errors.append(str(e.error)))
    yield ctx
    ctx.close()
    assert errors == [], errors


def ready(pg: Any) -> None:
    pg.wait_for_selector("#app[data-ready='review']")


def open_review(pg: Any, url: str, annotator: str = "alice") -> None:
    pg.goto(url)
    ready(pg)
    pg.fill("#annotator", annotator)
    pg.press("#annotator", "Tab")  # the change event
    ready(pg)
    pg.locator("body").focus()


def test_label_five_misses_export_and_reimport(site, context, tmp_path):
    pg = context.new_page()
    url = (site["site"] / "review.html").as_uri() + "#per=50"
    pg.goto(url)
    ready(pg)
    assert "Type your name" in pg.inner_text("#need-name")
    open_review(pg, url)
    assert pg.inner_text("#progress") == "0 of 6 labeled by alice"
    answers = [("1", O), ("2", I), ("3", C), ("4", H), ("0", "cant_tell")]
    for n, (key, label) in enumerate(answers):
        assert pg.inner_text("#position").startswith(f"Miss {n + 1} of 6 · m · suite · miss-00{n}")
        # the judges' verdicts are hidden until the person has answered
        assert "hidden" in pg.get_attribute("#verdicts", "class") and "oracle" not in pg.inner_text("#verdicts")
        assert pg.inner_text("#instruction") == f"point to item {n}"
        pg.keyboard.press(key)
        ready(pg)
        assert pg.get_attribute(f"#choices button[data-label='{label}']", "aria-pressed") == "true"
        shown = pg.inner_text("#verdicts tr[data-judge='oracle']")
        assert "oracle (primary)" in shown and [O, I, C, H, O][n] in shown
        pg.keyboard.press("ArrowRight")
        ready(pg)
    assert pg.inner_text("#progress") == "5 of 6 labeled by alice"
    # n jumps to the one miss not labeled yet, from anywhere
    pg.keyboard.press("ArrowLeft")
    ready(pg)
    pg.keyboard.press("n")
    ready(pg)
    assert "miss-005" in pg.inner_text("#position")

    with pg.expect_download() as dl:
        pg.click("#export")
    exported = tmp_path / "labels.jsonl"
    dl.value.save_as(exported)
    lines = [json.loads(x) for x in exported.read_text(encoding="utf-8").splitlines()]
    assert lines == [{"model": "m", "benchmark": "suite", "sample_id": f"miss-00{n}", "label": label,
                      "annotator": "alice"} for n, (_, label) in enumerate(answers)]

    # a fresh browser (nothing stored) gets them back by import
    pg.evaluate("localStorage.clear()")
    pg.close()
    pg = context.new_page()
    open_review(pg, url)
    assert pg.inner_text("#progress") == "0 of 6 labeled by alice"
    pg.set_input_files("#import", str(exported))
    pg.wait_for_function("document.getElementById('status') && document.getElementById('status').textContent.startsWith('Imported')")
    assert pg.inner_text("#status") == "Imported 5 labels."
    assert pg.inner_text("#progress") == "5 of 6 labeled by alice"
    assert "miss-005" in pg.inner_text("#position")  # the first miss not labeled yet
    pg.close()

    # the exported file is what `pointfail judge --judge human` reads (in its own process: the
    # Playwright fixture holds this thread's event loop)
    res = subprocess.run([sys.executable, "-m", "pointfail", "judge", str(site["study"]), "--judge", "human",
                          "--labels", str(exported), "--no-progress"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [REPO / "src", *sys.path]))})
    assert res.returncode == 0, res.stderr
    from pointfail.judge.agreement import collect_units, pair_agreement

    p = pair_agreement(collect_units(site["study"]), "oracle", "human:alice")
    assert (p["n"], p["compared"], p["percent_agreement"]) == (4, 5, 1.0)


def test_filters_and_the_stratified_sample(site, context):
    page = (site["site"] / "index.html").read_text(encoding="utf-8")
    assert "<h2>Judge validity</h2>" in page and "no human has labeled these misses" in page
    assert '<a href="review.html">Review</a>' in page
    pg = context.new_page()
    base = (site["site"] / "review.html").as_uri()
    open_review(pg, base + "#per=2", annotator="bob")
    assert pg.inner_text("#progress") == "0 of 2 labeled by bob"
    first = pg.inner_text("#position")
    # the same link picks the same misses in another browser
    pg.goto(base + "#per=2&seed=0")
    ready(pg)
    assert pg.inner_text("#position") == first
    pg.goto(base + "#mode=wrong_instance")
    ready(pg)
    assert pg.inner_text("#progress") == "0 of 2 labeled by bob"  # miss-001 and miss-005
    pg.close()


def test_under_the_loopback_server(site, context):
    from pointfail.outputs.view.serve import make_server

    httpd = make_server(site["site"])
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        host, port = httpd.socket.getsockname()[:2]
        pg = context.new_page()
        open_review(pg, f"http://{host}:{port}/review.html", annotator="carol")
        pg.keyboard.press("2")
        ready(pg)
        assert pg.inner_text("#progress") == "1 of 6 labeled by carol"
        pg.reload()
        ready(pg)
        assert pg.inner_text("#progress") == "1 of 6 labeled by carol"  # kept in local storage
        pg.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
