"""What every ``pointfail-runner`` command says about itself in ``--help``: what it does, what it reads
and writes, one example command line, and its exit codes, in plain text.

:func:`add` registers a subcommand from :data:`COMMANDS` with the same formatter the ``pointfail``
commands use (``pointfail.commands._help.HelpFormatter``: descriptions shown as written, every
option's default appended). ``tests/test_cli_help.py`` checks every command's text and that each
example parses with the runner's own parser.
"""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass
from typing import Any

__all__ = ["COMMANDS", "CommandHelp", "add"]


@dataclass(frozen=True)
class CommandHelp:
    """One command's help: ``summary`` (the line in ``pointfail-runner --help``), ``description``
    (what it does, reads and writes), ``example`` (one command line that parses) and ``exits``
    (exit status -> meaning)."""

    summary: str
    description: str
    example: str
    exits: tuple[tuple[int, str], ...]


_ARGS = (2, "bad arguments (argparse prints the usage)")
_FAIL = "a step failed (the message names the step and why)"

COMMANDS: dict[str, CommandHelp] = {
    "engine": CommandHelp(
        "ping the Docker Engine; start dockerd when none answers (root, Debian)",
        "Checks that a Docker Engine answers on this machine's socket and prints its version. When none "
        "answers and this is Debian as root, starts dockerd (installing docker.io first if it is missing) "
        "and waits for it. Reads nothing from the checkout; writes nothing.",
        "pointfail-runner engine",
        ((0, "an engine answers (its version is printed)"), (1, "no engine answers and none could be started"))),
    "base": CommandHelp(
        "build pointfail/base from Debian packages (debootstrap + docker import)",
        "Builds the base image every other image builds on, from Debian packages at the versions recorded "
        "in images/base/base.lock.json (debootstrap into a folder, then docker import). Skips the build "
        "when the image the lock names is present. With --record it writes the versions this build "
        "installed back into the lock.",
        "pointfail-runner base --record",
        ((0, "the base image is present"), (1, _FAIL))),
    "lock-host": CommandHelp(
        "resolve runner/requirements.in into runner/requirements.lock",
        "Resolves runner/requirements.in (the host's Python packages: the runner and the pointfail "
        "commands) into runner/requirements.lock with a sha256 hash for every file, for CPython 3.11 to "
        "3.13. Needs a package index. Writes only the lock.",
        "pointfail-runner lock-host",
        ((0, "the lock is written"), (1, _FAIL))),
    "lock": CommandHelp(
        "resolve images' requirements*.in into lock files with hashes",
        "Resolves each image's requirements.in (requirements-cuda.in, requirements-vllm.in for those "
        "variants) into images/<image>/requirements[-variant].lock with a sha256 hash for every file. "
        "With no image named, every image under images/. Needs a package index. Writes only the locks.",
        "pointfail-runner lock qwen2_5_vl --variant vllm",
        ((0, "every lock asked for is written"), (1, _FAIL))),
    "wheels": CommandHelp(
        "download the lock files' wheels into the wheelhouse",
        "Downloads every file the images' lock files name, checked against their hashes, into the "
        "wheelhouse (default wheelhouse/ in the checkout), so that build installs without an index. "
        "Reads images/<image>/requirements*.lock; writes the wheelhouse.",
        "pointfail-runner wheels qwen2_5_vl --variant cpu",
        ((0, "every file is in the wheelhouse"), (1, _FAIL))),
    "build": CommandHelp(
        "build images (missing ones only unless --force)",
        "Builds the base image (when missing) and the named images (default: all) from images/<image>/ "
        "and their locks, with the Python packages from the wheelhouse when given. An image whose "
        "inputs did not change is kept unless --force. Prints one line per image: tag, id, whether it "
        "was built, seconds and how many Debian versions drifted from the recorded ones; --record writes "
        "those versions into images/<image>/debian.lock. --variant vllm builds only the images that "
        "have a serving variant (requirements-vllm.in).",
        "pointfail-runner build center ocr --variant cpu",
        ((0, "every image asked for is present"), (1, _FAIL))),
    "check-pins": CommandHelp(
        "list the recorded Debian versions the configured archive no longer has",
        "Asks the configured Debian archive (or the snapshot given with --snapshot) for every package "
        "version recorded in the base lock and the images' debian.lock files, and lists those it no "
        "longer serves. Writes nothing.",
        "pointfail-runner check-pins --snapshot 20250520T000000Z",
        ((0, "every recorded version is available"), (1, "some are not (listed) or the archive did not answer"))),
    "init": CommandHelp(
        "write a study file with one served model, commented, to edit",
        "Writes a minimal study (records/<name>/study.toml by default): a generated spreadsheet suite "
        "and one model served by an OpenAI-compatible server (transformers serve, vLLM, SGLang, ...), "
        "every setting commented. Edit base_url, model (the name the server lists under /v1/models) and "
        "family, then run it. Refuses to overwrite an existing file.",
        "pointfail-runner init --name my-study",
        ((0, "the study file is written (its path is printed)"), (1, "the file exists already"))),
    "run": CommandHelp(
        "run a study's models over its benchmarks into records",
        "Runs every model of a study (records/<study>/study.toml) over its benchmarks: a container per "
        "model and benchmark for weight-backed models, requests to the server for served models "
        "(kind = \"server\": /v1/models checked first, the frame the server used checked from its "
        "token counts). Job folders go to work/<study>/, records to records/<study>/<model>/<benchmark>"
        ".jsonl. A rerun asks only what has no response (and, with --retry-errors or when the model "
        "entry or the server changed, the samples that ended in an error). Prints the records per "
        "model and benchmark and the commands for the stages after it (judge, aggregate, view).",
        "pointfail-runner run --study records/default/study.toml --limit 20",
        ((0, "every sample has a record"), (1, _FAIL),
         (5, "samples ended in an infrastructure error (records written; fix the cause, then --retry-errors)"))),
    "prereqs": CommandHelp(
        "check (and as root on Debian, install) the system packages needed",
        "Checks the Debian packages the tests and studies need (debootstrap, docker.io, Slurm and munge "
        "for the cluster test, ...) and, as root on Debian, installs the missing ones with apt. With "
        "--check only reports, printing the install command.",
        "pointfail-runner prereqs --check",
        ((0, "every package is installed"), (1, "some are missing (with --check) or could not be installed"))),
    "data": CommandHelp(
        "render a study's generated suites in the pinned image; check the manifests",
        "Renders the generated suites a study names inside the pinned suites image into data/<study>/ and "
        "compares each with its committed manifest (records/<study>/suites/<suite>.manifest.json).",
        "pointfail-runner data --study records/default/study.toml",
        ((0, "every suite matches its manifest"), (1, _FAIL),
         (3, "a suite's content differs from its committed manifest"))),
    "reproduce": CommandHelp(
        "every stage of a study in order, timed; compare with the committed tables",
        "Runs every stage of a study in order (prerequisites, base, images, data, fetch, models, judge, "
        "aggregate), printing each stage's time, and compares the tables it writes (under work/) with "
        "the committed records/<study>/tables byte for byte. With --publish it writes records, tables "
        "and suite manifests into records/<study>/ instead. With --bundle it reproduces from an archival "
        "bundle without any network.",
        "pointfail-runner reproduce --study records/default/study.toml",
        ((0, "every table matches"), (1, _FAIL),
         (3, "a generated suite differs from its committed manifest (every table matched)"),
         (4, "a table differs from the committed one (a unified diff is printed)"))),
    "pristine": CommandHelp(
        "run a command (make reproduce) in a fresh clone inside a pristine Debian 12 container",
        "Clones this checkout's committed HEAD into a fresh folder and runs the command given after -- "
        "in it, inside a Debian 12 container with only python3, pip, venv, make and git and this "
        "engine's socket: what a newcomer's machine does. With --offline apt and pip point at a closed "
        "port. The clone is removed afterwards unless --keep.",
        "pointfail-runner pristine --offline -- make reproduce",
        ((0, "the command exited 0 (any other status is the command's own)"),
         (1, "the container ended without a status, or a step failed"), (2, "no command after --"))),
    "bundle": CommandHelp(
        "write the archival bundle of a study: images, data, records, locks, wheels",
        "Writes bundles/pointfail-<study>-<rev>.tar and its .sha256: the study's images (docker save), "
        "its data and weights as locked, the records, every lock file and the host's wheels, so that "
        "reproduce --bundle runs it with no network.",
        "pointfail-runner bundle --study records/default/study.toml",
        ((0, "the bundle and its digest are written"), (1, _FAIL))),
    "plan": CommandHelp(
        "split a study's work into shards of cells (model x benchmark shard)",
        "Reads a study and its benchmarks' rows and splits the work into shards (about --shard-size "
        "samples each, or exactly --shards per model); each cell is one model on one benchmark shard. "
        "Writes the plan (default work/<study>/plan.json) for submit, status and merge.",
        "pointfail-runner plan --study records/default/study.toml --shards 4",
        ((0, "the plan is written"), (1, _FAIL))),
    "submit": CommandHelp(
        "run a plan's shards with an executor (local Docker, Slurm arrays, k8s Indexed Jobs)",
        "Stages a plan's shards in the run folder (default run/ beside the plan) and runs them: local "
        "(containers on this engine, --concurrency at once), slurm (one job array per model; "
        "--dry-run writes the batch scripts only) or k8s (one Indexed Job per model). Each shard writes "
        "its responses into the run folder; --missing resubmits only shards with a cell not done.",
        "pointfail-runner submit --plan work/default/plan.json --executor local --concurrency 2",
        ((0, "every shard was run or submitted"), (1, "a shard failed (local; rerun with --missing) or a step failed"))),
    "status": CommandHelp(
        "which cells of a plan are done, running, queued, failed, partial or pending",
        "Reads a plan and its run folder (and the scheduler's states where it has them) and prints one "
        "row per cell: answered / expected samples, state and a note. Writes nothing.",
        "pointfail-runner status --plan work/default/plan.json",
        ((0, "every cell is done"), (1, _FAIL), (3, "a cell is not done"))),
    "merge": CommandHelp(
        "merge a run's per-shard responses into the study's records (deterministic)",
        "Reads the per-shard responses in the run folder and writes the study's records "
        "(records/<study>/<model>/<benchmark>.jsonl, or --records DIR), the same bytes whatever the "
        "order the shards finished in. Only complete benchmarks are written.",
        "pointfail-runner merge --plan work/default/plan.json",
        ((0, "every benchmark is complete and written"), (1, _FAIL),
         (3, "a cell is not done (the complete benchmarks are written; the rest are named)"))),
    "shard": CommandHelp(
        "(node step) run one staged shard on this machine's Docker Engine",
        "What a Slurm or k8s node runs: reads the staged run folder, runs shard --index of --model in "
        "its container on this machine's engine and writes its responses into the run folder. Needs "
        "no checkout.",
        "pointfail-runner shard --run-dir run/ --model center --index 0",
        ((0, "the shard ran"), (1, "the shard failed (the message says why)"))),
}


def _epilog(h: CommandHelp) -> str:
    exits = list(h.exits) + ([_ARGS] if all(code != 2 for code, _ in h.exits) else [])
    return ("example:\n  " + h.example + "\n\nexit codes:\n"
            + "\n".join(f"  {code}  {what}" for code, what in sorted(exits)))


def add(sub: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """Add subcommand ``name`` to ``sub`` (an ``add_subparsers()`` action) with its help from
    :data:`COMMANDS`; ``kwargs`` go to ``add_parser`` (``parents``)."""
    from pointfail.commands._help import HelpFormatter

    h = COMMANDS[name]
    return sub.add_parser(name, help=h.summary, description=textwrap.fill(h.description, 100), epilog=_epilog(h),
                          formatter_class=HelpFormatter, **kwargs)
