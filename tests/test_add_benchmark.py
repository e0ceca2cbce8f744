"""Adding a benchmark is adding one file: a benchmark module in ``pointfail/inputs/benchmarks/``.

The throwaway benchmark below is written into a temporary folder added to the search path of the
``pointfail.inputs.benchmarks`` package (as if the file had been put in
``src/pointfail/inputs/benchmarks/``); no list anywhere is edited. Its one ``BENCHMARK`` declaration
(loader, axes, official rule by name, source pin, stand-in release) then drives everything else: the
command line (``pointfail data sources``, ``pointfail data check``, ``pointfail evaluate``), the study
file's ``loader``, the runner's record building, the official rule and table, and the stand-in hub.
"""

from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

import pytest

import pointfail.inputs.benchmarks as benchmarks_pkg
from pointfail.cli import main
from pointfail.inputs.benchmarks import benchmarks, refresh

NAME = "throwaway-marks"

BENCHMARK_FILE = '''
"""``throwaway-marks``: a test benchmark. Layout: ``DIR/marks.json``, a JSON list of rows ``id``,
``image`` (a file in ``DIR/images/``), ``instruction``, ``box`` ``[x0, y0, x1, y1]`` in pixels, ``kind``;
scored by ScreenSpot-Pro's rule (the point, normalized, compared raw with the box divided by the
image size)."""

import io
import json
from pathlib import Path

from pointfail.inputs.benchmarks import Benchmark, StandIn
from pointfail.inputs.benchmarks._common import Problems, image_ref, read_json
from pointfail.inputs.benchmarks.fetch import Source
from pointfail.records import Sample, Target

NAME = "throwaway-marks"


def load(data_dir, *, limit=None):
    root = Path(data_dir)
    problems = Problems(NAME)
    out = []
    for row in read_json(root / "marks.json", NAME):
        img = image_ref(root / "images" / row["image"], problems=problems)
        if img is None:
            continue
        box = [int(v) for v in row["box"]]
        out.append(Sample(sample_id=row["id"], benchmark=NAME, image=img, instruction=row["instruction"],
                          task="point", target=Target(kind="boxes", boxes=[box],
                                                      eval={"type": "point_in_bbox", "bbox": box}),
                          metadata={"kind": row["kind"]}))
    problems.raise_if_any()
    out.sort(key=lambda s: s.sample_id)
    return out[:limit] if limit is not None else out


def release():
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (100, 50), (200, 200, 200)).save(buf, format="PNG")
    rows = [{"id": "m0", "image": "a.png", "instruction": "click the left mark", "box": [0, 0, 50, 50],
             "kind": "left"},
            {"id": "m1", "image": "a.png", "instruction": "click the right mark", "box": [50, 0, 100, 50],
             "kind": "right"}]
    return {"marks.json": json.dumps(rows).encode(), "images/a.png": buf.getvalue()}


BENCHMARK = Benchmark(
    name=NAME, loader=load, axes=("kind",), rule="screenspot-pro",
    source=Source("acme/throwaway-marks", note="Acme's throwaway marks (marks.json, images/)"),
    standin=StandIn("throwaway-marks", release, "Acme's Throwaway Marks", order=50))
'''


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    d = tmp_path / "benchmarks"
    d.mkdir()
    (d / "throwaway_marks.py").write_text(textwrap.dedent(BENCHMARK_FILE), encoding="utf-8")
    monkeypatch.setattr(benchmarks_pkg, "__path__", [*benchmarks_pkg.__path__, str(d)])
    refresh()
    yield benchmarks()[NAME]
    monkeypatch.undo()
    refresh()


@pytest.fixture
def data(throwaway, tmp_path: Path) -> Path:
    """The throwaway's stand-in release written out: the layout its loader reads."""
    root = tmp_path / "data" / NAME
    for rel, blob in throwaway.standin.writer()().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(blob)
    return root


def test_the_registry_finds_it(throwaway):
    from pointfail.inputs.benchmarks import AXES, BENCHMARKS
    from pointfail.inputs.benchmarks.fetch import SOURCES
    from pointfail.official import benchmark_rule

    assert BENCHMARKS[NAME] is throwaway.loader and AXES[NAME] == ("kind",)
    assert SOURCES[NAME].repo_id == "acme/throwaway-marks"
    assert benchmark_rule(NAME) == "screenspot-pro"
    assert "where2place" in BENCHMARKS  # the shipped ones are all still there


def test_the_cli_lists_and_loads_it(throwaway, data, capsys):
    assert main(["data", "sources"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(NAME))
    assert "acme/throwaway-marks" in line and "(not pinned: pass --revision)" in line
    assert main(["data", "check", NAME, str(data)]) == 0
    assert f"{NAME}: 2 samples (point 2); 0 without an image file" in capsys.readouterr().out


def test_the_study_file_takes_it_as_a_loader(throwaway, tmp_path):
    from pointfail.inputs.study import StudyError, load_study

    toml = tmp_path / "study.toml"
    toml.write_text(f'[study]\nname = "s"\n\n[[benchmarks]]\nname = "marks"\nloader = "{NAME}"\n', encoding="utf-8")
    assert load_study(toml).benchmark("marks").loader == NAME
    toml.write_text(toml.read_text().replace(f'"{NAME}"', '"nosuchloader"'))
    with pytest.raises(StudyError, match=f"unknown loader 'nosuchloader'.*{NAME}"):
        load_study(toml)


def _molmo(x: float, y: float) -> str:
    return f'<point x="{x}" y="{y}" alt="mark">mark</point>'


def test_the_runner_scores_it_by_its_declared_rule(throwaway, data, tmp_path):
    """The runner's record building (records_for) applies the rule the module names: ScreenSpot-Pro's
    label, not the PointerBench ``eval`` rule its ``point_in_bbox`` targets would get by default."""
    from pointfail.families import get_family
    from pointfail.inputs.benchmarks import load
    from pointfail.official import RULES
    from pointfail.running.jobs import JobResponse, ResponseLog
    from pointfail_runner.study import records_for, requests_for

    class Model:
        name, family, max_new_tokens = "m", "molmo", 16

    samples = load(NAME, data)
    prompts, _ = requests_for(get_family("molmo"), Model, samples)
    log = ResponseLog({s.sample_id: JobResponse(sample_id=s.sample_id, raw_text=_molmo(25.0, 50.0)) for s in samples})
    recs = records_for("s", Model, samples, prompts, log, None, data, tmp_path)
    # (25 %, 50 %) of 100 x 50 px is (25, 25): inside m0's left box [0, 0, 50, 50], outside m1's
    assert [(r.sample_id, r.outcome, r.official.rule, r.official.score) for r in recs] == [
        ("m0", "hit", RULES["screenspot-pro"], 1.0), ("m1", "miss", RULES["screenspot-pro"], 0.0)]


def test_cli_evaluate_writes_its_official_table(throwaway, data, tmp_path):
    replies = tmp_path / "m.jsonl"
    replies.write_text("".join(json.dumps({"id": sid, "text": _molmo(x, 50.0)}) + "\n"
                               for sid, x in (("m0", 25.0), ("m1", 60.0))), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--benchmark", NAME, "--data", str(data), "--replies", str(replies), "--family", "molmo",
                 "--out", str(out), "--judge", "none", "--no-report", "--no-view", "--no-progress"]) == 0
    rows = list(csv.DictReader(io.StringIO((out / "tables" / "official.csv").read_text(encoding="utf-8"))))
    mine = [r for r in rows if r["benchmark"] == NAME]
    # both replies fall in their target box: m0 (25, 25) px in [0, 50], m1 (60, 25) px in [50, 100]
    assert [(r["n_official"], r["official_score_pct"], r["rule"].split(" official")[0]) for r in mine] == [
        ("2", "100.0", "screenspot-pro")]


def test_a_rule_that_does_not_exist_is_refused_when_declared():
    from pointfail.inputs.benchmarks import Benchmark

    with pytest.raises(ValueError, match="official rule 'robopoint-v2' is not one of where2place, refspatial"):
        Benchmark(name="x", loader=lambda d, *, limit=None: [], rule="robopoint-v2")


def test_the_stand_in_hub_serves_its_release(throwaway, tmp_path):
    from pointfail.generated.testing.standin import datasets, write_datasets

    assert [d[0] for d in datasets()] == ["point-bench", "where2place", "refspatial", "screenspot-pro",
                                          "pointerbench", NAME]
    repos = write_datasets(tmp_path / "hub")
    entry = next(r for r in repos if r["dir"] == f"datasets/{NAME}")
    assert entry["ids"] == [{"repo_id": "acme/throwaway-marks", "commit": None}]
    folder = tmp_path / "hub" / "datasets" / NAME
    assert "STAND-IN repository (throwaway-marks, served as acme/throwaway-marks)" in (folder / "README.md").read_text()
    assert json.loads((folder / "marks.json").read_text())[1]["id"] == "m1"
