"""Benchmark: the ``ocr`` baseline's hit rate and seconds per sample on generated suites (sheets, text,
web), with the per-process OCR cache on and off, side by side in one run. Nothing is asserted; it
prints.

    python bench/ocr.py [--n 40] [--seed 7] [--suites sheets text web] [--dirs DIR ...]
                        [--by-category] [--no-uncached] [--verbose] [--quick]

Each suite is generated into a temporary directory (``pointfail generate KIND --n N --seed S``) unless
``--dirs`` names existing suite directories. Every sample goes through what the worker does: the
``ocr`` family's prompt (``prompts.build_prompt``), the image decoded to RGB, and
``baselines.ocr.point_to``; the reply is scored with ``scoring.score_prediction`` (family ``ocr``,
the sample's own target). Samples run in the suite's order, so the web suite's several questions per
screenshot reuse one OCR reading when the cache is on.

Columns: hit rate (hits / samples, both passes answer the same), wall seconds per sample and CPU
seconds per sample of this process plus its Tesseract children (``os.times``), cached and uncached,
and the ratio uncached / cached of CPU seconds; Tesseract runs per sample. The load average when the
run started is printed (a shared machine slows both passes alike only roughly: the passes are
interleaved sample by sample).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line
from PIL import Image
from tabulate import tabulate

from pointfail.inputs import benchmarks
from pointfail import prompts
from pointfail.generated.baselines import ocr
from pointfail.generated.baselines.ocr import words as ocr_words
from pointfail.scoring import score_prediction


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_sample(sample, cached: bool) -> tuple[str, float, float, int, str]:
    """Answer and score one sample; ``(outcome, wall s, cpu s, tesseract runs, rule)``."""
    calls = ocr_words.STATS["tesseract_calls"]
    w0, c0 = time.perf_counter(), _cpu()
    prompt = prompts.build_prompt("ocr", sample)
    with Image.open(sample.image.path) as im:
        image = im.convert("RGB")
    ans = ocr.point_to(image, prompt.core, task=sample.task, may_decline=prompts.absent_possible(sample))
    wall, cpu = time.perf_counter() - w0, _cpu() - c0
    res = score_prediction("ocr", ans.text, image_size=(sample.image.width, sample.image.height),
                           target=sample.target, task=sample.task)
    return res.outcome, wall, cpu, ocr_words.STATS["tesseract_calls"] - calls, ans.rule


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--suites", nargs="+", default=["sheets", "text", "web"])
    ap.add_argument("--dirs", nargs="+", help="existing suite directories (instead of generating)")
    ap.add_argument("--by-category", action="store_true", help="also print hit rate per category")
    ap.add_argument("--verbose", action="store_true", help="print every sample that is not a hit")
    ap.add_argument("--no-uncached", action="store_true", help="skip the uncached pass")
    add_quick(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.suites = 2, ["sheets"]
    print(load_line())
    cpu_cached: list[float] = []
    cpu_uncached: list[float] = []
    tmp = tempfile.TemporaryDirectory(prefix="pointfail-bench-ocr-")
    dirs = args.dirs or []
    if not dirs:
        for kind in args.suites:
            out = Path(tmp.name) / kind
            subprocess.run([sys.executable, "-m", "pointfail", "generate", kind, "--n", str(args.n), "--seed",
                            str(args.seed), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
            dirs.append(str(out))
    rows, cats = [], []
    for d in dirs:
        samples = benchmarks.load("suite", d)
        kind = samples[0].benchmark if samples else Path(d).name
        acc = defaultdict(float)
        per_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        ocr_words.clear_cache()
        ocr_words.set_cache(True)
        for s in samples:
            outcome, wall, cpu, calls, rule = run_sample(s, cached=True)
            acc["hits"] += outcome == "hit"
            acc["wall_c"] += wall
            acc["cpu_c"] += cpu
            acc["calls_c"] += calls
            cpu_cached.append(cpu)
            if args.verbose and outcome != "hit":
                print(f"{kind} {s.sample_id} {outcome} {rule} | {s.instruction}", flush=True)
            c = per_cat[str(s.metadata.get("category"))]
            c[0] += outcome == "hit"
            c[1] += 1
            if not args.no_uncached:
                ocr_words.set_cache(False)
                _, wall, cpu, calls, _ = run_sample(s, cached=False)
                ocr_words.set_cache(True)
                acc["wall_u"] += wall
                acc["cpu_u"] += cpu
                acc["calls_u"] += calls
                cpu_uncached.append(cpu)
        n = max(len(samples), 1)
        row = [kind, len(samples), f"{acc['hits'] / n:.3f}", f"{acc['wall_c'] / n:.2f}", f"{acc['cpu_c'] / n:.2f}",
               f"{acc['calls_c'] / n:.2f}"]
        if not args.no_uncached:
            row += [f"{acc['wall_u'] / n:.2f}", f"{acc['cpu_u'] / n:.2f}", f"{acc['calls_u'] / n:.2f}",
                    f"{acc['cpu_u'] / max(acc['cpu_c'], 1e-9):.2f}"]
        rows.append(row)
        for cat, (h, t) in sorted(per_cat.items()):
            cats.append([kind, cat, t, h, f"{h / t:.2f}"])
    head = ["suite", "n", "hit rate", "wall s (cached)", "cpu s (cached)", "tesseract runs (cached)"]
    if not args.no_uncached:
        head += ["wall s (uncached)", "cpu s (uncached)", "tesseract runs (uncached)", "cpu ratio uncached/cached"]
    print(tabulate(rows, headers=head))
    if args.by_category:
        print()
        print(tabulate(cats, headers=["suite", "category", "n", "hits", "hit rate"]))
    if cpu_uncached:
        print(ratio_line("CPU uncached / cached, sample by sample", cpu_uncached, cpu_cached))
    print(load_line())
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
