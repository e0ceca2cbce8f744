"""Every ``pointfail-runner`` command's ``--help`` says what it does, what it reads and writes, gives
an example that parses with the runner's own parser, and lists its exit codes; every option has help.
``pointfail-runner init`` writes a study the real study parser accepts."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from pointfail_runner.cli import build_parser, main
from pointfail_runner.cli_help import COMMANDS

REPO = Path(__file__).resolve().parents[1]


def _subparsers(ap: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in ap._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    raise AssertionError("no subcommands")


SUBS = _subparsers(build_parser())


def test_every_command_has_its_help_and_no_help_is_orphaned():
    assert set(SUBS) == set(COMMANDS)
    assert {"engine", "build", "init", "run", "reproduce", "plan", "submit", "merge", "shard"} <= set(SUBS)


@pytest.mark.parametrize("name", sorted(SUBS))
def test_help_describes_the_command_with_an_example_and_exit_codes(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and not re.search(r":(?:func|mod|class):", text), text  # plain text, no reST
    usage, _, rest = text.partition("\n\n")
    description = " ".join(rest.split("\n\n")[0].split())
    assert not description.startswith(("options", "positional")), f"{name} has no description"
    assert len(description) >= 120 and description.count(".") >= 2, description  # sentences, not a label
    m = re.search(r"^example:\n  (.+)\n", text, re.M)
    assert m, f"{name} --help has no example"
    argv = shlex.split(m.group(1))
    assert argv[:2] == ["pointfail-runner", name], argv
    assert build_parser().parse_args(argv[1:]).cmd == name  # the example parses as written
    codes = re.search(r"^exit codes:\n((?:  \d+  .+\n?)+)", text, re.M)
    assert codes, f"{name} --help lists no exit codes"
    listed = [int(line.split()[0]) for line in codes.group(1).splitlines()]
    assert listed == sorted(set(listed)) and listed[0] == 0 and 2 in listed, listed


@pytest.mark.parametrize("name", sorted(SUBS))
def test_every_option_has_help(name):
    for a in SUBS[name]._actions:
        assert (a.help or "").strip(), f"pointfail-runner {name}: {a.option_strings or a.dest} has no help"


def test_exit_codes_are_the_ones_the_commands_return():
    """The codes the help names beyond 0/1/2 are the ones cli.py returns for that command."""
    exits = {n: {c for c, _ in h.exits} for n, h in COMMANDS.items()}
    assert 5 in exits["run"] and {3, 4} <= exits["reproduce"] and 3 in exits["data"]
    assert 3 in exits["status"] and 3 in exits["merge"] and 3 not in exits["plan"]
    src = (REPO / "runner/src/pointfail_runner/cli.py").read_text()
    assert "return 5" in src and "return 3 if merged.incomplete else 0" in src


def test_top_level_help_is_plain_and_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "``" not in text and "pointfail-runner init --name my-study" in text
    for name, h in COMMANDS.items():
        assert re.search(rf"^    {re.escape(name)}\s", text, re.M) and h.summary.split()[0] in text, name


def test_init_writes_a_study_the_parser_accepts(tmp_path, capsys):
    from pointfail.inputs.study import ServerModel, load_study
    from pointfail.generated.suites import generate_command

    out = tmp_path / "records" / "my-study" / "study.toml"
    assert main(["--repo", str(REPO), "init", "--name", "my-study", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    study = load_study(out)
    assert study.name == "my-study" and study.study.primary_judge == "oracle"
    (b,) = study.benchmarks
    assert (b.loader, b.generator, b.n, b.seed) == ("suite", "sheets", 20, 1)
    (m,) = study.models
    assert isinstance(m, ServerModel) and m.family == "qwen2_5_vl"
    assert m.base_url == "http://127.0.0.1:8000/v1" and m.model == "Qwen/Qwen2.5-VL-3B-Instruct"
    assert m.options.pixel_budget == "family" and m.options.concurrency == 8
    text = out.read_text()
    # the steps at its top name the study's own data folder and the exact generate command
    assert generate_command("sheets", 20, 1, None, "data/my-study/sheets") in text
    assert f"pointfail-runner run --study {out}" in text
    # a second init never overwrites
    out.write_text(text + "# edited\n")
    assert main(["--repo", str(REPO), "init", "--name", "my-study", "--out", str(out)]) == 1
    assert "not overwritten" in capsys.readouterr().err and out.read_text().endswith("# edited\n")
    assert main(["--repo", str(REPO), "init", "--name", "My Study", "--out", str(tmp_path / "x.toml")]) == 1
    assert "is not a name" in capsys.readouterr().err and not (tmp_path / "x.toml").exists()


def test_init_default_path_is_inside_the_checkout(tmp_path):
    from pointfail_runner.template import study_text, write_study

    repo = tmp_path / "repo"
    (repo / "records").mkdir(parents=True)
    p = write_study("demo", repo=repo)
    assert p == (repo / "records/demo/study.toml").resolve()
    assert "pointfail-runner run --study records/demo/study.toml" in p.read_text()
    assert "pointfail judge records/demo && pointfail aggregate records/demo" in p.read_text()
    with pytest.raises(ValueError, match="is not a name"):
        study_text("../x", "p", "r")


def test_readme_served_section_points_at_init():
    readme = (REPO / "README.md").read_text()
    section = readme.split("### In a study", 1)[1].split("\n## ", 1)[0]
    assert "pointfail-runner init" in section
