"""Judge validity statistics with the arithmetic written out, and the judge CLI commands."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge_fixtures import make_study
from pointfail.generated.testing.ollama_fake import FakeOllama
from pointfail.cli import main
from pointfail.judge.agreement import agreement

O, I, C, H = "off_by_pixels", "wrong_instance", "wrong_category", "hallucinated"
REPO = Path(__file__).resolve().parents[1]


def test_hand_computed_kappa_precision_recall():
    # 10 pairs labeled by both + 2 abstentions + 1 unavailable:
    # oracle O: judge O, O, I        oracle I: judge I, I
    # oracle C: judge C, H           oracle H: judge H, H, H ; plus oracle H unlabeled, oracle C unlabeled
    pairs = [
        (O, "labeled", O), (O, "labeled", O), (O, "labeled", I),
        (I, "labeled", I), (I, "labeled", I),
        (C, "labeled", C), (C, "labeled", H),
        (H, "labeled", H), (H, "labeled", H), (H, "labeled", H),
        (H, "unlabeled", None), (C, "unlabeled", None),
        (O, "judge_unavailable", None),
    ]
    a = agreement(pairs)
    assert (a["n"], a["n_labeled"], a["abstentions"], a["unavailable"], a["pending"]) == (13, 10, 2, 1, 0)
    assert a["abstention_rate"] == pytest.approx(2 / 12)
    # p_o = (2 + 2 + 1 + 3) / 10 = 0.8
    # rows: O 3, I 2, C 2, H 3 ; cols: O 2, I 3, C 1, H 4
    # p_e = (3*2 + 2*3 + 2*1 + 3*4) / 100 = 26 / 100 = 0.26 ; kappa = (0.8 - 0.26) / 0.74
    assert a["accuracy"] == pytest.approx(0.8)
    assert a["kappa"] == pytest.approx(0.54 / 0.74)
    assert a["per_label"][O] == {"precision": 1.0, "recall": pytest.approx(2 / 3), "support": 3}
    assert a["per_label"][I] == {"precision": pytest.approx(2 / 3), "recall": 1.0, "support": 2}
    assert a["per_label"][C] == {"precision": 1.0, "recall": 0.5, "support": 2}
    assert a["per_label"][H] == {"precision": 0.75, "recall": 1.0, "support": 3}
    assert a["confusion"][C] == {O: 0, I: 0, C: 1, H: 1, "unlabeled": 1}


def test_degenerate_cases():
    a = agreement([(H, "labeled", H), (H, "labeled", H)])
    assert a["accuracy"] == 1.0 and a["kappa"] is None  # p_e = 1: kappa undefined
    assert a["per_label"][O] == {"precision": None, "recall": None, "support": 0}
    e = agreement([])
    assert e["n"] == 0 and e["kappa"] is None and e["abstention_rate"] is None



def test_reference_without_label_counts_apart_from_the_confusion_matrix():
    # the aggregate's table passes the primary judge's label, None where it gave none:
    # 5 pairs, 3 with no reference label (one labeled, one unlabeled, one unavailable by the judge)
    a = agreement([(None, "labeled", O), (None, "unlabeled", None), (None, "judge_unavailable", None),
                   (O, "labeled", O), (O, "unlabeled", None)])
    assert (a["n"], a["n_labeled"], a["agree"], a["abstentions"], a["unavailable"], a["reference_unlabeled"]) == (
        5, 1, 1, 2, 1, 3)
    assert a["confusion"][O] == {O: 1, I: 0, C: 0, H: 0, "unlabeled": 1}
    assert a["abstention_rate"] == pytest.approx(2 / 3)  # 2 abstentions / (1 labeled + 2 abstentions)

def test_cli_judge_oracle_then_ollama_other_then_agreement(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=4)
    (study / "study.toml").write_text('[study]\nname = "s"\nprimary_judge = "oracle"\n\n[judge]\noracle_tolerance_px = 8\n')
    assert main(["judge", str(study), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "oracle (primary): 1 files, 4 misses" in out
    with FakeOllama(default="hallucinated") as srv:
        rc = main(["judge", str(study), "--judge", "ollama", "--host", srv.url, "--json", "--no-progress"])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["role"] == "other" and rep["judge"] == "ollama:gemma4:31b" and rep["status"] == {"labeled": 4}
    assert main(["judge-agreement", str(study), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["judges"] == ["ollama:gemma4:31b", "oracle"]
    (a,) = rep["pairs"]
    # the oracle labels are O, I, C, H; the judge said H every time: 1 of 4 agree
    # kappa: p_o = 1/4, p_e = (1 * 4) / 16 = 1/4 (the judge's column is all H): kappa = 0
    assert (a["a"], a["b"], a["n"]) == ("ollama:gemma4:31b", "oracle", 4)
    assert a["percent_agreement"] == 0.25 and a["cohen_kappa"] == 0.0
    # the two-rater form ``--between`` gives one pair, judges named by kind where one name matches
    assert main(["judge-agreement", str(study), "--between", "oracle", "ollama", "--json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert (b["a"], b["b"], b["n"], b["cohen_kappa"]) == ("oracle", "ollama:gemma4:31b", 4, 0.0)
    assert b["confusion"][O][H] == 1 and b["per_mode"][H] == {"precision": 0.25, "recall": 1.0, "support_a": 1,
                                                             "support_b": 4}
    assert main(["judge-agreement", str(study)]) == 0
    text = capsys.readouterr().out
    assert "Cohen's kappa: 0.000 [" in text and "| ollama:gemma4:31b \\ oracle" in text
    assert main(["judge-agreement", str(study), "--between", "oracle", "human:nobody"]) == 2
    assert "no judge 'human:nobody' in these records (judges found: ollama:gemma4:31b, oracle)" in capsys.readouterr().err


def test_cli_agreement_with_two_model_judges_and_no_oracle(tmp_path, capsys):
    # the natural-image case of the issue: two model judges, no oracle
    study = make_study(tmp_path, n_misses=4)
    (study / "study.toml").write_text('[study]\nname = "s"\nprimary_judge = "ollama"\n\n[judge]\nlineage = ["gemma"]\n')
    with FakeOllama(default="hallucinated") as srv:
        assert main(["judge", str(study), "--judge", "ollama", "--host", srv.url, "--no-progress"]) == 0
    with FakeOllama(default="hallucinated", model="other:1b") as srv:
        assert main(["judge", str(study), "--judge", "ollama", "--model", "other:1b", "--role", "other", "--host",
                     srv.url, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["judge-agreement", str(study), "--json"]) == 0
    (p,) = json.loads(capsys.readouterr().out)["pairs"]
    assert (p["a"], p["b"], p["n"], p["percent_agreement"]) == ("ollama:gemma4:31b", "ollama:other:1b", 4, 1.0)
    assert p["cohen_kappa"] is None and p["krippendorff_alpha"] is None
    assert "same label (hallucinated)" in p["cohen_kappa_undefined"]
    assert main(["judge-agreement", str(study)]) == 0
    text = capsys.readouterr().out
    assert "Cohen's kappa: undefined: both gave every one of the 4 misses the same label (hallucinated)" in text
    assert "n/a" not in text and "nan" not in text.lower()


def test_cli_agreement_needs_two_judges(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=2)
    assert main(["judge", str(study), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["judge-agreement", str(study)]) == 1
    assert "agreement needs two judges; these records have 1 (oracle)" in capsys.readouterr().err


def test_cli_judge_reports_unavailable_with_exit_3(tmp_path, capsys):
    study = make_study(tmp_path, n_misses=2)
    with FakeOllama(default="hallucinated") as srv:
        url = srv.url
    # server stopped: nothing listens on url any more
    before = {p: p.read_bytes() for p in study.rglob("*") if p.is_file()}
    rc = main(["judge", str(study), "--judge", "ollama", "--host", url, "--transport-retries", "0", "--no-progress"])
    assert rc == 3
    err = capsys.readouterr().err
    assert f"cannot connect to the judge at {url}" in err and len(err.strip().splitlines()) == 1
    # a refused connection stops before anything is read or written
    assert {p: p.read_bytes() for p in study.rglob("*") if p.is_file()} == before


def test_cli_judge_one_subprocess(tmp_path):
    from PIL import Image

    img = tmp_path / "i.png"
    Image.new("RGB", (64, 48), (255, 255, 255)).save(img)
    with FakeOllama(["both wrong_instance and hallucinated", "**wrong_instance**"]) as srv:
        res = subprocess.run(
            [sys.executable, "-m", "pointfail", "judge-one", "--host", srv.url, "--image", str(img),
             "--box", "4", "4", "20", "20", "--point", "51.2", "24", "--instruction", "click the left icon"],
            capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        )
        chats = list(srv.chats)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["label"] == "wrong_instance" and out["status"] == "labeled"
    assert [(a["attempt"], a["verdict"]) for a in out["attempts"]] == [(1, "rejected_two_labels"), (2, "accepted")]
    assert chats[0]["instruction"] == "click the left icon" and chats[0]["images"] == 1


def test_cli_judge_one_bad_image(tmp_path, capsys):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    rc = main(["judge-one", "--host", "http://127.0.0.1:9", "--image", str(bad), "--box", "0", "0", "1", "1",
               "--point", "0.5", "0.5", "--instruction", "x"])
    assert rc == 2 and "cannot read --image" in capsys.readouterr().err
