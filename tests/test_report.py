"""`pointfail report`: failure-profile HTML/PNG, tolerance PNG, gallery, and the reproduce notebook."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from pointfail.aggregate import aggregate, compute, load_study
from pointfail.cli import main
from pointfail.records import write_records
from pointfail.report import NOTEBOOK_PATH, SEGMENTS, gallery_examples, profile_counts, reproduce_notebook
from test_aggregate import rec, toy_study

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    return toy_study(tmp_path / "toy")


def test_profile_counts_add_up(toy: Path) -> None:
    bars = {(m, b): (seg, n) for m, b, seg, n in profile_counts(compute(load_study(toy)))}
    seg, n = bars[("alpha", "b2")]
    # alpha/b2: hit 1, wrong_instance 1, unlabeled 1, judge_unavailable 1, no_prediction 2 (error excluded)
    assert n == 6 and {k: v for k, v in seg.items() if v} == {
        "hit": 1, "wrong_instance": 1, "unlabeled": 1, "judge_unavailable": 1, "no_prediction": 2,
    }
    for seg, n in bars.values():
        assert sum(seg.values()) == n and set(seg) == set(SEGMENTS)


@pytest.mark.slow
def test_report_files(toy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(toy)]) == 0
    out = toy / "report"
    html = (out / "failure_profile.html").read_text(encoding="utf-8")
    # self-contained: plotly.js inlined, no external script
    assert not re.search(r"<script[^>]+src=", html)
    assert len(html) > 1_000_000
    assert '"itemclick":"toggleothers"' in html
    # hover shows exact counts: customdata carries [count, n, share]
    assert "%{customdata[0]} of n = %{customdata[1]}" in html
    for name in ("hit", "off_by_pixels", "wrong_instance", "unlabeled", "judge_unavailable", "pending", "no_prediction"):
        assert f'"name":"{name}"' in html
    assert '"name":"hallucinated"' not in html  # no hallucinated miss in the toy study: no empty trace
    for png in ("failure_profile.png", "tolerance.png", "gallery.png"):
        with Image.open(out / png) as im:
            assert im.format == "PNG" and im.width > 500 and im.height > 300


def test_gallery_examples_and_images(tmp_path: Path) -> None:
    st = toy_study(tmp_path / "toy")
    ex = gallery_examples(st)
    picked = {k: (r.model, r.benchmark, r.sample_id) if r else None for k, r in ex.items()}
    assert picked == {
        "hit": ("alpha", "b1", "s1"),
        "off_by_pixels": ("alpha", "b1", "s4"),
        "wrong_instance": ("alpha", "b2", "t2"),
        "wrong_category": None,
        "hallucinated": None,
    }
    # with an image on disk the panel shows it: a pure-blue image makes the gallery contain blue
    img_study = tmp_path / "img"
    (img_study / "images").mkdir(parents=True)
    Image.new("RGB", (100, 100), (0, 0, 255)).save(img_study / "images" / "s1.png")
    write_records(img_study / "m" / "b.jsonl", [rec("m", "b", "s1", "hit")])
    from pointfail.report import gallery_png

    gallery_png(img_study, tmp_path / "g.png", "t")
    with Image.open(tmp_path / "g.png") as im:
        colors = {c for _, c in im.convert("RGB").getcolors(1 << 20)}
    assert (0, 0, 255) in colors
    gallery_png(st, tmp_path / "g2.png", "t")  # no images: panels drawn with a note, no error
    with Image.open(tmp_path / "g2.png") as im:
        assert (0, 0, 255) not in {c for _, c in im.convert("RGB").getcolors(1 << 20)}


def test_notebook_is_valid_and_committed() -> None:
    nbformat = pytest.importorskip("nbformat")
    committed = (REPO / NOTEBOOK_PATH).read_text(encoding="utf-8")
    assert committed == json.dumps(reproduce_notebook(), sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    nb = nbformat.reads(committed, as_version=4)
    nbformat.validate(nb)


@pytest.mark.slow
def test_notebook_runs_offline(toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    aggregate(toy)
    monkeypatch.setenv("POINTFAIL_STUDY", str(toy))
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    for cell in reproduce_notebook()["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), "reproduce.ipynb", "exec"), ns)
    out = capsys.readouterr().out
    assert "MATCH" in out and "MISMATCH" not in out
    assert "alpha: n=10 hit=4 miss=4 no_prediction=2 errors=1 hit_rate=0.4" in out
    assert (ns["OUT"] / "tables" / "SHA256SUMS").read_bytes() == (toy / "tables" / "SHA256SUMS").read_bytes()
    assert all(p.is_file() for p in ns["figures"])
