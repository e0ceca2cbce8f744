"""``pointfail judge --repeats K``: every miss judged K times, every attempt stored, the label change
rate per mode."""

from __future__ import annotations

import json

from judge_fixtures import make_study
from pointfail.cli import main
from pointfail.records import read_records
from pointfail.generated.testing.ollama_fake import FakeOllama, instruction_of


def test_repeats_store_every_run_and_report_how_often_the_label_changes(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=4)
    seeds: list[int] = []

    def script(n, body):
        seed = body["options"]["seed"]
        seeds.append(seed)
        # item 1 is wrong_instance on the first run's seeds (0..4), hallucinated on the repeats' seeds
        return "wrong_instance" if instruction_of(body) == "point to item 1" and seed < 5 else "hallucinated"

    with FakeOllama(script) as srv:
        rc = main(["judge", str(study), "--judge", "ollama", "--host", srv.url, "--repeats", "3", "--role", "other",
                   "--temperature", "0.7", "--no-progress", "--json"])
        chats = list(srv.chats)
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["judge"] for r in out["reports"]] == ["ollama:gemma4:31b", "ollama:gemma4:31b@repeat2",
                                                    "ollama:gemma4:31b@repeat3"]
    # one accepted reply per miss and run: seeds 0, 5 and 10 (repeat r starts at seed + (r - 1) * 5)
    assert sorted(seeds) == [0] * 4 + [5] * 4 + [10] * 4 and len(chats) == 12
    c = out["self_consistency"]
    assert (c["misses"], c["changed"]) == (4, 1)
    assert c["per_mode"]["wrong_instance"] == {"misses": 1, "changed": 1, "change_rate": 1.0}
    assert c["per_mode"]["hallucinated"] == {"misses": 3, "changed": 0, "change_rate": 0.0}
    recs = {r.sample_id: r for r in read_records(study / "m" / "suite.jsonl")}
    js = {j.judge: j for j in recs["miss-001"].other_judgments}
    assert [js[n].label for n in sorted(js)] == ["wrong_instance", "hallucinated", "hallucinated"]
    assert js["ollama:gemma4:31b@repeat3"].options["seed"] == 10 and js["ollama:gemma4:31b"].options["temperature"] == 0.7
    assert js["ollama:gemma4:31b@repeat2"].attempts[0].reply == "hallucinated"
    # judge-agreement reads the repeats as self-consistency, not as pairs
    assert main(["judge-agreement", str(study), "--json"]) == 1  # one judge besides its repeats: no pair
    capsys.readouterr()
    assert main(["judge", str(study), "--no-progress"]) == 0  # the oracle as primary
    capsys.readouterr()
    assert main(["judge-agreement", str(study), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [(p["a"], p["b"]) for p in rep["pairs"]] == [("ollama:gemma4:31b", "oracle")]
    assert rep["self_consistency"][0]["changed"] == 1
    assert main(["judge-agreement", str(study)]) == 0
    assert "## self-consistency of ollama:gemma4:31b (3 runs)" in capsys.readouterr().out


def test_repeats_only_for_model_judges(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=1)
    assert main(["judge", str(study), "--repeats", "2"]) == 2
    assert "only for a model judge (oracle is not)" in capsys.readouterr().err
