"""`pointfail evaluate`: the documented own-outputs path, from a file of raw replies to failure modes.

A generated sheets suite (scene graphs, so the oracle labels every miss) and a replies file in Molmo's
syntax built from the scene graphs: hits, misses of each failure mode, a reply with no coordinates,
an unparseable line, an unknown id and a repeated id. One command; the failure-composition table and
the listed problems are checked against what the file was built to contain.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from pathlib import Path

import pytest

from pointfail.cli import main

TOL = 8.0  # the oracle's default off_by_pixels tolerance, pixels
PLAN = ("hit", "off_by_pixels", "wrong_instance", "wrong_category", "hallucinated", "no_prediction")


def _center(b):
    return ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)


def _dist(p, b):
    return math.hypot(max(b[0] - p[0], 0, p[0] - b[2]), max(b[1] - p[1], 0, p[1] - b[3]))


def _inside(p, b):
    return b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3]


def _kind(e):
    return e.get("role") or e["category"]


def _point_for(want, row, graph):
    """A pixel point that lands as ``want`` for this row, chosen from its scene graph."""
    els = graph["elements"]
    target = next(e for e in els if e["id"] == row["target_id"])
    if want == "hit":
        return _center(row["bbox"])
    if want == "off_by_pixels":  # 4 px right of the target box: outside it, within the tolerance
        return (row["bbox"][2] + 4, _center(row["bbox"])[1])
    if want == "wrong_instance":  # the centre of another element of the same kind, well away
        return next(_center(e["box"]) for e in els if e["id"] != target["id"] and _kind(e) == _kind(target)
                    and _dist(_center(e["box"]), target["box"]) > 3 * TOL)
    if want == "wrong_category":  # an element of another kind, with no element of the target's kind under it
        return next(_center(e["box"]) for e in els if _kind(e) != _kind(target)
                    and _dist(_center(e["box"]), target["box"]) > 3 * TOL
                    and not any(_kind(o) == _kind(target) and _inside(_center(e["box"]), o["box"]) for o in els))
    if want == "hallucinated":  # outside the image: on nothing at all
        return (graph["width"] * 1.05, graph["height"] * 0.5)
    raise AssertionError(want)


def make_replies(suite: Path, path: Path) -> dict:
    """Write a Molmo replies file for ``suite``; returns what it was built to contain."""
    rows = [json.loads(line) for line in (suite / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    lines, expect = [], {"modes": dict.fromkeys(PLAN, 0), "no_reply": [], "ids": {}}
    i = 0
    for r in rows:
        if r["answer_type"] != "point":  # a box task gets no reply: listed, recorded as an error
            expect["no_reply"].append(r["id"])
            continue
        graph = json.loads((suite / "data" / "test" / r["scene_graph"]).read_text())
        want = PLAN[i % len(PLAN)]
        i += 1
        if want == "no_prediction":
            text = "I cannot see that element on the screen."
        else:
            x, y = _point_for(want, r, graph)
            text = f'<point x="{100 * x / graph["width"]:.2f}" y="{100 * y / graph["height"]:.2f}" alt="it">it</point>'
        expect["modes"][want] += 1
        expect["ids"][r["id"]] = want
        lines.append(json.dumps({"id": r["id"], "text": text}))
    first = next(iter(expect["ids"]))
    # a repeated id: the earlier line (a miss) is listed as a duplicate, the later one counts
    lines.insert(0, json.dumps({"id": first, "text": '<point x="99" y="99">corner</point>'}))
    lines.append("{this line is not JSON")
    lines.append(json.dumps({"id": "pfs_9999", "text": '<point x="1" y="1">it</point>'}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expect["first"] = first
    expect["n_lines"] = len(lines)
    return expect


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    d = tmp_path_factory.mktemp("suite") / "sheets"
    assert main(["generate", "sheets", "--n", "18", "--seed", "2", "--out", str(d)]) == 0
    return d


def _table(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_own_outputs_path_in_one_command(suite, tmp_path, capsys):
    replies = tmp_path / "my-model.jsonl"
    expect = make_replies(suite, replies)
    assert all(expect["modes"][m] >= 2 for m in PLAN)  # every mode at least twice
    out = tmp_path / "results"
    rc = main(["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies),
               "--family", "Molmo", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text

    # the failure-composition table: exactly the misses the file was built to contain, each labeled
    comp = {r["benchmark"]: r for r in _table(out / "tables" / "failure_composition.csv")}["sheets"]
    modes = ("off_by_pixels", "wrong_instance", "wrong_category", "hallucinated")
    n_miss = sum(expect["modes"][m] for m in modes)
    assert comp["model"] == "my-model"
    assert int(comp["miss"]) == int(comp["labeled"]) == n_miss
    assert {m: int(comp[m]) for m in modes} == {m: expect["modes"][m] for m in modes}
    assert int(comp["pending"]) == int(comp["unlabeled"]) == 0
    outcomes = {r["benchmark"]: r for r in _table(out / "tables" / "outcomes.csv")}["sheets"]
    assert int(outcomes["hit"]) == expect["modes"]["hit"]
    assert int(outcomes["no_prediction"]) == expect["modes"]["no_prediction"]
    assert int(outcomes["error"]) == len(expect["no_reply"])  # samples the file has no reply for
    # printed: the headline first (hit rate with its interval and the counts), then the failure profile
    # (count and share in one cell), then the files
    head = {r["benchmark"]: r for r in _table(out / "tables" / "headline.csv")}["sheets"]
    lines = text.splitlines()
    assert all(len(line) <= 160 for line in lines), max(lines, key=len)
    start = lines.index("hit rate")
    row = lines[start + 3].split()  # title, header, rule, the one row (one benchmark: no pooled row)
    assert row[:4] == ["my-model", "sheets", head["hit_rate_pct"], f"[{head['ci95_low_pct']},"]
    n_err = len(expect["no_reply"])
    assert row[5:] == [head["hit"], str(n_miss), str(expect["modes"]["no_prediction"]),
                       *([str(n_err), "INCOMPLETE"] if n_err else []), head["n"]]
    prof = lines[lines.index("failure profile") + 3].split()
    cells = [f"{comp[m]} ({comp[m + '_pct']}%)" for m in modes]
    assert " ".join(prof) == f"my-model sheets {n_miss} {n_miss} " + " ".join(cells)
    assert lines.index("failure profile") > start and "# Failure composition" not in text  # notes stay in tables/
    assert f"records:  {out / 'my-model' / 'sheets.jsonl'}" in lines
    assert f"browser:  {out / 'view' / 'index.html'}" in lines

    # every line that was not used as given is counted and listed, in the output and in evaluation.json
    result = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    listed = [(p["where"], p["kind"], p["sample_id"]) for p in result["problems"]]
    n = expect["n_lines"]
    assert listed[:3] == [("line 1", "duplicate_id", expect["first"]), (f"line {n - 1}", "unparseable", None),
                          (f"line {n}", "unknown_id", "pfs_9999")]
    assert listed[3:] == [("-", "no_reply_for_sample", sid) for sid in expect["no_reply"]]
    assert result["replies"]["unparseable"] == 1 and result["replies"]["unknown_id"] == 1
    assert result["replies"]["duplicate_id"] == 1 and result["replies"]["entries"] == n
    assert f"line {n - 1}: unparseable: not JSON" in text
    assert f"line {n} id 'pfs_9999': unknown_id: no sample with this id in the benchmark" in text
    assert f"line 1 id '{expect['first']}': duplicate_id" in text

    # each record is the reply as written, parsed in Molmo's frame, labeled by the oracle
    recs = [json.loads(line) for line in (out / "my-model" / "sheets.jsonl").read_text().splitlines()]
    by = {r["sample_id"]: r for r in recs}
    for sid, want in expect["ids"].items():
        r = by[sid]
        assert r["family"] == "molmo" and r["parse"]["frame"] == "percent_100"
        if want in modes:
            assert r["outcome"] == "miss" and r["judge"]["judge"] == "oracle" and r["judge"]["label"] == want, sid
        else:
            assert r["outcome"] == want, sid
    for sid in expect["no_reply"]:
        assert by[sid]["outcome"] == "error" and "no reply" in by[sid]["error"]

    # the report and the failure browser come from the same command
    assert (out / "report" / "failure_profile.html").is_file() and (out / "report" / "gallery.png").is_file()
    assert "Scope of my-model on sheets: all 18 samples" in (out / "view" / "index.html").read_text(encoding="utf-8")
    assert "Scope of my-model on sheets" in (out / "report" / "failure_profile.html").read_text(encoding="utf-8")

    # rerun: nothing changed, nothing is judged again
    before = (out / "my-model" / "sheets.jsonl").read_bytes()
    assert main(["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies),
                 "--family", "molmo", "--out", str(out), "--no-report", "--no-view"]) == 0
    again = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    assert again["kept"] == len(recs) and again["judge_report"]["judged"] == 0
    assert (out / "my-model" / "sheets.jsonl").read_bytes() == before


def test_samples_without_a_reply_make_the_headline_incomplete(suite, tmp_path, capsys):
    """Two samples without a reply are error records: the headline says INCOMPLETE with their count."""
    replies = tmp_path / "m.jsonl"
    make_replies(suite, replies)
    lines = replies.read_text().splitlines()
    keep = [ln for ln in lines if not ln.startswith("{this")][:-3]  # the last two real replies dropped (and pfs_9999)
    replies.write_text("\n".join(keep) + "\n")
    out = tmp_path / "r"
    assert main(["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies),
                 "--family", "molmo", "--out", str(out), "--no-report", "--no-view"]) == 0
    text = capsys.readouterr().out.splitlines()
    head = _table(out / "tables" / "outcomes.csv")[0]
    assert int(head["error"]) >= 2
    header = text[text.index("hit rate") + 1].split()
    row = text[text.index("hit rate") + 3].split()
    assert header[-3:] == ["no_prediction", "error", "n"]
    assert row[-3:] == [head["error"], "INCOMPLETE", head["n"]]
    assert any(t.startswith("INCOMPLETE: samples that ended in an infrastructure error") for t in text)


def test_a_changed_reply_is_rescored_and_judged_alone(suite, tmp_path, capsys):
    replies = tmp_path / "m.jsonl"
    expect = make_replies(suite, replies)
    out = tmp_path / "r"
    args = ["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies), "--family", "molmo",
            "--out", str(out), "--no-report", "--no-view", "--only-predicted"]
    assert main(args) == 0
    hit_id = next(sid for sid, w in expect["ids"].items() if w == "hit" and sid != expect["first"])
    lines = replies.read_text().splitlines()
    lines = [json.dumps({"id": hit_id, "text": '<point x="105" y="50">off screen</point>'}) if f'"{hit_id}"' in ln
             else ln for ln in lines]
    replies.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(args) == 0
    res = json.loads((out / "evaluation.json").read_text())
    assert res["kept"] == res["records"] - 1
    assert res["judge_report"]["judged"] == 1 and res["judge_report"]["labels"] == {"hallucinated": 1}
    # the judge's line reads the same in the progress and in the summary (it once swapped the counts' order)
    d = res["judge_report"]
    line = f"judge oracle: {d['misses']} misses, {d['misses'] - 1} already judged, 1 judged now"
    assert d["already"] == d["misses"] - 1 > 0
    out_lines = capsys.readouterr().out.splitlines()
    assert out_lines.count(line) == 1 and out_lines.count(f"[evaluate] {line}") == 1, out_lines


def test_only_predicted_says_so_in_every_table(suite, tmp_path):
    replies = tmp_path / "few.jsonl"
    expect = make_replies(suite, replies)
    out = tmp_path / "few"
    assert main(["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies),
                 "--family", "molmo", "--out", str(out), "--only-predicted", "--no-report", "--no-view"]) == 0
    n = len(expect["ids"])
    outcomes = {r["benchmark"]: r for r in _table(out / "tables" / "outcomes.csv")}["sheets"]
    assert int(outcomes["n"]) == n and int(outcomes["error"]) == 0
    note = (f"Scope of few on sheets: only the {n} samples with a reply in few.jsonl were scored (--only-predicted); "
            "the benchmark has 18.")
    tables = sorted((out / "tables").glob("*.md"))
    assert len(tables) >= 5
    for md in tables:
        assert note in md.read_text(encoding="utf-8"), md.name
    summary = json.loads((out / "tables" / "summary.json").read_text())
    assert note in summary["notes"]
    # a second model evaluated into the same folder: each table states both scopes
    other = tmp_path / "all.jsonl"
    other.write_text(replies.read_text())
    assert main(["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(other),
                 "--family", "molmo", "--out", str(out), "--no-report", "--no-view"]) == 0
    both = (out / "tables" / "failure_composition.md").read_text(encoding="utf-8")
    assert note in both and "Scope of all on sheets: all 18 samples of the benchmark" in both


def test_coordinates_need_a_declared_frame(suite, tmp_path, capsys):
    rows = [json.loads(line) for line in (suite / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    pts = [r for r in rows if r["answer_type"] == "point"][:4]
    # PointerBench's own keys, pixels of the 1024x768 screenshot
    objs = [{"id": pts[0]["id"], "point": pts[0]["point"]},
            {"id": pts[1]["id"], "coordinate": pts[1]["point"]},
            {"id": pts[2]["id"], "x": pts[2]["point"][0], "y": pts[2]["point"][1]},
            {"id": pts[3]["id"], "pred": [0, 0]}]
    replies = tmp_path / "coords.jsonl"
    replies.write_text("".join(json.dumps(o) + "\n" for o in objs))
    out = tmp_path / "c"
    base = ["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies), "--out", str(out),
            "--only-predicted", "--no-report", "--no-view"]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "4 replies in coords.jsonl are coordinates" in err and "--frame pixels" in err and "never guessed" in err
    assert not out.exists()  # nothing written
    assert main(base + ["--frame", "pixels"]) == 0
    recs = {json.loads(l)["sample_id"]: json.loads(l) for l in (out / "coords" / "sheets.jsonl").read_text().splitlines()}
    assert [recs[p["id"]]["outcome"] for p in pts] == ["hit", "hit", "hit", "miss"]
    assert recs[pts[1]["id"]]["response"]["raw_text"] == json.dumps({"point": [float(v) for v in pts[1]["point"]]})
    assert {r["family"] for r in recs.values()} == {"json_pixels"}
    # the same points as fractions of the image, declared as such
    frac = [{"id": p["id"], "point": [p["point"][0] / 1024, p["point"][1] / 768]} for p in pts[:3]]
    replies.write_text("".join(json.dumps(o) + "\n" for o in frac))
    shutil.rmtree(out)
    assert main(base + ["--frame", "unit"]) == 0
    recs = [json.loads(l) for l in (out / "coords" / "sheets.jsonl").read_text().splitlines()]
    assert [r["outcome"] for r in recs] == ["hit"] * 3 and {r["family"] for r in recs} == {"json_unit"}


def test_inputs_that_cannot_be_used_write_nothing(suite, tmp_path, capsys):
    replies = tmp_path / "q.jsonl"
    rows = [json.loads(line) for line in (suite / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    replies.write_text(json.dumps({"id": rows[0]["id"], "text": '{"point_2d": [500, 300]}'}) + "\n")
    out = tmp_path / "q"
    base = ["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies), "--out", str(out),
            "--only-predicted", "--no-report", "--no-view"]
    assert main(base) == 2
    assert "are text" in capsys.readouterr().err and not out.exists()
    assert main(base + ["--family", "gpt-9"]) == 2
    assert "--family: unknown family 'gpt-9'" in capsys.readouterr().err and not out.exists()
    # Qwen2.5-VL answers in pixels of the resized input: the size is recorded per reply or declared
    assert main(base + ["--family", "qwen2.5-vl"]) == 2
    err = capsys.readouterr().err
    assert "model_input_size" in err and "--model-input-size family" in err and "1036x756" in err
    assert not out.exists()
    assert main(base + ["--family", "qwen2.5-vl", "--model-input-size", "family"]) == 0
    rec = json.loads((out / "q" / "sheets.jsonl").read_text().splitlines()[0])
    assert rec["response"]["model_input_size"] == [1036, 756] and rec["parse"]["frame"] == "pixels_resized"
    assert "published smart_resize setting" in (out / "tables" / "headline.md").read_text()
    assert main(base[:6] + [str(tmp_path / "none.jsonl")] + base[7:] + ["--family", "molmo"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_pointerbench_without_scene_graphs_leaves_misses_pending(pointerbench_dir, tmp_path, capsys):
    rows = [json.loads(line) for line in
            (pointerbench_dir / "pointerbench-text" / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    pts = [r for r in rows if r["answer_type"] == "point"][:3]
    replies = tmp_path / "api.jsonl"
    replies.write_text("".join(json.dumps({"id": r["id"], "text": json.dumps({"point": p})}) + "\n"
                               for r, p in zip(pts, (pts[0]["point"], [0, 0], pts[2]["point"]))))
    out = tmp_path / "pb"
    rc = main(["evaluate", "--benchmark", "pointerbench-text", "--data", str(pointerbench_dir), "--replies",
               str(replies), "--family", "json_pixels", "--out", str(out), "--only-predicted", "--no-report"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "misses are not labeled (pending): the benchmark has no scene graphs" in text and "--judge ollama" in text
    # the failure profile is one line, not a grid of zeros and n/a
    assert "failure profile: none of the 1 misses has a failure mode (pending 1)" in text.splitlines()
    assert "off_by_pixels" not in text
    comp = {r["benchmark"]: r for r in _table(out / "tables" / "failure_composition.csv")}["pointerbench-text"]
    assert comp["miss"] == "1" and comp["pending"] == "1" and comp["labeled"] == "0"
    assert (out / "view" / "index.html").is_file()


def test_pointerbench_box_predictions_in_its_own_formats(pointerbench_dir, tmp_path, capsys):
    """PointerBench's box keys (bbox, box, x0..y1) with --frame pixels, scored by the box rule."""
    rows = [json.loads(line) for line in
            (pointerbench_dir / "pointerbench-text" / "data" / "test" / "metadata.jsonl").read_text().splitlines()]
    boxes = [r for r in rows if r["answer_type"] == "bbox"][:3]
    x0, y0, x1, y1 = boxes[2]["bbox"]
    objs = [{"id": boxes[0]["id"], "bbox": boxes[0]["bbox"]},
            {"id": boxes[1]["id"], "x0": boxes[1]["bbox"][0], "y0": boxes[1]["bbox"][1],
             "x1": boxes[1]["bbox"][2], "y1": boxes[1]["bbox"][3]},
            {"id": boxes[2]["id"], "box": [x0, y0, x0 + (x1 - x0) // 2, y1]}]  # half the target: clipped
    replies = tmp_path / "boxes.jsonl"
    replies.write_text("".join(json.dumps(o) + "\n" for o in objs))
    out = tmp_path / "pbb"
    assert main(["evaluate", "--benchmark", "pointerbench-text", "--data", str(pointerbench_dir), "--replies",
                 str(replies), "--frame", "pixels", "--out", str(out), "--only-predicted", "--no-report",
                 "--no-view"]) == 0
    box = {r["benchmark"]: r for r in _table(out / "tables" / "box_outcomes.csv")}["pointerbench-text"]
    assert (box["hit"], box["clipped"], box["malformed"]) == ("2", "1", "0")
    recs = [json.loads(line) for line in (out / "boxes" / "pointerbench-text.jsonl").read_text().splitlines()]
    assert {r["family"] for r in recs} == {"json_pixels"} and all(r["task"] == "box" for r in recs)


@pytest.mark.parametrize("judge", ["ollama", "openai"])
def test_model_judges_label_the_misses(suite, tmp_path, capsys, judge):
    """--judge ollama and --judge openai: the same command, a model judge (scripted loopback servers)
    labels every miss; the records keep each raw judge reply."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    replies = tmp_path / "m.jsonl"
    expect = make_replies(suite, replies)
    n_miss = sum(v for k, v in expect["modes"].items() if k not in ("hit", "no_prediction"))
    out = tmp_path / judge
    base = ["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies), "--family", "molmo",
            "--out", str(out), "--no-report", "--no-view", "--judge", judge, "--no-schema"]
    if judge == "ollama":
        from pointfail.generated.testing.ollama_fake import FakeOllama

        with FakeOllama(default="wrong_instance") as srv:
            rc = main(base + ["--host", srv.url, "--judge-model", "gemma4:31b"])
    else:
        from pointfail.generated.testing.openai_fake import FakeOpenAI

        with FakeOpenAI(default_reply="wrong_instance", model="judge-x") as srv:
            rc = main(base + ["--base-url", srv.url, "--judge-model", "judge-x"])
    text = capsys.readouterr().out
    assert rc == 0, text
    comp = {r["benchmark"]: r for r in _table(out / "tables" / "failure_composition.csv")}["sheets"]
    assert int(comp["miss"]) == int(comp["labeled"]) == int(comp["wrong_instance"]) == n_miss
    recs = [json.loads(line) for line in (out / "m" / "sheets.jsonl").read_text().splitlines()]
    judged = [r["judge"] for r in recs if r["outcome"] == "miss"]
    assert len(judged) == n_miss and all(j["attempts"][0]["reply"] == "wrong_instance" for j in judged)
    assert {j["judge"].split(":")[0] for j in judged} == {judge}
