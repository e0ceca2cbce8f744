"""What every benchmark here shares: interleaved rounds, ratios per round (min / median / max), the
load average, and the ``--quick`` flag that ``tests/test_bench.py`` runs each benchmark with.

A ratio is taken *within* a round (``numerator[k] / denominator[k]`` of the same round ``k``), so a
change of load between rounds moves both sides alike; the spread of the per-round ratios (min / max
beside the median) says how much the shared machine moved them within a round. Nothing here asserts a
time: benchmarks print, tests only check that they run and print their ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["add_quick", "cpu_of", "load_line", "ratio_line", "ratio_stats", "rounds"]


def add_quick(ap: argparse.ArgumentParser) -> None:
    """Add ``--quick``: a few seconds' run on the smallest inputs that still exercise every step and
    print every ratio (what ``make test`` runs; its numbers mean nothing)."""
    ap.add_argument("--quick", action="store_true",
                    help="a few seconds on tiny inputs: checks that the benchmark runs and prints its ratios")


def load_line() -> str:
    """``load average 1/5/15 min: a, b, c on N cores``: the machine's load when the line is printed
    (``os.getloadavg``)."""
    a, b, c = os.getloadavg()
    return f"load average 1/5/15 min: {a:.2f}, {b:.2f}, {c:.2f} on {os.cpu_count()} cores"


def cpu_of(fn: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) of one call. CPU time is the primary measure: on a
    shared machine other processes inflate wall time more than this process's CPU time."""
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def rounds(steps: dict[str, Callable[[], object]], n: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run every step once per round, ``n`` rounds, interleaved (round 1: every step, then round 2,
    ...). Returns ``(cpu, wall)``: step name -> seconds per round."""
    cpu: dict[str, list[float]] = {k: [] for k in steps}
    wall: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(n):
        for k, fn in steps.items():
            c, w = cpu_of(fn)
            cpu[k].append(c)
            wall[k].append(w)
    return cpu, wall


def ratio_stats(num: Sequence[float], den: Sequence[float]) -> tuple[float, float, float]:
    """(min, median, max) of the per-round ratios ``num[k] / den[k]`` (a zero denominator is taken as
    one microsecond, so a too-fast floor gives a large ratio instead of an error)."""
    r = [a / max(b, 1e-6) for a, b in zip(num, den)]
    return min(r), statistics.median(r), max(r)


def ratio_line(name: str, num: Sequence[float], den: Sequence[float], *, goal: float | None = None) -> str:
    """One printed line: ``<name>: ratio min / median / max  a / b / c  over n rounds`` and, with
    ``goal``, whether the median is within it."""
    lo, med, hi = ratio_stats(num, den)
    s = f"{name}: ratio min / median / max {lo:.2f} / {med:.2f} / {hi:.2f} over {len(num)} rounds"
    if goal is not None:
        s += f" (goal <= {goal:g}: {'met' if med <= goal else 'NOT met'})"
    return s
