"""Every subcommand's ``--help`` speaks to researchers: plain text, one example that parses, defaults
shown; family names in any spelling; output piped into ``head`` ends quietly."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pointfail.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]

REST = [
    (re.compile(r"``"), "reST literal ``...``"),
    (re.compile(r":(?:func|mod|class|meth|data|attr|ref|doc):"), "reST role"),
    (re.compile(r"::\s*$", re.M), "reST literal block '::'"),
    (re.compile(r"^\s*\.\. \w+::", re.M), "reST directive"),
    (re.compile(r"^={3,}\s+={3,}", re.M), "reST table"),
]


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(prefix + (name,))
                out.extend(_commands(sub, prefix + (name,)))
    return out


COMMANDS = [()] + _commands(build_parser())  # () is `pointfail --help` itself


def _help(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    return capsys.readouterr().out


def test_the_commands_are_found():
    names = {c[0] for c in COMMANDS if c}
    assert {"evaluate", "score", "score-predictions", "families", "judge", "judge-one", "report", "view",
            "aggregate", "verify", "generate", "data", "show", "judge-agreement"} <= names
    assert ("generate", "sheets") in COMMANDS and ("data", "fetch") in COMMANDS


@pytest.mark.parametrize("cmd", COMMANDS, ids=[" ".join(c) or "pointfail" for c in COMMANDS])
def test_help_is_plain_text_with_an_example_that_parses(capsys, cmd):
    text = _help(capsys, [*cmd, "--help"])
    for pattern, what in REST:
        m = pattern.search(text)
        assert m is None, f"{' '.join(cmd)} --help shows {what}: {text[max(0, m.start() - 60):m.end() + 60]!r}"
    assert "pointfail." not in text.replace("pointfail.", "", text.count("'pointfail[")), text  # no module paths
    usage, _, rest = text.partition("\n\n")
    description = rest.split("\n\n")[0]
    assert description.strip() and not description.startswith(("positional arguments", "options")), \
        f"{' '.join(cmd)} has no description"
    m = re.search(r"^examples?:\n((?:  .+\n?)+)", text, re.M)
    assert m, f"{' '.join(cmd)} --help has no example"
    for line in m.group(1).splitlines():
        argv = shlex.split(line.strip())
        assert argv[0] == "pointfail", line
        # the example is a valid command line for this very parser (parsing only; nothing runs)
        parsed = build_parser().parse_args(argv[1:])
        assert getattr(parsed, "func", None) is not None, line


def test_the_command_table_is_what_the_modules_register():
    """``pointfail --help`` lists commands from pointfail.commands.COMMANDS without importing any
    command module; each module must register exactly the commands the table gives it."""
    import importlib
    import pkgutil

    import pointfail.commands as pkg
    from pointfail.commands import COMMANDS

    modules = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))
    assert sorted({mod for mod, _ in COMMANDS.values()}) == modules
    for module in modules:
        top = build_parser_for(importlib.import_module(f"pointfail.commands.{module}"))
        assert top == [name for name, (mod, _) in COMMANDS.items() if mod == module], module


def build_parser_for(module) -> list[str]:
    """The top-level command names ``module.register`` adds, in order."""
    sub = argparse.ArgumentParser().add_subparsers()
    module.register(sub)
    return list(sub.choices)


def test_help_imports_no_command_module():
    code = ("import sys\nfrom pointfail.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('pointfail.commands.') and m != 'pointfail.commands._help'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.strip().splitlines()[-1] == "[]"
    code = code.replace("['--help']", "['verify', '--help']")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.strip().splitlines()[-1] == "['pointfail.commands.aggregate']"


def test_defaults_are_shown(capsys):
    text = _help(capsys, ["judge", "--help"])
    assert re.search(r"--concurrency CONCURRENCY\s+judge requests in flight \(default: 4\)", text)
    assert "(default: None)" not in text and "(default: False)" not in text
    text = _help(capsys, ["score", "--help"])
    assert "(default: point)" in text


def test_judge_help_defaults_are_the_clients():
    """One source: the client and the command line read the same settings module."""
    from pointfail.running.judges import client, settings

    assert client.DEFAULT_OPTIONS is settings.DEFAULT_OPTIONS and client.DEFAULT_MODEL == settings.DEFAULT_MODEL


def test_errors_name_the_flag_the_user_typed(capsys):
    rc = main(["score", "--family", "Qwen2.5-VL", "--image-size", "100", "100", "--box", "1", "1", "5", "5",
               "--text", '{"point_2d": [3, 3]}'])
    err = capsys.readouterr().err
    assert rc == 1 and "--model-input-size" in err and "model_input_size" not in err


def test_flag_error_rewrites_python_names_only():
    from pointfail.commands._help import flag_error

    assert flag_error("pass allow_rescale=True only if ...") == "pass --allow-rescale only if ..."
    assert flag_error("model_input_size (width, height) is required") == "--model-input-size (width, height) is required"
    assert flag_error("the --model-input-size flag") == "the --model-input-size flag"
    assert flag_error("my_model_input_size_x") == "my_model_input_size_x"


@pytest.mark.parametrize("spelling", ["Qwen2.5-VL", "qwen2.5-vl", "QWEN2_5_VL", "qwen2_5_vl",
                                      "Qwen/Qwen2.5-VL-3B-Instruct", "qwen2.5-vl-7b-instruct"])
def test_family_spellings(spelling):
    from pointfail.families import get_family

    assert get_family(spelling).name == "qwen2_5_vl"


def test_family_aliases_are_unique_and_unknown_names_list_the_known():
    from pointfail.families import _aliases, get_family, list_families

    aliases = _aliases()
    assert {aliases[k] for k in aliases} == {f.name for f in list_families()}
    assert get_family("UI-TARS-1.5").name == "ui_tars_1_5" and get_family("UI-TARS").name == "ui_tars"
    with pytest.raises(KeyError, match="known families: center, florence2"):
        get_family("qwen2.5")


def test_judge_one_help_names_only_what_it_takes(capsys):
    with pytest.raises(SystemExit):
        main(["judge-one", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--model JUDGE_MODEL the judge model's Ollama tag (default: gemma4:31b)" in text
    assert "--judge" not in text and "study" not in text


def test_score_model_input_size_family(capsys):
    """--model-input-size family, as evaluate has it: 1024x768 becomes 1036x756 under Qwen2.5-VL's
    smart_resize (factor 28), so [259, 378] in those pixels is (256, 384) in the image, inside the box."""
    argv = ["score", "--family", "qwen2.5-vl", "--image-size", "1024", "768", "--box", "250", "380", "260", "390",
            "--text", '{"point_2d": [259, 378]}']
    assert main(argv) == 1
    assert "or --model-input-size family" in capsys.readouterr().err
    assert main([*argv, "--model-input-size", "family"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "hit" and out["primary"] == [0.25, 0.5]
    assert out["model_input_size"] == [1036, 756] and out["model_input_size_source"] == "family"
    assert main([*argv, "--model-input-size", "1036", "756"]) == 0
    assert json.loads(capsys.readouterr().out)["model_input_size_source"] == "given"
    assert main([*argv, "--model-input-size", "3"]) == 2
    assert "takes W H (two whole numbers) or 'family'" in capsys.readouterr().err
    assert main(["score", "--family", "molmo", "--image-size", "10", "10", "--box", "1", "1", "2", "2",
                 "--text", "x", "--model-input-size", "family"]) == 2
    assert "needs no model-input size" in capsys.readouterr().err


def test_score_accepts_a_spelling(capsys):
    rc = main(["score", "--family", "Molmo", "--image-size", "100", "100", "--box", "40", "40", "60", "60",
               "--text", '<point x="50" y="50">m</point>'])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["family"] == "molmo" and out["outcome"] == "hit"


def test_families_json_has_frame_order_prompt_reply_and_checkpoints(capsys):
    assert main(["families", "--format", "json"]) == 0
    infos = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    g = infos["gemini"]
    assert g["frame"]["axis_order"] == "y, x" and g["frame"]["kind"] == "grid"
    # a quarter across, half way down: Gemini writes y first on a 0-1000 grid
    assert '"point": [500, 250]' in g["example"]["reply"]
    q = infos["qwen2_5_vl"]
    assert q["example"]["model_input_size"] == [1036, 756]  # smart_resize(768, 1024) with factor 28
    assert '"point_2d": [259, 378]' in q["example"]["reply"]  # 0.25 * 1036, 0.5 * 756
    assert "Qwen/Qwen2.5-VL-3B-Instruct" in q["checkpoints"]
    assert infos["molmo"]["example"]["prompt"] == "Point to the Save button"
    # every example reply parses back to the example point in its own family
    from pointfail.families import get_family

    for name, d in infos.items():
        fam = get_family(name)
        ex = d["example"]
        res = fam.parse(ex["reply"], tuple(ex["image_size"]), tuple(ex["model_input_size"] or ()) or None)
        tx, ty = fam.tolerance(tuple(ex["image_size"]), tuple(ex["model_input_size"] or ()) or None)
        assert res.points, name
        assert abs(res.points[0][0] - 0.25) <= tx + 1e-9 and abs(res.points[0][1] - 0.5) <= ty + 1e-9, name


def test_families_table_and_details(capsys):
    assert main(["families"]) == 0
    table = capsys.readouterr().out
    header = table.splitlines()[0]
    for col in ("family", "frame", "axis order", "example reply", "checkpoints"):
        assert col in header
    assert "example prompt" not in header  # the prompt is in the details (NAME), the table fits a terminal
    assert re.search(r"^gemini\s.*y, x", table, re.M)
    assert main(["families", "PaliGemma"]) == 0
    details = capsys.readouterr().out
    assert details.startswith("paligemma\n") and "axis order y, x" in details and "<loc0512><loc0256>" in details
    assert main(["families", "gpt-9"]) == 2
    assert "unknown family 'gpt-9'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["families"], ["families", "--format", "json"], ["--help"], ["score", "--help"]])
def test_output_into_a_closed_pipe_ends_quietly(argv):
    """Like `pointfail families | head -1`, deterministically: the reader is gone before the first write."""
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run([sys.executable, "-m", "pointfail", *argv], stdout=w, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(REPO / "src")}, timeout=60)
    finally:
        os.close(w)
    assert res.stderr == b""
    # --help: where argparse swallows the write error itself (CPython 3.11.7 does, Debian's 3.11.2 does
    # not) the program never sees it and exits 0; elsewhere our handler ends it as for any other output
    expected = 0 if argv[-1] == "--help" and _argparse_swallows_write_errors() else 141
    assert res.returncode == expected


def _argparse_swallows_write_errors() -> bool:
    """Whether this Python's argparse ignores an ``OSError`` from writing help (it prints through
    ``ArgumentParser._print_message``, which some 3.11 releases guard with ``try/except OSError``)."""
    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

    try:
        argparse.ArgumentParser(prog="x").print_help(Closed())
    except BrokenPipeError:
        return False
    return True


def test_head_on_a_real_pipe_is_quiet():
    """`pointfail families --format json | head -n 2`: head exits after two lines, pointfail ends quietly."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    src = subprocess.Popen([sys.executable, "-m", "pointfail", "families", "--format", "json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    head = subprocess.run(["head", "-n", "2"], stdin=src.stdout, capture_output=True, text=True, timeout=60)
    src.stdout.close()
    err = src.stderr.read()
    src.wait(timeout=60)
    assert head.stdout.splitlines() == ["[", "  {"]
    assert err == b"" and src.returncode in (0, 141)


# ----------------------------------------------------------------------------- judge-one


def _shot(tmp_path):
    from PIL import Image

    img = tmp_path / "shot.png"
    Image.new("RGB", (200, 100), (255, 255, 255)).save(img)
    return img


def test_judge_one_point_and_box_are_pixels_or_both_normalized(tmp_path, monkeypatch, capsys):
    """--point and --box are in the same units: pixels of the image, or fractions with --normalized."""
    import pointfail.running.judges.render as render

    seen = []

    def fake_render(image, target, point_norm, **kw):
        seen.append((list(point_norm), target.boxes))
        raise ValueError("stop here")  # judge-one then exits 2 before any request

    monkeypatch.setattr(render, "render_miss", fake_render)
    img = _shot(tmp_path)
    common = ["judge-one", "--image", str(img), "--instruction", "the icon", "--host", "http://127.0.0.1:9"]
    assert main(common + ["--box", "20", "10", "60", "30", "--point", "150", "75"]) == 2
    assert main(common + ["--box", "0.1", "0.1", "0.3", "0.3", "--point", "0.75", "0.75", "--normalized"]) == 2
    assert seen[0] == ([0.75, 0.75], [[20.0, 10.0, 60.0, 30.0]])
    assert seen[1][0] == [0.75, 0.75] and seen[1][1] == [[pytest.approx(20.0), pytest.approx(10.0),
                                                          pytest.approx(60.0), pytest.approx(30.0)]]
    assert "cannot draw the miss" in capsys.readouterr().err


def test_judge_one_refused_connection_fails_at_once(tmp_path, monkeypatch, capsys):
    """A refused connection is found before the judge client exists, so no transport retry waits."""
    from pointfail.commands import judge as judge_cmd

    def no_client(*a, **k):
        raise AssertionError("the judge client must not be made for a refused connection")

    monkeypatch.setattr(judge_cmd, "make_ollama", no_client)
    img = _shot(tmp_path)
    rc = main(["judge-one", "--image", str(img), "--box", "20", "10", "60", "30", "--point", "150", "75",
               "--instruction", "the icon", "--host", "http://127.0.0.1:9"])
    cap = capsys.readouterr()
    assert rc == 3 and cap.out == ""
    assert cap.err.strip() == ("pointfail judge-one: cannot connect to the judge at http://127.0.0.1:9 "
                               "([Errno 111] Connection refused); start Ollama (ollama serve) or pass --host URL")


def test_judge_one_counts_transport_failures(tmp_path, capsys):
    sys.path.insert(0, str(REPO / "tests"))
    from pointfail.generated.testing.ollama_fake import Action, FakeOllama

    img = _shot(tmp_path)
    with FakeOllama([Action(status=503), Action(status=500), "wrong_category"]) as srv:
        rc = main(["judge-one", "--image", str(img), "--box", "20", "10", "60", "30", "--point", "150", "75",
                   "--instruction", "the icon", "--host", srv.url, "--transport-retries", "3"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["label"] == "wrong_category" and out["transport_failures"] == 2
    assert out["point_px"] == [150.0, 75.0] and out["image_size"] == [200, 100]
