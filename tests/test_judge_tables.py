"""The aggregate's judge tables: ``judge_agreement`` with kappa and alpha, ``judge_validity``."""

from __future__ import annotations

import csv
import io
import json

from judge_fixtures import make_study
from pointfail.aggregate import aggregate
from pointfail.cli import main
from pointfail.generated.testing.ollama_fake import FakeOllama

O, I, C, H = "off_by_pixels", "wrong_instance", "wrong_category", "hallucinated"


def read_csv(b: bytes):
    return list(csv.DictReader(io.StringIO(b.decode())))


def test_judge_tables_with_a_model_judge_and_a_person(tmp_path):
    study = make_study(tmp_path, n_misses=8)  # oracle labels cycle O, I, C, H
    assert main(["judge", str(study), "--no-progress"]) == 0
    files = aggregate(study)
    (v,) = read_csv(files["judge_validity.csv"])
    assert (v["benchmark"], v["primary_judge"], v["misses"], v["labeled"], v["human"]) == (
        "suite", "oracle", "8", "8", "no human has labeled these misses")
    assert (v["kappa"], v["alpha"], v["agreement_pct"]) == ("undefined",) * 3
    assert "judge_agreement.csv" not in files

    with FakeOllama(default="hallucinated") as srv:
        assert main(["judge", str(study), "--judge", "ollama", "--role", "other", "--host", srv.url, "--no-progress"]) == 0
    labels = tmp_path / "labels.jsonl"
    # alice agrees with the oracle on misses 0-3, says wrong_category for miss 4 (oracle O), can't tell on 5
    mine = [O, I, C, H, C, "cant_tell"]
    labels.write_text("".join(json.dumps({"model": "m", "benchmark": "suite", "sample_id": f"miss-{k:03d}",
                                          "label": lab, "annotator": "alice"}) + "\n" for k, lab in enumerate(mine)))
    assert main(["judge", str(study), "--judge", "human", "--labels", str(labels), "--no-progress"]) == 0
    files = aggregate(study)
    ja = {(r["benchmark"], r["other_judge"]): r for r in read_csv(files["judge_agreement.csv"])}
    o = ja[("suite", "ollama:gemma4:31b")]
    # the model judge said H for all 8: 2 agree (misses 3 and 7); kappa = 0 (p_e = p_o = 1/4);
    # alpha (2 raters): o = M + M^T over 8 pairs, n = 16, n_H = 8 + 2 = 10, others 2 each:
    # expected = 256 - (100 + 3 * 4) = 144, observed = 16 - 4 = 12: alpha = 1 - 15 * 12 / 144 = -0.25
    assert (o["both_labeled"], o["agree"], o["agreement_pct"], o["kappa"], o["alpha"]) == ("8", "2", "25.0", "0.000", "-0.250")
    h = ja[("suite", "human:alice")]
    assert (h["misses"], h["both_labeled"], h["agree"], h["other_unlabeled"]) == ("6", "5", "4", "1")
    (v,) = read_csv(files["judge_validity.csv"])
    # alice vs oracle over 5 misses: O->O, I->I, C->C, H->H, O->C
    # kappa: rows O 2, I 1, C 1, H 1; cols O 1, I 1, C 2, H 1; p_o = 4/5, p_e = (2 + 1 + 2 + 1) / 25 = 6/25
    # kappa = (20/25 - 6/25) / (19/25) = 14/19 = 0.737
    assert (v["human"], v["human_verdicts"], v["both_labeled"], v["agreement_pct"], v["kappa"]) == (
        "human:alice", "6", "5", "80.0", "0.737")
    md = files["judge_validity.md"].decode()
    assert "n/a" not in md and "Which judge the failure composition rests on" in md
