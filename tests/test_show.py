"""``pointfail show`` and the ``pointfail generate`` command line (dispatch, verify, errors)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from pointfail import cli
from pointfail.commands import show


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "sheets"
    assert cli.main(["generate", "sheets", "--n", "3", "--seed", "2", "--out", str(out)]) == 0
    return out


def _rows(d):
    return [json.loads(x) for x in (d / "data/test/metadata.jsonl").read_text(encoding="utf-8").splitlines()]


def test_show_draws_target_and_caption(suite, tmp_path):
    row = _rows(suite)[1]
    dest = tmp_path / "one.png"
    assert cli.main(["show", str(suite), "--id", row["id"], "--out", str(dest)]) == 0
    pic = Image.open(dest).convert("RGB")
    assert pic.size == (1024, 768 + show.CAPTION_H)
    # the target centre is tinted green: alpha 90/255 of (0, 200, 0) over the screenshot
    base = Image.open(suite / "data/test" / row["file_name"]).convert("RGB")
    x, y = row["point"]
    r0, g0, b0 = base.getpixel((x, y))
    r1, g1, b1 = pic.getpixel((x, y))
    # unless the reference cross covers the centre pixel, which is dark green
    if (r1, g1, b1) != (0, 120, 0):
        a = 90 / 255
        assert abs(g1 - round(g0 * (1 - a) + 200 * a)) <= 2 and abs(r1 - round(r0 * (1 - a))) <= 2
    # a pixel far from any drawing in the caption strip is white, the caption text is not
    assert pic.getpixel((1020, 768 + show.CAPTION_H - 2)) == (255, 255, 255)
    assert any(pic.getpixel((x, 768 + 10)) != (255, 255, 255) for x in range(6, 200))


def test_show_several_ids_into_a_directory(suite, tmp_path):
    ids = [r["id"] for r in _rows(suite)]
    assert cli.main(["show", str(suite), "--id", ids[0], "--id", ids[2], "--out", str(tmp_path / "d"),
                     "--categories", "all"]) == 0
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == sorted(f"{i}.png" for i in (ids[0], ids[2]))


def test_show_errors_are_explained(suite, tmp_path, capsys):
    assert cli.main(["show", str(suite), "--id", "nope", "--out", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err
    ids = [r["id"] for r in _rows(suite)]
    assert f"unknown id(s) nope in {suite}; its {len(ids)} ids run {ids[0]} .. {ids[-1]}" in err
    number = ids[1].rpartition("_")[2]  # the number alone, as a newcomer types it: 0001 for pfs_0001
    assert cli.main(["show", str(suite), "--id", number, "--out", str(tmp_path / "x.png")]) == 1
    assert f"unknown id(s) {number} in {suite}; did you mean {ids[1]}?" in capsys.readouterr().err
    assert cli.main(["show", str(tmp_path), "--id", "a"]) == 1
    assert "metadata.jsonl not found" in capsys.readouterr().err
    broken = tmp_path / "broken"
    (broken / "data/test").mkdir(parents=True)
    row = dict(_rows(suite)[0])
    (broken / "data/test/metadata.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert cli.main(["show", str(broken), "--id", row["id"], "--out", str(tmp_path / "y.png")]) == 1
    assert "cannot read image" in capsys.readouterr().err


def test_generate_verify_cli(suite, tmp_path, capsys):
    assert cli.main(["generate", "verify", str(suite)]) == 0
    assert "OK" in capsys.readouterr().out
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(suite, copy)
    p = copy / "data/test/metadata.jsonl"
    p.write_text(p.read_text(encoding="utf-8").replace("Click", "Klick"), encoding="utf-8")
    assert cli.main(["generate", "verify", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "differs: data/test/metadata.jsonl" in out


def test_generate_text_cli_and_regenerate(tmp_path, capsys):
    out = tmp_path / "t"
    assert cli.main(["generate", "text", "--n", "2", "--seed", "1", "--out", str(out)]) == 0
    assert cli.main(["generate", "verify", "--regenerate", str(out)]) == 0
    assert "regenerated" in capsys.readouterr().out


def test_generate_dispatches_lazily_and_reports_a_missing_kind(monkeypatch, capsys):
    import sys

    from pointfail.generated import suites

    sys.modules.pop("pointfail.generated.suites.text", None)
    parser = cli.build_parser()
    assert "pointfail.generated.suites.text" not in sys.modules  # building the CLI imports no generator
    monkeypatch.setitem(suites.KINDS, "nosuchkind", "a kind without a module")
    assert cli.main(["generate", "nosuchkind", "--n", "1"]) == 1
    assert "pointfail.generated.suites.nosuchkind" in capsys.readouterr().err
    del parser


def test_generate_requires_out(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "sheets", "--n", "1"])
    assert e.value.code == 2
    assert "--out" in capsys.readouterr().err


def test_generate_with_a_missing_font_fails_clearly(monkeypatch, tmp_path, capsys):
    from pointfail.generated.suites import fonts

    monkeypatch.setattr(fonts, "FONT_DIRS", (str(tmp_path / "nofonts"),))
    monkeypatch.setenv("POINTFAIL_FONT_DIR", "")
    out = tmp_path / "t"
    assert cli.main(["generate", "text", "--n", "1", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "DejaVuSans.ttf" in err and "fonts-dejavu-core" in err and "fonts-liberation" in err
    assert not out.exists()
