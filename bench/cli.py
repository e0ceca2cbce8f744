"""Benchmark: the start-up cost of the command line, side by side with the bare interpreter.

Issue 13 target: ``pointfail --help`` under 50 ms. It imports the command modules (each only
``argparse`` and the help helpers at import; everything heavy inside the functions that run) and
builds the listing, not every subcommand's parser; ``pointfail COMMAND --help`` builds that command's
parser only. Measured here, each as a fresh process, interleaved round by round so load changes hit
all alike (median of ``--repeat`` rounds; CPU time of the child process, which a busy machine
inflates less than wall time, and wall time beside it):

* ``python -c pass``               : the interpreter's own start (the floor)
* ``python -c 'import pointfail'`` : the package's import (names resolved lazily)
* ``pointfail --help``             : the listing of every subcommand
* ``pointfail verify --help``      : one subcommand's full parser
* ``pointfail families``           : a command that runs (imports the family registry, pydantic)

Usage: ``python bench/cli.py [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import pointfail": [sys.executable, "-c", "import pointfail"],
    "pointfail --help": [sys.executable, "-m", "pointfail", "--help"],
    "pointfail verify --help": [sys.executable, "-m", "pointfail", "verify", "--help"],
    "pointfail families": [sys.executable, "-m", "pointfail", "families"],
}


def run_once(cmd: list[str]) -> tuple[float, float]:
    """(CPU seconds of the child, wall seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    for cmd in CASES.values():  # warm the file cache and the bytecode cache
        run_once(cmd)
    cpu: dict[str, list[float]] = {k: [] for k in CASES}
    wall: dict[str, list[float]] = {k: [] for k in CASES}
    for _ in range(args.repeat):
        for name, cmd in CASES.items():
            c, w = run_once(cmd)
            cpu[name].append(c)
            wall[name].append(w)
    floor = statistics.median(cpu["python -c pass"])
    print(f"median of {args.repeat} interleaved rounds, fresh process each")
    print(f"{'command':<26}{'cpu ms':>9}{'wall ms':>9}{'cpu - floor':>13}{'cpu / floor':>13}")
    for name in CASES:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        print(f"{name:<26}{1000 * c:>9.1f}{1000 * w:>9.1f}{1000 * (c - floor):>13.1f}{c / floor:>13.2f}")
    help_cpu = statistics.median(cpu["pointfail --help"])
    print(f"target (issue 13): pointfail --help under 50 ms -> {'met' if help_cpu < 0.05 else 'NOT met'} "
          f"({1000 * help_cpu:.1f} ms CPU, the interpreter's own start included)")


if __name__ == "__main__":
    main()
