"""Benchmark: the start-up cost of the command line, side by side with the bare interpreter.

Issue 13 target: ``pointfail --help`` under 50 ms. ``pointfail --help`` imports no command module: the
listing comes from the table :data:`pointfail.commands.COMMANDS`; ``pointfail COMMAND --help`` imports
and builds that command's module only. What is left is the interpreter and argparse (which itself
imports re, enum, gettext, locale, shutil with bz2/lzma, textwrap). Measured here, each as a fresh
process, interleaved round by round so load changes hit all alike (median of ``--repeat`` rounds; CPU
time of the child process, which a busy machine inflates less than wall time, and wall time beside it):

* ``python -c pass``                : the interpreter's own start (the floor)
* ``python -c 'import argparse'``   : the floor plus argparse, the least any argparse CLI costs
* ``bare argparse CLI --help``      : a plain argparse program with 16 subcommands printing its help
* ``python -c 'import pointfail'``  : the package's import (names resolved lazily)
* ``pointfail --help``              : the installed console script (when it is beside the interpreter)
* ``python -m pointfail --help``    : the same through runpy (adds importlib.util and friends)
* ``pointfail verify --help``       : one subcommand's full parser
* ``pointfail families``            : a command that runs (imports the family registry, pydantic)
* ``pointfail score`` (one box)     : one reply scored against one box (issue 30: within 6x ``python -c pass``)

With ``--before SRC`` (a ``src`` folder of another checkout, e.g. ``git worktree add /tmp/old main``),
the ``--help`` and ``verify --help`` cases also run with ``PYTHONPATH=SRC`` in the same rounds, so a
change is measured against its base side by side. Ratios are printed against ``python -c pass`` and
against ``python -c 'import argparse'``: on a loaded machine the absolute numbers move, the ratios
much less.

Usage: ``python bench/cli.py [--repeat 21] [--before /tmp/old/src] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line

PY = sys.executable
SCRIPT = Path(PY).with_name("pointfail")
BARE_ARGPARSE_CLI = (
    "import argparse, sys\n"
    "p = argparse.ArgumentParser(prog='x', description='d', epilog='e')\n"
    "p.add_argument('--version', action='version', version='1')\n"
    "s = p.add_subparsers(dest='command', metavar='COMMAND')\n"
    "for i in range(16):\n"
    "    s.add_parser(f'command{i}', help='one line of help for this command')\n"
    "p.parse_args(['--help'])\n"
)
"""The same shape as ``pointfail --help`` written plainly with argparse: a top parser with 16 subparsers
built in full, printing its help. What any argparse CLI of this size costs at start."""


SCORE_ARGS = ["score", "--family", "molmo", "--image-size", "1024", "768", "--box", "100", "100", "200", "200",
              "--text", '<point x="14.6" y="19.5" alt="x">x</point>']
"""``pointfail score`` of one reply against one box (issue 30: its start-up within 6x ``python -c pass``)."""


def cases(before: str | None) -> dict[str, tuple[list[str], dict[str, str] | None]]:
    """name -> (argv, extra environment) of every measured command."""
    out: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "python -c pass": ([PY, "-c", "pass"], None),
        "python -c 'import argparse'": ([PY, "-c", "import argparse"], None),
        "bare argparse CLI --help": ([PY, "-c", BARE_ARGPARSE_CLI], None),
        "import pointfail": ([PY, "-c", "import pointfail"], None),
    }
    if SCRIPT.is_file():
        out["pointfail --help (script)"] = ([str(SCRIPT), "--help"], None)
    out["python -m pointfail --help"] = ([PY, "-m", "pointfail", "--help"], None)
    out["pointfail verify --help"] = ([PY, "-m", "pointfail", "verify", "--help"], None)
    out["pointfail families"] = ([PY, "-m", "pointfail", "families"], None)
    out["pointfail score (one reply, one box)"] = ([PY, "-m", "pointfail", *SCORE_ARGS], None)
    if before:
        env = {"PYTHONPATH": before}
        out["before: python -m pointfail --help"] = ([PY, "-m", "pointfail", "--help"], env)
        out["before: pointfail verify --help"] = ([PY, "-m", "pointfail", "verify", "--help"], env)
        out["before: pointfail score (one box)"] = ([PY, "-m", "pointfail", *SCORE_ARGS], env)
    return out


def run_once(cmd: list[str], env: dict[str, str] | None) -> tuple[float, float]:
    """(CPU seconds of the child, wall seconds) of one run."""
    full_env = {**os.environ, **env} if env else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=full_env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--before", metavar="SRC", help="another checkout's src folder, measured beside this one")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.repeat = 2
    print(load_line())
    todo = cases(args.before)
    for cmd, env in todo.values():  # warm the file cache and the bytecode cache
        run_once(cmd, env)
    cpu: dict[str, list[float]] = {k: [] for k in todo}
    wall: dict[str, list[float]] = {k: [] for k in todo}
    for _ in range(args.repeat):
        for name, (cmd, env) in todo.items():
            c, w = run_once(cmd, env)
            cpu[name].append(c)
            wall[name].append(w)
    floor = statistics.median(cpu["python -c pass"])
    argp = statistics.median(cpu["python -c 'import argparse'"])
    print(f"median of {args.repeat} interleaved rounds, fresh process each; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'command':<38}{'cpu ms':>9}{'wall ms':>9}{'cpu - floor':>13}{'/ python':>10}{'/ argparse':>12}")
    for name in todo:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        print(f"{name:<38}{1000 * c:>9.1f}{1000 * w:>9.1f}{1000 * (c - floor):>13.1f}{c / floor:>10.2f}"
              f"{c / argp:>12.2f}")
    main_case = "pointfail --help (script)" if "pointfail --help (script)" in todo else "python -m pointfail --help"
    help_cpu = statistics.median(cpu[main_case])
    print(f"target (issue 13): pointfail --help under 50 ms -> {'met' if help_cpu < 0.05 else 'NOT met'} "
          f"({1000 * help_cpu:.1f} ms CPU for {main_case!r}, the interpreter's own start included)")
    print(ratio_line(f"{main_case} / python -c pass", cpu[main_case], cpu["python -c pass"]))
    print(ratio_line("pointfail score (one reply, one box) / python -c pass",
                     cpu["pointfail score (one reply, one box)"], cpu["python -c pass"], goal=6))
    if args.before:
        print(ratio_line("before: pointfail score (one box) / python -c pass",
                         cpu["before: pointfail score (one box)"], cpu["python -c pass"]))
    print(load_line())


if __name__ == "__main__":
    main()
