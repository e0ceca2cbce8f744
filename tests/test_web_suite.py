"""The web suite: real documentation pages rendered by Chromium, targets from the DOM.

Needs Debian's chromium, python3.11-doc and sqlite3-doc and Playwright for Python (installed by
.ci/run); skipped with the reason when they are not there.
"""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pointfail.generated.suites import fonts, manifest as suite_manifest, web

pytestmark = pytest.mark.skipif(
    not Path(web.CHROMIUM).exists() or shutil.which("dpkg-query") is None,
    reason="needs Debian's chromium (apt-get install chromium python3-doc sqlite3-doc)",
)


def _el(i, category, role, text, box, region="main text"):
    return {"id": f"el:{i:04d}", "category": category, "role": role, "text": text, "box": box,
            "full_box": box, "region": region, "reachable": True, "rects": 1}


def test_instruction_plain_region_and_ordinal_qualifiers():
    els = [
        _el(0, "link", "link", "abs()", [30, 100, 70, 115], region="sidebar"),
        _el(1, "link", "link", "abs()", [300, 200, 340, 215]),
        _el(2, "link", "link", "abs()", [300, 400, 340, 415]),
        _el(3, "link", "link", "zip()", [300, 500, 340, 515]),
    ]
    assert web.make_instruction(els[3], els, "point")[0] == "Click the 'zip()' link."
    # three 'abs()' links: the sidebar one is unique by region ...
    assert web.make_instruction(els[0], els, "point")[0] == "Click the 'abs()' link in the sidebar."
    # ... the two in the main text need a reading-order ordinal
    text, spec = web.make_instruction(els[2], els, "point")
    assert text == "Click the second 'abs()' link in the main text."
    assert [e["id"] for e in web.match_elements(spec, els)] == ["el:0002"]


def test_paragraph_box_instruction_matches_by_prefix():
    els = [
        _el(0, "text", "paragraph", "Return True if path refers to an existing path.", [10, 10, 500, 40]),
        _el(1, "text", "paragraph", "Return the base name of pathname path.", [10, 60, 500, 90]),
    ]
    text, spec = web.make_instruction(els[0], els, "box")
    assert text == "Draw a bounding box around the paragraph that begins with 'Return True if path refers to'."
    assert web.match_elements(spec, els) == [els[0]]


def test_code_fragments_are_not_point_targets():
    ok = _el(0, "text", "code", "os.path.join", [10, 10, 90, 25])
    frag = _el(1, "text", "code", "int.", [10, 30, 40, 45])
    assert web._eligible(ok, "point") and not web._eligible(frag, "point")


def test_unknown_page_spec_is_a_clear_error(tmp_path):
    with pytest.raises(web.WebSuiteError, match="not a named page set"):
        web.resolve_pages(str(tmp_path / "nope"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(web.WebSuiteError, match="no HTML pages"):
        web.resolve_pages(str(empty))


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    out = tmp_path_factory.mktemp("web") / "suite"
    web.generate(out, n=300, seed=11)
    return out


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_300_samples_from_20_pages_of_two_packages(suite):
    rows = [json.loads(l) for l in (suite / "data/test/metadata.jsonl").read_text().splitlines()]
    assert len(rows) == 300
    assert len({r["page"] for r in rows}) >= 20
    assert {r["package"] for r in rows} == {"python3.11-doc", "sqlite3-doc"}
    assert {r["answer_type"] for r in rows} == {"point", "bbox"}
    manifest = json.loads((suite / "manifest.json").read_text())
    # the environment lives in the manifest only, never in per-sample rows
    assert manifest["environment"]["browser"].split(".")[0].isdigit()
    assert manifest["environment"]["sqlite3-doc"] == fonts.package_version("sqlite3-doc")
    assert not any(k in r for r in rows for k in ("browser", "package_version"))
    assert manifest["licenses"] == {"python3.11-doc": "PSF-2.0", "sqlite3-doc": "public-domain"}


def test_every_target_is_in_the_viewport_4px_and_unique(suite):
    rows = [json.loads(l) for l in (suite / "data/test/metadata.jsonl").read_text().splitlines()]
    for r in rows:
        graph = json.loads((suite / "data/test" / r["scene_graph"]).read_text())
        x0, y0, x1, y1 = r["bbox"]
        assert 0 <= x0 < x1 <= 1024 and 0 <= y0 < y1 <= 768, r["id"]
        assert x1 - x0 >= 4 and y1 - y0 >= 4, r["id"]
        matched = web.match_elements(r["match"], graph["elements"])
        assert [e["id"] for e in matched] == [r["target_id"]], r["id"]
        target = next(e for e in graph["elements"] if e["id"] == r["target_id"])
        assert target["box"] == r["bbox"]


def test_generation_is_byte_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    web.generate(a, n=40, seed=3)
    web.generate(b, n=40, seed=3)
    ha, hb = _hashes(a), _hashes(b)
    assert ha == hb
    manifest = json.loads((a / "manifest.json").read_text())
    assert {k: suite_manifest.content_sha256(k, (a / k).read_bytes()) for k in ha if k != "manifest.json"} == manifest["files"]
