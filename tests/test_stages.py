"""`pointfail.running.stages.run_stages`: the one sequence records -> judge -> aggregate -> report -> browser.

A generated sheets suite evaluated with `--judge none` leaves every miss pending; the stages run again
over that folder with the oracle, and the hooks see each stage in order with its result. The
failure-composition table they write labels every miss the records hold, and an `after` that refuses
the judge's result stops the sequence before the aggregate.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from pointfail.cli import main
from pointfail.records import read_records
from pointfail.running.stages import STAGES, JudgeRun, run_stages


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """A sheets suite and an evaluation folder of Molmo replies (hits and misses), misses unjudged."""
    root = tmp_path_factory.mktemp("stages")
    suite = root / "sheets"
    assert main(["generate", "sheets", "--n", "12", "--seed", "3", "--out", str(suite)]) == 0
    rows = [json.loads(line) for line in (suite / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    lines = []
    for i, r in enumerate(rows):
        graph = json.loads((suite / "data" / "test" / r["scene_graph"]).read_text())
        if i % 2 == 0 and r["answer_type"] == "point":  # the centre of the target box: a hit
            x, y = (r["bbox"][0] + r["bbox"][2]) / 2, (r["bbox"][1] + r["bbox"][3]) / 2
        else:  # outside the image: a miss on nothing (hallucinated)
            x, y = graph["width"] * 1.05, graph["height"] * 0.5
        lines.append(json.dumps({"id": r["id"], "text": f'<point x="{100 * x / graph["width"]:.2f}" '
                                                        f'y="{100 * y / graph["height"]:.2f}">it</point>'}))
    replies = root / "m.jsonl"
    replies.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "out"
    assert main(["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies),
                 "--family", "molmo", "--judge", "none", "--no-report", "--no-view", "--out", str(out)]) == 0
    return suite, out


def _composition(path: Path) -> dict:
    return {r["benchmark"]: r for r in csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))}["sheets"]


def test_the_stages_run_in_order_and_say_what_they_did(evaluated):
    suite, out = evaluated
    path = out / "m" / "sheets.jsonl"
    records = read_records(path)
    counts = Counter(r.outcome for r in records)
    assert counts["miss"] >= 3 and counts["hit"] >= 2
    assert int(_composition(out / "tables" / "failure_composition.csv")["pending"]) == counts["miss"]

    ran, told = [], []

    def around(stage, fn):
        ran.append(stage)
        return fn()

    done = run_stages(out, records=records, records_path=path, judges=[JudgeRun(lambda: "oracle")],
                      data_root=suite, around=around, after=lambda stage, result: told.append((stage, result)))
    assert ran == ["records", "judge", "aggregate"]
    assert all(s in STAGES for s in ran)
    assert [s for s, _ in told] == ["records", "judge", "judges", "aggregate"]
    assert done.records == told[0][1] == len(records)
    assert done.outcomes == dict(sorted(counts.items()))
    role, rep = done.judged[0]
    assert (role, rep.judge, rep.misses, rep.judged) == ("primary", "oracle", counts["miss"], counts["miss"])
    assert told[1][1] == (role, rep) and told[2][1] == done.judged
    # every miss now labeled (all hallucinated: off the image), the tables as written on disk
    comp = _composition(out / "tables" / "failure_composition.csv")
    assert int(comp["labeled"]) == int(comp["hallucinated"]) == counts["miss"] and int(comp["pending"]) == 0
    assert done.tables_dir == out / "tables"
    assert done.tables["failure_composition.csv"] == (out / "tables" / "failure_composition.csv").read_bytes()
    assert done.report == [] and done.view is None
    assert all(r.judge is not None and r.judge.label == "hallucinated"
               for r in read_records(path) if r.outcome == "miss")


def test_an_after_that_refuses_stops_the_sequence(evaluated, tmp_path):
    suite, out = evaluated
    ran = []

    class Refused(RuntimeError):
        pass

    def after(stage, result):
        if stage == "judge":
            raise Refused(result[1].judge)

    def around(stage, fn):
        ran.append(stage)
        return fn()

    before = (out / "tables" / "failure_composition.csv").stat().st_mtime_ns
    with pytest.raises(Refused, match="oracle"):
        run_stages(out, judges=[JudgeRun(lambda: "oracle"), JudgeRun(lambda: "oracle", role="other")],
                   data_root=suite, around=around, after=after)
    assert ran == ["judge"]  # neither the second judge's turn came nor the aggregate
    assert (out / "tables" / "failure_composition.csv").stat().st_mtime_ns == before


def test_only_the_stages_asked_for_run(tmp_path):
    done = run_stages(tmp_path, aggregate=False)
    assert (done.records, done.judged, done.tables, done.tables_dir) == (0, [], {}, None)
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="records and records_path"):
        run_stages(tmp_path, records=[], aggregate=False)
