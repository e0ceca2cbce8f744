"""Benchmark: judge-stage wall time at concurrency c against sequential (concurrency 1).

The fake Ollama server ``pointfail.generated.testing.ollama_fake`` (run in its own process) answers at most ``c`` chat requests in parallel,
each after a fixed latency, so the ideal speedup at concurrency ``c`` is ``c``; the target is
``speedup >= 0.85 * c``. Each run judges the same ``N`` misses (1024x768 images, box targets, so the
per-miss rendering cost is real) from a fresh copy of the records, with the whole stage timed: reading
records, rendering, requests, journal, atomic rewrite.

    python bench/judge.py [--misses 64] [--latency 1.0] [--concurrency 2 4 8] [--rounds 1] [--quick]

The default latency (1 s per request) is below what a 31B vision model takes per annotated image on one
GPU, so the numbers are, if anything, pessimistic about concurrency. Sequential is measured once (a
server's parallelism does not matter when one request is in flight). Also printed: the time to render
one annotated image alone, the CPU floor of the stage (``misses * render / cores``).

Prints one table (tabulate): c, seconds sequential, seconds at c, speedup, target, pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from _rounds import add_quick, load_line, ratio_line  # noqa: E402 (beside this file)


def make_study(root: Path, n: int, size: tuple[int, int]) -> Path:
    """A study with ``n`` misses on distinct ``size`` images (a few drawn rectangles each)."""
    from PIL import Image, ImageDraw

    from pointfail.records import ImageRef, ParseResult, Prompt, Record, Response, Target, write_records

    w, h = size
    data = root / "data"
    data.mkdir(parents=True)
    recs = []
    for i in range(n):
        img = Image.new("RGB", size, (240, 240, 240))
        d = ImageDraw.Draw(img)
        for k in range(20):
            x, y = (37 * (i + k) * 13) % (w - 60), (53 * (i + 2 * k) * 7) % (h - 30)
            d.rectangle([x, y, x + 50, y + 20], outline=(30, 30, 30), fill=((i * 7) % 255, (k * 11) % 255, 128))
        p = data / f"{i:04d}.png"
        img.save(p)
        recs.append(
            Record(
                study="bench", model="m", family="center", benchmark="b", sample_id=f"miss-{i:04d}",
                image=ImageRef(path=str(p), width=w, height=h),
                target=Target(kind="boxes", boxes=[[100, 100, 160, 130]]),
                prompt=Prompt(original=f"point to item {i}", core=f"point to item {i}", sent=f"point to item {i}"),
                response=Response(raw_text="x"),
                parse=ParseResult(family="center", frame="unit", points=[[0.5, 0.5]]),
                outcome="miss",
            )
        )
    study = root / "study"
    write_records(study / "m" / "b.jsonl", recs)
    return study


def run_once(pristine: Path, work: Path, concurrency: int, server_parallel: int, latency: float) -> float:
    """Copy the study, judge it at ``concurrency`` against a fake server (its own process, as a real
    Ollama server is) answering ``server_parallel`` requests at once after ``latency`` seconds; return
    the stage's wall time in seconds."""
    import subprocess

    from pointfail.running.judges.client import OllamaJudge
    from pointfail.running.judges.stage import judge_study

    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(pristine, work)
    server = subprocess.Popen(
        [sys.executable, "-m", "pointfail.generated.testing.ollama_fake", "--latency", str(latency),
         "--max-parallel", str(server_parallel)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        url = server.stdout.readline().strip()
        judge = OllamaJudge(host=url, concurrency=concurrency, timeout_s=60)
        t0 = time.perf_counter()
        rep = judge_study(work, judge)
        dt = time.perf_counter() - t0
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    if rep.status.get("labeled") != rep.misses:
        raise SystemExit(f"bench run did not label every miss: {rep.to_dict()}")
    return dt


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; exit 0 (the ratios are reported, not asserted)."""
    from tabulate import tabulate

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--misses", type=int, default=64)
    ap.add_argument("--latency", type=float, default=1.0, help="server latency per request, seconds")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--size", type=int, nargs=2, default=[1024, 768])
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (sequential, then each c)")
    add_quick(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.misses, args.latency, args.concurrency, args.rounds, args.size = 4, 0.05, [2], 2, [320, 240]
    print(load_line())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pristine = make_study(root / "src", args.misses, tuple(args.size))
        from pointfail.running.judges.render import render_miss
        from pointfail.records import read_records

        rec = read_records(pristine / "m" / "b.jsonl")[0]
        t0 = time.perf_counter()
        for _ in range(5):
            render_miss(rec.image.path, rec.target, rec.parse.points[0])
        render_s = (time.perf_counter() - t0) / 5
        walls: dict[int, list[float]] = {c: [] for c in [1, *args.concurrency]}
        for _ in range(args.rounds):  # sequential and every c in each round, so load hits all alike
            for c in walls:
                walls[c].append(run_once(pristine, root / "work", c, c, args.latency))
        rows = []
        t1 = statistics.median(walls[1])
        for c in args.concurrency:
            tc = statistics.median(walls[c])
            speedup = statistics.median(a / b for a, b in zip(walls[1], walls[c]))
            rows.append([c, f"{t1:.2f}", f"{tc:.2f}", f"{speedup:.2f}", f"{0.85 * c:.2f}", "yes" if speedup >= 0.85 * c else "no"])
    print(f"judge stage: {args.misses} misses, {args.size[0]}x{args.size[1]} images, server latency {args.latency:.3f} s, "
          f"server answers c requests in parallel; render alone {render_s * 1000:.0f} ms/miss, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(tabulate(rows, headers=["c", "sequential s", "concurrent s", "speedup", "target 0.85c", "meets"], tablefmt="github"))
    for c in args.concurrency:
        print(ratio_line(f"speedup at c={c} (sequential / concurrent)", walls[1], walls[c], goal=None))
    print(load_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
