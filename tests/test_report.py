"""`pointfail report`: failure-profile HTML/PNG, tolerance PNG, gallery, and the reproduce notebook."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from PIL import Image

from pointfail.aggregate import aggregate, load_study
from pointfail.cli import main
from pointfail.records import write_records
from pointfail.outputs.report import NOTEBOOK_PATH, SEGMENTS, gallery_examples, profile_counts, reproduce_notebook
from test_aggregate import rec, toy_study

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    return toy_study(tmp_path / "toy")


def test_profile_counts_add_up(toy: Path) -> None:
    bars = {(m, b): (seg, n) for m, b, seg, n in profile_counts(load_study(toy).counts)}
    seg, n = bars[("alpha", "b2")]
    # alpha/b2: hit 1, wrong_instance 1, unlabeled 1, judge_unavailable 1, no_prediction 2, error 1 (in n)
    assert n == 7 and {k: v for k, v in seg.items() if v} == {
        "hit": 1, "wrong_instance": 1, "unlabeled": 1, "judge_unavailable": 1, "no_prediction": 2, "error": 1,
    }
    for seg, n in bars.values():
        assert sum(seg.values()) == n and set(seg) == set(SEGMENTS)


@pytest.mark.slow
def test_report_files(toy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(toy)]) == 0
    out = toy / "report"
    html = (out / "failure_profile.html").read_text(encoding="utf-8")
    # self-contained and small: no script at all, no external resource, CSS inlined
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert "<style>" in html and len(html) < 200_000
    # a title, counts in every segment's label, and the tables
    assert "<h1>Failure profile: toy</h1>" in html
    assert 'data-model="alpha" data-benchmark="b2" data-segment="wrong_instance" data-count="1"' in html
    # n counts every sample, infrastructure errors included (2 of 7 = 28.6%)
    assert 'title="alpha · b2 · no_prediction: 2 of 7 (28.6%)"' in html
    assert 'data-model="beta" data-benchmark="pooled" data-segment="no_prediction" data-count="8"' in html
    assert "Hit rate (%) with bootstrap 95% interval" in html and "<strong>36.4</strong>" in html  # alpha pooled: 4 hits / 11 samples
    assert "Failure composition" in html
    # no hallucinated miss in the toy study: no such segment (the legend still names every mode)
    assert 'data-segment="hallucinated"' not in html
    for name in ("hit", "off_by_pixels", "wrong_instance", "unlabeled", "judge_unavailable", "pending", "no_prediction"):
        assert f'data-segment="{name}"' in html
        assert f"<code>{name}</code>" in html  # legend: pattern swatch + text label
    assert "list.html" not in html  # standalone: no links to the site
    for png in ("failure_profile.png", "tolerance.png", "gallery.png"):
        with Image.open(out / png) as im:
            assert im.format == "PNG" and im.width > 500 and im.height > 300


def test_gallery_examples_and_images(tmp_path: Path) -> None:
    st = toy_study(tmp_path / "records" / "toy")
    ex = gallery_examples(st)
    picked = {m: {k: (r.benchmark, r.sample_id) if r else None for k, r in slots.items()} for m, slots in ex.items()}
    assert picked == {
        "alpha": {"hit": ("b1", "s1"), "off_by_pixels": ("b1", "s4"), "wrong_instance": ("b2", "t2"),
                  "wrong_category": None, "hallucinated": None},
        "beta": {"hit": ("b1", "s4"), "off_by_pixels": None, "wrong_instance": None,
                 "wrong_category": None, "hallucinated": None},
    }
    # with the image where the record says (relative to the checkout two levels above the study),
    # the panel shows it: a pure-blue image makes the gallery contain blue
    checkout = tmp_path / "checkout"
    (checkout / "images").mkdir(parents=True)
    Image.new("RGB", (100, 100), (0, 0, 255)).save(checkout / "images" / "s1.png")
    img_study = checkout / "records" / "img"
    write_records(img_study / "m" / "b.jsonl", [rec("m", "b", "s1", "hit")])
    from pointfail.outputs.report import gallery_png

    gallery_png(img_study, tmp_path / "g.png", "t")
    with Image.open(tmp_path / "g.png") as im:
        colors = {c for _, c in im.convert("RGB").getcolors(1 << 20)}
    assert (0, 0, 255) in colors
    gallery_png(st, tmp_path / "g2.png", "t")  # no images: panels drawn with a note, no error
    with Image.open(tmp_path / "g2.png") as im:
        assert (0, 0, 255) not in {c for _, c in im.convert("RGB").getcolors(1 << 20)}


def test_gallery_says_which_command_brings_missing_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the suite images, each panel names the command (here: the default study's generated
    suites, so `make data STUDY=default`), instead of a blank box."""
    import shutil

    import matplotlib.axes

    study = tmp_path / "records" / "default"
    shutil.copytree(REPO / "records" / "default", study, ignore=shutil.ignore_patterns("view", "report"))
    texts: list[str] = []
    orig = matplotlib.axes.Axes.text

    def spy(self, x, y, s, *a, **k):  # type: ignore[no-untyped-def]
        texts.append(str(s))
        return orig(self, x, y, s, *a, **k)

    monkeypatch.setattr(matplotlib.axes.Axes, "text", spy)
    from pointfail.outputs.report import gallery_png

    gallery_png(study, tmp_path / "g.png", "t")
    notes = [t.replace("\n", " ") for t in texts if t.startswith("image not available")]
    assert len(notes) == 10  # 2 models x 5 slots, every record's image missing
    assert all("make data STUDY=default" in n for n in notes)
    assert any("pointfail generate sheets --n 150 --seed 20261129 --absent-share 0.1 --out data/default/sheets" in n
               for n in notes)


def test_notebook_is_valid_and_committed() -> None:
    nbformat = pytest.importorskip("nbformat")
    committed = (REPO / NOTEBOOK_PATH).read_text(encoding="utf-8")
    assert committed == json.dumps(reproduce_notebook(), sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    nb = nbformat.reads(committed, as_version=4)
    nbformat.validate(nb)


def test_notebook_reads_a_relative_study_from_the_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """`POINTFAIL_STUDY=records/default jupyter lab notebooks/reproduce.ipynb` from the root: the kernel
    runs in notebooks/, and the study is still the root's records/default."""
    monkeypatch.setenv("POINTFAIL_STUDY", "records/default")
    monkeypatch.chdir(REPO / "notebooks")
    monkeypatch.setitem(sys.modules, "IPython", None)
    setup = next(c for c in reproduce_notebook()["cells"] if c["cell_type"] == "code")
    ns: dict = {}
    exec(compile("".join(setup["source"]), "reproduce.ipynb", "exec"), ns)
    ns["SCRATCH"].cleanup()
    assert ns["STUDY"] == REPO / "records" / "default" and ns["STUDY"].is_dir()


@pytest.mark.slow
def test_notebook_runs_offline(toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import tempfile

    aggregate(toy)
    monkeypatch.setenv("POINTFAIL_STUDY", str(toy))
    monkeypatch.chdir(tmp_path)
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    monkeypatch.setitem(sys.modules, "IPython", None)  # plain Python: no IPython.display
    # the toy study's records are hand-made (no raw reply they follow from): the notebook's verify
    # compares the tables only, as `pointfail verify --tables-only` does for such fixtures
    import importlib

    verify_mod = importlib.import_module("pointfail.aggregate.verify")
    monkeypatch.setattr(verify_mod, "CHECKS", ())
    ns: dict = {}
    for cell in reproduce_notebook()["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), "reproduce.ipynb", "exec"), ns)
    out = capsys.readouterr().out
    assert "MATCH" in out and "MISMATCH" not in out
    assert "alpha: n=11 hit=4 miss=4 no_prediction=2 errors=1 hit_rate=0.363636" in out  # n counts the error
    assert "# Failure composition" in out and "| model " in out  # tables printed as Markdown text
    assert ns["files"]["SHA256SUMS"] == (toy / "tables" / "SHA256SUMS").read_bytes()
    assert [p.name for p in ns["figures"]] == ["failure_profile.html", "failure_profile.png", "tolerance.png", "gallery.png"]
    # no temporary directory is left behind
    assert not ns["OUT"].exists() and list(scratch_root.iterdir()) == []


@pytest.mark.slow
def test_notebook_renders_tables_as_tables(toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In Jupyter (IPython.display present) every table is displayed as Markdown, which Jupyter renders
    as a table, and the figures as images."""
    import tempfile
    import types

    aggregate(toy)
    monkeypatch.setenv("POINTFAIL_STUDY", str(toy))
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    shown: list[tuple[str, str]] = []

    class Obj:
        def __init__(self, data=None, filename=None):
            self.data, self.filename = data, filename

    display_mod = types.ModuleType("IPython.display")
    display_mod.Markdown = type("Markdown", (Obj,), {})
    display_mod.HTML = type("HTML", (Obj,), {})
    display_mod.Image = type("Image", (Obj,), {})
    display_mod.display = lambda o: shown.append((type(o).__name__, o.data or Path(o.filename).name))
    ipython = types.ModuleType("IPython")
    ipython.display = display_mod
    ipython.get_ipython = lambda: None  # matplotlib asks whether it runs in a kernel, and which version
    ipython.version_info, ipython.__version__ = (8, 30, 0), "8.30.0"
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_mod)
    ns: dict = {}
    for cell in reproduce_notebook()["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), "reproduce.ipynb", "exec"), ns)
    kinds = [k for k, _ in shown]
    assert kinds == ["Markdown", "Markdown", "Image", "Image", "Image", "HTML"]
    headline, composition = shown[0][1], shown[1][1]
    assert headline.startswith("# Hit rate (%)") and "\n|" in headline
    assert composition.startswith("# Failure composition") and "| model " in composition
    assert list(scratch_root.iterdir()) == []

def test_report_and_browser_count_the_same_records_and_say_what(tmp_path: Path) -> None:
    """The default study's 800 records: 720 with the referent in the image (the n of every hit rate,
    e.g. 135 of the 150-sample sheets suite per model) and 80 with an absent referent, counted apart.
    The report's page and the browser's study page say the same sentence."""
    import re

    from pointfail.aggregate import build_tables
    from pointfail.outputs.report import failure_profile_html
    from pointfail.outputs.view import build_site

    study = Path(__file__).resolve().parents[1] / "records" / "default"
    loaded = load_study(study)
    report = failure_profile_html(study, loaded.counts, build_tables(loaded))
    site = (build_site(study, tmp_path / "site", with_images=False).out_dir / "index.html").read_text(encoding="utf-8")
    want = ("800 records: 720 with the referent in the image (n, in every hit rate), 80 with an absent referent "
            "(counted apart, absent.md) · 2 models · 3 benchmarks")
    for page in (report, site):
        counts = re.search(r'<p class="counts">(.*?)</p>', page).group(1)
        assert counts.startswith(want), counts
        assert "n = samples whose referent is in the image" in page
        assert '<div class="table-scroll"><table class="data composition">' in page  # wide tables scroll
